//! The shared-memory requests of the SGEMM ladder's top rungs, built lane by lane from the
//! kernels' layouts (the contracts' pitches and swizzles) and handed to the bank model
//! ([`super::banks`]): the wavefronts Nsight Compute should count per instruction, with the
//! layout as built and the plain layout it replaces.
//!
//! - Rung 8 (`sgemm/tuned.rs`): the 64-bit loads of `A` (lane `(lr, lc)` reads row `lr` of the
//!   warp's first rows at two depths; lanes with one `lr` share the address), rows padded to
//!   `bk + 4` floats or not, and the 16-byte `cp.async` writes of `A`'s tile.
//! - Rung 9 (`sgemm/tensor.rs`): the `ldmatrix.x4` of an `A` fragment (a 16-byte request: lane
//!   `l` gives the row address `l % 8 + 8 ((l / 8) % 2)` at chunk `l / 16`; 8 lanes per phase,
//!   one 8 x 16-byte matrix each), the 32-bit loads of a `B` fragment (lane `l` reads
//!   `B(k = l % 4, n = l / 4)`), and the `cp.async` writes of both tiles, swizzled or not.

use memlab_contracts::sgemm::{TF32_BK, TF32_TILE, Tuned, swizzle_a, swizzle_b_tf32};

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
    fn rung_8_padding_makes_its_a_loads_conflict_free_in_every_configuration() {
        for cfg in TUNED {
            // 8-byte loads: 2 phases of 16 lanes; lanes of one row share the address.
            assert_eq!(wc(tuned_a_load(cfg, Layout::AsBuilt)), (2, 0), "{}", cfg.name);
            assert_eq!(wc(tuned_a_copy(cfg, Layout::AsBuilt)), (4, 0), "{}", cfg.name);
            let plain = tuned_a_load(cfg, Layout::Plain);
            assert!(plain.conflicts > 0, "{}: {plain:?}", cfg.name);
        }
        // 8 lanes per row, 4 rows 16 floats apart: two rows per group of banks.
        let cfg = TUNED.iter().find(|c| c.name == "sgemm_8_128x128x16_w32x64_t8x8_s2").unwrap();
        assert_eq!(wc(tuned_a_load(cfg, Layout::Plain)), (4, 2));
    }
}
