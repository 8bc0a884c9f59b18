//! `memlab`: runs the memory-hierarchy demos on an NVIDIA GPU and prints, per kernel, the
//! lesson, the model's prediction, the driver's figures and the measurement.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use memlab::commands;
use memlab::error::{EXIT_USAGE, EXIT_WRONG_RESULT};

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

/// One variant per command; each command's options and code live in `memlab::commands`.
#[derive(Subcommand)]
enum Command {
    /// Run the demos (all, or those named with --only) and print the report.
    RunDemos(commands::run_demos::Args),
    /// Print the device report for every visible GPU.
    Devices,
    /// Time every Rust kernel against its CUDA C++ twin (bench/twins.cu) and print the ratios.
    Bench(commands::bench::Args),
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
fn run(cli: Cli) -> anyhow::Result<bool> {
    match cli.command {
        Command::RunDemos(args) => commands::run_demos::run(args),
        Command::Devices => commands::devices::run(),
        Command::Bench(args) => commands::bench::run(args),
    }
}
