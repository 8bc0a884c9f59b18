//! Transpose of dense row-major `f32` matrices of any size, for rows that are not whole
//! 32-byte sectors (`cols` or, for the transpose's output, `rows` not a multiple of 8), where
//! the lesson's kernels lose up to two thirds of their speed: a warp's 128-byte row segment
//! then straddles 5 sectors, two of them written in part by each of two warps (partial-sector
//! writes).
//!
//! [`transpose_aligned_stores`]: each output row's tiles are shifted by that row's
//!   misalignment, so every warp store covers whole sectors; only the sector where one output
//!   row ends and the next begins is shared. `transpose_padded` runs its body on such matrices.

use memlab_contracts::transpose_any as contract;

use crate::device::{Block, GlobalIn, GlobalOut, SharedTile, block_idx_x, kernel, thread_idx_x, thread_idx_y};

/// Tile edge of [`transpose_aligned_stores`], in elements ([`contract::TILE`]).
const TILE: u32 = contract::TILE;
/// Floats per 32-byte sector, the largest shift of an output row ([`contract::SKEW`]).
const SKEW: u32 = contract::SKEW;
/// Its staged tile: `STAGED_ROWS x TILE` floats, rows `PITCH` floats apart.
type Staged =
    SharedTile<f32, { contract::STAGED_ROWS as usize }, { contract::TILE as usize }, { contract::PITCH as usize }>;

kernel! {
    /// Transpose with sector-aligned stores: as `transpose_padded` (32 x 8 threads, a padded
    /// shared tile), but output row `y` (length `rows`) starts `e(y) = (y * rows) mod 8` floats
    /// past a sector boundary, so its tile `by` covers output columns `32 by - e(y) .. 32 by -
    /// e(y) + 32`: every warp store is 128 aligned bytes, 4 whole sectors. The block stages input
    /// rows `32 by - 8 .. 32 by + 32` (40 rows, the 8 before the tile for the shifted columns)
    /// of columns `32 bx ..+32`; a store reads its tile column at row `tx + 8 - e(y)`, bank
    /// `(tx + const) mod 32`: conflict-free.
    ///
    /// - Launch: block `32 x 8`, a one-dimensional grid of `ceil(cols / 32) x ceil((rows + m) /
    ///   32)` blocks ([`tile_block`]), `m` the largest shift ([`contract::max_shift`] of `rows`):
    ///   one more tile row when the shift pushes the last columns past a tile.
    /// - Shared memory: `40 * 33 * 4 = 5280` bytes of dynamic shared memory.
    /// - Memory level: global (reads coalesced, stores sector-aligned) and shared (conflict-free).
    /// - Buffers: `input` and `output` hold `rows * cols < 2^32` floats, not overlapping.
    pub fn transpose_aligned_stores(block: Block, input: GlobalIn<f32>, output: GlobalOut<f32>, rows: u32, cols: u32) {
        aligned_stores(block, input, output, rows, cols)
    }
}

/// The body of [`transpose_aligned_stores`], also `transpose_padded`'s path for output rows that
/// are not whole sectors: same block, grid and shared tile.
#[inline(always)]
pub(crate) fn aligned_stores(block: Block, input: GlobalIn<f32>, output: GlobalOut<f32>, rows: u32, cols: u32) {
    let (barrier, mut tile) = block.carve::<Staged>();
    let input = input.matrix(rows as usize, cols as usize);
    let mut output = output.matrix(cols as usize, rows as usize);
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let (bx, by) = tile_block(memlab_contracts::transpose::tiles(cols, 0, TILE));
    // Stage input rows 32 by - 8 + k (k < 40), columns 32 bx + tx. Rows before 0 are skipped:
    // only shifted columns below 0, never stored, would read them.
    // Loops of a constant trip count (5 and 4 steps of the block's 8 rows), unrolled by LLVM:
    // the `while k < 40` form left ptxas a rolled store loop, one store per trip (0.95x the
    // CUDA C++ twin, which nvcc unrolls by 4). The bound stays checked, so a taller block
    // than the contract's only does less.
    let col = bx * TILE + tx;
    for step in 0..contract::STAGED_ROWS / contract::BLOCK.1 {
        let k = ty + step * contract::BLOCK.1;
        let row = (by * TILE + k) as i64 - SKEW as i64;
        if k < contract::STAGED_ROWS && row >= 0 && (row as u32) < rows && col < cols {
            tile.set(k, tx, input.get(row as usize, col as usize));
        }
    }
    let tile = barrier.sync(tile);
    // Output row y's misalignment in floats, e(y) = (y rows) mod 8: its stores start on a
    // sector boundary. A thread's rows are 8 apart and 8 rows mod 8 = 0, so one e for all
    // four; the low 3 bits of the 32-bit product are those of the whole one.
    let e = misalignment(bx * TILE + ty, rows);
    let x = (by * TILE + tx) as i64 - e as i64;
    for step in 0..TILE / contract::BLOCK.1 {
        let j = ty + step * contract::BLOCK.1;
        let y = bx * TILE + j;
        if j < TILE && y < cols && x >= 0 && (x as u32) < rows {
            output.set(y as usize, x as usize, tile.get(tx + SKEW - e, j));
        }
    }
}

/// Row `r`'s misalignment in floats when rows are `len` floats: `(r * len) mod 8`, so its
/// column `-e` starts a sector. Rows 8 apart share it (`8 len mod 8 = 0`); the low 3 bits of
/// the 32-bit product are those of the whole one. Also `copy`'s and `transpose_vectorized`'s
/// shift (`transpose.rs`).
#[inline(always)]
pub(crate) fn misalignment(r: u32, len: u32) -> u32 {
    r.wrapping_mul(len) % SKEW
}

/// The tile `(column, row)` of this block in a one-dimensional grid of tiles, `across` tiles
/// per row of tiles, tile rows after tile rows (the order of a two-dimensional grid). One
/// dimension because grid y holds at most 65535 blocks and x `2^31 - 1` (CUDA C++ Programming
/// Guide, "Compute Capabilities", Table "Technical Specifications per Compute Capability"): a
/// matrix of more than `65535 * 32` rows has more tile rows than grid y allows, and every
/// `rows * cols < 2^32` has fewer than `2^28` tiles of `32 x 32`.
#[inline(always)]
pub(crate) fn tile_block(across: u32) -> (u32, u32) {
    let b = block_idx_x();
    (b % across, b / across)
}
