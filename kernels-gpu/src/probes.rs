//! Probes: kernels that exist to be timed, each isolating one memory effect.

pub use memlab_contracts::probes::{
    BANK_PROBE_UNROLL, BANK_PROBE_WINDOW, BANK_PROBE_WORDS, MISALIGNED_READS_PER_THREAD, PRESSURE_ACCUMULATORS,
    STRIDED_READS_PER_THREAD, WIDE_PROBE_ROW, WIDE_PROBE_SMEM, WIDE_PROBE_WINDOW, bank_probe_word,
};

use crate::device::{block_dim_x, dynamic_shared, fma, global_idx_x, lane_id, sync_threads, thread_idx_x};

// ANCHOR: strided_read
/// Global-memory coalescing probe: warp lanes read words `stride` elements apart.
///
/// Thread `g < threads` reads the 4-byte words at element index `(g + r * threads) * stride`
/// for `r` in `0..8` and writes their wrapping sum to `partial[g]`; consecutive lanes are
/// `4 * stride` bytes apart, so one warp request touches between 4 (stride 1) and 32
/// (stride >= 8) 32-byte sectors. The sum keeps every load live (the host checks it).
///
/// - Launch: one-dimensional, any block size, at least `threads` threads in all.
/// - Shared memory: none. Memory level: global (DRAM through L2; each word is read once).
///
/// # Safety
/// `input` holds at least `8 * threads * stride` words, `partial` at least `threads`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn strided_read(input: *const u32, partial: *mut u32, threads: u32, stride: u32) {
    let g = global_idx_x();
    if g >= threads {
        return;
    }
    let (g, threads, stride) = (g as usize, threads as usize, stride as usize);
    let mut sum = 0u32;
    for r in 0..STRIDED_READS_PER_THREAD {
        sum = sum.wrapping_add(unsafe { *input.add((g + r * threads) * stride) });
    }
    unsafe { *partial.add(g) = sum };
}
// ANCHOR_END: strided_read

// ANCHOR: shared_bank_probe
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
///
/// # Safety
/// `stride <= 33`; `out` holds one word per launched thread; 16384 dynamic shared bytes.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn shared_bank_probe(out: *mut u32, stride: u32, iters: u32) {
    let words = dynamic_shared::<u32>();
    let mut w = thread_idx_x();
    while (w as usize) < BANK_PROBE_WORDS {
        unsafe { *words.add(w as usize) = bank_probe_word(w) };
        w += block_dim_x();
    }
    unsafe { sync_threads() };
    let lane_words = unsafe { words.add((lane_id() * stride) as usize) };
    let mut sum = 0u32;
    let mut offset = 0usize;
    for _ in 0..iters as usize / BANK_PROBE_UNROLL {
        let step = unsafe { lane_words.add(offset) };
        for u in 0..BANK_PROBE_UNROLL {
            sum = sum.wrapping_add(unsafe { *step.add(u * 32) });
        }
        offset = (offset + BANK_PROBE_UNROLL * 32) & (BANK_PROBE_WINDOW - 1);
    }
    unsafe { *out.add(global_idx_x() as usize) = sum };
}
// ANCHOR_END: shared_bank_probe

/// A 16-byte shared-memory word, so a load of it is one `ld.shared.v4.u32`.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct U4([u32; 4]);

/// The body of the wide bank probes: lane `t` of every warp loads `size_of::<T>()` bytes at
/// byte `offsets[t]` plus a step offset that is a multiple of 128 bytes (so every load has the
/// lane pattern's banks), and folds what it read into a wrapping sum with `fold`.
///
/// # Safety
/// As for [`shared_bank_probe_8`].
#[inline(always)]
unsafe fn wide_bank_probe<T: Copy>(offsets: *const u32, out: *mut u32, iters: u32, fold: impl Fn(T) -> u32) {
    let words = dynamic_shared::<u32>();
    let mut w = thread_idx_x();
    while w < WIDE_PROBE_SMEM / 4 {
        unsafe { *words.add(w as usize) = bank_probe_word(w) };
        w += block_dim_x();
    }
    unsafe { sync_threads() };
    let lane = unsafe { dynamic_shared::<u8>().add(*offsets.add(lane_id() as usize) as usize) };
    let mut sum = 0u32;
    let mut offset = 0usize;
    for _ in 0..iters as usize / BANK_PROBE_UNROLL {
        let step = unsafe { lane.add(offset) };
        for u in 0..BANK_PROBE_UNROLL {
            sum = sum.wrapping_add(fold(unsafe { *step.add(u * WIDE_PROBE_ROW).cast::<T>() }));
        }
        offset = (offset + BANK_PROBE_UNROLL * WIDE_PROBE_ROW) & (WIDE_PROBE_WINDOW - 1);
    }
    unsafe { *out.add(global_idx_x() as usize) = sum };
}

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
///
/// # Safety
/// `offsets` holds 32 multiples of 8 below `WIDE_PROBE_MAX_OFFSET` (16384); `iters` is a
/// multiple of 8; 32768 dynamic shared bytes.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn shared_bank_probe_8(offsets: *const u32, out: *mut u32, iters: u32) {
    unsafe { wide_bank_probe::<u64>(offsets, out, iters, |v| (v as u32).wrapping_add((v >> 32) as u32)) }
}

/// Shared-memory bank probe for 16-byte loads (`ld.shared.v4.b32`), as [`shared_bank_probe_8`]
/// with 16-byte words: phases of a quarter warp, so a conflict-free request costs 4 wavefronts.
///
/// - Launch and shared memory: as for [`shared_bank_probe_8`]. Memory level: shared.
///
/// # Safety
/// As for [`shared_bank_probe_8`], with offsets multiples of 16.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn shared_bank_probe_16(offsets: *const u32, out: *mut u32, iters: u32) {
    unsafe {
        wide_bank_probe::<U4>(offsets, out, iters, |U4(v)| {
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
///
/// # Safety
/// `input` holds `iters * threads` floats, `out` holds `threads`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn register_pressure(input: *const f32, out: *mut f32, threads: u32, iters: u32) {
    let g = global_idx_x();
    if g >= threads {
        return;
    }
    let (g, threads) = (g as usize, threads as usize);
    let mut acc = [0.0f32; PRESSURE_ACCUMULATORS];
    for i in 0..iters as usize {
        let x = unsafe { *input.add(g + i * threads) };
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
    unsafe { *out.add(g) = sum };
}
// ANCHOR_END: register_pressure

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
///
/// # Safety
/// `offset <= 32`; `input` holds at least `8 * threads + 32` words, `partial` at least
/// `threads`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn misaligned_read(input: *const u32, partial: *mut u32, threads: u32, offset: u32) {
    let g = global_idx_x();
    if g >= threads {
        return;
    }
    let (g, threads, base) = (g as usize, threads as usize, unsafe { input.add(offset as usize) });
    let mut sum = 0u32;
    for r in 0..MISALIGNED_READS_PER_THREAD {
        sum = sum.wrapping_add(unsafe { *base.add(g + r * threads) });
    }
    unsafe { *partial.add(g) = sum };
}
