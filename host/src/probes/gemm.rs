//! The pieces every GEMM lesson shares, below them all: the typed launch of an `(a, b, c, m, n,
//! k)` kernel, the shapes of those several lessons launch (rung 1 and the SGEMM rungs 6 and 7),
//! the work the tiling model counts, the FP32 operands on the device with their checks
//! against the f64 reference, and cuBLAS SGEMM, the reference rate each rung is timed beside.

use std::cell::RefCell;

use anyhow::Result;
use cust::memory::DeviceBuffer;

use crate::gpu::Gpu;
use crate::gpu::cublas::Cublas;
use crate::gpu::launch::{Launch, LaunchShape};
use crate::gpu::staging::Staging;
use crate::gpu::timing::{Timing, time};
use crate::lab::{Lab, Level, Work, check_u32_elements, ensure_free, f32_bytes, poison, poisoned};
use crate::model::tiling::{MatmulShape, block_tiled_global_loads};
use crate::verify::{self, Check, MatmulStreamed, Precision};
use crate::{reference, refuse};

/// The shape of a matmul with one `tile x tile` block of threads per `tile x tile` tile of the
/// `m x n` result.
pub fn square_tiles(m: u32, n: u32, tile: u32, smem: u32) -> LaunchShape {
    LaunchShape::covering(m as usize, n as usize, (tile as usize, tile as usize), (tile, tile), smem)
}

/// The shape of an SGEMM rung: one-dimensional blocks of `threads`, one per `tile x tile` tile
/// of the `m x n` result.
pub fn rung_shape(m: u32, n: u32, tile: u32, threads: u32, smem: u32) -> LaunchShape {
    LaunchShape::covering(m as usize, n as usize, (tile as usize, tile as usize), (threads, 1), smem)
}

/// The launch shapes of the GEMM kernels several lessons launch.
pub mod shapes {
    use memlab_contracts::matmul::{TILE_32, tiled_smem_bytes};
    use memlab_contracts::sgemm::{A_PITCH_PADDED, STAGES, THREADS, TILE, smem_bytes};

    use super::{rung_shape, square_tiles};
    use crate::gpu::launch::LaunchShape;

    /// `matmul_tiled_32`: `C = A * B` (`a` `m x k`, `b` `k x n`, `c` `m x n`, row-major f32), `32 x 32` tiles (block of 1024 threads) in
    /// 8192 B of shared memory. The matmul lesson's largest
    /// tile, rung 1 of the SGEMM ladder, and the baseline of the race and cluster lessons.
    pub fn matmul_tiled_32(m: u32, n: u32) -> LaunchShape {
        square_tiles(m, n, TILE_32, tiled_smem_bytes(TILE_32))
    }

    /// Rung 6 of the SGEMM ladder, `sgemm_6_double_buffered`: 256 threads per `128 x 128` tile,
    /// two stages of a pitch-132 `A` tile and a `B` tile (16640 B); the TMA lesson's path of
    /// plain loads into shared memory.
    pub fn sgemm_6_double_buffered(m: u32, n: u32) -> LaunchShape {
        rung_shape(m, n, TILE, THREADS, smem_bytes(A_PITCH_PADDED, TILE, STAGES))
    }

    /// Rung 7, `sgemm_7_async_copy`: as rung 6 (16640 B), `B` by `cp.async`; in the sm_80 and
    /// sm_90 PTX only. Buffers 16-byte aligned (every device allocation is). The TMA lesson's
    /// `cp.async` path.
    pub fn sgemm_7_async_copy(m: u32, n: u32) -> LaunchShape {
        rung_shape(m, n, TILE, THREADS, smem_bytes(A_PITCH_PADDED, TILE, STAGES))
    }
}

/// A typed launch of a matmul kernel with its shape: `(a, b, c, m, n, k)`.
pub type MatmulLaunch = fn(&DeviceBuffer<f32>, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>, u32, u32, u32) -> Launch;

/// The [`MatmulLaunch`] of kernel `$name`, whose typed launch takes `(a, b, c, m, n, k)`: its
/// generated launch with the shape `$shape(m, n)`.
macro_rules! matmul_launch {
    ($name:ident, $shape:expr) => {
        |a, b, c, m, n, k| crate::launches::$name($shape(m, n), a, b, c, m, n, k)
    };
}
pub(crate) use matmul_launch;

/// Random operands of one product on the device, and a poisoned result. The host holds no copy
/// of them: `A` and `B` are generated chunk by chunk into pinned staging and uploaded, and each
/// check draws the rows and columns it compares from the same generator ([`MatmulStreamed`])
/// while `C` comes back through the staging (at 8192^2, three host copies would be 768 MiB).
pub struct Operands {
    /// `A`, `m x k`.
    pub a: DeviceBuffer<f32>,
    /// `B`, `k x n`.
    pub b: DeviceBuffer<f32>,
    /// `C`, `m x n`, poisoned.
    pub c: DeviceBuffer<f32>,
    /// `(m, n, k)`.
    pub size: (usize, usize, usize),
    /// Seeds of `A` and `B` ([`reference::input_f32`]).
    seeds: (u64, u64),
    /// Pinned staging, reused by the uploads and every check of these operands.
    staging: RefCell<Staging<f32>>,
}

/// Seeds of the SGEMM ladder's `A` and `B`.
pub const SGEMM_SEEDS: (u64, u64) = (21, 22);

/// Host bytes [`Operands`] of an `m x n x k` product hold at once: the pinned staging and the
/// rows of `A` and columns of `B` a check compares (all of both for a full check).
pub fn host_bytes((m, n, k): (usize, usize, usize)) -> usize {
    let staging = crate::lab::staging_bytes((m.max(k), n.max(k)));
    let (rows, cols) = verify::sample_grid((m, n), verify::matmul_samples((m, n, k)).0);
    staging.saturating_add(f32_bytes(&[rows.saturating_mul(k), cols.saturating_mul(k)]))
}

impl Operands {
    /// Allocates and fills the operands of an `m x n x k` product ([`SGEMM_SEEDS`]).
    ///
    /// # Errors
    /// Not enough device memory, or an upload failure.
    pub fn new(gpu: &Gpu, size: (usize, usize, usize)) -> Result<Operands> {
        Operands::seeded(gpu, size, SGEMM_SEEDS)
    }

    /// [`Operands::new`] with `A` and `B` of seeds `seeds`.
    ///
    /// # Errors
    /// Not enough device memory, or an upload failure.
    pub fn seeded(gpu: &Gpu, (m, n, k): (usize, usize, usize), seeds: (u64, u64)) -> Result<Operands> {
        check_u32_elements("the sgemm operands", &[m * k, k * n, m * n])?;
        ensure_free("the sgemm operands", f32_bytes(&[m * k, k * n, m * n]))?;
        let mut staging = Staging::new((m * k).max(k * n).max(m * n))?;
        let (a, b) = (poisoned(m * k)?, poisoned(k * n)?);
        for (buf, seed) in [(&a, seeds.0), (&b, seeds.1)] {
            staging.upload(gpu, buf, |offset, chunk| reference::fill_input(seed, offset, chunk))?;
        }
        Ok(Operands { a, b, c: poisoned(m * n)?, size: (m, n, k), seeds, staging: RefCell::new(staging) })
    }

    /// The launch of `kernel` on these operands.
    pub fn launch(&mut self, kernel: MatmulLaunch) -> Launch {
        let (m, n, k) = self.size;
        kernel(&self.a, &self.b, &mut self.c, m as u32, n as u32, k as u32)
    }

    /// The problem size as tables name it, `MxNxK`.
    pub fn label(&self) -> String {
        let (m, n, k) = self.size;
        format!("{m}x{n}x{k}")
    }

    /// Checks `C` against the f64 reference ([`verify::matmul_auto`]'s rule). Returns the check
    /// and what it compared.
    ///
    /// # Errors
    /// A failed download.
    pub fn check(&self, gpu: &Gpu) -> Result<(Check, &'static str)> {
        self.check_in(gpu, Precision::F32)
    }

    /// [`Operands::check`] with the tolerance of `precision`.
    ///
    /// # Errors
    /// A failed download.
    pub fn check_in(&self, gpu: &Gpu, precision: Precision) -> Result<(Check, &'static str)> {
        let (samples, what) = verify::matmul_samples(self.size);
        let (sa, sb) = self.seeds;
        let a = |i| reference::input_f32(sa, i);
        let b = |i| reference::input_f32(sb, i);
        let mut check = MatmulStreamed::new(precision, self.size, (samples, verify::SAMPLE_SEED), a, b);
        self.staging.borrow_mut().download(gpu, &self.c, |_, chunk| check.chunk(chunk))?;
        Ok((check.finish(), what))
    }

    /// `2 m n k`.
    pub fn flop(&self) -> f64 {
        let (m, n, k) = self.size;
        2.0 * (m * n * k) as f64
    }
}

/// The work of a kernel of `bm x bn` blocks on `ops`: its FLOP, and bytes as the tiling model
/// counts them (every global load plus the writes of C).
pub fn block_work(ops: &Operands, (bm, bn): (u32, u32)) -> Work {
    let (m, n, k) = ops.size;
    let loads = block_tiled_global_loads(MatmulShape::new(m as u64, n as u64, k as u64), (bm as u64, bn as u64));
    Work { flop: ops.flop(), bytes: 4.0 * (loads + (m * n) as u64) as f64, level: Level::Global }
}

/// Times cuBLAS SGEMM on `ops` after checking its result; `None` without cuBLAS. With
/// `Precision::Tf32` cuBLAS may use TF32 tensor cores (on Hopper, its `wgmma` kernels), and is
/// checked with the TF32 tolerance; the handle is back in FP32 mode afterwards.
///
/// # Errors
/// A cuBLAS failure or a wrong cuBLAS result.
pub fn time_cublas(lab: &Lab, cublas: Option<&Cublas>, ops: &Operands, precision: Precision) -> Result<Option<Timing>> {
    let Some(cublas) = cublas else { return Ok(None) };
    cublas.allow_tf32(precision == Precision::Tf32)?;
    let timed = (|| {
        poison(&ops.c)?;
        cublas.sgemm(&ops.a, &ops.b, &ops.c, ops.size)?;
        lab.gpu.stream.synchronize().map_err(|e| anyhow::anyhow!(crate::gpu::describe(e)))?;
        let (check, kind) = ops.check_in(&lab.gpu, precision)?;
        if !check.passed() {
            refuse!("cuBLAS SGEMM ({precision:?}) returned a wrong result: {}", check.summary(kind));
        }
        time(&lab.gpu, lab.settings.repeats, || cublas.sgemm(&ops.a, &ops.b, &ops.c, ops.size))
    })();
    cublas.allow_tf32(false)?;
    Ok(Some(timed?))
}
