//! Shared-memory bank conflicts: `shared_bank_probe` at strides 1, 2, 4, ..., 32, 33 and the
//! broadcast, time per load against the bank model's serialization factor.

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::probes::{BANK_PROBE_SMEM, BANK_PROBE_UNROLL, BLOCK};

use super::{
    Inputs, KernelRow, KernelRun, Lab, Level, Section, Work, download, ensure_free, measure, poison, poisoned,
};
use crate::gpu::launch::LaunchShape;
use crate::model::banks::WarpRequest;
use crate::reference;
use crate::series::{Series, names};
use crate::verify;

crate::kernels! {
    /// `shared_bank_probe`: `blocks` one-dimensional blocks of 256 threads, 16384 B of shared
    /// memory; lane `t` reads shared word `t * stride` (0: the broadcast), `iters` loads per
    /// thread (a multiple of 8); `out` holds one word per thread.
    fn shared_bank_probe(blocks: u32; out: &mut DeviceBuffer<u32>, stride: u32, iters: u32)
        => LaunchShape { grid: (blocks, 1), block: (BLOCK, 1), smem_bytes: BANK_PROBE_SMEM };
}

/// Strides swept, in 4-byte words; 0 is the broadcast (every lane reads one word).
pub const STRIDES: [usize; 8] = [1, 2, 4, 8, 16, 32, 33, 0];

/// `--bank-iters`: the probe's loads per thread, a multiple of its unroll (8).
///
/// # Errors
/// A refusal naming the rule.
pub fn check_iters(iters: u32) -> Result<usize> {
    if !iters.is_multiple_of(BANK_PROBE_UNROLL as u32) {
        crate::refuse!("--bank-iters {iters} must be a multiple of {BANK_PROBE_UNROLL} (the probe's unroll)");
    }
    Ok(iters as usize)
}

/// The bank model's serialization factor for lane `t` reading word `t * stride`.
fn bank_factor(stride: usize) -> u32 {
    WarpRequest::strided(stride as u64).analyze().wavefronts
}

/// The probe at `stride` on `out` (one word per thread of a full GPU), measured.
fn measure_on(lab: &Lab, out: &mut DeviceBuffer<u32>, stride: usize) -> Result<KernelRow> {
    let (blocks, threads) = super::full_gpu(&lab.gpu.info, BLOCK);
    let iters = lab.sizes.bank_iters;
    let launch = kernels::shared_bank_probe(blocks, out, stride as u32, iters as u32);
    launch.shape.require_whole_warps(launch.kernel, lab.gpu.info.max_threads_per_block)?;
    // Shared-memory load bandwidth: 4 bytes per lane per load.
    let work = Work { flop: 0.0, bytes: 4.0 * (threads * iters) as f64, level: Level::Shared };
    let run = KernelRun {
        launch,
        lesson: "lane t reads shared word t * stride",
        prediction: format!("factor {}", bank_factor(stride)),
        work,
        size: format!("stride {stride}"),
        reset: &|| poison(&*out),
    };
    let check = || {
        let sums: Vec<u32> = (0..32).map(|lane| reference::bank_probe_sum(lane, stride, iters)).collect();
        Ok((verify::exact_u32(&download(&*out)?, |g| sums[g % 32]), "checksums"))
    };
    measure(lab, run, check)
}

/// The probe at one stride with every SM full of probe blocks: shared-memory load bandwidth
/// (stride 1 is the hierarchy's shared-memory row).
///
/// # Errors
/// Not enough device memory, or a launch refusal.
pub fn measure_stride(lab: &Lab, stride: usize) -> Result<KernelRow> {
    let (_, threads) = super::full_gpu(&lab.gpu.info, BLOCK);
    ensure_free("the bank probe", 4 * threads)?;
    measure_on(lab, &mut poisoned::<u32>(threads)?, stride)
}

/// Runs the stride sweep with every SM full of probe blocks.
pub fn run(lab: &Lab, _: &Inputs) -> Result<Section> {
    let (blocks, threads) = super::full_gpu(&lab.gpu.info, BLOCK);
    let iters = lab.sizes.bank_iters;
    ensure_free("the bank probe", 4 * threads)?;
    let mut out = poisoned::<u32>(threads)?;
    let mut points = Vec::new();
    for stride in STRIDES {
        points.push((stride, measure_on(lab, &mut out, stride)?));
    }
    let base_ms = points[0].1.timing.median_ms;
    let header = ["stride", "median ms", "time vs stride 1", "model factor", "within 25%", "check"];
    let rows = points
        .iter()
        .map(|(stride, row)| {
            let ratio = row.timing.median_ms / base_ms;
            let factor = bank_factor(*stride) as f64;
            vec![
                if *stride == 0 { "broadcast".into() } else { stride.to_string() },
                format!("{:.3}", row.timing.median_ms),
                format!("{ratio:.2}"),
                format!("{factor:.0}"),
                if (ratio / factor - 1.0).abs() <= 0.25 { "yes" } else { "no" }.into(),
                row.check.summary(&row.check_kind),
            ]
        })
        .collect();
    // Stride 0 (the broadcast) is charted at its own labelled place after the strides.
    let (x, y) = ("stride (4-byte words); 0 = broadcast", "time / stride-1 time");
    let label = |s: usize| if s == 0 { "broadcast".to_string() } else { s.to_string() };
    let series = vec![
        Series::labelled(
            names::MEASURED,
            x,
            y,
            points.iter().map(|(s, row)| (*s as f64, row.timing.median_ms / base_ms, label(*s))),
        ),
        Series::labelled(names::BANK_MODEL, x, y, STRIDES.map(|s| (s as f64, bank_factor(s) as f64, label(s)))),
    ];
    let mut kernels: Vec<_> = points.into_iter().map(|(_, row)| row).collect();
    let checks = kernels.drain(1..).map(|row| row.check).collect();
    Ok(Section {
        name: "banks".into(),
        title: format!("Shared-memory bank conflicts: shared_bank_probe, {iters} loads per thread, {blocks} blocks of {BLOCK}"),
        lesson: "Shared memory serves one word per bank per cycle: a warp request takes as many passes as its busiest bank holds distinct words.".into(),
        kernels,
        sweep: Some((header.iter().map(|s| s.to_string()).collect(), rows)),
        checks,
        series,
        ..Section::default()
    })
}
