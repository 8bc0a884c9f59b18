//! A run on disk: the JSON record `run-demos --json` writes (`report` reads it back through
//! [`crate::present::record_check`]), and the report folder `--report DIR` writes: `DIR/report.md` with
//! the charts of [`crate::present::charts`] as SVG and PNG next to it.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::gpu::device::DeviceInfo;
use crate::lab::Section;
use crate::present::charts::{self, BarChart, Chart, OccupancyChart, RooflineChart, SizesChart, SweepChart};
use crate::present::table::Layout;
use crate::series::names;
use crate::{present::output, present::report};

/// Kernels whose occupancy graphs the report draws, when they ran.
pub const OCCUPANCY_KERNELS: [&str; 2] = ["matmul_tiled_32", "transpose_padded"];

/// Everything one `run-demos` measured, as written by `--json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// CUDA device ordinal.
    pub ordinal: u32,
    /// The device's figures.
    pub device: DeviceInfo,
    /// PTX target loaded, e.g. `"sm_90"`.
    pub ptx_arch: String,
    /// Device-to-device memcpy bandwidth, GB/s, when the memcpy demo ran.
    pub memcpy_gbs: Option<f64>,
    /// The SM clock under a full FP32 load, GHz (the median block of `sm_clock_under_load`),
    /// when measured and checked; absent from runs recorded before it was measured, whose
    /// roofline keeps the driver's clock.
    #[serde(default)]
    pub sm_clock_ghz: Option<f64>,
    /// One section per demo, in run order.
    pub sections: Vec<Section>,
    /// Wall time per demo and phase (absent from runs recorded before it was kept).
    #[serde(default)]
    pub phases: Vec<crate::phases::Phase>,
}

impl RunRecord {
    /// Writes the record as pretty JSON, whole or not at all ([`output::write`]).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        output::write(path, text + "\n")
    }

    /// Gives every kernel row recorded before rows carried their `memlab occupancy` command
    /// that command, from the row's figures and the device's compute capability.
    pub fn fill_occupancy_commands(&mut self) {
        let cc = self.device.cc;
        for row in self.sections.iter_mut().flat_map(|s| &mut s.kernels).filter(|r| r.occupancy_command.is_empty()) {
            row.occupancy_command = crate::lab::occupancy_command(cc, &row.attrs, &row.shape);
        }
    }

    /// Rebuilds the roofline section (derived from the other sections' kernels) with this
    /// version's rules and the recorded SM clock, when the run has one; the clock
    /// measurement's check is kept.
    pub fn rebuild_roofline(&mut self) {
        let Some(i) = self.sections.iter().position(|s| s.name == "roofline") else { return };
        let fresh = crate::summary::roofline::build(&self.device, self.memcpy_gbs, self.sm_clock_ghz, &self.sections);
        if let Some(mut fresh) = fresh {
            fresh.checks = std::mem::take(&mut self.sections[i].checks);
            self.sections[i] = fresh;
        }
    }

    /// FP32 peak, TFLOP/s, from the SM count, the FP32 lanes of the architecture and the SM
    /// clock measured under load (the driver's SM clock for runs recorded without it); `None`
    /// for an architecture the roofline model has no lanes for.
    pub fn peak_tflops(&self) -> Option<f64> {
        self.device.peak_fp32(self.sm_clock_ghz).map(|p| p / 1e12)
    }
}

/// The clusters lesson's charts: stem, title, measured and published series, caption.
const CLUSTER_CHARTS: [(&str, &str, &str, &str, &str); 3] = [
    (
        "dsmem_latency",
        "Distributed shared memory: dependent-load latency",
        names::DSMEM_LATENCY,
        names::DSMEM_LATENCY_PUBLISHED,
        "Cycles per dependent `ld.shared::cluster` load in the last block of a cluster, by cluster size, against the published figures (Luo et al. 2024, midpoint of 180-213 cycles).",
    ),
    (
        "dsmem_bandwidth",
        "Distributed shared memory: reads of the next block",
        names::DSMEM_READ,
        names::DSMEM_READ_PUBLISHED,
        "GB/s of 16-byte reads of the next block's shared memory on every SM, by cluster size, against the published DSMEM throughput (~3.3 TB/s at 2, ~2.7-2.9 TB/s at 4-16).",
    ),
    (
        "cluster_barrier",
        "The cluster-wide barrier",
        names::CLUSTER_BARRIER,
        names::CLUSTER_BARRIER_PUBLISHED,
        "Cycles per `barrier.cluster.arrive` + `wait` in one cluster, by cluster size, against the published ~850 cycles.",
    ),
];

/// The run's roofline: FP32, TF32 and BF16 roofs at the roof's clock, the memcpy bandwidth;
/// `None` without memcpy, FLOP-reporting kernels or FP32 lanes for the architecture.
pub fn roofline(record: &RunRecord) -> Option<RooflineChart> {
    match (record.peak_tflops(), record.memcpy_gbs) {
        (Some(peak), Some(memcpy)) => {
            let driver = record.device.peak_fp32(None).map_or(peak, |p| p / 1e12);
            let tensor = record.device.peak_tf32(record.sm_clock_ghz).map(|p| p / 1e12);
            // The BF16 and FP8 roofs at the FP32 roof's clock: FP32's peak times their FLOP per
            // clock over FP32's.
            let (major, minor) = record.device.cc;
            let lanes = crate::model::roofline::fp32_lanes_per_sm(major, minor);
            let at_clock = |per_clock: Option<u32>| {
                per_clock.zip(lanes).map(|(flop, lanes)| peak * f64::from(flop) / f64::from(2 * lanes))
            };
            let bf16 = at_clock(crate::model::roofline::bf16_flop_per_clock(major, minor));
            let fp8 = at_clock(crate::model::roofline::fp8_flop_per_clock(major, minor));
            RooflineChart::new(&record.sections, peak, memcpy, record.device.theoretical_bandwidth_gbs())
                .map(|c| c.with_driver_peak(driver).with_tensor_peak(tensor).with_bf16_peak(bf16).with_fp8_peak(fp8))
        }
        _ => None,
    }
}

/// One chart's place in the report: the image (SVG) and what to read in it.
struct Figure {
    file: PathBuf,
    caption: String,
}

fn figure(chart: &impl Chart, dir: &Path, caption: String) -> Result<Figure> {
    let [svg, _png] = charts::save(chart, dir)?;
    Ok(Figure { file: svg, caption })
}

/// The figures of a report as they are drawn, and the charts the run lacks.
struct Figures<'a> {
    dir: &'a Path,
    drawn: Vec<Figure>,
    missing: Vec<String>,
}

impl Figures<'_> {
    /// Draws `chart` with `caption`, or names `what` among the missing charts when the run lacks
    /// its data.
    fn add(&mut self, chart: Option<impl Chart>, caption: &str, what: &str) -> Result<()> {
        match chart {
            Some(c) => self.drawn.push(figure(&c, self.dir, caption.into())?),
            None => self.missing.push(what.to_string()),
        }
        Ok(())
    }

    /// Draws `chart` when the run has its data; a run without it misses nothing.
    fn add_if(&mut self, chart: Option<impl Chart>, caption: &str) -> Result<()> {
        if let Some(c) = chart {
            self.drawn.push(figure(&c, self.dir, caption.into())?);
        }
        Ok(())
    }
}

/// Writes `DIR/report.md` and its charts; returns every file written.
///
/// A chart whose data the run lacks (no coalescing section, no SGEMM ladder yet) is skipped
/// with a note in the report.
///
/// # Errors
/// The folder or a file cannot be written.
pub fn write(dir: &Path, record: &RunRecord) -> Result<Vec<PathBuf>> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let sections = &record.sections;
    let mut figs = Figures { dir, drawn: Vec::new(), missing: Vec::new() };
    memory_figures(&mut figs, sections)?;
    for kernel in OCCUPANCY_KERNELS {
        let (major, minor) = record.device.cc;
        let caption = format!(
            "The occupancy calculator's three graphs for `{kernel}` (hardware rules for cc {major}.{minor}); the red dot is the launch measured here."
        );
        let missing = format!("occupancy graphs of `{kernel}` (not in this run)");
        figs.add(OccupancyChart::for_kernel(sections, record.device.cc, kernel), &caption, &missing)?;
    }
    compute_figures(&mut figs, record)?;
    tma_figures(&mut figs, sections)?;
    // Drawn only when the run swept sizes (`run-demos --sizes`): not a chart a run lacks.
    let caption = "Copy and the transposes at each size of the `--sizes` sweep, as a share of memcpy at the same size: a dip at an unaligned size is the alignment cliff.";
    figs.add_if(SizesChart::from_sections(sections), caption)?;
    // The clusters lesson's sweeps, drawn when the run has the lesson (a cc 9.0 GPU); a run
    // without it has nothing to miss.
    for (stem, title, measured, published, caption) in CLUSTER_CHARTS {
        figs.add_if(SweepChart::clusters(sections, stem, title, measured, published), caption)?;
    }
    let md = markdown(record, &figs.drawn, &figs.missing);
    let path = dir.join("report.md");
    output::write(&path, md)?;
    let mut written = vec![path];
    for f in &figs.drawn {
        written.push(f.file.clone());
        written.push(f.file.with_extension("png"));
    }
    Ok(written)
}

/// The memory levels' sweeps: coalescing, banks, the latency ladder, the L2's bandwidth,
/// persisting window and partitions.
fn memory_figures(figs: &mut Figures, sections: &[Section]) -> Result<()> {
    figs.add(SweepChart::coalescing(sections), "Useful bandwidth of `strided_read` relative to stride 1 (log scale), against the 32-byte-sector and 128-byte-segment models.", "coalescing sweep (run the `coalescing` demo)")?;
    figs.add(
        SweepChart::banks(sections),
        "Time of `shared_bank_probe` relative to stride 1 (log scale), against the bank model's serialization factor.",
        "bank sweep (run the `banks` demo)",
    )?;
    figs.add(SweepChart::ladder(sections), "Cycles per dependent load against the chain's working set (log scale): the plateaus are L1, the near L2 partition, the far one, HBM, and HBM with page-table walks past the TLBs' reach.", "latency ladder (run the `hierarchy` demo)")?;
    figs.add(SweepChart::l2_bandwidth(sections), "L2 read bandwidth over a quarter of the L2 against blocks per SM (log scale): four 16-byte loads in flight per thread against one.", "L2 bandwidth sweep (run the `l2` demo)")?;
    figs.add(SweepChart::persisting(sections), "The hit fraction h of the hot re-reads of `hot_stream_read` against the hot buffer's size, by policy: `evict_first` streamed loads measured and predicted by the hit model, no policy, and an access-policy window over the hot buffer, each measured from its time between the all-hit and the all-miss bounds. A measured h outside 0 to 1 is timing noise: crossed out at the axis' edge and named in the key, not drawn.", "persisting-L2 sweep (run the `l2` demo on cc 8.0 or later)")?;
    figs.add(SweepChart::partitions(sections), "Median cycles per L2 hit from each SM on lines SM 0 brought into L2, the SMs sorted by it: the SMs of SM 0's partition find the lines near; past the marked step, the SMs across the partition link, of which about half the hops are far. The dashed levels are the median of each run of SMs.", "L2 partition probe (run the `l2` demo)")?;
    Ok(())
}

/// The roofline, the data movers' bandwidth bars and the SGEMM ladder.
fn compute_figures(figs: &mut Figures, record: &RunRecord) -> Result<()> {
    let sections = &record.sections;
    figs.add(roofline(record), "Kernels that compute, each at its first size, at their arithmetic intensity by requested global loads (the tiling model; caches ignored, so a kernel whose loads hit L1/L2, like `matmul_naive`, sits above the DRAM roof), each against the roof of its arithmetic: FP32 pipes, TF32 tensor cores (SGEMM rung 9, tensor rung 7), BF16 tensor cores (the tensor ladder), FP8 tensor cores (tensor rung 9). Each point carries its number in the table beside the plot. The roofs are at the SM clock measured under load, when the run measured it; a point above its compute roof with no faster clock measured is listed as n/a and not drawn.", "roofline (needs the `memcpy` and `matmul` demos)")?;
    figs.add(BarChart::bandwidth(sections, record.memcpy_gbs), "Kernels that only move data (no FLOP, so no place on the roofline): bandwidth against the memcpy ceiling, which a kernel that only reads (`read_cg`) can pass. Each bar is named by its kernel and, where the kernel runs more than once, by its size or configuration (the hot buffer and its policy, the swizzle) or its demo; the L2-resident bars re-read a hot buffer amid a stream, and the re-reads of a buffer that fits in L2 hit there.", "bandwidth bars (run the `transpose` demo)")?;
    figs.add(BarChart::sgemm_ladder(sections), "The SGEMM ladder: each rung's TFLOP/s at every size the run measured, one group per size, against cuBLAS (FP32, and TF32 allowed) at that size.", "SGEMM ladder against cuBLAS (this run has no `sgemm` section)")?;
    Ok(())
}

/// The TMA lesson's bulk-copy curve, pipeline and swizzle charts.
fn tma_figures(figs: &mut Figures, sections: &[Section]) -> Result<()> {
    figs.add(SweepChart::tma_curve(sections), "1-D TMA bulk copies (`tma_bulk_copy`, a 256 MiB copy through shared memory): GB/s against bytes per copy, one line per blocks per SM (log scale). Bytes in flight per SM = bytes per copy x blocks per SM; published for H800/H100: 95-96% of HBM peak only from 8-12 KiB per copy and 2-3 blocks per SM.", "TMA bulk-copy curve (run the `tma` demo on cc 9.0)")?;
    figs.add(SweepChart::tma_pipeline(sections), "The pipelined TMA kernels (`tma_bulk_copy`, `tma_copy`, `tma_transpose`; a ring of shared buffers with an mbarrier each, in persistent blocks or one block per few tiles): the fastest checked GB/s at each stage count, over the swept boxes and grids. One stage loads, waits and stores one box at a time; more stages keep the next boxes' loads in flight while one is stored.", "TMA pipeline chart (run the `tma` demo on cc 9.0)")?;
    figs.add(SweepChart::tma_swizzle(sections), "`tma_transpose` per swizzle mode of its input tensor map: time relative to the fastest mode, against the bank model's conflict factor of the tile's float4 column read with the map's swizzle and with the same box unswizzled.", "TMA swizzle chart (run the `tma` demo on cc 9.0)")?;
    Ok(())
}

fn markdown(record: &RunRecord, figures: &[Figure], missing: &[String]) -> String {
    let mut md = format!(
        "# memlab report: {}\n\n{}\n\n## Charts\n\n",
        record.device.name,
        report::device_in(Layout::Markdown, record.ordinal, &record.device, &record.ptx_arch)
    );
    for f in figures {
        let name = f.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        md += &format!("![{name}]({name})\n\n{}\n\n", f.caption);
    }
    if !missing.is_empty() {
        md += "Not drawn, for lack of data:\n\n";
        for m in missing {
            md += &format!("- {m}\n");
        }
        md += "\n";
    }
    md += "## Tables\n\n";
    for s in &record.sections {
        md += &report::section_in(Layout::Markdown, s, record.memcpy_gbs);
        md += "\n";
    }
    md
}
