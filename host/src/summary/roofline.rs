//! The roofline of this run: every global-memory kernel placed by its arithmetic intensity
//! against the device's FP32 peak (`SMs x FP32 lanes x 2 x clock`, the clock measured under a
//! full FP32 load in the same run) and the memcpy bandwidth measured in the same run.
//!
//! This module owns the clock measurement ([`measure_clock`]); the runner takes it once per run
//! and passes it to [`section`].

use anyhow::Result;
use memlab_contracts::hierarchy::{SM_CLOCK_CHAINS, SM_CLOCK_RECORD_WORDS, SM_CLOCK_THREADS};

use crate::charts::{Precision, RooflineChart};
use crate::gpu::describe;
use crate::gpu::device::DeviceInfo;
use crate::gpu::launch::LaunchShape;
use crate::lab::{KernelRow, Lab, Level, Run, Section, download, poisoned};
use crate::launches;
use crate::model::roofline::{
    AboveRoof, Bound, above_roof, arithmetic_intensity, attainable, balance_point, bf16_flop_per_clock, bound,
    fp8_flop_per_clock, fp32_lanes_per_sm, tf32_flop_per_clock,
};
use crate::refuse;
use crate::series::{Series, names};
use crate::verify::{self, Check};

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `sm_clock_under_load`: `blocks` blocks of `SM_CLOCK_THREADS` threads each run
    /// `SM_CLOCK_CHAINS` independent FMA chains of `iters` rounds; one float per thread to
    /// `sums`, `[cycles, ns]` per block to `clocks`.
    pub fn sm_clock_under_load(blocks: u32) -> LaunchShape {
        LaunchShape { grid: (blocks, 1), block: (SM_CLOCK_THREADS, 1), smem_bytes: 0 }
    }
}

/// FMA rounds per chain: a full SM on cc 9.0 runs 2048 threads x 8 chains x 40 000 rounds over
/// its 128 FP32 lanes in about 5 million cycles, a few milliseconds, long against
/// `%globaltimer`'s update interval (a microsecond or less).
const CLOCK_ITERS: u32 = 40_000;
/// The chains' inputs: `x = 0.9999 x + 0.0001` stays near 1 for any number of rounds.
const CLOCK_FMA: (f32, f32, f32) = (1.0, 0.9999, 0.0001);
/// SM clocks a GPU can run at, GHz: a block's cycles over ns outside it is a broken record.
pub const PLAUSIBLE_GHZ: (f64, f64) = (0.1, 5.0);

/// The SM clock measured under a full FP32 load.
#[derive(Debug, Clone, PartialEq)]
pub struct SmClock {
    /// Cycles over nanoseconds of each block, GHz.
    pub block_ghz: Vec<f64>,
    /// The chains' sums against the CPU reference, and every block's clock in
    /// [`PLAUSIBLE_GHZ`].
    pub check: Check,
}

impl SmClock {
    /// The median over blocks, GHz; `None` when the check failed (no roof from a wrong run).
    pub fn ghz(&self) -> Option<f64> {
        if !self.check.passed() {
            return None;
        }
        let mut v = self.block_ghz.clone();
        v.sort_by(f64::total_cmp);
        Some(v[v.len() / 2])
    }
}

/// The sums one warp's lanes write (every warp writes the same 32): lane `l`'s chains from
/// `x0 + (SM_CLOCK_CHAINS l + c) / 256`, `iters` rounds of `x = fma(x, a, b)`, summed in chain
/// order, as `sm_clock_under_load` computes them.
pub fn clock_reference((x0, a, b): (f32, f32, f32), iters: u32) -> Vec<f32> {
    (0..32u32)
        .map(|lane| {
            (0..SM_CLOCK_CHAINS as u32).fold(0.0f32, |sum, c| {
                let start = x0 + (SM_CLOCK_CHAINS as u32 * lane + c) as f32 / 256.0;
                sum + (0..iters).fold(start, |x, _| x.mul_add(a, b))
            })
        })
        .collect()
}

/// Runs `sm_clock_under_load` over the whole GPU (every SM full) once and reads each block's
/// clock.
///
/// # Errors
/// Not enough device memory, or a failed launch.
pub fn measure_clock(lab: &Lab) -> Result<SmClock> {
    let gpu = &lab.gpu;
    let (blocks, threads) = crate::lab::sanitizer::grid(lab, SM_CLOCK_THREADS);
    let mut sums = poisoned::<f32>(threads)?;
    let mut clocks = poisoned::<u64>(SM_CLOCK_RECORD_WORDS * blocks as usize)?;
    let (x0, a, b) = CLOCK_FMA;
    let launch = launches::sm_clock_under_load(
        shapes::sm_clock_under_load(blocks),
        x0,
        a,
        b,
        CLOCK_ITERS,
        &mut sums,
        &mut clocks,
    );
    launch.enqueue(gpu)?;
    if let Err(e) = gpu.stream.synchronize() {
        refuse!("`{}` failed: {}", launch.kernel, describe(e));
    }
    let want = clock_reference(CLOCK_FMA, CLOCK_ITERS);
    let sums = download(&sums)?;
    let records = download(&clocks)?;
    let block_ghz: Vec<f64> = records.chunks(SM_CLOCK_RECORD_WORDS).map(|r| r[0] as f64 / r[1] as f64).collect();
    let mut check = verify::sampled_f32(&sums, sums.len(), |g| want[g % 32]);
    let bad = block_ghz.iter().enumerate().filter(|(_, g)| !(PLAUSIBLE_GHZ.0..=PLAUSIBLE_GHZ.1).contains(*g));
    for (i, ghz) in bad {
        check.mismatches += 1;
        let range = format!("{}..{} GHz", PLAUSIBLE_GHZ.0, PLAUSIBLE_GHZ.1);
        check.first_bad.get_or_insert_with(|| (threads + i, format!("block {i} at {ghz:.3} GHz"), range));
    }
    check.checked += block_ghz.len();
    Ok(SmClock { block_ghz, check })
}

/// The tensor ladder's BF16 kernels, placed against the BF16 roof.
pub fn is_bf16(kernel: &str) -> bool {
    memlab_contracts::tensor::LADDER.iter().any(|r| r.name == kernel)
}

/// The tensor ladder's FP8 kernel, placed against the FP8 roof.
pub fn is_fp8(kernel: &str) -> bool {
    kernel == memlab_contracts::tensor::FP8.name
}

/// The kernels that multiply in TF32 (rung 9's `mma.sync`, the tensor ladder's TF32 rung),
/// placed against the TF32 roof.
pub fn is_tf32(kernel: &str) -> bool {
    crate::demos::sgemm::TENSOR_KERNELS.contains(&kernel) || kernel == memlab_contracts::tensor::TF32.name
}

/// The roof `kernel`'s points are placed against.
pub fn precision(kernel: &str) -> Precision {
    match kernel {
        k if is_tf32(k) => Precision::Tf32,
        k if is_bf16(k) => Precision::Bf16,
        k if is_fp8(k) => Precision::Fp8,
        _ => Precision::Fp32,
    }
}

/// The run's roofline chart: FP32, TF32, BF16 and FP8 roofs at the roof's clock, the memcpy
/// bandwidth; `None` without memcpy, FLOP-reporting kernels or FP32 lanes for the architecture.
pub fn chart(run: &Run) -> Option<RooflineChart> {
    let (peak, memcpy) = run.peak_tflops().zip(run.memcpy_gbs)?;
    let driver = run.device.peak_fp32(None).map_or(peak, |p| p / 1e12);
    let tensor = run.device.peak_tf32(run.sm_clock_ghz).map(|p| p / 1e12);
    // The BF16 and FP8 roofs at the FP32 roof's clock: FP32's peak times their FLOP per clock
    // over FP32's.
    let (major, minor) = run.device.cc;
    let lanes = fp32_lanes_per_sm(major, minor);
    let at_clock = |per_clock: Option<u32>| {
        per_clock.zip(lanes).map(|(flop, lanes)| peak * f64::from(flop) / f64::from(2 * lanes))
    };
    let bf16 = at_clock(bf16_flop_per_clock(major, minor));
    let fp8 = at_clock(fp8_flop_per_clock(major, minor));
    RooflineChart::new(run.sections, precision, peak, memcpy, run.device.theoretical_bandwidth_gbs())
        .map(|c| c.with_driver_peak(driver).with_tensor_peak(tensor).with_bf16_peak(bf16).with_fp8_peak(fp8))
}

/// The roofline section for the kernels of `sections` on `info`'s device with the run's memcpy
/// ceiling (GB/s) and SM clock, or `None` when no kernel ran or the device's FP32 lanes are not
/// in the model's table. The clock's check is the section's.
pub fn section(
    info: &DeviceInfo,
    sections: &[Section],
    memcpy_gbs: Option<f64>,
    clock: Option<&SmClock>,
) -> Option<Section> {
    let mut s = build(info, memcpy_gbs, clock.and_then(SmClock::ghz), sections)?;
    if let Some(c) = clock.filter(|c| !c.check.passed()) {
        s.notes.insert(
            1,
            format!(
                "sm_clock_under_load failed its check ({}): the roof stays at the driver's clock.",
                c.check.summary("sums and clocks")
            ),
        );
    }
    s.checks.extend(clock.map(|c| c.check.clone()));
    Some(s)
}

/// [`section`] from a device's figures, the memcpy bandwidth (GB/s) and the SM clock measured
/// under load (GHz; the driver's clock when `None`, as in runs recorded before it was
/// measured) of a run, so that a recorded run's roofline is rebuilt from its kernels; a
/// `roofline` section among `sections` is skipped.
///
/// A kernel measured more than once with the same work (a size run by two demos, the same
/// probe under several register caps) is one row, its kernel named with the count; a kernel
/// left at several sizes is named with its size.
pub fn build(
    info: &DeviceInfo,
    memcpy_gbs: Option<f64>,
    clock_ghz: Option<f64>,
    sections: &[Section],
) -> Option<Section> {
    let roofs = Roofs::of(info, memcpy_gbs, clock_ghz)?;
    let kernels: Vec<&KernelRow> = sections.iter().filter(|s| s.name != "roofline").flat_map(|s| &s.kernels).collect();
    let mut above: Vec<(AboveRoof, String)> = Vec::new();
    let rows = table_rows(&kernels, &roofs, &mut above);
    if rows.is_empty() {
        return None;
    }
    let header = ["kernel", "FLOP/byte", "bound", "roof", "achieved", "% of roof"];
    let mut notes = roof_notes(info, &roofs, clock_ghz, &kernels);
    notes.extend(above_notes(&above, roofs.driver_ghz, clock_ghz));
    notes.push("Bytes are the global-memory requests the lesson's model counts. A stream that only reads (read_cg) can pass memcpy, which also writes.".into());
    Some(Section {
        name: "roofline".into(),
        title: "Roofline: arithmetic intensity against the FP32 peak and the memory roof".into(),
        lesson: "A kernel below the balance point cannot beat bandwidth x intensity, however fast its arithmetic: the fix is fewer bytes per FLOP (tiling), not more FLOP/s.".into(),
        sweep: Some((header.map(String::from).to_vec(), rows)),
        notes,
        series: vec![chart_points(sections)],
        ..Section::default()
    })
}

/// The roofs of one device and run: FP32, TF32 and BF16 peaks, the memory roof and its source.
struct Roofs {
    lanes: u32,
    driver_ghz: f64,
    peaks: Peaks,
    tensor: Option<Peaks>,
    bf16: Option<Peaks>,
    fp8: Option<Peaks>,
    /// Bytes per second.
    bw: f64,
    bw_source: &'static str,
}

impl Roofs {
    /// `None` when the architecture's FP32 lanes are unknown.
    fn of(info: &DeviceInfo, memcpy_gbs: Option<f64>, clock_ghz: Option<f64>) -> Option<Roofs> {
        let lanes = fp32_lanes_per_sm(info.cc.0, info.cc.1)?;
        let peaks = Peaks { driver: info.peak_fp32(None)?, measured: info.peak_fp32(clock_ghz)? };
        let pair = |driver: Option<f64>, measured: Option<f64>| {
            driver.zip(measured).map(|(driver, measured)| Peaks { driver, measured })
        };
        let (bw, bw_source) = match memcpy_gbs {
            Some(g) => (g * 1e9, "memcpy measured in this run"),
            None => (info.theoretical_bandwidth_gbs() * 1e9, "theoretical (memcpy not run)"),
        };
        Some(Roofs {
            lanes,
            driver_ghz: info.sm_clock_khz as f64 / 1e6,
            peaks,
            tensor: pair(info.peak_tf32(None), info.peak_tf32(clock_ghz)),
            bf16: pair(info.peak_bf16(None), info.peak_bf16(clock_ghz)),
            fp8: pair(info.peak_fp8(None), info.peak_fp8(clock_ghz)),
            bw,
            bw_source,
        })
    }
}

/// One table row per kernel and work, the repeats counted; the kernels placed above their roof
/// go to `above`.
fn table_rows(kernels: &[&KernelRow], roofs: &Roofs, above: &mut Vec<(AboveRoof, String)>) -> Vec<Vec<String>> {
    // Rows with the same kernel and work, counted.
    let mut unique: Vec<(&KernelRow, usize)> = Vec::new();
    for &k in kernels {
        match unique.iter_mut().find(|(u, _)| u.kernel == k.kernel && u.work == k.work) {
            Some((_, n)) => *n += 1,
            None => unique.push((k, 1)),
        }
    }
    unique
        .iter()
        .map(|&(k, n)| {
            let sizes = unique.iter().filter(|(u, _)| u.kernel == k.kernel && u.work.level == k.work.level).count();
            let mut name = k.kernel.to_string();
            if sizes > 1 {
                name += &format!(" {}", if k.size.is_empty() { size(k.work.flop) } else { crate::cli::cubed(&k.size) });
            }
            if n > 1 {
                name += &format!(" (x{n})");
            }
            let mut cells = match k.work.level {
                Level::Global => {
                    // Tensor-core kernels against their input type's roof, the rest against FP32's.
                    let tensor = [
                        (is_tf32(&k.kernel), roofs.tensor),
                        (is_bf16(&k.kernel), roofs.bf16),
                        (is_fp8(&k.kernel), roofs.fp8),
                    ];
                    let peaks = tensor.into_iter().find_map(|(is, roof)| roof.filter(|_| is)).unwrap_or(roofs.peaks);
                    let (cells, why) = row(k, peaks, roofs.bw);
                    above.extend(why.map(|w| (w, name.clone())));
                    cells
                }
                Level::L2 => off_roofline(k, "L2-resident: above this DRAM roofline"),
                Level::Shared => off_roofline(k, "shared memory: on-chip, off this roofline"),
                Level::Registers => off_roofline(k, "registers/local: off this roofline"),
            };
            cells[0] = name;
            cells
        })
        .collect()
}

/// The chart's points: kernels that compute, at their intensity and measured TFLOP/s, each
/// kernel once (its first size).
fn chart_points(sections: &[Section]) -> Series {
    let mut points: Vec<(f64, f64, String)> = Vec::new();
    for k in sections.iter().flat_map(|s| &s.kernels) {
        let placed = k.work.flop > 0.0 && k.work.bytes > 0.0 && k.work.level == Level::Global;
        if placed && !points.iter().any(|p| p.2 == k.kernel) {
            points.push((arithmetic_intensity(k.work.flop, k.work.bytes), k.rate.value(), k.kernel.to_string()));
        }
    }
    Series::labelled(names::ROOFLINE, "arithmetic intensity (FLOP/byte)", "TFLOP/s", points)
}

/// The notes that give each roof's arithmetic: FP32 and the memory roof, then the tensor-core
/// roofs the run's kernels are placed against.
fn roof_notes(info: &DeviceInfo, roofs: &Roofs, clock_ghz: Option<f64>, kernels: &[&KernelRow]) -> Vec<String> {
    let Roofs { lanes, driver_ghz, peaks, tensor, bf16, fp8, bw, bw_source } = *roofs;
    let clock = match clock_ghz {
        Some(g) => format!(
            "{g:.2} GHz, the SM clock measured under a full FP32 load (sm_clock_under_load); at the driver's peak clock of {driver_ghz:.2} GHz it would be {:.1} TFLOP/s",
            peaks.driver / 1e12
        ),
        None => format!("{driver_ghz:.2} GHz, the driver's peak clock (the SM clock was not measured in this run)"),
    };
    let mut notes = vec![format!(
        "FP32 peak {:.1} TFLOP/s = {} SMs x {lanes} lanes x 2 x {clock}. Memory roof {:.0} GB/s ({bw_source}); balance point {:.1} FLOP/byte.",
        peaks.measured / 1e12,
        info.sms,
        bw / 1e9,
        balance_point(peaks.measured, bw)
    )];
    // One sentence per tensor roof: its rate, its arithmetic, and the kernels placed against it.
    let roof = |name: &str, t: Peaks, per_clock: Option<u32>, how_and_whom: String| {
        format!(
            "{name} tensor-core roof {:.0} TFLOP/s = {} SMs x {} FLOP per clock x the same clock, dense (NVIDIA's whitepaper rate, {how_and_whom}",
            t.measured / 1e12,
            info.sms,
            per_clock.unwrap_or(0)
        )
    };
    let (major, minor) = info.cc;
    if let Some(t) = tensor {
        let mut tf32: Vec<&str> = Vec::new();
        for k in kernels.iter().filter(|k| is_tf32(&k.kernel)) {
            if !tf32.contains(&k.kernel.as_str()) {
                tf32.push(&k.kernel);
            }
        }
        let whom = format!(
            "which Hopper reaches with wgmma; rung 9's mma.sync is measured against it): {} are placed against it.",
            tf32.join(", ")
        );
        notes.push(roof("TF32", t, tf32_flop_per_clock(major, minor), whom));
    }
    if let Some(t) = bf16.filter(|_| kernels.iter().any(|k| is_bf16(&k.kernel))) {
        let ladder: Vec<&str> = memlab_contracts::tensor::LADDER.iter().map(|r| r.name).collect();
        let whom =
            format!("through wgmma): the tensor ladder's BF16 rungs ({}) are placed against it.", ladder.join(", "));
        notes.push(roof("BF16", t, bf16_flop_per_clock(major, minor), whom));
    }
    if let Some(t) = fp8.filter(|_| kernels.iter().any(|k| is_fp8(&k.kernel))) {
        let whom = format!("through wgmma): {} is placed against it.", memlab_contracts::tensor::FP8.name);
        notes.push(roof("FP8", t, fp8_flop_per_clock(major, minor), whom));
    }
    notes
}

/// The FP32 peaks, FLOP/s: at the driver's clock and at the clock measured under load.
#[derive(Debug, Clone, Copy)]
struct Peaks {
    driver: f64,
    measured: f64,
}

/// One sentence per reason some kernels lie above their roof, naming them.
fn above_notes(above: &[(AboveRoof, String)], driver_ghz: f64, clock_ghz: Option<f64>) -> Vec<String> {
    let names = |why: AboveRoof| above.iter().filter(|(w, _)| *w == why).map(|(_, n)| n.as_str()).collect::<Vec<_>>();
    let mut notes = Vec::new();
    let cached = names(AboveRoof::CacheReuse);
    if !cached.is_empty() {
        notes.push(format!(
            "Above the memory roof, below the balance point ({}): L1 and L2 served part of the bytes the model counts, so DRAM moved fewer than requested (threads re-reading the same rows and columns).",
            cached.join(", ")
        ));
    }
    let boosted = names(AboveRoof::Clock);
    if let (false, Some(g)) = (boosted.is_empty(), clock_ghz) {
        notes.push(format!(
            "Above the FP32 roof at the driver's {driver_ghz:.2} GHz ({}): the clock, not the caches: the SMs ran at {g:.2} GHz under load, and the roof here is drawn at that clock.",
            boosted.join(", ")
        ));
    }
    let unexplained = names(AboveRoof::Unexplained);
    if !unexplained.is_empty() {
        notes.push(format!(
            "Above the FP32 peak with no faster clock measured ({}): FP32 pipes cannot do this, so its FLOP count or timing is wrong, or it used other units (tensor cores).",
            unexplained.join(", ")
        ));
    }
    notes
}

/// A matmul's size from its FLOP (`2 m n k`), for records without sizes: `4096³` when cubic,
/// else the FLOP count.
fn size(flop: f64) -> String {
    let n = (flop / 2.0).cbrt().round();
    if n > 0.0 && 2.0 * n * n * n == flop { format!("{n:.0}³") } else { format!("{flop:.3e} FLOP") }
}

/// The row of a kernel whose traffic is not DRAM: every column but the reason empty.
fn off_roofline(k: &KernelRow, why: &str) -> Vec<String> {
    vec![k.kernel.to_string(), "-".into(), why.into(), "-".into(), "-".into(), "-".into()]
}

/// One kernel's place on the roofline, and why it lies above its roof when it does. Kernels
/// without arithmetic are measured against the memory roof in GB/s, the others against
/// `min(peak, intensity x bandwidth)` in TFLOP/s at the measured clock.
fn row(k: &KernelRow, peaks: Peaks, bw: f64) -> (Vec<String>, Option<AboveRoof>) {
    let seconds = k.timing.median_ms * 1e-3;
    let ai = arithmetic_intensity(k.work.flop, k.work.bytes);
    let (roof, achieved, unit, scale) = if k.work.flop > 0.0 {
        (attainable(ai, peaks.measured, bw), k.work.flop / seconds, "TFLOP/s", 1e12)
    } else {
        (bw, k.work.bytes / seconds, "GB/s", 1e9)
    };
    let limit = match bound(ai, peaks.measured, bw) {
        Bound::Memory => "memory",
        Bound::Compute => "compute",
    };
    let why = (k.work.flop > 0.0).then(|| above_roof(ai, achieved, peaks.driver, peaks.measured, bw)).flatten();
    let pct = format!("{:.0}%", 100.0 * achieved / roof);
    // Above the roof no percentage of a roof the kernel did not meet: the reason instead.
    let verdict = match (why, achieved > roof) {
        (Some(AboveRoof::CacheReuse), _) => "above it: L1/L2 reuse".into(),
        (Some(AboveRoof::Clock), false) => format!("{pct}, past driver clock"),
        (Some(AboveRoof::Clock), true) => "above it: clock".into(),
        (Some(AboveRoof::Unexplained), _) => "above it: unexplained".into(),
        (None, true) => "above memcpy".into(),
        (None, false) => pct,
    };
    let cells = vec![
        k.kernel.to_string(),
        format!("{ai:.2}"),
        limit.to_string(),
        format!("{:.2} {unit}", roof / scale),
        format!("{:.2} {unit}", achieved / scale),
        verdict,
    ];
    (cells, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tensor_ladder_is_placed_against_the_bf16_roof_not_called_unexplained() {
        use crate::demos::recorded;
        let (device, clock): (DeviceInfo, Option<f64>) = (recorded("device"), recorded("sm_clock_ghz"));
        let sections: Vec<Section> = recorded("sections");
        let s = build(&device, recorded("memcpy_gbs"), clock, &sections).unwrap();
        let bf16 = device.peak_bf16(clock).unwrap();
        let roof = s.notes.iter().find(|n| n.starts_with("BF16 tensor-core roof")).expect("a BF16 roof note");
        assert!(
            roof.starts_with(&format!("BF16 tensor-core roof {:.0} TFLOP/s = 132 SMs x 4096", bf16 / 1e12)),
            "{roof}"
        );
        let fp8 = device.peak_fp8(clock).unwrap();
        let roof = s.notes.iter().find(|n| n.starts_with("FP8 tensor-core roof")).expect("an FP8 roof note");
        assert!(
            roof.starts_with(&format!("FP8 tensor-core roof {:.0} TFLOP/s = 132 SMs x 8192", fp8 / 1e12)),
            "{roof}"
        );
        assert!(roof.ends_with("tensor_9_fp8 is placed against it."), "{roof}");
        let unexplained = s.notes.iter().find(|n| n.starts_with("Above the FP32 peak"));
        assert!(unexplained.is_none_or(|n| !n.contains("tensor_")), "{unexplained:?}");
    }

    #[test]
    fn the_clock_reference_runs_each_lanes_chains_from_its_own_start() {
        // One round from x: 0.5 x + 1; lane 1's chains start at 1 + (8 + c) / 256.
        let one = clock_reference((1.0, 0.5, 1.0), 1);
        let lane1: f32 = (0..8).map(|c| 0.5 * (1.0 + (8 + c) as f32 / 256.0) + 1.0).sum();
        assert_eq!((one.len(), one[1]), (32, lane1));
        // The measured chains decay towards 1 (by 0.9999^40000, about e^-4, from starts in 1..2):
        // sums just above 8, still apart lane by lane, so a lane's misplaced result shows.
        let long = clock_reference(CLOCK_FMA, CLOCK_ITERS);
        assert!(long.iter().all(|s| (8.0..8.2).contains(s)), "{long:?}");
        assert!(long.windows(2).all(|w| w[0] < w[1]), "{long:?}");
    }

    fn clock(block_ghz: Vec<f64>, passed: bool) -> SmClock {
        let check = verify::exact_one(u32::from(passed), 1);
        SmClock { block_ghz, check }
    }

    #[test]
    fn the_clock_is_the_median_block_and_only_from_a_checked_run() {
        assert_eq!(clock(vec![1.9, 2.1, 1.7], true).ghz(), Some(1.9));
        assert_eq!(clock(vec![1.9, 2.1, 1.7], false).ghz(), None);
    }
}
