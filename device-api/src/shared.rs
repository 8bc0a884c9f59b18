//! Typed tiles of the block's dynamic shared memory, with their shape, pitch and barrier phase
//! in their type.
//!
//! [`SharedTile<T, ROWS, COLS, PITCH, Phase>`](SharedTile) is `ROWS x COLS` elements, row `r`
//! starting `r * PITCH` elements in (`PITCH > COLS` pads each row, the bank-conflict lesson's
//! `32 x 33`). [`Block::carve`](crate::Block::carve) makes the kernel's tiles once, in the
//! [`Writing`] phase, at consecutive offsets of the dynamic shared memory. A tile is written
//! in one phase and read in the next:
//!
//! - a [`Writing`] tile has `set` and no `get`: what other threads wrote is not visible yet;
//! - a [`Reading`] tile has `get` and no `set`: other threads may still be reading it;
//! - [`Barrier::sync`] is the only way from one phase to the other (`bar.sync 0`): it takes
//!   the tiles by value and gives them back in the other phase.
//!
//! So a read before the barrier that publishes the writes (read-after-write race) and a write
//! before the barrier that ends the reads (write-after-read race, the race lesson's) do not
//! compile. The phase is a type, so it costs nothing at run time.
//!
//! A [`Line`] (a row or column a thread reads along) holds no borrow, so it can be made once
//! before the loop over phases, as a raw kernel keeps its row pointer (LLVM then computes it
//! where the raw kernel did, and the PTX is the same); each read takes its tile, in its read
//! phase. The tile's slot in its type makes the line readable through its own tile only.

use core::marker::PhantomData;

use crate::{Block, Index, Plain, arch, check};

mod slice;
pub use slice::SharedSlice;

/// Phase of a tile between two barriers in which threads write it.
pub struct Writing;
/// Phase of a tile between two barriers in which threads read it.
pub struct Reading;

/// A `ROWS x COLS` tile of `T` in shared memory with rows `PITCH` elements apart, in phase
/// `P` ([`Writing`] or [`Reading`]). `SLOT` is its place in the kernel's one carve (0, or 1 for
/// the second of a pair): it tells the tiles of a kernel apart, so a [`Line`] made from one is
/// read only through that one.
pub struct SharedTile<T, const ROWS: usize, const COLS: usize, const PITCH: usize, P = Writing, const SLOT: usize = 0> {
    ptr: *mut T,
    phase: PhantomData<P>,
}

impl<T, const ROWS: usize, const COLS: usize, const PITCH: usize, P, const SLOT: usize>
    SharedTile<T, ROWS, COLS, PITCH, P, SLOT>
{
    /// Bytes the tile takes in shared memory.
    pub const BYTES: usize = {
        assert!(PITCH >= COLS, "a tile's pitch is at least its width");
        ROWS * PITCH * size_of::<T>()
    };

    /// The element offset of `(r, c)`, checked against the shape in the `checked` build.
    #[inline(always)]
    fn offset<I: Index>(&self, r: I, c: I) -> usize {
        check!(r.below(ROWS) && c.below(COLS));
        I::offset(r, c, PITCH)
    }

    /// The same tile in phase `Q`: only a barrier may call it.
    #[inline(always)]
    fn into_phase<Q>(self) -> SharedTile<T, ROWS, COLS, PITCH, Q, SLOT> {
        SharedTile { ptr: self.ptr, phase: PhantomData }
    }
}

impl<T: Copy, const ROWS: usize, const COLS: usize, const PITCH: usize, const SLOT: usize>
    SharedTile<T, ROWS, COLS, PITCH, Writing, SLOT>
{
    /// Writes element `(r, c)`.
    #[inline(always)]
    pub fn set<I: Index>(&mut self, r: I, c: I, v: T) {
        let at = self.offset(r, c);
        // SAFETY: inside the tile (checked, or by the launch contract), which is inside the
        // launch's dynamic shared memory (checked at the carve).
        unsafe { *self.ptr.add(at) = v }
    }
}

impl<T: Copy, const ROWS: usize, const COLS: usize, const PITCH: usize, const SLOT: usize>
    SharedTile<T, ROWS, COLS, PITCH, Reading, SLOT>
{
    /// Element `(r, c)`.
    #[inline(always)]
    pub fn get<I: Index>(&self, r: I, c: I) -> T {
        let at = self.offset(r, c);
        // SAFETY: as for `set`.
        unsafe { *self.ptr.add(at) }
    }

    /// The `U` at byte `byte` of the tile (the wide bank probes' 8- and 16-byte loads), one
    /// `ld.shared` of `size_of::<U>()` bytes. `byte` is a multiple of `U`'s alignment and
    /// the whole `U` lies inside the tile (checked in the `checked` build).
    #[inline(always)]
    pub fn get_bytes<U: Plain>(&self, byte: usize) -> U {
        check!(byte.wrapping_add(size_of::<U>()) <= Self::BYTES && byte.is_multiple_of(align_of::<U>()));
        // SAFETY: inside the tile and aligned (checked, or by contract); `U` is plain data.
        unsafe { *self.ptr.cast::<u8>().add(byte).cast::<U>() }
    }
}

impl<T: Copy, const ROWS: usize, const COLS: usize, const PITCH: usize, P, const SLOT: usize>
    SharedTile<T, ROWS, COLS, PITCH, P, SLOT>
{
    /// Row `r`, to read along in the tile's read phases ([`Line::get`]; the tiled matmul's `A`
    /// fragment). Made in any phase, typically once before the loop over phases, as a raw
    /// kernel keeps a row pointer; reading it needs the tile [`Reading`].
    #[inline(always)]
    pub fn row<I: Index>(&self, r: I) -> Line<T, COLS, 1, SLOT> {
        check!(r.below(ROWS));
        // SAFETY: row `r` is inside the tile (checked, or by the launch contract).
        Line { ptr: unsafe { self.ptr.add(I::offset(r, I::ZERO, PITCH)) } }
    }

    /// Column `c`, to read down ([`Line::get`]; the tiled matmul's `B` fragment).
    #[inline(always)]
    pub fn col<I: Index>(&self, c: I) -> Line<T, ROWS, PITCH, SLOT> {
        check!(c.below(COLS));
        // SAFETY: column `c` is inside the tile (checked, or by the launch contract).
        Line { ptr: unsafe { self.ptr.add(c.as_usize()) } }
    }
}

/// A row (`STRIDE = 1`) or column (`STRIDE` = the pitch) of the tile of slot `SLOT`: `LEN`
/// elements `STRIDE` apart. It holds no borrow, so it can be made before a loop over phases;
/// each read takes the tile itself, in its [`Reading`] phase.
#[derive(Clone, Copy)]
pub struct Line<T, const LEN: usize, const STRIDE: usize, const SLOT: usize> {
    ptr: *const T,
}

impl<T: Copy, const LEN: usize, const STRIDE: usize, const SLOT: usize> Line<T, LEN, STRIDE, SLOT> {
    /// Element `i` of the line, read while `tile`, the tile it was made from (the only one of
    /// slot `SLOT` in the kernel), is [`Reading`].
    #[inline(always)]
    pub fn get<const ROWS: usize, const COLS: usize, const PITCH: usize>(
        &self,
        _tile: &SharedTile<T, ROWS, COLS, PITCH, Reading, SLOT>,
        i: usize,
    ) -> T {
        check!(i < LEN);
        // SAFETY: inside the line, so inside the tile (checked, or by the launch contract); the
        // tile is in its read phase, so no thread writes it.
        unsafe { *self.ptr.add(i * STRIDE) }
    }
}

impl<const ROWS: usize, const COLS: usize, const PITCH: usize, const SLOT: usize>
    SharedTile<f32, ROWS, COLS, PITCH, Reading, SLOT>
{
    /// Element `(r, c)` with the inline `ld.shared.f32` of [`arch::load_shared_in_order`]: kept
    /// in order after the stores before it (the transposes' conflicted column reads).
    #[inline(always)]
    pub fn get_in_order<I: Index>(&self, r: I, c: I) -> f32 {
        let at = self.offset(r, c);
        // SAFETY: as for `get`.
        unsafe { arch::load_shared_in_order(self.ptr.add(at)) }
    }
}

/// What [`Block::carve`] can make: a tile, or a pair of them laid out one after the other
/// (slots 0 and 1).
pub trait Carve {
    /// Element type of the first tile (the dynamic shared memory is declared with its
    /// alignment).
    type First;
    /// The tiles as carved, each with its slot.
    type Carved;
    /// Bytes from the first tile's start to the end of the last.
    const BYTES: usize;
    /// The tiles from `base` on.
    ///
    /// # Safety
    /// `base` points into the dynamic shared memory with `Self::BYTES` bytes from it.
    #[doc(hidden)]
    unsafe fn at(base: *mut Self::First, _: Sealed) -> Self::Carved;
}

impl<T, const ROWS: usize, const COLS: usize, const PITCH: usize> Carve for SharedTile<T, ROWS, COLS, PITCH> {
    type First = T;
    type Carved = Self;
    const BYTES: usize = Self::BYTES;
    #[inline(always)]
    unsafe fn at(base: *mut T, _: Sealed) -> Self {
        SharedTile { ptr: base, phase: PhantomData }
    }
}

impl<T, U, const R: usize, const C: usize, const P: usize, const R2: usize, const C2: usize, const P2: usize> Carve
    for (SharedTile<T, R, C, P>, SharedTile<U, R2, C2, P2>)
{
    type First = T;
    type Carved = (SharedTile<T, R, C, P, Writing, 0>, SharedTile<U, R2, C2, P2, Writing, 1>);
    const BYTES: usize = {
        let first = SharedTile::<T, R, C, P>::BYTES;
        assert!(first.is_multiple_of(align_of::<U>()), "the second tile starts aligned");
        first + SharedTile::<U, R2, C2, P2>::BYTES
    };
    #[inline(always)]
    unsafe fn at(base: *mut T, _: Sealed) -> Self::Carved {
        // SAFETY: the first tile takes its `BYTES` of the pair's from `base`, the second the rest.
        let second = unsafe { base.byte_add(SharedTile::<T, R, C, P>::BYTES) }.cast();
        (SharedTile { ptr: base, phase: PhantomData }, SharedTile { ptr: second, phase: PhantomData })
    }
}

/// Only this module can call [`Carve::at`] and [`Phased::into_next`].
pub struct Sealed(());

impl Block {
    /// Carves the block's dynamic shared memory into the tiles `L` (a [`SharedTile`] or a
    /// pair), in the [`Writing`] phase, and gives the block's [`Barrier`]. Consumes the
    /// block: the tiles are carved once. The launch gives at least `L::BYTES` dynamic shared
    /// bytes (checked against `%dynamic_smem_size` in the `checked` build).
    #[inline(always)]
    pub fn carve<L: Carve>(self) -> (Barrier, L::Carved) {
        check!(L::BYTES <= arch::dynamic_shared_bytes());
        // SAFETY: the launch gives `L::BYTES` dynamic shared bytes (the crate's invariant 1).
        (Barrier { _one: () }, unsafe { L::at(arch::dynamic_shared::<L::First>(), Sealed(())) })
    }
}

/// The block barrier, the only way to move tiles from one phase to the next.
pub struct Barrier {
    _one: (),
}

impl Barrier {
    /// `bar.sync 0` (`__syncthreads()`): every thread of the block waits here, so the
    /// [`Writing`] tiles given come back [`Reading`] (every thread's writes are visible) and
    /// [`Reading`] ones come back [`Writing`] (no thread still reads them). Every thread of the
    /// block must reach it (the crate's invariant 2).
    #[inline(always)]
    pub fn sync<P: Phased>(&self, tiles: P) -> P::Next {
        arch::sync_threads();
        tiles.into_next(Sealed(()))
    }
}

/// Tiles a barrier moves to their next phase: a tile, or a pair of them.
pub trait Phased {
    /// The same tiles in the other phase.
    type Next;
    /// Only [`Barrier::sync`] can call it.
    #[doc(hidden)]
    fn into_next(self, _: Sealed) -> Self::Next;
}

impl<T, const ROWS: usize, const COLS: usize, const PITCH: usize, const SLOT: usize> Phased
    for SharedTile<T, ROWS, COLS, PITCH, Writing, SLOT>
{
    type Next = SharedTile<T, ROWS, COLS, PITCH, Reading, SLOT>;
    #[inline(always)]
    fn into_next(self, _: Sealed) -> Self::Next {
        self.into_phase()
    }
}

impl<T, const ROWS: usize, const COLS: usize, const PITCH: usize, const SLOT: usize> Phased
    for SharedTile<T, ROWS, COLS, PITCH, Reading, SLOT>
{
    type Next = SharedTile<T, ROWS, COLS, PITCH, Writing, SLOT>;
    #[inline(always)]
    fn into_next(self, _: Sealed) -> Self::Next {
        self.into_phase()
    }
}

impl<A: Phased, B: Phased> Phased for (A, B) {
    type Next = (A::Next, B::Next);
    #[inline(always)]
    fn into_next(self, s: Sealed) -> Self::Next {
        (self.0.into_next(Sealed(())), self.1.into_next(s))
    }
}
