//! What the SGEMM ladder (`sgemm/`) needs beneath its lessons besides its stages (`ring.rs`):
//! the operands of one product ([`Gemm`]) and the `cp.async` source of a tile
//! ([`AsyncSource`]). The wrappers compile to the raw-pointer code they replace
//! (`host/tests/zero_cost.rs` pins every `sgemm_*` entry's memory instructions and registers).
//!
//! Soundness rests on the launch contract, as the device API's does (its invariant 1): the
//! kernel's pointers hold `A` (`m x k`), `B` (`k x n`) and `C` (`m x n`), row-major, densely
//! packed, each 16-byte aligned and fewer than `2^32` elements (the module doc of `sgemm`); for
//! a split-K launch ([`Gemm::partial`]) `C` is one `m x n` slice of the workspace, and `split`
//! is the launch's. [`Gemm`]'s sizes are the launch's: a lesson reads them and never writes
//! them. The `*_or_zero`/`store_c` accessors and [`AsyncSource::copy_chunk`] check their index.
//! The vector ones ([`Gemm::load4_a`], [`Gemm::load4_b`], [`Gemm::store4_c`],
//! [`AsyncSource::copy_chunk_inside`]) take the caller's word that the 4 elements lie inside
//! one row (checked only in the `checked` build, which traps), so they are `unsafe fn`: every
//! call in the lesson files (`sgemm/`) carries its `// SAFETY:` reason, most often an interior
//! test. Module-private helpers in `sgemm/` that take a thread index from their caller rely on
//! it being the launch's: each says so in its `// SAFETY:` comment.

#[cfg(target_feature = "sm_80")]
use super::ring::{AsyncWrite, Place};
use super::{check, load4, store4};
use memlab_device_api::global::{GlobalIn, GlobalOut};

/// The operands of one product, as every rung receives them: `A` is `m x k`, `B` is `k x n`,
/// `C` is `m x n`, row-major (the module doc).
#[derive(Clone, Copy)]
pub struct Gemm {
    pub(crate) a: *const f32,
    pub(crate) b: *const f32,
    pub(crate) c: *mut f32,
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

impl Gemm {
    /// The product a launch describes: its three buffers and sizes.
    #[inline(always)]
    pub fn new(a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32) -> Self {
        Self { a: a.as_ptr(), b: b.as_ptr(), c: c.as_ptr(), m, n, k }
    }

    /// The product of split `split` of a split-K launch: `A` and `B` as in [`Gemm::new`], its
    /// `C` the `split`-th `m x n` slice of the workspace `w` (elements `split m n ..`), which the
    /// launch contract makes `splits x m x n` floats, 16-byte aligned, `split < splits`
    /// (the launch contract; every slice then starts 16-byte aligned when `m n` is a multiple of 4, the
    /// only case the vector stores are used in: `n` a multiple of 4).
    #[inline(always)]
    pub fn partial(
        a: GlobalIn<f32>,
        b: GlobalIn<f32>,
        w: GlobalOut<f32>,
        (m, n, k): (u32, u32, u32),
        split: u32,
    ) -> Self {
        // SAFETY: the slice starts inside the workspace (the launch contract: `split < splits`); the
        // offset is computed in `usize`, since the workspace may hold `2^32` elements or more.
        let c = unsafe { w.as_ptr().add(split as usize * (m as usize * n as usize)) };
        Self { a: a.as_ptr(), b: b.as_ptr(), c, m, n, k }
    }

    /// `A[row][col]`, or 0.0 outside the `m x k` matrix.
    #[inline(always)]
    pub fn a_or_zero(&self, row: u32, col: u32) -> f32 {
        // SAFETY: inside the matrix (the launch contract).
        if row < self.m && col < self.k { unsafe { *self.a.add((row * self.k + col) as usize) } } else { 0.0 }
    }

    /// `B[row][col]`, or 0.0 outside the `k x n` matrix.
    #[inline(always)]
    pub fn b_or_zero(&self, row: u32, col: u32) -> f32 {
        // SAFETY: inside the matrix (the launch contract).
        if row < self.k && col < self.n { unsafe { *self.b.add((row * self.n + col) as usize) } } else { 0.0 }
    }

    /// Stores `C[row][col] = v` when `(row, col)` is inside the `m x n` matrix.
    #[inline(always)]
    pub fn store_c(&self, row: u32, col: u32, v: f32) {
        if row < self.m && col < self.n {
            // SAFETY: inside the matrix (the launch contract).
            unsafe { *self.c.add((row * self.n + col) as usize) = v };
        }
    }

    /// `A[row][col .. col + 4]` by one 128-bit load, with no bounds test (checked only in the
    /// `checked` build, which traps).
    ///
    /// # Safety
    ///
    /// The 4 elements lie inside one row of `A`: `row < m` and `col + 4 <= k`; and `k` and `col`
    /// are multiples of 4, so that the load is 16-byte aligned (the module doc).
    #[inline(always)]
    pub unsafe fn load4_a(&self, row: u32, col: u32) -> [f32; 4] {
        check(row < self.m && col + 4 <= self.k && self.k % 4 == 0 && col % 4 == 0);
        // SAFETY: 4 floats inside the matrix, 16-byte aligned (the launch contract and the caller's word).
        unsafe { load4(self.a.add((row * self.k + col) as usize)) }
    }

    /// `B[row][col .. col + 4]` by one 128-bit load; as [`Gemm::load4_a`] with `n` for `k`.
    ///
    /// # Safety
    ///
    /// The 4 elements lie inside one row of `B`: `row < k` and `col + 4 <= n`; and `n` and `col`
    /// are multiples of 4 (the module doc).
    #[inline(always)]
    pub unsafe fn load4_b(&self, row: u32, col: u32) -> [f32; 4] {
        check(row < self.k && col + 4 <= self.n && self.n % 4 == 0 && col % 4 == 0);
        // SAFETY: as for `load4_a`.
        unsafe { load4(self.b.add((row * self.n + col) as usize)) }
    }

    /// `C[row][col .. col + 4] = v` by one 128-bit store; as [`Gemm::load4_a`] for `C`.
    ///
    /// # Safety
    ///
    /// The 4 elements lie inside one row of `C`: `row < m` and `col + 4 <= n`; and `n` and `col`
    /// are multiples of 4 (the module doc).
    #[inline(always)]
    pub unsafe fn store4_c(&self, row: u32, col: u32, v: [f32; 4]) {
        check(row < self.m && col + 4 <= self.n && self.n % 4 == 0 && col % 4 == 0);
        // SAFETY: as for `load4_a`.
        unsafe { store4(self.c.add((row * self.n + col) as usize), v) }
    }

    /// `A` as the source of `cp.async` tile copies.
    #[cfg(target_feature = "sm_80")]
    #[inline(always)]
    pub fn a_source(&self) -> AsyncSource {
        AsyncSource { ptr: self.a, rows: self.m, cols: self.k }
    }

    /// `B` as the source of `cp.async` tile copies.
    #[cfg(target_feature = "sm_80")]
    #[inline(always)]
    pub fn b_source(&self) -> AsyncSource {
        AsyncSource { ptr: self.b, rows: self.k, cols: self.n }
    }
}

/// A `rows x cols` row-major matrix in global memory that `cp.async` copies from: `A` or `B`
/// of a [`Gemm`].
#[cfg(target_feature = "sm_80")]
#[derive(Clone, Copy)]
pub struct AsyncSource {
    ptr: *const f32,
    rows: u32,
    cols: u32,
}

#[cfg(target_feature = "sm_80")]
impl AsyncSource {
    /// Starts the copy of the 4 floats at `(row, col ..)` to `dst`, zeros for those outside
    /// the matrix: one 16-byte copy when `cols` is a multiple of 4 (rows are then 16-byte
    /// aligned, and a chunk at a multiple-of-4 `col` lies wholly inside or wholly outside a
    /// row), else four 4-byte ones. `dst`, a place of a stage of the ring's `cp.async` loops, is
    /// written by the wait of the step whose stage it is, before the stage is read.
    #[inline(always)]
    pub fn copy_chunk(&self, dst: Place<'_, AsyncWrite>, row: u32, col: u32) {
        let dst = dst.async_dst(16);
        if self.cols % 4 == 0 {
            let inside = row < self.rows && col < self.cols;
            // Outside, nothing is read: `ptr` stands in as a valid address.
            // SAFETY: inside the matrix (the launch contract).
            let src = if inside { unsafe { self.ptr.add((row * self.cols + col) as usize) } } else { self.ptr };
            // SAFETY: `src` has 16 readable bytes when asked for them (the launch contract), `dst` as above.
            unsafe { super::cp_async::<16>(dst, src, if inside { 16 } else { 0 }) };
        } else {
            for q in 0..4 {
                let inside = row < self.rows && col + q < self.cols;
                // SAFETY: inside the matrix (the launch contract).
                let src = if inside { unsafe { self.ptr.add((row * self.cols + col + q) as usize) } } else { self.ptr };
                // SAFETY: as above, 4 bytes; `dst + q` (`q < 4`) lies inside the 16 bytes at
                // `dst`, which `dst`'s maker vouched for (`Filling::at`).
                unsafe { super::cp_async::<4>(dst.add(q as usize), src, if inside { 4 } else { 0 }) };
            }
        }
    }

    /// Starts the copy of the 4 floats at `(row, col ..)` to `dst` by one 16-byte copy with no
    /// bounds test (checked only in the `checked` build, which traps). `dst` as for
    /// [`AsyncSource::copy_chunk`].
    ///
    /// # Safety
    ///
    /// The 16 bytes lie inside the source matrix, in one row: `row < rows` and `col + 4 <=
    /// cols`, with `cols` and `col` multiples of 4 (the module doc, as for
    /// [`Gemm::load4_a`]).
    #[inline(always)]
    pub unsafe fn copy_chunk_inside(&self, dst: Place<'_, AsyncWrite>, row: u32, col: u32) {
        let dst = dst.async_dst(16);
        check(row < self.rows && col + 4 <= self.cols && self.cols % 4 == 0 && col % 4 == 0);
        // SAFETY: 16 readable, 16-byte aligned bytes (the launch contract and the caller's word).
        let src = unsafe { self.ptr.add((row * self.cols + col) as usize) };
        // SAFETY: as above; `dst` inside a filling stage, 16-byte aligned (its maker's word).
        unsafe { super::cp_async::<16>(dst, src, 16) };
    }
}
