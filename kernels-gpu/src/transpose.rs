//! Shared memory and bank conflicts: matrix transpose, after NVIDIA's "An Efficient Matrix
//! Transpose in CUDA C/C++" ladder (copy / naive / tiled / padded).
//!
//! `input` is `rows x cols`, `output` is `cols x rows` (for `copy`: `rows x cols`), row-major
//! `f32`. Every kernel here but [`transpose_vectorized`] is launched with the same shape: block
//! `32 x 8` threads, one block per `32 x 32` tile, `ceil(cols / 32) x ceil(rows / 32)` tiles
//! (`copy`'s may gain a column of tiles for its shift, and [`transpose_padded`]'s, on rows that
//! are not whole sectors, a row of tiles for its: `ceil((rows + max_shift(rows)) / 32)`, with
//! 5280 bytes of shared memory) in a one-dimensional grid, tile rows after tile rows
//! ([`tile_block`](crate::transpose_any::tile_block)); each thread moves 4 elements, rows `ty,
//! ty + 8, ty + 16, ty + 24` of its tile. Any `rows, cols >= 1` with `rows * cols < 2^32` works
//! (guarded accesses).

use memlab_contracts::transpose as contract;

use crate::device::{Block, GlobalIn, GlobalOut, SharedTile, kernel, thread_idx_x, thread_idx_y};
use crate::transpose_any::tile_block;
use memlab_device_api::global::{Matrix, ReadWrite, Slice};

/// Tile edge, in elements ([`contract::TILE`]).
const TILE: usize = contract::TILE as usize;
/// Thread rows per block; each thread handles `TILE / BLOCK_ROWS` elements.
const BLOCK_ROWS: usize = contract::BLOCK_ROWS as usize;

/// This thread's column and first row inside tile `(bx, by)`.
#[inline(always)]
fn tile_origin(bx: u32, by: u32) -> (usize, usize) {
    (bx as usize * TILE + thread_idx_x() as usize, by as usize * TILE + thread_idx_y() as usize)
}

/// Calls `f(x, y)` for the 4 elements this thread owns in the tile whose origin is given by
/// [`tile_origin`], skipping those outside a `rows x cols` matrix.
#[inline(always)]
fn for_tile_rows(x: usize, y: usize, rows: usize, cols: usize, mut f: impl FnMut(usize, usize, usize)) {
    for j in (0..TILE).step_by(BLOCK_ROWS) {
        if x < cols && y + j < rows {
            f(x, y + j, j);
        }
    }
}

/// Rows of a tile one thread moves (`TILE / BLOCK_ROWS`).
const PER_THREAD: usize = TILE / BLOCK_ROWS;

/// Loads this thread's 4 elements of the tile at `(x, y)` of `input`, all before any store:
/// the output may alias the input as far as the compiler knows, so a load after a store would
/// wait for it and leave one load in flight per thread instead of four.
#[inline(always)]
fn load_tile_rows(input: &Matrix<f32>, x: usize, y: usize) -> [f32; PER_THREAD] {
    let mut v = [0.0; PER_THREAD];
    for_tile_rows(x, y, input.rows(), input.cols(), |x, y, j| v[j / BLOCK_ROWS] = input.get(y, x));
    v
}
// ANCHOR: copy_and_naive
/// Moves this thread's 4 elements of its tile from `input (y, x)` to `output dest(x, y)`
/// through registers: the body of [`copy`] and [`transpose_naive`]. `output` is `rows x cols`
/// for the copy, `cols x rows` for the transpose. The tile's columns start `shift` before the
/// block's: `shift` must be the same for the thread's 4 rows (they are 8 apart). `(bx, by)` is
/// the block's tile.
#[inline(always)]
fn move_via_registers(
    input: Matrix<f32>,
    mut output: Matrix<f32, ReadWrite>,
    (bx, by): (u32, u32),
    shift: u32,
    dest: impl Fn(usize, usize) -> (usize, usize),
) {
    let (x, y) = tile_origin(bx, by);
    // Below column 0 the index wraps past `cols`, so the guards skip it.
    let x = (x as u32).wrapping_sub(shift) as usize;
    let v = load_tile_rows(&input, x, y);
    for_tile_rows(x, y, input.rows(), input.cols(), |x, y, j| {
        let (r, c) = dest(x, y);
        output.set(r, c, v[j / BLOCK_ROWS]);
    });
}

kernel! {
    /// The bandwidth ceiling of the transposes: same block shape, same 4 elements per thread,
    /// coalesced reads and coalesced writes. Row `r` starts `e = (r * cols) mod 8` floats into a
    /// 32-byte sector, so its tiles are shifted back by `e` columns: each warp then loads and
    /// stores 128 aligned bytes, 4 whole sectors, whatever the row length (unshifted, a row
    /// that is not whole sectors makes every warp span 5, two of them written in part).
    ///
    /// On a thin matrix (a side of at most 16, [`thin`](memlab_contracts::transpose_thin::thin))
    /// a tile would hold few rows or columns, so the kernel copies the matrix as one run instead,
    /// 4096 floats per block in `float4`s (`transpose_thin.rs`): at 3x1000000 the tile grid
    /// reached half of memcpy (measured on the H200).
    ///
    /// - Launch: block `32 x 8`, a one-dimensional grid of `ceil((cols + m) / 32) x ceil(rows /
    ///   32)` blocks ([`contract::grid_blocks`]), `m` the largest shift ([`contract::max_shift`]
    ///   of `cols`: 0 when `cols` is a multiple of 8); on a thin matrix `ceil(rows * cols /
    ///   4096)` ([`copy_blocks`](memlab_contracts::transpose_thin::copy_blocks)).
    /// - Shared memory: none. Memory level: global, fully coalesced (a warp moves one 128-byte row).
    /// - Buffers: `input` and `output` hold `rows * cols < 2^32` floats, 16-byte aligned, and do
    ///   not overlap.
    pub fn copy(input: GlobalIn<f32>, output: GlobalOut<f32>, rows: u32, cols: u32) {
        if memlab_contracts::transpose_thin::thin(rows, cols) {
            return crate::transpose_thin::copy_run(input, output, rows.wrapping_mul(cols));
        }
        let tile = tile_block(contract::tiles(cols, contract::max_shift(cols), TILE as u32));
        let shift = crate::transpose_any::misalignment(tile.1 * TILE as u32 + thread_idx_y(), cols);
        let (rows, cols) = (rows as usize, cols as usize);
        move_via_registers(input.matrix(rows, cols), output.matrix(rows, cols), tile, shift, |x, y| (y, x))
    }
}

kernel! {
    /// Transpose straight through global memory: coalesced reads, strided writes.
    ///
    /// - Launch: block `32 x 8`, a one-dimensional grid of `ceil(cols / 32) x ceil(rows / 32)`
    ///   blocks.
    /// - Shared memory: none. Memory level: global. A warp reads one 128-byte row segment but writes
    ///   32 floats `rows * 4` bytes apart: 32 sectors for 128 useful bytes.
    /// - Buffers: `input` and `output` hold `rows * cols < 2^32` floats and do not overlap.
    pub fn transpose_naive(input: GlobalIn<f32>, output: GlobalOut<f32>, rows: u32, cols: u32) {
        let tile = tile_block(contract::tiles(cols, 0, TILE as u32));
        let (rows, cols) = (rows as usize, cols as usize);
        move_via_registers(input.matrix(rows, cols), output.matrix(cols, rows), tile, 0, |x, y| (x, y))
    }
}
// ANCHOR_END: copy_and_naive  ANCHOR: transpose_via_tile
/// Transpose through a shared-memory tile of `TILE x PITCH` floats: the body of
/// [`transpose_tiled`] (`PITCH = 32`) and [`transpose_padded`] (`PITCH = 33`).
///
/// Global reads and writes are both coalesced; the transpose happens in shared memory, where
/// the write-out phase reads a tile column: lane `t` reads word `t * PITCH + c`, bank
/// `(t * PITCH + c) mod 32`. The tile is written, published by the barrier, then read: its
/// phase is in its type.
#[inline(always)]
fn transpose_via_tile<const PITCH: usize>(
    block: Block,
    input: GlobalIn<f32>,
    output: GlobalOut<f32>,
    rows: u32,
    cols: u32,
) {
    const T: u32 = TILE as u32;
    let (barrier, mut tile) = block.carve::<SharedTile<f32, TILE, TILE, PITCH>>();
    let input = input.matrix(rows as usize, cols as usize);
    let mut output = output.matrix(cols as usize, rows as usize);
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let (bx, by) = tile_block(contract::tiles(cols, 0, T));
    // 32-bit tile indices and 64-bit global offsets, as in the CUDA C++ twin: `y + j` stays
    // below `32 * ceil(rows / 32)`.
    let (x, y) = (bx * T + tx, by * T + ty);
    for j in (0..T).step_by(BLOCK_ROWS) {
        if x < cols && y + j < rows {
            tile.set(ty + j, tx, input.get((y + j) as usize, x as usize));
        }
    }
    let tile = barrier.sync(tile);
    // The output tile sits at the mirrored block; its matrix is cols x rows.
    let (x, y) = (by * T + tx, bx * T + ty);
    for j in (0..T).step_by(BLOCK_ROWS) {
        if x < rows && y + j < cols {
            // Each conflicted tile read stays paired with its store (see `get_in_order`).
            output.set((y + j) as usize, x as usize, tile.get_in_order(tx, ty + j));
        }
    }
}
// ANCHOR_END: transpose_via_tile  ANCHOR: tiled_and_padded
kernel! {
    /// Transpose through a `32 x 32` shared tile: coalesced global traffic, but the column read of
    /// the tile puts all 32 lanes of a warp on one bank (word `32 t + c`): a 32-way bank conflict.
    ///
    /// - Launch: block `32 x 8`, a one-dimensional grid of `ceil(cols / 32) x ceil(rows / 32)`
    ///   blocks.
    /// - Shared memory: `32 * 32 * 4 = 4096` bytes of dynamic shared memory.
    /// - Memory level: global (coalesced) and shared (32-way conflicted reads).
    /// - Buffers: `input` and `output` hold `rows * cols < 2^32` floats.
    pub fn transpose_tiled(block: Block, input: GlobalIn<f32>, output: GlobalOut<f32>, rows: u32, cols: u32) {
        transpose_via_tile::<{ contract::TILED_PITCH as usize }>(block, input, output, rows, cols)
    }
}

kernel! {
    /// Transpose through a `32 x 33` shared tile: the one padding word per row moves lane `t` of a
    /// column read to bank `(33 t + c) mod 32 = (t + c) mod 32`, so the conflict is gone.
    ///
    /// Output rows (`rows` floats) that are not whole 32-byte sectors would make every warp store
    /// span 5 sectors, two of them written in part (0.68x the aligned rate at 8191x8192,
    /// measured on the H200). On such matrices the kernel takes `transpose_aligned_stores`' body
    /// instead ([`contract::whole_sector_rows`], the same for every thread): each output row's
    /// tiles shifted to a sector boundary.
    ///
    /// - Launch: block `32 x 8`, a one-dimensional grid of `ceil(cols / 32) x ceil((rows + m) /
    ///   32)` blocks, `m` the largest shift ([`contract::max_shift`] of `rows`, 0 on whole-sector
    ///   rows).
    /// - Shared memory: [`contract::padded_smem_bytes`]: `32 * 33 * 4 = 4224` bytes, on the
    ///   shifted path `40 * 33 * 4 = 5280`.
    /// - Memory level: global (coalesced) and shared (conflict-free).
    /// - Buffers: `input` and `output` hold `rows * cols < 2^32` floats, not overlapping.
    pub fn transpose_padded(block: Block, input: GlobalIn<f32>, output: GlobalOut<f32>, rows: u32, cols: u32) {
        if contract::whole_sector_rows(rows) {
            transpose_via_tile::<{ contract::PADDED_PITCH as usize }>(block, input, output, rows, cols)
        } else {
            crate::transpose_any::aligned_stores(block, input, output, rows, cols)
        }
    }
}
// ANCHOR_END: tiled_and_padded
/// Tile edge of [`transpose_vectorized`], in elements.
const WIDE_TILE: usize = contract::WIDE_TILE as usize;
/// Row pitch of its shared tile, in floats: one pad word, as in [`transpose_padded`].
const WIDE_PITCH: usize = contract::WIDE_PITCH as usize;

/// Threads per block of [`transpose_vectorized`].
const WIDE_THREADS: u32 = contract::WIDE_BLOCK.0 * contract::WIDE_BLOCK.1;
/// Its shifted path's staged tile: `WIDE_STAGED_ROWS x 64` floats, rows `WIDE_PITCH` apart.
type WideStaged = SharedTile<f32, { contract::WIDE_STAGED_ROWS as usize }, WIDE_TILE, WIDE_PITCH>;

kernel! {
    /// Transpose through a padded `64 x 65` shared tile with 128-bit global loads and stores: each
    /// thread moves 16 floats as 4 `float4` loads (all issued before the barrier) and 4 `float4`
    /// stores, so 4x the bytes of [`transpose_padded`] are in flight per thread and every warp
    /// request moves whole 256-byte row segments.
    ///
    /// Thread `(tx, ty)` loads input row `ty + 16 i` (i < 4), columns `4 tx ..+4` of the tile and
    /// stores output row `ty + 16 i`, columns `4 tx ..+4` of the mirrored tile, gathering them from
    /// the shared tile's column. With pitch 65, lane `(tx, ty)` touches bank
    /// `(4 tx + ty + q) mod 32`: two lanes per bank (a 2-way conflict on scalar shared accesses),
    /// cheap next to DRAM time. Measured on the H200: 96% of memcpy, where a `32 x 33` tile with
    /// 8 floats per thread (`8 x 16` block, also conflict-free) reached 90%: bytes in flight per
    /// thread matter more here than the bank conflict. Tiles that reach past an edge take guarded
    /// scalar accesses.
    ///
    /// Rows that are not whole vectors or sectors ([`contract::wide_aligned`] false: `cols` not a
    /// multiple of 4 or `rows` of 8) take the shifted path, as
    /// [`transpose_aligned_stores`](crate::transpose_any::transpose_aligned_stores)
    /// (`transpose_any.rs`) does for the 32 x 32 tile: 18 coalesced scalar loads per thread
    /// stage input rows `64 by - 8 .. 64 by + 64`, and output row `y` starts its tile `e(y) = (y
    /// rows) mod 8` floats early, so its `float4` stores are aligned and cover whole sectors.
    /// Before this path the scalar fallback ran at 0.35-0.41x the aligned rate at 8191x8192,
    /// 8192x8191 and 8191x8191 (measured on the H200).
    ///
    /// - Launch: block `16 x 16`, a one-dimensional grid of `ceil(cols / 64) x ceil((rows + m) /
    ///   64)` blocks, `m` the largest shift ([`contract::max_shift`] of `rows`, 0 on the aligned
    ///   path).
    /// - Shared memory: [`contract::wide_smem_bytes`]: `64 * 65 * 4 = 16640` bytes, on the
    ///   shifted path `72 * 65 * 4 = 18720`.
    /// - Memory level: global (coalesced, 128-bit) and shared (2-way).
    /// - Buffers: `input` and `output` hold `rows * cols < 2^32` floats (32-bit indices), 16-byte
    ///   aligned, not overlapping.
    pub fn transpose_vectorized(block: Block, input: GlobalIn<f32>, output: GlobalOut<f32>, rows: u32, cols: u32) {
        if contract::wide_aligned(rows, cols) {
            vectorized_aligned(block, input, output, rows, cols)
        } else {
            vectorized_shifted(block, input, output, rows, cols)
        }
    }
}

/// Stores `w` at `i ..+4` of `output`: one `float4` store when `vector` (the caller checked that
/// the 4 floats are in the matrix and 16-byte aligned), else each float whose `inside(q)` holds.
#[inline(always)]
fn store4(output: &mut Slice<f32, ReadWrite>, i: u32, w: [f32; 4], vector: bool, inside: impl Fn(u32) -> bool) {
    if vector {
        output.set4(i as usize, w);
    } else {
        unroll!(q in 0..4 => {
            if inside(q as u32) {
                output.set(i.wrapping_add(q as u32) as usize, w[q]);
            }
        });
    }
}

/// [`transpose_vectorized`] on rows that are whole vectors and sectors.
#[inline(always)]
fn vectorized_aligned(block: Block, input: GlobalIn<f32>, output: GlobalOut<f32>, rows: u32, cols: u32) {
    const T: u32 = WIDE_TILE as u32;
    let (barrier, mut tile) = block.carve::<SharedTile<f32, WIDE_TILE, WIDE_TILE, WIDE_PITCH>>();
    // 32-bit element indices, as in the CUDA C++ twin (`rows * cols < 2^32`).
    let (input, mut output) = (input.slice((rows * cols) as usize), output.slice((rows * cols) as usize));
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let (bx, by) = tile_block(contract::tiles(cols, 0, T));
    let (r0, c0) = (by * T, bx * T);
    let vector = r0 + T <= rows && c0 + T <= cols;
    // Plain loops here, unrolled by LLVM: the `unroll!` form ran at 0.96-0.98x the CUDA C++
    // twin at 8192x8192 on the H200, these at 0.99x.
    let mut v = [[0.0f32; 4]; 4];
    for (i, v) in v.iter_mut().enumerate() {
        let (r, c) = (r0 + ty + 16 * i as u32, c0 + 4 * tx);
        if vector {
            *v = input.get4((r * cols + c) as usize);
        } else {
            for (q, v) in v.iter_mut().enumerate() {
                if r < rows && c + (q as u32) < cols {
                    *v = input.get((r * cols + c + q as u32) as usize);
                }
            }
        }
    }
    for (i, v) in v.iter().enumerate() {
        for (q, &v) in v.iter().enumerate() {
            tile.set(ty as usize + 16 * i, 4 * tx as usize + q, v);
        }
    }
    let tile = barrier.sync(tile);
    // Output tile: rows c0.. (input columns), columns r0.. (input rows); the matrix is cols x rows.
    for i in 0..4 {
        let (y, x) = (c0 + ty + 16 * i, r0 + 4 * tx);
        let mut w = [0.0f32; 4];
        for (q, w) in w.iter_mut().enumerate() {
            *w = tile.get(4 * tx as usize + q, (ty + 16 * i) as usize);
        }
        store4(&mut output, y * rows + x, w, vector, |q| y < cols && x + q < rows);
    }
}

/// [`transpose_vectorized`]'s shifted path, for rows that are not whole vectors or sectors.
#[inline(always)]
fn vectorized_shifted(block: Block, input: GlobalIn<f32>, output: GlobalOut<f32>, rows: u32, cols: u32) {
    const T: u32 = WIDE_TILE as u32;
    const LOADS: usize = (contract::WIDE_STAGED_ROWS * T / WIDE_THREADS) as usize;
    const { assert!(LOADS == 18, "the scalar loads below are unrolled 18 times") };
    let (barrier, mut tile) = block.carve::<WideStaged>();
    let (input, mut output) = (input.slice((rows * cols) as usize), output.slice((rows * cols) as usize));
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let (bx, by) = tile_block(contract::tiles(cols, 0, T));
    let (r0, c0) = (by * T, bx * T);
    // Staged row k is input row r0 + k - pre. Whole-sector output rows are not shifted (e = 0),
    // so they need none of the rows before the tile. Below row 0 the row index wraps past
    // `rows`, so the guards skip it.
    let pre = if contract::whole_sector_rows(rows) { 0 } else { contract::SKEW };
    let t = ty * contract::WIDE_BLOCK.0 + tx;
    // Thread t loads column t mod 64 of staged rows t / 64 + 4 s: a warp reads 32 consecutive
    // floats of one row (coalesced whatever the row's alignment) and writes them to 32 banks.
    let (first, c) = ((r0 + t / T).wrapping_sub(pre), c0 + t % T);
    // Input rows r0 - pre .. r0 + 64 of the matrix, none past its last column.
    let end = if c < cols { rows.min(r0 + T) } else { 0 };
    let mut v = [0.0f32; LOADS];
    unroll!(s in 0..18 => {
        let r = first.wrapping_add(s as u32 * (WIDE_THREADS / T));
        if r < end {
            v[s] = input.get((r * cols + c) as usize);
        }
    });
    unroll!(s in 0..18 => {
        tile.set(s as u32 * (WIDE_THREADS / T) + t / T, t % T, v[s]);
    });
    let tile = barrier.sync(tile);
    unroll!(i in 0..4 => {
        // Output row y (input column), its 4 columns from x (input rows), x + q in staged row
        // 4 tx + q + pre - e.
        let y = c0 + ty + 16 * i as u32;
        let e = crate::transpose_any::misalignment(y, rows);
        // Below column 0, x wraps past `rows`; x + q wraps back for the columns from 0 on.
        let x = (r0 + 4 * tx).wrapping_sub(e);
        let mut w = [0.0f32; 4];
        unroll!(q in 0..4 => {
            w[q] = tile.get(4 * tx + q as u32 + pre - e, ty + 16 * i as u32);
        });
        let vector = y < cols && x < rows && rows - x >= 4;
        store4(&mut output, y.wrapping_mul(rows).wrapping_add(x), w, vector, |q| y < cols && x.wrapping_add(q) < rows);
    });
}
