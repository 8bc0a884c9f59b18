//! Rung 8, the tuned rung (compiled for `sm_80` and up): one generic kernel over its tile
//! parameters, compiled once per configuration of `memlab_contracts::tuned_configs!`, each its
//! own entry (`sgemm_8_<bm>x<bn>x<bk>_w<wm>x<wn>_t<tm>x<tn>_s<stages>`). `memlab autotune` times
//! them and records the fastest per compute capability and shape class.
//!
//! Both operands go global -> shared by `cp.async` (no staging registers, no transposing
//! stores), `STAGES` deep. `A` is therefore stored as it lies in memory, `bm` rows of `bk`
//! floats, and read by columns: at depth `d` the lanes of a warp read `A` in `wm / tm`
//! consecutive rows. Lane `(lr, lc)` of a warp owns rows `lr + (wm / tm) i` and columns
//! `4 lc + 4 (wn / tn) h + j` of the warp's tile: per 2 depths a thread reads each of its rows
//! once as one 64-bit load (2 depths of that row), and per depth its `B` columns as `tn / 4`
//! 128-bit loads. Rows are padded to `bk + 4` floats, so that the rows a warp reads start in
//! different pairs of banks (`memlab banks` predicts 1 wavefront per load; unpadded, rows of 16
//! or 32 floats put 2 to 8 rows on one pair of banks, `host/src/model/gemm_tiles.rs`).

use super::copy::copy_tile;
use super::{Gemm, Tiles, store_results, unrolled};
use crate::device::ring::{AsyncWrite, Filling, Ready, Ring};
use crate::device::{Block, GlobalIn, GlobalOut, block_idx_x, block_idx_y, fma, kernel, thread_idx_x};

tiles_impl! {
/// The body of every `AsyncCopy` configuration of rung 8: a `BM x BN` tile of `C` per block,
/// `BK` deep steps, `WM x WN` per warp, `TM x TN` per thread, `STAGES` stages. Launch contract
/// (`device::gemm`, `device::ring`): buffers as in the module doc of `sgemm`, each 16-byte
/// aligned; block of `32 (BM / WM) (BN / WN)` threads, grid `(ceil(n / BN), ceil(m / BM))`,
/// `Tuned::smem_bytes` dynamic shared bytes.
#[inline(always)]
fn async_copy(block: Block, g: Gemm) {
    let threads = Self::THREADS;
    let (lane_rows, lane_cols) = (WM / TM as u32, WN / TN as u32);
    let pitch = BK + 4;
    let stage_floats = BM * pitch + BK * BN;
    let t = thread_idx_x();
    let (w, l) = (t / 32, t % 32);
    let (lr, lc) = (l / lane_cols, l % lane_cols);
    let (wrow, wcol) = ((w / (BN / WN)) * WM, (w % (BN / WN)) * WN);
    let (row0, col0) = (block_idx_y() * BM, block_idx_x() * BN);
    let (a, b) = (g.a_source(), g.b_source());
    // `stage_floats` is a multiple of 4 (`pitch` and `BN` are), as `carve` asks.
    let ring = Ring::<STAGES>::carve(block, stage_floats);
    let mut acc = [[0.0f32; TN]; TM];
    let fill = |stage: &Filling<'_, AsyncWrite>, s: u32| {
        let k0 = s * BK;
        // SAFETY: `t < threads` (the launch's block); chunk `(r, c)` of the `BM x BK` tile goes
        // to `r pitch + 4 c`, inside the stage's `A` tile (`4 c + 4 <= BK < pitch`), and chunk
        // `(r, c)` of the `BK x BN` tile to `BM pitch + r BN + 4 c`, inside its `B` tile:
        // multiples of 4 floats.
        unsafe {
            copy_tile(&a, stage.at(0), (BM, BK), (row0, k0), (t, threads), |r, c| r * pitch + 4 * c);
            copy_tile(&b, stage.at(BM * pitch), (BK, BN), (k0, col0), (t, threads), |r, c| r * BN + 4 * c);
        }
    };
    let compute = |stage: &Ready<'_>| {
        // The thread's first row of A and first column of B in this stage.
        // SAFETY: row `wrow + lr < BM` of the stage's `A` tile.
        let a_s = unsafe { stage.at((wrow + lr) * pitch) };
        // SAFETY: column `wcol + 4 lc < BN` of the stage's `B` tile.
        let b_s = unsafe { stage.at(BM * pitch + wcol + 4 * lc) };
        unrolled(BK as usize / 2, |kp| {
            let kp = kp as u32;
            let mut a2 = [[0.0f32; 2]; TM];
            unrolled(TM, |i| {
                // SAFETY: row `wrow + lr + lane_rows i < wrow + WM <= BM` (`lr < lane_rows`,
                // `i < TM`), columns `2 kp .. + 2 <= BK`: inside the `A` tile, 8-byte aligned.
                a2[i] = unsafe { a_s.add(i as u32 * lane_rows * pitch + 2 * kp) }.load2();
            });
            unrolled(2, |d| {
                let mut bv = [0.0f32; TN];
                unrolled(TN / 4, |h| {
                    // SAFETY: depth `2 kp + d < BK`, columns `wcol + 4 lc + 4 lane_cols h .. + 4 <=
                    // wcol + WN <= BN` (`lc < lane_cols`, `h < TN / 4`): inside the `B` tile,
                    // 16-byte aligned.
                    let v = unsafe { b_s.add((2 * kp + d as u32) * BN + 4 * lane_cols * h as u32) }.load4();
                    unrolled(4, |j| bv[4 * h + j] = v[j]);
                });
                unrolled(TM, |i| unrolled(TN, |j| acc[i][j] = fma(a2[i][d], bv[j], acc[i][j])));
            });
        });
    };
    ring.pipeline(g.k.div_ceil(BK), fill, compute);
    let row = |i: usize| row0 + wrow + lr + lane_rows * i as u32;
    let col = |h: usize| col0 + wcol + 4 * lc + 4 * lane_cols * h as u32;
    // SAFETY: `col(h)` is a multiple of 4: `col0 = block_idx_x() BN` and `wcol`, a multiple of
    // `WN`, are (`BN` and `WN` are multiples of 4 in every configuration), and so are the others.
    unsafe { store_results(&g, &acc, row, col) };
}
}

/// One entry per configuration of [`memlab_contracts::tuned_configs!`]: `AsyncCopy` ones run
/// [`Tiles::async_copy`], `Registers` ones `Tiles::registers` (`staged.rs`).
macro_rules! tuned_entries {
    ($($name:ident = $algo:ident ($bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $tm:literal, $tn:literal, $s:literal)),* $(,)?) => {$(
        kernel! {
            #[doc = concat!(
                "Rung 8 with a `", $bm, " x ", $bn, "` tile of `C`, depth ", $bk, ", `", $wm, " x ", $wn,
                "` per warp, `", $tm, " x ", $tn, "` per thread, ", $s, " stages filled as `Algo::", stringify!($algo),
                "` says (`memlab_contracts::sgemm::Algo`; the module docs of `tuned` and `staged`).\n\n",
                "- Launch: block `32 (", $bm, " / ", $wm, ") (", $bn, " / ", $wn, ")` threads, grid `(ceil(n / ", $bn,
                "), ceil(m / ", $bm, "))`.\n",
                "- Shared memory: the configuration's `Tuned::smem_bytes` dynamic bytes.\n",
                "- Memory level: shared tiles (by `cp.async` or through registers), accumulators in registers. ",
                "In the sm_80 and sm_90 PTX.\n- Buffers: as in the module doc of `sgemm`, each 16-byte aligned."
            )]
            pub fn $name(block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32) {
                let g = Gemm::new(a, b, c, m, n, k);
                tuned_entries!(@body $algo block g ($bm, $bn, $bk, $wm, $wn, $tm, $tn, $s));
            }
        }
    )*};
    (@body AsyncCopy $block:ident $g:ident ($bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $tm:literal, $tn:literal, $s:literal)) => {
        Tiles::<$bm, $bn, $bk, $wm, $wn, $tm, $tn, $s>::async_copy($block, $g)
    };
    (@body Registers $block:ident $g:ident ($bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $tm:literal, $tn:literal, $s:literal)) => {
        Tiles::<$bm, $bn, $bk, $wm, $wn, $tm, $tn, $s>::registers($block, $g)
    };
}
memlab_contracts::tuned_configs!(tuned_entries);
