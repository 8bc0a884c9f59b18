//! `memlab`: runs the memory-hierarchy demos on an NVIDIA GPU and prints, per kernel, the
//! lesson, the model's prediction, the driver's figures and the measurement.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

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
    /// Print the device report for every visible GPU, then the peer topology (links, speeds).
    Devices,
    /// Run the tiled matmul with one barrier removed, to see a race (not part of run-demos).
    RaceLesson(commands::race::Args),
    /// Occupancy calculator (no GPU): per-limit table, limiting resource, what to change.
    Occupancy(commands::occupancy::Args),
    /// What a kernel does to each memory level: PTX and SASS memory instructions, registers,
    /// spills, Rust source lines.
    Inspect(commands::inspect::Args),
    /// Write the Markdown report with charts from a run recorded by `run-demos --json`.
    Report(commands::report::Args),
    /// Measure the memory-hierarchy table (latency ladder, bandwidth per level, spills).
    Hierarchy(commands::hierarchy::Args),
    /// Time every Rust kernel against its CUDA C++ twin (bench/twins.cu) and print the ratios.
    Bench(commands::bench::Args),
    /// Peer GPU memory over NVLink or PCIe: copy engines, kernels and latency, every pair.
    Peer(commands::peer::Args),
    /// Host memory read by kernels: zero-copy mapped memory and managed memory.
    HostMemory(commands::host_memory::Args),
    /// NCCL all-reduce and all-gather bus bandwidth across the GPUs (NCCL loaded at run time).
    Collectives(commands::collectives::Args),
}

/// Whether clap refused an argument like `-4` or `-4x4x4`: a negative value, which clap takes for
/// an unknown option.
fn negative_value(e: &clap::Error) -> bool {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    e.kind() == ErrorKind::UnknownArgument
        && matches!(e.get(ContextKind::InvalidArg), Some(ContextValue::String(arg))
            if arg.strip_prefix('-').is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit())))
}

fn main() -> ExitCode {
    // NCCL reads its environment when it is loaded: NVLink SHARP / multicast stays off for this
    // process (the GPU machines' rule). Set first, before any thread exists.
    let (key, value) = memlab::gpu::nccl::NVLS_ENV;
    // SAFETY: no other thread runs yet, so nothing reads the environment concurrently.
    unsafe { std::env::set_var(key, value) };
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // clap's first paragraph names the argument and the problem (a missing argument on
            // its second line); the usage block after it would break the one-line rule, but its
            // list of possible values is the allowed range.
            let text = e.to_string();
            let first: Vec<&str> = text.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
            let first = if first.is_empty() { "error: bad arguments".to_string() } else { first.join(" ") };
            let values = text.lines().map(str::trim).find(|l| l.starts_with("[possible values:"));
            let values = match values {
                Some(v) if !first.contains(v) => format!(" {v}"),
                Some(_) => String::new(),
                None if e.kind() == clap::error::ErrorKind::InvalidSubcommand => {
                    let names: Vec<_> = Cli::command().get_subcommands().map(|c| c.get_name().to_string()).collect();
                    format!(" [commands: {}]", names.join(", "))
                }
                None if negative_value(&e) => {
                    " (negative values are refused: sizes are whole numbers 1..=4294967295, counts and --device \
                     0 or more)"
                        .to_string()
                }
                None => String::new(),
            };
            eprintln!("{first}{values}");
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
        Command::RaceLesson(args) => commands::race::run(args),
        Command::Occupancy(args) => commands::occupancy::run(args),
        Command::Inspect(args) => commands::inspect::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Hierarchy(args) => commands::hierarchy::run(args),
        Command::Bench(args) => commands::bench::run(args),
        Command::Peer(args) => commands::peer::run(args),
        Command::HostMemory(args) => commands::host_memory::run(args),
        Command::Collectives(args) => commands::collectives::run(args),
    }
}
