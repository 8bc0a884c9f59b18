//! A large buffer moved between host and device chunk by chunk through two pinned staging
//! buffers (`cuMemAllocHost`, `cuMemcpy*Async` on the lab's stream): the host's work on one
//! chunk (generating an input, checking an output) overlaps the copy of the next, copies run at
//! the pinned rate, and host memory holds two chunks, never the whole buffer.

use std::ffi::c_void;

use anyhow::Result;
use cust::event::{Event, EventFlags};
use cust::memory::{DeviceBuffer, DeviceCopy, LockedBuffer};

use super::context::Gpu;
use super::result::{check, describe};

/// Bytes of one staging chunk (64 MiB): large enough that each copy runs at the bus rate and
/// each chunk's host work spreads over every core, small enough that two of them are nothing
/// next to a matrix. A whole number of `verify::DIGEST_BLOCK` words, so chunked checks keep the
/// whole buffer's digest.
pub const CHUNK_BYTES: usize = 64 << 20;

/// Two pinned host buffers of one chunk each, and an event per buffer marking its last copy.
pub struct Staging<T: DeviceCopy> {
    buffers: [LockedBuffer<T>; 2],
    done: [Event; 2],
}

impl<T: DeviceCopy + Default> Staging<T> {
    /// Staging for buffers of up to `len` elements: two chunks of `min(len, CHUNK_BYTES)` bytes.
    ///
    /// # Errors
    /// A refusal when the host cannot pin that much memory.
    pub fn new(len: usize) -> Result<Staging<T>> {
        let chunk = Self::chunk_len().min(len.max(1));
        let pin = |e| anyhow::anyhow!("pinned staging buffer of {chunk} elements: {}", describe(e));
        let event = || Event::new(EventFlags::DISABLE_TIMING).map_err(|e| anyhow::anyhow!("event: {}", describe(e)));
        Ok(Staging {
            buffers: [
                LockedBuffer::new(&T::default(), chunk).map_err(pin)?,
                LockedBuffer::new(&T::default(), chunk).map_err(pin)?,
            ],
            done: [event()?, event()?],
        })
    }

    /// Elements per chunk.
    pub fn chunk_len() -> usize {
        CHUNK_BYTES / std::mem::size_of::<T>()
    }

    fn chunks(&self, len: usize) -> impl Iterator<Item = (usize, usize)> + use<T> {
        let step = self.buffers[0].len();
        (0..len.div_ceil(step)).map(move |i| (i * step, (len - i * step).min(step)))
    }

    /// Fills all of `dst`: `fill(offset, chunk)` writes elements `offset..offset + chunk.len()` on
    /// the host, then the chunk is copied while the next one is filled. Returns once every copy
    /// is complete.
    ///
    /// # Errors
    /// A driver failure.
    pub fn upload(&mut self, gpu: &Gpu, dst: &DeviceBuffer<T>, fill: impl FnMut(usize, &mut [T])) -> Result<()> {
        self.upload_first(gpu, dst, dst.len(), fill)
    }

    /// As [`Staging::upload`], for the first `len` elements of `dst` only (the latency ladder's
    /// chains, each in the front of one buffer sized for the largest).
    ///
    /// # Panics
    /// When `len` exceeds `dst.len()`.
    ///
    /// # Errors
    /// A driver failure.
    pub fn upload_first(
        &mut self,
        gpu: &Gpu,
        dst: &DeviceBuffer<T>,
        len: usize,
        mut fill: impl FnMut(usize, &mut [T]),
    ) -> Result<()> {
        assert!(len <= dst.len(), "upload of {len} elements into a buffer of {}", dst.len());
        let size = std::mem::size_of::<T>();
        for (i, (offset, len)) in self.chunks(len).enumerate() {
            let b = i % 2;
            // The copy out of this buffer two chunks ago must be done before it is refilled.
            self.done[b].synchronize().map_err(|e| anyhow::anyhow!("staging: {}", describe(e)))?;
            let host = &mut self.buffers[b][..len];
            fill(offset, host);
            let device = dst.as_device_ptr().as_raw() + (offset * size) as u64;
            // SAFETY: `dst` holds `offset + len` elements; the pinned buffer lives in `self` and
            // is not written again before its event says this copy is done.
            check("cuMemcpyHtoDAsync", unsafe {
                cust::sys::cuMemcpyHtoDAsync_v2(
                    device,
                    host.as_ptr() as *const c_void,
                    len * size,
                    gpu.stream.as_inner(),
                )
            })
            .map_err(|e| e.during("staging"))?;
            self.done[b].record(&gpu.stream).map_err(|e| anyhow::anyhow!("staging: {}", describe(e)))?;
        }
        gpu.stream.synchronize().map_err(|e| anyhow::anyhow!("staging upload: {}", describe(e)))
    }

    /// Reads all of `src`: `visit(offset, chunk)` sees elements `offset..offset + chunk.len()`
    /// in order, while the next chunk is being copied.
    ///
    /// # Errors
    /// A driver failure.
    pub fn download(&mut self, gpu: &Gpu, src: &DeviceBuffer<T>, visit: impl FnMut(usize, &[T])) -> Result<()> {
        self.download_first(gpu, src, src.len(), visit)
    }

    /// As [`Staging::download`], for the first `len` elements of `src` only (those a launch
    /// wrote, when it wrote fewer than the buffer holds).
    ///
    /// # Panics
    /// When `len` exceeds `src.len()`.
    ///
    /// # Errors
    /// A driver failure.
    pub fn download_first(
        &mut self,
        gpu: &Gpu,
        src: &DeviceBuffer<T>,
        len: usize,
        mut visit: impl FnMut(usize, &[T]),
    ) -> Result<()> {
        assert!(len <= src.len(), "download of {len} elements from a buffer of {}", src.len());
        let size = std::mem::size_of::<T>();
        let chunks: Vec<(usize, usize)> = self.chunks(len).collect();
        let enqueue = |staging: &mut Staging<T>, i: usize| -> Result<()> {
            let ((offset, len), b) = (chunks[i], i % 2);
            let device = src.as_device_ptr().as_raw() + (offset * size) as u64;
            let host = staging.buffers[b].as_mut_ptr();
            // SAFETY: `src` holds `offset + len` elements, the pinned buffer `len`; the host reads
            // it only after this copy's event.
            check("cuMemcpyDtoHAsync", unsafe {
                cust::sys::cuMemcpyDtoHAsync_v2(host as *mut c_void, device, len * size, gpu.stream.as_inner())
            })
            .map_err(|e| e.during("staging"))?;
            staging.done[b].record(&gpu.stream).map_err(|e| anyhow::anyhow!("staging: {}", describe(e)))
        };
        if !chunks.is_empty() {
            enqueue(self, 0)?;
        }
        for (i, &(offset, len)) in chunks.iter().enumerate() {
            // The next chunk goes into the other buffer, whose previous chunk was visited already.
            if i + 1 < chunks.len() {
                enqueue(self, i + 1)?;
            }
            let b = i % 2;
            self.done[b].synchronize().map_err(|e| anyhow::anyhow!("staging download: {}", describe(e)))?;
            visit(offset, &self.buffers[b][..len]);
        }
        Ok(())
    }
}
