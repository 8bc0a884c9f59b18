//! Everything that talks to the CUDA driver (through `cust`): the driver library loaded at run
//! time, context and module, device and kernel attributes, occupancy, launches, device memory,
//! event timing; several devices (`peer`), host memory the GPU reads (`host_memory`), and the
//! other libraries loaded at run time (`libs` finds and loads cuBLAS, cuBLASLt and NCCL; NVML).
//! Raw driver calls (`cust::sys`) live here and nowhere else (`tests/layering.rs`), and each
//! status they return goes through `result::check`.

pub mod cluster;
pub mod context;
pub mod cublas;
pub mod cublas_lt;
pub mod cuda_h;
pub mod device;
pub mod driver;
pub mod host_memory;
pub mod kernel;
pub mod l2;
pub mod launch;
pub mod libs;
pub mod memory;
pub mod nccl;
pub mod nvml;
pub mod peer;
pub mod profiler;
pub mod result;
pub mod shape;
pub mod staging;
pub mod tensor_map;
pub mod timing;

pub use context::Gpu;
pub use result::describe;
