//! Persisting L2 lines: `hot_stream_read` (a hot buffer re-read amid a 1 GiB stream) timed
//! without and with an access-policy window over the hot buffer, at hot sizes around the L2,
//! beside the hit model of `model::l2`.

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::hierarchy::READ_CG_VECTOR_BYTES;
use memlab_contracts::l2::HOT_STREAM_THREADS;

use crate::demos::hierarchy::ladder::bytes;
use crate::demos::{KernelRow, KernelRun, Lab, Level, Work, download, ensure_free, measure, poison, poisoned, upload};
use crate::gpu::l2::{self, PersistingLimits, Window};
use crate::gpu::launch::LaunchShape;
use crate::model::l2::{HotStream, hit_ratio};
use crate::reference;
use crate::verify;

crate::kernels! {
    /// `hot_stream_read`: `blocks` blocks of `HOT_STREAM_THREADS` threads read the stream once
    /// and the hot buffer (`hot_mask + 1` vectors) once per as many streamed vectors.
    fn hot_stream_read(blocks: u32;
        stream: &DeviceBuffer<u32>, stream_vectors: u32, hot: &DeviceBuffer<u32>, hot_mask: u32,
        out: &mut DeviceBuffer<u32>)
        => LaunchShape { grid: (blocks, 1), block: (HOT_STREAM_THREADS, 1), smem_bytes: 0 };
}

/// The compute capability persisting accesses need (CUDA C++ Programming Guide, "L2 Cache
/// Set-Aside for Persisting Accesses": devices of compute capability 8.0 and above).
pub const MIN_CC: (u32, u32) = (8, 0);

/// One hot size, timed without and with the window.
#[derive(Debug, Clone)]
pub struct HotPoint {
    /// Bytes of the hot buffer.
    pub hot_bytes: usize,
    /// The window's bytes (the hot buffer, capped at the device's largest window).
    pub window_bytes: usize,
    /// The window's `hitRatio`.
    pub hit_ratio: f64,
    /// The model for this size.
    pub model: HotStream,
    /// The kernel without a window.
    pub without: KernelRow,
    /// The kernel with the window.
    pub with: KernelRow,
}

impl HotPoint {
    /// Measured speed-up of the window: time without over time with (medians).
    pub fn speedup(&self) -> f64 {
        self.without.timing.median_ms / self.with.timing.median_ms
    }

    /// The model's speed-up for the carve-out granted.
    pub fn model_speedup(&self, carve_out: usize) -> f64 {
        self.model.speedup(carve_out as f64, self.hit_ratio)
    }
}

/// The persisting measurement: the device's limits, the carve-out granted, one point per size.
#[derive(Debug, Clone)]
pub struct Persisting {
    /// The device's limits.
    pub limits: PersistingLimits,
    /// The carve-out the driver granted (asked: the device's maximum), bytes.
    pub carve_out: usize,
    /// The L2, bytes.
    pub l2_bytes: usize,
    /// The stream, bytes.
    pub stream_bytes: usize,
    /// One point per hot size, ascending.
    pub points: Vec<HotPoint>,
}

/// Why the lesson cannot run on this GPU, in one line; `None` when it can.
pub fn unsupported(cc: (u32, u32), limits: &PersistingLimits) -> Option<String> {
    if cc < MIN_CC {
        return Some(format!(
            "L2 persisting: skipped, needs compute capability {}.{} or later (this GPU is {}.{})",
            MIN_CC.0, MIN_CC.1, cc.0, cc.1
        ));
    }
    (limits.max_carve_out == 0 || limits.max_window == 0)
        .then(|| "L2 persisting: skipped, the driver reports no persisting L2 carve-out on this GPU".to_string())
}

/// Hot sizes: powers of two from an eighth of the L2 (rounded up to a power of two) to that
/// power of two itself (the reuse distance, twice the hot bytes, from a quarter of the L2 to
/// twice it), those no larger than the stream of `stream_bytes`; the largest power of two of
/// whole vectors within the stream when none is.
pub fn hot_sizes(l2_bytes: usize, stream_bytes: usize) -> Vec<usize> {
    let top = l2_bytes.max(8 * READ_CG_VECTOR_BYTES).next_power_of_two();
    let sizes: Vec<usize> = [top / 8, top / 4, top / 2, top].into_iter().filter(|&h| h <= stream_bytes).collect();
    if sizes.is_empty() {
        let within = 1usize << stream_bytes.max(READ_CG_VECTOR_BYTES).ilog2();
        return vec![within.max(READ_CG_VECTOR_BYTES)];
    }
    sizes
}

/// Measures the hot sizes `sizes` (powers of two, at least 16 bytes) amid a stream of
/// `stream_bytes` (a multiple of 16), each without and with a window, the carve-out set to the
/// device's maximum for the windowed launches only.
///
/// The inner `Err` is the one line saying why the lesson is skipped: the driver refused the
/// carve-out (as under MPS or on a partitioned GPU).
pub fn measure_sizes(
    lab: &Lab,
    limits: PersistingLimits,
    stream_bytes: usize,
    sizes: &[usize],
) -> Result<Result<Persisting, String>> {
    let gpu = &lab.gpu;
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let (blocks, threads) = crate::demos::full_gpu(&gpu.info, HOT_STREAM_THREADS);
    ensure_free("the persisting-L2 lesson", stream_bytes + largest + 4 * threads)?;
    let stream_words: Vec<u32> = (0..stream_bytes / 4).map(reference::strided_word).collect();
    let hot_words: Vec<u32> = (0..largest / 4).map(|i| reference::strided_word(i).rotate_left(7)).collect();
    let stream = upload(&stream_words)?;
    let hot = upload(&hot_words)?;
    let mut out = poisoned::<u32>(threads)?;
    let l2_bytes = gpu.info.l2_bytes as usize;
    // The carve-out the driver grants for the device's maximum (it rounds the request).
    let carve_out = match l2::granted_carve_out(limits.max_carve_out) {
        Ok(granted) => granted,
        Err(e) => {
            let asked = bytes(limits.max_carve_out);
            return Ok(Err(format!("L2 persisting: skipped, the driver refused a carve-out of {asked}: {e}")));
        }
    };
    let mut points = Vec::new();
    for &hot_bytes in sizes {
        let hot_vectors = (hot_bytes / READ_CG_VECTOR_BYTES) as u32;
        let want = reference::hot_stream_sums(&stream_words, &hot_words[..hot_bytes / 4], threads);
        let window_bytes = hot_bytes.min(limits.max_window);
        let mut run = |windowed: bool| -> Result<KernelRow> {
            let launch = kernels::hot_stream_read(
                blocks,
                &stream,
                (stream_bytes / READ_CG_VECTOR_BYTES) as u32,
                &hot,
                hot_vectors - 1,
                &mut out,
            );
            let work = Work { flop: 0.0, bytes: 2.0 * stream_bytes as f64, level: Level::Global };
            let (lesson, how) = if windowed {
                ("a hot buffer re-read amid a stream, its lines persisting in L2", "persisting window")
            } else {
                ("a hot buffer re-read amid a stream, plain LRU", "no window")
            };
            let size = format!("hot {}, {how}", bytes(hot_bytes));
            let prediction = format!("hot {} re-read every {} of traffic", bytes(hot_bytes), bytes(2 * hot_bytes));
            let run = KernelRun { launch, lesson, prediction, work, size, reset: &|| poison(&out) };
            let check = || Ok((verify::exact_u32(&download(&out)?, |g| want[g]), "checksums"));
            let _window = if windowed {
                let ratio = hit_ratio(window_bytes as f64, carve_out as f64) as f32;
                Some(Window::open(gpu, carve_out, hot.as_device_ptr().as_raw(), window_bytes, ratio)?)
            } else {
                None
            };
            measure(lab, run, check)
        };
        let without = run(false)?;
        let with = run(true)?;
        let model =
            HotStream { l2_bytes: l2_bytes as f64, hot_bytes: hot_bytes as f64, stream_bytes: stream_bytes as f64 };
        let ratio = hit_ratio(window_bytes as f64, carve_out as f64);
        points.push(HotPoint { hot_bytes, window_bytes, hit_ratio: ratio, model, without, with });
    }
    l2::reset_persisting_lines()?;
    Ok(Ok(Persisting { limits, carve_out, l2_bytes, stream_bytes, points }))
}

impl Persisting {
    /// The point the window speeds up most.
    pub fn best(&self) -> Option<&HotPoint> {
        self.points.iter().max_by(|a, b| a.speedup().total_cmp(&b.speedup()))
    }

    /// The sweep as a table.
    pub fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header = [
            "hot buffer",
            "bytes between re-reads",
            "hitRatio",
            "model hot hits (no window / window)",
            "model speed-up",
            "no window",
            "window",
            "measured speed-up",
        ];
        let rows = self
            .points
            .iter()
            .map(|p| {
                vec![
                    bytes(p.hot_bytes),
                    bytes(2 * p.hot_bytes),
                    format!("{:.2}", p.hit_ratio),
                    format!(
                        "{:.0}% / {:.0}%",
                        100.0 * p.model.without_window().hot_hit,
                        100.0 * p.model.with_window(self.carve_out as f64, p.hit_ratio).hot_hit
                    ),
                    format!("{:.2}x", p.model_speedup(self.carve_out)),
                    format!("{:.3} ms ({:.0} GB/s)", p.without.timing.median_ms, p.without.rate.value()),
                    format!("{:.3} ms ({:.0} GB/s)", p.with.timing.median_ms, p.with.rate.value()),
                    format!("{:.2}x", p.speedup()),
                ]
            })
            .collect();
        (header.map(String::from).to_vec(), rows)
    }

    /// What the measurement shows, one phrase each.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = vec![format!(
            "persisting L2: carve-out granted {} (device maximum {}, largest window {}); L2 {}; stream {} read once per launch, one hot byte read per streamed byte",
            bytes(self.carve_out),
            bytes(self.limits.max_carve_out),
            bytes(self.limits.max_window),
            bytes(self.l2_bytes),
            bytes(self.stream_bytes)
        )];
        notes.push(
            "model: between two reads of a hot line the kernel reads the hot buffer and as many streamed bytes; without a window LRU keeps the line only if that fits the L2, with one the persisting share (hitRatio) stays while it fits the carve-out; speed-up = DRAM bytes without / with (DRAM-bound)".into(),
        );
        if let Some(p) = self.best() {
            notes.push(format!(
                "the window speeds the hot {} case up {:.2}x (model {:.2}x): {} of hot re-reads served by L2 instead of DRAM",
                bytes(p.hot_bytes),
                p.speedup(),
                p.model_speedup(self.carve_out),
                bytes((p.model.stream_bytes - p.model.hot_bytes) as usize)
            ));
        }
        notes
    }

    /// The hierarchy table's row: level, seed latency, measured latency, seed bandwidth,
    /// measured bandwidth, measured by.
    pub fn hierarchy_row(&self) -> Option<Vec<String>> {
        let p = self.best()?;
        Some(vec![
            "L2 persisting".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            format!(
                "{:.2}x with the window ({:.0} -> {:.0} GB/s; model {:.2}x)",
                p.speedup(),
                p.without.rate.value(),
                p.with.rate.value(),
                p.model_speedup(self.carve_out)
            ),
            format!(
                "hot_stream_read, hot {} amid {}, carve-out {}, hitRatio {:.2}",
                bytes(p.hot_bytes),
                bytes(self.stream_bytes),
                bytes(self.carve_out),
                p.hit_ratio
            ),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_sizes_put_the_reuse_distance_around_the_l2() {
        assert_eq!(hot_sizes(60 << 20, 1 << 30), [8 << 20, 16 << 20, 32 << 20, 64 << 20]);
        assert_eq!(hot_sizes(40 << 20, 1 << 30), [8 << 20, 16 << 20, 32 << 20, 64 << 20]);
        assert_eq!(hot_sizes(60 << 20, 40 << 20), [8 << 20, 16 << 20, 32 << 20]);
        assert_eq!(hot_sizes(0, 1 << 30), [16, 32, 64, 128]);
        // A stream smaller than every hot size: the largest power of two inside it.
        assert_eq!(hot_sizes(60 << 20, 65552), [65536]);
        assert_eq!(hot_sizes(60 << 20, 16), [16]);
    }

    #[test]
    fn older_gpus_and_gpus_without_a_carve_out_are_skipped_in_one_line() {
        let ok = PersistingLimits { max_carve_out: 45 << 20, max_window: 128 << 20 };
        assert_eq!(unsupported((9, 0), &ok), None);
        assert_eq!(unsupported((8, 0), &ok), None);
        let old = unsupported((7, 5), &ok).unwrap();
        assert_eq!(old, "L2 persisting: skipped, needs compute capability 8.0 or later (this GPU is 7.5)");
        let none = PersistingLimits { max_carve_out: 0, max_window: 0 };
        assert!(unsupported((8, 6), &none).unwrap().contains("no persisting L2 carve-out"));
    }
}
