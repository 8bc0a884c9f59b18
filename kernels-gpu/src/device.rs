//! The project's stand-in for `cuda_std`: thread and block indices, the block barrier and
//! dynamic shared memory, as thin safe wrappers over `core::arch::nvptx` and
//! `core::intrinsics::gpu`.

pub mod gemm;
pub mod probe;
pub mod ring;

/// Traps in the `checked` build when `ok` is false (the device API's bounds checks); nothing in
/// the release build.
#[inline(always)]
pub(crate) fn check(ok: bool) {
    if cfg!(feature = "checked") && !ok {
        memlab_device_api::arch::trap()
    }
}
#[cfg(target_feature = "sm_90")]
pub mod tma;
#[cfg(target_feature = "sm_90a")]
pub mod wgmma;
use core::arch::nvptx;

#[cfg(target_feature = "sm_80")]
pub mod mma;
// ANCHOR: thread_idx_x
/// `threadIdx.x`, the thread's index inside its block along x.
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    // SAFETY: reading a special register has no preconditions inside a kernel.
    unsafe { nvptx::_thread_idx_x() }
}
// ANCHOR_END: thread_idx_x
/// `threadIdx.y`.
#[inline(always)]
pub fn thread_idx_y() -> u32 {
    unsafe { nvptx::_thread_idx_y() }
}

/// `blockIdx.x`, the block's index inside the grid along x.
#[inline(always)]
pub fn block_idx_x() -> u32 {
    unsafe { nvptx::_block_idx_x() }
}

/// `blockIdx.y`.
#[inline(always)]
pub fn block_idx_y() -> u32 {
    unsafe { nvptx::_block_idx_y() }
}

/// `blockDim.x`, threads per block along x.
#[inline(always)]
pub fn block_dim_x() -> u32 {
    unsafe { nvptx::_block_dim_x() }
}

/// `gridDim.x`, blocks of the grid along x.
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    unsafe { nvptx::_grid_dim_x() }
}

/// Threads of the grid along x: `gridDim.x * blockDim.x`.
#[inline(always)]
pub fn grid_threads_x() -> u32 {
    unsafe { nvptx::_grid_dim_x() * block_dim_x() }
}

/// Global linear thread index along x: `blockIdx.x * blockDim.x + threadIdx.x`.
#[inline(always)]
pub fn global_idx_x() -> u32 {
    block_idx_x() * block_dim_x() + thread_idx_x()
}

/// Lane of the thread inside its warp (warp size 32, CUDA C++ Programming Guide, "SIMT
/// Architecture"), for one-dimensional blocks.
#[inline(always)]
pub fn lane_id() -> u32 {
    thread_idx_x() % 32
}

/// Block-wide barrier (`bar.sync 0`, `__syncthreads()`) for the race lesson's raw kernel
/// (`race.rs`); typed kernels use `Barrier::sync`, the SGEMM ladder its `ring::Ring`.
///
/// # Safety
/// Every thread of the block must reach the same barrier (no divergent call).
#[inline(always)]
pub unsafe fn sync_threads() {
    memlab_device_api::arch::sync_threads()
}

use memlab_device_api::Vec4;
pub use memlab_device_api::arch::dynamic_shared;
/// The safe API the lesson kernels are written on (crate `memlab-device-api`, `device-api/`).
pub use memlab_device_api::{
    Block,
    global::{GlobalIn, GlobalOut},
    kernel,
    shared::SharedTile,
};

/// Fused multiply-add `a * b + c` with one rounding (`fma.rn.f32`), what nvcc emits for
/// `a * b + c` by default (`-fmad=true`); rustc does not contract on its own.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    core::intrinsics::fmaf32(a, b, c)
}

/// Four floats from `p` with one 128-bit load.
///
/// # Safety
/// `p` is 16-byte aligned and points to 4 readable floats.
#[inline(always)]
pub unsafe fn load4(p: *const f32) -> [f32; 4] {
    unsafe { (*p.cast::<Vec4<f32>>()).0 }
}

/// Two floats, 8-byte aligned: loads through it are single 64-bit accesses (`ld.v2.f32`).
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub struct F2(pub [f32; 2]);

/// Two floats from `p` with one 64-bit load.
///
/// # Safety
/// `p` is 8-byte aligned and points to 2 readable floats.
#[inline(always)]
pub unsafe fn load2(p: *const f32) -> [f32; 2] {
    unsafe { (*p.cast::<F2>()).0 }
}

/// Stores four floats at `p` with one 128-bit store.
///
/// # Safety
/// `p` is 16-byte aligned and points to 4 writable floats.
#[inline(always)]
pub unsafe fn store4(p: *mut f32, v: [f32; 4]) {
    unsafe { *p.cast::<Vec4<f32>>() = Vec4(v) }
}

/// Starts an asynchronous copy of `BYTES` (4 or 16) bytes from global `src` to shared `dst`
/// without passing through registers; the first `src_bytes` (0, 4, .., `BYTES`) are read and
/// the rest zero-filled. 16-byte copies are cached in L2 only (`cp.async.cg`), 4-byte ones in
/// L1 too (`cp.async.ca`: `.cg` takes only 16). Completion is tracked per thread in commit
/// groups ([`cp_async_commit`], [`cp_async_wait`]). PTX ISA, "cp.async"; cc 8.0 and later.
///
/// # Safety
/// `dst` in the block's shared memory and `src` in global memory, both `BYTES`-aligned; `src`
/// has `src_bytes` readable bytes (any valid address when `src_bytes` is 0).
#[cfg(target_feature = "sm_80")]
#[inline(always)]
pub unsafe fn cp_async<const BYTES: u32>(dst: *mut f32, src: *const f32, src_bytes: u32) {
    // The state-space conversions both copies start with.
    macro_rules! to_state_spaces {
        () => {
            "{{\n.reg .u64 d, s;\ncvta.to.shared.u64 d, {dst};\ncvta.to.global.u64 s, {src};\n"
        };
    }
    const { assert!(BYTES == 4 || BYTES == 16) };
    let (dst, src) = (dst as u64, src as u64);
    unsafe {
        if BYTES == 16 {
            core::arch::asm!(
                concat!(to_state_spaces!(), "cp.async.cg.shared.global [d], [s], 16, {n}; }}"),
                dst = in(reg64) dst, src = in(reg64) src, n = in(reg32) src_bytes,
            )
        } else {
            core::arch::asm!(
                concat!(to_state_spaces!(), "cp.async.ca.shared.global [d], [s], 4, {n}; }}"),
                dst = in(reg64) dst, src = in(reg64) src, n = in(reg32) src_bytes,
            )
        }
    };
}

/// Closes this thread's current group of asynchronous copies (`cp.async.commit_group`); an
/// empty group is allowed and completes at once.
#[cfg(target_feature = "sm_80")]
#[inline(always)]
pub fn cp_async_commit() {
    // SAFETY: no operands; the asm's implied memory clobber keeps shared accesses on their side.
    unsafe { core::arch::asm!("cp.async.commit_group;") };
}

/// Waits until at most `PENDING` of this thread's newest commit groups are still in flight
/// (`cp.async.wait_group`). The copies are then visible to this thread only: other threads
/// see them after a barrier.
#[cfg(target_feature = "sm_80")]
#[inline(always)]
pub fn cp_async_wait<const PENDING: u32>() {
    // SAFETY: as for `cp_async_commit`.
    unsafe { core::arch::asm!("cp.async.wait_group {n};", n = const PENDING) };
}

// Clusters and distributed shared memory: PTX ISA 7.8 / sm_90 instructions. Declared last so the
// lines above keep their numbers (the book's generated `inspect` pages cite them).
#[cfg(target_feature = "sm_90")]
pub use memlab_device_api::cluster;

/// A kernel that reaches a panic (none should: every index is in bounds by the launch
/// contract, and the checked build traps before one) traps: the host sees
/// `CUDA_ERROR_LAUNCH_FAILED` at the next sync.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    memlab_device_api::arch::trap()
}

/// The counted global load (counted in the `count-loads` build) for kernels not yet on the views.
pub use memlab_device_api::global::load;

// Cache-operator loads through a view and L2 eviction policies (`createpolicy`: PTX ISA 7.4,
// sm_80; in the sm_90 PTX only, whose PTX ISA 8.3 declares it). Declared after the lines the
// book cites.
pub mod l2_policy;
