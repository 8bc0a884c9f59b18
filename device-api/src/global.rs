//! Typed views of global memory, built from a kernel's pointer parameters and the lengths its
//! launch contract gives: [`Slice`] (1-D, `len` elements) and [`Matrix`] (`rows x cols`,
//! row-major, `pitch` elements from one row to the next). Reads and writes are single plain
//! loads and stores (`ld.global`/`st.global`); in the `checked` build each index is checked
//! against the view's shape first.

use core::marker::PhantomData;

use crate::{Index, Vec4, check};

/// A read-only pointer parameter (`const T*`), as the launch passed it. Only [`crate::kernel!`]
/// makes one; [`GlobalIn::slice`] and [`GlobalIn::matrix`] view it.
pub struct GlobalIn<T>(*const T);

impl<T> Clone for GlobalIn<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for GlobalIn<T> {}

/// A writable pointer parameter (`T*`), as the launch passed it. Not `Copy`: it gives one
/// writable view.
pub struct GlobalOut<T>(*mut T);

/// View access: reads only.
pub struct ReadOnly;
/// View access: reads and writes.
pub struct ReadWrite;

/// Global loads through a view, in the counting build only (feature `count-loads`); the host
/// zeroes and reads it with `cuModuleGetGlobal` around the matmul kernels.
#[cfg(feature = "count-loads")]
#[unsafe(no_mangle)]
pub static GLOBAL_LOADS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Reads `*p`; the counting build also counts the load (an atomic add per load: for checking
/// counts at small sizes, never for timing).
///
/// # Safety
/// `p` is valid for a read.
#[inline(always)]
pub unsafe fn load<T: Copy>(p: *const T) -> T {
    #[cfg(feature = "count-loads")]
    GLOBAL_LOADS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    unsafe { *p }
}

impl<T> GlobalIn<T> {
    /// Wraps a kernel's pointer parameter.
    ///
    /// # Safety
    /// `p` is a launch parameter; it holds as many elements as the views the kernel makes of
    /// it say (the crate's invariant 1).
    #[doc(hidden)]
    pub unsafe fn from_raw(p: *const T) -> Self {
        Self(p)
    }

    /// The raw pointer, for wrappers in `kernels-gpu/src/device/` that keep the crate's
    /// invariant 1 themselves (the SGEMM ladder's `cp.async` and vector accesses).
    #[doc(hidden)]
    #[inline(always)]
    pub fn as_ptr(self) -> *const T {
        self.0
    }

    /// The first `len` elements.
    #[inline(always)]
    pub fn slice(self, len: usize) -> Slice<T> {
        Slice { ptr: self.0.cast_mut(), len, access: PhantomData }
    }

    /// A densely packed row-major `rows x cols` matrix (pitch `cols`).
    #[inline(always)]
    pub fn matrix(self, rows: usize, cols: usize) -> Matrix<T> {
        Matrix { ptr: self.0.cast_mut(), rows, cols, pitch: cols, access: PhantomData }
    }
}

impl<T> GlobalOut<T> {
    /// Wraps a kernel's pointer parameter.
    ///
    /// # Safety
    /// As for [`GlobalIn::from_raw`].
    #[doc(hidden)]
    pub unsafe fn from_raw(p: *mut T) -> Self {
        Self(p)
    }

    /// The raw pointer; as [`GlobalIn::as_ptr`].
    #[doc(hidden)]
    #[inline(always)]
    pub fn as_ptr(self) -> *mut T {
        self.0
    }

    /// The first `len` elements, writable.
    #[inline(always)]
    pub fn slice(self, len: usize) -> Slice<T, ReadWrite> {
        Slice { ptr: self.0, len, access: PhantomData }
    }

    /// A densely packed row-major `rows x cols` matrix (pitch `cols`), writable.
    #[inline(always)]
    pub fn matrix(self, rows: usize, cols: usize) -> Matrix<T, ReadWrite> {
        Matrix { ptr: self.0, rows, cols, pitch: cols, access: PhantomData }
    }
}

/// `len` elements of global memory; `A` is [`ReadOnly`] or [`ReadWrite`].
pub struct Slice<T, A = ReadOnly> {
    ptr: *mut T,
    len: usize,
    access: PhantomData<A>,
}

impl<T> Clone for Slice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Slice<T> {}

impl<T: Copy, A> Slice<T, A> {
    /// Elements in the view.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view is empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element `i`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        check!(i < self.len);
        // SAFETY: `i < len` (checked, or by the launch contract in the release build).
        unsafe { load(self.ptr.add(i)) }
    }

    /// The view without its first `n` elements.
    #[inline(always)]
    pub fn skip(self, n: usize) -> Self {
        check!(n <= self.len);
        // SAFETY: `n <= len`, so the pointer stays inside (or one past) the buffer.
        Self { ptr: unsafe { self.ptr.add(n) }, len: self.len.wrapping_sub(n), access: PhantomData }
    }
}

impl<T: Copy> Slice<T, ReadWrite> {
    /// Writes element `i`.
    #[inline(always)]
    pub fn set(&mut self, i: usize, v: T) {
        check!(i < self.len);
        // SAFETY: as for `get`.
        unsafe { *self.ptr.add(i) = v }
    }
}

/// The view's address, for what the view has no method for: copy engines that take an address
/// and a byte count (the TMA bulk copies of `kernels-gpu/src/device/tma.rs`, which check their
/// range against [`Slice::len`]), and the probes' `ld.global.cg` (`kernels-gpu/src/device/probe.rs`).
/// Reading through it is the caller's `unsafe`, inside the view's `len`.
impl<T, A> Slice<T, A> {
    /// The first element's address.
    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }
}

impl<T> Slice<T, ReadWrite> {
    /// The first element's address, writable.
    #[inline(always)]
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr
    }
}

/// A row-major `rows x cols` matrix in global memory, row `r` starting `r * pitch` elements
/// after row 0; `A` is [`ReadOnly`] or [`ReadWrite`].
pub struct Matrix<T, A = ReadOnly> {
    ptr: *mut T,
    rows: usize,
    cols: usize,
    pitch: usize,
    access: PhantomData<A>,
}

impl<T> Clone for Matrix<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Matrix<T> {}

impl<T: Copy, A> Matrix<T, A> {
    /// Rows.
    #[inline(always)]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    #[inline(always)]
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The element offset of `(r, c)`, checked against the shape in the `checked` build.
    #[inline(always)]
    fn offset<I: Index>(&self, r: I, c: I) -> usize {
        check!(r.below(self.rows) && c.below(self.cols));
        I::offset(r, c, self.pitch)
    }

    /// Element `(r, c)`, its offset computed in `I`'s width.
    #[inline(always)]
    pub fn get<I: Index>(&self, r: I, c: I) -> T {
        // SAFETY: `(r, c)` is inside the shape (checked, or by the launch contract).
        unsafe { load(self.ptr.add(self.offset(r, c))) }
    }
}

impl<T: Copy> Matrix<T, ReadWrite> {
    /// Writes element `(r, c)`.
    #[inline(always)]
    pub fn set<I: Index>(&mut self, r: I, c: I, v: T) {
        // SAFETY: as for `get`.
        unsafe { *self.ptr.add(self.offset(r, c)) = v }
    }
}

impl<A> Slice<f32, A> {
    /// Elements `i..i + 4` with one 128-bit load. The buffer is 16-byte aligned and `i` a
    /// multiple of 4 (checked in the `checked` build).
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [f32; 4] {
        check!(i.wrapping_add(4) <= self.len && i.is_multiple_of(4));
        // SAFETY: four elements inside the view, 16-byte aligned (checked, or by contract).
        let v = unsafe { load(self.ptr.add(i).cast::<Vec4<f32>>()) };
        // Element by element, here and in `set4`: a `Vec4` stored whole right after it was loaded
        // is a 16-byte memcpy to LLVM, which nvptx splits into two 64-bit loads and stores (a flat
        // 16-byte copy ran at 0.73x its CUDA C++ twin on the H200); four floats at a 16-byte
        // aligned address are merged into one `ld/st.global.v4` by its load-store vectorizer.
        [v.0[0], v.0[1], v.0[2], v.0[3]]
    }
}

impl Slice<f32, ReadWrite> {
    /// Writes elements `i..i + 4` with one 128-bit store (alignment as for `get4`).
    #[inline(always)]
    pub fn set4(&mut self, i: usize, v: [f32; 4]) {
        check!(i.wrapping_add(4) <= self.len && i.is_multiple_of(4));
        // SAFETY: as for `get4`.
        let p = unsafe { &mut *self.ptr.add(i).cast::<Vec4<f32>>() };
        let [a, b, c, d] = v;
        (p.0[0], p.0[1], p.0[2], p.0[3]) = (a, b, c, d);
    }
}
