//! The shared-memory requests of the SGEMM ladder's top rungs, built lane by lane from the
//! kernels' layouts (the contracts' pitches and swizzles) and handed to the bank model
//! ([`super::banks`]): the wavefronts Nsight Compute should count per instruction, with the
//! layout as built and the plain layout it replaces.
//!
//! - Rung 8, `AsyncCopy` configurations (`sgemm/tuned.rs`): the 64-bit loads of `A` (lane
//!   `(lr, lc)` reads row `lr` of the warp's first rows at two depths; lanes with one `lr` share
//!   the address), rows padded to `bk + 4` floats or not, and the 16-byte `cp.async` writes of
//!   `A`'s tile.
//! - Rung 8, `Registers` configurations (`sgemm/staged.rs`, rung 6's algorithm): the 4-byte
//!   stores of `A` transposed (rows of `bm + 4` floats, or `bm` plain, rung 4's conflict) and
//!   the 128-bit fragment loads of `A` and `B` (lane `(lr, lc)` reads 16 bytes at `4 lr`, or
//!   `4 lc`; lanes with one `lr`, or one `lc`, share the address).
//! - Rung 9 (`sgemm/tensor.rs`): the `ldmatrix.x4` of an `A` fragment (a 16-byte request: lane
//!   `l` gives the row address `l % 8 + 8 ((l / 8) % 2)` at chunk `l / 16`; 8 lanes per phase,
//!   one 8 x 16-byte matrix each), the 32-bit loads of a `B` fragment (lane `l` reads
//!   `B(k = l % 4, n = l / 4)`), and the `cp.async` writes of both tiles, swizzled or not.

use memlab_contracts::sgemm::{Algo, TF32_BK, TF32_TILE, Tuned, swizzle_a, swizzle_b_tf32};

use super::banks::{BankReport, WARP_SIZE, WarpRequest, Width};

/// A layout as the kernel builds it, or the plain one it improves on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Padded (rung 8) or XOR-swizzled (rung 9).
    AsBuilt,
    /// Rows as they lie in global memory: no padding, no swizzle.
    Plain,
}

fn request(width: Width, addr: impl Fn(u64) -> u64) -> BankReport {
    let lanes: [Option<u64>; WARP_SIZE] = std::array::from_fn(|l| Some(addr(l as u64)));
    WarpRequest::new(width, lanes).expect("the kernels' shared accesses are aligned").analyze()
}

/// Rung 8's 64-bit load of `A` at depths `0, 1` of its first row group (warp 0): lane `(lr, lc)`
/// reads row `lr`, padded pitch `bk + 4` or plain `bk`.
pub fn tuned_a_load(cfg: &Tuned, layout: Layout) -> BankReport {
    let pitch = match layout {
        Layout::AsBuilt => cfg.a_pitch(),
        Layout::Plain => cfg.bk,
    } as u64;
    let lane_cols = (cfg.wn / cfg.tn) as u64;
    request(Width::B8, |l| 4 * (l / lane_cols) * pitch)
}

/// Rung 8's 16-byte `cp.async` writes of `A`'s tile by warp 0: chunks `0..32` of the tile
/// (row-major, `bk / 4` per row) at their padded or plain places.
pub fn tuned_a_copy(cfg: &Tuned, layout: Layout) -> BankReport {
    let (chunks_per_row, pitch) = ((cfg.bk / 4) as u64, cfg.a_pitch() as u64);
    request(Width::B16, |l| {
        let (r, c) = (l / chunks_per_row, l % chunks_per_row);
        4 * match layout {
            Layout::AsBuilt => r * pitch + 4 * c,
            Layout::Plain => 4 * l,
        }
    })
}

/// A `Registers` configuration's 4-byte store of element `q = 0` of each thread's first chunk of
/// `A` (warp 0), transposed: thread `t` holds row `t / (bk / 4)`, depths `4 (t % (bk / 4)) ..`,
/// stored at `depth * pitch + row` with the padded pitch `bm + 4` or the plain `bm`.
///
/// # Panics
/// For an `AsyncCopy` configuration (it stores no `A` through registers).
pub fn staged_a_store(cfg: &Tuned, layout: Layout) -> BankReport {
    assert_eq!(cfg.algo, Algo::Registers, "{}", cfg.name);
    let pitch = match layout {
        Layout::AsBuilt => cfg.a_pitch(),
        Layout::Plain => cfg.bm,
    } as u64;
    let per_row = (cfg.bk / 4) as u64;
    request(Width::B4, |t| 4 * (4 * (t % per_row) * pitch + t / per_row))
}

/// A `Registers` configuration's 128-bit fragment load of `A` (`a = true`: lane `(lr, lc)` reads
/// the 4 rows at `4 lr` of depth 0) or of `B` (the 4 columns at `4 lc`), warp 0.
///
/// # Panics
/// For an `AsyncCopy` configuration.
pub fn staged_fragment_load(cfg: &Tuned, a: bool) -> BankReport {
    assert_eq!(cfg.algo, Algo::Registers, "{}", cfg.name);
    let lane_cols = (cfg.wn / cfg.tn) as u64;
    request(Width::B16, |l| 16 * if a { l / lane_cols } else { l % lane_cols })
}

/// Where chunk `(r, c)` of rung 9's `A` tile (rows of [`TF32_BK`] floats) lies, floats.
fn tf32_a_place(r: u64, c: u64, layout: Layout) -> u64 {
    let flat = (r * (TF32_BK / 4) as u64 + c) as u32;
    4 * match layout {
        Layout::AsBuilt => swizzle_a(flat),
        Layout::Plain => flat,
    } as u64
}

/// Where chunk `(r, c)` of rung 9's `B` tile (rows of [`TF32_TILE`] floats) lies, floats.
fn tf32_b_place(r: u64, c: u64, layout: Layout) -> u64 {
    r * TF32_TILE as u64
        + 4 * match layout {
            Layout::AsBuilt => swizzle_b_tf32(r as u32, c as u32) as u64,
            Layout::Plain => c,
        }
}

/// Rung 9's `ldmatrix.x4` of the `A` fragment at rows `0..16`, depths `0..8` (`ks = 0`).
pub fn tf32_ldmatrix(layout: Layout) -> BankReport {
    request(Width::B16, |l| 4 * tf32_a_place(l % 8 + 8 * ((l / 8) % 2), l / 16, layout))
}

/// Rung 9's 32-bit load of the `B` fragment's first register at columns `0..8`: lane `l`
/// reads `B(k = l % 4, n = l / 4)`.
pub fn tf32_b_load(layout: Layout) -> BankReport {
    request(Width::B4, |l| {
        let (k, n) = (l % 4, l / 4);
        4 * (tf32_b_place(k, n / 4, layout) + n % 4)
    })
}

/// Rung 9's 16-byte `cp.async` writes by warp 0 of the `A` tile (`a = true`) or the `B` tile:
/// thread `t` copies chunk `t` (then `t + 256`, the same pattern one tile further).
pub fn tf32_copy(a: bool, layout: Layout) -> BankReport {
    request(Width::B16, |l| {
        4 * if a {
            let per_row = (TF32_BK / 4) as u64;
            tf32_a_place(l / per_row, l % per_row, layout)
        } else {
            let per_row = (TF32_TILE / 4) as u64;
            tf32_b_place(l / per_row, l % per_row, layout)
        }
    })
}

/// Wavefronts and conflicts of the shared loads of one warp step of rung 9 (8 `ldmatrix.x4`
/// of `A`, 16 32-bit loads of `B`) in `layout`.
pub fn tf32_step(layout: Layout) -> (u64, u64) {
    let (ldsm, b) = (tf32_ldmatrix(layout), tf32_b_load(layout));
    let per_step = |f: fn(&BankReport) -> u32| 8 * f(&ldsm) as u64 + 16 * f(&b) as u64;
    (per_step(|r| r.wavefronts), per_step(|r| r.conflicts))
}

/// Warp steps of rung 9 over `m x n x k`: blocks (`ceil(n / 128) ceil(m / 128)`) x 8 warps x
/// `ceil(k / 16)` steps.
pub fn tf32_warp_steps(m: u64, n: u64, k: u64) -> u64 {
    let tile = u64::from(TF32_TILE);
    n.div_ceil(tile) * m.div_ceil(tile) * 8 * k.div_ceil(u64::from(TF32_BK))
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlab_contracts::sgemm::TUNED;

    /// (wavefronts, conflicts).
    fn wc(r: BankReport) -> (u32, u32) {
        (r.wavefronts, r.conflicts)
    }

    #[test]
    fn rung_9_swizzles_make_ldmatrix_b_loads_and_copies_conflict_free() {
        // ldmatrix.x4: 4 phases of 8 rows x 16 bytes. Plain, the 8 rows of 64 bytes fall on two
        // groups of 4 banks, 4 rows each: 4 wavefronts per phase.
        assert_eq!(wc(tf32_ldmatrix(Layout::AsBuilt)), (4, 0));
        assert_eq!(wc(tf32_ldmatrix(Layout::Plain)), (16, 12));
        // B fragment: 4 rows of 128 floats x 8 columns. Plain, 8 banks hold 4 words each.
        assert_eq!(wc(tf32_b_load(Layout::AsBuilt)), (1, 0));
        assert_eq!(wc(tf32_b_load(Layout::Plain)), (4, 3));
        // The cp.async writes: 32 chunks, 4 wavefronts at best, either way (the swizzles permute
        // chunks inside 128-byte lines).
        for a in [true, false] {
            for layout in [Layout::AsBuilt, Layout::Plain] {
                assert_eq!(wc(tf32_copy(a, layout)), (4, 0), "a {a}, {layout:?}");
            }
        }
    }

    #[test]
    fn rung_8_padding_makes_its_a_loads_conflict_free_in_every_async_configuration() {
        for cfg in TUNED.iter().filter(|c| c.algo == Algo::AsyncCopy) {
            // 8-byte loads: lanes of one row share the address, so lane pairs merge and one
            // phase serves the warp; the padded rows' words fall in distinct banks.
            assert_eq!(wc(tuned_a_load(cfg, Layout::AsBuilt)), (1, 0), "{}", cfg.name);
            // The padding's price: a phase of 8 lanes writes 8 chunks of rows `bk + 4` apart,
            // which for bk = 8 and 16 wraps one chunk onto the first's banks (2-way); rows of
            // 36 floats do not. Unpadded the writes are contiguous, 1 wavefront per phase.
            let copy = if cfg.bk >= 32 { (4, 0) } else { (8, 4) };
            assert_eq!(wc(tuned_a_copy(cfg, Layout::AsBuilt)), copy, "{}", cfg.name);
            assert_eq!(wc(tuned_a_copy(cfg, Layout::Plain)), (4, 0), "{}", cfg.name);
            // Unpadded, rows of 16 or 32 floats put 2 to 8 rows on one bank pair; rows of 8
            // floats (bk = 8) reach 4 distinct bank pairs without padding.
            let plain = tuned_a_load(cfg, Layout::Plain);
            assert_eq!(plain.conflicts > 0, cfg.bk >= 16, "{}: {plain:?}", cfg.name);
        }
        // 8 lanes per row, 4 rows 16 floats apart: two rows per bank pair.
        let cfg = TUNED.iter().find(|c| c.name == "sgemm_8_128x128x16_w32x64_t8x8_s2").unwrap();
        assert_eq!(wc(tuned_a_load(cfg, Layout::Plain)), (2, 1));
        // 4 lanes per row, 8 rows 32 floats apart: all on one bank pair.
        let cfg = TUNED.iter().find(|c| c.name == "sgemm_8_64x64x32_w32x32_t4x8_s2").unwrap();
        assert_eq!(wc(tuned_a_load(cfg, Layout::Plain)), (8, 7));
    }

    #[test]
    fn registers_configurations_store_a_and_load_fragments_at_the_minimum() {
        let registers: Vec<&Tuned> = TUNED.iter().filter(|c| c.algo == Algo::Registers).collect();
        assert!(registers.len() >= 5);
        for cfg in registers {
            // Two threads per row of A (bk = 8): depths 0 and 4, 4 rows of the pitch apart, which
            // the padding puts 16 banks apart; plain, 4 * bm floats is a multiple of 32 banks.
            assert_eq!(wc(staged_a_store(cfg, Layout::AsBuilt)), (1, 0), "{}", cfg.name);
            assert_eq!(wc(staged_a_store(cfg, Layout::Plain)), (2, 1), "{}", cfg.name);
            // 16-byte loads of at most 8 distinct chunks (128 contiguous bytes), the rest
            // broadcast: one wavefront per quarter-warp phase that has a new address.
            for a in [true, false] {
                let r = staged_fragment_load(cfg, a);
                assert_eq!(r.conflicts, 0, "{}: a {a}, {r:?}", cfg.name);
            }
        }
        // Rung 6's configuration. A: lanes 8 i .. 8 i + 7 share a row group, so lane pairs
        // merge and two phases of 16 lanes read 2 chunks each. B: 8 lane columns, 128
        // contiguous bytes in each of the 4 phases of 8 lanes.
        let rung6 = TUNED.iter().find(|c| c.name == "sgemm_8_128x128x8_w32x64_t8x8_regs").unwrap();
        assert_eq!(wc(staged_fragment_load(rung6, true)), (2, 0));
        assert_eq!(wc(staged_fragment_load(rung6, false)), (4, 0));
    }

    #[test]
    fn rung_9_model_gives_the_wavefronts_ncu_measured_on_the_h200() {
        let doc = include_str!("../../../docs/measurements/sgemm.md");
        let rows: Vec<Vec<&str>> = doc
            .lines()
            .filter(|l| l.starts_with("| ") && l.contains("| sgemm_9"))
            .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
            .collect();
        assert_eq!(rows.len(), 4);
        for row in rows {
            let n = |i: usize| row[i].parse::<u64>().unwrap();
            let dims: Vec<u64> = row[0].split('x').map(|d| d.parse().unwrap()).collect();
            let (m, nn, k) = (dims[0], dims[1], dims[2]);
            let warp_steps = tf32_warp_steps(m, nn, k);
            let layout = if row[1].ends_with("unswizzled") { Layout::Plain } else { Layout::AsBuilt };
            let (wavefronts, conflicts) = tf32_step(layout);
            assert_eq!(n(2), warp_steps, "{row:?}");
            assert_eq!(n(3), 8 * warp_steps, "{row:?}: ncu's ldmatrix count");
            // The model's columns are this model's figures...
            assert_eq!((n(5), n(7)), (wavefronts * warp_steps, conflicts * warp_steps), "{row:?}");
            // ... and ncu's are within 0.05% of them.
            for (measured, model) in [(n(4), n(5)), (n(6), n(7))] {
                assert!(measured.abs_diff(model) as f64 <= 5e-4 * model.max(1) as f64, "{row:?}");
            }
        }
    }
}
