//! Rung 8, the tuned rung (compiled for `sm_80` and up): one generic kernel over its tile
//! parameters, compiled once per configuration of `memlab_contracts::tuned_configs!`, each its
//! own entry (`sgemm_8_<bm>x<bn>x<bk>_w<wm>x<wn>_t<tm>x<tn>_s<stages>`). `memlab autotune` times
//! them and records the fastest per compute capability and shape class.
//!
//! Both operands go global -> shared by `cp.async` (no staging registers, no transposing
//! stores), `STAGES` deep. `A` is therefore stored as it lies in memory, `bm` rows of `bk`
//! floats, and read by columns: at depth `d` the lanes of a warp read `A` in `wm / tm`
//! consecutive rows. Lane `(lr, lc)` of a warp owns rows `lr + (wm / tm) i` and columns
//! `4 lc + 4 (wn / tn) h + j` of the warp's tile: per 4 depths a thread reads each of its rows
//! once as one 128-bit load (4 depths of that row), and per depth its `B` columns as `tn / 4`
//! 128-bit loads. Rows are padded to `bk + 4` floats, so that consecutive rows start 5 chunks of
//! 16 bytes apart, in different groups of 4 banks (`memlab banks` predicts 1 wavefront per
//! load; unpadded, rows 4 chunks apart share banks two by two).

use super::{Gemm, unrolled};
use super::copy::{Matrix, pipeline};
use crate::device::{block_idx_x, block_idx_y, dynamic_shared, fma, load2, load4, store4, thread_idx_x};

/// The body of every configuration of rung 8: a `BM x BN` tile of `C` per block, `BK` deep
/// steps, `WM x WN` per warp, `TM x TN` per thread, `STAGES` stages.
///
/// # Safety
/// Buffers as in the module doc of `sgemm`, each 16-byte aligned; block of `32 (BM / WM)
/// (BN / WN)` threads, grid `(ceil(n / BN), ceil(m / BM))`, `Tuned::smem_bytes` dynamic shared
/// bytes.
#[inline(always)]
unsafe fn tuned<
    const BM: u32,
    const BN: u32,
    const BK: u32,
    const WM: u32,
    const WN: u32,
    const TM: usize,
    const TN: usize,
    const STAGES: u32,
>(
    g: Gemm,
) {
    let threads = 32 * (BM / WM) * (BN / WN);
    let (lane_rows, lane_cols) = (WM / TM as u32, WN / TN as u32);
    let pitch = BK + 4;
    let stage_floats = BM * pitch + BK * BN;
    let t = thread_idx_x();
    let (w, l) = (t / 32, t % 32);
    let (lr, lc) = (l / lane_cols, l % lane_cols);
    let (wrow, wcol) = ((w / (BN / WN)) * WM, (w % (BN / WN)) * WN);
    let (row0, col0) = (block_idx_y() * BM, block_idx_x() * BN);
    let a = Matrix { ptr: g.a, rows: g.m, cols: g.k };
    let b = Matrix { ptr: g.b, rows: g.k, cols: g.n };
    let stage = |i: u32| unsafe { dynamic_shared::<f32>().add((i * stage_floats) as usize) };
    let mut acc = [[0.0f32; TN]; TM];
    let fill = |st: u32, s: u32| {
        let (a_s, k0) = (stage(st), s * BK);
        unsafe {
            a.copy_tile(a_s, (BM, BK), (row0, k0), (t, threads), |r, c| r * pitch + 4 * c);
            b.copy_tile(a_s.add((BM * pitch) as usize), (BK, BN), (k0, col0), (t, threads), |r, c| r * BN + 4 * c);
        }
    };
    let compute = |st: u32| {
        // The thread's first row of A and first column of B in this stage.
        let a_s = unsafe { stage(st).add(((wrow + lr) * pitch) as usize) };
        let b_s = unsafe { stage(st).add((BM * pitch + wcol + 4 * lc) as usize) };
        unrolled(BK as usize / 2, |kp| {
            let kp = kp as u32;
            let mut a2 = [[0.0f32; 2]; TM];
            unrolled(TM, |i| {
                a2[i] = unsafe { load2(a_s.add((i as u32 * lane_rows * pitch + 2 * kp) as usize)) };
            });
            unrolled(2, |d| {
                let mut bv = [0.0f32; TN];
                unrolled(TN / 4, |h| {
                    let v = unsafe { load4(b_s.add(((2 * kp + d as u32) * BN + 4 * lane_cols * h as u32) as usize)) };
                    unrolled(4, |j| bv[4 * h + j] = v[j]);
                });
                unrolled(TM, |i| unrolled(TN, |j| acc[i][j] = fma(a2[i][d], bv[j], acc[i][j])));
            });
        });
    };
    unsafe { pipeline::<STAGES>(g.k.div_ceil(BK), fill, compute) };
    unrolled(TM, |i| {
        let row = row0 + wrow + lr + lane_rows * i as u32;
        unrolled(TN / 4, |h| {
            let col = col0 + wcol + 4 * lc + 4 * lane_cols * h as u32;
            let v = [acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]];
            // With n a multiple of 4, a chunk that starts inside a row ends inside it.
            if g.n % 4 == 0 && row < g.m && col < g.n {
                unsafe { store4(g.c.add((row * g.n + col) as usize), v) };
            } else {
                unrolled(4, |q| unsafe { g.store_c(row, col + q as u32, v[q]) });
            }
        });
    });
}

/// One entry per configuration of [`memlab_contracts::tuned_configs!`].
macro_rules! tuned_entries {
    ($($name:ident = ($bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $tm:literal, $tn:literal, $s:literal)),* $(,)?) => {$(
        #[doc = concat!(
            "Rung 8 with a `", $bm, " x ", $bn, "` tile of `C`, depth ", $bk, ", `", $wm, " x ", $wn,
            "` per warp, `", $tm, " x ", $tn, "` per thread, ", $s, " stages (see the module doc).\n\n",
            "- Launch: block `32 (", $bm, " / ", $wm, ") (", $bn, " / ", $wn, ")` threads, grid `(ceil(n / ", $bn,
            "), ceil(m / ", $bm, "))`.\n",
            "- Shared memory: `", $s, " * (", $bm, " * (", $bk, " + 4) + ", $bk, " * ", $bn, ") * 4` dynamic bytes.\n",
            "- Memory level: both tiles global -> shared by `cp.async` (`LDGSTS`), accumulators in registers. ",
            "Needs cc 8.0 (PTX ISA, \"cp.async\").\n\n# Safety\nBuffers as in the module doc of `sgemm`, each 16-byte aligned."
        )]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
            unsafe { tuned::<$bm, $bn, $bk, $wm, $wn, $tm, $tn, $s>(Gemm { a, b, c, m, n, k }) }
        }
    )*};
}
memlab_contracts::tuned_configs!(tuned_entries);
