//! The L2 lesson's two answers in Rust: how to read the L2 at its bandwidth (many short blocks,
//! each a fixed chunk: the block scheduler balances the SMs), and how to keep a hot buffer in
//! L2 amid a stream (an `evict_first` policy on the streamed loads, where the access-policy
//! window does not help on the H200; measured, `bench/l2_experiments.cu`).
//!
//! `read_cg_chunks` is in every PTX; `hot_stream_read_evict_first` in the sm_90 PTX only:
//! `createpolicy` and `.L2::cache_hint` need PTX ISA 7.4 (sm_80), and the sm_80 build declares
//! the backend's default PTX ISA 7.0, the sm_90 build 8.3 (`host/build.rs`).

pub use memlab_contracts::l2::{CHUNK_LOADS, CHUNK_THREADS, CHUNK_VECTORS, CHUNKS_PER_BLOCK, REGION_VECTORS};

use crate::device::l2_policy::load_cg4;
#[cfg(target_feature = "sm_90")]
use crate::device::l2_policy::{L2Policy, load_cg4_hinted};
use crate::device::{GlobalIn, GlobalOut, block_idx_x, kernel, thread_idx_x};
#[cfg(target_feature = "sm_90")]
use crate::device::{global_idx_x, grid_threads_x};

/// The wrapping sum of a vector's words added to `sum`.
#[inline(always)]
fn add4(sum: u32, w: [u32; 4]) -> u32 {
    sum.wrapping_add(w[0]).wrapping_add(w[1]).wrapping_add(w[2]).wrapping_add(w[3])
}

kernel! {
    /// L2 read bandwidth with many short blocks: block `b` reads region `r = b % regions`, the
    /// [`CHUNKS_PER_BLOCK`] chunks of [`CHUNK_VECTORS`] 16-byte vectors at chunk index
    /// `regions * i + r` (`i = 0..32`), thread `t` the vectors `t, t + 256, t + 512, t + 768`
    /// of each chunk with `ld.global.cg.v4.u32` (L2, not L1), the four loads of a chunk issued
    /// before any is added; thread `t` writes the wrapping sum of its words to
    /// `out[r * 256 + t]` (every block of a region writes the same sums).
    ///
    /// Why: a launch of many blocks, each a fixed 512 KiB, lets the block scheduler hand the
    /// next block to whichever SM is free, so the launch ends one short block after the busiest
    /// SM, and over the launch every SM reads every line (the public suite's split, RRZE-HPC
    /// gpu-benches gpu-l2-cache: 9.5-9.7 TB/s at 15 MiB on the H200, where `read_cg`'s grid
    /// of 8 blocks per SM, each its fixed lines 256 times, reaches 8.2; measured,
    /// `bench/l2_experiments.cu`).
    ///
    /// - Launch: one-dimensional, blocks of [`CHUNK_THREADS`] threads (as many as asked).
    ///   Shared memory: none. Memory level: L2 (the footprint `regions` x 512 KiB fits it).
    /// - Buffers: `input` holds `regions * REGION_VECTORS` vectors, `out` `regions * 256` words.
    /// - Preconditions: `regions >= 1` (none reads nothing), `regions * REGION_VECTORS < 2^32`.
    pub fn read_cg_chunks(input: GlobalIn<u32>, regions: u32, out: GlobalOut<u32>) {
        if regions == 0 {
            return;
        }
        let input = input.slice(4 * regions as usize * REGION_VECTORS as usize);
        let (t, r) = (thread_idx_x(), block_idx_x() % regions);
        let mut sum = 0u32;
        for i in 0..CHUNKS_PER_BLOCK {
            let chunk = (regions * i + r) * CHUNK_VECTORS + t;
            let w: [[u32; 4]; CHUNK_LOADS as usize] =
                core::array::from_fn(|j| load_cg4(&input, (chunk + j as u32 * CHUNK_THREADS) as usize));
            for x in &w {
                sum = add4(sum, *x);
            }
        }
        out.slice((regions * CHUNK_THREADS) as usize).set((r * CHUNK_THREADS + t) as usize, sum);
    }
}

#[cfg(target_feature = "sm_90")]
kernel! {
    /// `hot_stream_read` (`l2.rs`) with an L2 `evict_first` policy on the streamed loads: thread
    /// `g` of `T` sums, for every 16-byte vector `v = g, g + T, ...` below `stream_vectors`, the
    /// words of `stream[v]` (`ld.global.cg.L2::cache_hint.v4.u32` with the policy of
    /// `createpolicy.fractional.L2::evict_first`) and of `hot[v & hot_mask]` (plain
    /// `ld.global.cg.v4.u32`), and writes the wrapping sum to `out[g]`.
    ///
    /// Why: a streamed line is read once, yet without a policy it enters the L2 as any other
    /// and evicts hot lines. Marked evict-first it is the first to go, so the hot lines leave
    /// only for each other (PTX ISA, "createpolicy"). Measured on the H200 (driver 580): the
    /// hot re-reads hit 0.94 up to 20 MiB hot and 0.80 at 32 MiB, against 0.35 without a
    /// policy and no better with an access-policy window (`bench/l2_experiments.cu`).
    ///
    /// - Launch: one-dimensional, any block size (`HOT_STREAM_THREADS`). Shared memory: none.
    ///   Memory level: DRAM (the stream) and L2 (the hot buffer).
    /// - Buffers: `stream` holds `stream_vectors` vectors, `hot` `hot_mask + 1` (a power of
    ///   two), `out` one word per thread.
    pub fn hot_stream_read_evict_first(
        stream: GlobalIn<u32>,
        stream_vectors: u32,
        hot: GlobalIn<u32>,
        hot_mask: u32,
        out: GlobalOut<u32>,
    ) {
        let stream = stream.slice(4 * stream_vectors as usize);
        let hot = hot.slice(4 * (hot_mask as usize + 1));
        let first = L2Policy::evict_first();
        let (g, threads) = (global_idx_x(), grid_threads_x());
        let mut sum = 0u32;
        let mut v = g;
        while v < stream_vectors {
            let (s, h) = (load_cg4_hinted(&stream, v as usize, first), load_cg4(&hot, (v & hot_mask) as usize));
            for u in 0..4 {
                sum = sum.wrapping_add(s[u]).wrapping_add(h[u]);
            }
            v += threads;
        }
        out.slice(threads as usize).set(g as usize, sum);
    }
}
