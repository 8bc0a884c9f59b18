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

    /// Fills all of `dst` with a `rows x cols` matrix stored with rows `pitch` elements apart
    /// (`cols <= pitch`, `dst` of `rows x pitch` elements): element `(r, c)` at `r pitch + c` is
    /// `value(r cols + c)`, its index in the unpadded row-major matrix, and the `pitch - cols`
    /// elements after each row are `pad`.
    ///
    /// # Errors
    /// A driver failure.
    pub fn upload_pitched(
        &mut self,
        gpu: &Gpu,
        dst: &DeviceBuffer<T>,
        (cols, pitch): (usize, usize),
        pad: T,
        value: impl Fn(usize) -> T,
    ) -> Result<()> {
        self.upload(gpu, dst, |offset, chunk| {
            for (j, v) in chunk.iter_mut().enumerate() {
                let (r, c) = ((offset + j) / pitch, (offset + j) % pitch);
                *v = if c < cols { value(r * cols + c) } else { pad };
            }
        })
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

    /// Reads the `rows x cols` matrix stored in `src` with rows `pitch` elements apart (`cols <=
    /// pitch`, `rows x pitch <= src.len()`), the padding after each row left out:
    /// `visit(first, run)` sees elements `first..first + run.len()` of the unpadded row-major
    /// matrix, in order, in runs of [`Staging::chunk_len`] elements (the last one shorter), so a
    /// check fed the runs sees the matrix as a dense buffer would give it.
    ///
    /// # Panics
    /// When `rows x pitch` exceeds `src.len()` or `cols` exceeds `pitch`.
    ///
    /// # Errors
    /// A driver failure.
    pub fn download_pitched(
        &mut self,
        gpu: &Gpu,
        src: &DeviceBuffer<T>,
        (rows, cols, pitch): (usize, usize, usize),
        mut visit: impl FnMut(usize, &[T]),
    ) -> Result<()> {
        assert!(cols <= pitch, "{cols} columns in rows of {pitch}");
        if cols == pitch {
            return self.download_first(gpu, src, rows * cols, visit);
        }
        let mut gather = Unpad::new(cols, pitch, Self::chunk_len());
        self.download_first(gpu, src, rows * pitch, |offset, chunk| gather.feed(offset, chunk, &mut visit))?;
        gather.finish(&mut visit);
        Ok(())
    }
}

/// The elements of a matrix stored with rows `pitch` apart, `cols` of each row kept, gathered
/// from the stored buffer's chunks (fed in order) into runs of `run_len` elements.
struct Unpad<T> {
    cols: usize,
    pitch: usize,
    run_len: usize,
    run: Vec<T>,
    /// Index in the unpadded matrix of `run[0]`.
    first: usize,
}

impl<T: Copy> Unpad<T> {
    fn new(cols: usize, pitch: usize, run_len: usize) -> Unpad<T> {
        Unpad { cols, pitch, run_len, run: Vec::with_capacity(run_len), first: 0 }
    }

    /// Takes stored elements `offset..offset + chunk.len()`, handing `visit` each full run.
    fn feed(&mut self, offset: usize, chunk: &[T], visit: &mut impl FnMut(usize, &[T])) {
        let end = offset + chunk.len();
        let mut i = offset;
        while i < end {
            let c = i % self.pitch;
            if c >= self.cols {
                i += self.pitch - c;
                continue;
            }
            let take = (self.cols - c).min(end - i).min(self.run_len - self.run.len());
            self.run.extend_from_slice(&chunk[i - offset..i - offset + take]);
            i += take;
            if self.run.len() == self.run_len {
                visit(self.first, &self.run);
                self.first += self.run_len;
                self.run.clear();
            }
        }
    }

    /// Hands `visit` the last, partial run.
    fn finish(self, visit: &mut impl FnMut(usize, &[T])) {
        if !self.run.is_empty() {
            visit(self.first, &self.run);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Unpad;

    #[test]
    fn unpad_keeps_each_rows_columns_in_runs_across_any_chunking() {
        // 5 rows of 3 columns stored 4 apart: stored element 4 r + c holds 10 r + c, padding 99.
        let stored: Vec<u32> = (0..20).map(|i| if i % 4 < 3 { 10 * (i / 4) + i % 4 } else { 99 }).collect();
        let want: Vec<u32> = (0..5).flat_map(|r| (0..3).map(move |c| 10 * r + c)).collect();
        for chunk in [1, 3, 4, 7, 20] {
            let mut runs = Vec::new();
            let mut gather = Unpad::new(3, 4, 4);
            let mut visit = |first: usize, run: &[u32]| runs.push((first, run.to_vec()));
            for (k, part) in stored.chunks(chunk).enumerate() {
                gather.feed(k * chunk, part, &mut visit);
            }
            gather.finish(&mut visit);
            let firsts: Vec<usize> = runs.iter().map(|r| r.0).collect();
            assert_eq!(firsts, [0, 4, 8, 12], "chunks of {chunk}");
            assert!(runs[..3].iter().all(|r| r.1.len() == 4) && runs[3].1.len() == 3, "chunks of {chunk}");
            assert_eq!(runs.into_iter().flat_map(|r| r.1).collect::<Vec<_>>(), want, "chunks of {chunk}");
        }
    }
}
