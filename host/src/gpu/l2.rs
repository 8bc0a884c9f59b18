//! L2 residency control (CUDA C++ Programming Guide, "L2 Cache Set-Aside for Persisting
//! Accesses" and "L2 Policy for Persisting Accesses"; cc 8.0 and later): the device's limits,
//! the context's persisting carve-out (`cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE)`), a
//! stream's access-policy window (`cuStreamSetAttribute(CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW)`)
//! and `cuCtxResetPersistingL2Cache`, which turns every persisting line back to normal.

use anyhow::Result;
use cust::sys::{
    CUaccessPolicyWindow, CUaccessProperty, CUdevice_attribute, CUlimit, CUstreamAttrID, CUstreamAttrValue,
};

use super::context::Gpu;
use super::result::check;

/// What the device allows: the largest persisting carve-out and the largest window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersistingLimits {
    /// `CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE`, bytes (0: not supported).
    pub max_carve_out: usize,
    /// `CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE`, bytes.
    pub max_window: usize,
}

/// The device's persisting-L2 limits (both 0 on a GPU without the feature).
pub fn limits(gpu: &Gpu) -> Result<PersistingLimits> {
    let device = super::device::handle(gpu.ordinal)?;
    let get = |which| super::device::attribute(device, which).map(|v| v as usize);
    Ok(PersistingLimits {
        max_carve_out: get(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE)?,
        max_window: get(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE)?,
    })
}

/// The context's persisting carve-out, bytes (`cuCtxGetLimit`).
pub fn carve_out() -> Result<usize> {
    let mut v = 0usize;
    // SAFETY: writes one size_t.
    check("cuCtxGetLimit(PERSISTING_L2_CACHE_SIZE)", unsafe {
        cust::sys::cuCtxGetLimit(&mut v, CUlimit::CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
    })?;
    Ok(v)
}

/// Sets the context's persisting carve-out to `bytes` (the driver rounds it to its granularity
/// and caps it at the device's maximum; read the result back with [`carve_out`]).
pub fn set_carve_out(bytes: usize) -> Result<()> {
    // SAFETY: a plain limit on the current context.
    Ok(check("cuCtxSetLimit(PERSISTING_L2_CACHE_SIZE)", unsafe {
        cust::sys::cuCtxSetLimit(CUlimit::CU_LIMIT_PERSISTING_L2_CACHE_SIZE, bytes)
    })?)
}

/// The carve-out the driver grants for a request of `bytes` (it rounds the request and caps
/// it at the device's maximum): set, read back, and the previous carve-out restored.
pub fn granted_carve_out(bytes: usize) -> Result<usize> {
    let previous = carve_out()?;
    set_carve_out(bytes)?;
    let granted = carve_out();
    set_carve_out(previous)?;
    granted
}

/// Turns every persisting line of the context back to normal (`cuCtxResetPersistingL2Cache`).
pub fn reset_persisting_lines() -> Result<()> {
    // SAFETY: no arguments; acts on the current context.
    Ok(check("cuCtxResetPersistingL2Cache", unsafe { cust::sys::cuCtxResetPersistingL2Cache() })?)
}

/// Sets the lab stream's access-policy window: accesses to `[base, base + bytes)` are
/// persisting with probability `hit_ratio`, streaming otherwise; `bytes = 0` clears it.
pub fn set_window(gpu: &Gpu, base: u64, bytes: usize, hit_ratio: f32) -> Result<()> {
    let value = CUstreamAttrValue {
        accessPolicyWindow: CUaccessPolicyWindow {
            base_ptr: base as *mut std::ffi::c_void,
            num_bytes: bytes,
            hitRatio: hit_ratio,
            hitProp: CUaccessProperty::CU_ACCESS_PROPERTY_PERSISTING,
            missProp: CUaccessProperty::CU_ACCESS_PROPERTY_STREAMING,
        },
    };
    // SAFETY: a valid stream and a value that lives through the call.
    Ok(check("cuStreamSetAttribute(ACCESS_POLICY_WINDOW)", unsafe {
        cust::sys::cuStreamSetAttribute(
            gpu.stream.as_inner(),
            CUstreamAttrID::CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW,
            &value,
        )
    })?)
}

/// A persisting window on the lab's stream, undone on drop: the window cleared, persisting
/// lines reset, the carve-out back to what it was, so no later launch inherits it.
pub struct Window<'a> {
    gpu: &'a Gpu,
    previous_carve_out: usize,
}

impl<'a> Window<'a> {
    /// Sets the carve-out to `carve_out` bytes and the window `[base, base + bytes)` at
    /// `hit_ratio` on the lab's stream.
    pub fn open(gpu: &'a Gpu, carve_out_bytes: usize, base: u64, bytes: usize, hit_ratio: f32) -> Result<Window<'a>> {
        // The guard exists before the first change, so a failure part-way undoes the rest.
        let window = Window { gpu, previous_carve_out: carve_out()? };
        set_carve_out(carve_out_bytes)?;
        set_window(gpu, base, bytes, hit_ratio)?;
        Ok(window)
    }
}

impl Drop for Window<'_> {
    fn drop(&mut self) {
        // Drop cannot return an error; each call undoes one setting, and one that fails
        // leaves the others undone all the same.
        let _ = self.gpu.stream.synchronize();
        let _ = set_window(self.gpu, 0, 0, 0.0);
        let _ = reset_persisting_lines();
        let _ = set_carve_out(self.previous_carve_out);
    }
}
