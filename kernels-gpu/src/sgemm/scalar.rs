//! Rungs 2 and 3: register blocking with scalar loads. A block computes a `BM x BN` tile of `C`;
//! per step it stages a `BM x BK` tile of `A` and a `BK x BN` tile of `B` in shared memory and
//! every thread accumulates a `TM x TN` block of results in registers.

use memlab_contracts::sgemm::{BK, RUNG2_THREADS, RUNG2_TILE, RUNG2_TM, THREADS, TILE, TM};

use super::Gemm;
use crate::device::ring::{Filling, Ready, Ring};
use crate::device::{Block, GlobalIn, GlobalOut, block_idx_x, block_idx_y, fma, kernel, thread_idx_x};

/// The body of rungs 2 and 3: `THREADS = BM * BN / (TM * TN)` threads, one-dimensional.
///
/// Shared memory: `A` tile row-major `BM x BK` (`As[r * BK + d]`), then `B` tile row-major
/// `BK x BN`: `(BM + BN) * BK * 4` bytes. Thread `t` owns rows `(t / (BN / TN)) * TM + i` and
/// columns `(t % (BN / TN)) * TN + j` of the block's tile. Launch contract (`device::gemm`,
/// `device::ring`): buffers as in the module doc of `sgemm`; block of `THREADS` threads, the
/// shared bytes above.
#[inline(always)]
fn register_blocked<
    const BM: u32,
    const BN: u32,
    const BK: u32,
    const TM: usize,
    const TN: usize,
    const THREADS: u32,
>(
    block: Block,
    g: Gemm,
) {
    let t = thread_idx_x();
    let (row0, col0) = (block_idx_y() * BM, block_idx_x() * BN);
    let thread_row = (t / (BN / TN as u32)) * TM as u32;
    let thread_col = (t % (BN / TN as u32)) * TN as u32;
    let mut acc = [[0.0f32; TN]; TM];
    let fill = #[inline(always)]
    |stage: Filling<'_>, s: u32| {
        let k0 = s * BK;
        // Consecutive threads load consecutive elements of a tile row: coalesced.
        for q in 0..BM * BK / THREADS {
            let e = t + q * THREADS;
            // SAFETY: `e < BM BK` (`t < THREADS` by the launch contract, `q < BM BK / THREADS`):
            // inside the `A` tile, floats `0 .. BM BK` of the stage.
            unsafe { stage.at(e) }.store(g.a_or_zero(row0 + e / BK, k0 + e % BK));
        }
        for q in 0..BK * BN / THREADS {
            let e = t + q * THREADS;
            // SAFETY: `e < BK BN`, as for the `A` tile: inside the `B` tile, after `A`'s.
            unsafe { stage.at(BM * BK).add(e) }.store(g.b_or_zero(k0 + e / BN, col0 + e % BN));
        }
    };
    let compute = #[inline(always)]
    |stage: Ready<'_>| {
        // SAFETY: the stage's `A` tile, and its `B` tile after it.
        let (a_tile, b_tile) = unsafe { (stage.at(0), stage.at(BM * BK)) };
        // BK, TM, TN <= 8: the branches on them fold away.
        unroll!(d in 0..8 => {
            if d < BK as usize {
                let d = d as u32;
                let mut b = [0.0f32; TN];
                unroll!(j in 0..8 => {
                    if j < TN {
                        // SAFETY: `d < BK` and `thread_col + j < BN` (`t < THREADS`, `j < TN`):
                        // inside the `B` tile.
                        b[j] = unsafe { b_tile.add(d * BN + thread_col).add(j as u32) }.load();
                    }
                });
                unroll!(i in 0..8 => {
                    if i < TM {
                        // SAFETY: `thread_row + i < BM` (`t < THREADS`, `i < TM`) and `d < BK`:
                        // inside the `A` tile.
                        let a = unsafe { a_tile.add((thread_row + i as u32) * BK + d) }.load();
                        unroll!(j in 0..8 => {
                            if j < TN {
                                acc[i][j] = fma(a, b[j], acc[i][j]);
                            }
                        });
                    }
                });
            }
        });
    };
    // The `A` tile, then the `B` tile: `(BM + BN) BK` floats, a multiple of 4 (`BK` is 8).
    Ring::<1>::carve(block, (BM + BN) * BK).serial(g.k.div_ceil(BK), fill, compute);
    unroll!(i in 0..8 => {
        unroll!(j in 0..8 => {
            if i < TM && j < TN {
                g.store_c(row0 + thread_row + i as u32, col0 + thread_col + j as u32, acc[i][j]);
            }
        });
    });
}

kernel! {
/// Rung 2, 1D register blocking: each thread computes 8 results down one column of a `64 x 64`
/// tile, so every `B` value read from shared memory feeds 8 FMAs (rung 1 reads 2 shared floats
/// per FMA; this reads 1.125).
///
/// - Launch: block `512 x 1` threads, grid `(ceil(n / 64), ceil(m / 64))`.
/// - Shared memory: `(64 + 64) * 8 * 4 = 4096` bytes of dynamic shared memory.
/// - Memory level: shared tiles (`64 x 8` of `A`, `8 x 64` of `B`), 8 accumulators in registers.
/// - Buffers: as in the module doc of `sgemm`.
pub fn sgemm_2_register_1d(block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32) {
    register_blocked::<RUNG2_TILE, RUNG2_TILE, BK, RUNG2_TM, 1, RUNG2_THREADS>(block, Gemm::new(a, b, c, m, n, k))
}
}

kernel! {
/// Rung 3, 2D register blocking: each thread computes an `8 x 8` block of a `128 x 128` tile
/// from 8 `A` and 8 `B` values per step: 16 shared loads feed 64 FMAs.
///
/// - Launch: block `256 x 1` threads, grid `(ceil(n / 128), ceil(m / 128))`.
/// - Shared memory: `(128 + 128) * 8 * 4 = 8192` bytes of dynamic shared memory.
/// - Memory level: shared tiles (`128 x 8`, `8 x 128`), 64 accumulators in registers.
/// - Buffers: as in the module doc of `sgemm`.
pub fn sgemm_3_register_2d(block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32) {
    register_blocked::<TILE, TILE, BK, TM, TM, THREADS>(block, Gemm::new(a, b, c, m, n, k))
}
}
