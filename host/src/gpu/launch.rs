//! Launching a kernel: a [`Launch`] (entry name, [`LaunchShape`] checked against the device's
//! limits, argument bytes), as the generated typed launches build it.

use std::ffi::c_void;

use anyhow::Result;
use cust::function::Function;
use cust::memory::{DeviceBuffer, DeviceCopy};
use cust::module::Module;

use super::context::Gpu;
use super::kernel::function;
use super::result::describe;
pub use super::shape::LaunchShape;
pub use crate::ptx::Param;
use crate::refuse;

/// How a host value is passed as one kernel parameter: the [`Param`] the PTX entry must declare
/// for it, and its bytes.
pub trait KernelArg {
    /// The PTX parameter this value fills.
    const PARAM: Param;
    /// The value's bytes, in the first [`Param::size`] bytes of 8.
    fn bytes(&self) -> [u8; 8];
}

impl<T: DeviceCopy> KernelArg for &DeviceBuffer<T> {
    const PARAM: Param = Param::Ptr;
    fn bytes(&self) -> [u8; 8] {
        self.as_device_ptr().as_raw().to_ne_bytes()
    }
}

impl<T: DeviceCopy> KernelArg for &mut DeviceBuffer<T> {
    const PARAM: Param = Param::Ptr;
    fn bytes(&self) -> [u8; 8] {
        self.as_device_ptr().as_raw().to_ne_bytes()
    }
}

/// Four value bytes in an 8-byte slot (the driver reads the parameter's size from the entry).
fn four(bytes: [u8; 4]) -> [u8; 8] {
    let mut slot = [0; 8];
    slot[..4].copy_from_slice(&bytes);
    slot
}

impl KernelArg for u32 {
    const PARAM: Param = Param::U32;
    fn bytes(&self) -> [u8; 8] {
        four(self.to_ne_bytes())
    }
}

impl KernelArg for f32 {
    const PARAM: Param = Param::F32;
    fn bytes(&self) -> [u8; 8] {
        four(self.to_ne_bytes())
    }
}

impl KernelArg for u64 {
    const PARAM: Param = Param::U64;
    fn bytes(&self) -> [u8; 8] {
        self.to_ne_bytes()
    }
}

/// A kernel entry point as the host launches it: its name and parameter list, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The PTX `.entry` name.
    pub name: &'static str,
    /// Its parameters as the host passes them.
    pub params: &'static [Param],
}

/// One launch of one kernel, ready to enqueue: the entry name, the launch shape and the
/// argument values, built by the kernel's typed launch function (generated from the kernel's
/// signature by the build script).
///
/// A launch holds device addresses, not borrows: the buffers it names must live until the
/// stream is synchronised after its last enqueue, as for any CUDA launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    /// Kernel entry point.
    pub kernel: &'static str,
    /// Grid, block and dynamic shared bytes.
    pub shape: LaunchShape,
    /// Blocks per thread-block cluster along x and y, for a cluster launch
    /// ([`super::cluster::launch`]); `None` for a plain one.
    pub cluster: Option<(u32, u32)>,
    args: Vec<[u8; 8]>,
}

impl Launch {
    /// A launch of `kernel` with `shape` and argument bytes (one per parameter, in order).
    pub fn new(kernel: &'static str, shape: LaunchShape, args: Vec<[u8; 8]>) -> Launch {
        Launch { kernel, shape, cluster: None, args }
    }

    /// This launch in clusters of `cx x cy` blocks.
    pub fn in_clusters(self, cluster: (u32, u32)) -> Launch {
        Launch { cluster: Some(cluster), ..self }
    }

    /// The argument values, one 8-byte slot per parameter (the value in its first bytes).
    pub fn args(&self) -> &[[u8; 8]] {
        &self.args
    }

    /// Enqueues the kernel of the lab's module on the lab's stream (asynchronous: errors in the
    /// kernel itself show at the next synchronisation).
    ///
    /// # Errors
    /// A refusal for a shape the device cannot run, a kernel the PTX lacks, or a launch the
    /// driver rejects.
    pub fn enqueue(&self, gpu: &Gpu) -> Result<()> {
        self.enqueue_function(gpu, &function(gpu, self.kernel)?)
    }

    /// [`Launch::enqueue`] for the kernel of the same name in another module loaded in the lab's
    /// context (the load-counting PTX, a capped module).
    ///
    /// # Errors
    /// As for [`Launch::enqueue`], or the module lacks the kernel.
    pub fn enqueue_in(&self, gpu: &Gpu, module: &Module) -> Result<()> {
        match module.get_function(self.kernel) {
            Ok(f) => self.enqueue_function(gpu, &f),
            Err(e) => refuse!("kernel `{}` is not in the module: {}", self.kernel, describe(e)),
        }
    }

    /// [`Launch::enqueue`] with this launch's shape and arguments for any function loaded in
    /// the lab's context with the same parameters (the CUDA C++ twins of `memlab bench`).
    ///
    /// # Errors
    /// As for [`Launch::enqueue`].
    pub fn enqueue_function(&self, gpu: &Gpu, f: &Function<'_>) -> Result<()> {
        let shape = &self.shape;
        shape.check(&gpu.info)?;
        // Above the default, a kernel takes dynamic shared memory only after opting in (CUDA C++
        // Programming Guide, "Shared Memory"); `check` has bounded it by the opt-in limit.
        if shape.smem_bytes > gpu.info.smem_per_block {
            super::kernel::allow_dynamic_smem_of(f, self.kernel, shape.smem_bytes, gpu.info.smem_per_block_optin)?;
        }
        // cuLaunchKernel takes a pointer to each parameter's value; `values` outlives the call.
        let mut values = self.args.clone();
        let mut ptrs: Vec<*mut c_void> = values.iter_mut().map(|v| v.as_mut_ptr() as *mut c_void).collect();
        if let Some(cluster) = self.cluster {
            super::cluster::launch(gpu, f, self.kernel, shape, cluster, &mut ptrs)?;
            record_launch(self.kernel);
            return Ok(());
        }
        // SAFETY: the values match the entry's parameters (the typed launch function builds
        // them from its signature, and `tests/launch_params.rs` checks every signature against
        // the PTX); the buffers are live until the stream syncs.
        let r = unsafe { gpu.stream.launch(f, shape.grid, shape.block, shape.smem_bytes, &ptrs) };
        if let Err(e) = r {
            refuse!(
                "launching `{}` with grid {:?}, block {:?}, {} B shared failed: {}",
                self.kernel,
                shape.grid,
                shape.block,
                shape.smem_bytes,
                describe(e)
            );
        }
        // Recorded once the driver took the launch, so a refused one is not listed.
        record_launch(self.kernel);
        Ok(())
    }
}

/// Entry names launched by this process so far ([`launched`]).
static LAUNCHED: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

fn record_launch(kernel: &'static str) {
    LAUNCHED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(kernel);
}

/// The entry names this process has launched through [`Launch`], sorted, each once (a
/// sanitizer run lists them, to show which kernels it covered).
pub fn launched() -> Vec<&'static str> {
    LAUNCHED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_the_driver_took_is_listed_once() {
        record_launch("probe");
        record_launch("probe");
        assert_eq!(launched().iter().filter(|&&k| k == "probe").count(), 1);
    }
}
