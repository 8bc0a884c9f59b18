//! The kernel rows' paths into shared memory and the bytes they keep in flight, SGEMM rungs 6
//! and 7 beside the TMA kernels, and the goals against memcpy.

use anyhow::Result;
use memlab_contracts::tma::Pipeline;

use super::plan::{config_label, resident};
use crate::gpu::launch::Launch;
use crate::lab::{KernelRow, KernelRun, Lab, measure, poison};

/// A kernel row to measure: its launch, its path into shared memory, its one-line lesson.
pub(super) type Row = (Launch, Path, &'static str);

/// How a kernel gets its data into shared memory (or registers), and the bytes one block keeps
/// in flight there: the table's "bytes in flight per SM" is that times the blocks per SM.
#[derive(Debug, Clone, Copy)]
pub(super) enum Path {
    /// Plain loads through registers, this many bytes per thread.
    Lsu(u32),
    /// `cp.async` and plain loads, this many bytes per block per stage.
    CpAsync(u32),
    /// Plain loads into shared memory through registers, bytes per block per stage.
    SharedLoads(u32),
    /// TMA copies through shared buffers: the configuration.
    Ring(Pipeline),
}

impl Path {
    /// The table's cell: path, bytes per block, bytes in flight per SM at the row's blocks/SM.
    pub(super) fn in_flight(self, row: &KernelRow) -> String {
        let driver = row.occupancy.active_blocks;
        let threads = row.shape.threads_per_block();
        let (what, per_block, blocks) = match self {
            Path::Lsu(per_thread) => ("plain loads to registers".to_string(), per_thread * threads, driver),
            Path::SharedLoads(b) => ("plain loads to shared".into(), b, driver),
            Path::CpAsync(b) => ("cp.async (B) + plain loads (A) to shared".into(), b, driver),
            Path::Ring(p) => (format!("TMA, {}", config_label(&p)), p.stages * p.box_bytes(), resident(&p, driver)),
        };
        format!(
            "{what}: {} KiB per block, {} KiB in flight per SM",
            per_block as f64 / 1024.0,
            (per_block * blocks) as f64 / 1024.0
        )
    }
}

/// SGEMM rungs 6 (plain loads into shared memory) and 7 (`cp.async`), at the run's first SGEMM
/// size, for the table of paths into shared memory; each step a block moves its `A` and `B`
/// tiles (`2 x 128 x 8` floats, 8 KiB) while it computes on the other stage.
pub(super) fn async_rungs(lab: &Lab, size: Option<(usize, usize, usize)>) -> Result<Vec<KernelRow>> {
    use crate::probes::gemm::{MatmulLaunch, Operands, block_work, matmul_launch, shapes};
    use memlab_contracts::sgemm::{BK, TILE as GEMM_TILE};
    let Some(size) = size else { return Ok(vec![]) };
    let mut ops = Operands::new(&lab.gpu, size)?;
    let step = 2 * GEMM_TILE * BK * 4;
    let rungs: [(MatmulLaunch, Path, &str); 2] = [
        (
            matmul_launch!(sgemm_6_double_buffered, shapes::sgemm_6_double_buffered),
            Path::SharedLoads(step),
            "SGEMM rung 6: A and B tiles by plain loads into shared memory",
        ),
        (
            matmul_launch!(sgemm_7_async_copy, shapes::sgemm_7_async_copy),
            Path::CpAsync(step),
            "SGEMM rung 7: the B tile by cp.async, A by plain loads",
        ),
    ];
    let mut rows = Vec::new();
    for (kernel, path, lesson) in rungs {
        let launch = ops.launch(kernel);
        let run = KernelRun {
            launch,
            lesson,
            prediction: String::new(),
            work: block_work(&ops, (GEMM_TILE, GEMM_TILE)),
            size: ops.label(),
            reset: &|| poison(&ops.c),
        };
        let row = measure(lab, run, || ops.check(&lab.gpu))?;
        rows.push(KernelRow { prediction: path.in_flight(&row), ..row });
    }
    Ok(rows)
}

/// The goals (TMA copy >= 0.97x memcpy, TMA transpose >= 0.95x memcpy) against this run.
pub(super) fn goal_notes(kernels: &[KernelRow], memcpy_gbs: Option<f64>) -> Vec<String> {
    let Some(memcpy) = memcpy_gbs else {
        return vec![
            "no memcpy ceiling in this run: the goals (TMA copy >= 0.97x, transpose >= 0.95x memcpy) are not judged"
                .into(),
        ];
    };
    let best = |name: &str| {
        kernels.iter().filter(|k| k.kernel == name && k.check.passed()).map(|k| k.rate.value()).fold(0.0, f64::max)
    };
    [("tma_copy", 0.97), ("tma_bulk_copy", 0.97), ("tma_transpose", 0.95)]
        .iter()
        .map(|&(name, goal)| {
            let ratio = best(name) / memcpy;
            let verdict = if ratio >= goal { "met" } else { "MISSED" };
            format!(
                "goal `{name}` >= {goal:.2}x memcpy: {ratio:.3}x ({:.0} of {memcpy:.0} GB/s), {verdict}",
                best(name)
            )
        })
        .collect()
}
