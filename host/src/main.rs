//! `memlab`: runs the memory-hierarchy demos on an NVIDIA GPU and prints, per kernel, the
//! lesson, the model's prediction, the driver's figures and the measurement.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use memlab::commands;
use memlab::error::{EXIT_USAGE, EXIT_WRONG_RESULT};

#[derive(Parser)]
#[command(
    name = "memlab",
    version,
    about = "All-Rust CUDA lab: how kernels use registers, shared and global memory, measured",
    arg_required_else_help = true,
    max_term_width = 100
)]
struct Cli {
    /// Tables fitted to the terminal's width (COLUMNS, or 120 when not a terminal), or full
    /// Markdown tables.
    #[arg(long, global = true, value_enum, default_value_t = memlab::present::table::Format::Terminal)]
    format: memlab::present::table::Format,
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

/// The commands' names, comma-separated.
fn commands() -> String {
    Cli::command().get_subcommands().map(|c| c.get_name().to_string()).collect::<Vec<_>>().join(", ")
}

/// Whether clap refused an argument like `-4x4x4`: a negative value that is not a number, which
/// clap takes for an unknown option.
fn negative_value(e: &clap::Error) -> bool {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    e.kind() == ErrorKind::UnknownArgument
        && matches!(e.get(ContextKind::InvalidArg), Some(ContextValue::String(arg)) if is_negative(arg))
}

/// Whether `text` starts like a negative number.
fn is_negative(text: &str) -> bool {
    text.strip_prefix('-').is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

/// The one line for a negative value given to an option (`--threads -256`, `--smem -4KiB`,
/// `--tile=-3x4`), which reaches the option's parser ([`parse`]) and fails there: the value as
/// typed and the option quoted, and the rule (no option takes a negative value).
fn negative_number(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(value)) = e.get(ContextKind::InvalidValue) else { return None };
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else { return None };
    is_negative(value).then(|| {
        format!("error: invalid value '{value}' for '{arg}': {value} is negative; sizes, counts and --device are whole numbers")
    })
}

/// `args` with each negative value after a long option that takes one joined to it
/// (`--smem -4KiB` -> `--smem=-4KiB`): clap reads a word starting with `-` and a digit that is
/// not a plain number as short flags (`-4`, `-K`, ...) and would cut the value off, while the
/// joined form reaches the option's parser whole.
fn join_negative_values(cli: &clap::Command, args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut command: Option<&clap::Command> = None;
    let mut out: Vec<std::ffi::OsString> = Vec::with_capacity(args.len());
    let mut words = args.into_iter().peekable();
    while let Some(word) = words.next() {
        let text = word.to_string_lossy().into_owned();
        if command.is_none() && !out.is_empty() {
            command = cli.find_subcommand(&text);
        }
        let takes_value = text.strip_prefix("--").filter(|l| !l.contains('=')).is_some_and(|long| {
            let named = |a: &&clap::Arg| {
                a.get_long_and_visible_aliases().is_some_and(|n| n.contains(&long))
                    || a.get_aliases().is_some_and(|n| n.contains(&long))
            };
            command
                .into_iter()
                .chain([cli])
                .flat_map(|c| c.get_arguments())
                .find(named)
                .is_some_and(|a| a.get_action().takes_values())
        });
        match words.peek() {
            Some(next) if takes_value && is_negative(&next.to_string_lossy()) => {
                let mut joined = word;
                joined.push("=");
                joined.push(words.next().expect("peeked"));
                out.push(joined);
            }
            _ => out.push(word),
        }
    }
    out
}

/// The matches of `args` (the program's name first) against [`cli_command`], negative values
/// joined to their options ([`join_negative_values`]).
fn parse(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<clap::ArgMatches, clap::Error> {
    let cli = cli_command();
    let args = join_negative_values(&cli, args.into_iter().collect());
    cli.try_get_matches_from(args)
}

/// The command line's definition, every option taking a value allowed a negative number, so that
/// `--threads -256` reaches the option's parser and is refused with the number quoted instead of
/// being taken for an unknown option `-2`.
fn cli_command() -> clap::Command {
    Cli::command().mut_subcommands(|c| {
        c.mut_args(|a| {
            let takes = a.get_action().takes_values();
            a.allow_negative_numbers(takes)
        })
    })
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
    let cli = match parse(std::env::args_os()).and_then(|m| Cli::from_arg_matches(&m)) {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // `memlab` alone: clap would print the whole help as an error.
            eprintln!("error: a command is required; `memlab --help` lists them");
            return ExitCode::from(EXIT_USAGE as u8);
        }
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) if let Some(line) = negative_number(&e) => {
            eprintln!("{line}");
            return ExitCode::from(EXIT_USAGE as u8);
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
                None if e.kind() == clap::error::ErrorKind::InvalidSubcommand => format!(" [commands: {}]", commands()),
                None if negative_value(&e) => {
                    " (negative values are refused: sizes, counts and --device are whole numbers)".to_string()
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
    memlab::present::table::set_format(cli.format);
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

#[cfg(test)]
mod tests {
    use clap::{ArgAction, CommandFactory, Parser};

    use super::{Cli, Command};

    /// clap's own checks of the whole command line (names, groups, conflicts, defaults against
    /// their parsers), which it otherwise makes only when a command is first used.
    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
        super::cli_command().debug_assert();
    }

    /// The one line a command line gets, or `None` when it parses.
    fn refusal(args: &[&str]) -> Option<String> {
        let e = super::parse(args.iter().map(std::ffi::OsString::from)).err()?;
        Some(super::negative_number(&e).unwrap_or_else(|| e.to_string()))
    }

    #[test]
    fn a_negative_number_is_refused_with_the_number_quoted() {
        assert_eq!(
            refusal(&["memlab", "occupancy", "--threads", "-256", "--regs", "32"]).unwrap(),
            "error: invalid value '-256' for '--threads <THREADS>': -256 is negative; sizes, counts and --device are \
             whole numbers"
        );
        assert!(refusal(&["memlab", "run-demos", "--device", "-1"]).unwrap().contains("'-1' for '--device <DEVICE>'"));
        assert!(refusal(&["memlab", "banks", "--offset", "-4"]).unwrap().contains("-4 is negative"));
        // A negative value with a unit or a size, after a space or an `=`, is quoted whole.
        for (args, line) in [
            (
                &["--threads", "256", "--smem", "-4KiB"][..],
                "invalid value '-4KiB' for '--smem <SMEM>': -4KiB is negative",
            ),
            (
                &["--threads", "256", "--regs", "32", "--smem=-4KiB"][..],
                "'-4KiB' for '--smem <SMEM>': -4KiB is negative",
            ),
            (
                &["--regs", "32", "--threads", "-1k"][..],
                "invalid value '-1k' for '--threads <THREADS>': -1k is negative",
            ),
        ] {
            let full = [&["memlab", "occupancy", "--gpu", "H100"][..], args].concat();
            assert!(refusal(&full).unwrap().contains(line), "{full:?}: {:?}", refusal(&full));
        }
        assert!(
            refusal(&["memlab", "banks", "--tile", "-3x4"])
                .unwrap()
                .contains("'-3x4' for '--tile <TILE>': -3x4 is negative")
        );
        // The hidden alias of banks' --cc takes a value too.
        assert!(refusal(&["memlab", "banks", "--gpu", "-9.0"]).unwrap().contains("-9.0 is negative"));
        // A flag is still a flag, and a positive number still parses.
        assert_eq!(refusal(&["memlab", "occupancy", "--threads", "256", "--regs", "32", "--opt-in"]), None);
    }

    /// A value for an option with neither a default nor a list of allowed values.
    fn sample(command: &str, option: &str) -> &'static str {
        match option {
            "sizes" => "1000x999,8192x8192",
            "matmul-naive" => "512x512x512",
            "l2-read-bytes" => "64MiB",
            "l2-partition-sms" => "4",
            "lesson_options" => "lesson-options.json",
            "json" | "report" | "chart" | "write" => "memlab-cli-test-output",
            "cc" => "9.0",
            "gpu" => "H200",
            "regs" | "regs_per_sm" => "64",
            "threads" | "threads_per_sm" => "256",
            "smem_per_sm" => "48KiB",
            "blocks" => "2",
            "kernel" => "copy",
            "stride" => "2",
            "index" => "t*2",
            "bytes" => "t*4",
            "tile" => "32x32",
            "pitch" => "33",
            "block" => "32x8",
            "array" => "1MiB",
            "struct_bytes" => "12",
            "fields" => "0:4,4:4",
            "ladder_max" => "1GiB",
            "name" => "copy",
            "run" => "run.json",
            "out" => "report-dir",
            _ => panic!("memlab {command} --{option}: add a sample value here, so the full parse covers it"),
        }
    }

    /// Options that need another one given too (clap's `requires` and `required_unless_present`,
    /// which it does not expose).
    const NEEDS: [(&str, &str); 6] = [
        ("pitch", "tile"),
        ("block", "tile"),
        ("access", "tile"),
        ("struct_bytes", "fields"),
        ("fields", "struct_bytes"),
        ("threads", "regs"),
    ];

    /// Every option of every command, given on the command line (each with the command's
    /// required options and those it needs) and parsed into the options' structs, as the binary
    /// does: a field whose type does not match its parser (clap panics on it only when the
    /// option is given, as `run-demos --sizes` once did on the H200) fails here.
    #[test]
    fn every_command_parses_with_each_option_given() {
        let cli = Cli::command();
        let (mut lines, mut failed) = (0, Vec::new());
        for command in cli.get_subcommands() {
            let name = command.get_name();
            let options: Vec<&clap::Arg> = command
                .get_arguments()
                .filter(|a| !matches!(a.get_action(), ArgAction::Help | ArgAction::Version))
                .collect();
            let find = |id: &str| options.iter().copied().find(|a| a.get_id() == id);
            // Positionals too: `inspect NAME` is required unless `--list` is given.
            let required: Vec<&clap::Arg> =
                options.iter().copied().filter(|a| a.is_required_set() || a.is_positional()).collect();
            // A command without options is parsed once, alone.
            let each: Vec<Option<&clap::Arg>> =
                if options.is_empty() { vec![None] } else { options.iter().copied().map(Some).collect() };
            let needs = |a: &clap::Arg| NEEDS.iter().find(|n| n.0 == a.get_id()).and_then(|n| find(n.1));
            let conflict = |a: &clap::Arg, b: &clap::Arg| {
                let hit = |x: &clap::Arg, y: &clap::Arg| {
                    command.get_arg_conflicts_with(x).iter().any(|c| c.get_id() == y.get_id())
                };
                hit(a, b) || hit(b, a)
            };
            for option in each {
                let mut words = vec!["memlab".to_string(), "--format".into(), "markdown".into(), name.to_string()];
                let mut given: Vec<&clap::Arg> = Vec::new();
                let base = required.iter().copied().flat_map(|r| [Some(r), needs(r)]).flatten();
                let args: Vec<&clap::Arg> = base.chain(option).chain(option.and_then(needs)).collect();
                for arg in args {
                    let clash = option.is_some_and(|o| o.get_id() != arg.get_id() && conflict(o, arg));
                    if clash || given.iter().any(|g| g.get_id() == arg.get_id()) {
                        continue;
                    }
                    given.push(arg);
                    if let Some(long) = arg.get_long() {
                        words.push(format!("--{long}"));
                    }
                    if arg.get_action().takes_values() {
                        words.push(match (arg.get_possible_values().first(), arg.get_default_values().first()) {
                            (Some(p), _) => p.get_name().to_string(),
                            (None, Some(d)) => d.to_string_lossy().into_owned(),
                            (None, None) => sample(name, arg.get_id().as_str()).to_string(),
                        });
                    }
                }
                // A conflict with a required option is clap's business, not a declaration bug.
                match Cli::try_parse_from(&words) {
                    Err(e) if e.kind() != clap::error::ErrorKind::ArgumentConflict => {
                        failed.push(format!("{}: {e}", words.join(" ")))
                    }
                    _ => lines += 1,
                }
            }
        }
        assert!(failed.is_empty(), "{}", failed.join("\n"));
        assert!(lines > 60, "{lines} command lines: one per option of every command");
    }

    #[test]
    fn run_demos_takes_a_list_of_sizes() {
        let cli = Cli::try_parse_from(["memlab", "run-demos", "--sizes", "1000x999, 8192x8191,8192x8192"]).unwrap();
        let Command::RunDemos(args) = cli.command else { panic!("run-demos parses as run-demos") };
        assert_eq!(args.lessons.lessons.transpose.sweep(), [(1000, 999), (8192, 8191), (8192, 8192)]);
        let Err(e) = Cli::try_parse_from(["memlab", "run-demos", "--sizes", "8x8,8x8"]) else {
            panic!("a size named twice is refused")
        };
        assert!(e.to_string().contains("names 8x8 twice"), "{e}");
    }

    #[test]
    fn a_sanitizer_run_writes_no_record() {
        for output in [["--json", "run.json"], ["--report", "report"]] {
            let args = ["memlab", "run-demos", "--sanitizer", output[0], output[1]];
            let Err(e) = Cli::try_parse_from(args) else { panic!("{args:?} is refused") };
            assert!(e.to_string().contains("cannot be used with"), "{e}");
        }
        assert!(Cli::try_parse_from(["memlab", "run-demos", "--sanitizer"]).is_ok());
    }
}
