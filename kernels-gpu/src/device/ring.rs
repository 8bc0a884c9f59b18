//! The SGEMM ladder's shared-memory stages as a typed ring: [`Ring<STAGES>`](Ring) carves
//! `STAGES` stages of the block's dynamic shared memory once, and its loops hand each step the
//! stage it may read ([`Ready`]) and the one it may write ([`Filling`]), never the same one.
//!
//! The phase of a stage is its type, as for the device API's `SharedTile` and the TMA
//! `Buffers`: a [`Filling`] stage gives places that only store, a [`Ready`] one places that only
//! load. Only the ring's loops make either, and they make them between the barriers (after the
//! `cp.async.wait_group` that lands the copies, for [`Ring::pipeline`]) that end a stage's last
//! read and publish its writes. Only the `cp.async` loops' stages ([`Filling<AsyncWrite>`],
//! from [`Ring::pipeline`] and [`Ring::pipeline_steps`]) take `cp.async` copies, since only
//! those loops wait for them. Handles live for one call of the loop's closure (their lifetime
//! is the call's), so none is kept into a later step. So the ladder's read-after-write and
//! write-after-read races between steps do not compile, given the device API's invariant 2:
//! every thread of the block runs the loop, with the same step bounds (`steps`, `first .. end`),
//! so all reach the same barriers.
//!
//! What the types leave to the caller is where in a stage a place lies: [`Filling::at`],
//! [`Ready::at`] and [`Place::add`] are `unsafe fn`, whose callers vouch that every access
//! through the place stays inside its stage, aligned to its width. The `checked` build traps on
//! a place made past its stage's first float and on an access outside the dynamic shared
//! memory or misaligned; an access that runs into the next stage it does not see.
//! [`Place::ldmatrix_x4`] is `unsafe` too: every lane of the warp must reach it. Lanes of one
//! step writing the same float of a stage race, as in any phase (the device API's crate doc).
//!
//! The loops take closures, which LLVM inlines. They are marked `#[inline(always)]` where
//! LLVM would otherwise outline one (rung 8's `Registers` body, which the split-K kernel
//! shares, with its accumulators in local memory); rung 8's `AsyncCopy` ones are not, as the
//! mark moves its register allocation (a 4-byte spill in one configuration).

use core::marker::PhantomData;

use super::{check, load2, load4, store4};
use memlab_device_api::{Block, arch};

/// `STAGES` stages of `floats` floats each, back to back from the start of the block's dynamic
/// shared memory. Made once per kernel run from its [`Block`] (so no two rings share the
/// memory), used once by one of its loops.
pub struct Ring<const STAGES: u32> {
    base: *mut f32,
    floats: u32,
}

/// A stage the current step writes: places that store ([`Write`]), and for the `cp.async`
/// loops' stages ([`AsyncWrite`]) the destination of a `cp.async` copy.
pub struct Filling<'s, W = Write> {
    base: *mut f32,
    floats: u32,
    step: PhantomData<(&'s mut (), W)>,
}

/// A stage the current step reads: every thread's writes to it are visible.
pub struct Ready<'s> {
    base: *mut f32,
    floats: u32,
    step: PhantomData<&'s ()>,
}

/// The phase of a [`Place`] in a [`Filling`] stage of a loop without `cp.async`
/// ([`Ring::serial`], [`Ring::staged`]): plain stores.
pub struct Write;
/// The phase of a [`Place`] in a [`Filling`] stage of a `cp.async` loop ([`Ring::pipeline`],
/// [`Ring::pipeline_steps`]): plain stores and `cp.async` copies, which the loop waits for
/// before the stage is read.
pub struct AsyncWrite;
/// The phase of a [`Place`] in a [`Ready`] stage.
pub struct Read;

/// The write phases, whose places store.
pub trait Writable {}
impl Writable for Write {}
impl Writable for AsyncWrite {}

/// A float of a stage, in the stage's phase `P` ([`Write`], [`AsyncWrite`] or [`Read`]), valid
/// for the step that made it (`'s`).
pub struct Place<'s, P> {
    ptr: *mut f32,
    phase: PhantomData<(&'s (), P)>,
}

impl<P> Clone for Place<'_, P> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Place<'_, P> {}

impl<const STAGES: u32> Ring<STAGES> {
    /// The ring of the block: `STAGES` stages of `floats` floats. Every thread of the block
    /// calls it, once. A `floats` that is not a multiple of 4 (stages that would not start
    /// 16-byte aligned) traps in every build (a constant at each call, so the test folds away).
    ///
    /// The launch gives at least `4 * STAGES * floats` dynamic shared bytes (the kernel's launch
    /// contract, `memlab_contracts::sgemm`; the device API's invariant 1), checked in the
    /// `checked` build against `%dynamic_smem_size`.
    #[inline(always)]
    pub fn carve(_block: Block, floats: u32) -> Self {
        const { assert!(STAGES >= 1) };
        if !floats.is_multiple_of(4) {
            arch::trap();
        }
        check(4 * STAGES as usize * floats as usize <= arch::dynamic_shared_bytes());
        Ring { base: arch::dynamic_shared::<f32>(), floats }
    }

    /// Stage `i` (`i < STAGES`), for the ring's loops alone.
    #[inline(always)]
    fn stage(&self, i: u32) -> *mut f32 {
        check(i < STAGES);
        // SAFETY: stage `i` lies inside the carve (`i < STAGES`: every loop below passes a ring
        // index), which lies inside the dynamic shared memory (`carve`'s launch contract).
        unsafe { self.base.add((i * self.floats) as usize) }
    }

    #[inline(always)]
    fn filling<W>(&self, i: u32) -> Filling<'_, W> {
        Filling { base: self.stage(i), floats: self.floats, step: PhantomData }
    }

    #[inline(always)]
    fn ready(&self, i: u32) -> Ready<'_> {
        Ready { base: self.stage(i), floats: self.floats, step: PhantomData }
    }

    /// Runs steps `first .. end` on stages written by plain stores: `prologue` writes step
    /// `first`'s stage; then, after a barrier, `step(next, ready, s)` reads step `s`'s stage
    /// (`ready`) and may write step `s + 1`'s (`next`, `None` at the last step), and a barrier
    /// ends the step. Step `s` lives in stage `s % STAGES`; with 2 or more stages the loads of
    /// step `s + 1` can be in flight during step `s`'s arithmetic. Called by every thread, with
    /// the same bounds.
    #[inline(always)]
    pub fn staged(
        self,
        (first, end): (u32, u32),
        prologue: impl FnOnce(Filling<'_>),
        mut step: impl FnMut(Option<Filling<'_>>, Ready<'_>, u32),
    ) {
        const { assert!(STAGES >= 2) };
        prologue(self.filling(first % STAGES));
        arch::sync_threads();
        for s in first..end {
            // Stage (s + 1) % STAGES was last read in step s + 1 - STAGES, before an earlier
            // barrier; the barrier below publishes it.
            let next = if s + 1 < end { Some(self.filling((s + 1) % STAGES)) } else { None };
            step(next, self.ready(s % STAGES), s);
            arch::sync_threads();
        }
    }

    /// Runs `steps` steps through `STAGES` stages filled by `cp.async` (and stores, if `fill`
    /// makes any): `fill(stage, s)` starts this thread's copies for step `s`, `compute(stage)`
    /// reads step `s`'s stage. The copies for step `s + STAGES - 1` are issued (and committed)
    /// before step `s`'s arithmetic, so `STAGES - 1` steps of loads are in flight while the FMAs
    /// or MMAs run. Called by every thread, with the same `steps`.
    #[cfg(target_feature = "sm_80")]
    #[inline(always)]
    pub fn pipeline(
        self,
        steps: u32,
        fill: impl Fn(&Filling<'_, AsyncWrite>, u32),
        mut compute: impl FnMut(&Ready<'_>),
    ) {
        self.prologue(steps, &fill);
        self.steps(
            steps,
            // The stage to fill is made inside the branch, where the raw loop computed its
            // address (ptxas then fits the 128-register configurations without a spill).
            #[inline(always)]
            |write, read, s| {
                if s + STAGES - 1 < steps {
                    fill(&self.filling(write), s + STAGES - 1);
                }
                super::cp_async_commit();
                compute(&self.ready(read));
            },
        );
    }

    /// [`Ring::pipeline`] with the order inside a step the caller's: `prologue(stage, s)` fills
    /// step `s`'s stage for each of the first `STAGES - 1` steps; then each step `s` gets
    /// `step(next, ready, s)`, `ready` its published stage and `next` the stage of step
    /// `s + STAGES - 1` (`None` past the last step), after the `cp.async.wait_group` and barrier
    /// that publish `ready` and end the reads of `next`; the step's copies are committed after
    /// it. Called by every thread, with the same `steps`.
    #[cfg(target_feature = "sm_80")]
    #[inline(always)]
    pub fn pipeline_steps(
        self,
        steps: u32,
        prologue: impl Fn(&Filling<'_, AsyncWrite>, u32),
        mut step: impl FnMut(Option<Filling<'_, AsyncWrite>>, Ready<'_>, u32),
    ) {
        self.prologue(steps, &prologue);
        self.steps(
            steps,
            #[inline(always)]
            |write, read, s| {
                let next = if s + STAGES - 1 < steps { Some(self.filling(write)) } else { None };
                step(next, self.ready(read), s);
                super::cp_async_commit();
            },
        );
    }

    /// The first `STAGES - 1` steps' copies, one commit group each; empty groups past the last
    /// step keep step `s`'s copies group `s`, as the waits in [`Ring::steps`] count them.
    #[cfg(target_feature = "sm_80")]
    #[inline(always)]
    fn prologue(&self, steps: u32, fill: &impl Fn(&Filling<'_, AsyncWrite>, u32)) {
        const { assert!(STAGES >= 2) };
        for s in 0..STAGES - 1 {
            if s < steps {
                fill(&self.filling(s), s);
            }
            super::cp_async_commit();
        }
    }

    /// The steps after [`Ring::prologue`]: `body(write, read, s)` for each step `s`, `read` the
    /// index of step `s`'s stage and `write` that of step `s + STAGES - 1`'s, after the wait and
    /// barrier that publish the one and end the reads of the other; `body` issues and commits
    /// step `s + STAGES - 1`'s copies (one commit group per step, empty past the last).
    #[cfg(target_feature = "sm_80")]
    #[inline(always)]
    fn steps(&self, steps: u32, mut body: impl FnMut(u32, u32, u32)) {
        let (mut read, mut write) = (0, STAGES - 1);
        for s in 0..steps {
            // Groups 0..=s are done once at most STAGES - 2 newer ones are pending; after the
            // barrier every thread's copies for step s are visible, and every thread has
            // finished step s - 1, whose stage is filled next.
            wait_pending(STAGES - 2);
            arch::sync_threads();
            body(write, read, s);
            write = read;
            read = if read + 1 == STAGES { 0 } else { read + 1 };
        }
    }
}

impl Ring<1> {
    /// Runs `steps` steps on one stage: `fill(stage, s)` writes it, a barrier publishes it,
    /// `compute(stage)` reads it, and a barrier ends the reads before the next step's writes.
    /// Called by every thread, with the same `steps`.
    #[inline(always)]
    pub fn serial(self, steps: u32, mut fill: impl FnMut(Filling<'_>, u32), mut compute: impl FnMut(Ready<'_>)) {
        for s in 0..steps {
            fill(self.filling(0), s);
            arch::sync_threads();
            compute(self.ready(0));
            arch::sync_threads();
        }
    }
}

/// [`super::cp_async_wait`] with a count known only after monomorphisation (a constant there,
/// so the match folds away). Counts above 3 wait for more than needed: correct, less overlap.
#[cfg(target_feature = "sm_80")]
#[inline(always)]
fn wait_pending(n: u32) {
    match n {
        0 => super::cp_async_wait::<0>(),
        1 => super::cp_async_wait::<1>(),
        2 => super::cp_async_wait::<2>(),
        _ => super::cp_async_wait::<3>(),
    }
}

impl<W> Filling<'_, W> {
    /// Float `i` of the stage, to write.
    ///
    /// # Safety
    ///
    /// Every access through the place, or through a place [`Place::add`] derives from it, lies
    /// inside the stage (`floats` floats), aligned to its width.
    #[inline(always)]
    pub unsafe fn at(&self, i: u32) -> Place<'_, W> {
        check(i < self.floats);
        // SAFETY: inside the stage (the caller's word), the same allocation as `base`.
        Place { ptr: unsafe { self.base.add(i as usize) }, phase: PhantomData }
    }
}

impl Ready<'_> {
    /// Float `i` of the stage, to read.
    ///
    /// # Safety
    ///
    /// As for [`Filling::at`].
    #[inline(always)]
    pub unsafe fn at(&self, i: u32) -> Place<'_, Read> {
        check(i < self.floats);
        // SAFETY: as for `Filling::at`.
        Place { ptr: unsafe { self.base.add(i as usize) }, phase: PhantomData }
    }
}

impl<'s, P> Place<'s, P> {
    /// The place `i` floats further on.
    ///
    /// # Safety
    ///
    /// As for the [`Filling::at`] or [`Ready::at`] that made `self`, for the new place.
    #[inline(always)]
    pub unsafe fn add(self, i: u32) -> Self {
        // SAFETY: inside the same stage (the caller's word).
        Place { ptr: unsafe { self.ptr.add(i as usize) }, phase: PhantomData }
    }

    /// Checks, in the `checked` build, that `bytes` from here lie inside the launch's dynamic
    /// shared memory, aligned to `bytes`.
    #[inline(always)]
    fn check(self, bytes: usize) {
        if cfg!(feature = "checked") {
            let off = (self.ptr as usize).wrapping_sub(arch::dynamic_shared::<f32>() as usize);
            check(off + bytes <= arch::dynamic_shared_bytes() && off.is_multiple_of(bytes));
        }
    }
}

impl<W: Writable> Place<'_, W> {
    /// Stores `v` here.
    #[inline(always)]
    pub fn store(self, v: f32) {
        self.check(4);
        // SAFETY: inside the stage, in its write phase (the place's maker and the ring).
        unsafe { *self.ptr = v }
    }

    /// Stores 4 floats here by one 128-bit store (16-byte aligned).
    #[inline(always)]
    pub fn store4(self, v: [f32; 4]) {
        self.check(16);
        // SAFETY: as for `store`.
        unsafe { store4(self.ptr, v) }
    }
}

impl Place<'_, AsyncWrite> {
    /// The address a `cp.async` of `bytes` writes here: the copy lands by the wait of the step
    /// whose stage this is, before the stage is read.
    #[cfg(target_feature = "sm_80")]
    #[inline(always)]
    pub(crate) fn async_dst(self, bytes: usize) -> *mut f32 {
        self.check(bytes);
        self.ptr
    }
}

impl Place<'_, Read> {
    /// The float here.
    #[inline(always)]
    pub fn load(self) -> f32 {
        self.check(4);
        // SAFETY: inside the stage, published (the place's maker and the ring).
        unsafe { *self.ptr }
    }

    /// The 2 floats here by one 64-bit load (8-byte aligned).
    #[inline(always)]
    pub fn load2(self) -> [f32; 2] {
        self.check(8);
        // SAFETY: as for `load`.
        unsafe { load2(self.ptr) }
    }

    /// The 4 floats here by one 128-bit load (16-byte aligned).
    #[inline(always)]
    pub fn load4(self) -> [f32; 4] {
        self.check(16);
        // SAFETY: as for `load`.
        unsafe { load4(self.ptr) }
    }

    /// `ldmatrix.x4` with this lane's row address here (16-byte aligned): see
    /// [`super::mma::ldmatrix_x4`].
    ///
    /// # Safety
    ///
    /// Every lane of the warp executes it together (`.sync.aligned`), each with its own place of
    /// the same stage.
    #[cfg(target_feature = "sm_80")]
    #[inline(always)]
    pub unsafe fn ldmatrix_x4(self) -> [u32; 4] {
        self.check(16);
        // SAFETY: as for `load`; every lane reaches it (the caller's word).
        unsafe { super::mma::ldmatrix_x4(self.ptr) }
    }
}
