//! Rung 7, for cc 8.0 and later (compiled only into PTX for `sm_80` and up): rung 6 with the
//! `B` tile copied from global to shared memory by `cp.async`, without passing through
//! registers.
//!
//! The stages are rung 6's (`A` transposed with pitch 132, then `B`), and so are the thread
//! layout and the FMAs. A copy moves contiguous bytes, so only `B`, stored as it lies in memory,
//! can take one: thread `t` copies its 4 floats of `B` (row `t / 32`, columns `4 (t % 32) ..`)
//! as one 16-byte copy (four 4-byte ones when `n` is not a multiple of 4), floats past an edge
//! zero-filled by the copy itself. `A` still goes through registers, rung 6's 128-bit load and
//! 4 transposing stores: copying it would take four 4-byte copies per thread per step, and
//! measured on the H200 that costs more than it saves (see [`sgemm_7_async_copy`]).

use super::Gemm;
use super::vector::{BK, BlockTile, Layout, Stage};
use crate::device::ring::{AsyncWrite, Filling, Ring};
use crate::device::{GlobalIn, GlobalOut, kernel, thread_idx_x};

/// Shared-memory stages (the copies for step `s + 1` are in flight during step `s`'s FMAs) and
/// the pitch of the transposed `A` tile, rung 5's conflict-free one.
use memlab_contracts::sgemm::{A_PITCH_PADDED as A_PITCH, STAGES};

/// Starts thread `t`'s copy of its 4 floats of `B` for the step at depth `k0` into
/// [`Stage::b_slot`] of `stage`, which the ring gives to be written: one 16-byte copy, or four
/// 4-byte ones when `n` is not a multiple of 4; floats outside the matrix become zeros.
#[inline(always)]
fn copy_b(stage: &Filling<'_, AsyncWrite>, tile: &BlockTile, t: u32, k0: u32) {
    let (br, bc) = tile.b_at(t, k0);
    let (src, dst) = (tile.g.b_source(), Stage::<A_PITCH>::b_slot(stage, t));
    if tile.interior(k0) {
        // SAFETY: interior step (`BlockTile::interior`: the tile inside `C`, `n` a multiple of 4,
        // `k0 + BK <= k`), `t < 256` (the caller's `thread_idx_x()`): `br < k0 + BK <= k`,
        // `bc + 4 <= col0 + TILE <= n`, `bc` a multiple of 4.
        unsafe { src.copy_chunk_inside(dst, br, bc) };
    } else {
        src.copy_chunk(dst, br, bc);
    }
}

kernel! {
/// Rung 7: rung 6 (tile, results per thread, warp tiling, conflict-free layout, two stages)
/// with `B`'s tile copied global to shared by `cp.async`: no staging registers and no shared
/// store for `B` (ptxas still allocates 127 registers, rung 6 126); `A`'s tile still passes
/// through registers to be transposed.
///
/// On the H200 it is no faster than rung 6 (measured, 4096^3: 42.9 against 43.7 TFLOP/s): the
/// kernel is bound by its FMAs and shared loads, not by the path from global memory. Copying
/// `A` too, by four 4-byte copies per thread per step into a 3-stage pipeline, ran at 38: the
/// copies wait in the queue the shared loads use (ncu: with the copies in one burst, warps
/// stalled on "MIO throttle" 40 times as long as in rung 6).
///
/// - Launch: block `256 x 1` threads, grid `(ceil(n / 128), ceil(m / 128))`.
/// - Shared memory: `2 * 8 * (132 + 128) * 4 = 16640` bytes of dynamic shared memory.
/// - Memory level: `B` global to shared without registers (`LDGSTS` in SASS), `A` through 4
///   registers, 64 accumulators in registers. Needs cc 8.0 (PTX ISA, "cp.async").
///
/// - Buffers: as in the module doc of `sgemm`, each 16-byte aligned.
pub fn sgemm_7_async_copy(block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32) {
    let t = thread_idx_x();
    let tile = BlockTile::new(Gemm::new(a, b, c, m, n, k));
    let place = Layout::Warp.place(t);
    let mut acc = [[0.0f32; 8]; 8];
    let ring = Ring::<STAGES>::carve(block, Stage::<A_PITCH>::FLOATS);
    let first = #[inline(always)] |stage: &Filling<'_, AsyncWrite>, s: u32| {
        copy_b(stage, &tile, t, s * BK);
        Stage::<A_PITCH>::put_a(stage, t, tile.fetch_a(t, s * BK));
    };
    ring.pipeline_steps(k.div_ceil(BK), first, #[inline(always)] |next, ready, s| {
        // The next stage's `B` copy and `A` loads go out before the FMAs; `A`'s stores after.
        let next = next.map(#[inline(always)] |stage| {
            let k0 = (s + STAGES - 1) * BK;
            copy_b(&stage, &tile, t, k0);
            (tile.fetch_a(t, k0), stage)
        });
        Stage::<A_PITCH>::multiply(&ready, place, &mut acc);
        if let Some((a_next, stage)) = next {
            Stage::<A_PITCH>::put_a(&stage, t, a_next);
        }
    });
    tile.store(place, &acc);
}
}
