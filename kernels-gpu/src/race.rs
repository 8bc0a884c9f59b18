//! The race lesson: a tiled matmul with one barrier removed. Built only for `memlab
//! race-lesson`; no demo of `run-demos` launches it.

use memlab_contracts::matmul::TILE_32;

use crate::matmul::matmul_tiled;

/// [`crate::matmul::matmul_tiled_32`] without its second `sync_threads()`: deliberately wrong.
///
/// In a `32 x 32` block, warp `w` is row `ty = w`; it stores row `w` of both shared tiles, and
/// every warp reads all of tile B (column `tx`, rows `0..32`). Without the barrier after the
/// multiply-adds, a warp that finishes step `s` early stores its row of step `s + 1`'s B tile
/// while slower warps still read row `w` of step `s`'s: a write-after-read hazard on shared
/// memory that `compute-sanitizer --tool racecheck` reports as an error, and that gives wrong
/// elements of `C` whenever the scheduler lets one warp run that far ahead (on the H200, 16-17% of
/// the elements at 2048^3, every run; measured). Tile A's row `w` is read by warp `w` alone, so
/// racecheck rates its hazard a warning. `k <= 32` (one step) has no race. The arithmetic is the same as `matmul_tiled_32`'s, in the same order, so any bit that
/// differs from it comes from the race.
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
    unsafe { matmul_tiled::<{ TILE_32 as usize }, false>(a, b, c, m, n, k) }
}
