//! Host memory a kernel reads directly: mapped pinned memory (zero-copy: `cuMemHostAlloc` with
//! `CU_MEMHOSTALLOC_DEVICEMAP`, every load crosses the bus) and managed memory
//! (`cuMemAllocManaged`: pages migrate to the device that touches them, on a page fault or
//! ahead of time with `cuMemPrefetchAsync`). CUDA C++ Programming Guide, "Mapped Memory" and
//! "Unified Memory Programming".

use std::ffi::c_void;

use anyhow::Result;
use cust::sys::{self, CUdevice_attribute as A};

use super::context::Gpu;
use super::device::{attribute, handle};
use super::result::check;

/// `CU_DEVICE_CPU`: the host as the target of a prefetch (`cuda.h`).
const CPU: sys::CUdevice = -1;

/// Pinned (page-locked) host memory, mapped into the device's address space.
pub struct PinnedHost {
    /// Host address.
    pub host: *mut c_void,
    /// The address kernels use for it.
    pub device_ptr: u64,
    /// Size, bytes.
    pub bytes: usize,
}

// SAFETY: `bytes` mapped bytes at `device_ptr` stay allocated until the value is dropped.
unsafe impl super::memory::Owned for PinnedHost {
    fn address(&self) -> u64 {
        self.device_ptr
    }
    fn bytes(&self) -> usize {
        self.bytes
    }
}

impl PinnedHost {
    /// `bytes` of pinned host memory, portable (every context may use it) and mapped.
    ///
    /// # Errors
    /// A [`DriverError`](super::result::DriverError) when the host cannot pin that much.
    pub fn new(bytes: usize) -> Result<PinnedHost> {
        let mut host = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: cuMemHostAlloc writes one pointer.
        check("cuMemHostAlloc", unsafe { sys::cuMemHostAlloc(&mut host, bytes, flags) })
            .map_err(|e| e.during(format!("pinning {bytes} bytes of host memory")))?;
        // Owned from here on, so an error below frees it. (Not `PinnedHost { device_ptr,
        // ..pinned }`: that copies the fields and drops `pinned`, freeing the memory it returns.)
        let mut pinned = PinnedHost { host, device_ptr: 0, bytes };
        // SAFETY: `host` was allocated with DEVICEMAP just now.
        check("cuMemHostGetDevicePointer", unsafe {
            sys::cuMemHostGetDevicePointer_v2(&mut pinned.device_ptr, host, 0)
        })?;
        Ok(pinned)
    }

    /// The memory as words (`bytes / 4` of them).
    pub fn words_mut(&mut self) -> &mut [u32] {
        // SAFETY: the allocation holds `bytes` and is page-aligned; nothing on the device
        // touches it while the host holds this borrow (callers synchronise first).
        unsafe { std::slice::from_raw_parts_mut(self.host as *mut u32, self.bytes / 4) }
    }
}

impl Drop for PinnedHost {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemHostAlloc and freed once.
        unsafe { sys::cuMemFreeHost(self.host) };
    }
}

/// Managed memory: one address valid on the host and on the device, pages moved on demand.
pub struct Managed {
    /// The address, on host and device alike.
    pub ptr: u64,
    /// Size, bytes.
    pub bytes: usize,
}

// SAFETY: `bytes` managed bytes at `ptr` stay allocated until the value is dropped.
unsafe impl super::memory::Owned for Managed {
    fn address(&self) -> u64 {
        self.ptr
    }
    fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Managed {
    /// `bytes` of managed memory attached globally, in the current context.
    ///
    /// # Errors
    /// A [`DriverError`](super::result::DriverError) when the driver cannot allocate it.
    pub fn new(gpu: &Gpu, bytes: usize) -> Result<Managed> {
        gpu.make_current()?;
        let mut ptr = 0;
        // SAFETY: cuMemAllocManaged writes one address.
        check("cuMemAllocManaged", unsafe {
            sys::cuMemAllocManaged(&mut ptr, bytes, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32)
        })
        .map_err(|e| e.during(format!("allocating {bytes} bytes of managed memory")))?;
        Ok(Managed { ptr, bytes })
    }

    /// The memory as words, for the host to write (its pages then live on the host).
    pub fn words_mut(&mut self) -> &mut [u32] {
        // SAFETY: managed memory is host-addressable; callers synchronise the device first.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u32, self.bytes / 4) }
    }

    /// Enqueues a migration of every page to `gpu` (`Some`) or to the host (`None`) on
    /// `gpu`'s stream.
    pub fn prefetch(&self, gpu: &Gpu, to_device: bool) -> Result<()> {
        let target = if to_device { handle(gpu.ordinal)? } else { CPU };
        // SAFETY: the range is this allocation.
        Ok(check("cuMemPrefetchAsync", unsafe {
            sys::cuMemPrefetchAsync(self.ptr, self.bytes, target, gpu.stream.as_inner())
        })?)
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemAllocManaged and freed once.
        unsafe { sys::cuMemFree_v2(self.ptr) };
    }
}

/// Whether the device migrates managed pages on a fault while the host may touch them too
/// (`CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS`); without it, a launch moves the whole
/// allocation up front.
pub fn on_demand_paging(gpu: &Gpu) -> Result<bool> {
    Ok(attribute(handle(gpu.ordinal)?, A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)? == 1)
}

/// The device's free memory, bytes (`cuMemGetInfo` in its context).
///
/// # Errors
/// A [`DriverError`](super::result::DriverError).
pub fn free_bytes(gpu: &Gpu) -> Result<usize> {
    gpu.make_current()?;
    Ok(super::memory::free_and_total()?.0)
}

/// Bytes of one host page: the unit the per-page migration figure is counted in (4 KiB on
/// Linux x86-64; the driver may migrate larger blocks at once, which the per-GiB figure shows).
pub const HOST_PAGE_BYTES: usize = 4096;
