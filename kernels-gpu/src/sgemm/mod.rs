//! An SGEMM ladder: `C = A * B` in `f32`, each rung one kernel named after what it adds to the
//! rung below, after siboehm's "How to Optimize a CUDA Matmul Kernel for cuBLAS-like
//! Performance". Rung 1 is `matmul_tiled_32` (block tiling in shared memory, in `matmul`).
//!
//! | rung | kernel | adds |
//! |---|---|---|
//! | 2 | [`sgemm_2_register_1d`] | 8 results per thread down a column: one shared load of `B` feeds 8 FMAs |
//! | 3 | [`sgemm_3_register_2d`] | an 8 x 8 block of results per thread: 16 shared loads feed 64 FMAs |
//! | 4 | [`sgemm_4_vectorized`] | 128-bit global and shared loads; `A` stored transposed in shared memory |
//! | 5 | [`sgemm_5_conflict_free`] | a thread layout whose 128-bit shared loads are conflict-free, a padded `A` tile |
//! | 6 | [`sgemm_6_double_buffered`] | two shared stages: the next tile's global loads overlap this tile's FMAs; warp tiling |
//! | 7 | `sgemm_7_async_copy` | `B` copied global-to-shared by `cp.async`, not through registers (cc 8.0 and later only) |
//! | 8 | `tuned::sgemm_8_*` | both operands by `cp.async`, `A` untransposed and padded, tile parameters chosen by `memlab autotune` (cc 8.0+) |
//! | 8 split-K | `sgemm_split_k_128x128` + `sgemm_split_k_reduce` | rung 6's tile over one range of `k` per block, partial tiles summed in split order: a block for every SM at thin and odd shapes (cc 8.0+) |
//! | 9 | `sgemm_9_tensor_tf32` | tensor cores: TF32 `mma.sync`, swizzled tiles, `ldmatrix` (cc 8.0+) |
//!
//! Shapes: `A` is `m x k`, `B` is `k x n`, `C` is `m x n`, row-major, densely packed, and each
//! has fewer than `2^32` elements (indices are 32-bit, as in CUDA C++ with `int`). Any
//! `m, n, k >= 1` works: tiles that reach past an edge load zeros and skip out-of-range stores.

/// Calls `f(0)`, .., `f(n - 1)` as straight-line code, for `n` of 1, 2, 4, 8 or 16 known at
/// compile time (a constant of the caller, so the match folds away): the generic rungs' loops
/// over accumulators, which LLVM leaves rolled, sending the array to local memory (measured in
/// the sm_90 PTX: a 256-byte stack frame).
#[cfg(target_feature = "sm_80")]
#[inline(always)]
fn unrolled(n: usize, mut f: impl FnMut(usize)) {
    macro_rules! calls {
        ($($i:literal)*) => {{ $(f($i);)* }};
    }
    match n {
        1 => calls!(0),
        2 => calls!(0 1),
        4 => calls!(0 1 2 3),
        8 => calls!(0 1 2 3 4 5 6 7),
        16 => calls!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
        // Unreachable for the configurations compiled; a trap, never a wrong result.
        _ => memlab_device_api::arch::trap(),
    }
}

/// `impl Tiles<BM, BN, BK, WM, WN, TM, TN, STAGES> { .. }`, the parameters in scope by those
/// names; `tiles_impl!(@declare)` declares `Tiles` itself. The parameter list is written once,
/// here.
#[cfg(target_feature = "sm_80")]
macro_rules! tiles_impl {
    (@with [$($param:tt)*] [$($name:ident),*] @declare) => {
        /// One configuration of rung 8 with its parameters in its type: a `BM x BN` tile of `C`
        /// per block, `BK` deep steps, `WM x WN` per warp, `TM x TN` per thread, `STAGES` shared
        /// stages (`memlab_contracts::tuned_configs!` lists them). The one owner of that
        /// parameter list: each algorithm of `memlab_contracts::sgemm::Algo` is written once for
        /// all of them in a `tiles_impl!` (`tuned.rs`'s `AsyncCopy`, `staged.rs`'s `Registers`).
        pub(crate) struct Tiles<$($param)*>;
    };
    (@with [$($param:tt)*] [$($name:ident),*] $($items:tt)*) => {
        impl<$($param)*> $crate::sgemm::Tiles<$($name),*> {
            $($items)*
        }
    };
    ($($items:tt)*) => {
        tiles_impl!(@with [
            const BM: u32,
            const BN: u32,
            const BK: u32,
            const WM: u32,
            const WN: u32,
            const TM: usize,
            const TN: usize,
            const STAGES: u32
        ] [BM, BN, BK, WM, WN, TM, TN, STAGES] $($items)*);
    };
}

#[cfg(target_feature = "sm_80")]
tiles_impl!(@declare);

#[cfg(target_feature = "sm_80")]
tiles_impl! {
    /// Threads per block: one warp per `WM x WN` sub-tile.
    const THREADS: u32 = 32 * (BM / WM) * (BN / WN);
}

#[cfg(target_feature = "sm_80")]
mod async_copy;
#[cfg(target_feature = "sm_80")]
mod copy;
mod scalar;
#[cfg(target_feature = "sm_80")]
mod split_k;
#[cfg(target_feature = "sm_80")]
mod staged;
#[cfg(target_feature = "sm_80")]
mod tensor;
#[cfg(target_feature = "sm_80")]
pub mod tuned;
mod vector;

#[cfg(target_feature = "sm_80")]
pub use async_copy::sgemm_7_async_copy;
#[cfg(target_feature = "sm_80")]
pub use split_k::{sgemm_split_k_128x128, sgemm_split_k_reduce};
#[cfg(target_feature = "sm_80")]
pub use tensor::{sgemm_9_tensor_tf32, sgemm_9_tensor_tf32_unswizzled};

pub use scalar::{sgemm_2_register_1d, sgemm_3_register_2d};
pub use vector::{sgemm_4_vectorized, sgemm_5_conflict_free, sgemm_6_double_buffered};

use crate::device::gemm::Gemm;

/// Stores a thread's `TM x TN` results of rung 8: row `i` at `row(i)`, its columns in chunks of
/// 4 starting at `col(h)`. One 128-bit store per chunk when `n` is a multiple of 4 (a chunk that
/// starts inside a row then ends inside it, 16-byte aligned), else 4 guarded scalar ones.
///
/// # Safety
///
/// `col(h)` is a multiple of 4 for every `h < TN / 4`.
#[cfg(target_feature = "sm_80")]
#[inline(always)]
unsafe fn store_results<const TM: usize, const TN: usize>(
    g: &Gemm,
    acc: &[[f32; TN]; TM],
    row: impl Fn(usize) -> u32,
    col: impl Fn(usize) -> u32,
) {
    unrolled(TM, |i| {
        let row = row(i);
        unrolled(TN / 4, |h| {
            let col = col(h);
            let v = [acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]];
            if g.n % 4 == 0 && row < g.m && col < g.n {
                // SAFETY: `row < m`; `col < n` with `col` (the caller's word) and `n` multiples of
                // 4, so `col + 4 <= n`.
                unsafe { g.store4_c(row, col, v) };
            } else {
                unrolled(4, |q| g.store_c(row, col + q as u32, v[q]));
            }
        });
    });
}
