//! Types of CUDA 12's `cuda.h` that cust's bindings (CUDA 11's headers) lack, as `#[repr(C)]`
//! mirrors: what the forwarders of `driver::raw` take, and what the cluster launches and the
//! tensor maps fill in. Here, below all three, so that the forwarders need neither of the others.

use std::ffi::c_uint;

use cust::memory::DeviceCopy;
use cust::sys::CUstream;

/// `CUlaunchAttributeValue`: a 64-byte union; the cluster dimension is its first 12 bytes.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct CUlaunchAttributeValue {
    /// `clusterDim.{x, y, z}`, then padding to 64 bytes.
    pub words: [c_uint; 16],
}

/// `CUlaunchAttribute`: an id (4 bytes, padded to 8) and its value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUlaunchAttribute {
    /// `CUlaunchAttributeID`.
    pub id: c_uint,
    pad: [u8; 4],
    /// The value.
    pub value: CUlaunchAttributeValue,
}

impl CUlaunchAttribute {
    /// Attribute `id` with `value`.
    pub fn new(id: c_uint, value: CUlaunchAttributeValue) -> CUlaunchAttribute {
        CUlaunchAttribute { id, pad: [0; 4], value }
    }
}

/// `CUlaunchConfig`: grid, block, dynamic shared bytes, stream and attributes.
#[repr(C)]
pub struct CUlaunchConfig {
    /// Blocks along x, y, z.
    pub grid: [c_uint; 3],
    /// Threads per block along x, y, z.
    pub block: [c_uint; 3],
    /// Dynamic shared memory per block, bytes.
    pub shared_mem_bytes: c_uint,
    /// The stream.
    pub stream: CUstream,
    /// Launch attributes.
    pub attrs: *mut CUlaunchAttribute,
    /// Number of attributes.
    pub num_attrs: c_uint,
}

/// `CUtensorMap`: 128 opaque bytes, 64-byte aligned (CUDA Driver API).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct TensorMap(pub [u64; 16]);

// SAFETY: plain bytes, no pointers the host owns.
unsafe impl DeviceCopy for TensorMap {}
