//! The race lesson: a tiled matmul with one barrier removed. Built only for `memlab
//! race-lesson`; no demo of `run-demos` launches it.
//!
//! On the safe API this bug does not compile (the tiles' phase is in their type: see
//! [`crate::matmul::matmul_tiled`] and `device-api/tests/ui/missing_barrier.rs`), so the lesson
//! keeps a raw-pointer kernel, to show what the GPU does when the check is bypassed. This is
//! the one lesson file allowed to hold `unsafe` (`host/tests/unsafe_count.rs`).

use memlab_contracts::matmul::TILE_32;

use crate::device::{block_idx_x, block_idx_y, dynamic_shared, fma, sync_threads, thread_idx_x, thread_idx_y};

/// [`crate::matmul::matmul_tiled_32`] without its second barrier, on raw pointers: deliberately
/// wrong.
///
/// In a `32 x 32` block, warp `w` is row `ty = w`; it stores row `w` of both shared tiles, and
/// every warp reads all of tile B (column `tx`, rows `0..32`). Without the barrier after the
/// multiply-adds, a warp that finishes step `s` early stores its row of step `s + 1`'s B tile
/// while slower warps still read row `w` of step `s`'s: a write-after-read hazard on shared
/// memory that `compute-sanitizer --tool racecheck` reports as an error, and that gives wrong
/// elements of `C` whenever the scheduler lets one warp run that far ahead (on the H200, 16-17% of
/// the elements at 2048^3, every run; measured). Tile A's row `w` is read by warp `w` alone, so
/// racecheck rates its hazard a warning. `k <= 32` (one step) has no race. The arithmetic is the
/// same as `matmul_tiled_32`'s, in the same order, so any bit that differs from it comes from the
/// race (`host/tests/race_ptx.rs` checks the PTX differs by the one barrier).
///
/// - Launch: block `32 x 32`, grid `(ceil(n / 32), ceil(m / 32))`.
/// - Shared memory: `2 * 32 * 32 * 4 = 8192` bytes of dynamic shared memory.
///
/// # Safety
/// Buffer sizes as for [`crate::matmul::matmul_naive`]. The result is undefined by design.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn matmul_tiled_32_missing_barrier(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    const T: usize = TILE_32 as usize;
    let tile_a = dynamic_shared::<f32>();
    let tile_b = unsafe { tile_a.add(T * T) };
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
    let row = block_idx_y() as usize * T + ty;
    let col = block_idx_x() as usize * T + tx;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let slot = ty * T + tx;
    let a_row = unsafe { tile_a.add(ty * T) };
    let b_col = unsafe { tile_b.add(tx) };
    let mut acc = 0.0f32;
    let mut k0 = 0;
    while k0 < k {
        let (ka, kb) = (k0 + tx, k0 + ty);
        unsafe {
            *tile_a.add(slot) = if row < m && ka < k { *a.add(row * k + ka) } else { 0.0 };
            *tile_b.add(slot) = if kb < k && col < n { *b.add(kb * n + col) } else { 0.0 };
            sync_threads();
            for i in 0..T {
                acc = fma(*a_row.add(i), *b_col.add(i * T), acc);
            }
            // The missing `sync_threads()`: the next step overwrites the tiles while other
            // warps may still be reading them.
        }
        k0 += T;
    }
    if row < m && col < n {
        unsafe { *c.add(row * n + col) = acc };
    }
}
