//! The size facts several lessons share, and byte counts as a reader reads them.

/// The shape of the GEMM load-counting runs (the matmul and cluster lessons): small, and a
/// multiple of neither tile.
pub const GEMM_COUNT_SIZE: (usize, usize, usize) = (67, 45, 33);

/// Sizes every GEMM rung is checked on, element by element: not multiples of 4 (scalar paths), and
/// multiples of 4 that are not multiples of the tiles (128-bit interior, guarded edges), with
/// `k` not a multiple of the depth step 8 (a last step that is partial inside full tiles).
pub const ODD_GEMM_SIZES: [(usize, usize, usize); 2] = [(517, 389, 263), (388, 260, 204)];

/// A byte count as `12 KiB`, `1.5 MiB`, `192 MiB`.
pub fn bytes(b: usize) -> String {
    let (v, unit) = match b {
        b if b >= 1 << 30 => (b as f64 / (1u64 << 30) as f64, "GiB"),
        b if b >= 1 << 20 => (b as f64 / (1 << 20) as f64, "MiB"),
        b if b >= 1 << 10 => (b as f64 / (1 << 10) as f64, "KiB"),
        b => (b as f64, "B"),
    };
    if v.fract() == 0.0 { format!("{v:.0} {unit}") } else { format!("{v:.1} {unit}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_read_as_binary_units() {
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(6144), "6 KiB");
        assert_eq!(bytes(3 << 19), "1.5 MiB");
        assert_eq!(bytes(192 << 20), "192 MiB");
        assert_eq!(bytes(100), "100 B");
    }
}
