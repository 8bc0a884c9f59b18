//! The SGEMM ladder (kernels-gpu `sgemm`): each rung's TFLOP/s next to cuBLAS SGEMM (FP32, no
//! TF32) measured in the same run, after a full check of every rung on sizes that are not
//! multiples of any tile. Rung 8 runs the configuration the autotune file chooses for the device
//! and each shape's class ([`crate::tuned`]); rung 9 (TF32 tensor cores) is checked with the TF32
//! tolerance and timed beside cuBLAS with TF32 allowed.

pub mod autotune;

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::matmul::TILE_32;
use memlab_contracts::sgemm::{
    A_PITCH, A_PITCH_PADDED, Algo, MAX_SPLITS, REDUCE_THREADS, RUNG2_THREADS, RUNG2_TILE, SPLIT_K,
    TF32_THREADS, TF32_TILE, THREADS, TILE, TUNED, Tuned, smem_bytes, split_k_config, split_steps, tf32_smem_bytes,
};

use crate::charts::BarChart;
use crate::gpu::cublas::Cublas;
use crate::gpu::cublas::NO_CUBLAS;
use crate::gpu::device::DeviceInfo;
use crate::gpu::launch::{Entry, Launch, LaunchShape};
use crate::lab::Inputs;
use crate::lab::{
    KernelRow, KernelRun, Lab, Section, ensure_free, f32_bytes, measure, measure_then, poison, poisoned,
};
use crate::lab::{Figure, Lesson, Run, Shared};
use crate::launches;
use crate::model::split_k::{self, Machine, Plan};
use crate::model::tiling::{MatmulShape, block_tiled_global_loads};
use crate::probes::gemm::{MatmulLaunch, Operands, block_work, matmul_launch, rung_shape, time_cublas};
use crate::ptx::Ptx;
use crate::series::{Series, names};
use crate::tuned::{Pick, ShapeClass, TunedFile};
use crate::verify::{Check, Precision};

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// Rungs 6 and 7, which the TMA lesson times too, shaped below the lessons
    /// ([`crate::probes::gemm::shapes`]).
    pub use crate::probes::gemm::shapes::{sgemm_6_double_buffered, sgemm_7_async_copy};

    /// Rung 2, `sgemm_2_register_1d`: `C = A * B` (`a` `m x k`, `b` `k x n`, `c` `m x n`,
    /// row-major f32); 512 threads per `64 x 64` tile, 4096 B of shared memory.
    pub fn sgemm_2_register_1d(m: u32, n: u32) -> LaunchShape {
        rung_shape(m, n, RUNG2_TILE, RUNG2_THREADS, smem_bytes(RUNG2_TILE, RUNG2_TILE, 1))
    }

    /// Rung 3, `sgemm_3_register_2d`: 256 threads per `128 x 128` tile, 8192 B shared.
    pub fn sgemm_3_register_2d(m: u32, n: u32) -> LaunchShape {
        rung_shape(m, n, TILE, THREADS, smem_bytes(TILE, TILE, 1))
    }

    /// Rung 4, `sgemm_4_vectorized`: as rung 3, `A` transposed in shared memory (8192 B).
    pub fn sgemm_4_vectorized(m: u32, n: u32) -> LaunchShape {
        rung_shape(m, n, TILE, THREADS, smem_bytes(A_PITCH, TILE, 1))
    }

    /// Rung 5, `sgemm_5_conflict_free`: as rung 4, `A` tile pitch 132 (8320 B).
    pub fn sgemm_5_conflict_free(m: u32, n: u32) -> LaunchShape {
        rung_shape(m, n, TILE, THREADS, smem_bytes(A_PITCH_PADDED, TILE, 1))
    }

    /// Rung 9, `sgemm_9_tensor_tf32`: 256 threads per `128 x 128` tile, 3 stages of swizzled
    /// `A` and `B` tiles (49152 B); TF32 tensor cores; in the sm_80 and sm_90 PTX only.
    pub fn sgemm_9_tensor_tf32(m: u32, n: u32) -> LaunchShape {
        rung_shape(m, n, TF32_TILE, TF32_THREADS, tf32_smem_bytes())
    }

    /// Rung 9 with unswizzled tiles (the bank lesson's contrast), as `sgemm_9_tensor_tf32`.
    pub fn sgemm_9_tensor_tf32_unswizzled(m: u32, n: u32) -> LaunchShape {
        rung_shape(m, n, TF32_TILE, TF32_THREADS, tf32_smem_bytes())
    }

    /// The split-K rung's product, `sgemm_split_k_128x128`: `splits` splits of `split_steps`
    /// depth steps each (`memlab_contracts::sgemm::split_steps`), split `s`'s partial tile to
    /// slice `s` of `w` (`splits x m x n` f32; `c` itself for one split); 256 threads per
    /// `128 x 128` tile and split, 16640 B shared. In the sm_80 and sm_90 PTX only.
    pub fn sgemm_split_k_128x128(splits: u32, m: u32, n: u32) -> LaunchShape {
        split_k_shape(m, n, splits)
    }

    /// The split-K rung's reduce, `sgemm_split_k_reduce`: `c[i]` = the `splits` slices of `w`
    /// at `i` summed in order (`c` `mn` f32, `w` `splits x mn`); 4 elements per thread.
    pub fn sgemm_split_k_reduce(mn: u32) -> LaunchShape {
        LaunchShape::linear(mn.div_ceil(4), REDUCE_THREADS, 0)
    }
}

/// The launch shape of the split-K rung's product: its configuration's block and shared bytes,
/// one block per tile and split, the splits along x.
fn split_k_shape(m: u32, n: u32, splits: u32) -> LaunchShape {
    let c = split_k_config();
    let grid = (n.div_ceil(c.bn).saturating_mul(splits), m.div_ceil(c.bm));
    LaunchShape { grid, block: (c.threads(), 1), smem_bytes: c.smem_bytes() }
}

/// Rung 6's share of the FP32 peak, the rate the split-K model prices a wave at: 43.7 TFLOP/s
/// at 4096^3 against the H200's 66.9 (132 SMs x 128 lanes x 2 x 1.98 GHz), measured on the H200.
pub const SPLIT_K_SHARE_OF_PEAK: f64 = 0.65;
/// Seconds the model charges the reduce's launch: the model's figure for one more dependent
/// launch on the stream, not a measurement (the lesson's measured time includes the real one).
pub const SPLIT_K_LAUNCH_S: f64 = 3e-6;

/// The GPU as the split-K model sees it: its SM count from the driver, rung 6's share of the
/// FP32 peak at the driver's clock, and the DRAM bandwidth of its memory clock and bus width.
pub fn split_k_machine(info: &DeviceInfo) -> Machine {
    let peak = info.peak_fp32(None).unwrap_or(0.0);
    Machine {
        sms: info.sms,
        flops: (SPLIT_K_SHARE_OF_PEAK * peak).max(1.0),
        bytes_per_s: (info.theoretical_bandwidth_gbs() * 1e9).max(1.0),
        launch_s: SPLIT_K_LAUNCH_S,
    }
}

/// The model's split for an `m x n x k` product on `info`'s GPU: rung 6's tile at the blocks per
/// SM its launch bounds give in the PTX the device runs (sm_80 below cc 9.0).
pub fn split_k_plan(info: &DeviceInfo, (m, n, k): (usize, usize, usize)) -> Plan {
    let c = split_k_config();
    let sm = if info.cc >= (9, 0) { 90 } else { 80 };
    let tile = split_k::Tile { bm: c.bm, bn: c.bn, bk: c.bk, blocks_per_sm: c.blocks_per_sm(sm) };
    split_k::plan(&split_k_machine(info), &tile, (m as u32, n as u32, k as u32), MAX_SPLITS)
}

/// The split-K rung at one product: the model's plan and its row, as measured.
pub struct SplitKRow {
    /// The model's plan (splits, blocks, waves, idle slots, partial-sum bytes).
    pub plan: Plan,
    /// The measurement of the product and reduce together.
    pub row: KernelRow,
}

/// The precision a split-K result is checked with: `splits` splits of `per_split` products.
fn split_k_precision(k: usize, splits: u32) -> Precision {
    let c = split_k_config();
    Precision::SplitK { per_split: split_steps(k as u32, c.bk, splits) * c.bk, splits }
}

/// What the split-K rung adds.
const SPLIT_K_LESSON: &str =
    "8 split-K: rung 6's tile over one range of k per block (the model's split), partial tiles summed in split order";

/// The launches of the split-K rung at `splits` on `ops`: the product into `w` (`None`: one
/// split, straight into `C`) and the reduce.
fn split_k_launches(ops: &mut Operands, w: Option<&mut DeviceBuffer<f32>>, splits: u32) -> (Launch, Option<Launch>) {
    let (m, n, k) = ops.size;
    let (m, n, k) = (m as u32, n as u32, k as u32);
    let steps = split_steps(k, split_k_config().bk, splits);
    match w {
        None => (
            launches::sgemm_split_k_128x128(
                shapes::sgemm_split_k_128x128(1, m, n),
                &ops.a,
                &ops.b,
                &mut ops.c,
                m,
                n,
                k,
                steps,
            ),
            None,
        ),
        Some(w) => {
            let product = launches::sgemm_split_k_128x128(
                shapes::sgemm_split_k_128x128(splits, m, n),
                &ops.a,
                &ops.b,
                w,
                m,
                n,
                k,
                steps,
            );
            (
                product,
                Some(launches::sgemm_split_k_reduce(shapes::sgemm_split_k_reduce(m * n), w, &mut ops.c, m * n, splits)),
            )
        }
    }
}

/// A poisoned workspace for `splits` partial products of `ops` (`None` for one split).
fn split_k_workspace(ops: &Operands, splits: u32) -> Result<Option<DeviceBuffer<f32>>> {
    if splits < 2 {
        return Ok(None);
    }
    let (m, n, _) = ops.size;
    let elements = (splits as usize).saturating_mul(m * n);
    ensure_free("the split-K workspace", f32_bytes(&[elements]))?;
    Ok(Some(poisoned(elements)?))
}

/// Runs the split-K rung at `splits` on `ops` once and checks it with the split-K tolerance.
///
/// # Errors
/// A failed allocation, launch or download.
pub fn check_split_k(lab: &Lab, ops: &mut Operands, splits: u32) -> Result<Check> {
    let mut w = split_k_workspace(ops, splits)?;
    poison(&ops.c)?;
    let (product, reduce) = split_k_launches(ops, w.as_mut(), splits);
    product.enqueue(&lab.gpu)?;
    if let Some(r) = reduce {
        r.enqueue(&lab.gpu)?;
    }
    Ok(ops.check_in(&lab.gpu, split_k_precision(ops.size.2, splits))?.0)
}

/// Checks and times the split-K rung on `ops` at the model's split ([`split_k_plan`]), the
/// product and the reduce together, through [`measure_then`] (and so against their twins in
/// `bench`). Its work counts the partial sums: `splits m n 4` bytes written and read back.
///
/// # Errors
/// As for [`measure`].
pub fn measure_split_k(lab: &Lab, ops: &mut Operands) -> Result<SplitKRow> {
    let plan = split_k_plan(&lab.gpu.info, ops.size);
    let splits = plan.chosen.splits;
    let mut w = split_k_workspace(ops, splits)?;
    let mut work = block_work(ops, (split_k_config().bm, split_k_config().bn));
    work.bytes += 2.0 * plan.chosen.partial_bytes;
    let precision = split_k_precision(ops.size.2, splits);
    let (launch, reduce) = split_k_launches(ops, w.as_mut(), splits);
    let prediction = split_k_prediction(&plan);
    let run =
        KernelRun { launch, lesson: SPLIT_K_LESSON, prediction, work, size: ops.label(), reset: &|| poison(&ops.c) };
    let row = measure_then(lab, run, reduce.as_ref(), || ops.check_in(&lab.gpu, precision))?;
    Ok(SplitKRow { plan, row })
}

/// The model's figures for the split-K rung's row, as the report prints them.
pub fn split_k_prediction(plan: &Plan) -> String {
    let (one, chosen) = (&plan.unsplit, &plan.chosen);
    format!(
        "{} splits: {} blocks in {} waves, {:.0}% of SM slots idle (1 split: {} blocks, {:.0}%), {:.0}% of the slot time filled, partial sums {:.1} MiB written and read back",
        chosen.splits,
        chosen.blocks,
        chosen.waves,
        100.0 * chosen.idle,
        one.blocks,
        100.0 * one.idle,
        100.0 * plan.idle_removed(),
        chosen.partial_bytes / f64::from(1u32 << 20),
    )
}

/// The launch shape of rung 8 in configuration `name` (of `TUNED`).
fn tuned_shape(name: &str, m: u32, n: u32) -> LaunchShape {
    let c = crate::tuned::config(name).expect("every typed launch of rung 8 is a compiled configuration");
    LaunchShape::covering(m as usize, n as usize, (c.bm as usize, c.bn as usize), (c.threads(), 1), c.smem_bytes())
}

/// The typed launches of rung 8, one per configuration of `memlab_contracts::tuned_configs!`.
macro_rules! tuned_launches {
    ($($name:ident = $algo:ident ($($param:literal),*)),* $(,)?) => {
        /// Rung 8's entries and launches, in the order of `memlab_contracts::sgemm::TUNED`.
        pub mod tuned {
            use super::*;
            /// The entry of each configuration.
            pub const ENTRIES: &[Entry] = &[$(launches::entry::$name),*];
            /// The launch of each configuration, at its shape ([`tuned_shape`]).
            pub const LAUNCHES: &[MatmulLaunch] =
                &[$(matmul_launch!($name, |m, n| tuned_shape(stringify!($name), m, n))),*];
        }
    };
}
memlab_contracts::tuned_configs!(tuned_launches);

/// One rung: its entry and typed launch, the `C` tile per block (for the tiling model), what
/// it adds, and the precision its check allows.
#[derive(Debug, Clone, Copy)]
pub struct Rung {
    /// The kernel's entry.
    pub entry: Entry,
    /// Its typed launch.
    pub launch: MatmulLaunch,
    /// Each block computes a `rows x cols` tile of `C`.
    pub tile: (u32, u32),
    /// What the rung adds.
    pub lesson: &'static str,
    /// FP32, or TF32 tensor cores.
    pub precision: Precision,
}

/// What rung 8 adds, per algorithm.
fn tuned_lesson(algo: Algo) -> &'static str {
    match algo {
        Algo::AsyncCopy => "8: tuned: A and B by cp.async, A untransposed (padded), tiles from autotune (sm_80+)",
        Algo::Registers => "8: tuned: rung 6's algorithm (A transposed through registers) at autotune's tiles (sm_80+)",
    }
}

impl Rung {
    /// Rung 8 in configuration `cfg`.
    pub fn tuned(cfg: &Tuned) -> Rung {
        let i = TUNED.iter().position(|c| c.name == cfg.name).expect("a compiled configuration");
        Rung {
            entry: tuned::ENTRIES[i],
            launch: tuned::LAUNCHES[i],
            tile: (cfg.bm, cfg.bn),
            lesson: tuned_lesson(cfg.algo),
            precision: Precision::F32,
        }
    }

    /// Whether the PTX has the rung's kernel.
    fn in_ptx(&self, names: &[&str]) -> bool {
        names.contains(&self.entry.name)
    }
}

/// The rungs the loaded PTX has (a rung compiled only for newer targets, like rung 7's
/// `cp.async`, is missing from older PTX), and a note naming those it lacks (`None` when none).
pub fn available(ptx: &Ptx) -> (Vec<Rung>, Option<String>) {
    let names = crate::ptx::kernel_names(ptx.text);
    let (have, lack): (Vec<Rung>, Vec<Rung>) = RUNGS.iter().partition(|r| r.in_ptx(&names));
    let mut lack: Vec<&str> = lack.iter().map(|r| r.entry.name).collect();
    if !TUNED.iter().any(|c| names.contains(&c.name)) {
        // In ladder order: after rung 7 when it is missing too.
        let at = lack.iter().position(|n| n.starts_with("sgemm_9")).unwrap_or(lack.len());
        lack.insert(at, "rung 8 (sgemm_8_*)");
    }
    let note = (!lack.is_empty()).then(|| {
        format!(
            "skipped {}: not compiled into the {} PTX this device runs (they need cc 8.0)",
            lack.join(", "),
            ptx.arch
        )
    });
    (have, note)
}

/// Every configuration of rung 8 the PTX has.
pub fn tuned_available(ptx: &Ptx) -> Vec<&'static Tuned> {
    let names = crate::ptx::kernel_names(ptx.text);
    TUNED.iter().filter(|c| names.contains(&c.name)).collect()
}

/// The ladder, bottom first. Rung 1 is the tiled matmul of the `matmul` demo.
pub const RUNGS: [Rung; 9] = [
    Rung {
        entry: launches::entry::matmul_tiled_32,
        launch: matmul_launch!(matmul_tiled_32, crate::probes::gemm::shapes::matmul_tiled_32),
        tile: (TILE_32, TILE_32),
        precision: Precision::F32,
        lesson: "1: block tiling in shared memory, one result per thread",
    },
    Rung {
        entry: launches::entry::sgemm_2_register_1d,
        launch: matmul_launch!(sgemm_2_register_1d, shapes::sgemm_2_register_1d),
        tile: (RUNG2_TILE, RUNG2_TILE),
        precision: Precision::F32,
        lesson: "2: 8 results per thread down a column (1D register blocking)",
    },
    Rung {
        entry: launches::entry::sgemm_3_register_2d,
        launch: matmul_launch!(sgemm_3_register_2d, shapes::sgemm_3_register_2d),
        tile: (TILE, TILE),
        precision: Precision::F32,
        lesson: "3: 8x8 results per thread (2D register blocking)",
    },
    Rung {
        entry: launches::entry::sgemm_4_vectorized,
        launch: matmul_launch!(sgemm_4_vectorized, shapes::sgemm_4_vectorized),
        tile: (TILE, TILE),
        precision: Precision::F32,
        lesson: "4: 128-bit global and shared loads, A transposed in shared memory",
    },
    Rung {
        entry: launches::entry::sgemm_5_conflict_free,
        launch: matmul_launch!(sgemm_5_conflict_free, shapes::sgemm_5_conflict_free),
        tile: (TILE, TILE),
        precision: Precision::F32,
        lesson: "5: conflict-free shared layout (split 4x4 groups, padded A tile)",
    },
    Rung {
        entry: launches::entry::sgemm_6_double_buffered,
        launch: matmul_launch!(sgemm_6_double_buffered, shapes::sgemm_6_double_buffered),
        tile: (TILE, TILE),
        precision: Precision::F32,
        lesson: "6: two shared stages (next loads overlap FMAs), warp tiling",
    },
    Rung {
        entry: launches::entry::sgemm_7_async_copy,
        launch: matmul_launch!(sgemm_7_async_copy, shapes::sgemm_7_async_copy),
        tile: (TILE, TILE),
        precision: Precision::F32,
        lesson: "7: rung 6 with B copied global-to-shared by cp.async (sm_80+ PTX)",
    },
    Rung {
        entry: launches::entry::sgemm_9_tensor_tf32,
        launch: matmul_launch!(sgemm_9_tensor_tf32, shapes::sgemm_9_tensor_tf32),
        tile: (TF32_TILE, TF32_TILE),
        lesson: "9: TF32 tensor cores (mma.sync), swizzled tiles, ldmatrix (sm_80+ PTX)",
        precision: Precision::Tf32,
    },
    Rung {
        entry: launches::entry::sgemm_9_tensor_tf32_unswizzled,
        launch: matmul_launch!(sgemm_9_tensor_tf32_unswizzled, shapes::sgemm_9_tensor_tf32_unswizzled),
        tile: (TF32_TILE, TF32_TILE),
        lesson: "9 unswizzled: rung 9's tiles as they lie in memory, conflicted ldmatrix and B loads",
        precision: Precision::Tf32,
    },
];

/// The rungs that run on tensor cores (TF32): the roofline places them against the tensor roof.
pub const TENSOR_KERNELS: [&str; 2] = ["sgemm_9_tensor_tf32", "sgemm_9_tensor_tf32_unswizzled"];

/// Checks `rung` on each of [`ODD_GEMM_SIZES`](crate::lab::ODD_GEMM_SIZES), element by element, untimed.
///
/// # Errors
/// A failed allocation, launch or download.
pub fn check_odd_sizes(lab: &Lab, rungs: &[Rung]) -> Result<Vec<Check>> {
    let mut checks = Vec::new();
    for size in crate::lab::sanitizer::odd_sizes(lab) {
        let mut ops = Operands::new(&lab.gpu, size)?;
        for rung in rungs {
            poison(&ops.c)?;
            ops.launch(rung.launch).enqueue(&lab.gpu)?;
            checks.push(ops.check_in(&lab.gpu, rung.precision)?.0);
        }
    }
    Ok(checks)
}

/// Checks and times `rung` on `ops` through [`measure`] (and so against its twin in `bench`).
///
/// # Errors
/// As for [`measure`].
pub fn measure_rung(lab: &Lab, rung: &Rung, ops: &mut Operands) -> Result<KernelRow> {
    let (m, n, k) = ops.size;
    let shape = MatmulShape::new(m as u64, n as u64, k as u64);
    let loads = block_tiled_global_loads(shape, (rung.tile.0 as u64, rung.tile.1 as u64));
    let prediction = format!("{m}x{n}x{k}: {loads:.3e} global loads");
    let work = block_work(ops, rung.tile);
    let launch = ops.launch(rung.launch);
    let precision = rung.precision;
    let run = KernelRun { launch, lesson: rung.lesson, prediction, work, size: ops.label(), reset: &|| poison(&ops.c) };
    measure(lab, run, || ops.check_in(&lab.gpu, precision))
}

/// The SGEMM lesson's options.
#[derive(clap::Args, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
pub struct Options {
    /// SGEMM ladder shapes, MxNxK each (the TMA lesson times rungs 6 and 7 at the first).
    #[arg(id = "sgemm", long = "sgemm", value_name = "SGEMM", num_args = 1.., default_values = ["4096x4096x4096", "8192x8192x8192"], value_parser = crate::cli::gemm)]
    pub shapes: Vec<(usize, usize, usize)>,
}

/// The lesson: the SGEMM ladder up to cuBLAS.
pub struct Sgemm;

impl Lesson for Sgemm {
    const NAME: &'static str = "sgemm";
    const HOST_FLAGS: &'static [&'static str] = &["--sgemm"];
    type Options = Options;

    fn run(lab: &Lab, _: &Inputs, options: &Options) -> Result<Section> {
        run(lab, &options.shapes)
    }

    /// The largest shape's operands.
    fn host_bytes(options: &Options, _: &Shared) -> usize {
        options.shapes.iter().map(|&s| crate::probes::gemm::host_bytes(s)).max().unwrap_or(0)
    }

    /// The autotune file rung 8 reads (`$MEMLAB_TUNED`), read before any GPU work.
    fn check(_: &Options, _: &Shared, _: bool) -> Result<()> {
        TunedFile::load().map(drop)
    }

    fn figures(run: &Run) -> Vec<Figure> {
        vec![Figure::or_missing(
            BarChart::sgemm_ladder(run.sections, &TENSOR_KERNELS),
            "The SGEMM ladder: each rung's TFLOP/s at every size the run measured, one group per size, against cuBLAS (FP32, and TF32 allowed) at that size.",
            "SGEMM ladder against cuBLAS (this run has no `sgemm` section)",
        )]
    }
}

/// Runs every rung on [`ODD_GEMM_SIZES`](crate::lab::ODD_GEMM_SIZES) (checked, untimed), rung 8 in the configurations the autotune
/// file chooses for the device (every configuration under `--sanitizer`), then each rung on each
/// of `shapes` (checked, timed, next to cuBLAS FP32 and TF32), rung 8 in the
/// configuration chosen for the shape's class.
fn run(lab: &Lab, shapes: &[(usize, usize, usize)]) -> Result<Section> {
    let cublas = lab.phases.step("open cuBLAS", || Cublas::open(&lab.gpu))?;
    let (rungs, skipped) = available(lab.gpu.ptx);
    let tuned_all = tuned_available(lab.gpu.ptx);
    let file = TunedFile::load()?;
    let tuned_checked: Vec<Rung> = tuned_to_check(lab, &file, &tuned_all).into_iter().map(Rung::tuned).collect();
    let split_k = crate::ptx::kernel_names(lab.gpu.ptx.text).contains(&SPLIT_K);
    let checks = lab.phases.step("odd sizes", || {
        let mut checks = check_odd_sizes(lab, &rungs)?;
        checks.extend(check_odd_sizes(lab, &tuned_checked)?);
        if split_k {
            checks.extend(check_split_k_odd_sizes(lab)?);
        }
        Ok::<_, anyhow::Error>(checks)
    })?;
    let mut ladder = Ladder::new(&rungs, !tuned_all.is_empty(), split_k);
    ladder.notes.push(format!(
        "every rung (rung 8 in {} of its {} configurations: those this device runs) also checked element by element on {}; rung 9 and cuBLAS TF32 with the TF32 tolerance (2^-9 of sum |a b| per product, 2k 2^-23 for the sums)",
        tuned_checked.len(),
        tuned_all.len(),
        crate::lab::sanitizer::odd_sizes(lab).map(|(m, n, k)| format!("{m}x{n}x{k}")).join(" and ")
    ));
    for &size in shapes {
        ladder.measure_size(lab, size, cublas.as_ref(), &file)?;
    }
    let Ladder { header, table, kernels, references, mut notes, .. } = ladder;
    notes.extend(skipped);
    notes.extend(closing_notes(lab, cublas.as_ref()));
    Ok(Section {
        name: "sgemm".into(),
        title: "An SGEMM ladder up to cuBLAS: C = A * B, f32".into(),
        lesson: "Each rung keeps more of the product close to the FMA units: shared-memory tiles, then results blocked in registers, then wider loads, a conflict-free layout, loads overlapped with arithmetic, tiles tuned per GPU and shape, and finally tensor cores.".into(),
        kernels,
        sweep: Some((header, table)),
        checks,
        notes,
        series: vec![Series::labelled(names::REFERENCE, "", "TFLOP/s", references)],
    })
}

/// The rung 8 configurations a run checks on the odd sizes: the ones this device runs, one per
/// shape class. The others are checked by `memlab autotune` before it may choose one; checking
/// them here too would JIT-compile 13 more modules (`Gpu::tuned_module`: 3.1 s on the H200's
/// cold JIT cache). A sanitizer run checks them all.
fn tuned_to_check<'a>(lab: &Lab, file: &TunedFile, tuned_all: &[&'a Tuned]) -> Vec<&'a Tuned> {
    if crate::lab::sanitizer::on(lab) {
        return tuned_all.to_vec();
    }
    let mut chosen: Vec<&Tuned> = Vec::new();
    for class in ShapeClass::ALL {
        // The split-K rung is checked on its own (`check_split_k_odd_sizes`).
        let Pick::Plain(cfg) = file.choose(lab.gpu.info.cc, class).0 else { continue };
        if let Some(&cfg) = tuned_all.iter().find(|c| c.name == cfg.name)
            && !chosen.iter().any(|c| c.name == cfg.name)
        {
            chosen.push(cfg);
        }
    }
    chosen
}

/// The ladder's table as it fills in, one size at a time: the rungs in table order, and what
/// each size adds to the table, the rows, the chart and the notes.
struct Ladder {
    fp32: Vec<Rung>,
    tf32: Vec<Rung>,
    /// Rung 8's row, when the PTX has its configurations: its entry differs per shape class.
    tuned_row: Option<usize>,
    split_k: bool,
    header: Vec<String>,
    table: Vec<Vec<String>>,
    kernels: Vec<KernelRow>,
    /// cuBLAS's rate per size, drawn across the ladder chart.
    references: Vec<(f64, f64, String)>,
    notes: Vec<String>,
}

impl Ladder {
    /// The table's first column: the FP32 rungs, rung 8 (between rung 7 and rung 9), the
    /// split-K rung, the TF32 rungs, then cuBLAS FP32 and TF32.
    fn new(rungs: &[Rung], tuned: bool, split_k: bool) -> Ladder {
        let (fp32, tf32): (Vec<Rung>, Vec<Rung>) = rungs.iter().partition(|r| r.precision == Precision::F32);
        let mut table: Vec<Vec<String>> = fp32.iter().map(|r| vec![r.entry.name.to_string()]).collect();
        let tuned_row = tuned.then(|| {
            table.push(vec!["sgemm_8 (tuned, autotune's choice)".to_string()]);
            table.len() - 1
        });
        if split_k {
            table.push(vec![format!("{SPLIT_K} (the model's split)")]);
        }
        table.extend(tf32.iter().map(|r| vec![r.entry.name.to_string()]));
        table.push(vec!["cuBLAS SGEMM (FP32)".into()]);
        table.push(vec!["cuBLAS SGEMM (TF32 allowed)".into()]);
        let header = vec!["kernel".to_string()];
        Ladder { fp32, tf32, tuned_row, split_k, header, table, kernels: vec![], references: vec![], notes: vec![] }
    }

    /// What each row times at `size`, in table order: rung 8 as the autotune file picks it for
    /// the size's class (and the note that says so).
    fn timed_at(&mut self, lab: &Lab, file: &TunedFile, size: (usize, usize, usize)) -> Vec<Timed> {
        let class = ShapeClass::of(size.0, size.1, size.2);
        let mut timed: Vec<Timed> = self.fp32.iter().copied().map(Timed::Rung).collect();
        if self.tuned_row.is_some() {
            let (pick, choice) = file.choose(lab.gpu.info.cc, class);
            timed.push(match pick {
                Pick::Plain(cfg) => Timed::Rung(Rung::tuned(cfg)),
                Pick::SplitK => Timed::SplitK,
            });
            self.notes.push(tuned_note(pick, class, size, choice.map(|c| c.source.as_str())));
        }
        if self.split_k {
            timed.push(Timed::SplitK);
        }
        timed.extend(self.tf32.iter().copied().map(Timed::Rung));
        timed
    }

    /// Times cuBLAS (FP32, then TF32 allowed) and every row at `size`, each checked first.
    fn measure_size(
        &mut self,
        lab: &Lab,
        size: (usize, usize, usize),
        cublas: Option<&Cublas>,
        file: &TunedFile,
    ) -> Result<()> {
        let (m, n, k) = size;
        self.header.extend([format!("TFLOP/s {m}x{n}x{k}"), "% of cuBLAS".into()]);
        let mut ops = lab.phases.step("operands", || Operands::new(&lab.gpu, size))?;
        let cublas_at = |precision| {
            let timing = lab.phases.step("cuBLAS", || time_cublas(lab, cublas, &ops, precision))?;
            Ok::<_, anyhow::Error>(timing.map(|t| t.tflops(ops.flop())))
        };
        let (cublas_tflops, cublas_tf32) = (cublas_at(Precision::F32)?, cublas_at(Precision::Tf32)?);
        let timed = self.timed_at(lab, file, size);
        for (rung, row) in timed.iter().zip(&mut self.table) {
            let kernel_row = match rung {
                Timed::Rung(rung) => measure_rung(lab, rung, &mut ops)?,
                Timed::SplitK => {
                    let split = measure_split_k(lab, &mut ops)?;
                    self.notes.push(split_k_note(&ops.label(), &split));
                    split.row
                }
            };
            let tflops = kernel_row.rate.value();
            row.extend([
                format!("{tflops:.2}"),
                cublas_tflops.map_or("-".into(), |c| format!("{:.0}%", 100.0 * tflops / c)),
            ]);
            self.kernels.push(kernel_row);
        }
        self.cublas_rows(size, cublas_tflops, cublas_tf32);
        Ok(())
    }

    /// cuBLAS's two rows of the table at `size`, and its lines across the chart.
    fn cublas_rows(&mut self, (m, n, k): (usize, usize, usize), fp32: Option<f64>, tf32: Option<f64>) {
        if let Some(c) = fp32 {
            self.references.push((0.0, c, format!("cuBLAS {m}x{n}x{k}")));
        }
        if let Some(c) = tf32 {
            self.references.push((0.0, c, format!("cuBLAS TF32 {m}x{n}x{k}")));
        }
        let rows = self.table.len();
        let cell = |t: Option<f64>| t.map_or("skipped".into(), |c| format!("{c:.2}"));
        let share = |t: Option<f64>| match (t, fp32) {
            (Some(t), Some(c)) => format!("{:.0}%", 100.0 * t / c),
            _ => "-".into(),
        };
        self.table[rows - 2].extend([cell(fp32), share(fp32)]);
        self.table[rows - 1].extend([cell(tf32), share(tf32)]);
    }
}

/// The notes after the table: the bank model of rung 9, where cuBLAS came from and its math
/// modes, and the FP32 peak.
fn closing_notes(lab: &Lab, cublas: Option<&Cublas>) -> Vec<String> {
    let mut notes = vec![bank_note()];
    notes.push(match cublas {
        Some(c) => format!(
            "cuBLAS from {}: CUBLAS_DEFAULT_MATH (FP32, no TF32) for the percentages; the TF32 row allows TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH), which on Hopper run wgmma, an instruction rung 9's mma.sync does not use",
            c.path().display()
        ),
        None => NO_CUBLAS.into(),
    });
    if let Some(peak) = lab.gpu.info.peak_fp32(None).map(|p| p / 1e12) {
        notes.push(format!("FP32 peak at the driver's clock: {peak:.1} TFLOP/s (SMs x FP32 lanes x 2 x clock)"));
    }
    notes
}

/// The bank model's wavefronts per warp instruction for rung 9's shared accesses, swizzled and
/// not (what Nsight Compute's `l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld` and `_st`
/// count, divided by the instructions).
pub fn bank_note() -> String {
    use crate::model::gemm_tiles::{Layout, tf32_b_load, tf32_copy, tf32_ldmatrix};
    let pair = |f: &dyn Fn(Layout) -> crate::model::banks::BankReport| {
        let (built, plain) = (f(Layout::AsBuilt), f(Layout::Plain));
        format!("{} swizzled, {} unswizzled (ideal {})", built.wavefronts, plain.wavefronts, built.ideal_wavefronts)
    };
    format!(
        "bank model, wavefronts per warp instruction of rung 9: ldmatrix.x4 of A {}; 32-bit B fragment loads {}; cp.async writes of A {}, of B {}",
        pair(&tf32_ldmatrix),
        pair(&tf32_b_load),
        pair(&|l| tf32_copy(true, l)),
        pair(&|l| tf32_copy(false, l)),
    )
}

/// How the note naming rung 8's configuration begins (`bench` prints these notes too).
pub const TUNED_NOTE: &str = "rung 8 at ";

/// The note naming rung 8's configuration at one size, with its parameters and where the
/// choice comes from.
fn tuned_note(pick: Pick, class: ShapeClass, (m, n, k): (usize, usize, usize), source: Option<&str>) -> String {
    let cfg = pick.tile();
    let split = if pick == Pick::SplitK { "the split-K rung on " } else { "" };
    format!(
        "{TUNED_NOTE}{m}x{n}x{k} (class {}): {} = {split}{:?}, tile {}x{}, depth {}, warp {}x{}, thread {}x{}, {} stages, {} threads, {} B shared ({})",
        class.name(),
        pick.name(),
        cfg.algo,
        cfg.bm,
        cfg.bn,
        cfg.bk,
        cfg.wm,
        cfg.wn,
        cfg.tm,
        cfg.tn,
        cfg.stages,
        cfg.threads(),
        cfg.smem_bytes(),
        source.unwrap_or("no autotune choice for this GPU: the class's default"),
    )
}

/// How the note of the split-K rung's choice at one size begins (`bench` prints these too).
pub const SPLIT_K_NOTE: &str = "split-K at ";

/// The note of the split-K rung at one size: the model's split, the idle slots it removes and
/// the partial-sum bytes, beside the measured time.
pub fn split_k_note(size: &str, split: &SplitKRow) -> String {
    format!(
        "{SPLIT_K_NOTE}{size}: {}; measured {:.1} us, {:.2} TFLOP/s",
        split_k_prediction(&split.plan),
        split.row.timing.median_ms * 1e3,
        split.row.rate.value()
    )
}

/// What one row of the ladder's table times.
#[derive(Clone, Copy)]
enum Timed {
    /// A rung of one launch.
    Rung(Rung),
    /// The split-K rung at the model's split.
    SplitK,
}

/// Checks the split-K rung on each odd size, element by element: at the model's split, at 3
/// splits and at [`MAX_SPLITS`] (fewer where `k` has fewer depth steps), so that one split,
/// a few and the most all run where the tiles, the depth steps and the vector paths have edges.
///
/// # Errors
/// A failed allocation, launch or download.
pub fn check_split_k_odd_sizes(lab: &Lab) -> Result<Vec<Check>> {
    let mut checks = Vec::new();
    for size in crate::lab::sanitizer::odd_sizes(lab) {
        let mut ops = Operands::new(&lab.gpu, size)?;
        let model = split_k_plan(&lab.gpu.info, size).chosen.splits;
        let mut splits = vec![model, 3, MAX_SPLITS];
        splits.sort_unstable();
        splits.dedup();
        for s in splits {
            checks.push(check_split_k(lab, &mut ops, s)?);
        }
    }
    Ok(checks)
}
