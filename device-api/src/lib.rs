//! The safe device API of the memlab kernels: the only place, with `kernels-gpu/src/device.rs`
//! and `kernels-gpu/src/device/`, that holds `unsafe`. Lesson kernels written on it have no
//! `unsafe` of their own and compile to the raw-pointer kernels' machine code
//! (`host/tests/zero_cost.rs` compares their PTX memory instructions and ptxas registers).
//!
//! - [`kernel!`] declares a PTX entry point. Its pointer parameters arrive as
//!   [`global::GlobalIn`]/[`global::GlobalOut`], which the body turns into views with their
//!   lengths: [`global::Slice`] (1-D) and [`global::Matrix`] (rows, cols, pitch).
//! - `block: Block` as a kernel's first parameter (not a PTX parameter) gives the block's
//!   dynamic shared memory, carved once into [`shared::SharedTile`]s whose shape and pitch are
//!   in their type, and the [`shared::Barrier`].
//! - A tile is [`shared::Writing`] or [`shared::Reading`]: it is written in one phase and read
//!   in the next, and the only way from one phase to the other is [`shared::Barrier::sync`],
//!   the block barrier. Reading a tile no barrier has published, or writing one other threads
//!   may still read, does not compile (`tests/ui/`: the race lesson's tiled matmul without its
//!   second barrier).
//!
//! # Soundness: what the types rest on
//! 1. **The launch contract.** A view is as long as the kernel says (`input.matrix(rows,
//!    cols)`): the host's typed launch (generated from the kernel's signature, `host/build/launches.rs`)
//!    passes buffers at least that long, and the launch's dynamic shared bytes cover every
//!    tile carved (`memlab-contracts` owns both sizes). Under this contract every index that
//!    passes the bounds check of the `checked` build is inside its buffer or tile, so the
//!    release build, which drops the checks, reads and writes only inside them too, for every
//!    index the kernel actually uses: the `checked` build runs every demo's checks to show it.
//! 2. **Uniform barriers.** Every thread of the block reaches each [`shared::Barrier::sync`]
//!    (as `__syncthreads()`); the types cannot see a thread that returns early before it.
//! 3. **Within a phase, lanes own their slots.** The types order phases, not lanes: two
//!    threads writing the same slot of a tile or of a global view in one phase, or one
//!    reading a global element another writes, is a data race the types do not rule out.
//!
//! Distributed shared memory ([`cluster`]) has phases of its own, moved by the cluster barrier,
//! and four more invariants, written in its module documentation.
//!
//! Builds: for `nvptx64` the intrinsics are `core::arch::nvptx` and inline PTX ([`arch`]); on
//! the host they are stand-ins (one thread, a 64 KiB shared buffer, `trap` panics), so the
//! API type-checks and its checks run in ordinary tests. Feature `checked`: every index is
//! bounds-checked and an out-of-bounds one traps (the host sees `CUDA_ERROR_LAUNCH_FAILED`).
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(stdarch_nvptx, core_intrinsics, gpu_intrinsics, gpu_launch_sized_workgroup_mem, asm_experimental_arch)
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod arch;
// Distributed shared memory (PTX ISA 7.8 / sm_90 instructions). Not gated here: the build's
// `-C target-cpu` reaches the kernel crate only, which gates its use (`kernels-gpu/src/lib.rs`),
// and fat LTO leaves out of each PTX what no kernel of it calls.
pub mod cluster;
pub mod global;
mod kernel;
pub mod shared;

pub use kernel::{Block, Param};

/// In the `checked` build, traps unless the condition holds; in the release build the
/// condition is not even compiled, so the code rustc hands to LLVM is the raw kernel's.
macro_rules! check {
    ($in_bounds:expr) => {
        #[cfg(feature = "checked")]
        if !$in_bounds {
            $crate::arch::trap();
        }
    };
}
pub(crate) use check;

/// An index type of views and tiles: `u32` computes the element offset in 32 bits, as CUDA
/// C++ with `unsigned` indices (one 32-bit multiply-add, then one 64-bit address add), `usize`
/// in 64 bits. Each kernel keeps the width its raw version had, so its PTX is unchanged.
pub trait Index: Copy {
    /// Zero.
    const ZERO: Self;
    /// `row * pitch + col` as an element offset.
    fn offset(row: Self, col: Self, pitch: usize) -> usize;
    /// The index as a `usize`.
    fn as_usize(self) -> usize;
    /// Whether `self < bound`.
    #[inline(always)]
    fn below(self, bound: usize) -> bool {
        self.as_usize() < bound
    }
}

impl Index for u32 {
    const ZERO: u32 = 0;
    #[inline(always)]
    fn offset(row: u32, col: u32, pitch: usize) -> usize {
        row.wrapping_mul(pitch as u32).wrapping_add(col) as usize
    }
    #[inline(always)]
    fn as_usize(self) -> usize {
        self as usize
    }
}

impl Index for usize {
    const ZERO: usize = 0;
    #[inline(always)]
    fn offset(row: usize, col: usize, pitch: usize) -> usize {
        row.wrapping_mul(pitch).wrapping_add(col)
    }
    #[inline(always)]
    fn as_usize(self) -> usize {
        self
    }
}

/// Four `T` in 16 bytes, 16-byte aligned (`float4`), so a load or store of it is one 128-bit
/// access (`ld.v4`/`st.v4`; CUDA C++ Programming Guide, "Device Memory Accesses": 16-byte words
/// need 16-byte alignment).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct Vec4<T>(pub [T; 4]);

/// Plain data: every bit pattern is a valid value, so reading one from any bytes is sound.
///
/// # Safety
/// Implement only for types with no padding and no invalid bit patterns.
pub unsafe trait Plain: Copy {}
// SAFETY: integers and floats accept every bit pattern; `Vec4` of them has no padding.
unsafe impl Plain for u32 {}
unsafe impl Plain for u64 {}
unsafe impl Plain for f32 {}
unsafe impl<T: Plain> Plain for Vec4<T> {}
