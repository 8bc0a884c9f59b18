//! Naive and tiled matmuls (`kernels-gpu/src/matmul.rs`, and the race lesson's broken tile).

use crate::tile_bytes;

/// Block edge of `matmul_naive`: `16 x 16` threads, one per element of `C`.
pub const NAIVE_BLOCK: u32 = 16;
/// Tile edge of `matmul_tiled_16`.
pub const TILE_16: u32 = 16;
/// Tile edge of `matmul_tiled_32` (and of `matmul_tiled_32_missing_barrier`).
pub const TILE_32: u32 = 32;

/// Dynamic shared bytes of the tiled matmul with tile edge `tile`: one `tile x tile` tile of `A`
/// and one of `B`. The block is `tile x tile` threads.
pub const fn tiled_smem_bytes(tile: u32) -> u32 {
    tile_bytes(tile, tile, 2)
}
