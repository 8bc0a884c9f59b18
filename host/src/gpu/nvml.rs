//! NVLink as NVML reports it, loaded at run time (`dlopen` of `libnvidia-ml.so.1`, which the
//! driver installs): per device, its active links, their NVLink version, what each link's far
//! end is (a GPU, by PCI bus id, or an NVSwitch) and the links' common speed. Where NVML is
//! missing the topology shows the driver's peer figures alone.
//!
//! Functions and constants: NVML API Reference, "NvLink Methods" (`nvmlDeviceGetNvLinkState`,
//! `nvmlDeviceGetNvLinkVersion`, `nvmlDeviceGetNvLinkRemotePciInfo_v2`,
//! `nvmlDeviceGetNvLinkRemoteDeviceType`) and "Field Value Queries"
//! (`NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON` = 90, the common speed of the active links in MB/s
//! per direction).

use std::ffi::{CString, c_char, c_int, c_uint, c_void};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::refuse;

/// `NVML_NVLINK_MAX_LINKS`: links per device NVML can report (18 on Hopper).
pub const MAX_LINKS: u32 = 18;
/// `NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON`.
const FIELD_SPEED_COMMON: c_uint = 90;
/// `NVML_NVLINK_DEVICE_TYPE_SWITCH`.
const REMOTE_SWITCH: c_uint = 2;

type Device = *mut c_void;

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

/// The loaded library.
pub struct Nvml {
    lib: libloading::Library,
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
    /// Loads and initialises NVML; `None` when the library is absent or will not start.
    pub fn open() -> Option<Nvml> {
        // SAFETY: loading NVML runs its initialisers, which have no preconditions.
        let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }.ok()?;
        let nvml = Nvml { lib };
        // SAFETY: nvmlInit_v2 takes no arguments.
        let init = unsafe { nvml.sym::<unsafe extern "C" fn() -> c_int>("nvmlInit_v2") }.ok()?;
        (unsafe { init() } == 0).then_some(nvml)
    }

    /// # Safety
    /// `T` is the symbol's C signature.
    unsafe fn sym<T: Copy>(&self, name: &str) -> Result<T> {
        match unsafe { self.lib.get::<T>(name.as_bytes()) } {
            Ok(s) => Ok(*s),
            Err(e) => refuse!("NVML lacks {name}: {e}"),
        }
    }

    /// The NVLinks of the device at PCI bus id `bus_id` (as `cuDeviceGetPCIBusId` gives it).
    ///
    /// # Errors
    /// A refusal when NVML does not know the device.
    pub fn links(&self, bus_id: &str) -> Result<Links> {
        type ByPci = unsafe extern "C" fn(*const c_char, *mut Device) -> c_int;
        type PerLink = unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_int;
        type RemotePci = unsafe extern "C" fn(Device, c_uint, *mut PciInfo) -> c_int;
        type Fields = unsafe extern "C" fn(Device, c_int, *mut FieldValue) -> c_int;
        // SAFETY: the types are the NVML signatures (nvml.h); every out-pointer is a local.
        unsafe {
            let by_pci: ByPci = self.sym("nvmlDeviceGetHandleByPciBusId_v2")?;
            let state: PerLink = self.sym("nvmlDeviceGetNvLinkState")?;
            let version: PerLink = self.sym("nvmlDeviceGetNvLinkVersion")?;
            let remote_type: Option<PerLink> = self.sym("nvmlDeviceGetNvLinkRemoteDeviceType").ok();
            let remote_pci: RemotePci = self.sym("nvmlDeviceGetNvLinkRemotePciInfo_v2")?;
            let fields: Fields = self.sym("nvmlDeviceGetFieldValues")?;
            let id = CString::new(bus_id).map_err(|_| anyhow::anyhow!("bad PCI bus id {bus_id}"))?;
            let mut dev: Device = std::ptr::null_mut();
            let r = by_pci(id.as_ptr(), &mut dev);
            if r != 0 {
                refuse!("NVML does not know the device at PCI {bus_id} (status {r})");
            }
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
            Ok(links)
        }
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: paired with the successful nvmlInit_v2 in `open`.
        if let Ok(shutdown) = unsafe { self.sym::<unsafe extern "C" fn() -> c_int>("nvmlShutdown") } {
            unsafe { shutdown() };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
