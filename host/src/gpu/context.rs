//! Opening a device: driver initialisation, device selection, the PTX module and a stream,
//! each failure turned into a one-line [`Refusal`](crate::error::Refusal).

use std::cell::OnceCell;

use anyhow::Result;
use cust::context::Context;
use cust::device::Device;
use cust::module::{Module, ModuleJitOption};
use cust::stream::{Stream, StreamFlags};

use super::device::DeviceInfo;
use super::result::{check, describe};
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
    /// The loaded module (JIT-compiled by the driver from `ptx`), without rung 8's
    /// configurations ([`Gpu::tuned_module`]).
    pub module: Module,
    /// The stream every launch and timing event goes to.
    pub stream: Stream,
    /// Rung 8's configurations (`memlab_contracts::sgemm::TUNED`, in its order), each its own
    /// module, JIT-compiled on first use: they are 65% of the sm_90 PTX and a run uses one or
    /// two of them (the autotuner all), so loading them with the rest made opening a device on a
    /// cold JIT cache take 3.3 s (measured on the H200).
    tuned: Vec<OnceCell<Module>>,
    /// The tensor ladder's module ([`ptx::TENSOR`]), loaded on first use on a cc 9.0 device.
    tensor: OnceCell<Module>,
    /// The JIT register cap every module of this device is loaded under.
    max_registers: Option<u32>,
    // Dropped last: the module and stream belong to it.
    _context: Context,
}

/// Initialises the driver and returns the number of CUDA devices.
///
/// # Errors
/// A refusal when there is no driver library ([`super::driver::library`]), no driver, or no GPU.
pub fn device_count() -> Result<u32> {
    if let Err(why) = super::driver::library() {
        refuse!("{}", super::driver::refusal(why));
    }
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
    check("cuDriverGetVersion", unsafe { cust::sys::cuDriverGetVersion(&mut v) })
        .map_err(|e| e.during("reading the driver version"))?;
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
        Self::open_loading(ordinal, max_registers, |ptx, cap| load_entries(ptx, &eager_entries(ptx), cap))
    }

    /// [`Gpu::open`] with only kernel `entry` of the PTX loaded, under a JIT register cap: for
    /// the register sweeps, which launch one kernel under many caps ([`load_entry`]).
    ///
    /// # Errors
    /// As [`Gpu::open`], and a refusal when the PTX has no kernel `entry`.
    pub fn open_one_kernel(ordinal: u32, entry: &str, max_registers: u32) -> Result<Gpu> {
        Self::open_loading(ordinal, Some(max_registers), |ptx, cap| load_entry(ptx, entry, cap))
    }

    /// Opens device `ordinal` and loads its PTX with `load(ptx, max_registers)`; the modules
    /// loaded later (rung 8's) get the same register cap.
    fn open_loading(
        ordinal: u32,
        max_registers: Option<u32>,
        load: impl FnOnce(&'static Ptx, Option<u32>) -> Result<Module>,
    ) -> Result<Gpu> {
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
        let module = load(ptx, max_registers)?;
        // A blocking stream: it is ordered with the legacy default stream, where cust's
        // synchronous copies and memsets (upload, download, poison) run.
        let stream = match Stream::new(StreamFlags::DEFAULT, None) {
            Ok(s) => s,
            Err(e) => refuse!("cannot create a stream: {}", describe(e)),
        };
        let tuned = memlab_contracts::sgemm::TUNED.iter().map(|_| OnceCell::new()).collect();
        let tensor = OnceCell::new();
        Ok(Gpu { ordinal, info, ptx, module, stream, tuned, tensor, max_registers, _context: context })
    }

    /// The module that holds kernel `name` when it is one of rung 8's configurations (loaded on
    /// first use, from this device's PTX); `None` for every other kernel, which is in
    /// [`Gpu::module`].
    ///
    /// # Errors
    /// A refusal when the PTX lacks the configuration or the driver rejects it.
    pub fn tuned_module(&self, name: &str) -> Result<Option<&Module>> {
        let Some(i) = memlab_contracts::sgemm::TUNED.iter().position(|c| c.name == name) else { return Ok(None) };
        let cell = &self.tuned[i];
        if cell.get().is_none() {
            // `set` cannot fail: the cell was empty and nothing else fills it meanwhile.
            let _ = cell.set(load_entries(self.ptx, &[name], self.max_registers)?);
        }
        Ok(cell.get())
    }

    /// The module that holds kernel `name` when it is a rung of the tensor ladder (the sm_90a
    /// PTX, loaded on first use); `None` for every other kernel.
    ///
    /// # Errors
    /// A refusal on a device that cannot load sm_90a PTX (any but cc 9.0), or when the driver
    /// rejects it.
    pub fn tensor_module(&self, name: &str) -> Result<Option<&Module>> {
        if !memlab_contracts::tensor::RUNGS.iter().any(|r| r.name == name) {
            return Ok(None);
        }
        if !ptx::runs_tensor(self.info.cc) {
            let (major, minor) = self.info.cc;
            refuse!("kernel `{name}` needs cc 9.0 (sm_90a PTX: wgmma, setmaxnreg); this device is cc {major}.{minor}");
        }
        if self.tensor.get().is_none() {
            // `set` cannot fail: the cell was empty and nothing else fills it meanwhile.
            let _ = self.tensor.set(load_module(&ptx::TENSOR, self.max_registers)?);
        }
        Ok(self.tensor.get())
    }

    /// The tensor ladder's module when [`Gpu::tensor_module`] has loaded it.
    pub fn loaded_tensor_module(&self) -> Option<&Module> {
        self.tensor.get()
    }

    /// Makes this device's (primary) context the calling thread's current one: allocations,
    /// copies and launches go to the current context, so a program holding several `Gpu`s
    /// switches before working on each (`gpu::peer`).
    ///
    /// # Errors
    /// A refusal with the driver's error.
    pub fn make_current(&self) -> Result<()> {
        if let Err(e) = cust::context::CurrentContext::set_current(&self._context) {
            refuse!("cannot make device {}'s context current: {}", self.ordinal, describe(e));
        }
        Ok(())
    }

    /// The raw context handle, for the driver calls that name two contexts (peer copies and
    /// peer access, `gpu::peer`).
    pub(crate) fn raw_context(&self) -> cust::sys::CUcontext {
        self._context.as_raw()
    }
}

/// The kernels of `ptx` that [`Gpu::open`] loads at once: all but rung 8's configurations,
/// which [`Gpu::tuned_module`] loads one by one on first use.
pub fn eager_entries(ptx: &Ptx) -> Vec<&'static str> {
    let tuned = |name: &&str| memlab_contracts::sgemm::TUNED.iter().any(|c| c.name == *name);
    ptx::kernel_names(ptx.text).into_iter().filter(|n| !tuned(n)).collect()
}

/// Loads `ptx` into the current context, letting the driver JIT-compile it for the device,
/// optionally capped at `max_registers` per thread (`CU_JIT_MAX_REGISTERS`).
///
/// # Errors
/// A refusal naming the driver version and the PTX ISA when the driver rejects the PTX.
pub fn load_module(ptx: &Ptx, max_registers: Option<u32>) -> Result<Module> {
    load_ptx_text(ptx.arch, ptx.text, max_registers)
}

/// [`load_module`] with only kernel `entry` of the PTX ([`crate::ptx::only_entry`]): the JIT
/// compiles one kernel instead of the whole module.
///
/// # Errors
/// As [`load_module`], and a refusal when the PTX has no kernel `entry`.
pub fn load_entry(ptx: &Ptx, entry: &str, max_registers: Option<u32>) -> Result<Module> {
    load_entries(ptx, &[entry], max_registers)
}

/// [`load_module`] with only the kernels `entries` of the PTX ([`crate::ptx::only_entries`]).
///
/// # Errors
/// As [`load_module`], and a refusal naming the first of `entries` the PTX lacks.
pub fn load_entries(ptx: &Ptx, entries: &[&str], max_registers: Option<u32>) -> Result<Module> {
    let Some(text) = crate::ptx::only_entries(ptx.text, entries) else {
        let missing = entries.iter().find(|e| crate::ptx::entry_body(ptx.text, e).is_none()).unwrap_or(&"?");
        refuse!("kernel `{missing}` is not in the {} PTX", ptx.arch);
    };
    load_ptx_text(ptx.arch, &text, max_registers)
}

/// [`load_module`] for any PTX text; `label` names it in the error.
pub fn load_ptx_text(label: &str, text: &str, max_registers: Option<u32>) -> Result<Module> {
    // The JIT targets the context's device by default. cust 0.3.2's DetermineTargetFromContext
    // pushes an option without a value, which shifts every later option onto the wrong value
    // (MaxRegisters then fails with CUDA_ERROR_INVALID_VALUE), so it is left out.
    let options: Vec<ModuleJitOption> = max_registers.map(ModuleJitOption::MaxRegisters).into_iter().collect();
    match Module::from_ptx(text, &options) {
        Ok(m) => Ok(m),
        Err(e) => {
            let driver = driver_version().unwrap_or((0, 0));
            refuse!("{}", ptx_load_refusal(driver, label, ptx_isa_version(text), &describe(e)));
        }
    }
}

/// The `.version` line of a PTX text, e.g. `"7.8"`.
pub fn ptx_isa_version(ptx: &str) -> &str {
    ptx.lines().find_map(|l| l.trim().strip_prefix(".version ")).unwrap_or("?").trim()
}

/// The first CUDA release whose driver loads PTX ISA `isa` (`"7.8"` -> `(11, 8)`), from the PTX
/// ISA's release history (PTX ISA, "Release Notes"); `None` for versions outside 6.0..=9.1.
pub fn min_driver_for_ptx_isa(isa: &str) -> Option<(u32, u32)> {
    let (major, minor) = isa.split_once('.')?;
    match (major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?) {
        (6, m @ 0..=2) => Some((9, m)),
        (6, m @ 3..=5) => Some((10, m - 3)),
        (7, m @ 0..=8) => Some((11, m)),
        (8, m @ 0..=5) => Some((12, m)),
        // CUDA 12.6 kept ISA 8.5; 8.6 came with 12.7.
        (8, m @ 6..=8) => Some((12, m + 1)),
        (9, m @ 0..=1) => Some((13, m)),
        _ => None,
    }
}

/// The one-line refusal for a module the driver would not load: the driver's CUDA version, the
/// PTX's target and ISA, the driver it needs, and the driver's own error.
pub fn ptx_load_refusal(driver: (i32, i32), arch: &str, isa: &str, cause: &str) -> String {
    let needs = min_driver_for_ptx_isa(isa)
        .map_or(String::new(), |(major, minor)| format!(", which needs a CUDA {major}.{minor} driver or newer"));
    format!("the driver (CUDA {}.{}) cannot load the {arch} PTX (ISA {isa}{needs}): {cause}", driver.0, driver.1)
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
    fn a_driver_too_old_for_the_ptx_is_named_with_the_driver_it_needs() {
        assert_eq!(
            ptx_load_refusal(
                (11, 4),
                "sm_90",
                "7.8",
                "UnsupportedPtxVersion (the provided PTX was compiled with an unsupported toolchain.)"
            ),
            "the driver (CUDA 11.4) cannot load the sm_90 PTX (ISA 7.8, which needs a CUDA 11.8 driver or newer): UnsupportedPtxVersion (the provided PTX was compiled with an unsupported toolchain.)"
        );
        assert_eq!(
            ptx_load_refusal((12, 0), "sm_75", "?", "x"),
            "the driver (CUDA 12.0) cannot load the sm_75 PTX (ISA ?): x"
        );
        assert_eq!(min_driver_for_ptx_isa("6.4"), Some((10, 1)));
        assert_eq!(min_driver_for_ptx_isa("8.5"), Some((12, 5)));
        assert_eq!(min_driver_for_ptx_isa("8.6"), Some((12, 7)));
        assert_eq!(min_driver_for_ptx_isa("9.0"), Some((13, 0)));
        assert_eq!(min_driver_for_ptx_isa("5.0"), None);
        assert_eq!(min_driver_for_ptx_isa("7"), None);
        // What the embedded PTX asks of the driver.
        let needs: Vec<_> = crate::ptx::ALL.iter().map(|p| min_driver_for_ptx_isa(ptx_isa_version(p.text))).collect();
        // The sm_90 PTX is ISA 8.3 for the TMA lesson (`host/build.rs`, `SM_90_PTX_ISA`).
        assert_eq!(needs, [Some((11, 0)), Some((11, 0)), Some((12, 3))]);
    }

    #[test]
    fn embedded_ptx_targets_match_their_names() {
        for p in &crate::ptx::ALL {
            assert!(p.text.contains(&format!(".target {}", p.arch)), "{} PTX has the wrong .target", p.arch);
            assert_ne!(ptx_isa_version(p.text), "?");
        }
    }
}
