//! The memory-hierarchy table, measured: latency probes (one thread or one warp chasing a chain
//! of dependent loads, timed by the SM's own clock), bandwidth probes, and a pair of kernels that
//! differ only in where a small per-thread array lives (registers or local memory).
//!
//! Every latency probe writes the same record to `out`: `out[0]` = SM clock cycles
//! (`%clock64`) and `out[1]` = nanoseconds (`%globaltimer`) spent on the timed `steps` loads,
//! `out[2]` = where the chain ended (an address or offset, so the host can check that the loads
//! really happened). The instruction under test is written as inline PTX, so the PTX the host
//! embeds shows exactly which load (`ld.global`, `ld.global.cg`, `ld.shared`, `ld.local`,
//! `ld.const`) each probe times.

//!
//! The kernels are written on the device API: the clock reads, the `.cg` loads and each
//! chase's dependent load are the safe wrappers of `device/probe.rs` (the constant chain's
//! `.const` declaration lives there too), each one inline-PTX instruction.

pub use memlab_contracts::hierarchy::{
    CONST_CHAIN_WORDS, LOCAL_ARRAY_WORDS, LOCAL_CHAIN_WORDS, PROBE_RECORD_WORDS, READ_CG_UNROLL, RECORD_WORDS,
    SM_CLOCK_CHAINS, SM_CLOCK_RECORD_WORDS,
};
use memlab_device_api::global::{ReadWrite, Slice};

use crate::device::probe::{ChainAddr, LoadCg, SharedChain, clock64, const_chain_next, globaltimer, local_chain};
use crate::device::{
    Block, GlobalIn, GlobalOut, block_dim_x, block_idx_x, fma, global_idx_x, grid_dim_x, grid_threads_x, kernel,
    lane_id, thread_idx_x,
};

/// Follows a chain: `warm` links untimed, then `steps` links between two clock reads. `hop`
/// is one dependent load (its result is the next load's address). Returns the end of the
/// chain and the timestamps the timed loads started at.
#[inline(always)]
pub(crate) fn warm_then_time<P>(start: P, warm: u32, steps: u32, hop: impl Fn(P) -> P) -> (P, (u64, u64)) {
    let mut p = start;
    for _ in 0..warm {
        p = hop(p);
    }
    let t = (clock64(), globaltimer());
    for _ in 0..steps {
        p = hop(p);
    }
    (p, t)
}

/// Writes the probe record `[cycles, ns, end]` to `out[0..3]`, the clock read at once.
#[inline(always)]
pub(crate) fn record(out: &mut Slice<u64, ReadWrite>, start: (u64, u64), end: u64) {
    let (cycles, ns) = (clock64(), globaltimer());
    out.set(0, cycles.wrapping_sub(start.0));
    out.set(1, ns.wrapping_sub(start.1));
    out.set(2, end);
}

/// The probe record's view of a kernel's `out` (`PROBE_RECORD_WORDS` words).
#[inline(always)]
fn probe_record(out: GlobalOut<u64>) -> Slice<u64, ReadWrite> {
    out.slice(PROBE_RECORD_WORDS)
}

// ANCHOR: global_chase
/// The global chase (see [`chase_global`]); `L2_ONLY` picks the load: `ld.global.cg` (cache in
/// L2, not in L1) or a plain `ld.global`, the load every kernel uses, cached in L1 as well by
/// default on cc >= 7.0 (CUDA C++ Programming Guide, "Compute Capabilities", global memory of
/// 7.x, 8.x and 9.0). Every address on the chain from `start` is an 8-byte aligned global
/// address holding the next one (the host's chain: [`ChainAddr`]).
#[inline(always)]
fn global_chase<const L2_ONLY: bool>(start: ChainAddr, warm: u32, steps: u32, out: GlobalOut<u64>) {
    let (p, t) = warm_then_time(start, warm, steps, ChainAddr::next::<L2_ONLY>);
    record(&mut probe_record(out), t, p.address());
}
// ANCHOR_END: global_chase

kernel! {
    /// Global-memory latency, default caching (L1 and L2): one thread follows `warm` links
    /// untimed (to fill the caches with the chain), then times `steps` more with a plain
    /// `ld.global`. The host lays the chain out as a random cycle of 128-byte lines, so every
    /// load depends on the previous one and no two consecutive loads share a line: the time per
    /// load is the latency of the level that holds the chain's working set (L1, L2 or DRAM).
    ///
    /// - Launch: one block of one thread. Shared memory: none.
    /// - `out`: the probe record `[cycles, ns, last address]`.
    /// - Preconditions: as for [`global_chase`]; `out` holds three `u64`.
    pub fn chase_global(start: ChainAddr, warm: u32, steps: u32, out: GlobalOut<u64>) {
        global_chase::<false>(start, warm, steps, out)
    }
}

kernel! {
    /// Global-memory latency through L2 only: [`chase_global`] with `ld.global.cg`, which does
    /// not allocate in L1, so a chain that would fit L1 is served by L2.
    ///
    /// - Launch, shared memory, `out`, preconditions: as for [`chase_global`].
    pub fn chase_global_cg(start: ChainAddr, warm: u32, steps: u32, out: GlobalOut<u64>) {
        global_chase::<true>(start, warm, steps, out)
    }
}

/// The shared-memory chase (see [`chase_shared`]). With `INDEX = false` each word holds the
/// shared-window address of the next word, and a hop is one `ld.shared.u32 p, [p]`: the loaded
/// value is the next address as it is. With `INDEX = true` each word holds the next word's
/// index, and a hop is `j = s[j]` as CUDA C++ writes it: `shl.b32` and `add.u32` turn the index
/// into an address before the `ld.shared.u32`, so every hop also waits for that arithmetic
/// ([`SharedChain`]).
#[inline(always)]
fn shared_chase<const INDEX: bool>(
    block: Block,
    chain: GlobalIn<u32>,
    words: u32,
    warm: u32,
    steps: u32,
    out: GlobalOut<u64>,
) {
    let (barrier, mut array) = block.carve_slice::<u32>(words as usize);
    let links = SharedChain::of(&array);
    let chain = chain.slice(words as usize);
    let mut w = thread_idx_x();
    while w < words {
        let offset = chain.get(w as usize);
        array.set(w as usize, if INDEX { offset / 4 } else { links.address(offset) });
        w += block_dim_x();
    }
    let array = barrier.sync(array);
    if thread_idx_x() != 0 {
        return;
    }
    let hop = |p: u32| if INDEX { links.next_index(&array, p) } else { links.next_address(&array, p) };
    let (p, t) = warm_then_time(if INDEX { 0 } else { links.address(0) }, warm, steps, hop);
    // The index as it is: scaling it here would put an instruction inside the timed window.
    record(&mut probe_record(out), t, if INDEX { p } else { links.offset(p) } as u64);
}

kernel! {
    /// Shared-memory latency, address chase: the block copies `words` words of `chain` (byte
    /// offsets inside the array, one link per 128-byte slot) into dynamic shared memory as
    /// shared-window addresses, then thread 0 follows `warm` links untimed and times `steps`
    /// with `ld.shared.u32`, each load's result being the next load's address (no arithmetic
    /// between two loads: the shortest dependent step shared memory allows).
    ///
    /// - Launch: one block, any size. Shared memory: `4 * words` bytes of dynamic shared memory.
    /// - `out`: the probe record `[cycles, ns, last offset]`.
    /// - Preconditions: `chain` holds `words` offsets, each a multiple of 4 below `4 * words`;
    ///   `out` holds three `u64`; the launch gives `4 * words` dynamic shared bytes.
    pub fn chase_shared(block: Block, chain: GlobalIn<u32>, words: u32, warm: u32, steps: u32, out: GlobalOut<u64>) {
        shared_chase::<false>(block, chain, words, warm, steps, out)
    }
}

kernel! {
    /// Shared-memory latency, index chase: [`chase_shared`] with word indices in the array and
    /// the hop `j = s[j]` (the loaded value scaled by 4 and added to the array's base before
    /// the next `ld.shared.u32`), the chain the published microbenchmark tables time. The same
    /// chain and record as [`chase_shared`]; the difference per hop is the address arithmetic's
    /// latency.
    ///
    /// - Launch: one block, any size. Shared memory: `4 * words` bytes of dynamic shared memory.
    /// - `out`: the probe record `[cycles, ns, last word index]`.
    /// - Preconditions: as for [`chase_shared`].
    pub fn chase_shared_index(
        block: Block,
        chain: GlobalIn<u32>,
        words: u32,
        warm: u32,
        steps: u32,
        out: GlobalOut<u64>,
    ) {
        shared_chase::<true>(block, chain, words, warm, steps, out)
    }
}

kernel! {
    /// Local-memory latency: one thread copies a 32-word chain (next-word indices) into a
    /// per-thread array as local-window addresses, then follows `warm` links untimed and times
    /// `steps` with `ld.local.u32`. Local memory is per-thread memory in the global address
    /// space, cached in L1 (CUDA C++ Programming Guide, "Device Memory Accesses: Local Memory"):
    /// a 128-byte array stays in L1, so this is the latency of local memory on an L1 hit.
    ///
    /// - Launch: one block of one thread. Shared memory: none. Local memory: 128 bytes.
    /// - `out`: the probe record `[cycles, ns, last word index]`.
    /// - Preconditions: `chain` holds 32 indices, each below 32; `out` holds three `u64`.
    pub fn chase_local(chain: GlobalIn<u32>, warm: u32, steps: u32, out: GlobalOut<u64>) {
        let chain = chain.slice(LOCAL_CHAIN_WORDS);
        let (end, t) = local_chain::<LOCAL_CHAIN_WORDS, _>(
            |w| chain.get(w),
            |links| {
                let (p, t) = warm_then_time(links.first(), warm, steps, |p| links.next(p));
                (links.index(p), t)
            },
        );
        record(&mut probe_record(out), t, end as u64);
    }
}

kernel! {
    /// Constant-memory latency, broadcast against serialized: each lane of one warp starts at
    /// byte offset `4 * lane * lane_stride` of the `.const` chain and follows it with
    /// `ld.const.u32` (word `w` points at word `w + 32`). With `lane_stride = 0` all 32 lanes
    /// read one address per load (a broadcast, one constant-cache access); with
    /// `lane_stride = 1` they read 32 different addresses, which the constant cache serves one
    /// after another (CUDA C++ Programming Guide, "Device Memory Accesses: Constant Memory": a
    /// request is split into as many requests as there are different addresses).
    ///
    /// - Launch: one block of 32 threads. Shared memory: none. Memory level: constant (the
    ///   `memlab_const_chain` array, filled by the host).
    /// - `out`: lane 0 writes `[cycles, ns, its last offset]`; lane `l` writes its last byte
    ///   offset to `out[3 + l]`.
    /// - Preconditions: `lane_stride <= 7` (every start offset inside the chain); `out` holds 35
    ///   `u64`; the host has filled the chain.
    pub fn const_chase(lane_stride: u32, warm: u32, steps: u32, out: GlobalOut<u64>) {
        let lane = lane_id();
        let (off, t) = warm_then_time(4 * lane * lane_stride, warm, steps, const_chain_next);
        let mut out = out.slice(RECORD_WORDS);
        out.set(PROBE_RECORD_WORDS + lane as usize, off as u64);
        if lane == 0 {
            record(&mut out, t, off as u64);
        }
    }
}

kernel! {
    /// Register latency: one thread runs `steps` dependent FMAs `x = x * a + b` (each needs the
    /// previous result), timed by the SM clock; the time per step is the FMA pipeline's latency,
    /// the shortest dependent step a kernel can take with operands in registers.
    ///
    /// - Launch: one block of one thread. Shared memory: none. Memory level: registers.
    /// - `out`: `[cycles, ns, final x as f32 bits]` (three `u64`).
    pub fn register_chain(x: f32, a: f32, b: f32, steps: u32, out: GlobalOut<u64>) {
        let (x, t) = warm_then_time(x, 0, steps, |x| fma(x, a, b));
        record(&mut probe_record(out), t, x.to_bits() as u64);
    }
}

kernel! {
    /// The SM clock under a full FP32 load: every thread runs [`SM_CLOCK_CHAINS`] independent
    /// FMA chains `x = fma(x, a, b)` for `iters` rounds, chain `c` of lane `l` starting at
    /// `x0 + (SM_CLOCK_CHAINS * l + c) / 256`, and writes the sum of its chains in chain order
    /// to `sums[g]`. Thread 0 of each block reads `%clock64` and `%globaltimer` after a barrier
    /// before the chains and again after a barrier behind them (the sums stored first, so the
    /// arithmetic stays inside the window), and writes `[cycles, ns]` of its block to
    /// `clocks[2 * block ..]`: cycles over ns is the SM clock (GHz) while the FP32 pipes were
    /// busy, the clock the compute roof is drawn at (PTX ISA, "Special Registers: %clock64" and
    /// "%globaltimer").
    ///
    /// - Launch: one-dimensional, blocks of `SM_CLOCK_THREADS` threads, enough blocks to fill
    ///   every SM. Shared memory: none. Memory level: registers (one store per thread, one
    ///   record per block).
    /// - Buffers: `sums` holds one float per thread launched, `clocks` `SM_CLOCK_RECORD_WORDS`
    ///   words per block.
    pub fn sm_clock_under_load(
        block: Block,
        x0: f32,
        a: f32,
        b: f32,
        iters: u32,
        sums: GlobalOut<f32>,
        clocks: GlobalOut<u64>,
    ) {
        let barrier = block.barrier();
        let first = thread_idx_x() == 0;
        let mut x = [0.0f32; SM_CLOCK_CHAINS];
        for (c, v) in x.iter_mut().enumerate() {
            *v = x0 + (SM_CLOCK_CHAINS as u32 * lane_id() + c as u32) as f32 / 256.0;
        }
        barrier.sync(());
        let start = if first { (clock64(), globaltimer()) } else { (0, 0) };
        for _ in 0..iters {
            for v in x.iter_mut() {
                *v = fma(*v, a, b);
            }
        }
        let mut sum = 0.0f32;
        for v in x {
            sum += v;
        }
        sums.slice(grid_threads_x() as usize).set(global_idx_x() as usize, sum);
        barrier.sync(());
        if first {
            let (cycles, ns) = (clock64(), globaltimer());
            let mut clocks = clocks.slice(SM_CLOCK_RECORD_WORDS * grid_dim_x() as usize);
            let at = SM_CLOCK_RECORD_WORDS * block_idx_x() as usize;
            clocks.set(at, cycles.wrapping_sub(start.0));
            clocks.set(at + 1, ns.wrapping_sub(start.1));
        }
    }
}

/// The reads of [`read_cg`] and [`read_cg_unrolled`]: thread `g` of `T` sums the 16-byte
/// vectors `g, g + T, g + 2T, ...` below `vectors` with `ld.global.cg.v4.u32`, `passes` times,
/// `UNROLL` vectors per step: the step issues its `UNROLL` loads before it adds any of them, so
/// each thread has `UNROLL` loads in flight; the vectors past the last whole step are read one
/// at a time. Writes the wrapping sum of all words read to `out[g]`.
#[inline(always)]
fn read_cg_sum<const UNROLL: usize>(input: GlobalIn<u32>, vectors: u32, passes: u32, out: GlobalOut<u32>) {
    let g = global_idx_x();
    let threads = grid_threads_x();
    let input = input.slice(4 * vectors as usize);
    let load = |v: u32| input.get4_cg(4 * v as usize);
    let add = |sum: u32, w: [u32; 4]| sum.wrapping_add(w[0]).wrapping_add(w[1]).wrapping_add(w[2]).wrapping_add(w[3]);
    // Whole steps end where all `UNROLL` vectors of a step exist (`vectors >= span`).
    let span = (UNROLL as u32 - 1) * threads;
    let mut sum = 0u32;
    for _ in 0..passes {
        let mut v = g;
        while span < vectors && v < vectors - span {
            // `v + u * threads <= v + span < vectors`: inside `input`.
            let w: [[u32; 4]; UNROLL] = core::array::from_fn(|u| load(v + u as u32 * threads));
            for x in &w {
                sum = add(sum, *x);
            }
            v += UNROLL as u32 * threads;
        }
        while v < vectors {
            sum = add(sum, load(v));
            v += threads;
        }
    }
    out.slice(threads as usize).set(g as usize, sum);
}

kernel! {
    /// Read bandwidth through L2: every thread sums 16-byte vectors `g, g + T, g + 2T, ...` of
    /// `input` (`T` = threads launched, `vectors` in all) with `ld.global.cg.v4.u32` (not cached
    /// in L1), `passes` times over, and writes the wrapping sum of all their words to `out[g]`.
    /// One load per thread is in flight: each sum waits for its load. A buffer that fits L2,
    /// read many passes, measures L2 bandwidth; a buffer much larger than L2, read once,
    /// measures DRAM bandwidth.
    ///
    /// - Launch: one-dimensional, any block size. Shared memory: none.
    /// - Buffers: `input` holds `4 * vectors` words, 16-byte aligned; `out` holds one word per
    ///   thread.
    pub fn read_cg(input: GlobalIn<u32>, vectors: u32, passes: u32, out: GlobalOut<u32>) {
        read_cg_sum::<1>(input, vectors, passes, out)
    }
}

kernel! {
    /// [`read_cg`] with [`READ_CG_UNROLL`] loads in flight per thread: each step issues
    /// `READ_CG_UNROLL` independent 16-byte `ld.global.cg.v4.u32` before it adds them, so an SM
    /// full of threads keeps `READ_CG_UNROLL` times the bytes in flight (Little's law:
    /// bandwidth = bytes in flight / latency). Same sums, same output as [`read_cg`].
    ///
    /// - Launch: one-dimensional, any block size. Shared memory: none. Memory level: L2 (or
    ///   DRAM for a buffer much larger than L2).
    /// - Buffers: as for [`read_cg`].
    pub fn read_cg_unrolled(input: GlobalIn<u32>, vectors: u32, passes: u32, out: GlobalOut<u32>) {
        read_cg_sum::<READ_CG_UNROLL>(input, vectors, passes, out)
    }
}

// ANCHOR: local_array
/// The spill pair's body: thread `g < threads` loads its 16-float array
/// `a[j] = input[j * threads + g]` and `x = input[16 * threads + g]`, runs `iters` rounds of
/// `a[j] = fma(a[(j + shift) % 16], x, j)` for `j = 0..16` in order, and writes the sum of the
/// array in index order to `out[g]`. Inlined into both kernels: with a constant `shift` every
/// index is a constant once the `j` loop is unrolled, with a runtime one it is not.
#[inline(always)]
fn local_array_rounds(input: GlobalIn<f32>, out: GlobalOut<f32>, threads: u32, iters: u32, shift: usize) {
    let g = global_idx_x();
    if g >= threads {
        return;
    }
    let (g, threads) = (g as usize, threads as usize);
    let input = input.slice((LOCAL_ARRAY_WORDS + 1) * threads);
    let mut a = [0.0f32; LOCAL_ARRAY_WORDS];
    for (j, v) in a.iter_mut().enumerate() {
        *v = input.get(j * threads + g);
    }
    let x = input.get(LOCAL_ARRAY_WORDS * threads + g);
    for _ in 0..iters {
        for j in 0..LOCAL_ARRAY_WORDS {
            a[j] = fma(a[(j + shift) % LOCAL_ARRAY_WORDS], x, j as f32);
        }
    }
    let mut sum = 0.0f32;
    for v in a {
        sum += v;
    }
    out.slice(threads).set(g, sum);
}

kernel! {
    /// Spill lesson, register half: every thread keeps a 16-float array and updates each
    /// element from its neighbour, `a[j] = fma(a[(j + 1) % 16], x, j)` (see
    /// [`local_array_rounds`]). Every index is a compile-time constant, so the array lives in
    /// registers.
    ///
    /// Input layout: `input[j * threads + g]` is `a[j]` of thread `g`, `input[16 * threads + g]`
    /// its `x`. Output: `out[g]` = the sum of the final array in index order.
    ///
    /// - Launch: one-dimensional, any block size. Shared memory: none. Memory level: registers.
    /// - Buffers: `input` holds `17 * threads` floats, `out` holds `threads`.
    pub fn local_array_constant_index(input: GlobalIn<f32>, out: GlobalOut<f32>, threads: u32, iters: u32) {
        local_array_rounds(input, out, threads, iters, 1)
    }
}

kernel! {
    /// Spill lesson, local-memory half: [`local_array_constant_index`] with the neighbour read
    /// at the runtime offset `shift` (`a[(j + shift) % 16]`) instead of the constant 1.
    /// Registers cannot be indexed at run time, so the array goes to local memory:
    /// `ld.local`/`st.local` in the PTX and a stack frame in `ptxas -v`. With `shift = 1` both
    /// kernels compute the same result.
    ///
    /// - Launch: one-dimensional, any block size. Shared memory: none. Memory level: local
    ///   memory (per-thread, cached in L1).
    /// - Buffers: as for [`local_array_constant_index`].
    pub fn local_array_runtime_index(
        input: GlobalIn<f32>,
        out: GlobalOut<f32>,
        threads: u32,
        iters: u32,
        shift: u32,
    ) {
        local_array_rounds(input, out, threads, iters, shift as usize)
    }
}
// ANCHOR_END: local_array
