//! Rung 9, tensor cores (compiled for `sm_80` and up): TF32 `mma.sync` `m16n8k8` with FP32
//! accumulation, both tiles copied global -> shared by `cp.async` into XOR-swizzled layouts.
//!
//! Per step the block stages the `128 x 16` tile of `A` as it lies in memory (rows of 4 chunks
//! of 16 bytes), chunks placed by `swizzle_a`, and the `16 x 128` tile of `B` as it lies, each
//! row's chunks placed by `swizzle_b_tf32`. Warp `w` owns the `64 x 32` sub-tile at rows
//! `64 (w / 4)`, columns `32 (w % 4)`: 4 x 4 MMA tiles of `16 x 8`, 64 accumulators per thread.
//! Per 8 depths a warp loads its `A` fragments by 4 `ldmatrix.x4` (each four 8 x 4 matrices of
//! `f32`, one 16-byte row per lane address) and its `B` fragments by 8 32-bit shared loads per
//! lane: `ldmatrix` hands lane `l` row `l / 4`, word `l % 4` of a matrix, which for `B`, stored
//! with `n` contiguous, is `B(k = l / 4, n = l % 4)`, the transpose of the fragment's
//! `B(k = l % 4, n = l / 4)`; its `.trans` form moves 16-bit elements, not 32-bit ones (PTX
//! ISA, "ldmatrix").
//!
//! Bank conflicts (`memlab banks` predicts them, see `host/src/model/banks.rs`): unswizzled, an
//! `ldmatrix` row address set (8 rows of 64 bytes at one column) falls two by two into the same
//! 4 banks (2 wavefronts per 8 x 16-byte matrix where 1 suffices) and a `B` fragment load (rows
//! `k .. k + 3`, 8 consecutive columns) into 8 banks (4 wavefronts where 1 suffices); swizzled,
//! both take the minimum, and so do the `cp.async` writes (the swizzles permute chunks inside a
//! 128-byte line).

use super::copy::copy_tile;
use super::{Gemm, unrolled};
use crate::device::mma::mma_tf32;
use crate::device::ring::{AsyncWrite, Filling, Ready, Ring};
use crate::device::{Block, GlobalIn, GlobalOut, block_idx_x, block_idx_y, kernel, thread_idx_x};
use memlab_contracts::sgemm::{
    TF32_BK as BK, TF32_STAGES as STAGES, TF32_THREADS as THREADS, TF32_TILE as TILE, TF32_WARP, swizzle_a,
    swizzle_b_tf32,
};

/// MMA tiles per warp: 4 of 16 rows, 4 of 8 columns.
const MT: usize = (TF32_WARP.0 / 16) as usize;
const NT: usize = (TF32_WARP.1 / 8) as usize;

kernel! {
/// Rung 9: `C = A * B` on tensor cores, TF32 inputs (the low 13 mantissa bits of each operand
/// dropped), FP32 accumulation; see the module doc for the layouts.
///
/// - Launch: block `256 x 1` threads, grid `(ceil(n / 128), ceil(m / 128))`.
/// - Shared memory: `3 * (128 * 16 + 16 * 128) * 4 = 49152` bytes of dynamic shared memory.
/// - Memory level: both tiles global -> shared by `cp.async`, fragments shared -> registers by
///   `ldmatrix` (`A`) and `ld.shared.b32` (`B`), 64 accumulators in registers. Needs cc 8.0
///   (PTX ISA, "mma": `.tf32` needs `sm_80`).
/// - Buffers: as in the module doc of `sgemm`, each 16-byte aligned.
pub fn sgemm_9_tensor_tf32(block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32) {
    tensor_tf32::<true>(block, Gemm::new(a, b, c, m, n, k))
}
}

kernel! {
/// Rung 9 with its tiles stored unswizzled, as they lie in memory: the contrast for the bank
/// lesson (its `ldmatrix` takes 2 wavefronts per matrix where 1 suffices, its `B` fragment loads
/// 4 where 1 suffices; the `cp.async` writes stay at the minimum).
///
/// - Launch, shared memory, memory level, buffers: as [`sgemm_9_tensor_tf32`].
pub fn sgemm_9_tensor_tf32_unswizzled(
    block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32,
) {
    tensor_tf32::<false>(block, Gemm::new(a, b, c, m, n, k))
}
}

/// The body of rung 9, with the swizzled layouts or without; launch contract as for
/// [`sgemm_9_tensor_tf32`] (`device::gemm`, `device::ring`).
#[inline(always)]
fn tensor_tf32<const SWIZZLE: bool>(block: Block, g: Gemm) {
    let k = g.k;
    // Where chunk `(r, c)` of each tile lies, in floats from the tile's start.
    let place_a = |r: u32, c: u32| 4 * if SWIZZLE { swizzle_a(r * (BK / 4) + c) } else { r * (BK / 4) + c };
    let place_b = |r: u32, c: u32| r * TILE + 4 * if SWIZZLE { swizzle_b_tf32(r, c) } else { c };
    let t = thread_idx_x();
    let (w, l) = (t / 32, t % 32);
    // The fragments' group (row of A and C, column of B) and thread in group (depth).
    let (gr, q) = (l / 4, l % 4);
    let (wm, wn) = TF32_WARP;
    let (wrow, wcol) = ((w / (TILE / wn)) * wm, (w % (TILE / wn)) * wn);
    let (row0, col0) = (block_idx_y() * TILE, block_idx_x() * TILE);
    let (am, bm) = (g.a_source(), g.b_source());
    // The `A` tile, then the `B` tile: a multiple of 4 floats, as `carve` asks.
    let ring = Ring::<STAGES>::carve(block, 2 * TILE * BK);
    let mut acc = [[[0.0f32; 4]; NT]; MT];
    let fill = #[inline(always)]
    |stage: &Filling<'_, AsyncWrite>, s: u32| {
        let k0 = s * BK;
        // SAFETY: `t < THREADS` (the launch's block); `place_a` maps the chunks of the
        // `TILE x BK` tile to `4 j`, `j < TILE BK / 4` (`swizzle_a` permutes inside lines of 8
        // chunks), and `place_b` those of the `BK x TILE` tile to `r TILE + 4 j`, `j < TILE / 4`
        // (`swizzle_b_tf32` likewise), after the `A` tile: multiples of 4 floats inside the
        // stage's `A` and `B` tiles.
        unsafe {
            copy_tile(&am, stage.at(0), (TILE, BK), (row0, k0), (t, THREADS), place_a);
            copy_tile(&bm, stage.at(TILE * BK), (BK, TILE), (k0, col0), (t, THREADS), place_b);
        }
    };
    let compute = #[inline(always)]
    |stage: &Ready<'_>| {
        // SAFETY: the stage's `A` tile, and its `B` tile after it.
        let (a_s, b_s) = unsafe { (stage.at(0), stage.at(TILE * BK)) };
        unrolled(BK as usize / 8, |ks| {
            let ks = ks as u32;
            // Lane l addresses row l % 8 (+ 8 for matrices 1 and 3) at depth chunk l / 16 of
            // the step: matrices 0..3 are A's rows 0-7 and 8-15 at depths 0-3, then at 4-7.
            let mut af = [[0u32; 4]; MT];
            unrolled(MT, |mt| {
                let row = wrow + 16 * mt as u32 + l % 8 + 8 * ((l / 8) % 2);
                let chunk = 2 * ks + l / 16;
                // SAFETY: `row < wrow + 64 <= TILE` and `chunk < BK / 4`: `place_a` puts the
                // lane's 16-byte row inside the `A` tile, 16-byte aligned; every lane of the warp
                // reaches it (no lane-dependent branch in the step).
                af[mt] = unsafe { a_s.add(place_a(row, chunk)).ldmatrix_x4() };
            });
            let mut bf = [[0u32; 2]; NT];
            unrolled(NT, |nt| {
                let col = wcol + 8 * nt as u32 + gr;
                unrolled(2, |half| {
                    let kr = 8 * ks + q + 4 * half as u32;
                    let at = place_b(kr, col / 4) + col % 4;
                    // SAFETY: `kr < BK` and `col < wcol + 32 <= TILE`: float `col` of row `kr`
                    // of the `B` tile, its chunk placed by `place_b`.
                    bf[nt][half] = unsafe { b_s.add(at) }.load().to_bits();
                });
            });
            unrolled(MT, |mt| unrolled(NT, |nt| acc[mt][nt] = mma_tf32(af[mt], bf[nt], acc[mt][nt])));
        });
    };
    ring.pipeline(k.div_ceil(BK), fill, compute);
    unrolled(MT, |mt| {
        unrolled(NT, |nt| {
            let (row, col) = (row0 + wrow + 16 * mt as u32 + gr, col0 + wcol + 8 * nt as u32 + 2 * q);
            let d = acc[mt][nt];
            g.store_c(row, col, d[0]);
            g.store_c(row, col + 1, d[1]);
            g.store_c(row + 8, col, d[2]);
            g.store_c(row + 8, col + 1, d[3]);
        });
    });
}
