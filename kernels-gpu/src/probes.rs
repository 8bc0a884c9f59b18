//! Probes: kernels that exist to be timed, each isolating one memory effect.

pub use memlab_contracts::probes::{
    BANK_PROBE_UNROLL, BANK_PROBE_WINDOW, BANK_PROBE_WORDS, MISALIGNED_MAX_OFFSET, MISALIGNED_READS_PER_THREAD,
    PRESSURE_ACCUMULATORS, STRIDED_READS_PER_THREAD, WIDE_PROBE_ROW, WIDE_PROBE_SMEM, WIDE_PROBE_WINDOW,
    bank_probe_word,
};
use memlab_device_api::global::{ReadWrite, Slice};
use memlab_device_api::{Plain, Vec4};

use crate::device::{
    Block, GlobalIn, GlobalOut, SharedTile, block_dim_x, fma, global_idx_x, grid_threads_x, kernel, lane_id,
    thread_idx_x,
};

/// One word per launched thread (the bank probes' `out`), indexed by [`global_idx_x`].
#[inline(always)]
fn per_thread(out: GlobalOut<u32>) -> Slice<u32, ReadWrite> {
    out.slice(grid_threads_x() as usize)
}

// ANCHOR: strided_read
kernel! {
    /// Global-memory coalescing probe: warp lanes read words `stride` elements apart.
    ///
    /// Thread `g < threads` reads the 4-byte words at element index `(g + r * threads) * stride`
    /// for `r` in `0..8` and writes their wrapping sum to `partial[g]`; consecutive lanes are
    /// `4 * stride` bytes apart, so one warp request touches between 4 (stride 1) and 32
    /// (stride >= 8) 32-byte sectors. The sum keeps every load live (the host checks it).
    ///
    /// - Launch: one-dimensional, any block size, at least `threads` threads in all.
    /// - Shared memory: none. Memory level: global (DRAM through L2; each word is read once).
    /// - Buffers: `input` holds `8 * threads * stride` words, `partial` `threads`.
    pub fn strided_read(input: GlobalIn<u32>, partial: GlobalOut<u32>, threads: u32, stride: u32) {
        let g = global_idx_x();
        if g >= threads {
            return;
        }
        let (g, threads, stride) = (g as usize, threads as usize, stride as usize);
        let input = input.slice(STRIDED_READS_PER_THREAD * threads * stride);
        let mut sum = 0u32;
        for r in 0..STRIDED_READS_PER_THREAD {
            sum = sum.wrapping_add(input.get((g + r * threads) * stride));
        }
        partial.slice(threads).set(g, sum);
    }
}
// ANCHOR_END: strided_read

// ANCHOR: shared_bank_probe
kernel! {
    /// Shared-memory bank-conflict probe: lane `t` of every warp reads word `t * stride` plus an
    /// offset that is a multiple of 32 words, so every load has the same bank pattern.
    /// `stride = 0` is the broadcast case: all lanes read one word.
    ///
    /// With 32 banks of 4 bytes (CUDA C++ Programming Guide, "Shared Memory", cc >= 5.0), a request
    /// needs as many shared-memory wavefronts as the largest number of distinct words in one bank,
    /// so the time per load grows with that factor: 1, 2, 4, ..., 32 for strides 1, 2, 4, ..., 32,
    /// 1 for stride 33 and for the broadcast. Loads use immediate offsets from one base register so
    /// that issuing them costs less than the banks' one wavefront per cycle: the banks, not the
    /// instruction issue, set the time.
    ///
    /// Load `k` of a thread reads word `t * stride + (256 * (k / 8)) mod 2048 + 32 * (k mod 8)`.
    /// Each thread sums `iters` loads (`iters` a multiple of 8) and writes the wrapping sum to
    /// `out[g]` for its global index `g`; word `w` holds [`bank_probe_word`]`(w)`.
    ///
    /// - Launch: one-dimensional, block size a multiple of 32; `out` holds one word per thread.
    /// - Shared memory: `4096 * 4 = 16384` bytes of dynamic shared memory.
    /// - Memory level: shared (global memory only for the one store per thread).
    /// - Preconditions: `stride <= 33`.
    pub fn shared_bank_probe(block: Block, out: GlobalOut<u32>, stride: u32, iters: u32) {
        let (barrier, mut words) = block.carve::<SharedTile<u32, 1, BANK_PROBE_WORDS, BANK_PROBE_WORDS>>();
        let mut w = thread_idx_x();
        while (w as usize) < BANK_PROBE_WORDS {
            words.set(0, w as usize, bank_probe_word(w));
            w += block_dim_x();
        }
        let words = barrier.sync(words);
        let lane_words = (lane_id() * stride) as usize;
        let mut sum = 0u32;
        let mut offset = 0usize;
        for _ in 0..iters as usize / BANK_PROBE_UNROLL {
            let step = lane_words + offset;
            for u in 0..BANK_PROBE_UNROLL {
                sum = sum.wrapping_add(words.get(0, step + u * 32));
            }
            offset = (offset + BANK_PROBE_UNROLL * 32) & (BANK_PROBE_WINDOW - 1);
        }
        per_thread(out).set(global_idx_x() as usize, sum);
    }
}
// ANCHOR_END: shared_bank_probe

/// Words of the wide probes' shared array.
const WIDE_WORDS: usize = WIDE_PROBE_SMEM as usize / 4;

/// The body of the wide bank probes: lane `t` of every warp loads `size_of::<T>()` bytes at
/// byte `offsets[t]` plus a step offset that is a multiple of 128 bytes (so every load has the
/// lane pattern's banks), and folds what it read into a wrapping sum with `fold`.
#[inline(always)]
fn wide_bank_probe<T: Plain>(
    block: Block,
    offsets: GlobalIn<u32>,
    out: GlobalOut<u32>,
    iters: u32,
    fold: impl Fn(T) -> u32,
) {
    let (barrier, mut words) = block.carve::<SharedTile<u32, 1, WIDE_WORDS, WIDE_WORDS>>();
    let mut w = thread_idx_x();
    while w < WIDE_PROBE_SMEM / 4 {
        words.set(0, w as usize, bank_probe_word(w));
        w += block_dim_x();
    }
    let words = barrier.sync(words);
    let lane = offsets.slice(32).get(lane_id() as usize) as usize;
    let mut sum = 0u32;
    let mut offset = 0usize;
    for _ in 0..iters as usize / BANK_PROBE_UNROLL {
        let step = lane + offset;
        for u in 0..BANK_PROBE_UNROLL {
            sum = sum.wrapping_add(fold(words.get_bytes::<T>(step + u * WIDE_PROBE_ROW)));
        }
        offset = (offset + BANK_PROBE_UNROLL * WIDE_PROBE_ROW) & (WIDE_PROBE_WINDOW - 1);
    }
    per_thread(out).set(global_idx_x() as usize, sum);
}

kernel! {
    /// Shared-memory bank probe for 8-byte loads (`ld.shared.b64`): lane `t` of every warp reads
    /// the 8 bytes at byte `offsets[t] + (1024 * (k / 8)) mod 8192 + 128 * (k mod 8)` on load `k`,
    /// so any lane pattern the bank model describes can be timed. Word `w` of the array holds
    /// [`bank_probe_word`]`(w)`; each thread writes the wrapping sum of the words it loaded to
    /// `out[g]`. 8-byte accesses are served in phases of half a warp (128 bytes; the bank model,
    /// `host/src/model/banks.rs`, with the H200's measured phases), so a conflict-free request
    /// costs 2 wavefronts.
    ///
    /// - Launch: one-dimensional, block size a multiple of 32; `out` holds one word per thread.
    /// - Shared memory: `32768` bytes of dynamic shared memory. Memory level: shared.
    /// - Preconditions: `offsets` holds 32 multiples of 8 below `WIDE_PROBE_MAX_OFFSET` (16384);
    ///   `iters` is a multiple of 8.
    pub fn shared_bank_probe_8(block: Block, offsets: GlobalIn<u32>, out: GlobalOut<u32>, iters: u32) {
        wide_bank_probe::<u64>(block, offsets, out, iters, |v| (v as u32).wrapping_add((v >> 32) as u32))
    }
}

kernel! {
    /// Shared-memory bank probe for 16-byte loads (`ld.shared.v4.b32`), as [`shared_bank_probe_8`]
    /// with 16-byte words: phases of a quarter warp, so a conflict-free request costs 4 wavefronts.
    ///
    /// - Launch and shared memory: as for [`shared_bank_probe_8`]. Memory level: shared.
    /// - Preconditions: as for [`shared_bank_probe_8`], with offsets multiples of 16.
    pub fn shared_bank_probe_16(block: Block, offsets: GlobalIn<u32>, out: GlobalOut<u32>, iters: u32) {
        wide_bank_probe::<Vec4<u32>>(block, offsets, out, iters, |Vec4(v)| {
            v[0].wrapping_add(v[1]).wrapping_add(v[2]).wrapping_add(v[3])
        })
    }
}

/// Expands `$step!(i)` for `i` in `$base..$base + 16`, as literal indices: LLVM does not fully
/// unroll a 128-iteration loop, and a loop index would send the array to local memory.
macro_rules! sixteen {
    ($step:ident, $base:expr) => {
        $step!($base);
        $step!($base + 1);
        $step!($base + 2);
        $step!($base + 3);
        $step!($base + 4);
        $step!($base + 5);
        $step!($base + 6);
        $step!($base + 7);
        $step!($base + 8);
        $step!($base + 9);
        $step!($base + 10);
        $step!($base + 11);
        $step!($base + 12);
        $step!($base + 13);
        $step!($base + 14);
        $step!($base + 15);
    };
}

/// Expands `$step!(i)` for every `i` in `0..PRESSURE_ACCUMULATORS`.
macro_rules! each_accumulator {
    ($step:ident) => {
        sixteen!($step, 0);
        sixteen!($step, 16);
        sixteen!($step, 32);
        sixteen!($step, 48);
        sixteen!($step, 64);
        sixteen!($step, 80);
        sixteen!($step, 96);
        sixteen!($step, 112);
    };
}

// ANCHOR: register_pressure
kernel! {
    /// Register-pressure probe: each thread keeps [`PRESSURE_ACCUMULATORS`] floats live across a
    /// loop. Every index into the array is a literal, so without a cap the array lives in
    /// registers; a cap (`CU_JIT_MAX_REGISTERS`) below the natural count spills part of it to local
    /// memory.
    ///
    /// Thread `g < threads` reads `input[g + i * threads]` for `i` in `0..iters`, updates every
    /// accumulator `a[j] = a[j] * x + j` per read, and writes the sum of the accumulators (in index
    /// order) to `out[g]`.
    ///
    /// - Launch: one-dimensional, any block size.
    /// - Shared memory: none. Memory level: registers (local memory once spilled).
    /// - Buffers: `input` holds `iters * threads` floats, `out` `threads`.
    pub fn register_pressure(input: GlobalIn<f32>, out: GlobalOut<f32>, threads: u32, iters: u32) {
        let g = global_idx_x();
        if g >= threads {
            return;
        }
        let (g, threads) = (g as usize, threads as usize);
        let mut acc = [0.0f32; PRESSURE_ACCUMULATORS];
        let input = input.slice(iters as usize * threads);
        for i in 0..iters as usize {
            let x = input.get(g + i * threads);
            macro_rules! update {
                ($j:expr) => {
                    acc[$j] = fma(acc[$j], x, ($j) as f32)
                };
            }
            each_accumulator!(update);
        }
        let mut sum = 0.0f32;
        macro_rules! add {
            ($j:expr) => {
                sum += acc[$j]
            };
        }
        each_accumulator!(add);
        out.slice(threads).set(g, sum);
    }
}
// ANCHOR_END: register_pressure

kernel! {
    /// Global-memory alignment probe: the lanes of a warp read 32 consecutive words that start
    /// `offset` words past the warp's 128-byte boundary.
    ///
    /// Thread `g < threads` reads the 4-byte words at element index `offset + g + r * threads` for
    /// `r` in `0..8` and writes their wrapping sum to `partial[g]`. With `threads` a multiple of 32,
    /// every warp request covers 128 bytes starting `4 * offset` bytes into a 128-byte line: 4
    /// 32-byte sectors when `offset` is a multiple of 8 words, 5 otherwise (CUDA C++ Best Practices
    /// Guide, "Misaligned Accesses"), so a misaligned warp moves 5/4 of the bytes it uses.
    ///
    /// - Launch: one-dimensional, any block size, at least `threads` threads in all.
    /// - Shared memory: none. Memory level: global (DRAM through L2; each word is read once).
    /// - Buffers: `offset <= 32`; `input` holds `8 * threads + 32` words, `partial` `threads`.
    pub fn misaligned_read(input: GlobalIn<u32>, partial: GlobalOut<u32>, threads: u32, offset: u32) {
        let g = global_idx_x();
        if g >= threads {
            return;
        }
        let (g, threads) = (g as usize, threads as usize);
        let words = MISALIGNED_READS_PER_THREAD * threads + MISALIGNED_MAX_OFFSET as usize;
        let base = input.slice(words).skip(offset as usize);
        let mut sum = 0u32;
        for r in 0..MISALIGNED_READS_PER_THREAD {
            sum = sum.wrapping_add(base.get(g + r * threads));
        }
        partial.slice(threads).set(g, sum);
    }
}

// The reduction lesson: a sum kept in registers against one kept in shared memory.
use memlab_device_api::shared::{Barrier, SharedSlice};

use crate::device::{block_idx_x, grid_dim_x};

/// The wrapping sum of every thread's `v` over the block, on thread 0 (`None` on the others),
/// through `words` (one word per thread of the block, `Writing`): each thread stores its
/// value, then `log2(blockDim.x)` rounds halve the live words, thread `t < s` adding word
/// `t + s` into the value it keeps in a register and storing it for the next round. Two
/// barriers a round: one publishes the stores, one ends the reads before the next stores.
/// Precondition: `blockDim.x` is a power of two and every thread of the block calls it.
#[inline(always)]
fn block_sum(barrier: &Barrier, mut words: SharedSlice<u32>, mut v: u32) -> Option<u32> {
    let t = thread_idx_x();
    words.set(t as usize, v);
    let mut words = barrier.sync(words);
    let mut s = block_dim_x() / 2;
    while s > 0 {
        if t < s {
            v = v.wrapping_add(words.get((t + s) as usize));
        }
        let mut next = barrier.sync(words);
        if t < s {
            next.set(t as usize, v);
        }
        words = barrier.sync(next);
        s /= 2;
    }
    (t == 0).then_some(v)
}

// ANCHOR: sum_shared
kernel! {
    /// Reduction through shared memory: every element passes through a shared-memory tree.
    /// Thread `g` loads `input[g]` (0 past `n`), and its block sums its `blockDim.x` elements
    /// in `log2(blockDim.x)` rounds of shared loads and stores; thread 0 writes the block's
    /// wrapping sum to `partial[blockIdx.x]`. Per element: about 3 shared accesses and
    /// `(2 log2(blockDim.x) + 1) / blockDim.x` barriers.
    ///
    /// - Launch: one-dimensional, `blockDim.x` a power of two, `ceil(n / blockDim.x)` blocks.
    /// - Shared memory: `4 * blockDim.x` bytes of dynamic shared memory.
    /// - Memory level: shared (global memory for the one load per element and one store per
    ///   block). Buffers: `input` holds `n` words, `partial` one word per block.
    pub fn sum_shared(block: Block, input: GlobalIn<u32>, partial: GlobalOut<u32>, n: u32) {
        let (barrier, words) = block.carve_slice::<u32>(block_dim_x() as usize);
        let g = global_idx_x() as usize;
        let input = input.slice(n as usize);
        let v = if g < input.len() { input.get(g) } else { 0 };
        if let Some(sum) = block_sum(&barrier, words, v) {
            partial.slice(grid_dim_x() as usize).set(block_idx_x() as usize, sum);
        }
    }
}
// ANCHOR_END: sum_shared

// ANCHOR: sum_registers
kernel! {
    /// Reduction in registers: thread `g` adds `input[g]`, `input[g + T]`, `input[g + 2T]`, ...
    /// (`T` the grid's threads) into four registers, four independent loads in flight, and
    /// only then does its block sum the `blockDim.x` values once through shared memory, as
    /// [`sum_shared`] does; thread 0 writes the block's wrapping sum to `partial[blockIdx.x]`.
    /// Per element: one global load and one add in a register; shared memory and barriers
    /// once per thread, not per element.
    ///
    /// - Launch: one-dimensional, `blockDim.x` a power of two, any number of blocks.
    /// - Shared memory: `4 * blockDim.x` bytes of dynamic shared memory.
    /// - Memory level: registers (global memory for the loads, shared memory once per block).
    ///   Buffers: `input` holds `n` words, `partial` one word per block.
    pub fn sum_registers(block: Block, input: GlobalIn<u32>, partial: GlobalOut<u32>, n: u32) {
        let (barrier, words) = block.carve_slice::<u32>(block_dim_x() as usize);
        let input = input.slice(n as usize);
        let (mut i, stride) = (global_idx_x() as usize, grid_threads_x() as usize);
        let mut sums = [0u32; 4];
        while i + 3 * stride < input.len() {
            unroll!(k in 0..4 => {
                sums[k] = sums[k].wrapping_add(input.get(i + k * stride));
            });
            i += 4 * stride;
        }
        while i < input.len() {
            sums[0] = sums[0].wrapping_add(input.get(i));
            i += stride;
        }
        let v = sums[0].wrapping_add(sums[1]).wrapping_add(sums[2]).wrapping_add(sums[3]);
        if let Some(sum) = block_sum(&barrier, words, v) {
            partial.slice(grid_dim_x() as usize).set(block_idx_x() as usize, sum);
        }
    }
}
// ANCHOR_END: sum_registers
