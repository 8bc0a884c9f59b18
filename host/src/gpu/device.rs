//! The device report: the figures the driver gives for one GPU (`cuDeviceGetAttribute`).

use anyhow::Result;
use cust::device::Device;
use cust::sys::{CUdevice, CUdevice_attribute as A};

use super::result::check;
use crate::model::roofline::{
    bf16_flop_per_clock, fp8_flop_per_clock, fp32_lanes_per_sm, peak_fp32_flops, tf32_flop_per_clock,
};
use serde::{Deserialize, Serialize};

/// One device's figures, all as the driver reports them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Marketing name, e.g. "NVIDIA H200".
    pub name: String,
    /// Compute capability `(major, minor)`.
    pub cc: (u32, u32),
    /// Streaming multiprocessors.
    pub sms: u32,
    /// 32-bit registers per SM.
    pub regs_per_sm: u32,
    /// 32-bit registers available to one block.
    pub regs_per_block: u32,
    /// Shared memory per SM, bytes.
    pub smem_per_sm: u32,
    /// Shared memory a block gets without opting in, bytes.
    pub smem_per_block: u32,
    /// Shared memory a block can get after `cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)`, bytes.
    pub smem_per_block_optin: u32,
    /// Shared memory the system reserves per block, bytes (counts against the SM's total).
    pub smem_reserved_per_block: u32,
    /// Resident threads per SM.
    pub max_threads_per_sm: u32,
    /// Threads per block.
    pub max_threads_per_block: u32,
    /// Resident blocks per SM.
    pub max_blocks_per_sm: u32,
    /// Largest grid dimensions (x, y).
    pub max_grid: (u32, u32),
    /// L2 cache, bytes.
    pub l2_bytes: u32,
    /// SM clock, kHz (the driver's peak figure).
    pub sm_clock_khz: u32,
    /// Memory clock, kHz.
    pub mem_clock_khz: u32,
    /// Memory bus width, bits.
    pub bus_width_bits: u32,
    /// Device memory, bytes.
    pub total_mem_bytes: u64,
}

/// The driver's handle of device `ordinal` (`cuDeviceGet`).
///
/// # Errors
/// A [`DriverError`](super::result::DriverError) for an ordinal the driver does not know.
pub fn handle(ordinal: u32) -> Result<CUdevice> {
    let mut d = 0;
    // SAFETY: cuDeviceGet writes one handle.
    check("cuDeviceGet", unsafe { cust::sys::cuDeviceGet(&mut d, ordinal as i32) })
        .map_err(|e| e.during(format!("opening device {ordinal}")))?;
    Ok(d)
}

/// Attribute `which` of `device` (`cuDeviceGetAttribute`); a negative answer reads as 0.
///
/// # Errors
/// A [`DriverError`](super::result::DriverError) naming the attribute.
pub fn attribute(device: CUdevice, which: A) -> Result<u32> {
    let mut v = 0;
    // SAFETY: cuDeviceGetAttribute writes one int for a valid device handle.
    check("cuDeviceGetAttribute", unsafe { cust::sys::cuDeviceGetAttribute(&mut v, which, device) })
        .map_err(|e| e.during(format!("reading {which:?}")))?;
    Ok(v.max(0) as u32)
}

impl DeviceInfo {
    /// Reads every figure from the driver.
    pub fn query(device: Device) -> Result<DeviceInfo> {
        let a = |which| attribute(device.as_raw(), which);
        Ok(DeviceInfo {
            name: device.name().unwrap_or_else(|_| "unknown".into()),
            cc: (
                a(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                a(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            sms: a(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            regs_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
            regs_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            smem_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
            smem_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            smem_per_block_optin: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            smem_reserved_per_block: a(A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)?,
            max_threads_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            max_threads_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_blocks_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
            max_grid: (a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?, a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?),
            l2_bytes: a(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            sm_clock_khz: a(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
            mem_clock_khz: a(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
            bus_width_bits: a(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
            total_mem_bytes: device.total_memory().map(|b| b as u64).unwrap_or(0),
        })
    }

    /// Theoretical DRAM bandwidth in GB/s (1e9 bytes/s) implied by the memory clock and bus
    /// width: `2 * clock * width / 8` (two transfers per clock, double data rate).
    pub fn theoretical_bandwidth_gbs(&self) -> f64 {
        2.0 * self.mem_clock_khz as f64 * 1e3 * (self.bus_width_bits as f64 / 8.0) / 1e9
    }

    /// Warps resident per SM at most (`max_threads_per_sm / 32`).
    pub fn max_warps_per_sm(&self) -> u32 {
        self.max_threads_per_sm / 32
    }
}

/// `cuDeviceGetPCIBusId` of device `ordinal`, e.g. `"0000:19:00.0"` (what NVML looks devices up
/// by); `None` when the driver has no such device.
pub fn pci_bus_id(ordinal: u32) -> Option<std::ffi::CString> {
    let device = handle(ordinal).ok()?;
    let mut text = [0 as std::ffi::c_char; 32];
    // SAFETY: writes at most `len` bytes, NUL-terminated, for a valid device.
    let r = unsafe { cust::sys::cuDeviceGetPCIBusId(text.as_mut_ptr(), text.len() as i32, device) };
    check("cuDeviceGetPCIBusId", r).ok()?;
    // SAFETY: on success the driver wrote a NUL-terminated string.
    Some(unsafe { std::ffi::CStr::from_ptr(text.as_ptr()) }.into())
}

/// Peaks of the device from its driver attributes and the roofline model's per-SM rates
/// ([`crate::model::roofline`]).
impl DeviceInfo {
    /// The device's FP32 peak, FLOP/s: `SMs x FP32 lanes x 2 x clock`, the clock `clock_ghz` when
    /// measured, else the driver's SM clock; `None` for an architecture the roofline model has no
    /// lanes for.
    pub fn peak_fp32(&self, clock_ghz: Option<f64>) -> Option<f64> {
        let lanes = fp32_lanes_per_sm(self.cc.0, self.cc.1)?;
        let hz = clock_ghz.map_or(self.sm_clock_khz as f64 * 1e3, |g| g * 1e9);
        Some(peak_fp32_flops(self.sms, lanes, hz))
    }

    /// The device's dense TF32 tensor-core peak, FLOP/s, at `clock_ghz` when measured, else at the
    /// driver's SM clock; `None` below cc 8.0 or for an architecture the model lacks.
    pub fn peak_tf32(&self, clock_ghz: Option<f64>) -> Option<f64> {
        self.tensor_peak(clock_ghz, tf32_flop_per_clock(self.cc.0, self.cc.1)?)
    }

    /// The device's dense BF16 tensor-core peak, FLOP/s, as [`DeviceInfo::peak_tf32`].
    pub fn peak_bf16(&self, clock_ghz: Option<f64>) -> Option<f64> {
        self.tensor_peak(clock_ghz, bf16_flop_per_clock(self.cc.0, self.cc.1)?)
    }

    /// The device's dense FP8 tensor-core peak, FLOP/s, as [`DeviceInfo::peak_tf32`].
    pub fn peak_fp8(&self, clock_ghz: Option<f64>) -> Option<f64> {
        self.tensor_peak(clock_ghz, fp8_flop_per_clock(self.cc.0, self.cc.1)?)
    }

    fn tensor_peak(&self, clock_ghz: Option<f64>, per_clock: u32) -> Option<f64> {
        let hz = clock_ghz.map_or(self.sm_clock_khz as f64 * 1e3, |g| g * 1e9);
        Some(f64::from(self.sms) * f64::from(per_clock) * hz)
    }
}

#[cfg(test)]
impl DeviceInfo {
    pub(crate) fn h200() -> DeviceInfo {
        DeviceInfo {
            name: "NVIDIA H200".into(),
            cc: (9, 0),
            sms: 132,
            regs_per_sm: 65536,
            regs_per_block: 65536,
            smem_per_sm: 233472,
            smem_per_block: 49152,
            smem_per_block_optin: 232448,
            smem_reserved_per_block: 1024,
            max_threads_per_sm: 2048,
            max_threads_per_block: 1024,
            max_blocks_per_sm: 32,
            max_grid: (i32::MAX as u32, 65535),
            l2_bytes: 60 << 20,
            sm_clock_khz: 1_980_000,
            mem_clock_khz: 3_201_000,
            bus_width_bits: 6016,
            total_mem_bytes: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theoretical_bandwidth_is_double_data_rate_times_bus_bytes() {
        let info = DeviceInfo::h200();
        // 2 * 3.201e9 * 752 bytes = 4814.3 GB/s, as the H200's driver figures give.
        assert!((info.theoretical_bandwidth_gbs() - 4814.304).abs() < 1e-6);
        assert_eq!(info.max_warps_per_sm(), 64);
    }
}
