//! Hopper's asynchronous bulk copies (TMA, the tensor memory accelerator) and the `mbarrier`
//! that reports their completion, as inline PTX. cc 9.0 only: compiled into the sm_90 PTX
//! alone, which `host/build.rs` builds with PTX ISA 8.3 (`cp.async.bulk`, `mbarrier` with
//! transaction counts and `fence.proxy.async` need ISA 8.0 and `sm_90`;
//! `fence.proxy.tensormap::generic` needs ISA 8.3).
//!
//! Shared-memory operands are 32-bit addresses in the `.shared` window ([`SharedAddr`]), so no
//! instruction here takes a generic address to shared memory. Sources: PTX ISA, "Data Movement
//! and Conversion Instructions: cp.async.bulk, cp.async.bulk.tensor, cp.async.bulk.commit_group,
//! cp.async.bulk.wait_group"; "Parallel Synchronization and Communication Instructions:
//! mbarrier"; "membar/fence" (proxy fences); "Tensors" (tensor maps); CUDA C++ Programming
//! Guide, "Asynchronous Data Copies using the Tensor Memory Accelerator (TMA)".

use core::arch::asm;

/// An address in the block's `.shared` window (what `cvta.to.shared` gives), as the bulk copies
/// and the mbarrier instructions take it.
#[derive(Clone, Copy)]
pub struct SharedAddr(pub u32);

impl SharedAddr {
    /// The `.shared` window address of `p`, a pointer into the block's shared memory.
    #[inline(always)]
    pub fn of<T>(p: *const T) -> SharedAddr {
        let a: u32;
        // SAFETY: a state-space conversion reads nothing.
        unsafe {
            asm!("{{\n.reg .u64 a;\ncvta.to.shared.u64 a, {p};\ncvt.u32.u64 {a}, a; }}", p = in(reg64) p as u64, a = out(reg32) a)
        };
        SharedAddr(a)
    }

    /// The address `bytes` further on.
    #[inline(always)]
    pub fn add(self, bytes: u32) -> SharedAddr {
        SharedAddr(self.0 + bytes)
    }
}

/// Initialises the mbarrier at `bar` for `count` arrivals per phase (`mbarrier.init`), then
/// makes the initialisation visible to the async proxy, which completes the copies' transaction
/// bytes on it (`fence.proxy.async.shared::cta`). Threads wait on it only after a block barrier.
///
/// # Safety
/// `bar` is 8-byte aligned in this block's shared memory, not in use by another mbarrier
/// operation; one thread initialises it.
#[inline(always)]
pub unsafe fn mbarrier_init(bar: SharedAddr, count: u32) {
    unsafe {
        asm!(
            "mbarrier.init.shared::cta.b64 [{b}], {n};\nfence.proxy.async.shared::cta;",
            b = in(reg32) bar.0, n = in(reg32) count,
        )
    };
}

/// Arrives on the mbarrier and adds `bytes` to the transaction count its current phase waits
/// for (`mbarrier.arrive.expect_tx`): the phase completes once every arrival is in and the
/// copies completing on it have delivered `bytes`.
///
/// # Safety
/// `bar` was initialised by [`mbarrier_init`] and the block barrier after it.
#[inline(always)]
pub unsafe fn mbarrier_arrive_expect_tx(bar: SharedAddr, bytes: u32) {
    unsafe {
        asm!(
            "{{\n.reg .b64 state;\nmbarrier.arrive.expect_tx.shared::cta.b64 state, [{b}], {n}; }}",
            b = in(reg32) bar.0, n = in(reg32) bytes,
        )
    };
}

/// Waits until the mbarrier's phase of parity `parity` (0, 1, 0, ...) has completed
/// (`mbarrier.try_wait.parity`, retried: each try may suspend the thread for a while). The
/// copies that completed on it are then visible to the waiting thread.
///
/// # Safety
/// As for [`mbarrier_arrive_expect_tx`].
#[inline(always)]
pub unsafe fn mbarrier_wait(bar: SharedAddr, parity: u32) {
    loop {
        let done: u32;
        unsafe {
            asm!(
                "{{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {par};\nselp.u32 {d}, 1, 0, p; }}",
                b = in(reg32) bar.0, par = in(reg32) parity, d = out(reg32) done,
            )
        };
        if done != 0 {
            break;
        }
    }
}

/// Starts a bulk copy of `bytes` from global `src` to shared `dst`, completing on the mbarrier
/// `bar` as transaction bytes (`cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`;
/// a block's own shared memory is a `.shared::cluster` address of its cluster of one).
///
/// # Safety
/// `dst` and `src` 16-byte aligned, `bytes` a multiple of 16; `src` has `bytes` readable bytes,
/// `dst` `bytes` of this block's shared memory nobody reads until the wait; the caller's
/// [`mbarrier_arrive_expect_tx`] counts `bytes`.
#[inline(always)]
pub unsafe fn bulk_load(dst: SharedAddr, src: *const u8, bytes: u32, bar: SharedAddr) {
    unsafe {
        asm!(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{s}], {n}, [{b}];",
            d = in(reg32) dst.0, s = in(reg64) src as u64, n = in(reg32) bytes, b = in(reg32) bar.0,
        )
    };
}

/// Starts a bulk copy of `bytes` from shared `src` to global `dst`, tracked in this thread's
/// current bulk group (`cp.async.bulk.global.shared::cta.bulk_group`).
///
/// # Safety
/// As for [`bulk_load`], the other way; `src` is not written until [`bulk_wait_read`].
#[inline(always)]
pub unsafe fn bulk_store(dst: *mut u8, src: SharedAddr, bytes: u32) {
    unsafe {
        asm!(
            "cp.async.bulk.global.shared::cta.bulk_group [{d}], [{s}], {n};",
            d = in(reg64) dst as u64, s = in(reg32) src.0, n = in(reg32) bytes,
        )
    };
}

/// A tensor map (`CUtensorMap`, 128 bytes, 64-byte aligned) as the kernels receive it: in
/// global memory, written by the host with `cuMemcpyHtoD` before the launch.
#[repr(C, align(64))]
pub struct TensorMap(pub [u64; 16]);

/// Makes the host's write of the tensor map at `map` visible to the tensormap proxy, which the
/// tensor copies read it through (`fence.proxy.tensormap::generic.acquire.sys`; CUDA C++
/// Programming Guide: a map copied to global memory by the host needs it before its first use,
/// at system scope).
///
/// # Safety
/// `map` points to a tensor map in global memory.
#[inline(always)]
pub unsafe fn tensormap_acquire(map: *const TensorMap) {
    unsafe { asm!("fence.proxy.tensormap::generic.acquire.sys [{m}], 128;", m = in(reg64) map as u64) };
}

/// Starts a tensor copy of the box at column `x`, row `y` of the 2-D tensor `map` describes
/// into shared `dst`, completing on `bar` (`cp.async.bulk.tensor.2d.shared::cluster.global.tile
/// .mbarrier::complete_tx::bytes`). Elements outside the tensor arrive as zeros; the box lands
/// in the map's swizzled layout.
///
/// # Safety
/// `map` passed [`tensormap_acquire`]; `dst` 128-byte aligned (1024 under the 128-byte
/// swizzle) with room for the box; [`mbarrier_arrive_expect_tx`] counts the box's bytes.
#[inline(always)]
pub unsafe fn tensor_load_2d(dst: SharedAddr, map: *const TensorMap, x: u32, y: u32, bar: SharedAddr) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
            d = in(reg32) dst.0, m = in(reg64) map as u64, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar.0,
        )
    };
}

/// Starts a tensor copy of shared `src` to the box at column `x`, row `y` of the tensor `map`
/// describes, tracked in this thread's bulk group (`cp.async.bulk.tensor.2d.global.shared::cta
/// .tile.bulk_group`). Elements of the box outside the tensor are not written.
///
/// # Safety
/// As for [`tensor_load_2d`]; `src` holds the box, written by this block before a
/// [`fence_proxy_async_shared`] and a block barrier, and is not written until [`bulk_wait_read`].
#[inline(always)]
pub unsafe fn tensor_store_2d(map: *const TensorMap, x: u32, y: u32, src: SharedAddr) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
            m = in(reg64) map as u64, x = in(reg32) x, y = in(reg32) y, s = in(reg32) src.0,
        )
    };
}

/// Closes this thread's current group of bulk copies (`cp.async.bulk.commit_group`).
#[inline(always)]
pub fn bulk_commit() {
    // SAFETY: no operands; the asm's implied memory clobber keeps memory accesses in place.
    unsafe { asm!("cp.async.bulk.commit_group;") };
}

/// Waits until every committed bulk group of this thread has finished reading its shared
/// source (`cp.async.bulk.wait_group.read 0`): the shared memory may then be reused, or the
/// block exit; the global writes complete by themselves, before the grid does.
#[inline(always)]
pub fn bulk_wait_read() {
    // SAFETY: as for `bulk_commit`.
    unsafe { asm!("cp.async.bulk.wait_group.read 0;") };
}

/// Orders this thread's earlier shared-memory writes (generic proxy) before later bulk copies
/// that read them (async proxy): `fence.proxy.async.shared::cta`. Each writing thread fences,
/// then a block barrier, then one thread starts the copy.
#[inline(always)]
pub fn fence_proxy_async_shared() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.proxy.async.shared::cta;") };
}
