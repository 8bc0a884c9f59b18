//! The binary's commands: each module holds one command's options (`Args`, parsed by clap in
//! `main.rs`) and its `run`, which returns whether every check passed.

pub mod bench;
pub mod collectives;
pub mod devices;
pub mod hierarchy;
pub mod host_memory;
pub mod inspect;
pub mod multi;
pub mod occupancy;
pub mod peer;
pub mod race;
pub mod report;
pub mod run_demos;

/// The problem shapes `run-demos` and `bench` share (flattened into both commands' options).
#[derive(clap::Args, Debug)]
pub struct Shapes {
    /// Transpose and copy matrix, ROWSxCOLS.
    #[arg(long, default_value = "8192x8192", value_parser = crate::cli::dims::<2>)]
    pub transpose: [usize; 2],
    /// Tiled (and by default naive) matmul shape, MxNxK.
    #[arg(long, default_value = "4096x4096x4096", value_parser = crate::cli::dims::<3>)]
    pub matmul: [usize; 3],
    /// SGEMM ladder shapes, MxNxK each.
    #[arg(long, num_args = 1.., default_values = ["4096x4096x4096", "8192x8192x8192"], value_parser = crate::cli::dims::<3>)]
    pub sgemm: Vec<[usize; 3]>,
}

impl Shapes {
    /// `sizes` with these shapes; the naive matmul takes the tiled shape.
    pub fn apply(&self, sizes: crate::demos::Sizes) -> crate::demos::Sizes {
        let [rows, cols] = self.transpose;
        let [m, n, k] = self.matmul;
        crate::demos::Sizes {
            transpose: (rows, cols),
            matmul: (m, n, k),
            matmul_naive: (m, n, k),
            sgemm: self.sgemm.iter().map(|&[m, n, k]| (m, n, k)).collect(),
            ..sizes
        }
    }
}
