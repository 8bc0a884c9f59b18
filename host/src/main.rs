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
    /// Tables fitted to the terminal's width (COLUMNS, or 120 when not a terminal), or full
    /// Markdown tables.
    #[arg(long, global = true, value_enum, default_value_t = memlab::table::Format::Terminal)]
    format: memlab::table::Format,
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
    /// What this machine has for the lab, and how to get what is missing (no GPU needed).
    ///
    /// The driver, each GPU with the PTX it loads, its clocks and the other processes on it, the
    /// CUDA tools and libraries found and where; exit 0 when run-demos can run, 2 otherwise.
    Doctor,
    /// Run the tiled matmul with one barrier removed, to see a race (not part of run-demos).
    RaceLesson(commands::race::Args),
    /// Occupancy calculator (no GPU): per-limit table, limiting resource, what to change.
    Occupancy(commands::occupancy::Args),
    /// Shared-memory bank model (no GPU): wavefronts and conflicts of one access pattern.
    Banks(commands::banks::Args),
    /// Global-memory coalescing model (no GPU): requests, sectors and DRAM bytes of a pattern.
    Coalescing(commands::coalescing::Args),
    /// What a kernel does to each memory level: PTX and SASS memory instructions, registers,
    /// spills, Rust source lines.
    Inspect(commands::inspect::Args),
    /// Write the Markdown report with charts from a run recorded by `run-demos --json`.
    Report(commands::report::Args),
    /// Measure the memory-hierarchy table (latency ladder, bandwidth per level, spills).
    Hierarchy(commands::hierarchy::Args),
    /// Time every Rust kernel against its CUDA C++ twin (bench/twins.cu) and print the ratios.
    Bench(commands::bench::Args),
    /// Time every compiled configuration of the tuned SGEMM (rung 8) per shape class and write
    /// the fastest to the autotune file that run-demos and bench read.
    Autotune(commands::autotune::Args),
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

/// Ends the program quietly with exit 0 when printing fails on a closed pipe (`memlab occupancy
/// ... | head -1`): Rust ignores SIGPIPE, so `println!` panics on EPIPE instead, and a reader that
/// stopped reading is not an error. Every other panic keeps the default report.
fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        // std's message: "failed printing to stdout: Broken pipe (os error 32)".
        if message.starts_with("failed printing to std") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    // NCCL reads its environment when it is loaded: NVLink SHARP / multicast stays off for this
    // process (the GPU machines' rule). Set first, before any thread exists.
    let (key, value) = memlab::gpu::nccl::NVLS_ENV;
    // SAFETY: no other thread runs yet, so nothing reads the environment concurrently.
    unsafe { std::env::set_var(key, value) };
    quiet_on_broken_pipe();
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
    memlab::table::set_format(cli.format);
    match cli.command {
        Command::RunDemos(args) => commands::run_demos::run(args),
        Command::Devices => commands::devices::run(),
        Command::Doctor => commands::doctor::run(),
        Command::RaceLesson(args) => commands::race::run(args),
        Command::Autotune(args) => commands::autotune::run(args),
        Command::Occupancy(args) => commands::occupancy::run(args),
        Command::Banks(args) => commands::banks::run(args),
        Command::Coalescing(args) => commands::coalescing::run(args),
        Command::Inspect(args) => commands::inspect::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Hierarchy(args) => commands::hierarchy::run(args),
        Command::Bench(args) => commands::bench::run(args),
        Command::Peer(args) => commands::peer::run(args),
        Command::HostMemory(args) => commands::host_memory::run(args),
        Command::Collectives(args) => commands::collectives::run(args),
    }
}
