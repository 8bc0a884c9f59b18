//! `memlab run-demos`: open the device, run the demos, print the report.

use anyhow::Result;

use crate::demos::{self, Lab, Sizes};
use crate::gpu::Gpu;
use crate::gpu::timing::Repeats;
use crate::{cli, refuse, report};

/// Options of `run-demos`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Demos to run (default: all): memcpy, transpose, matmul, sgemm, coalescing, banks.
    #[arg(long, num_args = 1.., value_parser = clap::builder::PossibleValuesParser::new(demos::NAMES))]
    pub only: Vec<String>,
    /// Transpose and copy matrix, ROWSxCOLS.
    #[arg(long, default_value = "8192x8192", value_parser = cli::dims::<2>)]
    pub transpose: [usize; 2],
    /// Tiled matmul shape, MxNxK.
    #[arg(long, default_value = "4096x4096x4096", value_parser = cli::dims::<3>)]
    pub matmul: [usize; 3],
    /// SGEMM ladder shapes, MxNxK each.
    #[arg(long, num_args = 1.., default_values = ["4096x4096x4096", "8192x8192x8192"], value_parser = cli::dims::<3>)]
    pub sgemm: Vec<[usize; 3]>,
    /// Naive matmul shape, MxNxK (default: the tiled shape).
    #[arg(long, value_parser = cli::dims::<3>)]
    pub matmul_naive: Option<[usize; 3]>,
    /// Bytes spanned by the strided-read buffer (B, KiB, MiB, GiB).
    #[arg(long, default_value = "1GiB", value_parser = cli::bytes)]
    pub strided_bytes: usize,
    /// Shared-memory loads per thread in the bank probe (a multiple of 8).
    #[arg(long, default_value_t = 16384, value_parser = clap::value_parser!(u32).range(8..=1 << 24))]
    pub bank_iters: u32,
    /// Timed runs per kernel (the median and minimum are reported).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Untimed warm-up runs per kernel.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub warmup: u32,
}

/// Runs the demos; returns whether every check passed.
pub fn run(args: Args) -> Result<bool> {
    if !args.bank_iters.is_multiple_of(8) {
        refuse!("--bank-iters {} must be a multiple of 8 (the probe's unroll)", args.bank_iters);
    }
    let [m, n, k] = args.matmul;
    let sizes = Sizes {
        transpose: (args.transpose[0], args.transpose[1]),
        matmul: (m, n, k),
        sgemm: args.sgemm.iter().map(|&[m, n, k]| (m, n, k)).collect(),
        matmul_naive: args.matmul_naive.map_or((m, n, k), |[m, n, k]| (m, n, k)),
        strided_bytes: args.strided_bytes,
        bank_iters: args.bank_iters as usize,
        repeats: Repeats { warmup: args.warmup as usize, runs: args.runs as usize },
    };
    let names: Vec<&str> =
        if args.only.is_empty() { demos::NAMES.to_vec() } else { args.only.iter().map(String::as_str).collect() };
    let gpu = Gpu::open(args.device, None)?;
    println!("# memlab on {}\n\n{}\n", gpu.info.name, report::device(args.device, &gpu.info, gpu.ptx.arch));
    let mut lab = Lab { gpu, sizes, memcpy_gbs: None };
    let mut all_passed = true;
    for name in names {
        let section = demos::run(&mut lab, name)?;
        all_passed &= section.passed();
        println!("{}", report::section(&section, lab.memcpy_gbs));
    }
    println!("{}", if all_passed { "All results verified." } else { "SOME RESULTS ARE WRONG: see the check column." });
    Ok(all_passed)
}
