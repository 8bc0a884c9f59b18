//! Tile copies from global to shared memory by `cp.async`, for rungs 8 and 9 (compiled for
//! `sm_80` and up): both operands go global -> shared without passing through registers, in
//! 16-byte chunks, each thread a fixed share of the tile's chunks.

use crate::device::gemm::AsyncSource;
use crate::device::ring::{AsyncWrite, Place};

/// Starts thread `t`'s copies of the `rows x cols` tile of `src` at `(row0, col0)` into the
/// tile at `dst`, a place of a stage the ring gives to be written: chunks `t`, `t + threads`,
/// .. of the tile's `rows cols / 4` (row-major, `cols / 4` per row), chunk `(r, c)` going to
/// `dst + place(r, c)` floats. Sizes are constants of the caller, so the loop unrolls.
///
/// # Safety
///
/// `t < threads`, and for every chunk `(r, c)` of the tile (`r < rows`, `c < cols / 4`) the 4
/// floats from `dst + place(r, c)` lie inside the stage, 16-byte aligned.
#[inline(always)]
pub(super) unsafe fn copy_tile(
    src: &AsyncSource,
    dst: Place<'_, AsyncWrite>,
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
