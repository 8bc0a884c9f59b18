//! Kernels of the memory-hierarchy lab, one lesson per module, built to PTX by rustc's own
//! `nvptx64-nvidia-cuda` backend (see `host/build.rs`).
//!
//! Conventions shared by every kernel:
//! - Matrices are row-major `f32` (element `(r, c)` of an `rows x cols` matrix is at
//!   `r * cols + c`); sizes are passed as `u32` and every access is guarded, so any size works.
//! - Launch shapes are fixed per kernel and written in its doc comment; the host launches with
//!   exactly those shapes and the dynamic shared bytes named there.
//! - No kernel can panic: indexing goes through raw pointers the host guarantees in bounds, and
//!   the panic handler traps should core's code ever reach one.
#![no_std]
#![feature(
    abi_ptx,
    stdarch_nvptx,
    core_intrinsics,
    gpu_intrinsics,
    gpu_launch_sized_workgroup_mem,
    asm_experimental_arch
)]
#![allow(internal_features)]

pub mod device;
pub mod hierarchy;
pub mod matmul;
pub mod probes;
pub mod race;
pub mod sgemm;
pub mod transpose;
pub mod transpose_any;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // A trap aborts the kernel and the host sees CUDA_ERROR_LAUNCH_FAILED at the next sync.
    unsafe { core::arch::nvptx::trap() }
}
