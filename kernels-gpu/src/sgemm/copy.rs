//! Tile copies from global to shared memory by `cp.async`, for rungs 8 and 9 (compiled for
//! `sm_80` and up): both operands go global -> shared without passing through registers, in
//! 16-byte chunks, each thread a fixed share of the tile's chunks.

use crate::device::gemm::{AsyncSource, Shared, block_barrier};
use crate::device::{cp_async_commit, cp_async_wait};

/// Starts thread `t`'s copies of the `rows x cols` tile of `src` at `(row0, col0)`: chunks `t`,
/// `t + threads`, .. of the tile's `rows cols / 4` (row-major, `cols / 4` per row), chunk
/// `(r, c)` going to `dst + place(r, c)` floats. Sizes are constants of the caller, so the loop
/// unrolls.
///
/// # Safety
///
/// `t < threads`, and for every chunk `(r, c)` of the tile (`r < rows`, `c < cols / 4`)
/// `dst + place(r, c)` is a 16-byte-aligned place inside a stage being written (invariants 2
/// and 3 of `device::gemm`).
#[inline(always)]
pub(super) unsafe fn copy_tile(
    src: &AsyncSource,
    dst: Shared,
    (rows, cols): (u32, u32),
    (row0, col0): (u32, u32),
    (t, threads): (u32, u32),
    place: impl Fn(u32, u32) -> u32,
) {
    for i in 0..rows * cols / 4 / threads {
        let chunk = t + i * threads;
        let (r, c) = (chunk / (cols / 4), chunk % (cols / 4));
        // SAFETY: `chunk < rows cols / 4` (`t < threads`), so `(r, c)` is a chunk of the tile:
        // the caller's word for its place.
        src.copy_chunk(unsafe { dst.add(place(r, c)) }, row0 + r, col0 + 4 * c);
    }
}

/// Runs `steps` steps of a product through `STAGES` shared-memory stages filled by `cp.async`:
/// `fill(stage, step)` starts this thread's copies for `step` into `stage`, `compute(stage)`
/// reads it. The copies for step `s + STAGES - 1` are issued before step `s`'s arithmetic, so
/// `STAGES - 1` steps of loads are in flight while the FMAs or MMAs run.
///
/// Called by every thread of the block (it holds barriers); `fill` only writes the stage it is
/// given, `compute` only reads (invariants 3 and 4 of `device::gemm`).
#[inline(always)]
pub(super) fn pipeline<const STAGES: u32>(steps: u32, mut fill: impl FnMut(u32, u32), mut compute: impl FnMut(u32)) {
    const { assert!(STAGES >= 2) };
    // Step s is commit group s: the first STAGES - 1 go out now, empty ones past the last step,
    // so that the count of groups always matches the count of steps.
    for s in 0..STAGES - 1 {
        if s < steps {
            fill(s, s);
        }
        cp_async_commit();
    }
    let (mut read, mut write) = (0, STAGES - 1);
    for s in 0..steps {
        // Groups 0..=s are done once at most STAGES - 2 newer ones are pending; after the
        // barrier every thread's copies for step s are visible, and every thread has finished
        // step s - 1, whose stage is filled next.
        wait_pending(STAGES - 2);
        block_barrier();
        if s + STAGES - 1 < steps {
            fill(write, s + STAGES - 1);
        }
        cp_async_commit();
        compute(read);
        write = read;
        read = if read + 1 == STAGES { 0 } else { read + 1 };
    }
}

/// [`cp_async_wait`] with a count known only after monomorphisation (a constant there, so the
/// match folds away). Counts above 3 wait for more than needed, which is correct but overlaps
/// less.
#[inline(always)]
fn wait_pending(n: u32) {
    match n {
        0 => cp_async_wait::<0>(),
        1 => cp_async_wait::<1>(),
        2 => cp_async_wait::<2>(),
        _ => cp_async_wait::<3>(),
    }
}
