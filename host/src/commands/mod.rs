//! The binary's commands: each module holds one command's options (`Args`, parsed by clap in
//! `main.rs`) and its `run`, which returns whether every check passed.

pub mod autotune;
pub mod banks;
pub mod bench;
pub mod coalescing;
pub mod collectives;
pub mod devices;
pub mod doctor;
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
    /// Tensor-core ladder shapes (BF16), MxNxK each.
    #[arg(long, num_args = 1.., default_values = ["4096x4096x4096", "8192x8192x8192"], value_parser = crate::cli::dims::<3>)]
    pub tensor: Vec<[usize; 3]>,
}

impl Shapes {
    /// `sizes` with these shapes; the naive matmul takes the tiled shape.
    pub fn apply(&self, sizes: crate::lab::Sizes) -> crate::lab::Sizes {
        let [rows, cols] = self.transpose;
        let [m, n, k] = self.matmul;
        crate::lab::Sizes {
            transpose: (rows, cols),
            matmul: (m, n, k),
            matmul_naive: (m, n, k),
            sgemm: self.sgemm.iter().map(|&[m, n, k]| (m, n, k)).collect(),
            tensor: self.tensor.iter().map(|&[m, n, k]| (m, n, k)).collect(),
            ..sizes
        }
    }
}

/// The hierarchy probes' sizes `run-demos` and `hierarchy` share (flattened into both).
#[derive(clap::Args, Debug)]
pub struct ProbeSizes {
    /// Bytes of the DRAM read (B, K/KB/KiB, M/MB/MiB, G/GB/GiB; K = 1024 B; a multiple of 16).
    #[arg(long, default_value = "1GiB", value_parser = crate::cli::bytes)]
    pub dram_bytes: usize,
    /// Shared-memory loads per thread in the shared-bandwidth probe (a multiple of 8).
    #[arg(long, default_value_t = crate::lab::sizes::BANK_ITERS, value_parser = clap::value_parser!(u32).range(8..=1 << 24))]
    pub bank_iters: u32,
    /// 16-byte reads per thread of the distributed-shared-memory read (a multiple of 8).
    #[arg(long, default_value_t = crate::lab::CLUSTER_READ_ITERS, value_parser = clap::value_parser!(u32).range(8..=1 << 24))]
    pub cluster_reads: u32,
}

impl ProbeSizes {
    /// `sizes` with these probe sizes.
    ///
    /// # Errors
    /// A refusal naming the flag and the multiple it must be.
    pub fn apply(&self, sizes: crate::lab::Sizes) -> anyhow::Result<crate::lab::Sizes> {
        use crate::demos::{banks, clusters};
        use crate::summary::hierarchy;
        Ok(crate::lab::Sizes {
            dram_bytes: hierarchy::check_dram_bytes(self.dram_bytes)?,
            bank_iters: banks::check_iters(self.bank_iters)?,
            cluster_reads: clusters::check_reads(self.cluster_reads)?,
            ..sizes
        })
    }
}

/// Timed and warm-up runs per measurement, shared by `run-demos` and `peer`.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct Runs {
    /// Timed runs per measurement, at most (the median and minimum are reported); a measurement
    /// stops after 5 once its runs add up to 100 ms with their median within 1% of their minimum.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Untimed warm-up runs per measurement.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub warmup: u32,
}

impl Runs {
    /// As the timing module takes them.
    pub fn repeats(self) -> crate::gpu::timing::Repeats {
        crate::gpu::timing::Repeats { warmup: self.warmup as usize, runs: self.runs as usize }
    }
}

/// `--json FILE` and `--report DIR`, shared by `run-demos` and `peer`.
#[derive(clap::Args, Debug, Clone)]
pub struct Outputs {
    /// Also write every figure as JSON to FILE (`memlab report` reads a run-demos file back).
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Also write a Markdown report with SVG and PNG charts into DIR.
    #[arg(long, value_name = "DIR")]
    pub report: Option<std::path::PathBuf>,
}

impl Outputs {
    /// The paths the run on `ordinal` writes (each suffixed `-gpuN` when `several` devices run,
    /// see [`multi::per_device_path`]), checked before any GPU work so a run never ends in
    /// "cannot write".
    ///
    /// # Errors
    /// One line naming the flag, the path and the problem.
    pub fn for_device(&self, ordinal: u32, several: bool) -> anyhow::Result<Outputs> {
        let json = self.json.as_ref().map(|p| multi::per_device_path(p, ordinal, several));
        let report = self.report.as_ref().map(|d| multi::per_device_path(d, ordinal, several));
        if let Some(path) = &json {
            crate::present::output::check_file("--json", path)?;
        }
        if let Some(dir) = &report {
            crate::present::output::check_dir("--report", dir)?;
        }
        Ok(Outputs { json, report })
    }
}
