//! Bandwidth per level: L2 and DRAM reads (`read_cg` over a buffer that fits L2, read many
//! times, and over one much larger than L2, read once) and host <-> device copies over the bus
//! from pageable and from pinned (page-locked) host memory.

use anyhow::Result;
use cust::memory::{DeviceBuffer, LockedBuffer};
use memlab_contracts::hierarchy::READ_CG_VECTOR_BYTES;
use memlab_contracts::probes::BLOCK;

use crate::gpu::describe;
use crate::gpu::launch::LaunchShape;
use crate::gpu::memory::{copy_to_device_async, copy_to_host_async};
use crate::gpu::staging::Staging;
use crate::gpu::timing::{Repeats, Timing, time};
use crate::lab::{KernelRow, KernelRun, Lab, Level, Work, download, ensure_free, measure, poison, poisoned};
use crate::launches;
use crate::verify::{self, Check};
use crate::{reference, refuse};

/// The launch shape of the readers `read_cg` and `read_cg_unrolled` (`kernels-gpu/src/hierarchy.rs`):
/// `blocks` one-dimensional blocks of 256 threads, no shared memory.
pub fn read_shape(blocks: u32) -> LaunchShape {
    LaunchShape { grid: (blocks, 1), block: (BLOCK, 1), smem_bytes: 0 }
}

/// The typed launch of a reader: `(shape, input, vectors, passes, out)`.
pub type ReadLaunch =
    fn(LaunchShape, &DeviceBuffer<u32>, u32, u32, &mut DeviceBuffer<u32>) -> crate::gpu::launch::Launch;

/// How a read is launched: the kernel and the blocks of 256 threads per SM.
#[derive(Clone, Copy)]
pub struct Reader {
    /// [`launches::read_cg`] or [`launches::read_cg_unrolled`].
    pub kernel: ReadLaunch,
    /// Blocks per SM; `None`: as many as the SM's threads allow (a full GPU).
    pub blocks_per_sm: Option<u32>,
}

impl Reader {
    /// `read_cg` on a full GPU: the DRAM read.
    pub const PLAIN: Reader = Reader { kernel: launches::read_cg, blocks_per_sm: None };
    /// `read_cg_unrolled` on a full GPU: the L2 read of the hierarchy table.
    pub const UNROLLED: Reader = Reader { kernel: launches::read_cg_unrolled, blocks_per_sm: None };
}

/// A read of `bytes` (a multiple of 16) `passes` times by `reader` (kernel and blocks per SM);
/// the rate counts every byte read (`bytes * passes`).
pub fn read(
    lab: &Lab,
    reader: Reader,
    bytes: usize,
    passes: u32,
    level: Level,
    lesson: &'static str,
    prediction: String,
) -> Result<KernelRow> {
    let (full, _) = crate::lab::sanitizer::grid(lab, BLOCK);
    let passes = crate::lab::sanitizer::passes(lab, passes);
    let blocks = reader.blocks_per_sm.map_or(full, |b| (b * lab.gpu.info.sms).min(full));
    let threads = blocks as usize * BLOCK as usize;
    // read_cg counts 16-byte vectors in a u32 and steps its index by the thread count.
    let vectors = bytes / READ_CG_VECTOR_BYTES;
    if vectors > u32::MAX as usize - threads {
        refuse!(
            "{lesson}: {bytes} bytes is too large for read_cg (at most {} bytes)",
            READ_CG_VECTOR_BYTES * (u32::MAX as usize - threads)
        );
    }
    ensure_free(lesson, bytes.saturating_add(4 * threads))?;
    // The input is generated chunk by chunk into pinned staging: the host never holds the 1 GiB
    // of the DRAM read, and its check sums the same words from their formula.
    let len = bytes / 4;
    let input: DeviceBuffer<u32> = poisoned(len)?;
    Staging::new(len)?.upload(&lab.gpu, &input, reference::fill_strided_words)?;
    let mut out = poisoned::<u32>(threads)?;
    let launch = (reader.kernel)(read_shape(blocks), &input, vectors as u32, passes, &mut out);
    let work = Work { flop: 0.0, bytes: bytes as f64 * passes as f64, level };
    let size = format!("{bytes} B x {passes}");
    let run = KernelRun { launch, lesson, prediction, work, size, reset: &|| poison(&out) };
    let check = || {
        let want = reference::read_sums(len, reference::strided_word, threads, passes);
        Ok((verify::exact_u32(&download(&out)?, |g| want[g]), "checksums"))
    };
    measure(lab, run, check)
}

/// One host <-> device copy, timed.
#[derive(Debug, Clone)]
pub struct Transfer {
    /// "host to device" or "device to host".
    pub direction: &'static str,
    /// "pageable" or "pinned".
    pub memory: &'static str,
    /// Bytes copied.
    pub bytes: usize,
    /// Event timing of the copy.
    pub timing: Timing,
    /// GB/s (1e9) of bytes copied, from the median.
    pub gbs: f64,
    /// The data arrived intact.
    pub check: Check,
}

/// Copies `bytes` host -> device and device -> host, from a pageable `Vec` and from a pinned
/// `LockedBuffer` (`cuMemHostAlloc`), each timed with events around `cuMemcpy*Async` on the
/// lab's stream (a pageable copy is staged through a driver buffer, so it returns late).
///
/// Two host buffers, not four: each is the source of its host-to-device copies and
/// then, zeroed, the destination of its device-to-host ones, and every check compares with the
/// generator ([`reference::strided_word`]), not with a kept copy of the words. The device is
/// poisoned before each pass's copies, so a pass whose copies move nothing fails.
pub fn transfers(lab: &Lab, bytes: usize, repeats: Repeats) -> Result<Vec<Transfer>> {
    let n = bytes / 4;
    let bytes = 4 * n;
    ensure_free("the transfer test", bytes)?;
    let pinned_alloc = |e| anyhow::anyhow!("pinned host alloc of {bytes} bytes: {}", describe(e));
    let device: DeviceBuffer<u32> = poisoned(n)?;
    let mut pageable = vec![0u32; n];
    let mut pinned = LockedBuffer::new(&0u32, n).map_err(pinned_alloc)?;
    let mut out = Vec::new();
    // One pass per host buffer; the device's copy is read back at the pinned rate, into
    // `readback` or, without one, into the pinned `host` itself (not through a pageable
    // download into a fresh 256 MiB vector: page faults and the staged rate).
    let mut pass = |memory: &'static str, host: &mut [u32], readback: Option<&mut [u32]>| -> Result<()> {
        reference::fill_strided_words(0, host);
        // Poisoned, so the check sees only what this pass's copies wrote.
        poison(&device)?;
        // SAFETY: `host` holds `n` words and outlives the copies, which `time` synchronises
        // before returning.
        let timing = time(&lab.gpu, repeats, || unsafe { copy_to_device_async(&lab.gpu, &device, host) })?;
        let back: &mut [u32] = match readback {
            Some(b) => b,
            None => &mut *host,
        };
        back.fill(0);
        // SAFETY: `back` holds `n` words and is read only after the stream is synchronised.
        unsafe { copy_to_host_async(&lab.gpu, back.as_mut_ptr(), n, &device) }?;
        lab.gpu.stream.synchronize().map_err(|e| anyhow::anyhow!("transfer check: {}", describe(e)))?;
        let check = verify::exact_u32(back, reference::strided_word);
        out.push(Transfer { direction: "host to device", memory, bytes, gbs: timing.gbs(bytes as f64), timing, check });
        // Zeroed, so the check sees only what the device-to-host copies wrote.
        host.fill(0);
        let dst = host.as_mut_ptr();
        // SAFETY: `dst` holds `n` words; the copies into it are complete when `time` returns (it
        // synchronises), and nothing else touches it meanwhile.
        let timing = time(&lab.gpu, repeats, || unsafe { copy_to_host_async(&lab.gpu, dst, n, &device) })?;
        let check = verify::exact_u32(host, reference::strided_word);
        out.push(Transfer { direction: "device to host", memory, bytes, gbs: timing.gbs(bytes as f64), timing, check });
        Ok(())
    };
    pass("pageable", &mut pageable, Some(&mut pinned))?;
    pass("pinned", &mut pinned, None)?;
    Ok(out)
}
