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
use super::vector::{BK, Block, Layout, Stage};
use crate::device::gemm::block_barrier;
use crate::device::{GlobalIn, GlobalOut, cp_async_commit, cp_async_wait, kernel, thread_idx_x};

/// Shared-memory stages (the copies for step `s + 1` are in flight during step `s`'s FMAs) and
/// the pitch of the transposed `A` tile, rung 5's conflict-free one.
use memlab_contracts::sgemm::{A_PITCH_PADDED as A_PITCH, STAGES};

impl Stage<A_PITCH> {
    /// Starts thread `t`'s copy of its 4 floats of `B` for the step at depth `k0` into
    /// [`Stage::b_slot`]: one 16-byte copy, or four 4-byte ones when `n` is not a multiple of 4;
    /// floats outside the matrix become zeros. The stage is not being read (invariant 3 of
    /// `device::gemm`: the loop of [`sgemm_7_async_copy`] fills the stage read one step before,
    /// after the barrier that ends that read).
    #[inline(always)]
    fn copy_b(&self, block: &Block, t: u32, k0: u32) {
        let (br, bc) = block.b_at(t, k0);
        let (src, dst) = (block.g.b_source(), self.b_slot(t));
        if block.interior(k0) {
            // SAFETY: interior step (`Block::interior`: the tile inside `C`, `n` a multiple of 4,
            // `k0 + BK <= k`), `t < 256` (the caller's `thread_idx_x()`): `br < k0 + BK <= k`,
            // `bc + 4 <= col0 + TILE <= n`, `bc` a multiple of 4; `dst` is this thread's 16-byte
            // slot of a stage being written (`Stage::b_slot`, the loop's phases).
            unsafe { src.copy_chunk_inside(dst, br, bc) };
        } else {
            src.copy_chunk(dst, br, bc);
        }
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
pub fn sgemm_7_async_copy(a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32) {
    let t = thread_idx_x();
    let block = Block::new(Gemm::new(a, b, c, m, n, k));
    let place = Layout::Warp.place(t);
    let mut acc = [[0.0f32; 8]; 8];
    let steps = k.div_ceil(BK);
    // Step s is commit group s: the first STAGES - 1 go out now, empty ones past the last step,
    // so that the count of groups always matches the count of steps.
    for s in 0..STAGES - 1 {
        if s < steps {
            // SAFETY: stage `s < STAGES - 1` of the launch's `STAGES`, filled before any read;
            // the barrier after its group's wait publishes it.
            let stage = unsafe { Stage::<A_PITCH>::nth(s) };
            stage.copy_b(&block, t, s * BK);
            stage.put_a(t, block.fetch_a(t, s * BK));
        }
        cp_async_commit();
    }
    // The stage step s reads, and the one filled for step s + STAGES - 1: the one read in
    // step s - 1.
    let (mut read, mut fill) = (0, STAGES - 1);
    for s in 0..steps {
        // Groups 0..=s are done once at most STAGES - 2 newer ones are pending; after the
        // barrier every thread's copies and stores for step s are visible, and every thread
        // has finished step s - 1, whose stage is filled next.
        cp_async_wait::<{ STAGES - 2 }>();
        block_barrier();
        // SAFETY: `fill < STAGES` (a ring index), the stage read in step s - 1, which every
        // thread finished before the barrier above; published after a later wait and barrier.
        let (next, to) = (s + STAGES - 1, unsafe { Stage::<A_PITCH>::nth(fill) });
        let a_next = if next < steps {
            to.copy_b(&block, t, next * BK);
            Some(block.fetch_a(t, next * BK))
        } else {
            None
        };
        // SAFETY: `read < STAGES` (a ring index), the stage of step s, published by the wait
        // and barrier above.
        unsafe { Stage::<A_PITCH>::nth(read) }.multiply(place, &mut acc);
        if let Some(a_next) = a_next {
            to.put_a(t, a_next);
        }
        cp_async_commit();
        fill = read;
        read = if read + 1 == STAGES { 0 } else { read + 1 };
    }
    block.store(place, &acc);
}
}
