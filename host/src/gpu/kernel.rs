//! Per-kernel figures from the driver: attributes (`cuFuncGetAttribute`) and occupancy
//! (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).

use anyhow::Result;
use cust::function::{BlockSize, Function, FunctionAttribute};

use super::context::Gpu;
use super::result::{check, describe};
use crate::refuse;
use serde::{Deserialize, Serialize};

/// What the driver says about one compiled kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelAttrs {
    /// Registers per thread after the driver's JIT (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub regs: u32,
    /// Static shared memory per block, bytes (the lab's kernels use dynamic shared memory only).
    pub static_smem: u32,
    /// Local memory per thread, bytes: stack frame plus spills (`LOCAL_SIZE_BYTES`).
    pub local_bytes: u32,
    /// Largest block this kernel can be launched with (`MAX_THREADS_PER_BLOCK`).
    pub max_threads_per_block: u32,
}

/// The driver's occupancy answer for one launch shape.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DriverOccupancy {
    /// Resident blocks per SM.
    pub active_blocks: u32,
    /// Resident warps per SM.
    pub active_warps: u32,
    /// Active warps over the SM's maximum, 0..=1.
    pub occupancy: f64,
}

/// Looks a kernel up in the loaded module.
///
/// # Errors
/// A refusal naming the PTX's kernels closest to `name` when it is not one of them
/// ([`crate::ptx::check_kernel`]).
pub fn function<'a>(gpu: &'a Gpu, name: &str) -> Result<Function<'a>> {
    let module = match gpu.tensor_module(name)? {
        Some(m) => m,
        None => gpu.tuned_module(name)?.unwrap_or(&gpu.module),
    };
    match module.get_function(name) {
        Ok(f) => Ok(f),
        // Checked only on failure: `launch` looks the kernel up between timing events.
        Err(e) => {
            crate::ptx::check_kernel(gpu.ptx, name)?;
            refuse!("kernel `{name}` is not in the loaded {} PTX: {}", gpu.ptx.arch, describe(e))
        }
    }
}

/// Reads the attributes of kernel `name`.
pub fn attributes(gpu: &Gpu, name: &str) -> Result<KernelAttrs> {
    attributes_of(&function(gpu, name)?)
}

/// Reads the attributes of a loaded function.
pub fn attributes_of(f: &Function<'_>) -> Result<KernelAttrs> {
    let get = |a| f.get_attribute(a).map(|v| v.max(0) as u32).map_err(|e| anyhow::anyhow!(describe(e)));
    Ok(KernelAttrs {
        regs: get(FunctionAttribute::NumRegisters)?,
        static_smem: get(FunctionAttribute::SharedMemorySizeBytes)?,
        local_bytes: get(FunctionAttribute::LocalSizeBytes)?,
        max_threads_per_block: get(FunctionAttribute::MaxThreadsPerBlock)?,
    })
}

/// Lets kernel `name` take `bytes` of dynamic shared memory per block
/// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`); needed above the 48 KiB default.
pub fn allow_dynamic_smem(gpu: &Gpu, name: &str, bytes: u32) -> Result<()> {
    allow_dynamic_smem_of(&function(gpu, name)?, name, bytes, gpu.info.smem_per_block_optin)
}

/// [`allow_dynamic_smem`] for a loaded function; `optin` is the device's limit, for the message.
pub fn allow_dynamic_smem_of(f: &Function<'_>, name: &str, bytes: u32, optin: u32) -> Result<()> {
    let attr = cust::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    // SAFETY: a valid function handle and a plain integer attribute.
    let r = unsafe { cust::sys::cuFuncSetAttribute(f.to_raw(), attr, bytes as i32) };
    Ok(check("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", r).map_err(|e| {
        e.during(format!(
            "kernel `{name}` cannot take {bytes} bytes of dynamic shared memory (opt-in limit {optin} bytes per block)"
        ))
    })?)
}

/// The driver's occupancy for kernel `name` launched with `threads` per block and
/// `dynamic_smem` bytes of dynamic shared memory per block.
pub fn occupancy(gpu: &Gpu, name: &str, threads: u32, dynamic_smem: u32) -> Result<DriverOccupancy> {
    occupancy_of(&function(gpu, name)?, name, threads, dynamic_smem, gpu.info.max_warps_per_sm())
}

/// [`occupancy`] for a loaded function on an SM with `max_warps` resident warps.
pub fn occupancy_of(
    f: &Function<'_>,
    name: &str,
    threads: u32,
    dynamic_smem: u32,
    max_warps: u32,
) -> Result<DriverOccupancy> {
    let blocks = match f.max_active_blocks_per_multiprocessor(BlockSize::x(threads), dynamic_smem as usize) {
        Ok(b) => b,
        Err(e) => refuse!("occupancy query for `{name}` ({threads} threads, {dynamic_smem} B) failed: {}", describe(e)),
    };
    let active_warps = blocks * threads.div_ceil(32);
    Ok(DriverOccupancy { active_blocks: blocks, active_warps, occupancy: active_warps as f64 / max_warps as f64 })
}
