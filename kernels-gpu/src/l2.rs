//! The L2 lesson: a hot buffer re-read amid a streaming one (what an access-policy window with
//! persisting lines speeds up), and a pointer chase pinned to one SM, each hop timed on its own
//! (which of the L2's two partitions served it).
//!
//! Both work on any GPU the lab builds for; persisting accesses are a property of the stream the
//! host launches on (cc 8.0 and later; CUDA C++ Programming Guide, "L2 Cache Set-Aside for
//! Persisting Accesses"), not of the kernel's instructions.

pub use memlab_contracts::l2::{CHASE_SM_HEADER_WORDS, CHASE_SM_SCRATCH_BYTES};

use crate::device::probe::{ChainAddr, LoadCg, Scratch, smid};
use crate::device::{GlobalIn, GlobalOut, global_idx_x, grid_threads_x, kernel, thread_idx_x};

kernel! {
    /// The hot buffer re-read amid a streaming one: thread `g` of `T` sums, for every 16-byte
    /// vector `v = g, g + T, g + 2T, ...` below `stream_vectors`, the words of `stream[v]` and
    /// of `hot[v & hot_mask]` (both `ld.global.cg.v4.u32`, issued before either is added), and
    /// writes the wrapping sum to `out[g]`. The stream is read once; the hot buffer
    /// `stream_vectors / (hot_mask + 1)` times, one hot byte per streamed byte, so between two
    /// reads of a hot line the kernel reads the whole hot buffer and as many streamed bytes:
    /// `2 x hot bytes` of traffic. When that exceeds the L2, least-recently-used replacement
    /// evicts every hot line before its next read, unless the hot buffer's lines are
    /// persisting (an access-policy window on the launch's stream).
    ///
    /// - Launch: one-dimensional, any block size (`HOT_STREAM_THREADS`). Shared memory: none.
    ///   Memory level: DRAM (the stream) and L2 (the hot buffer, when it stays).
    /// - Buffers: `stream` holds `4 * stream_vectors` words and `hot` `4 * (hot_mask + 1)`
    ///   words, both 16-byte aligned; `hot_mask + 1` is a power of two; `out` holds one word per
    ///   thread.
    pub fn hot_stream_read(
        stream: GlobalIn<u32>,
        stream_vectors: u32,
        hot: GlobalIn<u32>,
        hot_mask: u32,
        out: GlobalOut<u32>,
    ) {
        let g = global_idx_x();
        let threads = grid_threads_x();
        let stream = stream.slice(4 * stream_vectors as usize);
        let hot = hot.slice(4 * (hot_mask as usize + 1));
        let mut sum = 0u32;
        let mut v = g;
        while v < stream_vectors {
            // `v < stream_vectors` and `v & hot_mask <= hot_mask`: inside both buffers.
            let (s, h) = (stream.get4_cg(4 * v as usize), hot.get4_cg(4 * (v & hot_mask) as usize));
            for u in 0..4 {
                sum = sum.wrapping_add(s[u]).wrapping_add(h[u]);
            }
            v += threads;
        }
        out.slice(threads as usize).set(g as usize, sum);
    }
}

kernel! {
    /// An L2 pointer chase on one chosen SM, each hop timed: every block reads `%smid`; the
    /// block on SM `sm` (lane 0 of it) follows the chain at `start` with `ld.global.cg.u64`
    /// (L2, not L1), `warm` links untimed, then `steps` links each between two `%clock64` reads
    /// (the loaded address is stored to shared memory before the second read, so the window
    /// closes when the load has returned). Every other block returns at once. Launched with one
    /// block per SM, it runs a chase on any SM the host names, so the host can time the same
    /// lines from every SM, after any SM brought them into L2.
    ///
    /// - Launch: one block of `CHASE_SM_THREADS` threads per SM, with enough dynamic shared
    ///   memory that no two blocks share an SM (at least 8 bytes: the store's scratch word).
    /// - `out`: `[sm, cycles of the timed hops, last address, cycles of hop 0, hop 1, ...]`
    ///   (`CHASE_SM_HEADER_WORDS + steps` words), written by the block on SM `sm` only.
    /// - Preconditions: every address on the chain from `start` is an 8-byte aligned global
    ///   address holding the next one ([`ChainAddr`]); at most one block runs on each SM (so
    ///   one block at most matches `sm`).
    pub fn chase_l2_on_sm(block: Block, start: ChainAddr, sm: u32, warm: u32, steps: u32, out: GlobalOut<u64>) {
        if thread_idx_x() != 0 || smid() != sm {
            return;
        }
        let (_, mut scratch) = block.carve_slice::<u64>(CHASE_SM_SCRATCH_BYTES as usize / size_of::<u64>());
        let mut scratch = Scratch::of(&mut scratch);
        let mut p = start;
        for _ in 0..warm {
            p = p.next::<true>();
        }
        let mut out = out.slice(CHASE_SM_HEADER_WORDS + steps as usize);
        let mut total = 0u64;
        for i in 0..steps as usize {
            let (next, cycles) = p.next_cg_timed(&mut scratch);
            p = next;
            total += cycles;
            out.set(CHASE_SM_HEADER_WORDS + i, cycles);
        }
        out.set(0, sm as u64);
        out.set(1, total);
        out.set(2, p.address());
    }
}
