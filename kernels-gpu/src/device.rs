//! The project's stand-in for `cuda_std`: thread and block indices, the block barrier and
//! dynamic shared memory, as thin safe wrappers over `core::arch::nvptx` and
//! `core::intrinsics::gpu`.

use core::arch::nvptx;

/// `threadIdx.x`, the thread's index inside its block along x.
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    // SAFETY: reading a special register has no preconditions inside a kernel.
    unsafe { nvptx::_thread_idx_x() }
}

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

/// Block-wide barrier (`bar.sync 0`, `__syncthreads()`): every thread of the block waits here,
/// and shared-memory writes before it are visible to the block after it.
///
/// # Safety
/// Every thread of the block must reach the same barrier (no divergent call).
#[inline(always)]
pub unsafe fn sync_threads() {
    unsafe { nvptx::_syncthreads() }
}

/// The block's dynamic shared memory, sized by the launch (`sharedMemBytes` of `cuLaunchKernel`),
/// as a pointer in the `.shared` state space, so accesses compile to `ld.shared`/`st.shared`.
///
/// Every call returns the same address; the caller indexes only inside the launch's size.
#[inline(always)]
pub fn dynamic_shared<T>() -> *mut T {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
}

/// Fused multiply-add `a * b + c` with one rounding (`fma.rn.f32`), what nvcc emits for
/// `a * b + c` by default (`-fmad=true`); rustc does not contract on its own.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    core::intrinsics::fmaf32(a, b, c)
}

/// Global loads issued by the kernels that load through [`load`], in the counting build only
/// (feature `count-loads`); the host zeroes and reads it with `cuModuleGetGlobal`.
#[cfg(feature = "count-loads")]
#[unsafe(no_mangle)]
pub static GLOBAL_LOADS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Reads `*p` from global memory; the counting build also counts the load in [`GLOBAL_LOADS`]
/// (an atomic add per load: for checking counts at small sizes, never for timing).
///
/// # Safety
/// `p` is valid for a read.
#[inline(always)]
pub unsafe fn load<T: Copy>(p: *const T) -> T {
    #[cfg(feature = "count-loads")]
    GLOBAL_LOADS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    unsafe { *p }
}

/// `float4`: 16 bytes, 16-byte aligned, so loads and stores through it are single 128-bit
/// accesses (`ld.v4.f32`/`st.v4.f32`; CUDA C++ Programming Guide, "Device Memory Accesses":
/// 16-byte words need 16-byte alignment).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct F4(pub [f32; 4]);

/// Four floats from `p` with one 128-bit load.
///
/// # Safety
/// `p` is 16-byte aligned and points to 4 readable floats.
#[inline(always)]
pub unsafe fn load4(p: *const f32) -> [f32; 4] {
    unsafe { (*p.cast::<F4>()).0 }
}

/// Stores four floats at `p` with one 128-bit store.
///
/// # Safety
/// `p` is 16-byte aligned and points to 4 writable floats.
#[inline(always)]
pub unsafe fn store4(p: *mut f32, v: [f32; 4]) {
    unsafe { *p.cast::<F4>() = F4(v) }
}
