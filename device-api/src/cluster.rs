//! Distributed shared memory (DSMEM): the dynamic shared memory of the blocks of a thread-block
//! cluster, which each block reads and writes in the others through the `.shared::cluster`
//! window (CUDA C++ Programming Guide, "Thread Block Clusters", "Distributed Shared Memory";
//! PTX ISA 7.8, sm_90: compiled into the sm_90 PTX only).
//!
//! A kernel with `block: Block` enters its cluster with [`Block::in_cluster`]: the closure gets
//! the [`Cluster`] and the block's shared memory as a [`ClusterSlice`] in the [`Writing`]
//! phase, and when it returns every thread passes one more cluster barrier, so no block leaves
//! (and frees its shared memory) while another may still reach it. A slice is in one phase
//! between two cluster barriers, and a cluster barrier ([`Cluster::publish`],
//! [`Cluster::exchange`], [`Cluster::step`]) is the only way into a phase that reaches other
//! blocks:
//!
//! - [`Writing`]: the block's own threads write its slice; nothing remote (another block may
//!   not have started yet, and what is written is not visible to it).
//! - [`Published`]: every write before the barrier is visible cluster-wide; every block reads
//!   its own slice and, through [`ClusterSlice::remote`] (`mapa`), any other's. A block may
//!   [`gather`](ClusterSlice::gather) a peer's slot into its own.
//! - [`Exchanging`]: blocks write each other's slices ([`ClusterSlice::remote_mut`],
//!   `st.shared::cluster`); nobody reads.
//! - [`Gathered`] (from [`Published`] by the block barrier, [`Cluster::gathered`]): the
//!   block's gathers are visible to its threads; reads only. A block barrier never makes a
//!   cluster-read slice writable: peers may still be reading it, so only a cluster barrier can.
//!
//! [`DoubleBuffer`] is the tiled matmul's pattern, one cluster barrier per step: the stage
//! written in a step is one no block reads any more (each block read it two steps ago, before
//! the previous step's cluster barrier).
//!
//! A remote read before the barrier that publishes it does not compile: a [`Writing`] slice
//! has no `remote` (`tests/ui/remote_read_before_cluster_barrier.rs`). The phases after the
//! first cluster barrier carry the closure's lifetime `'c`, so no view that reaches another
//! block outlives the final barrier.
//!
//! # Soundness: what the types rest on (besides the crate's three invariants)
//! 1. **Uniform cluster barriers.** Every thread of every block of the cluster passes the same
//!    cluster barriers (`barrier.cluster` waits for every non-exited thread of the cluster);
//!    in particular no thread returns from the kernel before [`Block::in_cluster`]'s final
//!    barrier while its block's shared memory may still be reached.
//! 2. **The launch contract, cluster-wide.** Every block of the cluster carves the same length,
//!    the launch gives each that many dynamic shared bytes, and ranks passed to `remote` are
//!    below `%cluster_nctarank` (checked in the `checked` build, as every index).
//! 3. **Within a phase, lanes own their slots** (the crate's invariant 3), across blocks too:
//!    a slot a block gathers in a [`Published`] phase is one no other block reads in it (the
//!    matmul gathers the rows it did not load; its peers read only the rows it loaded), and
//!    two blocks do not write one slot in an [`Exchanging`] phase.
//! 4. **A chase follows written links.** A [`Link`] is a `.shared::cluster` address made by
//!    [`RemoteMut::link`] (checked to lie in the slice); a word of a [`Link`] slice read before
//!    anything was written to it is not one. The `checked` build checks every link it follows.

use core::marker::PhantomData;

// The cluster's intrinsics live with the others, under the one nvptx/host switch of `crate::arch`.
use crate::arch::cluster as arch;
pub use crate::arch::cluster::{
    cluster_ctaid_x, cluster_ctaid_y, cluster_ctarank, cluster_id_x, cluster_nctaid_x, cluster_nctaid_y,
    cluster_nctarank, cluster_sync,
};
use crate::shared::Writing;
use crate::{Block, check};

/// The closure's lifetime in a phase: invariant, so a view cannot be shortened or lengthened
/// out of the closure that made it.
type Brand<'c> = PhantomData<fn(&'c ()) -> &'c ()>;

/// Phase after a cluster barrier in which every block reads (its own slice, and the others'
/// through `mapa`), and may gather peers' slots into its own.
pub struct Published<'c>(Brand<'c>);
/// Phase after a cluster barrier in which blocks write each other's slices.
pub struct Exchanging<'c>(Brand<'c>);
/// Phase after the block barrier that ends a [`Published`] one: the block's gathers are
/// visible to its threads; reads only, local and remote.
pub struct Gathered<'c>(Brand<'c>);

/// The cluster of the running block, inside [`Block::in_cluster`]: its barrier, which moves
/// slices from one phase to another.
pub struct Cluster<'c> {
    brand: Brand<'c>,
}

/// `len` elements of `T` at the start of this block's dynamic shared memory, in phase `P`,
/// reachable from every block of the cluster in the phases that say so.
pub struct ClusterSlice<T, P = Writing> {
    ptr: *mut T,
    len: usize,
    phase: PhantomData<P>,
}

/// A word that `ld.shared::cluster` reads: `u32`, `f32` or a [`Link`].
pub trait Word: Copy {
    /// The word at `.shared::cluster` address `address`.
    ///
    /// # Safety
    /// `address` is an aligned word of a slice of a running block of the cluster.
    #[doc(hidden)]
    unsafe fn load(address: u32) -> Self;
}

impl Word for u32 {
    #[inline(always)]
    unsafe fn load(address: u32) -> u32 {
        // SAFETY: forwarded.
        unsafe { arch::load_remote(address) }
    }
}

impl Word for f32 {
    #[inline(always)]
    unsafe fn load(address: u32) -> f32 {
        // SAFETY: forwarded.
        unsafe { arch::load_remote_f32(address) }
    }
}

/// The `.shared::cluster` address of a word of a block's [`Link`] slice: the words of a pointer
/// chase, each holding the address of the next (made only by [`RemoteMut::link`] and
/// [`Remote::link`], so it lies in a slice; invariant 4).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct Link(u32);

impl Word for Link {
    #[inline(always)]
    unsafe fn load(address: u32) -> Link {
        // SAFETY: forwarded.
        Link(unsafe { arch::load_remote(address) })
    }
}

impl Block {
    /// Runs `body` with this block's cluster and its dynamic shared memory as `len` elements
    /// of `T` (in [`Writing`]), then passes a cluster barrier, so that no block leaves while
    /// another may still reach its shared memory. Consumes the block (one carve). The launch
    /// is a cluster launch and gives every block at least `len * size_of::<T>()` dynamic shared
    /// bytes (checked in the `checked` build).
    #[inline(always)]
    pub fn in_cluster<T>(self, len: usize, body: impl for<'c> FnOnce(&Cluster<'c>, ClusterSlice<T>)) {
        check!(len.wrapping_mul(size_of::<T>()) <= crate::arch::dynamic_shared_bytes());
        let slice = ClusterSlice { ptr: crate::arch::dynamic_shared::<T>(), len, phase: PhantomData };
        body(&Cluster { brand: PhantomData }, slice);
        cluster_sync();
    }
}

impl<'c> Cluster<'c> {
    /// The cluster barrier into [`Published`]: every write of the cluster before it is
    /// visible, every block has started, and from here on every block only reads.
    #[inline(always)]
    pub fn publish<T, P>(&self, slice: ClusterSlice<T, P>) -> ClusterSlice<T, Published<'c>> {
        cluster_sync();
        slice.into_phase()
    }

    /// The cluster barrier into [`Exchanging`]: every read of the cluster before it is over,
    /// every block has started, and from here on blocks write each other's slices.
    #[inline(always)]
    pub fn exchange<T, P>(&self, slice: ClusterSlice<T, P>) -> ClusterSlice<T, Exchanging<'c>> {
        cluster_sync();
        slice.into_phase()
    }

    /// The block's slice as two stages of `STAGE` elements (the slice holds at least `2 *
    /// STAGE`, checked in the `checked` build): stage 0 [`Writing`], stage 1 a stage nobody
    /// writes ([`Gathered`]).
    #[inline(always)]
    pub fn double_buffer<T, const STAGE: usize>(
        &self,
        slice: ClusterSlice<T>,
    ) -> DoubleBuffer<T, STAGE, Writing, Gathered<'c>> {
        check!(2 * STAGE <= slice.len);
        DoubleBuffer { base: slice.ptr, stage: 0, phases: PhantomData }
    }

    /// The cluster barrier of a double-buffered step: the stage just written becomes
    /// [`Published`], and the other one, which every block last read before this barrier,
    /// [`Writing`] (written in the next step).
    #[inline(always)]
    pub fn step<T, const STAGE: usize>(
        &self,
        stages: DoubleBuffer<T, STAGE, Writing, Gathered<'c>>,
    ) -> DoubleBuffer<T, STAGE, Published<'c>, Writing> {
        cluster_sync();
        DoubleBuffer { base: stages.base, stage: stages.stage, phases: PhantomData }
    }

    /// The block barrier (`bar.sync 0`) after the gathers of a [`Published`] stage: they are
    /// visible to the block's threads ([`Gathered`]). The stage stays read-only: peers may
    /// still read it until the next cluster barrier.
    #[inline(always)]
    pub fn gathered<T, const STAGE: usize>(
        &self,
        stages: DoubleBuffer<T, STAGE, Published<'c>, Writing>,
    ) -> DoubleBuffer<T, STAGE, Gathered<'c>, Writing> {
        crate::arch::sync_threads();
        DoubleBuffer { base: stages.base, stage: stages.stage, phases: PhantomData }
    }
}

impl<T, P> ClusterSlice<T, P> {
    /// The same slice in phase `Q`: only a barrier may call it.
    #[inline(always)]
    fn into_phase<Q>(self) -> ClusterSlice<T, Q> {
        ClusterSlice { ptr: self.ptr, len: self.len, phase: PhantomData }
    }

    /// The `.shared::cluster` address of element 0 in the block of rank `rank`.
    #[inline(always)]
    fn mapped(&self, rank: u32) -> u32 {
        check!(rank < cluster_nctarank());
        arch::map_shared_rank(arch::shared_address(self.ptr), rank)
    }
}

impl<T: Copy> ClusterSlice<T, Writing> {
    /// Writes element `i` of this block's slice (`st.shared`).
    #[inline(always)]
    pub fn set(&mut self, i: usize, v: T) {
        check!(i < self.len);
        // SAFETY: inside the slice (checked, or by the launch contract), which is inside the
        // launch's dynamic shared memory (checked at `in_cluster`).
        unsafe { *self.ptr.add(i) = v }
    }
}

impl<'c, T: Copy> ClusterSlice<T, Published<'c>> {
    /// Element `i` of this block's slice (`ld.shared`).
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        check!(i < self.len);
        // SAFETY: as for `set`; published, so nobody writes it.
        unsafe { *self.ptr.add(i) }
    }

    /// The slice of the block of rank `rank` of the cluster (`mapa`; `rank` below
    /// `%cluster_nctarank`, checked in the `checked` build), to read in this phase.
    #[inline(always)]
    pub fn remote(&self, rank: u32) -> Remote<'_, T> {
        Remote { base: self.mapped(rank), len: self.len, view: PhantomData }
    }
}

impl<'c> ClusterSlice<u32, Published<'c>> {
    /// Elements `i..i + 4` of this block's slice with one `ld.shared.v4.u32` (`i` a multiple
    /// of 4, checked in the `checked` build; the slice starts 16-byte aligned).
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [u32; 4] {
        check!(i.wrapping_add(4) <= self.len && i.is_multiple_of(4));
        // SAFETY: four words inside the slice, 16-byte aligned (checked, or by contract).
        unsafe { arch::load_local4(arch::shared_address(self.ptr).wrapping_add((4 * i) as u32)) }
    }
}

impl<'c, T: Copy> ClusterSlice<T, Exchanging<'c>> {
    /// The slice of the block of rank `rank` (`mapa`; as for [`ClusterSlice::remote`]), to
    /// write in this phase.
    #[inline(always)]
    pub fn remote_mut(&mut self, rank: u32) -> RemoteMut<'_, T> {
        RemoteMut { base: self.mapped(rank), len: self.len, view: PhantomData }
    }
}

/// A [`Published`] slice of another block (or this one, through the cluster window): reads
/// with `ld.shared::cluster`. Borrows the slice, so it lives in the phase only.
pub struct Remote<'a, T> {
    base: u32,
    len: usize,
    view: PhantomData<&'a T>,
}

impl<T: Word> Remote<'_, T> {
    /// Element `i`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        check!(i < self.len);
        // SAFETY: inside the peer's slice (checked, or by the launch contract); the peer is
        // running (between the first cluster barrier and the last) and nobody writes it.
        unsafe { T::load(self.base.wrapping_add((i * size_of::<T>()) as u32)) }
    }
}

impl Remote<'_, u32> {
    /// Elements `i..i + 4` with one `ld.shared::cluster.v4.u32` (alignment as for
    /// [`ClusterSlice::get4`]).
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [u32; 4] {
        check!(i.wrapping_add(4) <= self.len && i.is_multiple_of(4));
        // SAFETY: as for `get`, 16-byte aligned.
        unsafe { arch::load_remote4(self.base.wrapping_add((4 * i) as u32)) }
    }
}

impl Remote<'_, Link> {
    /// The link to the word at byte `byte` of the slice (a multiple of 4 inside it, checked in
    /// the `checked` build).
    #[inline(always)]
    pub fn link(&self, byte: u32) -> Link {
        link_in(self.base, self.len, byte)
    }

    /// The link stored in the word `link` points to: one dependent `ld.shared::cluster.u32`
    /// (the `checked` build checks that `link` lies in this slice; invariant 4).
    #[inline(always)]
    pub fn follow(&self, link: Link) -> Link {
        check!(link_offset(self.base, self.len, link).is_some());
        // SAFETY: a link made in this slice's words (invariant 4; checked in the checked build).
        unsafe { Link::load(link.0) }
    }

    /// The byte offset of `link` in the slice.
    #[inline(always)]
    pub fn offset(&self, link: Link) -> u32 {
        link.0.wrapping_sub(self.base)
    }
}

/// An [`Exchanging`] slice of another block: writes with `st.shared::cluster`. Borrows the
/// slice mutably, so it lives in the phase only.
pub struct RemoteMut<'a, T> {
    base: u32,
    len: usize,
    view: PhantomData<&'a mut T>,
}

impl RemoteMut<'_, Link> {
    /// The link to the word at byte `byte` of the slice, as [`Remote::link`].
    #[inline(always)]
    pub fn link(&self, byte: u32) -> Link {
        link_in(self.base, self.len, byte)
    }

    /// Writes `link` to word `i` (`st.shared::cluster.u32`).
    #[inline(always)]
    pub fn set(&mut self, i: usize, link: Link) {
        check!(i < self.len);
        // SAFETY: inside the peer's slice (checked, or by the launch contract); the peer is
        // running and nobody reads it in this phase.
        unsafe { arch::store_remote(self.base.wrapping_add((4 * i) as u32), link.0) }
    }
}

/// The link at byte `byte` of the `len`-word slice at `base`.
#[inline(always)]
#[cfg_attr(not(feature = "checked"), allow(unused_variables))]
fn link_in(base: u32, len: usize, byte: u32) -> Link {
    let link = Link(base.wrapping_add(byte));
    check!(link_offset(base, len, link).is_some());
    link
}

/// The byte offset of `link` in the `len`-word slice at `base`, if it is an aligned word of it.
#[inline(always)]
#[cfg_attr(not(feature = "checked"), allow(dead_code))]
fn link_offset(base: u32, len: usize, link: Link) -> Option<u32> {
    let byte = link.0.wrapping_sub(base);
    ((byte as usize) < 4 * len && byte.is_multiple_of(4)).then_some(byte)
}

/// The block's slice as two stages of `STAGE` elements: the current stage in phase `Cur`, the
/// other in `Prev`. The stage is an index, not a handle, so each access computes its address
/// from it as a raw kernel does (`base + stage * STAGE + i`); the phases are in the type.
pub struct DoubleBuffer<T, const STAGE: usize, Cur, Prev> {
    base: *mut T,
    stage: u32,
    phases: PhantomData<(Cur, Prev)>,
}

impl<T: Copy, const STAGE: usize, Cur, Prev> DoubleBuffer<T, STAGE, Cur, Prev> {
    /// Element `i` of the current stage, checked against the stage in the `checked` build.
    #[inline(always)]
    fn at(&self, i: usize) -> *mut T {
        check!(i < STAGE);
        // SAFETY: stage 0 or 1 of the two the slice holds (checked at `double_buffer`).
        unsafe { self.base.add((self.stage * STAGE as u32) as usize).add(i) }
    }
}

impl<T: Copy, const STAGE: usize, Prev> DoubleBuffer<T, STAGE, Writing, Prev> {
    /// Writes element `i` of the current stage (`st.shared`).
    #[inline(always)]
    pub fn set(&mut self, i: usize, v: T) {
        // SAFETY: inside the stage (checked, or by the launch contract).
        unsafe { *self.at(i) = v }
    }
}

impl<'c, const STAGE: usize> DoubleBuffer<f32, STAGE, Published<'c>, Writing> {
    /// Copies element `i` of the current stage of the block of rank `rank` into this block's
    /// (`mapa`, `ld.shared::cluster.f32`, `st.shared`): a slot this block did not write and no
    /// peer reads in this phase (invariant 3). Visible to the block after [`Cluster::gathered`].
    #[inline(always)]
    pub fn gather(&mut self, rank: u32, i: usize) {
        check!(rank < cluster_nctarank());
        let here = self.at(i);
        let there = arch::map_shared_rank(arch::shared_address(here), rank);
        // SAFETY: the same slot of the peer's stage, published; this block's slot is its own.
        unsafe { *here = f32::load(there) }
    }
}

impl<'c, T: Copy, const STAGE: usize> DoubleBuffer<T, STAGE, Gathered<'c>, Writing> {
    /// Element `i` of the current stage (`ld.shared`).
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        // SAFETY: inside the stage (checked, or by the launch contract); nobody writes it.
        unsafe { *self.at(i) }
    }

    /// On to the next step: the other stage becomes the current one, to be written; this one
    /// waits, read-only, for the next step's cluster barrier.
    #[inline(always)]
    pub fn next(self) -> DoubleBuffer<T, STAGE, Writing, Gathered<'c>> {
        DoubleBuffer { base: self.base, stage: (self.stage + 1) % 2, phases: PhantomData }
    }
}
