//! Launch contract of `kernels-gpu/src/transpose_any.rs`: transpose of dense matrices
//! whose rows are not whole 32-byte sectors.

use crate::tile_bytes;

/// Floats per 32-byte sector: `transpose_aligned_stores` shifts each output row's tiles by
/// that row's misalignment, at most `SKEW - 1` floats.
pub use crate::transpose::SKEW;
/// Tile edge of `transpose_aligned_stores`, as the 32 x 32 transposes'.
pub use crate::transpose::TILE;
/// Input rows it stages: the tile and the `SKEW` rows before it that a shifted output row may
/// reach back to.
pub const STAGED_ROWS: u32 = TILE + SKEW;
/// Row pitch of its shared tile, in floats: one pad word, so a column read is conflict-free
/// (`transpose_padded`'s, which takes this kernel's body on rows that are not whole sectors).
pub use crate::transpose::PADDED_PITCH as PITCH;
/// Block of `transpose_aligned_stores`, as the 32 x 8 transposes.
pub const BLOCK: (u32, u32) = (TILE, 8);

/// Dynamic shared bytes of `transpose_aligned_stores`: `STAGED_ROWS x PITCH` floats (5280).
pub const fn smem_bytes() -> u32 {
    tile_bytes(STAGED_ROWS, PITCH, 1)
}
