//! What the SGEMM ladder (`sgemm/`) needs beneath its lessons: the operands of one product
//! ([`Gemm`]), a place in the block's dynamic shared memory ([`Shared`]: plain, 64- and 128-bit
//! loads and stores, `ldmatrix`), the `cp.async` source of a tile ([`AsyncSource`]) and the
//! block barrier of the ladder ([`block_barrier`]).
//! The wrappers compile to the raw-pointer code they replace (`host/tests/zero_cost.rs` pins
//! every `sgemm_*` entry's memory instructions and registers).
//!
//! Soundness rests on the launch contract, as the device API's does (its invariant 1), and on
//! the ladder's own discipline, which the types do not check:
//! 1. **Buffers.** The kernel's pointers hold `A` (`m x k`), `B` (`k x n`) and `C` (`m x n`),
//!    row-major, densely packed, each 16-byte aligned and fewer than `2^32` elements (the
//!    module doc of `sgemm`); for a split-K launch ([`Gemm::partial`]) `C` is one `m x n` slice of
//!    the workspace. The `*_or_zero`/`store_c` accessors check their index; the vector
//!    ones ([`Gemm::load4_a`], [`Gemm::load4_b`], [`Gemm::store4_c`]) take the caller's word
//!    that the 4 elements lie inside one row (checked only in the `checked` build, which traps),
//!    and so does [`AsyncSource::copy_chunk_inside`] for its 16 bytes. These, and
//!    [`Shared::at`]/[`Shared::add`] for invariant 2, are `unsafe fn`: a caller that breaks the
//!    invariant reads or writes out of bounds in the release build. Every call site in the
//!    lesson files (`sgemm/`) carries its `// SAFETY:` reason, most often an interior test; the
//!    API's typed views and tiles, not these, are the lab's example of bounds the types enforce.
//!    Module-private helpers in `sgemm/` that take a thread or stage index from their caller
//!    (`Block::fetch`, `Stage::put`, ..) rely on it being the launch's: each says so in its
//!    `// SAFETY:` comment. [`Gemm::partial`]'s `split` is the launch's, as its buffers are, and
//!    [`Gemm`]'s sizes are the launch's: a lesson reads them and never writes them.
//! 2. **Shared memory.** Every [`Shared`] place lies inside the dynamic shared bytes the
//!    launch gives (the configuration's `smem_bytes`, `memlab_contracts::sgemm`), aligned to
//!    its access (checked in the `checked` build against `%dynamic_smem_size`): the callers of
//!    [`Shared::at`]/[`Shared::add`] vouch for it.
//! 3. **Phases.** A stage is written (by stores or by `cp.async`) only between the barrier that
//!    ends its last read and the barrier (after `cp.async.wait_group`) that publishes it; the
//!    ladder's loops keep this by construction (`sgemm/copy.rs`'s `pipeline`, the two stages
//!    of rungs 6 and 8). Unlike `SharedTile`, nothing here makes a violation fail to compile:
//!    a ring of 2 to 4 stages whose phases differ per stage, and writes that land at a later
//!    `cp.async.wait_group`, are beyond what the typed phases express today.
//! 4. **Uniform calls.** [`block_barrier`] is reached by every thread of the block, and
//!    [`Shared::ldmatrix_x4`] by every lane of the warp (`.sync.aligned`): the ladder calls
//!    them outside any thread-dependent branch.

use super::{load2, load4, store4};
use memlab_device_api::arch;
use memlab_device_api::global::{GlobalIn, GlobalOut};

/// Traps in the `checked` build when `ok` is false; nothing in the release build.
#[inline(always)]
fn check(ok: bool) {
    if cfg!(feature = "checked") && !ok {
        arch::trap()
    }
}

/// The operands of one product, as every rung receives them: `A` is `m x k`, `B` is `k x n`,
/// `C` is `m x n`, row-major (invariant 1 of the module).
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
    /// (invariant 1; every slice then starts 16-byte aligned when `m n` is a multiple of 4, the
    /// only case the vector stores are used in: `n` a multiple of 4).
    #[inline(always)]
    pub fn partial(
        a: GlobalIn<f32>,
        b: GlobalIn<f32>,
        w: GlobalOut<f32>,
        (m, n, k): (u32, u32, u32),
        split: u32,
    ) -> Self {
        // SAFETY: the slice starts inside the workspace (invariant 1: `split < splits`); the
        // offset is computed in `usize`, since the workspace may hold `2^32` elements or more.
        let c = unsafe { w.as_ptr().add(split as usize * (m as usize * n as usize)) };
        Self { a: a.as_ptr(), b: b.as_ptr(), c, m, n, k }
    }

    /// `A[row][col]`, or 0.0 outside the `m x k` matrix.
    #[inline(always)]
    pub fn a_or_zero(&self, row: u32, col: u32) -> f32 {
        // SAFETY: inside the matrix (invariant 1).
        if row < self.m && col < self.k { unsafe { *self.a.add((row * self.k + col) as usize) } } else { 0.0 }
    }

    /// `B[row][col]`, or 0.0 outside the `k x n` matrix.
    #[inline(always)]
    pub fn b_or_zero(&self, row: u32, col: u32) -> f32 {
        // SAFETY: inside the matrix (invariant 1).
        if row < self.k && col < self.n { unsafe { *self.b.add((row * self.n + col) as usize) } } else { 0.0 }
    }

    /// Stores `C[row][col] = v` when `(row, col)` is inside the `m x n` matrix.
    #[inline(always)]
    pub fn store_c(&self, row: u32, col: u32, v: f32) {
        if row < self.m && col < self.n {
            // SAFETY: inside the matrix (invariant 1).
            unsafe { *self.c.add((row * self.n + col) as usize) = v };
        }
    }

    /// `A[row][col .. col + 4]` by one 128-bit load, with no bounds test (checked only in the
    /// `checked` build, which traps).
    ///
    /// # Safety
    ///
    /// The 4 elements lie inside one row of `A`: `row < m` and `col + 4 <= k`; and `k` and `col`
    /// are multiples of 4, so that the load is 16-byte aligned (invariant 1 of the module).
    #[inline(always)]
    pub unsafe fn load4_a(&self, row: u32, col: u32) -> [f32; 4] {
        check(row < self.m && col + 4 <= self.k && self.k % 4 == 0 && col % 4 == 0);
        // SAFETY: 4 floats inside the matrix, 16-byte aligned (invariant 1 and the caller's word).
        unsafe { load4(self.a.add((row * self.k + col) as usize)) }
    }

    /// `B[row][col .. col + 4]` by one 128-bit load; as [`Gemm::load4_a`] with `n` for `k`.
    ///
    /// # Safety
    ///
    /// The 4 elements lie inside one row of `B`: `row < k` and `col + 4 <= n`; and `n` and `col`
    /// are multiples of 4 (invariant 1 of the module).
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
    /// are multiples of 4 (invariant 1 of the module).
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

/// A place in the block's dynamic shared memory, in floats from its start (invariants 2 and 3
/// of the module). Copy, like the address it is. Only the `unsafe` [`Shared::at`] and
/// [`Shared::add`] make one, and their callers vouch for every access made through it: so its
/// accesses ([`Shared::load`], .., [`Shared::ldmatrix_x4`]) are safe.
#[derive(Clone, Copy)]
pub struct Shared(*mut f32);

impl Shared {
    /// Float `i` of the block's dynamic shared memory.
    ///
    /// # Safety
    ///
    /// The place lies inside the launch's dynamic shared bytes, is aligned for every access
    /// made through it (or through a place [`Shared::add`] derives from it, which inherits
    /// these conditions), every such access keeps the phase discipline of invariant 3 of the
    /// module, and an [`Shared::ldmatrix_x4`] through it is reached by every lane of the warp
    /// (invariant 4): [`Shared::load`], [`Shared::store`], [`Shared::ldmatrix_x4`] and the
    /// others are safe because they rely on this.
    #[inline(always)]
    pub unsafe fn at(i: u32) -> Self {
        // SAFETY: the caller's word (as above) for the place `i` floats from the start.
        unsafe { Self(arch::dynamic_shared::<f32>()).add(i) }
    }

    /// The place `i` floats further on.
    ///
    /// # Safety
    ///
    /// As for [`Shared::at`], for the new place: it lies inside the launch's dynamic shared
    /// bytes, aligned for every access made through it, and every such access keeps the phase
    /// discipline of invariant 3 of the module.
    #[inline(always)]
    pub unsafe fn add(self, i: u32) -> Self {
        // SAFETY: the new place lies inside the dynamic shared memory, the same allocation as
        // `self` (the caller's word; its accesses are checked in the `checked` build).
        Self(unsafe { self.0.add(i as usize) })
    }

    /// Checks, in the `checked` build, that `bytes` from here lie inside the launch's dynamic
    /// shared memory, aligned to `bytes`.
    #[inline(always)]
    fn check(self, bytes: usize) {
        if cfg!(feature = "checked") {
            let off = (self.0 as usize).wrapping_sub(arch::dynamic_shared::<f32>() as usize);
            check(off + bytes <= arch::dynamic_shared_bytes() && off % bytes == 0);
        }
    }

    /// The float here.
    #[inline(always)]
    pub fn load(self) -> f32 {
        self.check(4);
        // SAFETY: invariants 2 and 3.
        unsafe { *self.0 }
    }

    /// Stores `v` here.
    #[inline(always)]
    pub fn store(self, v: f32) {
        self.check(4);
        // SAFETY: invariants 2 and 3.
        unsafe { *self.0 = v }
    }

    /// The 2 floats here by one 64-bit load (8-byte aligned).
    #[inline(always)]
    pub fn load2(self) -> [f32; 2] {
        self.check(8);
        // SAFETY: invariants 2 and 3.
        unsafe { load2(self.0) }
    }

    /// The 4 floats here by one 128-bit load (16-byte aligned).
    #[inline(always)]
    pub fn load4(self) -> [f32; 4] {
        self.check(16);
        // SAFETY: invariants 2 and 3.
        unsafe { load4(self.0) }
    }

    /// Stores 4 floats here by one 128-bit store (16-byte aligned).
    #[inline(always)]
    pub fn store4(self, v: [f32; 4]) {
        self.check(16);
        // SAFETY: invariants 2 and 3.
        unsafe { store4(self.0, v) }
    }

    /// `ldmatrix.x4` with this lane's row address here (16-byte aligned): see
    /// [`super::mma::ldmatrix_x4`]. Every lane of the warp calls it together (invariant 4).
    #[cfg(target_feature = "sm_80")]
    #[inline(always)]
    pub fn ldmatrix_x4(self) -> [u32; 4] {
        self.check(16);
        // SAFETY: invariants 2 to 4.
        unsafe { super::mma::ldmatrix_x4(self.0) }
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
    /// row), else four 4-byte ones. `dst` is 16-byte aligned (invariant 2); it is written when
    /// this thread's group is waited for, and read by others after a barrier (invariant 3).
    #[inline(always)]
    pub fn copy_chunk(&self, dst: Shared, row: u32, col: u32) {
        dst.check(16);
        if self.cols % 4 == 0 {
            let inside = row < self.rows && col < self.cols;
            // Outside, nothing is read: `ptr` stands in as a valid address.
            // SAFETY: inside the matrix (invariant 1).
            let src = if inside { unsafe { self.ptr.add((row * self.cols + col) as usize) } } else { self.ptr };
            // SAFETY: `src` has 16 readable bytes when asked for them (invariant 1), `dst` as above.
            unsafe { super::cp_async::<16>(dst.0, src, if inside { 16 } else { 0 }) };
        } else {
            for q in 0..4 {
                let inside = row < self.rows && col + q < self.cols;
                // SAFETY: inside the matrix (invariant 1).
                let src = if inside { unsafe { self.ptr.add((row * self.cols + col + q) as usize) } } else { self.ptr };
                // SAFETY: as above, 4 bytes; `dst + q` (`q < 4`) lies inside the 16 bytes this
                // copy writes at `dst`, which `dst`'s maker vouched for (`Shared::add`).
                unsafe { super::cp_async::<4>(dst.add(q).0, src, if inside { 4 } else { 0 }) };
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
    /// cols`, with `cols` and `col` multiples of 4 (invariant 1 of the module, as for
    /// [`Gemm::load4_a`]); and `dst` is a 16-byte-aligned place of a stage being written
    /// (invariants 2 and 3).
    #[inline(always)]
    pub unsafe fn copy_chunk_inside(&self, dst: Shared, row: u32, col: u32) {
        dst.check(16);
        check(row < self.rows && col + 4 <= self.cols && self.cols % 4 == 0 && col % 4 == 0);
        // SAFETY: 16 readable, 16-byte aligned bytes (invariant 1 and the caller's word).
        let src = unsafe { self.ptr.add((row * self.cols + col) as usize) };
        // SAFETY: as above; `dst` by invariants 2 and 3.
        unsafe { super::cp_async::<16>(dst.0, src, 16) };
    }
}

/// The block barrier of the ladder's loops (`bar.sync 0`): every thread of the block reaches
/// it (invariant 4), and it ends one phase of the stages and begins the next (invariant 3).
#[inline(always)]
pub fn block_barrier() {
    arch::sync_threads()
}
