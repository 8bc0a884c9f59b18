//! Transposes (`kernels-gpu/src/transpose.rs`): `copy`, `transpose_naive`, `transpose_tiled`,
//! `transpose_padded` share one block shape and one tile per block (`copy`'s grid may gain a
//! column of tiles for its shift); `transpose_vectorized` has its own.

use crate::tile_bytes;

/// Tile edge of the 32x32 kernels, elements; one block moves one `TILE x TILE` tile.
pub const TILE: u32 = 32;
/// Thread rows per block of the 32x32 kernels; each thread moves `TILE / BLOCK_ROWS` elements.
pub const BLOCK_ROWS: u32 = 8;
/// Threads per block of the 32x32 kernels: `TILE x BLOCK_ROWS`.
pub const BLOCK: (u32, u32) = (TILE, BLOCK_ROWS);
/// Floats per 32-byte sector. `copy` and `transpose_aligned_stores` shift a row's tiles back by that
/// row's misalignment, `(r * len) mod SKEW` floats for row `r` of `len` floats.
pub const SKEW: u32 = 8;

/// The largest shift of a row of `len` floats, `SKEW - gcd(len, SKEW)` (0 for whole-sector
/// rows): the columns a shifting kernel's grid covers beyond `len`.
pub const fn max_shift(len: u32) -> u32 {
    let (zeros, most) = (len.trailing_zeros(), SKEW.trailing_zeros());
    SKEW - (1 << if zeros < most { zeros } else { most })
}

/// Row pitch of `transpose_tiled`'s shared tile, words: no padding (32-way conflicted column).
pub const TILED_PITCH: u32 = TILE;
/// Row pitch of `transpose_padded`'s shared tile, words: one pad word per row.
pub const PADDED_PITCH: u32 = TILE + 1;

/// Tile edge of `transpose_vectorized`, elements.
pub const WIDE_TILE: u32 = 64;
/// Row pitch of its shared tile, words: one pad word per row.
pub const WIDE_PITCH: u32 = WIDE_TILE + 1;
/// Threads per block of `transpose_vectorized`: each thread moves 4 `float4` rows.
pub const WIDE_BLOCK: (u32, u32) = (16, 16);

/// Dynamic shared bytes of a square tile of edge `tile` with row pitch `pitch` words.
pub const fn smem_bytes(tile: u32, pitch: u32) -> u32 {
    tile_bytes(tile, pitch, 1)
}
