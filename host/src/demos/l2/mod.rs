//! The L2 lesson: what decides L2 bandwidth (bytes in flight per SM), lines that persist
//! (an access-policy window over a hot buffer re-read amid a stream), and the two partitions
//! (the same lines timed from every SM).
//!
//! # Methods
//! - **Bandwidth.** `read_cg` (one 16-byte load in flight per thread) and `read_cg_unrolled`
//!   (`READ_CG_UNROLL` in flight) over a quarter of the L2, 256 passes, at 1, 2, 4 and 8 blocks
//!   of 256 threads per SM: bytes in flight per SM = blocks x 256 x 16 B x loads in flight.
//! - **Persisting lines** ([`persisting`]): `hot_stream_read` without a window and with one
//!   (carve-out: the device's maximum, `hitRatio` fitted to it) for hot buffers whose reuse
//!   distance runs from a quarter of the L2 to twice it; the model of `model::l2` predicts the
//!   hot hits and the speed-up. Skipped in one line below cc 8.0.
//! - **Partitions** ([`partitions`]): per-hop latencies of one chain from every SM.

pub mod partitions;
pub mod persisting;
pub mod policies;

use anyhow::Result;
use memlab_contracts::hierarchy::{READ_CG_UNROLL, READ_CG_VECTOR_BYTES};
use memlab_contracts::probes::BLOCK;

use crate::charts::SweepChart;
use crate::lab::Inputs;
use crate::lab::{Figure, Lesson, Run};
use crate::lab::sizes::bytes;
use crate::lab::{KernelRow, Lab, Level, Section};
use crate::launches;
use crate::model::l2::L2Policy;
use crate::probes::bandwidth::{Reader, read};
use crate::series::{Series, names};

/// Passes over the L2-resident buffer of the bandwidth sweep.
pub const L2_PASSES: u32 = 256;

/// The bandwidth sweep's footprint for an L2 of `l2_bytes`: a quarter of it (15 MiB on the H200,
/// the footprint of the published figure), a multiple of the 16-byte vector.
pub fn l2_footprint(l2_bytes: usize) -> usize {
    (l2_bytes / 4) / READ_CG_VECTOR_BYTES * READ_CG_VECTOR_BYTES
}

/// `--l2-stream-bytes`, `--l2-read-bytes`: at least one 16-byte vector, a multiple of 16 bytes,
/// and at most `u32::MAX` vectors (the kernels count vectors in a `u32`).
///
/// # Errors
/// A refusal naming the rule.
pub fn check_bytes(bytes: usize) -> Result<usize> {
    let most = READ_CG_VECTOR_BYTES * (u32::MAX as usize / 2);
    if bytes == 0 || !bytes.is_multiple_of(READ_CG_VECTOR_BYTES) || bytes > most {
        crate::refuse!(
            "{bytes} bytes: the L2 lesson reads 16-byte vectors, so give a multiple of 16 from 16 bytes to 32 GiB"
        );
    }
    Ok(bytes)
}

/// `--l2-stream-bytes`, `--l2-read-bytes` as clap parses them: a byte count [`check_bytes`]
/// takes.
fn l2_bytes(text: &str) -> Result<usize, String> {
    check_bytes(crate::cli::bytes(text)?).map_err(|e| e.to_string())
}

/// The L2 lesson's options (the hierarchy's persisting row reads `--l2-stream-bytes` too).
#[derive(clap::Args, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
pub struct Options {
    /// Bytes of the L2 lesson's streamed buffer, read once amid the hot one (a multiple of 16).
    #[arg(id = "l2-stream-bytes", long = "l2-stream-bytes", value_name = "L2_STREAM_BYTES", default_value = "1GiB", value_parser = l2_bytes)]
    pub stream_bytes: usize,
    /// Bytes of the L2 lesson's bandwidth read (a multiple of 16; default: a quarter of the L2).
    #[arg(id = "l2-read-bytes", long = "l2-read-bytes", value_name = "L2_READ_BYTES", value_parser = l2_bytes)]
    pub read_bytes: Option<usize>,
    /// SMs the L2 partition probe times, the first SM numbers (default: every SM).
    #[arg(id = "l2-partition-sms", long = "l2-partition-sms", value_name = "L2_PARTITION_SMS", value_parser = crate::cli::at_least_one::<u32>)]
    pub partition_sms: Option<u32>,
}

/// Blocks per SM of the sweep: powers of two up to what the SM's threads allow.
pub fn blocks_per_sm(max_threads_per_sm: u32) -> Vec<u32> {
    let most = (max_threads_per_sm / BLOCK).max(1);
    std::iter::successors(Some(1u32), |b| Some(2 * b)).take_while(|&b| b <= most).collect()
}

/// Bytes in flight per SM for `blocks` blocks of 256 threads with `loads` 16-byte loads each.
pub fn in_flight_bytes(blocks: u32, loads: usize) -> usize {
    blocks as usize * BLOCK as usize * READ_CG_VECTOR_BYTES * loads
}

/// Everything the lesson measured.
pub struct Measured {
    /// `(blocks per SM, read_cg row, read_cg_unrolled row)`.
    pub bandwidth: Vec<(u32, KernelRow, KernelRow)>,
    /// The persisting sweep, or the one line saying why it was skipped.
    pub persisting: Result<persisting::Persisting, String>,
    /// Per-SM latencies of the same lines.
    pub partitions: partitions::Partitions,
    /// The L2 footprint of the bandwidth sweep, bytes.
    pub footprint: usize,
    /// `read_cg_chunks` over the same footprint (whole 512 KiB regions of it).
    pub chunks: KernelRow,
    /// The L2, bytes.
    pub l2_bytes: usize,
}

/// The lesson: L2 bandwidth, residency and partitions.
pub struct L2;

impl Lesson for L2 {
    const NAME: &'static str = "l2";
    type Options = Options;

    fn run(lab: &Lab, _: &Inputs, options: &Options) -> Result<Section> {
        Ok(measure(lab, options)?.section())
    }

    fn figures(run: &Run) -> Vec<Figure> {
        let s = run.sections;
        vec![
            Figure::or_missing(
                SweepChart::l2_bandwidth(s),
                "L2 read bandwidth over a quarter of the L2 against blocks per SM (log scale): four 16-byte loads in flight per thread against one.",
                "L2 bandwidth sweep (run the `l2` demo)",
            ),
            Figure::or_missing(
                SweepChart::persisting(s),
                "The hit fraction h of the hot re-reads of `hot_stream_read` against the hot buffer's size, by policy: `evict_first` streamed loads measured and predicted by the hit model, no policy, and an access-policy window over the hot buffer, each measured from its time between the all-hit and the all-miss bounds. A measured h outside 0 to 1 is timing noise: crossed out at the axis' edge and named in the key, not drawn.",
                "persisting-L2 sweep (run the `l2` demo on cc 8.0 or later)",
            ),
            Figure::or_missing(
                SweepChart::partitions(s),
                "Median cycles per L2 hit from each SM on lines SM 0 brought into L2, the SMs sorted by it: the SMs of SM 0's partition find the lines near; past the marked step, the SMs across the partition link, of which about half the hops are far. The dashed levels are the median of each run of SMs.",
                "L2 partition probe (run the `l2` demo)",
            ),
        ]
    }
}

/// Measures the three parts.
pub fn measure(lab: &Lab, options: &Options) -> Result<Measured> {
    let info = &lab.gpu.info;
    let footprint = options
        .read_bytes
        .unwrap_or_else(|| crate::lab::sanitizer::bytes(lab, l2_footprint(info.l2_bytes as usize)));
    let mut bandwidth = Vec::new();
    for blocks in blocks_per_sm(info.max_threads_per_sm) {
        let row = |kernel, loads: usize, lesson| {
            let prediction = format!("{} in flight per SM", bytes(in_flight_bytes(blocks, loads)));
            let reader = Reader { kernel, blocks_per_sm: Some(blocks) };
            let mut row = read(lab, reader, footprint, L2_PASSES, Level::L2, lesson, prediction)?;
            row.size = format!("{} x {L2_PASSES}, {blocks} blocks/SM", bytes(footprint));
            anyhow::Ok(row)
        };
        let plain = lab
            .phases
            .step("bandwidth sweep", || row(launches::read_cg, 1, "L2 reads, one 16-byte load in flight per thread"))?;
        let unrolled = lab.phases.step("bandwidth sweep", || {
            row(launches::read_cg_unrolled, READ_CG_UNROLL, "L2 reads, four 16-byte loads in flight per thread")
        })?;
        bandwidth.push((blocks, plain, unrolled));
    }
    let limits = crate::gpu::l2::limits(&lab.gpu)?;
    let persisting = match persisting::unsupported(info.cc, &limits) {
        Some(why) => Err(why),
        None => {
            let stream = crate::lab::sanitizer::bytes(lab, options.stream_bytes);
            let sizes = persisting::hot_sizes(info.l2_bytes as usize, stream);
            lab.phases.step("persisting", || persisting::measure_sizes(lab, limits, stream, &sizes))?
        }
    };
    let chunks = lab.phases.step("chunks", || policies::chunks(lab, footprint))?;
    let partitions = lab.phases.step("partitions", || partitions::measure(lab, 0, options.partition_sms))?;
    Ok(Measured { bandwidth, persisting, partitions, footprint, chunks, l2_bytes: info.l2_bytes as usize })
}

impl Measured {
    /// The bandwidth sweep as one note per point, and what it shows.
    fn bandwidth_notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .bandwidth
            .iter()
            .map(|(blocks, plain, unrolled)| {
                format!(
                    "L2 read, {} x {L2_PASSES}, {blocks} blocks/SM: read_cg {:.0} GB/s ({} in flight per SM), read_cg_unrolled {:.0} GB/s ({})",
                    bytes(self.footprint),
                    plain.rate.value(),
                    bytes(in_flight_bytes(*blocks, 1)),
                    unrolled.rate.value(),
                    bytes(in_flight_bytes(*blocks, READ_CG_UNROLL)),
                )
            })
            .collect();
        let best = |pick: fn(&(u32, KernelRow, KernelRow)) -> &KernelRow| {
            self.bandwidth.iter().map(|p| pick(p).rate.value()).fold(0.0, f64::max)
        };
        let (plain, unrolled) = (best(|p| &p.1), best(|p| &p.2));
        notes.push(format!(
            "L2 bandwidth: best read_cg {plain:.0} GB/s, best read_cg_unrolled {unrolled:.0} GB/s ({:.2}x): Little's law, bandwidth = bytes in flight / latency, and one load per thread leaves too few bytes in flight to cover the L2's latency under load",
            unrolled / plain.max(1.0)
        ));
        let chunks = self.chunks.rate.value();
        notes.push(format!(
            "L2 bandwidth, many short blocks: read_cg_chunks {chunks:.0} GB/s over {} ({}x the best read_cg), the public suite's split ({} blocks of 256 threads, each a fixed 512 KiB): read_cg's 8 blocks per SM each read their fixed lines 256 times, so the launch lasts as long as its slowest block (measured on the H200 at 15 MiB: block time median 428 us, max 486 us; with lines that rotate over the SMs 8.9 TB/s), while short blocks let the scheduler even the SMs out; the load width is not it (the suite's 8-byte loads 9.5 TB/s, the same split with 16-byte .cg loads 9.7 TB/s; bench/l2_experiments.cu)",
            self.chunks.size,
            format_args!("{:.2}", chunks / plain.max(1.0)),
            memlab_contracts::l2::CHUNK_BLOCKS,
        ));
        notes
    }

    /// The chart series: the bandwidth sweep, the persisting speed-ups, the per-SM latencies.
    fn series(&self) -> Vec<Series> {
        let x = "blocks of 256 threads per SM";
        let y = "GB/s";
        let points = |pick: fn(&(u32, KernelRow, KernelRow)) -> &KernelRow| {
            self.bandwidth
                .iter()
                .map(|p| (p.0 as f64, pick(p).rate.value(), format!("{} blk/SM", p.0)))
                .collect::<Vec<_>>()
        };
        let mut series = vec![
            Series::labelled(names::L2_READ_UNROLLED, x, y, points(|p| &p.2)),
            Series::labelled(names::L2_READ_PLAIN, x, y, points(|p| &p.1)),
        ];
        if let Ok(p) = &self.persisting {
            let (x, y) = ("hot buffer", "hit fraction h of the hot re-reads");
            let label = |h: &persisting::HotPoint| bytes(h.hot_bytes);
            let measured = |name: &str, pick: fn(&persisting::HotPoint) -> Option<&KernelRow>| {
                // Timing noise can put a hit fraction just past 0 or 1 (-0.09 measured on the
                // H200): the chart's linear axis shows it where it lies.
                let points =
                    p.points.iter().filter_map(|h| Some((h.hot_bytes as f64, p.bounds.hit(pick(h)?)?, label(h))));
                Series::labelled(name, x, y, points.collect::<Vec<_>>())
            };
            series.push(measured(names::PERSISTING_MEASURED, |h| h.hinted.as_ref()));
            series.push(Series::labelled(
                names::PERSISTING_MODEL,
                x,
                y,
                p.points.iter().map(|h| (h.hot_bytes as f64, h.model_hit(L2Policy::StreamEvictFirst), label(h))),
            ));
            series.push(measured(names::PERSISTING_PLAIN, |h| Some(&h.without)));
            series.push(measured(names::PERSISTING_WINDOW, |h| Some(&h.with)));
        }
        // Sorted by median, so the near SMs and the far ones form two runs (labels: `%smid`).
        let mut medians = self.partitions.medians();
        medians.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (x, y) = ("SMs, sorted by their median L2 hit", "median cycles per L2 hit");
        series.push(Series::labelled(
            names::PARTITION_MEDIAN,
            x,
            y,
            medians.iter().map(|&(sm, m)| (sm as f64, m, format!("SM {sm}"))),
        ));
        if let Some((near, far, cut)) = self.partitions.split {
            let class =
                medians.iter().map(|&(sm, m)| (sm as f64, if m > cut { far } else { near }, format!("SM {sm}")));
            series.push(Series::labelled(names::PARTITION_MODEL, x, y, class));
        }
        series
    }

    /// The lesson's report section.
    pub fn section(&self) -> Section {
        let mut kernels: Vec<KernelRow> = self.bandwidth.iter().flat_map(|(_, a, b)| [a.clone(), b.clone()]).collect();
        kernels.push(self.chunks.clone());
        let mut notes = self.bandwidth_notes();
        let sweep = match &self.persisting {
            Ok(p) => {
                kernels.extend([p.bounds.all_hit.clone(), p.bounds.all_miss.clone()]);
                for h in &p.points {
                    kernels.extend([Some(&h.without), Some(&h.with), h.hinted.as_ref()].into_iter().flatten().cloned());
                }
                notes.extend(p.notes());
                Some(p.table())
            }
            Err(why) => {
                notes.push(why.clone());
                None
            }
        };
        notes.extend(self.partitions.footprint_notes(self.l2_bytes));
        notes.extend(self.partitions.notes());
        notes.push(format!(
            "check, L2 partition chases (SM and chain end per SM): {}",
            self.partitions.check.summary("exact")
        ));
        Section {
            name: "l2".into(),
            title: "L2: bytes in flight, persisting lines, two partitions".into(),
            lesson: "The L2 serves as fast as the SMs keep bytes in flight; a hot buffer stays in it amid a stream only when its lines persist; and each SM reaches half of it near, the other half across the link between the two partitions.".into(),
            kernels,
            sweep,
            checks: vec![self.partitions.check.clone()],
            notes,
            series: self.series(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sanitizer_footprint_has_two_whole_regions_and_a_tail() {
        let bytes = crate::lab::sanitizer::BYTES;
        assert_eq!(policies::regions(bytes), 2);
        assert!(!bytes.is_multiple_of(policies::REGION_BYTES));
        assert_eq!(check_bytes(bytes).unwrap(), bytes);
    }

    #[test]
    fn the_sweep_covers_one_to_eight_blocks_and_counts_bytes_in_flight() {
        assert_eq!(blocks_per_sm(2048), [1, 2, 4, 8]);
        assert_eq!(blocks_per_sm(1536), [1, 2, 4]);
        assert_eq!(blocks_per_sm(128), [1]);
        // 8 blocks x 256 threads x 16 B x 4 loads = 128 KiB per SM.
        assert_eq!(in_flight_bytes(8, 4), 128 << 10);
        assert_eq!(in_flight_bytes(1, 1), 4 << 10);
        assert_eq!(l2_footprint(60 << 20), 15 << 20);
        assert_eq!(l2_footprint(100), 16);
    }

    #[test]
    fn byte_counts_that_are_not_whole_vectors_are_refused() {
        assert_eq!(check_bytes(65552).unwrap(), 65552);
        for bad in [0, 15, 4100, 64 << 30] {
            let e = check_bytes(bad).unwrap_err().to_string();
            assert!(e.contains("multiple of 16 from 16 bytes to 32 GiB"), "{e}");
        }
    }
}
