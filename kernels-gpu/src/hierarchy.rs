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

use core::arch::{asm, global_asm};

pub use memlab_contracts::hierarchy::{
    CONST_CHAIN_WORDS, LOCAL_ARRAY_WORDS, LOCAL_CHAIN_WORDS, READ_CG_UNROLL, SM_CLOCK_CHAINS, SM_CLOCK_RECORD_WORDS,
};

use crate::device::probe::{clock64, globaltimer, load_cg4, shared_address};
use crate::device::{block_dim_x, block_idx_x, dynamic_shared, fma, global_idx_x, lane_id, sync_threads, thread_idx_x};

// The constant-memory chain: Rust has no `__constant__`, so the array is declared in the PTX
// `.const` state space here and the host fills it with `cuModuleGetGlobal` + a copy (what
// `cudaMemcpyToSymbol` does). Word `w` holds the byte offset of word `(w + 32) mod 256`.
global_asm!(".visible .const .align 4 .b32 memlab_const_chain[{}];", const CONST_CHAIN_WORDS);

/// Follows a chain: `warm` links untimed, then `steps` links between two clock reads. `hop`
/// is one dependent load (its result is the next load's address). Returns the end of the
/// chain and the timestamps the timed loads started at.
#[inline(always)]
fn warm_then_time<P>(start: P, warm: u32, steps: u32, hop: impl Fn(P) -> P) -> (P, (u64, u64)) {
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

/// Writes the probe record `[cycles, ns, end]` to `out`, the clock read at once.
///
/// # Safety
/// `out` holds three `u64`.
#[inline(always)]
unsafe fn record(out: *mut u64, start: (u64, u64), end: u64) {
    let (cycles, ns) = (clock64(), globaltimer());
    unsafe {
        *out = cycles.wrapping_sub(start.0);
        *out.add(1) = ns.wrapping_sub(start.1);
        *out.add(2) = end;
    }
}

// ANCHOR: global_chase
/// The global chase (see [`chase_global`]); `L2_ONLY` picks the load: `ld.global.cg` (cache in
/// L2, not in L1) or a plain `ld.global`, the load every kernel uses, cached in L1 as well by
/// default on cc >= 7.0 (CUDA C++ Programming Guide, "Compute Capabilities", global memory of
/// 7.x, 8.x and 9.0).
///
/// # Safety
/// Every address on the chain from `start` is a valid, 8-byte aligned global address holding
/// the next one; `out` holds three `u64`.
#[inline(always)]
unsafe fn global_chase<const L2_ONLY: bool>(start: u64, warm: u32, steps: u32, out: *mut u64) {
    let hop = |mut p: u64| {
        // SAFETY: the caller's chain invariant; the loaded value is the next address.
        unsafe {
            if L2_ONLY {
                asm!("ld.global.cg.u64 {0}, [{0}];", inout(reg64) p);
            } else {
                asm!("ld.global.u64 {0}, [{0}];", inout(reg64) p);
            }
        }
        p
    };
    let (p, t) = warm_then_time(start, warm, steps, hop);
    unsafe { record(out, t, p) };
}
// ANCHOR_END: global_chase

/// Global-memory latency, default caching (L1 and L2): one thread follows `warm` links
/// untimed (to fill the caches with the chain), then times `steps` more with a plain
/// `ld.global`. The host lays the chain out as a random cycle of 128-byte lines, so every load
/// depends on the previous one and no two consecutive loads share a line: the time per load is
/// the latency of the level that holds the chain's working set (L1, L2 or DRAM).
///
/// - Launch: one block of one thread. Shared memory: none.
/// - `out`: the probe record `[cycles, ns, last address]`.
///
/// # Safety
/// As for [`global_chase`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn chase_global(start: u64, warm: u32, steps: u32, out: *mut u64) {
    unsafe { global_chase::<false>(start, warm, steps, out) }
}

/// Global-memory latency through L2 only: [`chase_global`] with `ld.global.cg`, which does
/// not allocate in L1, so a chain that would fit L1 is served by L2.
///
/// # Safety
/// As for [`chase_global`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn chase_global_cg(start: u64, warm: u32, steps: u32, out: *mut u64) {
    unsafe { global_chase::<true>(start, warm, steps, out) }
}

/// The shared-memory chase (see [`chase_shared`]). With `INDEX = false` each word holds the
/// shared-window address of the next word, and a hop is one `ld.shared.u32 p, [p]`: the loaded
/// value is the next address as it is. With `INDEX = true` each word holds the next word's
/// index, and a hop is `j = s[j]` as CUDA C++ writes it: `shl.b32` and `add.u32` turn the index
/// into an address before the `ld.shared.u32`, so every hop also waits for that arithmetic.
///
/// # Safety
/// As for [`chase_shared`].
#[inline(always)]
unsafe fn shared_chase<const INDEX: bool>(chain: *const u32, words: u32, warm: u32, steps: u32, out: *mut u64) {
    let array = dynamic_shared::<u32>();
    let base = shared_address(array);
    let mut w = thread_idx_x();
    while w < words {
        let offset = unsafe { *chain.add(w as usize) };
        unsafe { *array.add(w as usize) = if INDEX { offset / 4 } else { base + offset } };
        w += block_dim_x();
    }
    unsafe { sync_threads() };
    if thread_idx_x() != 0 {
        return;
    }
    let hop = |mut p: u32| {
        // SAFETY: every word of the array holds the shared address (or the index) of another
        // of its words.
        unsafe {
            if INDEX {
                asm!(
                    "shl.b32 {a}, {j}, 2;",
                    "add.u32 {a}, {a}, {base};",
                    "ld.shared.u32 {j}, [{a}];",
                    j = inout(reg32) p,
                    base = in(reg32) base,
                    a = out(reg32) _,
                )
            } else {
                asm!("ld.shared.u32 {0}, [{0}];", inout(reg32) p)
            }
        };
        p
    };
    let (p, t) = warm_then_time(if INDEX { 0 } else { base }, warm, steps, hop);
    // The index as it is: scaling it here would put an instruction inside the timed window.
    unsafe { record(out, t, if INDEX { p } else { p - base } as u64) };
}

/// Shared-memory latency, address chase: the block copies `words` words of `chain` (byte
/// offsets inside the array, one link per 128-byte slot) into dynamic shared memory as
/// shared-window addresses, then thread 0 follows `warm` links untimed and times `steps` with
/// `ld.shared.u32`, each load's result being the next load's address (no arithmetic between
/// two loads: the shortest dependent step shared memory allows).
///
/// - Launch: one block, any size. Shared memory: `4 * words` bytes of dynamic shared memory.
/// - `out`: the probe record `[cycles, ns, last offset]`.
///
/// # Safety
/// `chain` holds `words` offsets, each a multiple of 4 below `4 * words`; `out` holds three
/// `u64`; the launch gives `4 * words` dynamic shared bytes.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn chase_shared(chain: *const u32, words: u32, warm: u32, steps: u32, out: *mut u64) {
    unsafe { shared_chase::<false>(chain, words, warm, steps, out) }
}

/// Shared-memory latency, index chase: [`chase_shared`] with word indices in the array and the
/// hop `j = s[j]` (the loaded value scaled by 4 and added to the array's base before the next
/// `ld.shared.u32`), the chain the published microbenchmark tables time. The same chain and
/// record as [`chase_shared`]; the difference per hop is the address arithmetic's latency.
///
/// - Launch: one block, any size. Shared memory: `4 * words` bytes of dynamic shared memory.
/// - `out`: the probe record `[cycles, ns, last word index]`.
///
/// # Safety
/// As for [`chase_shared`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn chase_shared_index(
    chain: *const u32,
    words: u32,
    warm: u32,
    steps: u32,
    out: *mut u64,
) {
    unsafe { shared_chase::<true>(chain, words, warm, steps, out) }
}

/// Local-memory latency: one thread copies a 32-word chain (next-word indices) into a
/// per-thread array as local-window addresses, then follows `warm` links untimed and times
/// `steps` with `ld.local.u32`. Local memory is per-thread memory in the global address space,
/// cached in L1 (CUDA C++ Programming Guide, "Device Memory Accesses: Local Memory"): a 128-byte
/// array stays in L1, so this is the latency of local memory on an L1 hit.
///
/// - Launch: one block of one thread. Shared memory: none. Local memory: 128 bytes.
/// - `out`: the probe record `[cycles, ns, last word index]`.
///
/// # Safety
/// `chain` holds 32 indices, each below 32; `out` holds three `u64`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn chase_local(chain: *const u32, warm: u32, steps: u32, out: *mut u64) {
    // Uninitialised: every word is written below, and a zeroing loop would only add stores.
    let mut array = core::mem::MaybeUninit::<[u32; LOCAL_CHAIN_WORDS]>::uninit();
    let words = array.as_mut_ptr() as *mut u32;
    let base: u64;
    // SAFETY: `array` lives on the thread's stack, in the local window `cvta.to.local` maps to.
    unsafe { asm!("cvta.to.local.u64 {}, {};", out(reg64) base, in(reg64) words as u64) };
    let base = base as u32;
    for w in 0..LOCAL_CHAIN_WORDS {
        unsafe { words.add(w).write(base + 4 * *chain.add(w)) };
    }
    let hop = |mut p: u32| {
        // SAFETY: every word of `array` holds the local address of another of its words; the
        // asm reads memory, so the stores above stay before it.
        unsafe { asm!("ld.local.u32 {0}, [{0}];", inout(reg32) p) };
        p
    };
    let (p, t) = warm_then_time(base, warm, steps, hop);
    unsafe { record(out, t, ((p - base) / 4) as u64) };
}

/// Constant-memory latency, broadcast against serialized: each lane of one warp starts at byte
/// offset `4 * lane * lane_stride` of the `.const` chain and follows it with `ld.const.u32`
/// (word `w` points at word `w + 32`). With `lane_stride = 0` all 32 lanes read one address per
/// load (a broadcast, one constant-cache access); with `lane_stride = 1` they read 32 different
/// addresses, which the constant cache serves one after another (CUDA C++ Programming Guide,
/// "Device Memory Accesses: Constant Memory": a request is split into as many requests as there
/// are different addresses).
///
/// - Launch: one block of 32 threads. Shared memory: none. Memory level: constant (the
///   `memlab_const_chain` array, filled by the host).
/// - `out`: lane 0 writes `[cycles, ns, its last offset]`; lane `l` writes its last byte offset
///   to `out[3 + l]`.
///
/// # Safety
/// `lane_stride <= 7` (every start offset inside the chain); `out` holds 35 `u64`; the host has
/// filled the chain.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn const_chase(lane_stride: u32, warm: u32, steps: u32, out: *mut u64) {
    let hop = |mut off: u32| {
        // SAFETY: every word of the chain holds a byte offset of another of its words.
        unsafe {
            asm!(
                "mov.u32 {a}, memlab_const_chain;",
                "add.u32 {a}, {a}, {off};",
                "ld.const.u32 {off}, [{a}];",
                off = inout(reg32) off,
                a = out(reg32) _,
            )
        };
        off
    };
    let lane = lane_id();
    let (off, t) = warm_then_time(4 * lane * lane_stride, warm, steps, hop);
    unsafe {
        *out.add(3 + lane as usize) = off as u64;
        if lane == 0 {
            record(out, t, off as u64);
        }
    }
}

/// Register latency: one thread runs `steps` dependent FMAs `x = x * a + b` (each needs the
/// previous result), timed by the SM clock; the time per step is the FMA pipeline's latency,
/// the shortest dependent step a kernel can take with operands in registers.
///
/// - Launch: one block of one thread. Shared memory: none. Memory level: registers.
/// - `out`: `[cycles, ns, final x as f32 bits]`.
///
/// # Safety
/// `out` holds three `u64`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn register_chain(x: f32, a: f32, b: f32, steps: u32, out: *mut u64) {
    let (x, t) = warm_then_time(x, 0, steps, |x| fma(x, a, b));
    unsafe { record(out, t, x.to_bits() as u64) };
}

/// The SM clock under a full FP32 load: every thread runs [`SM_CLOCK_CHAINS`] independent FMA
/// chains `x = fma(x, a, b)` for `iters` rounds, chain `c` of lane `l` starting at
/// `x0 + (SM_CLOCK_CHAINS * l + c) / 256`, and writes the sum of its chains in chain order to
/// `sums[g]`. Thread 0 of each block reads `%clock64` and `%globaltimer` after a barrier before
/// the chains and again after a barrier behind them (the sums stored first, so the arithmetic
/// stays inside the window), and writes `[cycles, ns]` of its block to
/// `clocks[2 * block ..]`: cycles over ns is the SM clock (GHz) while the FP32 pipes were busy,
/// the clock the compute roof is drawn at (PTX ISA, "Special Registers: %clock64" and
/// "%globaltimer").
///
/// - Launch: one-dimensional, blocks of `SM_CLOCK_THREADS` threads, enough blocks to fill every
///   SM. Shared memory: none. Memory level: registers (one store per thread, one record per
///   block).
///
/// # Safety
/// `sums` holds one float per thread launched, `clocks` `SM_CLOCK_RECORD_WORDS` words per block.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn sm_clock_under_load(
    x0: f32,
    a: f32,
    b: f32,
    iters: u32,
    sums: *mut f32,
    clocks: *mut u64,
) {
    let first = thread_idx_x() == 0;
    let mut x = [0.0f32; SM_CLOCK_CHAINS];
    for (c, v) in x.iter_mut().enumerate() {
        *v = x0 + (SM_CLOCK_CHAINS as u32 * lane_id() + c as u32) as f32 / 256.0;
    }
    unsafe { sync_threads() };
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
    unsafe {
        *sums.add(global_idx_x() as usize) = sum;
        sync_threads();
    }
    if first {
        let (cycles, ns) = (clock64(), globaltimer());
        let out = unsafe { clocks.add(SM_CLOCK_RECORD_WORDS * block_idx_x() as usize) };
        unsafe {
            *out = cycles.wrapping_sub(start.0);
            *out.add(1) = ns.wrapping_sub(start.1);
        }
    }
}

/// The reads of [`read_cg`] and [`read_cg_unrolled`]: thread `g` of `T` sums the 16-byte
/// vectors `g, g + T, g + 2T, ...` below `vectors` with `ld.global.cg.v4.u32`, `passes` times,
/// `UNROLL` vectors per step: the step issues its `UNROLL` loads before it adds any of them, so
/// each thread has `UNROLL` loads in flight; the vectors past the last whole step are read one
/// at a time. Writes the wrapping sum of all words read to `out[g]`.
///
/// # Safety
/// As for [`read_cg`].
#[inline(always)]
unsafe fn read_cg_sum<const UNROLL: usize>(input: *const u32, vectors: u32, passes: u32, out: *mut u32) {
    let g = global_idx_x();
    // SAFETY: reading a special register has no preconditions inside a kernel.
    let threads = unsafe { core::arch::nvptx::_grid_dim_x() } * block_dim_x();
    let load = |v: u32| unsafe { load_cg4(input.add(4 * v as usize)) };
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
            // SAFETY: `v < vectors`.
            sum = add(sum, load(v));
            v += threads;
        }
    }
    unsafe { *out.add(g as usize) = sum };
}

/// Read bandwidth through L2: every thread sums 16-byte vectors `g, g + T, g + 2T, ...` of
/// `input` (`T` = threads launched, `vectors` in all) with `ld.global.cg.v4.u32` (not cached
/// in L1), `passes` times over, and writes the wrapping sum of all their words to `out[g]`.
/// One load per thread is in flight: each sum waits for its load. A buffer that fits L2, read
/// many passes, measures L2 bandwidth; a buffer much larger than L2, read once, measures DRAM
/// bandwidth.
///
/// - Launch: one-dimensional, any block size. Shared memory: none.
///
/// # Safety
/// `input` holds `4 * vectors` words, 16-byte aligned; `out` holds one word per thread.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn read_cg(input: *const u32, vectors: u32, passes: u32, out: *mut u32) {
    unsafe { read_cg_sum::<1>(input, vectors, passes, out) }
}

/// [`read_cg`] with [`READ_CG_UNROLL`] loads in flight per thread: each step issues
/// `READ_CG_UNROLL` independent 16-byte `ld.global.cg.v4.u32` before it adds them, so an SM
/// full of threads keeps `READ_CG_UNROLL` times the bytes in flight (Little's law: bandwidth =
/// bytes in flight / latency). Same sums, same output as [`read_cg`].
///
/// - Launch: one-dimensional, any block size. Shared memory: none. Memory level: L2 (or DRAM
///   for a buffer much larger than L2).
///
/// # Safety
/// As for [`read_cg`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn read_cg_unrolled(input: *const u32, vectors: u32, passes: u32, out: *mut u32) {
    unsafe { read_cg_sum::<READ_CG_UNROLL>(input, vectors, passes, out) }
}

// ANCHOR: local_array
/// The spill pair's body: thread `g < threads` loads its 16-float array
/// `a[j] = input[j * threads + g]` and `x = input[16 * threads + g]`, runs `iters` rounds of
/// `a[j] = fma(a[(j + shift) % 16], x, j)` for `j = 0..16` in order, and writes the sum of the
/// array in index order to `out[g]`. Inlined into both kernels: with a constant `shift` every
/// index is a constant once the `j` loop is unrolled, with a runtime one it is not.
///
/// # Safety
/// `input` holds `17 * threads` floats, `out` holds `threads`.
#[inline(always)]
unsafe fn local_array_rounds(input: *const f32, out: *mut f32, threads: u32, iters: u32, shift: usize) {
    let g = global_idx_x();
    if g >= threads {
        return;
    }
    let (g, threads) = (g as usize, threads as usize);
    let mut a = [0.0f32; LOCAL_ARRAY_WORDS];
    for (j, v) in a.iter_mut().enumerate() {
        *v = unsafe { *input.add(j * threads + g) };
    }
    let x = unsafe { *input.add(LOCAL_ARRAY_WORDS * threads + g) };
    for _ in 0..iters {
        for j in 0..LOCAL_ARRAY_WORDS {
            a[j] = fma(a[(j + shift) % LOCAL_ARRAY_WORDS], x, j as f32);
        }
    }
    let mut sum = 0.0f32;
    for v in a {
        sum += v;
    }
    unsafe { *out.add(g) = sum };
}

/// Spill lesson, register half: every thread keeps a 16-float array and updates each element
/// from its neighbour, `a[j] = fma(a[(j + 1) % 16], x, j)` (see [`local_array_rounds`]). Every
/// index is a compile-time constant, so the array lives in registers.
///
/// Input layout: `input[j * threads + g]` is `a[j]` of thread `g`, `input[16 * threads + g]`
/// its `x`. Output: `out[g]` = the sum of the final array in index order.
///
/// - Launch: one-dimensional, any block size. Shared memory: none. Memory level: registers.
///
/// # Safety
/// `input` holds `17 * threads` floats, `out` holds `threads`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn local_array_constant_index(
    input: *const f32,
    out: *mut f32,
    threads: u32,
    iters: u32,
) {
    unsafe { local_array_rounds(input, out, threads, iters, 1) }
}

/// Spill lesson, local-memory half: [`local_array_constant_index`] with the neighbour read at
/// the runtime offset `shift` (`a[(j + shift) % 16]`) instead of the constant 1. Registers
/// cannot be indexed at run time, so the array goes to local memory: `ld.local`/`st.local` in
/// the PTX and a stack frame in `ptxas -v`. With `shift = 1` both kernels compute the same
/// result.
///
/// - Launch: one-dimensional, any block size. Shared memory: none. Memory level: local memory
///   (per-thread, cached in L1).
///
/// # Safety
/// As for [`local_array_constant_index`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn local_array_runtime_index(
    input: *const f32,
    out: *mut f32,
    threads: u32,
    iters: u32,
    shift: u32,
) {
    unsafe { local_array_rounds(input, out, threads, iters, shift as usize) }
}
// ANCHOR_END: local_array
