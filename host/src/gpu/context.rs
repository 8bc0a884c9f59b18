//! Opening a device: driver initialisation, device selection, the PTX module and a stream,
//! each failure turned into a one-line [`Refusal`](crate::error::Refusal).

use anyhow::Result;
use cust::context::Context;
use cust::device::Device;
use cust::module::{Module, ModuleJitOption};
use cust::stream::{Stream, StreamFlags};

use super::describe;
use super::device::DeviceInfo;
use crate::ptx::{self, Ptx};
use crate::refuse;

/// An open device with the lab's module loaded: what every demo runs on.
pub struct Gpu {
    /// Device ordinal as the driver numbers them.
    pub ordinal: u32,
    /// The device's figures, read once at open.
    pub info: DeviceInfo,
    /// The embedded PTX that was loaded.
    pub ptx: &'static Ptx,
    /// The loaded module (JIT-compiled by the driver from `ptx`).
    pub module: Module,
    /// The stream every launch and timing event goes to.
    pub stream: Stream,
    // Dropped last: the module and stream belong to it.
    _context: Context,
}

/// Initialises the driver and returns the number of CUDA devices.
///
/// # Errors
/// A refusal when there is no driver library, no driver, or no GPU.
pub fn device_count() -> Result<u32> {
    if let Err(e) = cust::init(cust::CudaFlags::empty()) {
        refuse!("no usable NVIDIA driver or GPU: cuInit failed with {}", describe(e));
    }
    match Device::num_devices() {
        Ok(0) => refuse!("no CUDA device found: the driver reports 0 devices"),
        Ok(n) => Ok(n),
        Err(e) => refuse!("cannot count CUDA devices: {}", describe(e)),
    }
}

/// The driver's CUDA version as `(major, minor)`.
pub fn driver_version() -> Result<(i32, i32)> {
    let mut v = 0;
    // SAFETY: cuDriverGetVersion writes one int and needs no context.
    let r = unsafe { cust::sys::cuDriverGetVersion(&mut v) };
    if r != cust::sys::cudaError_enum::CUDA_SUCCESS {
        refuse!("cannot read the driver version: {r:?}");
    }
    Ok((v / 1000, v % 1000 / 10))
}

impl Gpu {
    /// Opens device `ordinal`, creates a context, loads the PTX that suits its compute
    /// capability, optionally with a JIT register cap (`CU_JIT_MAX_REGISTERS`).
    ///
    /// # Errors
    /// A refusal naming the cause: no driver or GPU, `ordinal` out of range, a device older than
    /// every embedded PTX target, or a module the driver cannot load (e.g. a driver too old for
    /// the PTX ISA version).
    pub fn open(ordinal: u32, max_registers: Option<u32>) -> Result<Gpu> {
        let count = device_count()?;
        if ordinal >= count {
            refuse!(
                "--device {ordinal} is out of range: this machine has {count} CUDA device(s), valid 0..={}",
                count - 1
            );
        }
        let device = Device::get_device(ordinal).map_err(|e| crate::error::Refusal(describe(e)))?;
        let context = match Context::new(device) {
            Ok(c) => c,
            Err(e) => refuse!("cannot create a context on device {ordinal}: {}", describe(e)),
        };
        let info = DeviceInfo::query(device)?;
        let Some(ptx) = ptx::for_device(info.cc) else {
            refuse!(
                "device {ordinal} ({}) has compute capability {}.{}, below the lowest PTX target {}",
                info.name,
                info.cc.0,
                info.cc.1,
                ptx::ALL[0].arch
            );
        };
        // The JIT targets the context's device by default (CU_JIT_TARGET_FROM_CUCONTEXT is the
        // default). Naming that option is also wrong with cust 0.3.2: it pushes the option but
        // no value, so every later option reads its neighbour's value (a register cap then
        // fails with InvalidValue, seen on the H200).
        let options: Vec<ModuleJitOption> = max_registers.map(ModuleJitOption::MaxRegisters).into_iter().collect();
        let module = match Module::from_ptx(ptx.text, &options) {
            Ok(m) => m,
            Err(e) => {
                let (major, minor) = driver_version().unwrap_or((0, 0));
                refuse!(
                    "the driver (CUDA {major}.{minor}) cannot load the {} PTX (ISA {}): {}",
                    ptx.arch,
                    ptx_isa_version(ptx.text),
                    describe(e)
                );
            }
        };
        let stream = match Stream::new(StreamFlags::NON_BLOCKING, None) {
            Ok(s) => s,
            Err(e) => refuse!("cannot create a stream: {}", describe(e)),
        };
        Ok(Gpu { ordinal, info, ptx, module, stream, _context: context })
    }
}

/// The `.version` line of a PTX text, e.g. `"7.8"`.
pub fn ptx_isa_version(ptx: &str) -> &str {
    ptx.lines().find_map(|l| l.trim().strip_prefix(".version ")).unwrap_or("?").trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_ptx_isa_version() {
        assert_eq!(ptx_isa_version("//\n.version 7.8\n.target sm_90\n"), "7.8");
        assert_eq!(ptx_isa_version(".target sm_90\n"), "?");
    }

    #[test]
    fn embedded_ptx_targets_match_their_names() {
        for p in &crate::ptx::ALL {
            assert!(p.text.contains(&format!(".target {}", p.arch)), "{} PTX has the wrong .target", p.arch);
            assert_ne!(ptx_isa_version(p.text), "?");
        }
    }
}
