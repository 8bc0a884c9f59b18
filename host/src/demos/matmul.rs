//! Global memory against shared-memory tiling: naive and tiled `C = A * B`.

use anyhow::Result;

use super::{KernelRow, KernelRun, Lab, Rate, Section, download, ensure_free, measure, poison, poisoned, upload};
use crate::gpu::launch::{Arg, LaunchShape};
use crate::model::tiling::{MatmulShape, naive_global_loads, tiled_global_loads};
use crate::series::{Series, names};
use crate::{reference, verify};

/// Elements checked at random when the full check would cost more than [`FULL_CHECK_MACS`].
pub const SAMPLES: usize = 4096;
/// Largest `m * n * k` checked element by element.
pub const FULL_CHECK_MACS: usize = 1 << 28;

/// One matmul kernel: name, tile edge (block is `tile x tile`), whether it stages tiles in
/// shared memory, lesson.
#[derive(Clone, Copy)]
struct Kernel {
    name: &'static str,
    tile: usize,
    shared: bool,
    lesson: &'static str,
}

const NAIVE: Kernel = Kernel {
    name: "matmul_naive",
    tile: 16,
    shared: false,
    lesson: "one thread per C element, every operand from global memory: 2 loads per FMA",
};
const TILED: [Kernel; 2] = [
    Kernel {
        name: "matmul_tiled_16",
        tile: 16,
        shared: true,
        lesson: "16x16 tiles in shared memory: each global float is used 16 times",
    },
    Kernel {
        name: "matmul_tiled_32",
        tile: 32,
        shared: true,
        lesson: "32x32 tiles in shared memory: each global float is used 32 times",
    },
];

/// Runs the naive kernel at `lab.sizes.matmul_naive` and the tiled ones at `lab.sizes.matmul`.
pub fn run(lab: &mut Lab) -> Result<Section> {
    let (naive_size, tiled_size) = (lab.sizes.matmul_naive, lab.sizes.matmul);
    let mut kernels = Vec::new();
    if naive_size == tiled_size {
        kernels.extend(run_case(lab, tiled_size, &[NAIVE, TILED[0], TILED[1]])?);
    } else {
        kernels.extend(run_case(lab, naive_size, &[NAIVE])?);
        kernels.extend(run_case(lab, tiled_size, &TILED)?);
    }
    let (m, n, k) = tiled_size;
    let series = vec![roofline_points(&kernels, naive_size, tiled_size)];
    Ok(Section {
        name: "matmul",
        title: format!("Global memory and tiling: C = A * B, f32, {m}x{n}x{k}"),
        lesson: "Tiling stages blocks of A and B in shared memory so each global load feeds T multiply-adds: global traffic falls by the tile width.".into(),
        kernels,
        series,
        ..Section::default()
    })
}

/// Each kernel at its arithmetic intensity by requested global loads (the tiling model's count,
/// 4 bytes each; stores and caches ignored, as in the seed's 2 FLOP / 8 B for the naive kernel)
/// and its measured TFLOP/s.
fn roofline_points(rows: &[KernelRow], naive_size: (usize, usize, usize), tiled_size: (usize, usize, usize)) -> Series {
    let points = rows.iter().filter_map(|row| {
        let kernel = [NAIVE, TILED[0], TILED[1]].into_iter().find(|k| k.name == row.kernel)?;
        let size @ (m, n, k) = if kernel.shared { tiled_size } else { naive_size };
        let ai = (2 * m * n * k) as f64 / (4 * global_loads(size, &kernel)) as f64;
        Some((ai, row.rate.value(), row.kernel.to_string()))
    });
    Series::labelled(names::ROOFLINE, "arithmetic intensity (FLOP/byte)", "TFLOP/s", points)
}

/// The tiling model's count of in-bounds global loads (elements) for one kernel.
fn global_loads((m, n, k): (usize, usize, usize), kernel: &Kernel) -> u64 {
    let shape = MatmulShape::new(m as u64, n as u64, k as u64);
    if kernel.shared { tiled_global_loads(shape, kernel.tile as u64) } else { naive_global_loads(shape) }
}

fn run_case(lab: &Lab, (m, n, k): (usize, usize, usize), kernels: &[Kernel]) -> Result<Vec<KernelRow>> {
    ensure_free("the matmul demo", 4 * (m * k + k * n + m * n))?;
    let a_host = reference::random_f32(m * k, 1);
    let b_host = reference::random_f32(k * n, 2);
    let (a, b) = (upload(&a_host)?, upload(&b_host)?);
    let mut c = poisoned::<f32>(m * n)?;
    let samples = if m * n * k <= FULL_CHECK_MACS { usize::MAX } else { SAMPLES };
    let flop = 2.0 * (m * n * k) as f64;
    let mut rows = Vec::new();
    for kernel in kernels {
        poison(&mut c)?;
        let t = kernel.tile;
        let smem = if kernel.shared { (2 * t * t * 4) as u32 } else { 0 };
        let shape = LaunchShape::covering(m, n, (t, t), (t as u32, t as u32), smem);
        let args =
            [Arg::from(&a), Arg::from(&b), Arg::from(&c), Arg::U32(m as u32), Arg::U32(n as u32), Arg::U32(k as u32)];
        let prediction = format!("{:.3e} global loads", global_loads((m, n, k), kernel) as f64);
        let run = KernelRun { kernel: kernel.name, lesson: kernel.lesson, prediction, shape, args: &args };
        let check = || {
            let kind = if samples == usize::MAX { "every element" } else { "sampled dot products" };
            Ok((verify::matmul(&a_host, &b_host, &download(&c)?, (m, n, k), samples, 5), kind))
        };
        rows.push(measure(lab, run, check, |t| Rate::Tflops(t.tflops(flop)))?);
    }
    Ok(rows)
}
