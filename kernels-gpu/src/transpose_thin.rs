//! Thin transposes: a matrix with one side of at most 16 elements (3 x 1000000, 2000000 x 7).
//! A `32 x 32` tile per block would leave most of each block idle (3 of 32 rows hold data), so a
//! block moves a band of the long side instead: [`band`](contract::band) long-side elements of
//! every short row or column, staged in shared memory so that both global sides are coalesced.
//!
//! Of the two sides of the transpose, one is `short` segments of the band, one per short row
//! (the *strided* side: the input of a wide matrix, the output of a tall one), the other one
//! contiguous run of `short * band` floats (the *contiguous* side). The strided side is moved
//! with scalar accesses, a warp's 32 lanes on 32 consecutive floats of one segment (128 bytes);
//! the contiguous side with `float4` accesses, a warp on 512 consecutive bytes. The shared band
//! holds the contiguous side's order: a contiguous-side access is one conflict-free 128-bit
//! shared access, a strided-side one puts lane `l` on word `l * short + s`, bank `(l short + s)
//! mod 32`: conflict-free for an odd short side, `gcd(short, 32)`-way for an even one.

use memlab_contracts::transpose_thin as contract;
use memlab_device_api::Vec4;
use memlab_device_api::global::{ReadWrite, Slice};

use crate::device::{GlobalIn, GlobalOut, SharedTile, block_idx_x, kernel, thread_idx_x, thread_idx_y};

/// Threads per block.
const THREADS: u32 = contract::BLOCK_THREADS;
/// Floats of the largest band: 16 per thread.
const BAND_FLOATS: usize = (contract::PER_THREAD * THREADS) as usize;
/// The band as floats (written by scalars, read by 128-bit words) and as `float4`s.
type Band = SharedTile<f32, 1, BAND_FLOATS, BAND_FLOATS>;
type BandVec = SharedTile<Vec4<f32>, 1, { BAND_FLOATS / 4 }, { BAND_FLOATS / 4 }>;

kernel! {
    /// Transpose of a thin `rows x cols` matrix (short side `short = min(rows, cols) <= 16`), one
    /// band of `band = floor(16 / short) * 256` long-side elements per block: 16 coalesced scalar
    /// loads or stores per thread on the strided side, 4 `float4` on the contiguous side, through
    /// a shared band of `short * band` floats. Both global sides are coalesced where a `32 x 32`
    /// tile kernel would run blocks with `short` of their 32 rows used.
    ///
    /// - Launch: block `256 x 1`, grid `ceil(long / band)` ([`contract::blocks`]).
    /// - Shared memory: [`contract::smem_bytes`]: 16384 bytes, the band tile, of which the band
    ///   uses `short * band * 4`.
    /// - Memory level: global (strided side 128-byte scalar warp requests, contiguous side 512-byte
    ///   `float4` ones) and shared (128-bit side conflict-free, scalar side conflict-free for odd
    ///   `short`).
    /// - Buffers: `input` and `output` hold `rows * cols < 2^32` floats, 16-byte aligned, not
    ///   overlapping. On a matrix that is not thin the band is 0 and every thread returns at
    ///   once (the host refuses the launch before: its grid has 0 blocks).
    pub fn transpose_thin(block: Block, input: GlobalIn<f32>, output: GlobalOut<f32>, rows: u32, cols: u32) {
        let short = contract::short_side(rows, cols);
        let band = contract::band(short);
        if band == 0 {
            return;
        }
        let n = rows.wrapping_mul(cols) as usize;
        let long = contract::long_side(rows, cols);
        let (input, mut output) = (input.slice(n), output.slice(n));
        let first = block_idx_x().wrapping_mul(band);
        let t = thread_idx_x();
        // This block's long-side elements, and the contiguous side's floats: `short` per element.
        let elems = if first < long { band.min(long - first) } else { 0 };
        let run = elems * short;
        if rows <= cols {
            // Wide: the input's short rows are the strided side, the output the contiguous one.
            let (barrier, mut tile) = block.carve::<Band>();
            let v = strided(band, short, |s, l| (first + l < long).then(|| input.get((s * long + first + l) as usize)));
            each_strided(band, short, |i, s, l| tile.set(0, (l * short + s) as usize, v[i]));
            let tile = barrier.sync(tile);
            unroll!(c in 0..4 => {
                let j = 4 * (t + c as u32 * THREADS);
                if j < run {
                    let Vec4(w) = tile.get_bytes::<Vec4<f32>>(4 * j as usize);
                    store_run(&mut output, first * short + j, run - j, w);
                }
            });
        } else {
            // Tall: the input is the contiguous side, the output's short rows the strided one.
            let (barrier, mut tile) = block.carve::<BandVec>();
            let mut v = [[0.0f32; 4]; 4];
            unroll!(c in 0..4 => {
                let j = 4 * (t + c as u32 * THREADS);
                if j < run {
                    v[c] = load_run(&input, first * short + j, run - j);
                }
            });
            unroll!(c in 0..4 => {
                tile.set(0, (t + c as u32 * THREADS) as usize, Vec4(v[c]));
            });
            let tile = barrier.sync(tile);
            each_strided(band, short, |_, s, l| {
                if first + l < long {
                    output.set((s * long + first + l) as usize, tile.get_bytes::<f32>(4 * (l * short + s) as usize));
                }
            });
        }
    }
}

/// Calls `f(i, s, l)` for this thread's 16 strided-side elements `i`: short row `s`, band element
/// `l` (thread `t` takes `l = q * 256 + t`, so a warp covers 32 consecutive floats of one row),
/// for the `short * band` elements of the band only. `(s, q)` steps on without a division.
#[inline(always)]
fn each_strided(band: u32, short: u32, mut f: impl FnMut(usize, u32, u32)) {
    let per_row = band / THREADS;
    let t = thread_idx_x();
    let (mut s, mut q) = (0, 0);
    unroll!(i in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] => {
        if i > 0 {
            q += 1;
            if q == per_row {
                (s, q) = (s + 1, 0);
            }
        }
        if s < short {
            f(i, s, q * THREADS + t);
        }
    });
}

/// This thread's 16 strided-side loads, all issued before any store: `load(s, l)` of each
/// element [`each_strided`] visits (0 where it gives `None` or the band ends).
#[inline(always)]
fn strided(band: u32, short: u32, load: impl Fn(u32, u32) -> Option<f32>) -> [f32; 16] {
    let mut v = [0.0f32; 16];
    each_strided(band, short, |i, s, l| v[i] = load(s, l).unwrap_or(0.0));
    v
}

/// `copy` on a thin matrix (`transpose.rs`): its `n` floats as one run, [`COPY_CHUNK`] per block
/// (`contract::COPY_CHUNK`), 4 `float4` loads per thread of the `32 x 8` block issued before its
/// 4 stores. A tile grid would leave most of each block idle, as for the transpose.
///
/// [`COPY_CHUNK`]: contract::COPY_CHUNK
#[inline(always)]
pub(crate) fn copy_run(input: GlobalIn<f32>, output: GlobalOut<f32>, n: u32) {
    let (input, mut output) = (input.slice(n as usize), output.slice(n as usize));
    let t = thread_idx_y() * 32 + thread_idx_x();
    let first = block_idx_x().wrapping_mul(contract::COPY_CHUNK);
    // Floats of the run from this block's first: all of it but in the last block.
    let left = n.saturating_sub(first);
    let mut v = [[0.0f32; 4]; 4];
    unroll!(c in 0..4 => {
        let j = 4 * (t + c as u32 * THREADS);
        if j < left {
            v[c] = load_run(&input, first + j, left - j);
        }
    });
    unroll!(c in 0..4 => {
        let j = 4 * (t + c as u32 * THREADS);
        if j < left {
            store_run(&mut output, first + j, left - j, v[c]);
        }
    });
}

/// The 4 floats of a run at `at`, of which `left >= 1` lie in it: one `float4` load when all 4
/// do (`at` a multiple of 4), else the ones that do, zeros for the rest.
#[inline(always)]
fn load_run(input: &Slice<f32>, at: u32, left: u32) -> [f32; 4] {
    if left >= 4 {
        return input.get4(at as usize);
    }
    let mut v = [0.0f32; 4];
    unroll!(q in 0..4 => {
        if (q as u32) < left {
            v[q] = input.get((at + q as u32) as usize);
        }
    });
    v
}

/// Stores `w` at `at` of a run of which `left >= 1` floats remain: one `float4` store when all 4
/// fit (`at` a multiple of 4), else the ones that do.
#[inline(always)]
fn store_run(output: &mut Slice<f32, ReadWrite>, at: u32, left: u32, w: [f32; 4]) {
    if left >= 4 {
        return output.set4(at as usize, w);
    }
    unroll!(q in 0..4 => {
        if (q as u32) < left {
            output.set((at + q as u32) as usize, w[q]);
        }
    });
}
