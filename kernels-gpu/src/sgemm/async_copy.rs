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
use crate::device::{cp_async, cp_async_commit, cp_async_wait, sync_threads, thread_idx_x};

/// Shared-memory stages (the copies for step `s + 1` are in flight during step `s`'s FMAs) and
/// the pitch of the transposed `A` tile, rung 5's conflict-free one.
use memlab_contracts::sgemm::{A_PITCH_PADDED as A_PITCH, STAGES};

/// Where float `q` of the 4 at `(row, col ..)` of a `rows x cols` matrix at `base` comes from,
/// and how many bytes the copy reads: 4, or 0 outside the matrix (the source is then `base`,
/// never read but still a valid address).
///
/// # Safety
/// `base` holds the `rows x cols` matrix.
#[inline(always)]
unsafe fn source(base: *const f32, rows: u32, cols: u32, row: u32, col: u32, q: u32) -> (*const f32, u32) {
    if row < rows && col + q < cols { (unsafe { base.add((row * cols + col + q) as usize) }, 4) } else { (base, 0) }
}

impl Stage<A_PITCH> {
    /// Starts thread `t`'s copy of its 4 floats of `B` for the step at depth `k0` into
    /// [`Stage::b_slot`]: one 16-byte copy, or four 4-byte ones when `n` is not a multiple of 4;
    /// floats outside the matrix become zeros.
    ///
    /// # Safety
    /// Buffers as in the module doc of `sgemm`, 16-byte aligned; the stage is not being read.
    #[inline(always)]
    unsafe fn copy_b(&self, block: &Block, t: u32, k0: u32) {
        let g = &block.g;
        let (br, bc) = block.b_at(t, k0);
        let dst = self.b_slot(t);
        if block.interior(k0) {
            unsafe { cp_async::<16>(dst, g.b.add((br * g.n + bc) as usize), 16) };
        } else if g.n % 4 == 0 {
            // A 16-byte aligned chunk lies wholly inside or wholly outside the row.
            let (src, bytes) = unsafe { source(g.b, g.k, g.n, br, bc, 0) };
            unsafe { cp_async::<16>(dst, src, 4 * bytes) };
        } else {
            unroll!(q in 0..4 => {
                let q = q as u32;
                let (src, bytes) = unsafe { source(g.b, g.k, g.n, br, bc, q) };
                unsafe { cp_async::<4>(dst.add(q as usize), src, bytes) };
            });
        }
    }
}

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
/// # Safety
/// Buffers as in the module doc of `sgemm`, each 16-byte aligned.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn sgemm_7_async_copy(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    let t = thread_idx_x();
    let block = Block::new(Gemm { a, b, c, m, n, k });
    let place = Layout::Warp.place(t);
    let mut acc = [[0.0f32; 8]; 8];
    let steps = k.div_ceil(BK);
    // Step s is commit group s: the first STAGES - 1 go out now, empty ones past the last step,
    // so that the count of groups always matches the count of steps.
    for s in 0..STAGES - 1 {
        if s < steps {
            let stage = Stage::<A_PITCH>::nth(s);
            unsafe {
                stage.copy_b(&block, t, s * BK);
                stage.put_a(t, block.fetch_a(t, s * BK));
            }
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
        unsafe { sync_threads() };
        let (next, to) = (s + STAGES - 1, Stage::<A_PITCH>::nth(fill));
        let a_next = if next < steps {
            unsafe { to.copy_b(&block, t, next * BK) };
            Some(unsafe { block.fetch_a(t, next * BK) })
        } else {
            None
        };
        unsafe { Stage::<A_PITCH>::nth(read).multiply(place, &mut acc) };
        if let Some(a_next) = a_next {
            unsafe { to.put_a(t, a_next) };
        }
        cp_async_commit();
        fill = read;
        read = if read + 1 == STAGES { 0 } else { read + 1 };
    }
    unsafe { block.store(place, &acc) };
}
