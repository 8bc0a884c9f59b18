//! Global memory against shared-memory tiling: `C = A * B` in `f32`.
//!
//! Shapes: `A` is `m x k`, `B` is `k x n`, `C` is `m x n`, all row-major and densely packed.
//! Any `m, n, k >= 1` works: out-of-range loads read 0.0 and out-of-range stores are skipped.

use memlab_contracts::matmul::{NAIVE_BLOCK, TILE_16, TILE_32};

use crate::device::{
    Block, GlobalIn, GlobalOut, SharedTile, block_idx_x, block_idx_y, fma, kernel, thread_idx_x, thread_idx_y,
};

// ANCHOR: matmul_naive
kernel! {
    /// One thread per element of `C`; every operand comes straight from global memory.
    ///
    /// - Launch: block `16 x 16` threads, grid `(ceil(n / 16), ceil(m / 16))`; x runs along columns
    ///   so a warp's `B` loads and `C` stores are coalesced and its `A` loads are one broadcast.
    /// - Shared memory: none.
    /// - Memory level: global. Each thread reads `2 k` floats, so the kernel issues `2 m n k` global
    ///   loads for `2 m n k` FLOP: no reuse beyond what the L1/L2 caches give by chance.
    /// - Buffers: `a`, `b`, `c` hold `m k`, `k n`, `m n` floats, each fewer than `2^32`.
    pub fn matmul_naive(a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32) {
        let (a, b) = (a.matrix(m as usize, k as usize), b.matrix(k as usize, n as usize));
        let mut c = c.matrix(m as usize, n as usize);
        let row = block_idx_y() * NAIVE_BLOCK + thread_idx_y();
        let col = block_idx_x() * NAIVE_BLOCK + thread_idx_x();
        if row >= m || col >= n {
            return;
        }
        // 32-bit index arithmetic (`u32` indices), as CUDA C++ with `unsigned` indices: a 32-bit
        // index and one 64-bit address add (IMAD.WIDE) per load. With `usize` indices LLVM turned
        // the loop into 64-bit pointer increments unrolled 8 times, ptxas unrolled it 8 times more
        // (64 loads per iteration), and it ran at 2.98 TFLOP/s on the H200 against 4.71 now at
        // 4096^3 (measured, `memlab bench`; the CUDA C++ twin, unrolled 4 times, does 3.13).
        let mut acc = 0.0f32;
        for i in 0..k {
            acc = fma(a.get(row, i), b.get(i, col), acc);
        }
        c.set(row, col, acc);
    }
}
// ANCHOR_END: matmul_naive

// ANCHOR: matmul_tiled
/// Shared-memory tiling with `T x T` tiles: the body of [`matmul_tiled_16`] and
/// [`matmul_tiled_32`].
///
/// Each block computes one `T x T` tile of `C`. For each of `ceil(k / T)` steps it stages one
/// `T x T` tile of `A` and one of `B` in shared memory (one coalesced load per thread each),
/// waits at a barrier, and then every thread reads `2 T` floats from shared memory. Every float
/// brought in from global memory is used `T` times, so global loads fall by a factor `T`.
///
/// The tiles' phase is in their type: written, published by the first barrier, read, and
/// handed back writable by the second. Leaving out the second barrier (the race lesson's bug,
/// [`crate::race`]) does not compile: the loop would carry `Reading` tiles into a step that
/// writes them (`device-api/tests/ui/missing_barrier.rs`).
#[inline(always)]
fn matmul_tiled<const T: usize>(
    block: Block,
    a: GlobalIn<f32>,
    b: GlobalIn<f32>,
    c: GlobalOut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    let (barrier, mut tiles) = block.carve::<(SharedTile<f32, T, T, T>, SharedTile<f32, T, T, T>)>();
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
    let row = block_idx_y() as usize * T + ty;
    let col = block_idx_x() as usize * T + tx;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let (a, b, mut c) = (a.matrix(m, k), b.matrix(k, n), c.matrix(m, n));
    // This thread writes (ty, tx) of both tiles, then reads row ty of A and column tx of B.
    let (a_row, b_col) = (tiles.0.row(ty), tiles.1.col(tx));
    let mut acc = 0.0f32;
    let mut k0 = 0;
    while k0 < k {
        let (ka, kb) = (k0 + tx, k0 + ty);
        tiles.0.set(ty, tx, if row < m && ka < k { a.get(row, ka) } else { 0.0 });
        tiles.1.set(ty, tx, if kb < k && col < n { b.get(kb, col) } else { 0.0 });
        let (tile_a, tile_b) = barrier.sync(tiles);
        for i in 0..T {
            acc = fma(a_row.get(&tile_a, i), b_col.get(&tile_b, i), acc);
        }
        // The next step overwrites the tiles: nobody may still be reading them.
        tiles = barrier.sync((tile_a, tile_b));
        k0 += T;
    }
    if row < m && col < n {
        c.set(row, col, acc);
    }
}
// ANCHOR_END: matmul_tiled

kernel! {
    /// Tiled matmul with 16 x 16 tiles.
    ///
    /// - Launch: block `16 x 16` threads, grid `(ceil(n / 16), ceil(m / 16))`.
    /// - Shared memory: `2 * 16 * 16 * 4 = 2048` bytes of dynamic shared memory.
    /// - Memory level: shared (each global float reused 16 times from shared memory).
    /// - Buffers: as for [`matmul_naive`].
    pub fn matmul_tiled_16(
        block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32,
    ) {
        matmul_tiled::<{ TILE_16 as usize }>(block, a, b, c, m, n, k)
    }
}

kernel! {
    /// Tiled matmul with 32 x 32 tiles.
    ///
    /// - Launch: block `32 x 32` threads (1024, the per-block maximum), grid
    ///   `(ceil(n / 32), ceil(m / 32))`.
    /// - Shared memory: `2 * 32 * 32 * 4 = 8192` bytes of dynamic shared memory.
    /// - Memory level: shared (each global float reused 32 times from shared memory).
    /// - Buffers: as for [`matmul_naive`].
    pub fn matmul_tiled_32(
        block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32,
    ) {
        matmul_tiled::<{ TILE_32 as usize }>(block, a, b, c, m, n, k)
    }
}
