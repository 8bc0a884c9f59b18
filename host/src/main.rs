//! `memlab`: runs the memory-hierarchy demos on an NVIDIA GPU and prints, per kernel, the
//! lesson, the model's prediction, the driver's figures and the measurement.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use memlab::demos::{self, Lab, Sizes};
use memlab::error::{EXIT_USAGE, EXIT_WRONG_RESULT};
use memlab::gpu::timing::Repeats;
use memlab::gpu::{Gpu, context};
use memlab::{cli, report};

#[derive(Parser)]
#[command(
    name = "memlab",
    version,
    about = "All-Rust CUDA lab: how kernels use registers, shared and global memory, measured"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the demos (all, or those named with --only) and print the report.
    RunDemos(RunArgs),
    /// Print the device report for every visible GPU.
    Devices,
}

#[derive(clap::Args)]
struct RunArgs {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: u32,
    /// Demos to run (default: all): memcpy, transpose, matmul, coalescing, banks.
    #[arg(long, num_args = 1.., value_parser = clap::builder::PossibleValuesParser::new(demos::NAMES))]
    only: Vec<String>,
    /// Transpose and copy matrix, ROWSxCOLS.
    #[arg(long, default_value = "8192x8192", value_parser = cli::dims::<2>)]
    transpose: [usize; 2],
    /// Tiled matmul shape, MxNxK.
    #[arg(long, default_value = "4096x4096x4096", value_parser = cli::dims::<3>)]
    matmul: [usize; 3],
    /// Naive matmul shape, MxNxK (default: the tiled shape).
    #[arg(long, value_parser = cli::dims::<3>)]
    matmul_naive: Option<[usize; 3]>,
    /// Bytes spanned by the strided-read buffer (B, KiB, MiB, GiB).
    #[arg(long, default_value = "1GiB", value_parser = cli::bytes)]
    strided_bytes: usize,
    /// Shared-memory loads per thread in the bank probe (a multiple of 8).
    #[arg(long, default_value_t = 16384, value_parser = clap::value_parser!(u32).range(8..=1 << 24))]
    bank_iters: u32,
    /// Timed runs per kernel (the median and minimum are reported).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// Untimed warm-up runs per kernel.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=100))]
    warmup: u32,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // clap's first line names the argument and the problem; the usage block after it
            // would break the one-line rule.
            let text = e.to_string();
            eprintln!("{}", text.lines().next().unwrap_or("error: bad arguments"));
            return ExitCode::from(EXIT_USAGE as u8);
        }
    };
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(EXIT_WRONG_RESULT as u8),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_USAGE as u8)
        }
    }
}

/// Returns whether every check passed.
fn run(cli: Cli) -> Result<bool> {
    match cli.command {
        Command::Devices => {
            for ordinal in 0..context::device_count()? {
                let gpu = Gpu::open(ordinal, None)?;
                println!("{}\n", report::device(ordinal, &gpu.info, gpu.ptx.arch));
            }
            Ok(true)
        }
        Command::RunDemos(args) => run_demos(args),
    }
}

fn run_demos(args: RunArgs) -> Result<bool> {
    if !args.bank_iters.is_multiple_of(8) {
        memlab::refuse!("--bank-iters {} must be a multiple of 8 (the probe's unroll)", args.bank_iters);
    }
    let [m, n, k] = args.matmul;
    let sizes = Sizes {
        transpose: (args.transpose[0], args.transpose[1]),
        matmul: (m, n, k),
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
