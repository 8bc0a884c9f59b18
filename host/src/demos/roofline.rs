//! The roofline of this run: every global-memory kernel placed by its arithmetic intensity
//! against the device's FP32 peak (`SMs x FP32 lanes x 2 x clock`) and the memcpy bandwidth
//! measured in the same run.

use super::{KernelRow, Level, Section};
use crate::gpu::device::DeviceInfo;
use crate::model::roofline::{
    Bound, arithmetic_intensity, attainable, balance_point, bound, fp32_lanes_per_sm, peak_fp32_flops,
};
use crate::series::{Series, names};

/// The device's FP32 peak, FLOP/s: `SMs x FP32 lanes x 2 x the driver's SM clock`; `None` for
/// an architecture the roofline model has no lanes for.
pub fn peak_fp32(info: &DeviceInfo) -> Option<f64> {
    let lanes = fp32_lanes_per_sm(info.cc.0, info.cc.1)?;
    Some(peak_fp32_flops(info.sms, lanes, info.sm_clock_khz as f64 * 1e3))
}

/// The roofline section for the kernels of `sections` on `info`'s device with the run's memcpy
/// ceiling (GB/s), or `None` when no kernel ran or the device's FP32 lanes are not in the
/// model's table.
pub fn section(info: &DeviceInfo, sections: &[Section], memcpy_gbs: Option<f64>) -> Option<Section> {
    build(info, memcpy_gbs, sections)
}

/// [`section`] from a device's figures and the memcpy bandwidth (GB/s) of a run, so that a
/// recorded run's roofline is rebuilt from its kernels; a `roofline` section among `sections`
/// is skipped.
///
/// A kernel measured more than once with the same work (a size run by two demos, the same
/// probe under several register caps) is one row, its kernel named with the count; a kernel
/// left at several sizes is named with its size.
pub fn build(info: &DeviceInfo, memcpy_gbs: Option<f64>, sections: &[Section]) -> Option<Section> {
    let lanes = fp32_lanes_per_sm(info.cc.0, info.cc.1)?;
    let peak = peak_fp32(info)?;
    let (bw, bw_source) = match memcpy_gbs {
        Some(g) => (g * 1e9, "memcpy measured in this run"),
        None => (info.theoretical_bandwidth_gbs() * 1e9, "theoretical (memcpy not run)"),
    };
    let kernels: Vec<&KernelRow> = sections.iter().filter(|s| s.name != "roofline").flat_map(|s| &s.kernels).collect();
    // Rows with the same kernel and work, counted.
    let mut unique: Vec<(&KernelRow, usize)> = Vec::new();
    for &k in &kernels {
        match unique.iter_mut().find(|(u, _)| u.kernel == k.kernel && u.work == k.work) {
            Some((_, n)) => *n += 1,
            None => unique.push((k, 1)),
        }
    }
    let rows: Vec<Vec<String>> = unique
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
                Level::Global => row(k, peak, bw),
                Level::L2 => off_roofline(k, "L2-resident: above this DRAM roofline"),
                Level::Shared => off_roofline(k, "shared memory: on-chip, off this roofline"),
                Level::Registers => off_roofline(k, "registers/local: off this roofline"),
            };
            cells[0] = name;
            cells
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    // The chart's points: kernels that compute, at their intensity and measured TFLOP/s, each
    // kernel once (its first size).
    let mut points: Vec<(f64, f64, String)> = Vec::new();
    for k in sections.iter().flat_map(|s| &s.kernels) {
        let placed = k.work.flop > 0.0 && k.work.bytes > 0.0 && k.work.level == Level::Global;
        if placed && !points.iter().any(|p| p.2 == k.kernel) {
            points.push((arithmetic_intensity(k.work.flop, k.work.bytes), k.rate.value(), k.kernel.to_string()));
        }
    }
    let series = vec![Series::labelled(names::ROOFLINE, "arithmetic intensity (FLOP/byte)", "TFLOP/s", points)];
    let header = ["kernel", "FLOP/byte", "bound", "roof", "achieved", "% of roof"];
    Some(Section {
        name: "roofline".into(),
        title: "Roofline: arithmetic intensity against the FP32 peak and the memory roof".into(),
        lesson: "A kernel below the balance point cannot beat bandwidth x intensity, however fast its arithmetic: the fix is fewer bytes per FLOP (tiling), not more FLOP/s.".into(),
        sweep: Some((header.map(String::from).to_vec(), rows)),
        notes: vec![
            format!(
                "FP32 peak {:.1} TFLOP/s ({} SMs x {lanes} lanes x 2 x {:.2} GHz); memory roof {:.0} GB/s ({bw_source}); balance point {:.1} FLOP/byte.",
                peak / 1e12,
                info.sms,
                info.sm_clock_khz as f64 / 1e6,
                bw / 1e9,
                balance_point(peak, bw)
            ),
            "Bytes are the global-memory requests the lesson's model counts. Above the DRAM roof, L1 and L2 served part of them: matmul_naive's threads re-read the same rows of A and columns of B, so DRAM moves far fewer bytes than requested. A stream that only reads (read_cg) can pass memcpy, which also writes.".into(),
        ],
        series,
        ..Section::default()
    })
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

/// One kernel's place on the roofline. Kernels without arithmetic are measured against the
/// memory roof in GB/s, the others against `min(peak, intensity x bandwidth)` in TFLOP/s.
fn row(k: &KernelRow, peak: f64, bw: f64) -> Vec<String> {
    let seconds = k.timing.median_ms * 1e-3;
    let ai = arithmetic_intensity(k.work.flop, k.work.bytes);
    let (roof, achieved, unit, scale) = if k.work.flop > 0.0 {
        (attainable(ai, peak, bw), k.work.flop / seconds, "TFLOP/s", 1e12)
    } else {
        (bw, k.work.bytes / seconds, "GB/s", 1e9)
    };
    let limit = match bound(ai, peak, bw) {
        Bound::Memory => "memory",
        Bound::Compute => "compute",
    };
    vec![
        k.kernel.to_string(),
        format!("{ai:.2}"),
        limit.to_string(),
        format!("{:.2} {unit}", roof / scale),
        format!("{:.2} {unit}", achieved / scale),
        // Above the roof the model's bytes overcount DRAM traffic: no percentage of a roof the
        // kernel did not meet.
        match (achieved > roof, unit) {
            (false, _) => format!("{:.0}%", 100.0 * achieved / roof),
            (true, "TFLOP/s") => "above it: L1/L2 reuse".into(),
            (true, _) => "above memcpy".into(),
        },
    ]
}
