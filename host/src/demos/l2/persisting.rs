//! Persisting L2 lines: `hot_stream_read` (a hot buffer re-read amid a 1 GiB stream) timed
//! without and with an access-policy window over the hot buffer, at hot sizes around the L2,
//! beside the hit model of `model::l2`.

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::hierarchy::READ_CG_VECTOR_BYTES;
use memlab_contracts::l2::HOT_STREAM_THREADS;

use crate::gpu::l2::{self, PersistingLimits, Window};
use crate::gpu::launch::LaunchShape;
use crate::gpu::staging::Staging;
use crate::lab::sizes::bytes;
use crate::lab::{KernelRow, KernelRun, Lab, Level, Work, download, ensure_free, measure, poison, poisoned};
use crate::launches;
use crate::model::l2::{HotStream, L2Policy, hit_from_time, hit_ratio, hot_hit};
use crate::phases::Kind;
use crate::reference;
use crate::verify;
use rayon::prelude::*;

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `hot_stream_read`: `blocks` blocks of `HOT_STREAM_THREADS` threads read the stream once
    /// and the hot buffer (`hot_mask + 1` vectors) once per as many streamed vectors.
    pub fn hot_stream_read(blocks: u32) -> LaunchShape {
        LaunchShape { grid: (blocks, 1), block: (HOT_STREAM_THREADS, 1), smem_bytes: 0 }
    }
}

/// The compute capability persisting accesses need (CUDA C++ Programming Guide, "L2 Cache
/// Set-Aside for Persisting Accesses": devices of compute capability 8.0 and above).
pub const MIN_CC: (u32, u32) = (8, 0);

/// One hot size, timed without a policy, with the window, and with `evict_first` streamed loads.
#[derive(Debug, Clone)]
pub struct HotPoint {
    /// Bytes of the hot buffer.
    pub hot_bytes: usize,
    /// The window's bytes (the hot buffer, capped at the device's largest window).
    pub window_bytes: usize,
    /// The window's `hitRatio`.
    pub hit_ratio: f64,
    /// The DRAM-byte model for this size.
    pub model: HotStream,
    /// The kernel without a window.
    pub without: KernelRow,
    /// The kernel with the window.
    pub with: KernelRow,
    /// `hot_stream_read_evict_first` (no window); `None` where the PTX lacks it (below cc 9.0).
    pub hinted: Option<KernelRow>,
}

/// The times that bound the hit fraction: every hot re-read a hit, every one a miss.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// `hot_stream_read` with the stream as its hot buffer: each hot read is the line the
    /// stream just brought in (a hit).
    pub all_hit: KernelRow,
    /// `hot_stream_read` with a second buffer as large as the stream: no hot line is read again
    /// within the L2's reach (a miss).
    pub all_miss: KernelRow,
}

impl Bounds {
    /// The hit fraction of the hot re-reads of a row (`model::l2::hit_from_time`).
    pub fn hit(&self, row: &KernelRow) -> Option<f64> {
        hit_from_time(row.timing.median_ms, self.all_hit.timing.median_ms, self.all_miss.timing.median_ms)
    }
}

impl HotPoint {
    /// Measured speed-up of the window: time without over time with (medians).
    pub fn speedup(&self) -> f64 {
        self.without.timing.median_ms / self.with.timing.median_ms
    }

    /// Measured speed-up of the `evict_first` streamed loads over no policy.
    pub fn hinted_speedup(&self) -> Option<f64> {
        self.hinted.as_ref().map(|h| self.without.timing.median_ms / h.timing.median_ms)
    }

    /// The model's hit fraction under `policy` (`model::l2::hot_hit`).
    pub fn model_hit(&self, policy: L2Policy) -> f64 {
        hot_hit(policy, self.model.l2_bytes, self.model.hot_bytes)
    }

    /// The model's speed-up of `policy` over no policy (DRAM bytes, `model::l2::HotStream`).
    pub fn model_speedup(&self, policy: L2Policy) -> f64 {
        self.model.speedup(self.model_hit(L2Policy::Plain), self.model_hit(policy))
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
    /// The times that bound the hit fraction.
    pub bounds: Bounds,
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
/// `stream_bytes` (a multiple of 16), each without a policy, with a window (the carve-out set
/// to the device's maximum for the windowed launches only) and with `evict_first` streamed
/// loads; and the two bounds of the hit fraction.
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
    // The all-miss bound's buffer: the largest power of two of whole vectors in the stream.
    let twin_bytes = 1usize << stream_bytes.max(READ_CG_VECTOR_BYTES).ilog2();
    let (blocks, threads) = crate::lab::sanitizer::grid(lab, HOT_STREAM_THREADS);
    ensure_free("the persisting-L2 lesson", stream_bytes + largest.max(twin_bytes) + twin_bytes + 4 * threads)?;
    // Both buffers are generated chunk by chunk into pinned staging and their sums computed
    // from the same formulas: the host never holds the 1 GiB stream.
    let (stream, hot) = lab.phases.time(Kind::Inputs, || {
        let (stream_len, hot_len) = (stream_bytes / 4, largest.max(twin_bytes) / 4);
        let (stream, hot): (DeviceBuffer<u32>, DeviceBuffer<u32>) = (poisoned(stream_len)?, poisoned(hot_len)?);
        let mut staging = Staging::new(stream_len.max(hot_len))?;
        staging.upload(gpu, &stream, reference::fill_strided_words)?;
        staging.upload(gpu, &hot, |offset, chunk| {
            chunk.par_iter_mut().enumerate().for_each(|(i, w)| *w = hot_word(offset + i));
        })?;
        anyhow::Ok((stream, hot))
    })?;
    let out = poisoned::<u32>(threads)?;
    let l2_bytes = gpu.info.l2_bytes as usize;
    // The carve-out the driver grants for the device's maximum (it rounds the request).
    let carve_out = match l2::granted_carve_out(limits.max_carve_out) {
        Ok(granted) => granted,
        Err(e) => {
            let asked = bytes(limits.max_carve_out);
            return Ok(Err(format!("L2 persisting: skipped, the driver refused a carve-out of {asked}: {e}")));
        }
    };
    let hinted_in_ptx = crate::ptx::needs_newer(gpu.ptx, "hot_stream_read_evict_first").is_none();
    let mut bench = Bench { lab, stream_bytes, blocks, threads, carve_out, out, hot, stream };
    let bounds = Bounds {
        all_hit: bench.run(Variant::Plain, twin_bytes, true, 0, &bench.sums(twin_bytes, true))?,
        all_miss: bench.run(Variant::Plain, twin_bytes, false, 0, &bench.sums(twin_bytes, false))?,
    };
    let mut points = Vec::new();
    for &hot_bytes in sizes {
        let window_bytes = hot_bytes.min(limits.max_window);
        let want = bench.sums(hot_bytes, false);
        let without = bench.run(Variant::Plain, hot_bytes, false, 0, &want)?;
        let with = bench.run(Variant::Window, hot_bytes, false, window_bytes, &want)?;
        let hinted =
            if hinted_in_ptx { Some(bench.run(Variant::EvictFirst, hot_bytes, false, 0, &want)?) } else { None };
        let model =
            HotStream { l2_bytes: l2_bytes as f64, hot_bytes: hot_bytes as f64, stream_bytes: stream_bytes as f64 };
        let ratio = hit_ratio(window_bytes as f64, carve_out as f64);
        points.push(HotPoint { hot_bytes, window_bytes, hit_ratio: ratio, model, without, with, hinted });
    }
    l2::reset_persisting_lines()?;
    Ok(Ok(Persisting { limits, carve_out, l2_bytes, stream_bytes, bounds, points }))
}

/// Word `i` of the hot buffer: the stream's formula, rotated so the two buffers differ.
fn hot_word(i: usize) -> u32 {
    reference::strided_word(i).rotate_left(7)
}

/// The buffers and grid every timed launch of the lesson shares.
struct Bench<'a> {
    lab: &'a Lab,
    stream_bytes: usize,
    blocks: u32,
    threads: usize,
    carve_out: usize,
    // In the reverse of their allocation: fields drop in order, so the last is freed first.
    out: DeviceBuffer<u32>,
    hot: DeviceBuffer<u32>,
    stream: DeviceBuffer<u32>,
}

impl Bench<'_> {
    /// The sums of the reads of the first `hot_bytes` of the hot buffer (`on_stream`: the
    /// stream itself is the hot buffer), the same for every variant: computed once per buffer.
    fn sums(&self, hot_bytes: usize, on_stream: bool) -> Vec<u32> {
        let stream_words = (self.stream_bytes / 4, reference::strided_word);
        self.lab.phases.time(Kind::Checks, || match on_stream {
            true => reference::hot_stream_sums(stream_words, (hot_bytes / 4, reference::strided_word), self.threads),
            false => reference::hot_stream_sums(stream_words, (hot_bytes / 4, hot_word), self.threads),
        })
    }

    /// One timed, checked launch of `variant` over the first `hot_bytes` of the hot buffer (of
    /// the stream, `on_stream`), its sums `want`; a window of `window_bytes` for the window.
    fn run(
        &mut self,
        variant: Variant,
        hot_bytes: usize,
        on_stream: bool,
        window_bytes: usize,
        want: &[u32],
    ) -> Result<KernelRow> {
        let stream_vectors = (self.stream_bytes / READ_CG_VECTOR_BYTES) as u32;
        let hot_vectors = (hot_bytes / READ_CG_VECTOR_BYTES) as u32;
        let hot_buffer = if on_stream { &self.stream } else { &self.hot };
        let launch = match variant {
            Variant::EvictFirst => launches::hot_stream_read_evict_first(
                crate::demos::l2::policies::shapes::hot_stream_read_evict_first(self.blocks),
                &self.stream,
                stream_vectors,
                hot_buffer,
                hot_vectors - 1,
                &mut self.out,
            ),
            _ => launches::hot_stream_read(
                shapes::hot_stream_read(self.blocks),
                &self.stream,
                stream_vectors,
                hot_buffer,
                hot_vectors - 1,
                &mut self.out,
            ),
        };
        let out = &self.out;
        let work = Work { flop: 0.0, bytes: 2.0 * self.stream_bytes as f64, level: Level::Global };
        let (lesson, how) = variant.describe(on_stream);
        let size = format!("hot {}, {how}", bytes(hot_bytes));
        let prediction = format!("hot {} re-read every {} of traffic", bytes(hot_bytes), bytes(2 * hot_bytes));
        let run = KernelRun { launch, lesson, prediction, work, size, reset: &|| poison(out) };
        let check = || Ok((verify::exact_u32(&download(out)?, |g| want[g]), "checksums"));
        let _window = if variant == Variant::Window {
            let ratio = hit_ratio(window_bytes as f64, self.carve_out as f64) as f32;
            Some(Window::open(&self.lab.gpu, self.carve_out, hot_buffer.as_device_ptr().as_raw(), window_bytes, ratio)?)
        } else {
            None
        };
        measure(self.lab, run, check)
    }
}

/// The three ways the lesson reads the hot buffer amid the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// `hot_stream_read`, no window.
    Plain,
    /// `hot_stream_read` with the access-policy window over the hot buffer.
    Window,
    /// `hot_stream_read_evict_first`, no window.
    EvictFirst,
}

impl Variant {
    /// The row's lesson and how the size column names it.
    fn describe(self, on_stream: bool) -> (&'static str, &'static str) {
        match (self, on_stream) {
            (_, true) => ("bound: every hot re-read a hit (the stream is the hot buffer)", "all hit"),
            (Variant::Plain, false) => ("a hot buffer re-read amid a stream, no policy", "no window"),
            (Variant::Window, false) => {
                ("a hot buffer re-read amid a stream, an access-policy window over it", "window")
            }
            (Variant::EvictFirst, false) => {
                ("a hot buffer re-read amid a stream whose loads are evict_first", "evict_first")
            }
        }
    }
}

impl Persisting {
    /// The window as the model sees it: its carve-out.
    pub fn window_policy(&self) -> L2Policy {
        L2Policy::Window { carve_out: self.carve_out as f64 }
    }

    /// The point `evict_first` speeds up most (the window's best where it was not measured).
    pub fn best(&self) -> Option<&HotPoint> {
        let gain = |p: &HotPoint| p.hinted_speedup().unwrap_or_else(|| p.speedup());
        self.points.iter().max_by(|a, b| gain(a).total_cmp(&gain(b)))
    }

    /// A hit fraction as the table prints it.
    fn h(&self, row: Option<&KernelRow>) -> String {
        row.and_then(|r| self.bounds.hit(r)).map_or("-".into(), |h| format!("{h:.2}"))
    }

    /// The sweep as a table: per hot size, the hit fraction `h` measured and modelled for each
    /// variant, the times, and the speed-ups over no policy.
    pub fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header = [
            "hot buffer",
            "h no policy (model)",
            "h window (model)",
            "h evict_first (model)",
            "no policy",
            "window",
            "evict_first",
            "speed-up window / evict_first",
        ];
        let rows = self
            .points
            .iter()
            .map(|p| {
                let hit = |row: Option<&KernelRow>, policy| format!("{} ({:.2})", self.h(row), p.model_hit(policy));
                let ms = |row: Option<&KernelRow>| row.map_or("-".into(), |r| format!("{:.3} ms", r.timing.median_ms));
                vec![
                    bytes(p.hot_bytes),
                    hit(Some(&p.without), L2Policy::Plain),
                    hit(Some(&p.with), self.window_policy()),
                    hit(p.hinted.as_ref(), L2Policy::StreamEvictFirst),
                    ms(Some(&p.without)),
                    ms(Some(&p.with)),
                    ms(p.hinted.as_ref()),
                    format!("{:.2}x / {}", p.speedup(), p.hinted_speedup().map_or("-".into(), |x| format!("{x:.2}x"))),
                ]
            })
            .collect();
        (header.map(String::from).to_vec(), rows)
    }

    /// What the measurement shows, one phrase each.
    pub fn notes(&self) -> Vec<String> {
        let b = &self.bounds;
        let mut notes = vec![
            format!(
                "persisting L2: carve-out granted {} (device maximum {}, largest window {}); L2 {}; stream {} read once per launch, one hot byte read per streamed byte",
                bytes(self.carve_out),
                bytes(self.limits.max_carve_out),
                bytes(self.limits.max_window),
                bytes(self.l2_bytes),
                bytes(self.stream_bytes)
            ),
            format!(
                "h, the hit fraction of the hot re-reads, from the time t: h = (t_miss - t) / (t_miss - t_hit), t_hit {:.3} ms (the stream as its own hot buffer), t_miss {:.3} ms (a second {} buffer)",
                b.all_hit.timing.median_ms,
                b.all_miss.timing.median_ms,
                bytes(1usize << self.stream_bytes.max(READ_CG_VECTOR_BYTES).ilog2())
            ),
            "model (model::l2::hot_hit): with no policy the L2 keeps a hot line as random replacement would, h = exp(-hot (2 - h) / L2); the window's carve-out only takes lines from that L2 (the H200 with driver 580 keeps no more hot lines with any window than with its carve-out alone: bench/l2_experiments.cu); evict_first streamed lines leave first, so the hot buffer keeps half the L2 (each partition its own copy)".into(),
        ];
        if let Some(p) = self.best()
            && let Some(x) = p.hinted_speedup()
        {
            notes.push(format!(
                    "evict_first on the streamed loads speeds the hot {} case up {x:.2}x (h {} -> {}; model {:.2}x), the window {:.2}x (h {}): mark what is read once, rather than what is read again",
                    bytes(p.hot_bytes),
                    self.h(Some(&p.without)),
                    self.h(p.hinted.as_ref()),
                    p.model_speedup(L2Policy::StreamEvictFirst),
                    p.speedup(),
                    self.h(Some(&p.with)),
                ));
        }
        if self.points.iter().all(|p| p.hinted.is_none()) {
            notes.push(
                "evict_first: skipped, hot_stream_read_evict_first is in the sm_90 PTX only (createpolicy, PTX ISA 7.4)".into(),
            );
        }
        notes
    }

    /// The hierarchy table's row: level, seed latency, measured latency, seed bandwidth,
    /// measured bandwidth, measured by.
    pub fn hierarchy_row(&self) -> Option<Vec<String>> {
        let p = self.best()?;
        let hinted = match (&p.hinted, p.hinted_speedup()) {
            (Some(h), Some(x)) => format!(
                "{x:.2}x with evict_first streamed loads ({:.0} -> {:.0} GB/s, h {} -> {}); ",
                p.without.rate.value(),
                h.rate.value(),
                self.h(Some(&p.without)),
                self.h(Some(h))
            ),
            _ => String::new(),
        };
        Some(vec![
            "L2 persisting".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            format!("{hinted}{:.2}x with the window (h {})", p.speedup(), self.h(Some(&p.with))),
            format!(
                "hot_stream_read(_evict_first), hot {} amid {}, carve-out {}, hitRatio {:.2}",
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
