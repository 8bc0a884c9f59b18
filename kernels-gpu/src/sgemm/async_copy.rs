//! Rung 7, for cc 8.0 and later (compiled only into PTX for `sm_80` and up): rung 6 with the
//! tiles copied from global to shared memory by `cp.async`, without passing through registers,
//! in a pipeline of [`STAGES`] shared stages.
//!
//! The stages are rung 6's (`A` transposed with pitch 132, then `B`), and so are the thread
//! layout and the FMAs. Thread `t` copies the 4 floats of `A` at row `t / 2`, columns
//! `4 (t % 2) ..` one float at a time, each to its transposed place (a copy moves contiguous
//! bytes, so transposing takes 4-byte copies), and the 4 floats of `B` at row `t / 32`, columns
//! `4 (t % 32) ..` as one 16-byte copy (four 4-byte ones when `n` is not a multiple of 4).
//! Floats past an edge are zero-filled by the copies themselves.

use super::Gemm;
use super::vector::{BK, Block, Layout, Stage, TILE};
use crate::device::{cp_async, cp_async_commit, cp_async_wait, sync_threads, thread_idx_x};

/// Shared-memory stages: copies for the next `STAGES - 1` steps are in flight while one step's
/// FMAs run.
const STAGES: u32 = 3;
/// Pitch of the transposed `A` tile, rung 5's conflict-free one.
const A_PITCH: u32 = 132;

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

/// Whether the step at depth `k0` of `block` lies inside both matrices with 16-byte aligned
/// rows ([`Block::vector`] and `k0 + BK <= k`), where copies need no bounds checks.
#[inline(always)]
fn interior(block: &Block, k0: u32) -> bool {
    block.vector && k0 + BK <= block.g.k
}

impl Stage<A_PITCH> {
    /// Starts piece `piece` (`0..5`) of thread `t`'s copies for an [`interior`] step at depth
    /// `k0`: pieces 0 to 3 are the 4 floats of `A`, each to its transposed place; piece 4 is
    /// the 16 bytes of `B`. No bounds to check.
    ///
    /// # Safety
    /// As above; buffers as in the module doc of `sgemm`; the stage is not being read.
    #[inline(always)]
    unsafe fn copy_interior(&self, block: &Block, t: u32, k0: u32, piece: u32) {
        let g = &block.g;
        if piece < 4 {
            let src = unsafe { g.a.add(((block.row0 + t / 2) * g.k + k0 + 4 * (t % 2) + piece) as usize) };
            unsafe { cp_async::<4>(self.a.add(((4 * (t % 2) + piece) * A_PITCH + t / 2) as usize), src, 4) };
        } else {
            let src = unsafe { g.b.add(((k0 + t / 32) * g.n + block.col0 + 4 * (t % 32)) as usize) };
            unsafe { cp_async::<16>(self.b.add(((t / 32) * TILE + 4 * (t % 32)) as usize), src, 16) };
        }
    }

    /// Starts all of thread `t`'s copies for the step at depth `k0`, checking bounds: floats
    /// outside a matrix become zeros.
    ///
    /// # Safety
    /// Buffers as in the module doc of `sgemm`, 16-byte aligned; the stage is not being read.
    #[inline(always)]
    unsafe fn copy_checked(&self, block: &Block, t: u32, k0: u32) {
        let g = &block.g;
        let (ar, ac) = (block.row0 + t / 2, k0 + 4 * (t % 2));
        let (br, bc) = (k0 + t / 32, block.col0 + 4 * (t % 32));
        let b_dst = unsafe { self.b.add(((t / 32) * TILE + 4 * (t % 32)) as usize) };
        unroll!(q in 0..4 => {
            let q = q as u32;
            let (src, bytes) = unsafe { source(g.a, g.m, g.k, ar, ac, q) };
            unsafe { cp_async::<4>(self.a.add(((4 * (t % 2) + q) * A_PITCH + t / 2) as usize), src, bytes) };
        });
        if g.n % 4 == 0 {
            // A 16-byte aligned chunk lies wholly inside or wholly outside the row.
            let (src, bytes) = unsafe { source(g.b, g.k, g.n, br, bc, 0) };
            unsafe { cp_async::<16>(b_dst, src, 4 * bytes) };
        } else {
            unroll!(q in 0..4 => {
                let q = q as u32;
                let (src, bytes) = unsafe { source(g.b, g.k, g.n, br, bc, q) };
                unsafe { cp_async::<4>(b_dst.add(q as usize), src, bytes) };
            });
        }
    }

    /// Starts all of thread `t`'s copies for the step at depth `k0`.
    ///
    /// # Safety
    /// As for [`Stage::copy_checked`].
    #[inline(always)]
    unsafe fn copy_async(&self, block: &Block, t: u32, k0: u32) {
        if interior(block, k0) {
            for piece in 0..5 {
                unsafe { self.copy_interior(block, t, k0, piece) };
            }
        } else {
            unsafe { self.copy_checked(block, t, k0) };
        }
    }
}

/// Rung 7: rung 6 (tile, results per thread, warp tiling, conflict-free layout) with the tiles
/// copied global to shared by `cp.async` in a 3-stage pipeline: no staging registers, and the
/// copies of the next two steps in flight during each step's 512 FMAs.
///
/// On the H200 it is slower than rung 6 (measured: 38 against 44 TFLOP/s at 4096^3): the
/// transposed `A` tile takes four 4-byte copies per thread per step where rung 6 has one 128-bit
/// load, and copies share the shared loads' queue (ncu: with the copies in one burst, warps
/// stalled on "MIO throttle" 40 times as long as in rung 6, and it ran at 32 TFLOP/s).
///
/// - Launch: block `256 x 1` threads, grid `(ceil(n / 128), ceil(m / 128))`.
/// - Shared memory: `3 * 8 * (132 + 128) * 4 = 24960` bytes of dynamic shared memory.
/// - Memory level: global to shared without registers (`LDGSTS` in SASS), 64 accumulators in
///   registers. Needs cc 8.0 (PTX ISA, "cp.async").
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
            unsafe { Stage::<A_PITCH>::nth(s).copy_async(&block, t, s * BK) };
        }
        cp_async_commit();
    }
    // The stage step s reads, and the one its copies for step s + STAGES - 1 fill: the one
    // read in step s - 1.
    let (mut read, mut fill) = (0, STAGES - 1);
    for s in 0..steps {
        // Groups 0..=s are done once at most STAGES - 2 newer ones are pending; after the
        // barrier every thread's copies for step s are visible, and every thread has finished
        // step s - 1, whose stage the next copies overwrite.
        cp_async_wait::<{ STAGES - 2 }>();
        unsafe { sync_threads() };
        let (next, to) = (s + STAGES - 1, Stage::<A_PITCH>::nth(fill));
        let interior = next < steps && block.vector && (next + 1) * BK <= k;
        if next < steps && !interior {
            unsafe { to.copy_checked(&block, t, next * BK) };
        }
        // Interior copies go out one per depth, among the FMAs: a burst of them would fill
        // the queue the shared loads wait in (ncu: stalls on "MIO throttle").
        let copy_piece = |d: u32| {
            if interior && d < 5 {
                unsafe { to.copy_interior(&block, t, next * BK, d) };
            }
        };
        unsafe { Stage::<A_PITCH>::nth(read).multiply_between(place, &mut acc, copy_piece) };
        cp_async_commit();
        fill = read;
        read = if read + 1 == STAGES { 0 } else { read + 1 };
    }
    unsafe { block.store(place, &acc) };
}
