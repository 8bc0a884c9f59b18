//! Global memory against shared-memory tiling: naive and tiled `C = A * B`.

use anyhow::Result;
use cust::memory::CopyDestination;
use memlab_contracts::matmul::{NAIVE_BLOCK, TILE_16, TILE_32, tiled_smem_bytes};

use crate::charts::OccupancyChart;
use crate::lab::GEMM_COUNT_SIZE;
use crate::lab::Inputs;
use crate::lab::{
    KernelRow, KernelRun, Lab, Level, Section, Work, check_u32_elements, measure, poison, poisoned, upload,
};
use crate::probes::gemm::shapes as gemm_shapes;
use crate::probes::gemm::{MatmulLaunch, Operands, matmul_launch, square_tiles};

use crate::gpu::context::load_entries;
use crate::gpu::describe;
use crate::gpu::launch::LaunchShape;
use crate::lab::{Figure, Lesson, Run, Shared};
use crate::model::tiling::{MatmulShape, naive_global_loads, tiled_global_loads};
use crate::verify::Check;
use crate::{ptx, reference, verify};

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `matmul_naive`: `C = A * B` (`a` `m x k`, `b` `k x n`, `c` `m x n`, row-major f32);
    /// block `16 x 16`, one thread per element of `C`, no shared memory.
    pub fn matmul_naive(m: u32, n: u32) -> LaunchShape {
        square_tiles(m, n, NAIVE_BLOCK, 0)
    }

    /// `matmul_tiled_16`: as [`matmul_naive`], `16 x 16` tiles of `A` and `B` in 2048 B of
    /// shared memory.
    pub fn matmul_tiled_16(m: u32, n: u32) -> LaunchShape {
        square_tiles(m, n, TILE_16, tiled_smem_bytes(TILE_16))
    }
}

/// One matmul kernel: its launch, its tile edge when it stages tiles in shared memory, lesson.
#[derive(Clone, Copy)]
struct Kernel {
    launch: MatmulLaunch,
    tile: Option<u32>,
    lesson: &'static str,
}

const NAIVE: Kernel = Kernel {
    launch: matmul_launch!(matmul_naive, shapes::matmul_naive),
    tile: None,
    lesson: "one thread per C element, every operand from global memory: 2 loads per FMA",
};
const TILED: [Kernel; 2] = [
    Kernel {
        launch: matmul_launch!(matmul_tiled_16, shapes::matmul_tiled_16),
        tile: Some(TILE_16),
        lesson: "16x16 tiles in shared memory: each global float is used 16 times",
    },
    Kernel {
        launch: matmul_launch!(matmul_tiled_32, gemm_shapes::matmul_tiled_32),
        tile: Some(TILE_32),
        lesson: "32x32 tiles in shared memory: each global float is used 32 times",
    },
];

/// Seeds of the demo's `A` and `B` ([`reference::input_f32`]).
pub const SEEDS: (u64, u64) = (1, 2);

/// The matmul lesson's options.
#[derive(clap::Args, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
pub struct Options {
    /// Tiled (and by default naive) matmul shape, MxNxK (the clusters lesson's DSMEM GEMM runs
    /// at it too).
    #[arg(id = "matmul", long = "matmul", value_name = "MATMUL", default_value = "4096x4096x4096", value_parser = crate::cli::gemm)]
    pub tiled: (usize, usize, usize),
    /// Naive matmul shape, MxNxK (default: the tiled shape).
    #[arg(id = "matmul-naive", long = "matmul-naive", value_name = "MATMUL_NAIVE", value_parser = crate::cli::gemm)]
    pub naive: Option<(usize, usize, usize)>,
}

impl Options {
    /// The naive kernel's shape.
    pub fn naive(&self) -> (usize, usize, usize) {
        self.naive.unwrap_or(self.tiled)
    }
}

/// The lesson: global memory and tiling.
pub struct Matmul;

impl Lesson for Matmul {
    const NAME: &'static str = "matmul";
    const HOST_FLAGS: &'static [&'static str] = &["--matmul", "--matmul-naive"];
    type Options = Options;

    fn run(lab: &Lab, _: &Inputs, options: &Options) -> Result<Section> {
        run(lab, options.naive(), options.tiled)
    }

    /// The tiled and the naive shapes' operands, the larger.
    fn host_bytes(options: &Options, _: &Shared) -> usize {
        crate::probes::gemm::host_bytes(options.tiled).max(crate::probes::gemm::host_bytes(options.naive()))
    }

    fn figures(run: &Run) -> Vec<Figure> {
        vec![OccupancyChart::figure(run, crate::launches::entry::matmul_tiled_32.name)]
    }
}

/// Runs the naive kernel at `naive_size` and the tiled ones at `tiled_size`.
fn run(lab: &Lab, naive_size: (usize, usize, usize), tiled_size: (usize, usize, usize)) -> Result<Section> {
    let mut kernels = Vec::new();
    if naive_size == tiled_size {
        kernels.extend(run_case(lab, tiled_size, &[NAIVE, TILED[0], TILED[1]])?);
    } else {
        kernels.extend(run_case(lab, naive_size, &[NAIVE])?);
        kernels.extend(run_case(lab, tiled_size, &TILED)?);
    }
    let counted = lab.phases.step("load counts", || count_loads(lab, GEMM_COUNT_SIZE))?;
    let (m, n, k) = tiled_size;
    Ok(Section {
        name: "matmul".into(),
        title: format!("Global memory and tiling: C = A * B, f32, {m}x{n}x{k}"),
        lesson: "Tiling stages blocks of A and B in shared memory so each global load feeds T multiply-adds: global traffic falls by the tile width.".into(),
        kernels,
        checks: counted.iter().map(|(_, check)| check.clone()).collect(),
        sweep: Some((
            ["kernel", "size", "model: global loads", "counted on the GPU", "check"].map(String::from).to_vec(),
            counted.into_iter().map(|(row, _)| row).collect(),
        )),
        ..Section::default()
    })
}

/// Runs every matmul kernel of the counting build (`ptx::COUNTING`) once at `(m, n, k)` and
/// compares its `GLOBAL_LOADS` with the tiling model: a table row and a check per kernel.
fn count_loads(lab: &Lab, (m, n, k): (usize, usize, usize)) -> Result<Vec<(Vec<String>, Check)>> {
    let a = upload(&reference::random_f32(m * k, SEEDS.0))?;
    let b = upload(&reference::random_f32(k * n, SEEDS.1))?;
    let mut c = poisoned::<f32>(m * n)?;
    let counted = [NAIVE, TILED[0], TILED[1]];
    let launches = counted.map(|kernel| (kernel, (kernel.launch)(&a, &b, &mut c, m as u32, n as u32, k as u32)));
    // Only these kernels of the counting build: the JIT compiles every kernel of a module.
    let module = load_entries(&ptx::COUNTING, &launches.each_ref().map(|(_, l)| l.kernel), None)?;
    let name = std::ffi::CString::new("GLOBAL_LOADS").unwrap();
    let err = |e| anyhow::anyhow!("load counter: {}", describe(e));
    let mut out = Vec::new();
    for (kernel, launch) in launches {
        let mut counter = module.get_global::<u64>(&name).map_err(err)?;
        counter.copy_from(&0).map_err(err)?;
        launch.enqueue_in(&lab.gpu, &module)?;
        lab.gpu.stream.synchronize().map_err(err)?;
        let mut counted = 0u64;
        counter.copy_to(&mut counted).map_err(err)?;
        let model = global_loads((m, n, k), &kernel);
        let check = verify::exact_one(counted, model);
        let row = vec![
            launch.kernel.to_string(),
            format!("{m}x{n}x{k}"),
            model.to_string(),
            counted.to_string(),
            check.summary("exact count"),
        ];
        out.push((row, check));
    }
    Ok(out)
}

/// The tiling model's count of in-bounds global loads (elements) for one kernel.
fn global_loads((m, n, k): (usize, usize, usize), kernel: &Kernel) -> u64 {
    let shape = MatmulShape::new(m as u64, n as u64, k as u64);
    match kernel.tile {
        Some(tile) => tiled_global_loads(shape, tile as u64),
        None => naive_global_loads(shape),
    }
}

fn run_case(lab: &Lab, (m, n, k): (usize, usize, usize), kernels: &[Kernel]) -> Result<Vec<KernelRow>> {
    check_u32_elements("the matmul demo", &[m * k, k * n, m * n])?;
    // Inputs through pinned staging, `C` checked as it comes back: no host copy of a matrix.
    let mut ops = Operands::seeded(&lab.gpu, (m, n, k), SEEDS)?;
    let flop = 2.0 * (m * n * k) as f64;
    let mut rows = Vec::new();
    for kernel in kernels {
        let launch = ops.launch(kernel.launch);
        let prediction = format!("{:.3e} global loads", global_loads((m, n, k), kernel) as f64);
        // Bytes as the tiling model counts them: every global load plus the writes of C.
        let bytes = 4.0 * (global_loads((m, n, k), kernel) + (m * n) as u64) as f64;
        let work = Work { flop, bytes, level: Level::Global };
        let run = KernelRun {
            launch,
            lesson: kernel.lesson,
            prediction,
            work,
            size: format!("{m}x{n}x{k}"),
            reset: &|| poison(&ops.c),
        };
        rows.push(measure(lab, run, || ops.check(&lab.gpu))?);
    }
    Ok(rows)
}
