//! Rungs 4 to 6: `128 x 128` tiles of `C`, 256 threads, `8 x 8` results per thread, `BK = 8`,
//! with 128-bit loads. They differ in the thread layout, the pitch of the `A` tile and the number
//! of shared-memory stages; everything else is this file's shared body.
//!
//! Per step a block stages the `128 x 8` tile of `A` transposed (`As[d * pitch + r]`, so a
//! thread's 4 consecutive rows are one 128-bit shared load) and the `8 x 128` tile of `B` as it
//! is (`Bs[d * 128 + c]`). Thread `t` loads the 4 floats of `A` at row `t / 2`, columns
//! `4 (t % 2) ..` and of `B` at row `t / 32`, columns `4 (t % 32) ..`: one 128-bit global load
//! each when the tile lies inside the matrices and `k`, `n` are multiples of 4 (rows 16-byte
//! aligned), else four guarded scalar loads.

use super::Gemm;
use crate::device::ring::{Filling, Place as At, Ready, Ring, Writable};
use crate::device::{Block, GlobalIn, GlobalOut, block_idx_x, block_idx_y, fma, kernel, thread_idx_x};

use memlab_contracts::sgemm::{A_PITCH, A_PITCH_PADDED, STAGES};
/// Tile of `C` per block, `TILE x TILE`, and the depth of one step (columns of `A`, rows of
/// `B` staged at once).
pub(super) use memlab_contracts::sgemm::{BK, TILE};

/// Where a thread's `8 x 8` results sit in the block's tile: two groups of 4 rows starting at
/// `rows[0]`, `rows[1]` and two groups of 4 columns starting at `cols[0]`, `cols[1]`.
#[derive(Clone, Copy)]
pub(super) struct Place {
    rows: [u32; 2],
    cols: [u32; 2],
}

/// How the 256 threads cover the tile.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// Thread `t` owns rows `8 (t / 16) ..+8`, columns `8 (t % 16) ..+8`. The 16 lanes of a
    /// warp that differ in `t % 16` read `B` at a 32-byte stride: each 128-bit shared load spans
    /// 512 bytes, 4 wavefronts where 256 bytes need 2.
    Contiguous,
    /// Rows `4 (t / 16)` and `+ 64`, columns `4 (t % 16)` and `+ 64`: the 16 lanes read 256
    /// contiguous bytes of `B`, 2 wavefronts, no conflict.
    Split,
    /// Warp tiling: warp `w` owns the `32 x 64` sub-tile at rows `32 (w / 2)`, columns
    /// `64 (w % 2)`; lane `l` owns rows `4 (l / 8)` and `+ 16`, columns `4 (l % 8)` and `+ 32`
    /// inside it. Per load a warp reads 64 contiguous bytes of `A` and 128 of `B`: one wavefront
    /// each, and the warp's operands stay in a smaller footprint.
    Warp,
}

impl Layout {
    #[inline(always)]
    pub(super) fn place(self, t: u32) -> Place {
        match self {
            Layout::Contiguous => {
                let (r, c) = (8 * (t / 16), 8 * (t % 16));
                Place { rows: [r, r + 4], cols: [c, c + 4] }
            }
            Layout::Split => {
                let (r, c) = (4 * (t / 16), 4 * (t % 16));
                Place { rows: [r, r + 64], cols: [c, c + 64] }
            }
            Layout::Warp => {
                let (w, l) = (t / 32, t % 32);
                let (r, c) = (32 * (w / 2) + 4 * (l / 8), 64 * (w % 2) + 4 * (l % 8));
                Place { rows: [r, r + 16], cols: [c, c + 32] }
            }
        }
    }
}

/// The 4 floats of `A` and of `B` one thread moves into shared memory per step.
#[derive(Clone, Copy)]
struct Staged {
    a: [f32; 4],
    b: [f32; 4],
}

/// One block's view of the product: operands, its tile origin, and whether its tiles may use
/// 128-bit global accesses.
#[derive(Clone, Copy)]
pub(super) struct BlockTile {
    pub(super) g: Gemm,
    pub(super) row0: u32,
    pub(super) col0: u32,
    /// The block's `C` tile lies inside `C` and rows of `A`, `B`, `C` are 16-byte aligned.
    pub(super) vector: bool,
}

impl BlockTile {
    #[inline(always)]
    pub(super) fn new(g: Gemm) -> BlockTile {
        let (row0, col0) = (block_idx_y() * TILE, block_idx_x() * TILE);
        let vector = g.k % 4 == 0 && g.n % 4 == 0 && row0 + TILE <= g.m && col0 + TILE <= g.n;
        BlockTile { g, row0, col0, vector }
    }

    /// Whether the step at depth `k0` lies inside both matrices with 16-byte aligned rows, where
    /// a thread's loads are single 128-bit loads with no bounds checks.
    #[inline(always)]
    pub(super) fn interior(&self, k0: u32) -> bool {
        self.vector && k0 + BK <= self.g.k
    }

    /// Row and column of `A` where thread `t`'s 4 floats for the step at depth `k0` start:
    /// row `t / 2` of the tile, columns `4 (t % 2) ..`.
    #[inline(always)]
    fn a_at(&self, t: u32, k0: u32) -> (u32, u32) {
        (self.row0 + t / 2, k0 + 4 * (t % 2))
    }

    /// Row and column of `B` where thread `t`'s 4 floats for the step at depth `k0` start:
    /// row `t / 32` of the tile, columns `4 (t % 32) ..`.
    #[inline(always)]
    pub(super) fn b_at(&self, t: u32, k0: u32) -> (u32, u32) {
        (k0 + t / 32, self.col0 + 4 * (t % 32))
    }

    /// Thread `t`'s global loads for the step at depth `k0`.
    #[inline(always)]
    fn fetch(&self, t: u32, k0: u32) -> Staged {
        let g = &self.g;
        let ((ar, ac), (br, bc)) = (self.a_at(t, k0), self.b_at(t, k0));
        if self.interior(k0) {
            // SAFETY: interior step (`vector`, from `BlockTile::new`: the tile inside `C`, `k` and `n`
            // multiples of 4; and `k0 + BK <= k`), `t < 256` (every caller passes its
            // `thread_idx_x()`, blocks of 256 threads) and `k0` a multiple of `BK` (callers'
            // `s * BK`): `ar < row0 + TILE <= m`, `ac + 4 <= k0 + BK <= k`, `br < k0 + BK <= k`,
            // `bc + 4 <= col0 + TILE <= n`, `ac` and `bc` multiples of 4.
            unsafe { Staged { a: g.load4_a(ar, ac), b: g.load4_b(br, bc) } }
        } else {
            // One branch for A and B together: built from `fetch_a` and a separately branched
            // load of B, rung 6 takes 147 registers instead of 126 (ptxas, sm_90), half the
            // occupancy.
            let mut s = Staged { a: [0.0; 4], b: [0.0; 4] };
            unroll!(q in 0..4 => {
                s.a[q] = g.a_or_zero(ar, ac + q as u32);
                s.b[q] = g.b_or_zero(br, bc + q as u32);
            });
            s
        }
    }

    /// Thread `t`'s 4 floats of `A` for the step at depth `k0` ([`BlockTile::a_at`]), zeros outside
    /// the matrix. Rung 7's, which loads only `A` through registers.
    #[cfg(target_feature = "sm_80")]
    #[inline(always)]
    pub(super) fn fetch_a(&self, t: u32, k0: u32) -> [f32; 4] {
        let g = &self.g;
        let (ar, ac) = self.a_at(t, k0);
        if self.interior(k0) {
            // SAFETY: as in `Block::fetch`: `ar < m`, `ac + 4 <= k`, `k` and `ac` multiples of 4.
            unsafe { g.load4_a(ar, ac) }
        } else {
            let mut a = [0.0; 4];
            unroll!(q in 0..4 => {
                a[q] = g.a_or_zero(ar, ac + q as u32);
            });
            a
        }
    }

    /// Stores the thread's `8 x 8` results: 128-bit stores inside the matrix, guarded scalar
    /// stores on an edge tile.
    #[inline(always)]
    pub(super) fn store(&self, place: Place, acc: &[[f32; 8]; 8]) {
        unroll!(i in 0..8 => {
            let row = self.row0 + place.rows[i / 4] + (i % 4) as u32;
            unroll!(half in 0..4 => {
                if half < 2 {
                    let col = self.col0 + place.cols[half];
                    let v = [acc[i][4 * half], acc[i][4 * half + 1], acc[i][4 * half + 2], acc[i][4 * half + 3]];
                    if self.vector {
                        // SAFETY: `vector` (`BlockTile::new`): the tile lies inside `C` and `n` is a
                        // multiple of 4; `place` is `Layout::place` of a thread index `< 256` (its
                        // callers'), so `row < row0 + TILE <= m` and `col + 4 <= col0 + TILE <= n`,
                        // `col` a multiple of 4.
                        unsafe { self.g.store4_c(row, col, v) };
                    } else {
                        unroll!(q in 0..4 => {
                            self.g.store_c(row, col + q as u32, v[q]);
                        });
                    }
                }
            });
        });
    }
}

/// The layout of one shared-memory stage: the transposed `A` tile (`BK` rows of `A_PITCH`
/// floats) followed by the `B` tile (`BK` rows of `TILE` floats). Its functions take the stage
/// in the phase the ring gives them (`device::ring`): a [`Filling`] one to write, a [`Ready`]
/// one to read.
pub(super) struct Stage<const A_PITCH: u32>;

impl<const A_PITCH: u32> Stage<A_PITCH> {
    /// Floats in one stage (a multiple of 4: `BK` is 8).
    pub(super) const FLOATS: u32 = BK * (A_PITCH + TILE);

    /// Writes thread `t`'s staged floats: `A` transposed (4 scalar stores), `B` as one 128-bit
    /// store.
    #[inline(always)]
    fn put(stage: &Filling<'_>, t: u32, s: Staged) {
        Self::put_a(stage, t, s.a);
        Self::b_slot(stage, t).store4(s.b);
    }

    /// Writes thread `t`'s 4 floats of `A` (row `t / 2`, columns `4 (t % 2) ..` of the tile) to
    /// their transposed places.
    #[inline(always)]
    pub(super) fn put_a<W: Writable>(stage: &Filling<'_, W>, t: u32, a: [f32; 4]) {
        let (ar, ac) = (t / 2, 4 * (t % 2));
        unroll!(q in 0..4 => {
            // SAFETY: row `ac + q < BK` of the `A` tile, column `ar < 128 <= A_PITCH` (`t < 256`:
            // every caller passes its `thread_idx_x()`, blocks of 256 threads).
            unsafe { stage.at((ac + q as u32) * A_PITCH + ar) }.store(a[q]);
        });
    }

    /// Where thread `t`'s 4 floats of `B` (row `t / 32`, columns `4 (t % 32) ..` of the tile)
    /// go: 16-byte aligned.
    #[inline(always)]
    pub(super) fn b_slot<'a, W>(stage: &'a Filling<'_, W>, t: u32) -> At<'a, W> {
        // SAFETY: row `t / 32 < BK` of the `B` tile (after the `BK A_PITCH` floats of `A`),
        // columns `4 (t % 32) .. + 4 <= TILE`, a multiple of 4 (`t < 256`: every caller passes
        // its `thread_idx_x()`).
        unsafe { stage.at(BK * A_PITCH).add((t / 32) * TILE + 4 * (t % 32)) }
    }

    /// `acc += A_tile * B_tile` for the thread's `8 x 8` results: per depth `d`, two 128-bit
    /// loads of `A`, two of `B`, 64 FMAs.
    #[inline(always)]
    pub(super) fn multiply(stage: &Ready<'_>, place: Place, acc: &mut [[f32; 8]; 8]) {
        unroll!(d in 0..8 => {
            let d = d as u32;
            // SAFETY: depth `d < BK`: row `d` of each tile, the `B` tile after `A`'s `BK A_PITCH`
            // floats.
            let (a_row, b_row) = unsafe { (stage.at(d * A_PITCH), stage.at(BK * A_PITCH + d * TILE)) };
            // SAFETY: `place` is `Layout::place` of a thread index `< 256` (its callers'), so its
            // rows and columns are multiples of 4 with `.. + 4 <= 128 <= A_PITCH`, `TILE`: inside
            // the row, 16-byte aligned (`A_PITCH` and `TILE` multiples of 4).
            let (a0, a1) = unsafe { (a_row.add(place.rows[0]).load4(), a_row.add(place.rows[1]).load4()) };
            // SAFETY: as above.
            let (b0, b1) = unsafe { (b_row.add(place.cols[0]).load4(), b_row.add(place.cols[1]).load4()) };
            let (a, b) = (concat(a0, a1), concat(b0, b1));
            unroll!(i in 0..8 => {
                unroll!(j in 0..8 => {
                    acc[i][j] = fma(a[i], b[j], acc[i][j]);
                });
            });
        });
    }
}

#[inline(always)]
fn concat(x: [f32; 4], y: [f32; 4]) -> [f32; 8] {
    [x[0], x[1], x[2], x[3], y[0], y[1], y[2], y[3]]
}

/// The body of rungs 4 and 5: one stage; each step loads, waits at a barrier, multiplies and
/// waits again (`Ring::serial`).
///
/// Launch contract (`device::gemm`, `device::ring`): buffers as in the module doc of `sgemm`;
/// block of 256 threads, `8 * (A_PITCH + 128) * 4` dynamic shared bytes.
#[inline(always)]
fn single_stage<const A_PITCH: u32>(block: Block, g: Gemm, layout: Layout) {
    let t = thread_idx_x();
    let tile = BlockTile::new(g);
    let place = layout.place(t);
    let mut acc = [[0.0f32; 8]; 8];
    let fill = #[inline(always)]
    |stage: Filling<'_>, s: u32| Stage::<A_PITCH>::put(&stage, t, tile.fetch(t, s * BK));
    let compute = #[inline(always)]
    |stage: Ready<'_>| Stage::<A_PITCH>::multiply(&stage, place, &mut acc);
    Ring::<1>::carve(block, Stage::<A_PITCH>::FLOATS).serial(g.k.div_ceil(BK), fill, compute);
    tile.store(place, &acc);
}

/// The body of rung 6: two stages (`Ring::staged`). The loads of step `s + 1` are issued before
/// the FMAs of step `s` and land in the other stage after them, so global latency hides behind
/// arithmetic and one barrier per step suffices.
///
/// Launch contract: as for [`single_stage`], with `STAGES` stages of shared bytes.
#[inline(always)]
fn double_buffered<const A_PITCH: u32>(block: Block, g: Gemm, layout: Layout) {
    let t = thread_idx_x();
    let tile = BlockTile::new(g);
    let place = layout.place(t);
    let mut acc = [[0.0f32; 8]; 8];
    let ring = Ring::<STAGES>::carve(block, Stage::<A_PITCH>::FLOATS);
    let first = #[inline(always)]
    |stage: Filling<'_>| Stage::<A_PITCH>::put(&stage, t, tile.fetch(t, 0));
    ring.staged(
        (0, g.k.div_ceil(BK)),
        first,
        #[inline(always)]
        |next, ready, s| {
            let next = next.map(
                #[inline(always)]
                |stage| (tile.fetch(t, (s + 1) * BK), stage),
            );
            Stage::<A_PITCH>::multiply(&ready, place, &mut acc);
            if let Some((staged, stage)) = next {
                Stage::<A_PITCH>::put(&stage, t, staged);
            }
        },
    );
    tile.store(place, &acc);
}

kernel! {
/// Rung 4: rung 3's `128 x 128` tile and `8 x 8` results per thread, with 128-bit loads: one
/// `ld.global.v4` each for `A` and `B` per step, and `A` stored transposed so that a thread's
/// 8 `A` values are two `ld.shared.v4`, like its 8 `B` values.
///
/// - Launch: block `256 x 1` threads, grid `(ceil(n / 128), ceil(m / 128))`.
/// - Shared memory: `8 * (128 + 128) * 4 = 8192` bytes of dynamic shared memory.
/// - Memory level: shared tiles, 64 accumulators in registers; its `B` loads are 2-way
///   conflicted (see `Layout::Contiguous`).
/// - Buffers: as in the module doc of `sgemm`.
pub fn sgemm_4_vectorized(block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32) {
    single_stage::<A_PITCH>(block, Gemm::new(a, b, c, m, n, k), Layout::Contiguous)
}
}

kernel! {
/// Rung 5: rung 4 with a conflict-free shared layout. Each thread's results are 4 x 4 groups 64
/// rows and 64 columns apart, so the lanes of a warp read contiguous `B`; the `A` tile's pitch
/// is 132 floats, so the two threads that store one row of `A` transposed (columns `d` and
/// `d + 4`) hit banks 16 apart instead of the same bank.
///
/// - Launch: block `256 x 1` threads, grid `(ceil(n / 128), ceil(m / 128))`.
/// - Shared memory: `8 * (132 + 128) * 4 = 8320` bytes of dynamic shared memory.
/// - Memory level: shared tiles (conflict-free), 64 accumulators in registers.
/// - Buffers: as in the module doc of `sgemm`.
pub fn sgemm_5_conflict_free(block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32) {
    single_stage::<A_PITCH_PADDED>(block, Gemm::new(a, b, c, m, n, k), Layout::Split)
}
}

kernel! {
/// Rung 6: two shared-memory stages (double buffering through registers: the next step's
/// global loads are in flight during this step's 512 FMAs) and warp tiling (`Layout::Warp`).
///
/// - Launch: block `256 x 1` threads, grid `(ceil(n / 128), ceil(m / 128))`.
/// - Shared memory: `2 * 8 * (132 + 128) * 4 = 16640` bytes of dynamic shared memory.
/// - Memory level: two shared stages, 64 accumulators and 8 staged floats in registers.
/// - Buffers: as in the module doc of `sgemm`.
pub fn sgemm_6_double_buffered(block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32) {
    double_buffered::<A_PITCH_PADDED>(block, Gemm::new(a, b, c, m, n, k), Layout::Warp)
}
}
