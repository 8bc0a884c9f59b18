//! Rung 8's `Registers` configurations (`memlab_contracts::sgemm::Algo::Registers`, compiled
//! for `sm_80` and up with the rest of rung 8): rung 6's algorithm, generic over the tiles, so
//! that the autotuner can choose rung 6's own configuration or a larger one.
//!
//! Per `BK`-deep step thread `t` loads chunks `t, t + threads, ..` of 4 floats of the `BM x BK`
//! tile of `A` (row-major, `BK / 4` chunks per row) and of the `BK x BN` tile of `B` into
//! registers, one 128-bit global load each inside the matrices, while the block multiplies the
//! other stage; after the FMAs it stores `A` transposed (`As[d * (BM + 4) + r]`, 4 scalar
//! stores) and `B` as it lies (one 128-bit store), and one barrier ends the step. Lane
//! `(lr, lc)` of warp `w` owns rows `4 lr + 4 (WM / TM) i + ..4` and columns `4 lc + 4 (WN /
//! TN) h + ..4` of the warp's `WM x WN` sub-tile, so per depth a thread reads its `TM` values
//! of `A` and `TN` of `B` as `TM / 4 + TN / 4` 128-bit shared loads, each of a contiguous run of
//! `16 WM / TM` (`A`) or `16 WN / TN` (`B`) bytes across the warp: 1 wavefront when that is
//! 128 bytes or less.

use super::{Gemm, store_results, unrolled};
use crate::device::ring::{Filling, Ready, Ring};
use crate::device::{Block, block_idx_x, block_idx_y, fma, thread_idx_x};

/// The most 16-byte chunks of one tile a thread moves per step in any configuration (`A` of
/// `256 x 8` or `128 x 16` over 256 threads: 2); the arrays are this long, and the unused
/// entries fold away.
const MAX_CHUNKS: usize = 4;

/// The chunks of `A` and of `B` one thread moves per step (entries past the configuration's
/// counts stay unused).
type Chunks = ([[f32; 4]; MAX_CHUNKS], [[f32; 4]; MAX_CHUNKS]);

/// What thread `t` of one block of a `Registers` configuration needs: the operands, its tile's
/// origin, and whether the tile may use 128-bit global accesses. The configuration's functions
/// (`Tiles::fetch`, ..) take it, functions rather than closures so that they inline (LLVM kept
/// the closures as calls, with the context in local memory).
struct Staged {
    g: Gemm,
    t: u32,
    row0: u32,
    col0: u32,
    /// The block's tiles lie inside the matrices and rows are 16-byte aligned.
    vector: bool,
}

tiles_impl! {
    const A_CHUNKS: usize = (BM * BK / 4 / Self::THREADS) as usize;
    const B_CHUNKS: usize = (BK * BN / 4 / Self::THREADS) as usize;
    /// Row pitch of the transposed `A` tile, floats.
    const PITCH: u32 = BM + 4;
    const STAGE_FLOATS: u32 = BK * Self::PITCH + BK * BN;

    /// Where this thread's chunk `i` lies in a tile of `cols` floats per row: (row, column).
    #[inline(always)]
    fn at(blk: &Staged, i: usize, cols: u32) -> (u32, u32) {
        let chunk = blk.t + i as u32 * Self::THREADS;
        (chunk / (cols / 4), 4 * (chunk % (cols / 4)))
    }

    /// This thread's chunks of the step at depth `k0`, zeros outside the matrices.
    #[inline(always)]
    fn fetch(blk: &Staged, k0: u32) -> Chunks {
        let g = &blk.g;
        let (mut a, mut b) = ([[0.0f32; 4]; MAX_CHUNKS], [[0.0f32; 4]; MAX_CHUNKS]);
        // One branch for both tiles, as rung 6 (a branch per tile costs registers).
        if blk.vector && k0 + BK <= g.k {
            unrolled(Self::A_CHUNKS, |i| {
                let (r, c) = Self::at(blk, i, BK);
                // SAFETY: interior step (`vector`: the tile inside `C`, `k` and `n` multiples of
                // 4; `k0 + BK <= k`) and `blk.t < THREADS` (`registers_tile`'s `thread_idx_x()`),
                // so `(r, c)` is a chunk of the `BM x BK` tile: `row0 + r < row0 + BM <= m`,
                // `k0 + c + 4 <= k0 + BK <= k`, `k0 + c` a multiple of 4 (`k0 = s BK`).
                a[i] = unsafe { g.load4_a(blk.row0 + r, k0 + c) };
            });
            unrolled(Self::B_CHUNKS, |i| {
                let (r, c) = Self::at(blk, i, BN);
                // SAFETY: as for `A`, a chunk of the `BK x BN` tile: `k0 + r < k0 + BK <= k`,
                // `col0 + c + 4 <= col0 + BN <= n`, `col0 + c` a multiple of 4.
                b[i] = unsafe { g.load4_b(k0 + r, blk.col0 + c) };
            });
        } else {
            unrolled(Self::A_CHUNKS, |i| {
                let (r, c) = Self::at(blk, i, BK);
                unrolled(4, |q| a[i][q] = g.a_or_zero(blk.row0 + r, k0 + c + q as u32));
            });
            unrolled(Self::B_CHUNKS, |i| {
                let (r, c) = Self::at(blk, i, BN);
                unrolled(4, |q| b[i][q] = g.b_or_zero(k0 + r, blk.col0 + c + q as u32));
            });
        }
        (a, b)
    }

    /// Stores this thread's chunks into `s`, a stage the ring gives to be written: `A`
    /// transposed (4 scalar stores a chunk), `B` as it lies (one 128-bit store).
    #[inline(always)]
    fn put(blk: &Staged, s: &Filling<'_>, (a, b): Chunks) {
        unrolled(Self::A_CHUNKS, |i| {
            let (r, c) = Self::at(blk, i, BK);
            // SAFETY: `(r, c)` is a chunk of the `BM x BK` tile (`blk.t < THREADS`), so
            // `(c + q) PITCH + r < BK PITCH` (`r < BM < PITCH`): inside the transposed `A` tile.
            unrolled(4, |q| unsafe { s.at((c + q as u32) * Self::PITCH + r) }.store(a[i][q]));
        });
        unrolled(Self::B_CHUNKS, |i| {
            let (r, c) = Self::at(blk, i, BN);
            // SAFETY: `(r, c)` is a chunk of the `BK x BN` tile: inside the `B` tile, 16-byte
            // aligned (`BK PITCH`, `BN` and `c` multiples of 4).
            unsafe { s.at(BK * Self::PITCH + r * BN + c) }.store4(b[i]);
        });
    }

    /// `acc += A_tile * B_tile` from `st`, a stage the ring gives to be read, for the results
    /// at rows `a_off + ..` and columns `b_off + ..` of the tile: per depth `TM / 4 + TN / 4`
    /// 128-bit loads, `TM TN` FMAs.
    #[inline(always)]
    fn multiply(st: &Ready<'_>, (a_off, b_off): (u32, u32), acc: &mut [[f32; TN]; TM]) {
        let (lane_rows, lane_cols) = (WM / TM as u32, WN / TN as u32);
        // SAFETY: `a_off = wrow + 4 lr < BM`, the thread's first row of the `A` tile.
        let a_s = unsafe { st.at(a_off) };
        // SAFETY: `b_off = wcol + 4 lc < BN`, its first column of the `B` tile.
        let b_s = unsafe { st.at(BK * Self::PITCH + b_off) };
        unrolled(BK as usize, |d| {
            let d = d as u32;
            let (mut av, mut bv) = ([0.0f32; TM], [0.0f32; TN]);
            unrolled(TM / 4, |i| {
                // SAFETY: depth `d < BK`, rows `a_off + 4 lane_rows i .. + 4 <= wrow + WM <= BM`
                // (`lr < lane_rows`, `i < TM / 4`): inside the `A` tile, 16-byte aligned.
                let v = unsafe { a_s.add(d * Self::PITCH + 4 * lane_rows * i as u32) }.load4();
                unrolled(4, |q| av[4 * i + q] = v[q]);
            });
            unrolled(TN / 4, |h| {
                // SAFETY: depth `d < BK`, columns `b_off + 4 lane_cols h .. + 4 <= wcol + WN <=
                // BN` (`lc < lane_cols`, `h < TN / 4`): inside the `B` tile, 16-byte aligned.
                let v = unsafe { b_s.add(d * BN + 4 * lane_cols * h as u32) }.load4();
                unrolled(4, |q| bv[4 * h + q] = v[q]);
            });
            unrolled(TM, |i| unrolled(TN, |j| acc[i][j] = fma(av[i], bv[j], acc[i][j])));
        });
    }

    /// The body of every `Registers` configuration of rung 8: a `BM x BN` tile of `C` per
    /// block, `BK` deep steps, `WM x WN` per warp, `TM x TN` per thread, `STAGES` stages
    /// (2 in each of these configurations: the next step's loads overlap this step's FMAs). Launch
    /// contract (`device::gemm`, `device::ring`): buffers as in the module doc of `sgemm`,
    /// each 16-byte aligned; block of `32 (BM / WM) (BN / WN)` threads, grid `(ceil(n / BN),
    /// ceil(m / BM))`, `Tuned::smem_bytes` dynamic shared bytes.
    #[inline(always)]
    pub(super) fn registers(block: Block, g: Gemm) {
        Self::registers_tile(block, g, (block_idx_x(), block_idx_y()), (0, g.k.div_ceil(BK)));
    }

    /// [`Tiles::registers`] for the tile at block column `tx`, block row `ty` of `C`, over the
    /// depth steps `first .. end` (of `BK`; `end <= ceil(k / BK)`), its sums stored to `g`'s `C`:
    /// the whole product for rung 8, one split's partial tile for the split-K rung
    /// (`split_k.rs`, `g` from `Gemm::partial`). Called by every thread of the block.
    #[inline(always)]
    pub(super) fn registers_tile(block: Block, g: Gemm, (tx, ty): (u32, u32), (first, end): (u32, u32)) {
        let (lane_rows, lane_cols) = (WM / TM as u32, WN / TN as u32);
        let t = thread_idx_x();
        let (w, l) = (t / 32, t % 32);
        let (lr, lc) = (l / lane_cols, l % lane_cols);
        let (wrow, wcol) = ((w / (BN / WN)) * WM, (w % (BN / WN)) * WN);
        let (row0, col0) = (ty * BM, tx * BN);
        let vector = g.k % 4 == 0 && g.n % 4 == 0 && row0 + BM <= g.m && col0 + BN <= g.n;
        let blk = Staged { g, t, row0, col0, vector };
        let offsets = (wrow + 4 * lr, wcol + 4 * lc);
        let mut acc = [[0.0f32; TN]; TM];
        let ring = Ring::<STAGES>::carve(block, Self::STAGE_FLOATS);
        let prologue = #[inline(always)] |stage: Filling<'_>| Self::put(&blk, &stage, Self::fetch(&blk, first * BK));
        ring.staged((first, end), prologue, #[inline(always)] |next, ready, s| {
            let next = next.map(#[inline(always)] |stage| (Self::fetch(&blk, (s + 1) * BK), stage));
            Self::multiply(&ready, offsets, &mut acc);
            if let Some((chunks, stage)) = next {
                Self::put(&blk, &stage, chunks);
            }
        });
        let row = |i: usize| row0 + wrow + 4 * lr + 4 * lane_rows * (i / 4) as u32 + (i % 4) as u32;
        let col = |h: usize| col0 + wcol + 4 * lc + 4 * lane_cols * h as u32;
        // SAFETY: `col(h)` is a multiple of 4: `col0 = tx BN` and `wcol`, a multiple of `WN`, are
        // (`BN` and `WN` are multiples of 4 in every configuration), and so are the other terms.
        unsafe { store_results(&g, &acc, row, col) };
    }
}
