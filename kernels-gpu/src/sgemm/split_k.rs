//! The split-K rung (compiled for `sm_80` and up with rung 8): rung 6's block tile (rung 8's
//! `Registers` configuration `128 x 128 x 8`, warps of `32 x 64`, threads of `8 x 8`,
//! `memlab_contracts::sgemm::SPLIT_K_CONFIG`) computed over one range of `k` per block, so that
//! a product of few tiles still has a block for every SM. Each split writes its partial tile to
//! its own `m x n` slice of a workspace; [`sgemm_split_k_reduce`] sums the slices into `C` in
//! split order, so the result does not depend on which block finished first (deterministic).
//!
//! The partial sums cost `splits x m x n x 4` bytes written and read back through L2 (DRAM
//! beyond it): the host's model (`host/src/model/split_k.rs`) weighs them against the idle SMs
//! a split fills.

use super::{Gemm, Tiles};
use crate::device::{GlobalIn, GlobalOut, block_idx_x, block_idx_y, global_idx_x, kernel};

kernel! {
/// The split-K rung's product: block `(x, y)` computes the `128 x 128` tile at block row `y`,
/// block column `x % ceil(n / 128)` of `C` over the depth steps (of 8) `s split_steps ..
/// (s + 1) split_steps` (the last split up to `ceil(k / 8)`), `s = x / ceil(n / 128)` its split,
/// and stores it to slice `s` of `w` (`w[s m n + r n + c]`): rung 8's `Tiles::registers` body.
///
/// - Launch: block `256` threads, grid `(splits ceil(n / 128), ceil(m / 128))`, `splits =
///   memlab_contracts::sgemm::splits_used(k, 8, asked)` and `split_steps =
///   memlab_contracts::sgemm::split_steps(k, 8, asked)`.
/// - Shared memory: the configuration's `Tuned::smem_bytes`, 16640 dynamic bytes (two stages).
/// - Memory level: shared tiles through registers, accumulators in registers; the partial tiles
///   go to global memory (L2).
/// - Buffers: `a`, `b` as in the module doc of `sgemm`; `w` holds `splits m n` floats. All
///   16-byte aligned. In the sm_80 and sm_90 PTX.
pub fn sgemm_split_k_128x128(
    block: Block,
    a: GlobalIn<f32>,
    b: GlobalIn<f32>,
    w: GlobalOut<f32>,
    m: u32,
    n: u32,
    k: u32,
    split_steps: u32,
) {
    let tiles_x = n.div_ceil(128);
    let (split, tx) = (block_idx_x() / tiles_x, block_idx_x() % tiles_x);
    let end = k.div_ceil(8).min((split + 1).saturating_mul(split_steps));
    let first = split.saturating_mul(split_steps).min(end);
    let g = Gemm::partial(a, b, w, (m, n, k), split);
    Tiles::<128, 128, 8, 32, 64, 8, 8, 2>::registers_tile(block, g, (tx, block_idx_y()), (first, end));
}
}

kernel! {
/// The split-K rung's reduce: `c[i] = (..((w[i] + w[mn + i]) + w[2 mn + i]) + ..) + w[(splits
/// - 1) mn + i]`, the splits summed in order. Thread `t` sums elements `4 t .. 4 t + 4`: 128-bit
/// loads and one 128-bit store when `mn` is a multiple of 4 (every slice then starts 16-byte
/// aligned), else scalar ones.
///
/// - Launch: block `memlab_contracts::sgemm::REDUCE_THREADS` (256) threads, grid
///   `ceil(ceil(mn / 4) / 256)`.
/// - Shared memory: none. Memory level: global (the workspace was just written, so mostly L2).
/// - Buffers: `w` holds `splits mn` floats, `c` holds `mn`, 16-byte aligned, `splits >= 1`.
pub fn sgemm_split_k_reduce(w: GlobalIn<f32>, c: GlobalOut<f32>, mn: u32, splits: u32) {
    let (len, i) = (mn as usize, 4 * global_idx_x() as usize);
    let w = w.slice(splits as usize * len);
    let mut c = c.slice(len);
    if len % 4 == 0 && i < len {
        let mut sum = w.get4(i);
        for s in 1..splits as usize {
            let v = w.get4(s * len + i);
            unroll!(q in 0..4 => { sum[q] += v[q]; });
        }
        c.set4(i, sum);
    } else if len % 4 != 0 {
        for e in i..len.min(i + 4) {
            let mut sum = w.get(e);
            for s in 1..splits as usize {
                sum += w.get(s * len + e);
            }
            c.set(e, sum);
        }
    }
}
}
