//! NVML (`libnvidia-ml.so.1`, installed with the NVIDIA driver), loaded at run time. For
//! `memlab doctor`: the driver's version, each GPU's clocks, and the other processes on it
//! (which spoil timings). For `devices` and `peer`: each GPU's active NVLinks, their version,
//! what each link's far end is (a GPU, by PCI bus id, or an NVSwitch) and the links' common
//! speed; where NVML is missing the topology shows the driver's peer figures alone.
//!
//! Signatures and constants from `nvml.h` (NVML API Reference: "Device Queries", "NvLink
//! Methods", and "Field Value Queries" for `NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON` = 90, the
//! common speed of the active links in MB/s per direction).

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::refuse;

type Return = c_int;
type Device = *mut c_void;

/// `NVML_NVLINK_MAX_LINKS`: links per device NVML can report (18 on Hopper).
pub const MAX_LINKS: u32 = 18;
/// `NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON`.
const FIELD_SPEED_COMMON: c_uint = 90;
/// `NVML_NVLINK_DEVICE_TYPE_SWITCH`.
const REMOTE_SWITCH: c_uint = 2;

/// `nvmlPciInfo_t` (NVML API Reference, "Device Structs").
#[repr(C)]
struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

/// `nvmlFieldValue_t`: the value is a union of 8 bytes; the speed is an unsigned int.
#[repr(C)]
struct FieldValue {
    field_id: c_uint,
    scope_id: c_uint,
    timestamp: i64,
    latency_usec: i64,
    value_type: c_uint,
    nvml_return: c_uint,
    value: u64,
}

/// Where one active link goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Remote {
    /// Another GPU, by PCI bus id (normalised by [`normalise_bus_id`]).
    Gpu(String),
    /// An NVSwitch: every GPU on the switches is reached through it.
    Switch,
    /// Something else (a CPU's NVLink port), or NVML could not say.
    Other,
}

/// One device's NVLinks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Links {
    /// The far end of every active link.
    pub remotes: Vec<Remote>,
    /// NVLink version of the first active link (4 on Hopper).
    pub version: Option<u32>,
    /// Common speed of the active links, GB/s per direction (NVML's MB/s / 1000).
    pub gbs_per_link: Option<f64>,
}

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

/// `"00000000:1B:00.0"` and `"0000:1b:00.0"` alike become `"0000:1b:00.0"` (NVML pads the
/// domain to 8 digits, the CUDA driver to 4).
pub fn normalise_bus_id(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    match id.split_once(':') {
        Some((domain, rest)) => format!("{:0>4}:{rest}", domain.trim_start_matches('0')),
        None => id,
    }
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

    /// [`Nvml::function`], refused with a one-line message when NVML lacks it.
    ///
    /// # Safety
    /// `T` must be the function's signature in `nvml.h`.
    unsafe fn sym<T: Copy>(&self, name: &str) -> Result<T> {
        match unsafe { self.function::<T>(format!("{name}\0").as_bytes()) } {
            Some(f) => Ok(f),
            None => refuse!("NVML lacks {name}"),
        }
    }

    /// The NVLinks of the device at PCI bus id `bus_id` (as `cuDeviceGetPCIBusId` gives it).
    ///
    /// # Errors
    /// A refusal when NVML does not know the device.
    pub fn links(&self, bus_id: &str) -> Result<Links> {
        type PerLink = unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_int;
        type RemotePci = unsafe extern "C" fn(Device, c_uint, *mut PciInfo) -> c_int;
        type Fields = unsafe extern "C" fn(Device, c_int, *mut FieldValue) -> c_int;
        // SAFETY: the types are the NVML signatures (nvml.h); every out-pointer is a local.
        unsafe {
            let state: PerLink = self.sym("nvmlDeviceGetNvLinkState")?;
            let version: PerLink = self.sym("nvmlDeviceGetNvLinkVersion")?;
            let remote_type: Option<PerLink> = self.sym("nvmlDeviceGetNvLinkRemoteDeviceType").ok();
            let remote_pci: RemotePci = self.sym("nvmlDeviceGetNvLinkRemotePciInfo_v2")?;
            let fields: Fields = self.sym("nvmlDeviceGetFieldValues")?;
            let id = CString::new(bus_id).map_err(|_| anyhow::anyhow!("bad PCI bus id {bus_id}"))?;
            let Some(dev) = self.device(&id) else {
                refuse!("NVML does not know the device at PCI {bus_id}");
            };
            let mut links = Links { remotes: Vec::new(), version: None, gbs_per_link: None };
            for link in 0..MAX_LINKS {
                let mut active = 0;
                if state(dev, link, &mut active) != 0 || active == 0 {
                    continue;
                }
                let mut v = 0;
                if links.version.is_none() && version(dev, link, &mut v) == 0 {
                    links.version = Some(v);
                }
                let mut kind = u32::MAX;
                let is_switch = remote_type.is_some_and(|f| f(dev, link, &mut kind) == 0 && kind == REMOTE_SWITCH);
                let mut pci: PciInfo = std::mem::zeroed();
                let remote = if is_switch {
                    Remote::Switch
                } else if remote_pci(dev, link, &mut pci) == 0 {
                    let text = std::ffi::CStr::from_ptr(pci.bus_id.as_ptr()).to_string_lossy();
                    Remote::Gpu(normalise_bus_id(&text))
                } else {
                    Remote::Other
                };
                links.remotes.push(remote);
            }
            let mut field = FieldValue {
                field_id: FIELD_SPEED_COMMON,
                scope_id: 0,
                timestamp: 0,
                latency_usec: 0,
                value_type: 0,
                nvml_return: u32::MAX,
                value: 0,
            };
            if fields(dev, 1, &mut field) == 0 && field.nvml_return == 0 {
                // The union's unsigned-int member: the low 4 bytes on a little-endian host.
                let mbps = (field.value & 0xFFFF_FFFF) as f64;
                links.gbs_per_link = (mbps > 0.0).then_some(mbps / 1000.0);
            }
            // The H200's driver reports no speed field: fall back to the generation's figure.
            links.gbs_per_link = links.gbs_per_link.or_else(|| links.version.and_then(nvlink_generation).map(|g| g.1));
            Ok(links)
        }
    }
}

/// An NVLink generation from NVML's `nvmlNvlinkVersion_t` (nvml.h: 1 = 1.0, 2 = 2.0, 3 = 2.2,
/// 4 = 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0), with its nominal bandwidth per link and direction in
/// GB/s: 20 for NVLink 1.0 (P100), 25 for 2.x to 4.0 (V100, A100: 600 GB/s over 12 links, H100
/// and H200: 900 GB/s over 18 links, both directions), 50 for 5.0 (B200: 1.8 TB/s over 18), from
/// NVIDIA's data sheets of those GPUs.
pub fn nvlink_generation(version: u32) -> Option<(&'static str, f64)> {
    Some(match version {
        1 => ("1.0", 20.0),
        2 => ("2.0", 25.0),
        3 => ("2.2", 25.0),
        4 => ("3.0", 25.0),
        5 => ("3.1", 25.0),
        6 => ("4.0", 25.0),
        7 => ("5.0", 50.0),
        _ => return None,
    })
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: nvmlShutdown takes no arguments and balances nvmlInit_v2.
        if let Some(f) = unsafe { self.function::<unsafe extern "C" fn() -> Return>(b"nvmlShutdown\0") } {
            unsafe { f() };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvml_versions_name_the_generation_and_its_link_rate() {
        // NVML reports an H200's links as 6: NVLink 4.0, 18 x 25 GB/s = 450 GB/s each way.
        assert_eq!(nvlink_generation(6), Some(("4.0", 25.0)));
        assert_eq!(nvlink_generation(7), Some(("5.0", 50.0)));
        assert_eq!(nvlink_generation(0), None);
    }

    #[test]
    fn bus_ids_from_nvml_and_cuda_compare_equal() {
        assert_eq!(normalise_bus_id("00000000:1B:00.0"), "0000:1b:00.0");
        assert_eq!(normalise_bus_id("0000:1b:00.0"), "0000:1b:00.0");
        assert_eq!(normalise_bus_id("00000001:C3:00.0"), "0001:c3:00.0");
    }

    #[test]
    fn field_value_has_nvmls_layout() {
        // nvml.h: 2 uints, 2 long longs, 2 uints (type, return), an 8-byte union.
        assert_eq!(std::mem::size_of::<FieldValue>(), 40);
        assert_eq!(std::mem::size_of::<PciInfo>(), 68);
    }
}
