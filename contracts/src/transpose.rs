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

/// Tiles of edge `tile` across `len` elements and `extra` more (a shift): `ceil((len + extra) /
/// tile)`, in 64 bits so that `len + extra` does not wrap (a row of `u32::MAX` floats has a
/// shift of 7).
pub const fn tiles(len: u32, extra: u32, tile: u32) -> u32 {
    (len as u64 + extra as u64).div_ceil(tile as u64) as u32
}

/// Blocks of a one-dimensional grid of tiles covering `rows x cols` elements with tiles of edge
/// `tile` (`rows` and `cols` already including any shift): `ceil(cols / tile) * ceil(rows /
/// tile)`, tile rows after tile rows. Every kernel of `transpose.rs` and `transpose_any.rs`
/// decodes its tile from `blockIdx.x` this way: at most `2^28` blocks for a matrix of fewer than
/// `2^32` elements (at least one side is short when the other is long), so never past grid x's
/// `2^31 - 1`, where a grid of tile rows in y stops at 65535 (`65535 * 32` rows).
pub const fn grid_blocks(rows: u64, cols: u64, tile: u32) -> u64 {
    rows.div_ceil(tile as u64) * cols.div_ceil(tile as u64)
}

/// Row pitch of `transpose_tiled`'s shared tile, words: no padding (32-way conflicted column).
pub const TILED_PITCH: u32 = TILE;
/// Row pitch of `transpose_padded`'s shared tile, words: one pad word per row.
pub const PADDED_PITCH: u32 = TILE + 1;

/// Whether output rows of `rows` floats (the transposes' output is `cols x rows`) are whole
/// sectors. When they are not, `transpose_padded` and `transpose_vectorized` take their shifted
/// paths: each output row's tiles start at a sector boundary, as `transpose_aligned_stores`'.
pub const fn whole_sector_rows(rows: u32) -> bool {
    rows.is_multiple_of(SKEW)
}

/// Dynamic shared bytes of `transpose_padded` on a matrix of `rows` rows: its `32 x 33` tile
/// (4224), or on its shifted path `transpose_aligned_stores`' staged tile (5280).
pub const fn padded_smem_bytes(rows: u32) -> u32 {
    if whole_sector_rows(rows) { smem_bytes(TILE, PADDED_PITCH) } else { crate::transpose_any::smem_bytes() }
}

/// Tile edge of `transpose_vectorized`, elements.
pub const WIDE_TILE: u32 = 64;
/// Row pitch of its shared tile, words: one pad word per row.
pub const WIDE_PITCH: u32 = WIDE_TILE + 1;
/// Threads per block of `transpose_vectorized`: each thread moves 4 `float4` rows.
pub const WIDE_BLOCK: (u32, u32) = (16, 16);
/// Input rows `transpose_vectorized`'s shifted path stages: the tile and the `SKEW` rows before
/// it that a shifted output row reaches back to.
pub const WIDE_STAGED_ROWS: u32 = WIDE_TILE + SKEW;

/// Whether `transpose_vectorized` takes its aligned path on a `rows x cols` matrix: input rows
/// whole 16-byte vectors (`float4` loads) and output rows whole sectors. Otherwise it loads
/// scalars and shifts each output row's tiles to a sector boundary, so its `float4` stores stay
/// aligned and cover whole sectors.
pub const fn wide_aligned(rows: u32, cols: u32) -> bool {
    whole_sector_rows(rows) && cols.is_multiple_of(4)
}

/// Dynamic shared bytes of `transpose_vectorized` on a `rows x cols` matrix: `64 x 65` floats
/// (16640) on its aligned path, `72 x 65` (18720) on its shifted one.
pub const fn wide_smem_bytes(rows: u32, cols: u32) -> u32 {
    let staged = if wide_aligned(rows, cols) { WIDE_TILE } else { WIDE_STAGED_ROWS };
    tile_bytes(staged, WIDE_PITCH, 1)
}

/// Dynamic shared bytes of a square tile of edge `tile` with row pitch `pitch` words.
pub const fn smem_bytes(tile: u32, pitch: u32) -> u32 {
    tile_bytes(tile, pitch, 1)
}
