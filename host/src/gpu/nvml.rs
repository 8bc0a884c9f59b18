//! NVML (`libnvidia-ml.so.1`, installed with the NVIDIA driver), loaded at run time for
//! `memlab doctor`: the driver's version, each GPU's clocks, and the other processes on it
//! (which spoil timings). Signatures from `nvml.h` (NVML API Reference).

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

type Return = c_int;
type Device = *mut c_void;
const SUCCESS: Return = 0;
const INSUFFICIENT_SIZE: Return = 7;
/// `nvmlClockType_t`: `NVML_CLOCK_SM` and `NVML_CLOCK_MEM`.
const CLOCK_SM: c_uint = 1;
const CLOCK_MEM: c_uint = 2;

/// `nvmlProcessInfo_t` as `nvmlDeviceGetComputeRunningProcesses_v3` fills it.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ProcessInfo {
    pid: c_uint,
    used_gpu_memory: u64,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// An initialised NVML.
pub struct Nvml {
    lib: libloading::Library,
}

/// A GPU's clocks, MHz: current and maximum, SM and memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clocks {
    pub sm: u32,
    pub sm_max: u32,
    pub mem: u32,
    pub mem_max: u32,
}

impl Nvml {
    /// Loads and initialises NVML.
    ///
    /// # Errors
    /// One line: the library is missing or `nvmlInit_v2` failed.
    pub fn open() -> Result<Nvml, String> {
        // SAFETY: NVML's initialisers have no preconditions.
        let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }.map_err(|e| e.to_string())?;
        let nvml = Nvml { lib };
        // SAFETY: nvmlInit_v2 takes no arguments.
        let init = unsafe { nvml.function::<unsafe extern "C" fn() -> Return>(b"nvmlInit_v2\0") };
        match init.map(|f| unsafe { f() }) {
            Some(SUCCESS) => Ok(nvml),
            Some(code) => Err(format!("nvmlInit_v2 failed with NVML error {code}")),
            None => Err("libnvidia-ml.so.1 lacks nvmlInit_v2".into()),
        }
    }

    /// # Safety
    /// `F` must be the function's signature in `nvml.h`.
    unsafe fn function<F: Copy>(&self, name: &[u8]) -> Option<F> {
        unsafe { self.lib.get::<F>(name).ok().map(|f| *f) }
    }

    /// The NVIDIA driver's version, e.g. `"580.95.05"`.
    pub fn driver_version(&self) -> Option<String> {
        let mut text = [0 as c_char; 96];
        // SAFETY: nvmlSystemGetDriverVersion(char *version, unsigned int length).
        let f = unsafe {
            self.function::<unsafe extern "C" fn(*mut c_char, c_uint) -> Return>(b"nvmlSystemGetDriverVersion\0")?
        };
        if unsafe { f(text.as_mut_ptr(), text.len() as c_uint) } != SUCCESS {
            return None;
        }
        // SAFETY: NVML wrote a NUL-terminated string into `text`.
        Some(unsafe { CStr::from_ptr(text.as_ptr()) }.to_string_lossy().into_owned())
    }

    /// The device at PCI bus id `bus_id` (`"0000:19:00.0"`, as `cuDeviceGetPCIBusId` writes it).
    fn device(&self, bus_id: &CStr) -> Option<Device> {
        let mut device: Device = std::ptr::null_mut();
        // SAFETY: nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device).
        let f = unsafe {
            self.function::<unsafe extern "C" fn(*const c_char, *mut Device) -> Return>(
                b"nvmlDeviceGetHandleByPciBusId_v2\0",
            )?
        };
        (unsafe { f(bus_id.as_ptr(), &mut device) } == SUCCESS).then_some(device)
    }

    /// Current and maximum SM and memory clocks of the device at `bus_id`.
    pub fn clocks(&self, bus_id: &CStr) -> Option<Clocks> {
        let device = self.device(bus_id)?;
        type Clock = unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> Return;
        // SAFETY: nvmlDeviceGetClockInfo and nvmlDeviceGetMaxClockInfo(nvmlDevice_t, nvmlClockType_t, unsigned int *).
        let (current, max) = unsafe {
            (
                self.function::<Clock>(b"nvmlDeviceGetClockInfo\0")?,
                self.function::<Clock>(b"nvmlDeviceGetMaxClockInfo\0")?,
            )
        };
        let read = |f: Clock, which| {
            let mut mhz = 0;
            // SAFETY: a valid device handle and one unsigned int to write.
            (unsafe { f(device, which, &mut mhz) } == SUCCESS).then_some(mhz)
        };
        Some(Clocks {
            sm: read(current, CLOCK_SM)?,
            sm_max: read(max, CLOCK_SM)?,
            mem: read(current, CLOCK_MEM)?,
            mem_max: read(max, CLOCK_MEM)?,
        })
    }

    /// Process ids of the compute processes on the device at `bus_id`, this one left out.
    pub fn other_processes(&self, bus_id: &CStr) -> Option<Vec<u32>> {
        let device = self.device(bus_id)?;
        type List = unsafe extern "C" fn(Device, *mut c_uint, *mut ProcessInfo) -> Return;
        // SAFETY: nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t, unsigned int *infoCount,
        // nvmlProcessInfo_t *infos).
        let list = unsafe { self.function::<List>(b"nvmlDeviceGetComputeRunningProcesses_v3\0")? };
        let mut count: c_uint = 0;
        // SAFETY: a count of 0 with no buffer asks for the count.
        let first = unsafe { list(device, &mut count, std::ptr::null_mut()) };
        let mut infos = vec![ProcessInfo::default(); count as usize + 8];
        if first == INSUFFICIENT_SIZE {
            count = infos.len() as c_uint;
            // SAFETY: `infos` holds `count` entries.
            if unsafe { list(device, &mut count, infos.as_mut_ptr()) } != SUCCESS {
                return None;
            }
        } else if first != SUCCESS {
            return None;
        } else {
            count = 0;
        }
        let me = std::process::id();
        Some(infos[..count as usize].iter().map(|p| p.pid).filter(|&pid| pid != me).collect())
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: nvmlShutdown takes no arguments and balances nvmlInit_v2.
        if let Some(f) = unsafe { self.function::<unsafe extern "C" fn() -> Return>(b"nvmlShutdown\0") } {
            unsafe { f() };
        }
    }
}
