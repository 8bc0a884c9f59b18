//! Launch contract of `kernels-gpu/src/transpose_thin.rs`: the transpose of a thin matrix, one
//! side at most [`MAX_SHORT`] elements, and `copy`'s path for such matrices.
//!
//! A block moves a band of the long side: [`band`] long-side elements of every one of the
//! `short` rows (or columns). One side of the transpose is then `short` segments of the band
//! (the strided side), the other one contiguous run of `short * band` floats.

use crate::WORD_BYTES;

/// Threads per block of `transpose_thin` (one dimension).
pub const BLOCK_THREADS: u32 = 256;
/// Elements each thread moves on the strided side: 16 scalar loads in flight before the barrier.
pub const PER_THREAD: u32 = 16;
/// The longest short side the thin path takes: the band must give each thread's 16 elements
/// whole blocks of `BLOCK_THREADS` along the long side.
pub const MAX_SHORT: u32 = PER_THREAD;
/// Floats `copy` moves per block on a thin matrix: 4 `float4` per thread of its 256.
pub const COPY_CHUNK: u32 = 4 * 4 * BLOCK_THREADS;

/// The short side of a `rows x cols` matrix.
pub const fn short_side(rows: u32, cols: u32) -> u32 {
    if rows < cols { rows } else { cols }
}

/// The long side of a `rows x cols` matrix.
pub const fn long_side(rows: u32, cols: u32) -> u32 {
    if rows < cols { cols } else { rows }
}

/// Whether a `rows x cols` matrix takes the thin path (`copy`'s and the lesson's choice): its
/// short side is at least 1 and at most [`MAX_SHORT`], half a 32-element tile, where a tile
/// kernel's blocks would use at most half their threads.
pub const fn thin(rows: u32, cols: u32) -> bool {
    let short = short_side(rows, cols);
    short >= 1 && short <= MAX_SHORT
}

/// Long-side elements of one block's band on a matrix whose short side is `short`: the most
/// whole blocks of threads that keep `short * band <= PER_THREAD * BLOCK_THREADS`, so each
/// thread moves at most 16 elements. 0 where the thin path does not apply.
pub const fn band(short: u32) -> u32 {
    if short == 0 || short > MAX_SHORT { 0 } else { PER_THREAD / short * BLOCK_THREADS }
}

/// Blocks of `transpose_thin` on a `rows x cols` matrix: `ceil(long / band)`, 0 (a launch the
/// device refuses) on a matrix that is not thin.
pub const fn blocks(rows: u32, cols: u32) -> u32 {
    let band = band(short_side(rows, cols));
    if band == 0 { 0 } else { long_side(rows, cols).div_ceil(band) }
}

/// Dynamic shared bytes of `transpose_thin` on a `rows x cols` matrix: the kernel's band tile,
/// `PER_THREAD * BLOCK_THREADS` floats (16 KiB) whatever the short side, of which the band uses
/// `short * band` floats: every thread stores its 4 `float4` into the tile on the tall path, and
/// the tile's type is the whole of it. 16 KiB keeps 8 blocks of 256 threads per SM, the
/// threads' limit. 0 on a matrix that is not thin (no launch).
pub const fn smem_bytes(rows: u32, cols: u32) -> u32 {
    if thin(rows, cols) { PER_THREAD * BLOCK_THREADS * WORD_BYTES } else { 0 }
}

/// Blocks per SM `transpose_thin`'s launch bounds ask for (`.minnctapersm`, with `.maxntid
/// BLOCK_THREADS`): a cap of 40 registers, under which ptxas assembles it in 28 for sm_90, so 8
/// blocks of 256 threads fit an SM (the threads' limit). Without the bound it took 70 registers
/// and 3 blocks per SM, and ran at 0.74-0.87x its CUDA C++ twin (32 registers) on the H200.
pub const BLOCKS_PER_SM: u32 = 6;

/// `(entry, threads, blocks per SM)` of the launch bounds `host/build.rs` writes into the PTX
/// for `sm_SM`: sm_80 and up (CUDA 12's ptxas spills the sm_70 build under any cap below its
/// 68 registers).
pub fn launch_bounds(sm: u32) -> impl Iterator<Item = (&'static str, u32, u32)> {
    [("transpose_thin", BLOCK_THREADS, BLOCKS_PER_SM)].into_iter().filter(move |_| sm >= 80)
}

/// Blocks of `copy` on a thin `rows x cols` matrix: `ceil(rows * cols / COPY_CHUNK)`.
pub const fn copy_blocks(rows: u32, cols: u32) -> u32 {
    (rows as u64 * cols as u64).div_ceil(COPY_CHUNK as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_keep_each_thread_at_16_elements_in_whole_blocks() {
        // Short sides 3 and 7 (the lesson's thin sizes): 5 and 2 blocks of 256 along the band.
        assert_eq!((band(3), band(7), band(1), band(16), band(17), band(0)), (1280, 512, 4096, 256, 0, 0));
        // The whole tile (the tall path writes all of it), though 3 x 1280 and 7 x 512 floats are
        // the band's own.
        assert_eq!((smem_bytes(3, 1_000_000), smem_bytes(2_000_000, 7), smem_bytes(17, 1_000_000)), (16384, 16384, 0));
        assert_eq!(blocks(3, 1_000_000), 1_000_000u32.div_ceil(1280));
        assert_eq!(blocks(2_000_000, 7), 3907);
        assert_eq!(blocks(17, 1_000_000), 0);
        for short in 1..=MAX_SHORT {
            assert!(short * band(short) <= PER_THREAD * BLOCK_THREADS, "{short}");
            assert!(band(short).is_multiple_of(BLOCK_THREADS), "{short}");
        }
        assert!(thin(3, 1) && thin(1, u32::MAX) && !thin(17, 17) && !thin(0, 5));
        // The largest matrix: fewer blocks than grid x allows.
        assert_eq!(copy_blocks(1, u32::MAX), 1 << 20);
        assert_eq!(blocks(1, u32::MAX), 1 << 20);
    }
}
