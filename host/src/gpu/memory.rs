//! Device memory through the driver: free bytes, word fills, and the asynchronous copies the
//! memcpy ceiling and the bus transfers time (`cuMemGetInfo`, `cuMemsetD32`, `cuMemcpy*Async`).

use std::ffi::c_void;

use anyhow::Result;
use cust::memory::{DeviceBuffer, DeviceCopy};

use super::context::Gpu;
use super::result::check;
use crate::refuse;

/// Free and total bytes of device memory in the current context (`cuMemGetInfo`).
///
/// # Errors
/// A [`DriverError`](super::result::DriverError) when the driver cannot say.
pub fn free_and_total() -> Result<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: cuMemGetInfo writes two sizes for the current context.
    check("cuMemGetInfo", unsafe { cust::sys::cuMemGetInfo_v2(&mut free, &mut total) })
        .map_err(|e| e.during("reading free device memory"))?;
    Ok((free, total))
}

/// Sets every 32-bit word of `buf` (elements of a multiple of 4 bytes: a `u64` takes two) to
/// `value` (`cuMemsetD32`). Takes a shared borrow: the fill goes through the device address,
/// like a kernel's store.
///
/// # Errors
/// A driver failure.
///
/// # Panics
/// When `T` is not a multiple of 4 bytes.
pub fn fill_words<T: DeviceCopy>(buf: &DeviceBuffer<T>, value: u32) -> Result<()> {
    let size = std::mem::size_of::<T>();
    assert!(size > 0 && size.is_multiple_of(4), "fill_words() is for elements of whole 32-bit words");
    let words = buf.len() * size / 4;
    // SAFETY: the buffer holds `words` words.
    Ok(check("cuMemsetD32", unsafe { cust::sys::cuMemsetD32_v2(buf.as_device_ptr().as_raw(), value, words) })?)
}

/// Sets every byte of `buf` to `value` (`cuMemsetD8`), for elements of any size.
///
/// # Errors
/// A driver failure.
pub fn fill_bytes<T: DeviceCopy>(buf: &DeviceBuffer<T>, value: u8) -> Result<()> {
    let bytes = buf.len() * std::mem::size_of::<T>();
    // SAFETY: the buffer holds `bytes` bytes.
    Ok(check("cuMemsetD8", unsafe { cust::sys::cuMemsetD8_v2(buf.as_device_ptr().as_raw(), value, bytes) })?)
}

/// Enqueues a device-to-device copy of all of `src` into `dst` on the lab's stream
/// (`cuMemcpyDtoDAsync`).
///
/// # Errors
/// Buffers of different lengths, or a driver failure.
pub fn copy_on_device<T: DeviceCopy>(gpu: &Gpu, dst: &DeviceBuffer<T>, src: &DeviceBuffer<T>) -> Result<()> {
    if dst.len() != src.len() {
        refuse!("device copy of {} elements into {}", src.len(), dst.len());
    }
    // The elements times their size: a `DeviceSlice` is a (pointer, length) pair on the host,
    // so `size_of_val` of it is 16 bytes, not the buffer.
    let bytes = src.len() * std::mem::size_of::<T>();
    // SAFETY: both buffers hold `bytes` bytes and are borrowed for the call; the caller
    // synchronises the stream before dropping them.
    let r = unsafe {
        cust::sys::cuMemcpyDtoDAsync_v2(
            dst.as_device_ptr().as_raw(),
            src.as_device_ptr().as_raw(),
            bytes,
            gpu.stream.as_inner(),
        )
    };
    Ok(check("cuMemcpyDtoDAsync", r).map_err(|e| e.during(format!("copying {bytes} bytes on the device")))?)
}

/// Enqueues a host-to-device copy of `src` into `dst` on the lab's stream
/// (`cuMemcpyHtoDAsync`; from pageable memory the driver stages it and returns late).
///
/// # Safety
/// `src` stays alive and unchanged until the stream is synchronised.
///
/// # Errors
/// Lengths that differ, or a driver failure.
pub unsafe fn copy_to_device_async<T: DeviceCopy>(gpu: &Gpu, dst: &DeviceBuffer<T>, src: &[T]) -> Result<()> {
    if dst.len() != src.len() {
        refuse!("host-to-device copy of {} elements into {}", src.len(), dst.len());
    }
    let (bytes, stream) = (std::mem::size_of_val(src), gpu.stream.as_inner());
    // SAFETY: `dst` holds `bytes` bytes; the caller keeps `src` alive.
    Ok(check("cuMemcpyHtoDAsync", unsafe {
        cust::sys::cuMemcpyHtoDAsync_v2(dst.as_device_ptr().as_raw(), src.as_ptr() as *const c_void, bytes, stream)
    })?)
}

/// Enqueues a device-to-host copy of `src` into `dst` on the lab's stream
/// (`cuMemcpyDtoHAsync`).
///
/// # Safety
/// `dst` stays alive, and is neither read nor written, until the stream is synchronised.
///
/// # Errors
/// Lengths that differ, or a driver failure.
pub unsafe fn copy_to_host_async<T: DeviceCopy>(
    gpu: &Gpu,
    dst: *mut T,
    len: usize,
    src: &DeviceBuffer<T>,
) -> Result<()> {
    if src.len() != len {
        refuse!("device-to-host copy of {} elements into {len}", src.len());
    }
    let (bytes, stream) = (len * std::mem::size_of::<T>(), gpu.stream.as_inner());
    // SAFETY: `src` holds `bytes` bytes; the caller keeps `dst` (`len` elements) alive.
    Ok(check("cuMemcpyDtoHAsync", unsafe {
        cust::sys::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src.as_device_ptr().as_raw(), bytes, stream)
    })?)
}

/// Memory a kernel can load that is not a [`DeviceBuffer`] (`peer::DeviceMemory`,
/// `host_memory::PinnedHost`, `host_memory::Managed`): [`Owned::view`] gives it to the typed
/// launches.
///
/// # Safety
/// `bytes()` bytes at `address()` stay valid for as long as the value lives.
pub unsafe trait Owned {
    /// The device address (unified addressing).
    fn address(&self) -> u64;
    /// Size, bytes.
    fn bytes(&self) -> usize;
    /// The memory as `len` elements of `T`, for a typed launch.
    ///
    /// # Panics
    /// When `len` elements do not fit in [`Owned::bytes`] (a bug in the caller).
    fn view<T: DeviceCopy>(&self, len: usize) -> View<'_, T> {
        assert!(len * std::mem::size_of::<T>() <= self.bytes(), "a view past the end of the memory");
        // SAFETY: the trait's contract: the memory lives as long as `self`, which outlives the view.
        unsafe { View::new(self.address(), len) }
    }
}

/// Memory the lab does not own through a [`DeviceBuffer`] (a peer GPU's allocation, mapped
/// pinned host memory, managed memory), seen as a `DeviceBuffer<T>` of `len` elements for the
/// typed launches ([`super::launch::Launch`]), which pass only its address. Never freed through the
/// view: the owner frees it, and outlives the view (`'a`).
pub struct View<'a, T: DeviceCopy> {
    buffer: std::mem::ManuallyDrop<DeviceBuffer<T>>,
    _owner: std::marker::PhantomData<&'a ()>,
}

impl<T: DeviceCopy> View<'_, T> {
    /// The `len` elements at device address `address` (unified addressing: valid on every
    /// device that can load it).
    ///
    /// # Safety
    /// `address` holds `len` elements of `T` for as long as the view lives.
    pub unsafe fn new(address: u64, len: usize) -> Self {
        // SAFETY: the caller keeps the memory alive; ManuallyDrop never frees it.
        let buffer = unsafe { DeviceBuffer::from_raw_parts(cust::memory::DevicePointer::from_raw(address), len) };
        View { buffer: std::mem::ManuallyDrop::new(buffer), _owner: std::marker::PhantomData }
    }
}

impl<T: DeviceCopy> std::ops::Deref for View<'_, T> {
    type Target = DeviceBuffer<T>;
    fn deref(&self) -> &DeviceBuffer<T> {
        &self.buffer
    }
}

impl<T: DeviceCopy> std::ops::DerefMut for View<'_, T> {
    fn deref_mut(&mut self) -> &mut DeviceBuffer<T> {
        &mut self.buffer
    }
}
