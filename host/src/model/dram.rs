//! DRAM granularity below the 32-byte sector: what a strided read costs once every lane has a
//! sector of its own.
//!
//! The sector model ([`super::coalescing`]) stops falling at stride 8 (lanes 32 bytes apart):
//! one 32-byte sector per 4-byte load, 1/8 of stride 1. The H200 keeps falling, to 0.068,
//! 0.057 and 0.040 of stride 1 at strides 16, 32 and 64. Two measured mechanisms explain it,
//! both read with Nsight Compute on the H200 (`strided_read` over 1 GiB, `docs/measurements/dram.md`):
//!
//! 1. **64-byte DRAM fetches.** Past stride 8, `lts__t_sectors_srcunit_tex_op_read_lookup_miss`
//!    is exactly twice `lts__t_sectors_srcunit_tex_op_read` and `dram__bytes_read` is 64 bytes
//!    per requested sector: an L2 miss reads the sector's 64-byte pair from HBM. From stride 16
//!    on, each 4-byte load costs 64 DRAM bytes ([`DRAM_FETCH_BYTES`]).
//! 2. **Locality of fetches in a 256-byte block.** The DRAM throughput of those fetches falls
//!    as they spread out: `dram__bytes_read` over the kernel time was 4.30 TB/s with every
//!    64-byte piece of each 256-byte block fetched (stride 16), 3.57 TB/s with two of four
//!    (stride 32) and 2.53 TB/s with one (stride 64). A fetch costs a fixed part plus a part
//!    shared by the fetches of its block, `c0 + c1 / k` for `k` fetches per block; the two
//!    ends calibrate `c0` and `c1` ([`DramLocality::H200`]) and the middle point is predicted
//!    within 3% (3.49 TB/s). The cost stops growing at 256 bytes: strides of 64 to 80 words
//!    (256 to 320 bytes) measured the same, and 512 bytes only 4% slower
//!    ([`DRAM_BLOCK_BYTES`]). The buffer size (256 MiB to 16 GiB) changed nothing, so TLB
//!    reach is not the cause. NVIDIA does not document this block; it is a measured H200 fact,
//!    consistent with DRAM row-buffer locality.

/// Bytes HBM delivers per L2 miss on the H200: the 32-byte sector and its pair (measured on the
/// H200 with Nsight Compute: L2 miss sectors = 2 x requested sectors past stride 8).
pub const DRAM_FETCH_BYTES: u64 = 64;

/// The block within which 64-byte fetches share their cost (measured on the H200: the useful
/// bandwidth of a strided read no longer changes between 256 and 320 bytes apart).
pub const DRAM_BLOCK_BYTES: u64 = 256;

/// DRAM throughput of 64-byte fetches at the two ends of locality, TB/s of DRAM bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DramLocality {
    /// Every fetch of each [`DRAM_BLOCK_BYTES`] block wanted (4 of 4).
    pub dense_tbs: f64,
    /// One fetch per block.
    pub isolated_tbs: f64,
}

impl DramLocality {
    /// Measured on the H200 with Nsight Compute, `dram__bytes_read.sum` over
    /// `gpu__time_duration.sum` of `strided_read` at strides 16 (1073.8 MB in 249.8 us) and 64
    /// (268.5 MB in 106.3 us): `docs/measurements/dram.md`.
    pub const H200: DramLocality = DramLocality { dense_tbs: 4.298, isolated_tbs: 2.526 };

    /// Time per DRAM byte, in ps, when `k` fetches (1..=4) share a block: `c0 + c1 / k`.
    pub fn ps_per_byte(&self, k: f64) -> f64 {
        let full = (DRAM_BLOCK_BYTES / DRAM_FETCH_BYTES) as f64;
        let (dense, isolated) = (1.0 / self.dense_tbs, 1.0 / self.isolated_tbs);
        let c1 = (isolated - dense) / (1.0 - 1.0 / full);
        let c0 = dense - c1 / full;
        c0 + c1 / k.clamp(1.0, full)
    }

    /// DRAM throughput, TB/s, when `k` fetches share a block.
    pub fn tbs(&self, k: f64) -> f64 {
        1.0 / self.ps_per_byte(k)
    }
}

/// DRAM bytes one element costs when lanes read `elem_bytes` elements `stride` elements apart
/// over a large buffer: the distance between elements while it is under a fetch (every fetch is
/// then read whole and shared), one fetch per element beyond.
///
/// # Panics
/// If `elem_bytes` or `stride` is 0.
pub fn bytes_per_element(elem_bytes: u64, stride: u64) -> u64 {
    assert!(elem_bytes > 0 && stride > 0, "element size and stride are at least 1");
    (elem_bytes * stride).min(DRAM_FETCH_BYTES).max(elem_bytes)
}

/// Fetches per [`DRAM_BLOCK_BYTES`] block for the same read (fractional: the average over the
/// blocks), between 1 and 4.
pub fn fetches_per_block(elem_bytes: u64, stride: u64) -> f64 {
    let apart = (elem_bytes * stride).max(DRAM_FETCH_BYTES);
    (DRAM_BLOCK_BYTES as f64 / apart as f64).clamp(1.0, (DRAM_BLOCK_BYTES / DRAM_FETCH_BYTES) as f64)
}

/// Useful bandwidth of a strided read relative to stride 1 under this model: the DRAM bytes
/// per useful byte, times the DRAM throughput at that locality against dense fetches.
pub fn strided_fraction(elem_bytes: u64, stride: u64, dram: &DramLocality) -> f64 {
    let bytes = elem_bytes as f64 / bytes_per_element(elem_bytes, stride) as f64;
    let dense = fetches_per_block(elem_bytes, 1);
    bytes * dram.tbs(fetches_per_block(elem_bytes, stride)) / dram.tbs(dense)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetches_are_shared_until_lanes_are_64_bytes_apart() {
        assert_eq!(bytes_per_element(4, 1), 4);
        assert_eq!(bytes_per_element(4, 8), 32);
        assert_eq!(bytes_per_element(4, 16), 64);
        assert_eq!(bytes_per_element(4, 64), 64);
        assert_eq!(bytes_per_element(16, 1), 16);
        assert_eq!(fetches_per_block(4, 16), 4.0);
        assert_eq!(fetches_per_block(4, 32), 2.0);
        assert_eq!(fetches_per_block(4, 64), 1.0);
        assert_eq!(fetches_per_block(4, 512), 1.0);
    }

    #[test]
    fn the_two_calibration_points_predict_the_middle_one() {
        let d = DramLocality::H200;
        assert!((d.tbs(4.0) - d.dense_tbs).abs() < 1e-9);
        assert!((d.tbs(1.0) - d.isolated_tbs).abs() < 1e-9);
        // Measured at stride 32 (two fetches of four): 536.9 MB in 150.2 us.
        let measured = 536.9e6 / 150.2e-6 / 1e12;
        assert!((d.tbs(2.0) / measured - 1.0).abs() < 0.03, "{} vs {measured}", d.tbs(2.0));
    }

    #[test]
    fn up_to_stride_8_the_model_is_the_sector_model() {
        for stride in [1, 2, 4, 8] {
            let sectors = crate::model::coalescing::bandwidth_fraction_vs_unit_stride(
                4,
                stride,
                crate::model::coalescing::TransactionModel::Sector32,
            );
            assert_eq!(strided_fraction(4, stride, &DramLocality::H200), sectors);
        }
    }
}
