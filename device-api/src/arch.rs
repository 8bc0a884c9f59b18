//! The intrinsics the API stands on: `core::arch::nvptx` and inline PTX on the GPU, stand-ins
//! on the host (one thread, a 64 KiB shared buffer per thread, `trap` panics) so that the API
//! type-checks and its bounds checks run in host tests.

#[cfg(target_arch = "nvptx64")]
pub use nvptx::*;

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(target_arch = "nvptx64")]
mod nvptx {
    use core::arch::{asm, nvptx};

    /// Block-wide barrier (`bar.sync 0`, `__syncthreads()`). Every thread of the block must
    /// reach it (the API's invariant 2); typed code calls it through `Barrier::sync`, and the
    /// SGEMM ladder through its ring's loops (`kernels-gpu/src/device/ring.rs`).
    #[inline(always)]
    pub fn sync_threads() {
        // SAFETY: the uniform-barrier invariant of the crate documentation.
        unsafe { nvptx::_syncthreads() }
    }

    // ANCHOR: dynamic_shared
    /// The block's dynamic shared memory (`sharedMemBytes` of `cuLaunchKernel`) as a pointer in
    /// the `.shared` state space, so accesses compile to `ld.shared`/`st.shared`. Every call
    /// returns the same address; `Block::carve` cuts the kernel's tiles from it.
    #[inline(always)]
    pub fn dynamic_shared<T>() -> *mut T {
        core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
    }
    // ANCHOR_END: dynamic_shared

    /// Bytes of dynamic shared memory this launch has (`%dynamic_smem_size`, PTX ISA "Special
    /// Registers"), for the checked build's carve check.
    #[inline(always)]
    pub fn dynamic_shared_bytes() -> usize {
        let bytes: u32;
        // SAFETY: reading a special register has no preconditions inside a kernel.
        unsafe { asm!("mov.u32 {b}, %dynamic_smem_size;", b = out(reg32) bytes, options(pure, nomem, nostack)) };
        bytes as usize
    }

    /// Aborts the kernel (`trap;`); the host sees `CUDA_ERROR_LAUNCH_FAILED` at its next sync.
    #[inline(always)]
    pub fn trap() -> ! {
        // SAFETY: `trap` has no preconditions.
        unsafe { nvptx::trap() }
    }

    /// Reads the float at `p` in shared memory with one `ld.shared.f32` written as inline PTX:
    /// the same instruction the compiler would emit, but ptxas keeps the guarded block around
    /// it a branch and issues it after the stores that precede it, where a plain load in a
    /// short guarded block is predicated and hoisted (measured on the H200's JIT:
    /// `transpose_tiled`, whose four 32-way conflicted tile reads were issued three back to
    /// back, ran 6% slower).
    ///
    /// # Safety
    /// `p` points into the block's shared memory, 4-byte aligned.
    #[inline(always)]
    pub unsafe fn load_shared_in_order(p: *const f32) -> f32 {
        let v: f32;
        // SAFETY: `cvta.to.shared` maps the generic shared pointer to its shared-window address.
        unsafe {
            asm!(
                "{{\n.reg .u64 a;\ncvta.to.shared.u64 a, {p};\nld.shared.f32 {v}, [a]; }}",
                p = in(reg64) p as u64,
                v = out(reg32) v,
            )
        };
        v
    }

    // The cluster's intrinsics (`arch/nvptx/cluster.rs`), behind the same switch.
    pub mod cluster;
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use core::cell::UnsafeCell;

    /// Bytes of the host stand-in for dynamic shared memory.
    pub const HOST_SHARED_BYTES: usize = 64 * 1024;

    #[repr(C, align(16))]
    struct Shared(UnsafeCell<[u8; HOST_SHARED_BYTES]>);

    std::thread_local! {
        static SHARED: Shared = const { Shared(UnsafeCell::new([0; HOST_SHARED_BYTES])) };
    }

    /// One thread: nothing to wait for.
    pub fn sync_threads() {}

    /// This host thread's stand-in buffer.
    pub fn dynamic_shared<T>() -> *mut T {
        SHARED.with(|s| s.0.get().cast())
    }

    /// The stand-in buffer's size.
    pub fn dynamic_shared_bytes() -> usize {
        HOST_SHARED_BYTES
    }

    /// Panics, where the GPU traps.
    pub fn trap() -> ! {
        panic!("trap: index out of bounds")
    }

    /// A plain read.
    ///
    /// # Safety
    /// `p` is valid for a read.
    pub unsafe fn load_shared_in_order(p: *const f32) -> f32 {
        unsafe { *p }
    }

    // The cluster's stand-ins (`arch/host/cluster.rs`).
    pub mod cluster;
}
