//! A run-time-sized array of the block's dynamic shared memory, with its barrier phase in its
//! type, for kernels whose shared bytes are a launch parameter (the shared-memory chase's chain
//! of `words` words), where [`SharedTile`](super::SharedTile) has its shape in its type.

use core::marker::PhantomData;

use super::{Barrier, Phased, Reading, Sealed, Writing};
use crate::{Block, arch, check};

/// `len` elements of `T` at the start of the block's dynamic shared memory, in phase `P`
/// ([`Writing`]: `set` only; [`Reading`]: `get` only), moved between phases by
/// [`Barrier::sync`] as a tile is.
pub struct SharedSlice<T, P = Writing> {
    ptr: *mut T,
    len: usize,
    phase: PhantomData<P>,
}

impl Block {
    /// Carves the block's dynamic shared memory into one `len`-element slice, in the
    /// [`Writing`] phase, and gives the block's [`Barrier`]. Consumes the block, as
    /// [`Block::carve`] does. The launch gives at least `len * size_of::<T>()` dynamic shared
    /// bytes (checked against `%dynamic_smem_size` in the `checked` build).
    #[inline(always)]
    pub fn carve_slice<T>(self, len: usize) -> (Barrier, SharedSlice<T>) {
        check!(len.checked_mul(size_of::<T>()).is_some_and(|bytes| bytes <= arch::dynamic_shared_bytes()));
        (Barrier { _one: () }, SharedSlice { ptr: arch::dynamic_shared::<T>(), len, phase: PhantomData })
    }

    /// The block's [`Barrier`], for a kernel that keeps no shared memory (its barriers order
    /// clock reads, not tiles: `barrier.sync(())`).
    #[inline(always)]
    pub fn barrier(self) -> Barrier {
        Barrier { _one: () }
    }
}

impl<T, P> SharedSlice<T, P> {
    /// Elements in the slice.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice is empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first element's generic address (for `cvta.to.shared`, which gives the
    /// shared-window address `ld.shared`/`st.shared` take). Reading or writing through it is
    /// the caller's `unsafe`, under this slice's phase.
    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }
}

impl<T: Copy> SharedSlice<T, Writing> {
    /// Writes element `i`.
    #[inline(always)]
    pub fn set(&mut self, i: usize, v: T) {
        check!(i < self.len);
        // SAFETY: `i < len` (checked, or by the launch contract), inside the launch's dynamic
        // shared memory (checked at the carve).
        unsafe { *self.ptr.add(i) = v }
    }
}

impl<T: Copy> SharedSlice<T, Reading> {
    /// Element `i`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        check!(i < self.len);
        // SAFETY: as for `set`.
        unsafe { *self.ptr.add(i) }
    }
}

impl<T> Phased for SharedSlice<T, Writing> {
    type Next = SharedSlice<T, Reading>;
    #[inline(always)]
    fn into_next(self, _: Sealed) -> Self::Next {
        SharedSlice { ptr: self.ptr, len: self.len, phase: PhantomData }
    }
}

impl<T> Phased for SharedSlice<T, Reading> {
    type Next = SharedSlice<T, Writing>;
    #[inline(always)]
    fn into_next(self, _: Sealed) -> Self::Next {
        SharedSlice { ptr: self.ptr, len: self.len, phase: PhantomData }
    }
}

/// No tiles: a barrier that only orders the threads (`barrier.sync(())`).
impl Phased for () {
    type Next = ();
    #[inline(always)]
    fn into_next(self, _: Sealed) {}
}
