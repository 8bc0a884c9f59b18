//! Everything that talks to the CUDA driver (through `cust`): context and module, device and
//! kernel attributes, occupancy, launches, event timing; several devices (`peer`), host memory
//! the GPU reads (`host_memory`), and the libraries loaded at run time (`libs`: cuBLAS, NCCL;
//! NVML).

pub mod context;
pub mod cublas;
pub mod device;
pub mod host_memory;
pub mod kernel;
pub mod launch;
pub mod libs;
pub mod nccl;
pub mod nvml;
pub mod peer;
pub mod timing;

pub use context::Gpu;

/// A driver error as one line: its name and the driver's description.
pub fn describe(err: cust::error::CudaError) -> String {
    format!("{err:?} ({})", err.to_string().trim_matches('"'))
}
