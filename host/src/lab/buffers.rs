//! Device buffers for the lessons: free-memory refusals before allocating, uploads, poisoned
//! outputs (so an unwritten element never passes), downloads, and checks of outputs as they
//! stream back through pinned staging.

use anyhow::Result;
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy};

use crate::gpu::Gpu;
use crate::gpu::memory;
use crate::refuse;
use crate::verify::Check;

/// Refuses when `bytes` more device memory would not fit in what the device has free.
pub fn ensure_free(what: &str, bytes: usize) -> Result<()> {
    let (free, total) = memory::free_and_total()?;
    check_free(what, bytes, free, total)
}

/// The refusal of [`ensure_free`], given the device's free and total bytes.
pub fn check_free(what: &str, bytes: usize, free: usize, total: usize) -> Result<()> {
    if bytes > free {
        refuse!(
            "{what} needs {:.2} GiB of device memory, but only {:.2} GiB of {:.2} GiB is free: choose smaller sizes",
            gib(bytes),
            gib(free),
            gib(total)
        );
    }
    Ok(())
}

/// Bytes of buffers of 4-byte elements with the given element counts, saturating at
/// `usize::MAX` (which no device has free), so absurd sizes reach the free-memory refusal
/// instead of wrapping around.
pub fn f32_bytes(counts: &[usize]) -> usize {
    counts.iter().fold(0usize, |sum, &n| sum.saturating_add(n.saturating_mul(4)))
}

fn gib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Refuses matrices the 32-bit-indexed kernels cannot address: every count (elements of one
/// matrix) must fit in a `u32`.
pub fn check_u32_elements(what: &str, counts: &[usize]) -> Result<()> {
    if let Some(&n) = counts.iter().find(|&&n| n > u32::MAX as usize) {
        refuse!(
            "{what}: a matrix of {n} elements is too large, the kernels index in 32 bits (at most {} elements)",
            u32::MAX
        );
    }
    Ok(())
}

/// Blocks and threads that fill every SM with blocks of `block` threads
/// (`SMs x max threads per SM / block` blocks).
pub fn full_gpu(info: &crate::gpu::device::DeviceInfo, block: u32) -> (u32, usize) {
    let blocks = info.sms * (info.max_threads_per_sm / block);
    (blocks, blocks as usize * block as usize)
}

/// Host bytes a lesson holds at once to stage a `rows x cols` f32 matrix through pinned memory
/// (two chunks, [`crate::gpu::staging::CHUNK_BYTES`] each at most).
pub fn staging_bytes((rows, cols): (usize, usize)) -> usize {
    2 * f32_bytes(&[rows * cols]).min(crate::gpu::staging::CHUNK_BYTES)
}

/// Copies `data` to a new device buffer.
pub fn upload<T: DeviceCopy>(data: &[T]) -> Result<DeviceBuffer<T>> {
    DeviceBuffer::from_slice(data).map_err(|e| anyhow::anyhow!("upload: {}", crate::gpu::describe(e)))
}

/// Sets every byte of a buffer to 0xFF (a NaN for f32 and for BF16), so that an output element
/// a kernel fails to write never passes a check.
pub fn poison<T: DeviceCopy + bytemuck::Pod>(buf: &DeviceBuffer<T>) -> Result<()> {
    match std::mem::size_of::<T>() % 4 {
        0 => memory::fill_words(buf, u32::MAX),
        _ => memory::fill_bytes(buf, u8::MAX),
    }
}

/// A new poisoned device buffer of `n` elements (see [`poison`]).
pub fn poisoned<T: DeviceCopy + bytemuck::Pod>(n: usize) -> Result<DeviceBuffer<T>> {
    // SAFETY: every word is written by poison() before any read.
    let buf = unsafe { DeviceBuffer::<T>::uninitialized(n) }
        .map_err(|e| anyhow::anyhow!("alloc: {}", crate::gpu::describe(e)))?;
    poison(&buf)?;
    Ok(buf)
}

/// Copies a device buffer back to the host.
pub fn download<T: DeviceCopy + Default + Clone>(buf: &DeviceBuffer<T>) -> Result<Vec<T>> {
    download_first(buf, buf.len())
}

/// The first `len` elements of `buf` (those a launch wrote, when it wrote fewer than the buffer
/// holds: no copy of the rest).
///
/// # Panics
/// When `len` exceeds `buf.len()`.
///
/// # Errors
/// A failed copy.
pub fn download_first<T: DeviceCopy + Default + Clone>(buf: &DeviceBuffer<T>, len: usize) -> Result<Vec<T>> {
    let mut host = vec![T::default(); len];
    buf.index(..len).copy_to(&mut host[..]).map_err(|e| anyhow::anyhow!("download: {}", crate::gpu::describe(e)))?;
    Ok(host)
}

/// The first `len` 32-bit words of `buf` (`f32` or `u32`) compared bit for bit with `want(i)`
/// as they arrive through `staging`, chunk by chunk on every core: no host copy of the whole
/// output, and no page faults on a fresh one per check. A `T` of another size fails to compile.
///
/// # Panics
/// When `len` exceeds `buf.len()`.
///
/// # Errors
/// A driver failure.
pub fn check_staged<T: DeviceCopy + bytemuck::Pod + Default + Sync>(
    gpu: &Gpu,
    staging: &mut crate::gpu::staging::Staging<T>,
    buf: &DeviceBuffer<T>,
    len: usize,
    want: impl Fn(usize) -> T + Sync,
) -> Result<Check> {
    const { assert!(std::mem::size_of::<T>() == 4, "check_staged compares 32-bit words") };
    let mut check = crate::verify::Streamed::new();
    staging.download_first(gpu, buf, len, |_, chunk| {
        check.chunk(bytemuck::cast_slice(chunk), |i| bytemuck::cast::<T, u32>(want(i)))
    })?;
    Ok(check.finish())
}

/// [`check_staged`] of a whole `f32` output that must be bit for bit one already checked in full
/// against the same `want` (`passed`): every element is compared as it arrives, without the
/// digest (a serial FNV chain per block). When every element matches, the words are
/// those `passed` hashed, so its check is this one's; any mismatch (or a `passed` that did not
/// pass) runs the full check for the digest and the first mismatch.
///
/// # Errors
/// A driver failure.
pub fn recheck_exact_staged(
    gpu: &Gpu,
    staging: &mut crate::gpu::staging::Staging<f32>,
    output: &DeviceBuffer<f32>,
    want: impl Fn(usize) -> f32 + Sync,
    passed: &Check,
) -> Result<Check> {
    if passed.passed() && passed.checked == output.len() {
        let mut bad = 0;
        staging.download(gpu, output, |offset, chunk| bad += crate::verify::mismatches_f32(chunk, offset, &want))?;
        if bad == 0 {
            return Ok(passed.clone());
        }
    }
    check_staged(gpu, staging, output, output.len(), want)
}
