//! The LSU kernels other lessons time their own paths against, below them all: the transposes'
//! `copy`, the ceiling of a kernel that reads and writes each element once (the TMA lesson's
//! copies and the peer lesson's link), and `transpose_vectorized`, the fastest LSU transpose
//! (beside the TMA transpose). Their launch shapes, and the tile grid every transpose's shape is
//! built on; the transpose lesson measures them with the rest of its kernels.

use memlab_contracts::transpose::{BLOCK, TILE, WIDE_BLOCK, WIDE_TILE, grid_blocks, max_shift, wide_smem_bytes};
use memlab_contracts::transpose_thin as thin;

use crate::gpu::launch::LaunchShape;

/// The shape of a kernel that moves one `tile x tile` tile per block of a `rows x cols` input:
/// a one-dimensional grid of [`grid_blocks`] blocks, which the kernels decode tile rows after
/// tile rows, so a tall matrix is not held to grid y's limit (a count past `u32::MAX` stays
/// past the device's grid x limit, which the launch then names).
pub fn tiles(rows: impl Into<u64>, cols: impl Into<u64>, tile: u32, block: (u32, u32), smem: u32) -> LaunchShape {
    let blocks = u32::try_from(grid_blocks(rows.into(), cols.into(), tile)).unwrap_or(u32::MAX);
    LaunchShape { grid: (blocks, 1), block, smem_bytes: smem }
}

/// `len` and the largest shift of a row of `len` floats ([`max_shift`]): what a shifting
/// kernel's grid covers, in 64 bits (a matrix of `u32::MAX - 2` rows and one column is in range).
pub fn with_shift(len: u32) -> u64 {
    u64::from(len) + u64::from(max_shift(len))
}

/// The launch shapes of the baselines, one function per kernel entry (its typed launch, in
/// [`crate::launches`], takes the shape first).
pub mod shapes {
    use super::*;

    /// `copy`: the bandwidth ceiling of the transposes. `input` and `output` are `rows x cols`
    /// f32; block `32 x 8`, one block per `32 x 32` tile, no shared memory; each row's tiles
    /// shifted back to a sector boundary, so the grid covers `max_shift(cols)` more columns. On
    /// a thin matrix ([`thin::thin`]) one block per [`thin::COPY_CHUNK`] floats of the matrix as
    /// one run.
    pub fn copy(rows: u32, cols: u32) -> LaunchShape {
        if thin::thin(rows, cols) {
            LaunchShape { grid: (thin::copy_blocks(rows, cols), 1), block: BLOCK, smem_bytes: 0 }
        } else {
            tiles(rows, with_shift(cols), TILE, BLOCK, 0)
        }
    }

    /// `transpose_vectorized`: block `16 x 16`, one block per `64 x 64` tile, a `64 x 65`
    /// shared tile (16640 B; `72 x 65`, 18720 B, and `max_shift(rows)` more rows of tiles on its
    /// shifted path); buffers 16-byte aligned (every device allocation is).
    pub fn transpose_vectorized(rows: u32, cols: u32) -> LaunchShape {
        tiles(with_shift(rows), cols, WIDE_TILE, WIDE_BLOCK, wide_smem_bytes(rows, cols))
    }
}
