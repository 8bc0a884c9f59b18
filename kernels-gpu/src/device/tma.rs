//! Hopper's asynchronous bulk copies (TMA, the tensor memory accelerator) and the `mbarrier`
//! that reports their completion, as inline PTX. cc 9.0 only: compiled into the sm_90 PTX
//! alone, which `host/build.rs` builds with PTX ISA 8.3 (`cp.async.bulk`, `mbarrier` with
//! transaction counts and `fence.proxy.async` need ISA 8.0 and `sm_90`).
//!
//! Shared-memory operands are 32-bit addresses in the `.shared` window ([`SharedAddr`]), so no
//! instruction here takes a generic address to shared memory. Sources: PTX ISA, "Data Movement
//! and Conversion Instructions: cp.async.bulk, cp.async.bulk.tensor, cp.async.bulk.commit_group,
//! cp.async.bulk.wait_group"; "Parallel Synchronization and Communication Instructions:
//! mbarrier"; "membar/fence" (proxy fences); "createpolicy" (the copies' `.L2::cache_hint`
//! operand, an [`L2Policy`], which only `createpolicy` makes); "Tensors" (tensor maps); CUDA C++
//! Programming Guide, "Asynchronous Data Copies using the Tensor Memory Accelerator (TMA)".

use core::arch::{asm, global_asm};

/// An address in the block's `.shared` window (what `cvta.to.shared` gives), as the bulk copies
/// and the mbarrier instructions take it.
#[derive(Clone, Copy)]
pub(crate) struct SharedAddr(pub(crate) u32);

impl SharedAddr {
    /// The `.shared` window address of `p`, a pointer into the block's shared memory.
    #[inline(always)]
    pub(crate) fn of<T>(p: *const T) -> SharedAddr {
        let a: u32;
        // SAFETY: a state-space conversion reads nothing.
        unsafe {
            asm!("{{\n.reg .u64 a;\ncvta.to.shared.u64 a, {p};\ncvt.u32.u64 {a}, a; }}", p = in(reg64) p as u64, a = out(reg32) a)
        };
        SharedAddr(a)
    }

    /// The address `bytes` further on.
    #[inline(always)]
    pub(crate) fn add(self, bytes: u32) -> SharedAddr {
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
pub(crate) unsafe fn mbarrier_init(bar: SharedAddr, count: u32) {
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
pub(crate) unsafe fn mbarrier_arrive_expect_tx(bar: SharedAddr, bytes: u32) {
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
pub(crate) unsafe fn mbarrier_wait(bar: SharedAddr, parity: u32) {
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
/// With `hint`, the copy carries that L2 policy (`.L2::cache_hint`); so do the copies below.
#[inline(always)]
unsafe fn bulk_load(dst: SharedAddr, src: *const u8, bytes: u32, bar: SharedAddr, hint: Option<L2Policy>) {
    match hint {
        None => unsafe {
            asm!(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{s}], {n}, [{b}];",
                d = in(reg32) dst.0, s = in(reg64) src as u64, n = in(reg32) bytes, b = in(reg32) bar.0,
            )
        },
        Some(p) => unsafe {
            asm!(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [{d}], [{s}], {n}, [{b}], {p};",
                d = in(reg32) dst.0, s = in(reg64) src as u64, n = in(reg32) bytes, b = in(reg32) bar.0, p = in(reg64) p.raw(),
            )
        },
    }
}

/// Starts a bulk copy of `bytes` from shared `src` to global `dst`, tracked in this thread's
/// current bulk group (`cp.async.bulk.global.shared::cta.bulk_group`).
///
/// # Safety
/// As for [`bulk_load`], the other way; `src` is not written until [`bulk_wait_read`].
#[inline(always)]
unsafe fn bulk_store(dst: *mut u8, src: SharedAddr, bytes: u32, hint: Option<L2Policy>) {
    match hint {
        None => unsafe {
            asm!(
                "cp.async.bulk.global.shared::cta.bulk_group [{d}], [{s}], {n};",
                d = in(reg64) dst as u64, s = in(reg32) src.0, n = in(reg32) bytes,
            )
        },
        Some(p) => unsafe {
            asm!(
                "cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [{d}], [{s}], {n}, {p};",
                d = in(reg64) dst as u64, s = in(reg32) src.0, n = in(reg32) bytes, p = in(reg64) p.raw(),
            )
        },
    }
}

/// A tensor map (`CUtensorMap`, 128 bytes, 64-byte aligned) as the kernels read it: a slot of
/// `memlab_tma_maps`, written by the host before the launch.
#[repr(C, align(64))]
pub struct TensorMap([u64; 16]);

// The module's tensor maps, in the `.const` state space: the host writes each map into a slot
// (`cuModuleGetGlobal` and a copy), the kernels take the slot. A map in constant memory needs
// no `fence.proxy.tensormap` acquire before its first use (CUDA C++ Programming Guide, "Using
// TMA to transfer multi-dimensional arrays"); rustc can pass neither a 64-byte aligned
// by-value parameter (`__grid_constant__`) nor a parameter's address without a local copy.
global_asm!(
    ".visible .const .align 64 .b8 memlab_tma_maps[{}];",
    const memlab_contracts::tma::MAP_SLOTS * memlab_contracts::tma::MAP_BYTES
);

/// Generic address of slot `slot` of `memlab_tma_maps` (`cvta.const`): the tensor copies take a
/// map's generic address in the `.const`, `.param` or `.global` window (PTX ISA,
/// "cp.async.bulk.tensor").
///
/// # Safety
/// `slot < MAP_SLOTS`.
#[inline(always)]
unsafe fn const_map(slot: u32) -> *const TensorMap {
    let base: u64;
    unsafe { asm!("mov.u64 {a}, memlab_tma_maps;", "cvta.const.u64 {a}, {a};", a = out(reg64) base) };
    (base + u64::from(slot) * u64::from(memlab_contracts::tma::MAP_BYTES)) as *const TensorMap
}

/// Starts a tensor copy of the box at column `x`, row `y` of the 2-D tensor `map` describes
/// into shared `dst`, completing on `bar` (`cp.async.bulk.tensor.2d.shared::cluster.global.tile
/// .mbarrier::complete_tx::bytes`). Elements outside the tensor arrive as zeros; the box lands
/// in the map's swizzled layout.
///
/// # Safety
/// `map` is a slot of `memlab_tma_maps` the host wrote ([`const_map`]); `dst` 128-byte aligned (1024 under the 128-byte
/// swizzle) with room for the box; [`mbarrier_arrive_expect_tx`] counts the box's bytes.
#[inline(always)]
pub(crate) unsafe fn tensor_load_2d(
    dst: SharedAddr,
    map: *const TensorMap,
    x: u32,
    y: u32,
    bar: SharedAddr,
    hint: Option<L2Policy>,
) {
    match hint {
        None => unsafe {
            asm!(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
                d = in(reg32) dst.0, m = in(reg64) map as u64, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar.0,
            )
        },
        Some(p) => unsafe {
            asm!(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [{d}], [{m}, {{{x}, {y}}}], [{b}], {p};",
                d = in(reg32) dst.0, m = in(reg64) map as u64, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar.0,
                p = in(reg64) p.raw(),
            )
        },
    }
}

/// Starts a tensor copy of shared `src` to the box at column `x`, row `y` of the tensor `map`
/// describes, tracked in this thread's bulk group (`cp.async.bulk.tensor.2d.global.shared::cta
/// .tile.bulk_group`). Elements of the box outside the tensor are not written.
///
/// # Safety
/// As for [`tensor_load_2d`]; `src` holds the box, written before a [`fence_proxy_async_shared`]
/// by each writing thread and a barrier of every thread that wrote it (the block's, or a named
/// one of those threads), and is not written until [`bulk_wait_read`].
#[inline(always)]
pub(crate) unsafe fn tensor_store_2d(map: *const TensorMap, x: u32, y: u32, src: SharedAddr, hint: Option<L2Policy>) {
    match hint {
        None => unsafe {
            asm!(
                "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
                m = in(reg64) map as u64, x = in(reg32) x, y = in(reg32) y, s = in(reg32) src.0,
            )
        },
        Some(p) => unsafe {
            asm!(
                "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group.L2::cache_hint [{m}, {{{x}, {y}}}], [{s}], {p};",
                m = in(reg64) map as u64, x = in(reg32) x, y = in(reg32) y, s = in(reg32) src.0, p = in(reg64) p.raw(),
            )
        },
    }
}

/// Closes this thread's current group of bulk copies (`cp.async.bulk.commit_group`).
#[inline(always)]
pub fn bulk_commit() {
    // SAFETY: no operands; the asm's implied memory clobber keeps memory accesses in place.
    unsafe { asm!("cp.async.bulk.commit_group;") };
}

/// Waits until at most `PENDING` of this thread's committed bulk groups are still reading their
/// shared source (`cp.async.bulk.wait_group.read PENDING`): the shared memory of the others may
/// then be reused, or the block exit (`PENDING` 0); the global writes complete by themselves,
/// before the grid does.
#[inline(always)]
pub fn bulk_wait_read<const PENDING: u32>() {
    // SAFETY: as for `bulk_commit`.
    unsafe { asm!("cp.async.bulk.wait_group.read {n};", n = const PENDING) };
}

/// Orders this thread's earlier shared-memory writes (generic proxy) before later bulk copies
/// that read them (async proxy): `fence.proxy.async.shared::cta`. Each writing thread fences,
/// then a block barrier, then one thread starts the copy.
#[inline(always)]
pub fn fence_proxy_async_shared() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.proxy.async.shared::cta;") };
}

// ---------------------------------------------------------------------------------------------
// The safe API the TMA lesson (`kernels-gpu/src/tma.rs`) is written on.
//
// Soundness rests on the device API's invariants (`memlab-device-api`'s crate documentation)
// and on these, which the types do not check:
// 1. The launch contract, extended to tensor maps: a [`MapIn`] parameter is a slot of
//    `memlab_tma_maps` the host wrote before the launch, a map of a live buffer; its box fits the
//    buffer of [`Buffers`] it is copied into or out of from the offset given (the host encodes
//    the box and sizes the buffers from `memlab_contracts::tma`, one owner for both). A tensor
//    copy then writes only inside that buffer and, on the global side, only inside the tensor:
//    the copy engine clips every box to the tensor's bounds (PTX ISA, "Tensors: bounding
//    box"), whatever the coordinates. A 1-D bulk copy is checked against its [`Slice`] (the
//    `checked` build; by the launch contract in the release build) and needs 16-byte aligned
//    addresses and sizes (PTX ISA, "cp.async.bulk"), which the host's typed launch guarantees.
// 2. The buffers are carved once, by every thread ([`Buffers::carve`] takes the [`Block`]),
//    from dynamic shared memory the launch sizes with `memlab_contracts::tma::ring_smem`.
// 3. Ordering is the kernel's protocol, as lanes' slots are in the device API's invariant 3:
//    the types do not stop a copy into a buffer that threads or an earlier store still read.
//    A wrong protocol races or hangs on a barrier; it does not reach outside the buffers.
// ---------------------------------------------------------------------------------------------

use super::l2_policy::L2Policy;
use memlab_contracts::tma::{MBARRIER_BYTES, SMEM_ALIGN};
use memlab_device_api::global::{ReadWrite, Slice};
use memlab_device_api::{Block, Param, arch};

pub(crate) use super::check;

/// A tensor-map kernel parameter: the map's slot in `memlab_tma_maps` (`u32`);
/// [`MapIn::map`] gives the map to the tensor copies.
pub struct MapIn(u32);

impl Param for MapIn {
    type Raw = u32;
    #[inline(always)]
    unsafe fn from_raw(raw: u32) -> Self {
        MapIn(raw)
    }
}

impl MapIn {
    /// The map in its slot. A slot past the array traps in the `checked` build and is clamped
    /// to the last in the release build, so no copy reads outside `memlab_tma_maps`; a slot the
    /// host never wrote holds zeros, not a valid map, so invariant 1 still asks for one it wrote.
    #[inline(always)]
    pub fn map(self) -> Map {
        let last = memlab_contracts::tma::MAP_SLOTS - 1;
        check(self.0 <= last);
        // SAFETY: the slot is inside the array (clamped); the host wrote it (invariant 1).
        Map(unsafe { const_map(self.0.min(last)) })
    }
}

/// A tensor map in constant memory, for [`Buffers::load_tile`] and [`Buffers::store_tile`].
#[derive(Clone, Copy)]
pub struct Map(pub(crate) *const TensorMap);

/// Blocks in the grid along x (`nctaid.x`): a block's stride over the tiles.
#[inline(always)]
pub fn grid_blocks() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { core::arch::nvptx::_grid_dim_x() }
}

/// The block's TMA buffers: `count` buffers of `bytes` each, the first aligned to
/// [`SMEM_ALIGN`] in the dynamic shared memory (the 128-byte swizzle's layout needs it), then
/// one mbarrier per buffer. A load into buffer `i` completes on mbarrier `i`.
#[derive(Clone, Copy)]
pub struct Buffers {
    ptr: *mut u8,
    addr: SharedAddr,
    bytes: u32,
    count: u32,
}

impl Buffers {
    /// Carves the buffers; thread `(0, 0)` initialises each mbarrier for one arrival per phase,
    /// then every thread passes a block barrier, after which the mbarriers are usable. Every
    /// thread of the block calls it, once (invariant 2; the device API's invariant 2).
    #[inline(always)]
    pub fn carve(_block: Block, bytes: u32, count: u32) -> Buffers {
        let base = arch::dynamic_shared::<u8>();
        let addr = SharedAddr::of(base);
        let pad = addr.0.wrapping_neg() % SMEM_ALIGN;
        check(pad + count * (bytes + MBARRIER_BYTES) <= arch::dynamic_shared_bytes() as u32);
        // SAFETY: the launch gives `SMEM_ALIGN` bytes more than the buffers (invariant 2).
        let ptr = unsafe { base.add(pad as usize) };
        let buffers = Buffers { ptr, addr: addr.add(pad), bytes, count };
        if crate::device::thread_idx_x() == 0 && crate::device::thread_idx_y() == 0 {
            for i in 0..count {
                // SAFETY: inside the carve, 8-byte aligned, not in use yet.
                unsafe { mbarrier_init(buffers.bar(i), 1) };
            }
        }
        arch::sync_threads();
        buffers
    }

    /// Buffers carved.
    #[inline(always)]
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The mbarrier of buffer `i`.
    #[inline(always)]
    fn bar(&self, i: u32) -> SharedAddr {
        check(i < self.count);
        self.addr.add(self.count * self.bytes + i * MBARRIER_BYTES)
    }

    /// Byte `offset` of buffer `i`.
    #[inline(always)]
    fn at(&self, i: u32, offset: u32) -> SharedAddr {
        check(i < self.count && offset < self.bytes);
        self.addr.add(i * self.bytes + offset)
    }

    /// Arrives on buffer `i`'s mbarrier and adds `bytes` to what its phase waits for
    /// (`mbarrier.arrive.expect_tx`): one call per phase, by the thread that issues its loads.
    #[inline(always)]
    pub fn expect(&self, i: u32, bytes: u32) {
        // SAFETY: initialised by `carve`.
        unsafe { mbarrier_arrive_expect_tx(self.bar(i), bytes) };
    }

    /// Waits for the phase of parity `parity` of buffer `i`'s mbarrier: its loads have landed
    /// and are visible to this thread.
    #[inline(always)]
    pub fn wait(&self, i: u32, parity: u32) {
        // SAFETY: initialised by `carve`.
        unsafe { mbarrier_wait(self.bar(i), parity) };
    }

    /// Starts a tensor copy of the box at column `x`, row `y` of `map` into buffer `i` from
    /// byte `offset`, completing on the buffer's mbarrier (which [`Buffers::expect`] told the
    /// box's bytes). Elements outside the tensor arrive as zeros. With `hint`, the copy carries
    /// that L2 policy; so do the other copies below.
    #[inline(always)]
    pub fn load_tile(&self, i: u32, offset: u32, map: Map, x: u32, y: u32, hint: Option<L2Policy>) {
        // SAFETY: the box fits the buffer from `offset` (invariant 1).
        unsafe { tensor_load_2d(self.at(i, offset), map.0, x, y, self.bar(i), hint) };
    }

    /// Starts a tensor copy of buffer `i` (from byte `offset`) to the box at column `x`, row
    /// `y` of `map`, in this thread's bulk group; elements outside the tensor are not written.
    /// Threads' writes to the buffer must come before a [`fence_proxy_async_shared`] and a
    /// block barrier.
    #[inline(always)]
    pub fn store_tile(&self, i: u32, offset: u32, map: Map, x: u32, y: u32, hint: Option<L2Policy>) {
        // SAFETY: as for `load_tile`.
        unsafe { tensor_store_2d(map.0, x, y, self.at(i, offset), hint) };
    }

    /// Starts a 1-D bulk copy of `bytes` from element `first` of `src` into buffer `i`,
    /// completing on its mbarrier.
    #[inline(always)]
    pub fn load_bulk(&self, i: u32, src: &Slice<f32>, first: usize, bytes: u32, hint: Option<L2Policy>) {
        check(first * 4 + bytes as usize <= src.len() * 4 && bytes <= self.bytes);
        // SAFETY: inside `src` and the buffer (checked, or by the launch contract).
        unsafe { bulk_load(self.at(i, 0), src.as_ptr().add(first).cast(), bytes, self.bar(i), hint) };
    }

    /// Starts a 1-D bulk copy of `bytes` of buffer `i` to element `first` of `dst`, in this
    /// thread's bulk group.
    #[inline(always)]
    pub fn store_bulk(
        &self,
        i: u32,
        dst: &mut Slice<f32, ReadWrite>,
        first: usize,
        bytes: u32,
        hint: Option<L2Policy>,
    ) {
        check(first * 4 + bytes as usize <= dst.len() * 4 && bytes <= self.bytes);
        // SAFETY: as for `load_bulk`.
        unsafe { bulk_store(dst.as_mut_ptr().add(first).cast(), self.at(i, 0), bytes, hint) };
    }

    /// The four floats at byte `offset` of buffer `i` (16-byte aligned), one `ld.shared.v4`.
    #[inline(always)]
    pub fn read4(&self, i: u32, offset: u32) -> [f32; 4] {
        check(i < self.count && offset + 16 <= self.bytes && offset.is_multiple_of(16));
        // SAFETY: inside the buffer and aligned (checked, or by the kernel's offsets).
        unsafe { crate::device::load4(self.ptr.add((i * self.bytes + offset) as usize).cast()) }
    }

    /// Writes float `k` of buffer `i`, one `st.shared`.
    #[inline(always)]
    pub fn write(&self, i: u32, k: u32, v: f32) {
        check(i < self.count && 4 * k < self.bytes);
        // SAFETY: inside the buffer (checked, or by the kernel's indices).
        unsafe { *self.ptr.add((i * self.bytes + 4 * k) as usize).cast::<f32>() = v };
    }

    /// The block barrier (`bar.sync 0`), reached by every thread (the device API's invariant 2).
    #[inline(always)]
    pub fn sync(&self) {
        arch::sync_threads();
    }
}
