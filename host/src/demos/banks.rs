//! Shared-memory bank conflicts: `shared_bank_probe` at strides 1, 2, 4, ..., 32, 33 and the
//! broadcast, and the 8- and 16-byte probes on the lane patterns of [`WIDE_CASES`]: time per
//! load against the bank model's wavefronts per request.

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::probes::{BANK_PROBE_SMEM, BANK_PROBE_UNROLL, BLOCK, WIDE_PROBE_MAX_OFFSET, WIDE_PROBE_SMEM};

use crate::charts::SweepChart;
use crate::gpu::launch::LaunchShape;
use crate::lab::Inputs;
use crate::lab::{Figure, Lesson, Run};
use crate::lab::{
    KernelRow, KernelRun, Lab, Level, Section, Work, download, ensure_free, measure, poison, poisoned, upload,
};
use crate::launches;
use crate::model::banks::{WARP_SIZE, WarpRequest, Width};
use crate::reference;
use crate::series::{Series, names};
use crate::verify;

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `shared_bank_probe`: `blocks` one-dimensional blocks of 256 threads, 16384 B of shared
    /// memory; lane `t` reads shared word `t * stride` (0: the broadcast), `iters` loads per
    /// thread (a multiple of 8); `out` holds one word per thread.
    pub fn shared_bank_probe(blocks: u32) -> LaunchShape {
        LaunchShape { grid: (blocks, 1), block: (BLOCK, 1), smem_bytes: BANK_PROBE_SMEM }
    }

    /// `shared_bank_probe_8`: `blocks` one-dimensional blocks of 256 threads, 32768 B of shared
    /// memory; lane `t` loads 8 bytes at byte `offsets[t]` (32 offsets, multiples of 8 below
    /// 16384), `iters` loads per thread (a multiple of 8); `out` holds one word per thread.
    pub fn shared_bank_probe_8(blocks: u32) -> LaunchShape {
        LaunchShape { grid: (blocks, 1), block: (BLOCK, 1), smem_bytes: WIDE_PROBE_SMEM }
    }

    /// `shared_bank_probe_16`: as `shared_bank_probe_8` with 16-byte loads (offsets multiples
    /// of 16).
    pub fn shared_bank_probe_16(blocks: u32) -> LaunchShape {
        LaunchShape { grid: (blocks, 1), block: (BLOCK, 1), smem_bytes: WIDE_PROBE_SMEM }
    }
}

/// One lane pattern of the wide probes: its name (`memlab banks` syntax), the access width in
/// bytes, and lane `t`'s byte offset.
#[derive(Debug, Clone, Copy)]
pub struct WideCase {
    /// The pattern, as `memlab banks` takes it.
    pub name: &'static str,
    /// Bytes per lane: 8 or 16.
    pub width: u64,
    /// Byte offset of lane `t`.
    pub offset: fn(u64) -> u64,
}

/// The 8- and 16-byte lane patterns whose wavefronts were measured on the H200
/// (`docs/measurements/banks.md`), each timed by the wide probes against the bank model.
pub const WIDE_CASES: [WideCase; 10] = [
    WideCase { name: "8 B, --index t (contiguous)", width: 8, offset: |t| 8 * t },
    WideCase { name: "8 B, --index t%4", width: 8, offset: |t| 8 * (t % 4) },
    WideCase { name: "8 B, --index 0 (one element)", width: 8, offset: |_| 0 },
    WideCase { name: "8 B, --index t>>1", width: 8, offset: |t| 8 * (t >> 1) },
    WideCase { name: "8 B, --index 2*t", width: 8, offset: |t| 16 * t },
    WideCase { name: "8 B, double[32][32] column", width: 8, offset: |t| 256 * t },
    WideCase { name: "16 B, --bytes (t%4)*16", width: 16, offset: |t| 16 * (t % 4) },
    WideCase { name: "16 B, --bytes ((t>>1)%4)*16", width: 16, offset: |t| 16 * ((t >> 1) % 4) },
    WideCase { name: "16 B, --index t (contiguous)", width: 16, offset: |t| 16 * t },
    WideCase { name: "16 B, --index 0 (one float4)", width: 16, offset: |_| 0 },
];

impl WideCase {
    /// The 32 lanes' byte offsets.
    pub fn offsets(&self) -> [u64; WARP_SIZE] {
        std::array::from_fn(|t| (self.offset)(t as u64))
    }

    /// The bank model's wavefronts per request for this pattern.
    pub fn model_wavefronts(&self) -> u32 {
        let width = Width::from_bytes(self.width).expect("8 or 16 bytes");
        let addrs = self.offsets().map(Some);
        WarpRequest::new(width, addrs).expect("aligned offsets").analyze().wavefronts
    }
}

/// Strides swept, in 4-byte words; 0 is the broadcast (every lane reads one word).
pub const STRIDES: [usize; 8] = [1, 2, 4, 8, 16, 32, 33, 0];

/// Most loads per thread `--bank-iters` takes: enough for any timing, far from a `u32` sum.
pub const MAX_ITERS: usize = 1 << 24;

/// The banks lesson's options (the hierarchy's shared-memory row reads them too).
#[derive(clap::Args, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
pub struct Options {
    /// Shared-memory loads per thread in the bank probe (a multiple of 8, at most 2^24).
    #[arg(id = "bank-iters", long = "bank-iters", value_name = "BANK_ITERS", default_value = "16384", value_parser = iters)]
    pub iters: usize,
}

/// `--bank-iters`: the probe's loads per thread, a multiple of its unroll (8), at most
/// [`MAX_ITERS`].
///
/// # Errors
/// A one-line refusal naming the rule.
pub fn iters(text: &str) -> Result<usize, String> {
    let iters: usize = text.parse().map_err(|_| format!("`{text}` is not a whole number of loads"))?;
    if iters == 0 || iters > MAX_ITERS || !iters.is_multiple_of(BANK_PROBE_UNROLL) {
        return Err(format!("{iters} loads must be a multiple of {BANK_PROBE_UNROLL} (the probe's unroll), 8 to {MAX_ITERS}"));
    }
    Ok(iters)
}

/// The bank model's serialization factor for lane `t` reading word `t * stride`.
fn bank_factor(stride: usize) -> u32 {
    WarpRequest::strided(stride as u64).analyze().wavefronts
}

/// The probe at `stride` on `out` (one word per thread of a full GPU), measured.
fn measure_on(lab: &Lab, out: &mut DeviceBuffer<u32>, stride: usize, iters: usize) -> Result<KernelRow> {
    let (blocks, threads) = crate::lab::sanitizer::grid(lab, BLOCK);
    let launch = launches::shared_bank_probe(shapes::shared_bank_probe(blocks), out, stride as u32, iters as u32);
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

/// The wide probe of `case` on `out`, measured.
fn measure_wide(lab: &Lab, out: &mut DeviceBuffer<u32>, case: &WideCase, iters: usize) -> Result<KernelRow> {
    let (blocks, threads) = crate::lab::sanitizer::grid(lab, BLOCK);
    let offsets = case.offsets();
    assert!(offsets.iter().all(|&o| o % case.width == 0 && o < WIDE_PROBE_MAX_OFFSET as u64), "{case:?}");
    let offsets_dev = upload(&offsets.map(|o| o as u32))?;
    let launch = match case.width {
        8 => launches::shared_bank_probe_8(shapes::shared_bank_probe_8(blocks), &offsets_dev, out, iters as u32),
        _ => launches::shared_bank_probe_16(shapes::shared_bank_probe_16(blocks), &offsets_dev, out, iters as u32),
    };
    launch.shape.require_whole_warps(launch.kernel, lab.gpu.info.max_threads_per_block)?;
    let work = Work { flop: 0.0, bytes: (case.width as usize * threads * iters) as f64, level: Level::Shared };
    let run = KernelRun {
        launch,
        lesson: "lane t loads 8 or 16 bytes at a pattern's byte offset",
        prediction: format!("{} wavefronts", case.model_wavefronts()),
        work,
        size: case.name.to_string(),
        reset: &|| poison(&*out),
    };
    let check = || {
        let sums: Vec<u32> =
            offsets.iter().map(|&o| reference::wide_bank_probe_sum(o as usize, case.width as usize, iters)).collect();
        Ok((verify::exact_u32(&download(&*out)?, |g| sums[g % 32]), "checksums"))
    };
    measure(lab, run, check)
}

/// The probe at one stride with every SM full of probe blocks: shared-memory load bandwidth
/// (stride 1 is the hierarchy's shared-memory row).
///
/// # Errors
/// Not enough device memory, or a launch refusal.
pub fn measure_stride(lab: &Lab, stride: usize, iters: usize) -> Result<KernelRow> {
    let (_, threads) = crate::lab::sanitizer::grid(lab, BLOCK);
    ensure_free("the bank probe", 4 * threads)?;
    measure_on(lab, &mut poisoned::<u32>(threads)?, stride, iters)
}

/// The lesson: shared-memory banks.
pub struct Banks;

impl Lesson for Banks {
    const NAME: &'static str = "banks";
    type Options = Options;

    fn run(lab: &Lab, _: &Inputs, options: &Options) -> Result<Section> {
        run(lab, options.iters)
    }

    fn figures(run: &Run) -> Vec<Figure> {
        vec![Figure::or_missing(
            SweepChart::banks(run.sections),
            "Time of `shared_bank_probe` relative to stride 1 (log scale), against the bank model's serialization factor.",
            "bank sweep (run the `banks` demo)",
        )]
    }
}

/// Runs the stride sweep with every SM full of probe blocks.
fn run(lab: &Lab, iters: usize) -> Result<Section> {
    let (blocks, threads) = crate::lab::sanitizer::grid(lab, BLOCK);
    ensure_free("the bank probe", 4 * threads)?;
    let mut out = poisoned::<u32>(threads)?;
    let mut points = Vec::new();
    for stride in STRIDES {
        points.push((stride, measure_on(lab, &mut out, stride, iters)?));
    }
    let wide =
        WIDE_CASES.iter().map(|case| Ok((case, measure_wide(lab, &mut out, case, iters)?))).collect::<Result<Vec<_>>>()?;
    let base_ms = points[0].1.timing.median_ms;
    let header = ["access", "median ms", "time vs 4 B stride 1", "model wavefronts", "within 25%", "check"];
    let row = |access: String, row: &KernelRow, model: u32| {
        let ratio = row.timing.median_ms / base_ms;
        vec![
            access,
            format!("{:.3}", row.timing.median_ms),
            format!("{ratio:.2}"),
            model.to_string(),
            if (ratio / model as f64 - 1.0).abs() <= 0.25 { "yes" } else { "no" }.into(),
            row.check.summary(&row.check_kind),
        ]
    };
    let label = |s: usize| if s == 0 { "broadcast".to_string() } else { s.to_string() };
    let rows = points
        .iter()
        .map(|(stride, r)| row(format!("4 B, stride {}", label(*stride)), r, bank_factor(*stride)))
        .chain(wide.iter().map(|(case, r)| row(case.name.to_string(), r, case.model_wavefronts())))
        .collect();
    // Stride 0 (the broadcast) is charted at its own labelled place after the strides.
    let (x, y) = ("stride (4-byte words); 0 = broadcast", "time / stride-1 time");
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
    let checks = kernels.drain(1..).map(|row| row.check).chain(wide.into_iter().map(|(_, row)| row.check)).collect();
    Ok(Section {
        name: "banks".into(),
        title: format!("Shared-memory bank conflicts: shared_bank_probe, {iters} loads per thread, {blocks} blocks of {BLOCK}"),
        lesson: "Shared memory serves one word per bank per cycle: a warp request takes as many passes as its busiest bank holds distinct words; 8- and 16-byte accesses are served half and a quarter of a warp at a time.".into(),
        kernels,
        sweep: Some((header.iter().map(|s| s.to_string()).collect(), rows)),
        checks,
        series,
        ..Section::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wide_cases_carry_the_h200_wavefronts() {
        let model: Vec<u32> = WIDE_CASES.iter().map(WideCase::model_wavefronts).collect();
        // Measured on the H200 (`docs/measurements/banks.md`): 8-byte t%4 2, one element 1, t>>1 1, 2t 4, the
        // double tile's column 32; 16-byte (t%4)*16 4, ((t>>1)%4)*16 2, contiguous 4, one
        // float4 2; contiguous 8-byte accesses take the two phases of an 8-byte warp.
        assert_eq!(model, [2, 2, 1, 1, 4, 32, 4, 2, 4, 2]);
        for case in WIDE_CASES {
            assert!(case.offsets().iter().all(|&o| o % case.width == 0 && o < u64::from(WIDE_PROBE_MAX_OFFSET)));
        }
    }
}
