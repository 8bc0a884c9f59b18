//! Global memory against shared-memory tiling: `C = A * B` in `f32`.
//!
//! Shapes: `A` is `m x k`, `B` is `k x n`, `C` is `m x n`, all row-major and densely packed.
//! Any `m, n, k >= 1` works: out-of-range loads read 0.0 and out-of-range stores are skipped.

use memlab_contracts::matmul::{NAIVE_BLOCK, TILE_16, TILE_32};

use crate::device::{block_idx_x, block_idx_y, dynamic_shared, fma, load, sync_threads, thread_idx_x, thread_idx_y};

// ANCHOR: matmul_naive
/// One thread per element of `C`; every operand comes straight from global memory.
///
/// - Launch: block `16 x 16` threads, grid `(ceil(n / 16), ceil(m / 16))`; x runs along columns
///   so a warp's `B` loads and `C` stores are coalesced and its `A` loads are one broadcast.
/// - Shared memory: none.
/// - Memory level: global. Each thread reads `2 k` floats, so the kernel issues `2 m n k` global
///   loads for `2 m n k` FLOP: no reuse beyond what the L1/L2 caches give by chance.
///
/// # Safety
/// `a`, `b`, `c` point to device buffers of at least `m k`, `k n`, `m n` floats, each fewer
/// than `2^32`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn matmul_naive(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
    let row = block_idx_y() * NAIVE_BLOCK + thread_idx_y();
    let col = block_idx_x() * NAIVE_BLOCK + thread_idx_x();
    if row >= m || col >= n {
        return;
    }
    // 32-bit index arithmetic, as CUDA C++ with `unsigned` indices: a 32-bit index and one
    // 64-bit address add (IMAD.WIDE) per load. With `usize` indices LLVM turned the loop into
    // 64-bit pointer increments unrolled 8 times, ptxas unrolled it 8 times more (64 loads per
    // iteration), and it ran at 2.98 TFLOP/s on the H200 against 4.71 now at 4096^3 (measured,
    // `memlab bench`; the CUDA C++ twin, unrolled 4 times, does 3.13).
    let mut acc = 0.0f32;
    for i in 0..k {
        acc = unsafe { fma(load(a.add((row * k + i) as usize)), load(b.add((i * n + col) as usize)), acc) };
    }
    unsafe { *c.add((row * n + col) as usize) = acc };
}
// ANCHOR_END: matmul_naive

// ANCHOR: matmul_tiled
/// Shared-memory tiling with `T x T` tiles: the body of [`matmul_tiled_16`] and
/// [`matmul_tiled_32`] (`SECOND_BARRIER = true`), and of the race lesson's broken variant
/// (`false`, [`crate::race`]).
///
/// Each block computes one `T x T` tile of `C`. For each of `ceil(k / T)` steps it stages one
/// `T x T` tile of `A` and one of `B` in shared memory (one coalesced load per thread each),
/// waits at a barrier, and then every thread reads `2 T` floats from shared memory. Every float
/// brought in from global memory is used `T` times, so global loads fall by a factor `T`.
///
/// # Safety
/// As for the kernels: buffer sizes as in [`matmul_naive`], block `T x T`, `2 T^2 * 4` bytes of
/// dynamic shared memory. With `SECOND_BARRIER = false` the result is undefined (a data race).
#[inline(always)]
pub(crate) unsafe fn matmul_tiled<const T: usize, const SECOND_BARRIER: bool>(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    let tile_a = dynamic_shared::<f32>();
    let tile_b = unsafe { tile_a.add(T * T) };
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
    let row = block_idx_y() as usize * T + ty;
    let col = block_idx_x() as usize * T + tx;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    // This thread's slots: it writes (ty, tx) of both tiles, reads row ty of A and column tx of B.
    let slot = ty * T + tx;
    let a_row = unsafe { tile_a.add(ty * T) };
    let b_col = unsafe { tile_b.add(tx) };
    let mut acc = 0.0f32;
    let mut k0 = 0;
    while k0 < k {
        let (ka, kb) = (k0 + tx, k0 + ty);
        unsafe {
            *tile_a.add(slot) = if row < m && ka < k { load(a.add(row * k + ka)) } else { 0.0 };
            *tile_b.add(slot) = if kb < k && col < n { load(b.add(kb * n + col)) } else { 0.0 };
            sync_threads();
            for i in 0..T {
                acc = fma(*a_row.add(i), *b_col.add(i * T), acc);
            }
            // The next step overwrites the tiles: nobody may still be reading them.
            if SECOND_BARRIER {
                sync_threads();
            }
        }
        k0 += T;
    }
    if row < m && col < n {
        unsafe { *c.add(row * n + col) = acc };
    }
}
// ANCHOR_END: matmul_tiled

/// Tiled matmul with 16 x 16 tiles.
///
/// - Launch: block `16 x 16` threads, grid `(ceil(n / 16), ceil(m / 16))`.
/// - Shared memory: `2 * 16 * 16 * 4 = 2048` bytes of dynamic shared memory.
/// - Memory level: shared (each global float reused 16 times from shared memory).
///
/// # Safety
/// See [`matmul_naive`] for buffer sizes.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn matmul_tiled_16(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
    unsafe { matmul_tiled::<{ TILE_16 as usize }, true>(a, b, c, m, n, k) }
}

/// Tiled matmul with 32 x 32 tiles.
///
/// - Launch: block `32 x 32` threads (1024, the per-block maximum), grid
///   `(ceil(n / 32), ceil(m / 32))`.
/// - Shared memory: `2 * 32 * 32 * 4 = 8192` bytes of dynamic shared memory.
/// - Memory level: shared (each global float reused 32 times from shared memory).
///
/// # Safety
/// See [`matmul_naive`] for buffer sizes.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn matmul_tiled_32(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
    unsafe { matmul_tiled::<{ TILE_32 as usize }, true>(a, b, c, m, n, k) }
}
