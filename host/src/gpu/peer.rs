//! Several GPUs in one process: peer access between two devices' contexts, raw device
//! allocations that remember their context, peer copies on the copy engines
//! (`cuMemcpyPeerAsync`), a copy staged through pinned host memory where peer access is
//! unavailable, and the timing of two copies running at once.
//!
//! Every call that works on one device first makes that device's context current
//! ([`Gpu::make_current`]): with several devices open, the current context decides where an
//! allocation lands and which device a launch runs on (CUDA Driver API, "Context Management").

use std::ffi::c_void;
use std::time::Instant;

use anyhow::Result;
use cust::event::{Event, EventFlags};
use cust::stream::StreamWaitEventFlags;
use cust::sys::{self, CUdevice_P2PAttribute as P2P, cudaError_enum};

use super::context::Gpu;
use super::device::handle;
use super::result::{check, describe};
use super::timing::{Repeats, Timing};

/// What the driver says about one ordered pair of devices (CUDA Driver API, "Peer Context
/// Memory Access": `cuDeviceCanAccessPeer`, `cuDeviceGetP2PAttribute`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PeerCaps {
    /// `accessor` can map and load `owner`'s memory (`cuDeviceCanAccessPeer`).
    pub access: bool,
    /// The driver's relative performance rank of the link (lower is faster; 0 on most systems).
    pub rank: i32,
    /// Native atomics over the link.
    pub atomics: bool,
}

/// The driver's answer for `accessor` reading `owner`'s memory.
///
/// # Errors
/// A [`DriverError`](super::result::DriverError), e.g. for an ordinal the driver does not know.
pub fn caps(accessor: u32, owner: u32) -> Result<PeerCaps> {
    let (a, o) = (handle(accessor)?, handle(owner)?);
    let mut can = 0;
    // SAFETY: both handles come from cuDeviceGet; each call writes one int.
    check("cuDeviceCanAccessPeer", unsafe { sys::cuDeviceCanAccessPeer(&mut can, a, o) })?;
    let attr = |which: P2P| -> Result<i32> {
        let mut v = 0;
        check("cuDeviceGetP2PAttribute", unsafe { sys::cuDeviceGetP2PAttribute(&mut v, which, a, o) })?;
        Ok(v)
    };
    Ok(PeerCaps {
        access: can == 1,
        rank: attr(P2P::CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK)?,
        atomics: attr(P2P::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED)? == 1,
    })
}

/// Lets kernels on `accessor` load and store `owner`'s memory (`cuCtxEnablePeerAccess`);
/// enabling twice is not an error.
///
/// # Errors
/// A [`DriverError`](super::result::DriverError) naming both devices (e.g. no peer access
/// between the two).
pub fn enable(accessor: &Gpu, owner: &Gpu) -> Result<()> {
    accessor.make_current()?;
    // SAFETY: the owner's context lives as long as `owner`.
    let r = unsafe { sys::cuCtxEnablePeerAccess(owner.raw_context(), 0) };
    match check("cuCtxEnablePeerAccess", r) {
        Err(e) if e.code != cudaError_enum::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
            Err(e.during(format!("device {} cannot map device {}'s memory", accessor.ordinal, owner.ordinal)).into())
        }
        // Enabled now, or before: the access the caller asked for.
        _ => Ok(()),
    }
}

/// Device memory of one GPU (`cuMemAlloc`), freed in its own context. Its address is valid on
/// every device that has peer access to the owner (unified addressing).
pub struct DeviceMemory {
    /// Device address.
    pub ptr: u64,
    /// Size, bytes.
    pub bytes: usize,
    ctx: sys::CUcontext,
}

// SAFETY: `bytes` bytes at `ptr` stay allocated until the value is dropped.
unsafe impl super::memory::Owned for DeviceMemory {
    fn address(&self) -> u64 {
        self.ptr
    }
    fn bytes(&self) -> usize {
        self.bytes
    }
}

impl DeviceMemory {
    /// Allocates `bytes` on `gpu` and fills it with `words` (repeated from the start;
    /// `words.len() * 4 == bytes`).
    ///
    /// # Errors
    /// A [`DriverError`](super::result::DriverError) when the device has no memory for it.
    pub fn from_words(gpu: &Gpu, words: &[u32]) -> Result<DeviceMemory> {
        let mem = DeviceMemory::poisoned(gpu, words.len() * 4)?;
        mem.write(words)?;
        Ok(mem)
    }

    /// Allocates `bytes` (a multiple of 4) on `gpu`, every byte 0xFF.
    ///
    /// # Errors
    /// A [`DriverError`](super::result::DriverError) when the device has no memory for it.
    pub fn poisoned(gpu: &Gpu, bytes: usize) -> Result<DeviceMemory> {
        gpu.make_current()?;
        let mut ptr = 0;
        // SAFETY: cuMemAlloc writes one address.
        check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) })
            .map_err(|e| e.during(format!("allocating {bytes} bytes on device {}", gpu.ordinal)))?;
        let mem = DeviceMemory { ptr, bytes, ctx: gpu.raw_context() };
        mem.poison()?;
        Ok(mem)
    }

    /// Runs `f` with this allocation's context current, then restores the caller's.
    fn in_own_context<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let mut previous = std::ptr::null_mut();
        // SAFETY: both calls take or write one context handle.
        check("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut previous) })?;
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })?;
        let out = f();
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(previous) })?;
        out
    }

    /// Sets every byte to 0xFF, so that a copy that fails to arrive never passes a check.
    pub fn poison(&self) -> Result<()> {
        // SAFETY: the allocation holds bytes / 4 words.
        // cuMemsetD32 runs on the owner's legacy stream, unordered with a kernel another GPU's
        // stream runs next on this memory: wait for it (measured on 2 H200s: without the wait
        // 13% of a peer-written buffer still held the poison after the kernel).
        self.in_own_context(|| {
            check("cuMemsetD32", unsafe { sys::cuMemsetD32_v2(self.ptr, u32::MAX, self.bytes / 4) })?;
            Ok(check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })?)
        })
    }

    /// Copies `words` to the start of the allocation (synchronous).
    pub fn write(&self, words: &[u32]) -> Result<()> {
        assert!(words.len() * 4 <= self.bytes, "write past the allocation");
        // SAFETY: the source holds words.len() words, the destination at least as many.
        self.in_own_context(|| {
            Ok(check("cuMemcpyHtoD", unsafe {
                sys::cuMemcpyHtoD_v2(self.ptr, words.as_ptr() as *const c_void, words.len() * 4)
            })?)
        })
    }

    /// Reads the whole allocation back as words (synchronous, after all work on it).
    pub fn read(&self) -> Result<Vec<u32>> {
        self.read_words(self.bytes / 4)
    }

    /// Reads the first `n` words back (synchronous, after all work on it).
    pub fn read_words(&self, n: usize) -> Result<Vec<u32>> {
        assert!(n * 4 <= self.bytes, "read past the allocation");
        let mut out = vec![0u32; n];
        // SAFETY: the destination holds n words, the source at least as many.
        self.in_own_context(|| {
            Ok(check("cuMemcpyDtoH", unsafe {
                sys::cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, self.ptr, 4 * n)
            })?)
        })?;
        Ok(out)
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        // SAFETY: the context outlives its allocations (the Gpu is dropped after them); a
        // failure here leaves nothing to recover, so it is ignored.
        let _ = self.in_own_context(|| Ok(check("cuMemFree", unsafe { sys::cuMemFree_v2(self.ptr) })?));
    }
}

/// Enqueues a copy of `bytes` from `src` (on `from`) to `dst` (on `to`) on `stream` through
/// the copy engines (`cuMemcpyPeerAsync`).
pub fn copy_peer(
    dst: &DeviceMemory,
    to: &Gpu,
    src: &DeviceMemory,
    from: &Gpu,
    bytes: usize,
    stream: &cust::stream::Stream,
) -> Result<()> {
    // SAFETY: both allocations hold at least `bytes` and outlive the synchronised copy.
    Ok(check("cuMemcpyPeerAsync", unsafe {
        sys::cuMemcpyPeerAsync(dst.ptr, to.raw_context(), src.ptr, from.raw_context(), bytes, stream.as_inner())
    })?)
}

/// Copies `bytes` from `src` (on `from`) to `dst` (on `to`) through the pinned host buffer
/// `staging`: the path data takes between two GPUs without peer access. Synchronous.
pub fn copy_staged(
    dst: &DeviceMemory,
    to: &Gpu,
    src: &DeviceMemory,
    from: &Gpu,
    staging: &super::host_memory::PinnedHost,
    bytes: usize,
) -> Result<()> {
    assert!(bytes <= staging.bytes, "staging buffer too small");
    from.make_current()?;
    // SAFETY: the staging buffer and both allocations hold `bytes`; each copy is synchronous.
    check("cuMemcpyDtoH", unsafe { sys::cuMemcpyDtoH_v2(staging.host, src.ptr, bytes) })?;
    to.make_current()?;
    Ok(check("cuMemcpyHtoD", unsafe { sys::cuMemcpyHtoD_v2(dst.ptr, staging.host, bytes) })?)
}

/// Times `runs` calls of `work` by the host clock (for work that synchronises itself, like a
/// staged copy), after `warmup` untimed calls.
pub fn time_host(repeats: Repeats, mut work: impl FnMut() -> Result<()>) -> Result<Timing> {
    for _ in 0..repeats.warmup {
        work()?;
    }
    let mut ms = Vec::with_capacity(repeats.runs);
    for _ in 0..repeats.runs {
        let t = Instant::now();
        work()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Timing::from_runs(ms).ok_or_else(|| anyhow::anyhow!("timing: no timed runs"))
}

/// Times two pieces of work running at once, `on_a` enqueued on `a`'s stream and `on_b` on
/// `b`'s: `b`'s stream waits for an event recorded after `a`'s start event, `a`'s stream
/// waits for `b`'s end, and the time is the span between `a`'s start and stop events (CUDA
/// Driver API, `cuStreamWaitEvent`: the event may belong to another device's context).
pub fn time_pair(
    a: &Gpu,
    b: &Gpu,
    repeats: Repeats,
    mut on_a: impl FnMut() -> Result<()>,
    mut on_b: impl FnMut() -> Result<()>,
) -> Result<Timing> {
    let err = |e| anyhow::anyhow!("timing: {}", describe(e));
    a.make_current()?;
    let (start, stop) = (Event::new(EventFlags::DEFAULT).map_err(err)?, Event::new(EventFlags::DEFAULT).map_err(err)?);
    let marker = || Event::new(EventFlags::DISABLE_TIMING).map_err(err);
    let mut once = || -> Result<()> {
        a.make_current()?;
        start.record(&a.stream).map_err(err)?;
        // cust's wait_event consumes its event, so each wait gets a fresh marker.
        let go = marker()?;
        go.record(&a.stream).map_err(err)?;
        b.stream.wait_event(go, StreamWaitEventFlags::DEFAULT).map_err(err)?;
        on_a()?;
        b.make_current()?;
        on_b()?;
        let b_done = marker()?;
        b_done.record(&b.stream).map_err(err)?;
        a.make_current()?;
        a.stream.wait_event(b_done, StreamWaitEventFlags::DEFAULT).map_err(err)?;
        stop.record(&a.stream).map_err(err)?;
        stop.synchronize().map_err(err)?;
        Ok(())
    };
    for _ in 0..repeats.warmup {
        once()?;
    }
    let mut ms = Vec::with_capacity(repeats.runs);
    for _ in 0..repeats.runs {
        once()?;
        ms.push(stop.elapsed_time_f32(&start).map_err(err)? as f64);
    }
    Timing::from_runs(ms).ok_or_else(|| anyhow::anyhow!("timing: no timed runs"))
}
