//! Kernels of the memory-hierarchy lab, one lesson per module, built to PTX by rustc's own
//! `nvptx64-nvidia-cuda` backend (see `host/build.rs`).
//!
//! Conventions shared by every kernel:
//! - Matrices are row-major `f32` (element `(r, c)` of an `rows x cols` matrix is at
//!   `r * cols + c`); sizes are passed as `u32` and every access is guarded, so any size works.
//! - Launch shapes are fixed per kernel and written in its doc comment; the host launches with
//!   exactly those shapes and the dynamic shared bytes named there.
//! - Kernels are written on the safe device API (`device.rs`, crate `memlab-device-api`): typed
//!   global views and shared tiles whose indexing is unchecked in the release build (in bounds
//!   by the launch contract) and traps when out of bounds in the `checked` build. No kernel can
//!   panic; the panic handler (`device.rs`) traps should core's code ever reach one.
#![no_std]
#![feature(abi_ptx, stdarch_nvptx, core_intrinsics, asm_experimental_arch, stmt_expr_attributes)]
#![allow(internal_features)]

/// Repeats `$body` with `$i` bound to each literal index of `0..4`, `0..8`, `0..18` or a list: straight-line
/// code instead of a loop, because LLVM does not always unroll loops over an array fully (nested
/// ones over an accumulator, or one of 18 guarded loads), and a single loop index left over sends
/// the whole array to local memory.
macro_rules! unroll {
    ($i:ident in 0..4 => $body:block) => {
        unroll!($i in [0 1 2 3] => $body)
    };
    ($i:ident in 0..8 => $body:block) => {
        unroll!($i in [0 1 2 3 4 5 6 7] => $body)
    };
    ($i:ident in 0..18 => $body:block) => {
        unroll!($i in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17] => $body)
    };
    ($i:ident in [$($n:literal)*] => $body:block) => {
        $({
            let $i: usize = $n;
            $body
        })*
    };
}

// The sm_90a PTX holds the tensor ladder alone (`wgmma` and `setmaxnreg` exist only there), so
// the other lessons stay in the PTX of their own targets and are not compiled twice.
// Thread-block clusters need sm_90 (PTX ISA 7.8): in the sm_90 PTX only.
#[cfg(all(target_feature = "sm_90", not(target_feature = "sm_90a")))]
pub mod clusters;
pub mod device;
#[cfg(not(target_feature = "sm_90a"))]
pub mod hierarchy;
#[cfg(not(target_feature = "sm_90a"))]
pub mod l2;
#[cfg(not(target_feature = "sm_90a"))]
pub mod l2_policies;
#[cfg(not(target_feature = "sm_90a"))]
pub mod matmul;
#[cfg(not(target_feature = "sm_90a"))]
pub mod probes;
#[cfg(not(target_feature = "sm_90a"))]
pub mod race;
#[cfg(not(target_feature = "sm_90a"))]
pub mod sgemm;
#[cfg(target_feature = "sm_90a")]
pub mod tensor;
#[cfg(all(target_feature = "sm_90", not(target_feature = "sm_90a")))]
pub mod tma;
#[cfg(not(target_feature = "sm_90a"))]
pub mod transpose;
#[cfg(not(target_feature = "sm_90a"))]
pub mod transpose_any;
#[cfg(not(target_feature = "sm_90a"))]
pub mod transpose_thin;
