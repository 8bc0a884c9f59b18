//! The problem sizes and repeat counts of one run, and the size facts several lessons share.

use memlab_contracts::clusters::CLUSTER_SIZES;

use crate::gpu::timing::Repeats;

/// 16-byte reads per thread of `cluster_shared_read` by default: enough that the reads, not the
/// launch, set the time (the clusters lesson and the hierarchy's distributed-shared-memory row).
pub const CLUSTER_READ_ITERS: u32 = 4096;

/// Shared-memory loads per thread of the bank probe by default: a multiple of its unroll (8).
pub const BANK_ITERS: u32 = 16384;

/// The shape of the GEMM load-counting runs (the matmul and cluster lessons): small, and a
/// multiple of neither tile.
pub const GEMM_COUNT_SIZE: (usize, usize, usize) = (67, 45, 33);

/// Sizes every GEMM rung is checked on, element by element: not multiples of 4 (scalar paths), and
/// multiples of 4 that are not multiples of the tiles (128-bit interior, guarded edges), with
/// `k` not a multiple of the depth step 8 (a last step that is partial inside full tiles).
pub const ODD_GEMM_SIZES: [(usize, usize, usize); 2] = [(517, 389, 263), (388, 260, 204)];

/// Problem sizes and repeat counts of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizes {
    /// Transpose and copy matrix, `(rows, cols)`.
    pub transpose: (usize, usize),
    /// Matrices `(rows, cols)` the transpose demo also sweeps copy and the transposes over
    /// (`run-demos --sizes`; empty: no sweep).
    pub sweep: Vec<(usize, usize)>,
    /// Matmul shape `(m, n, k)` for the tiled kernels.
    pub matmul: (usize, usize, usize),
    /// Matmul shape for the naive kernel (slow at large sizes).
    pub matmul_naive: (usize, usize, usize),
    /// SGEMM ladder shapes `(m, n, k)`, each timed next to cuBLAS.
    pub sgemm: Vec<(usize, usize, usize)>,
    /// Tensor-core ladder shapes `(m, n, k)`, each timed next to cuBLAS BF16.
    pub tensor: Vec<(usize, usize, usize)>,
    /// Bytes spanned by the strided-read buffer (the coalescing demo).
    pub strided_bytes: usize,
    /// Bytes of the hierarchy's DRAM read, a buffer far larger than L2 (a multiple of 16).
    pub dram_bytes: usize,
    /// Shared-memory loads per thread in the bank probe (a multiple of 8).
    pub bank_iters: usize,
    /// 16-byte reads per thread of `cluster_shared_read` (a multiple of 8; the clusters demo
    /// and the hierarchy's distributed-shared-memory row).
    pub cluster_reads: u32,
    /// Blocks per cluster the clusters demo sweeps (each 1 to 16).
    pub cluster_sizes: Vec<u32>,
    /// Bytes of the L2 lesson's streamed buffer (a multiple of 16), read once amid the hot one.
    pub l2_stream_bytes: usize,
    /// Bytes of the L2 lesson's bandwidth read (a multiple of 16); `None`: a quarter of the L2.
    pub l2_read_bytes: Option<usize>,
    /// SMs the L2 partition probe times (the first SM numbers); `None`: every SM.
    pub l2_partition_sms: Option<u32>,
    /// Warm-up and timed runs per kernel.
    pub repeats: Repeats,
    /// A compute-sanitizer run: fixed footprints shrink to a few blocks ([`sanitizer`]).
    pub sanitizer: bool,
}

impl Sizes {
    /// Host bytes of pinned staging for the run's transpose-shaped matrices (`--transpose` and
    /// each of `--sizes`): the copy and transpose lessons' peak.
    pub fn matrix_staging_bytes(&self) -> usize {
        self.sweep.iter().chain([&self.transpose]).map(|&s| super::staging_bytes(s)).max().unwrap_or(0)
    }
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes {
            transpose: (8192, 8192),
            sweep: Vec::new(),
            matmul: (4096, 4096, 4096),
            matmul_naive: (4096, 4096, 4096),
            sgemm: vec![(4096, 4096, 4096), (8192, 8192, 8192)],
            tensor: vec![(4096, 4096, 4096), (8192, 8192, 8192)],
            strided_bytes: 1 << 30,
            dram_bytes: 1 << 30,
            bank_iters: BANK_ITERS as usize,
            cluster_reads: CLUSTER_READ_ITERS,
            cluster_sizes: CLUSTER_SIZES.to_vec(),
            l2_stream_bytes: 1 << 30,
            l2_read_bytes: None,
            l2_partition_sms: None,
            repeats: Repeats { warmup: 3, runs: 20 },
            sanitizer: false,
        }
    }
}

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
