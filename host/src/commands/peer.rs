//! `memlab peer`: the peer lesson over every ordered pair of the chosen devices (see
//! `demos::peer`); skipped with one line where fewer than two devices are chosen.

use std::path::PathBuf;

use anyhow::Result;

use super::multi;
use crate::cli::{self, Devices};
use crate::demos::peer::{self, Options};
use crate::gpu::timing::Repeats;
use crate::{peer_report, refuse};

/// Options of `peer`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Devices: `all`, or a list like 0,1 (two or more).
    #[arg(long, default_value = "all", value_parser = cli::devices)]
    pub device: Devices,
    /// Bytes of each copy (a multiple of 16 KiB).
    #[arg(long, default_value = "512MiB", value_parser = cli::bytes)]
    pub copy_bytes: usize,
    /// Bytes of the strided-read buffer.
    #[arg(long, default_value = "256MiB", value_parser = cli::bytes)]
    pub strided_bytes: usize,
    /// Bytes of the latency chain (a multiple of 128).
    #[arg(long, default_value = "64MiB", value_parser = cli::bytes)]
    pub chain_bytes: usize,
    /// Timed dependent loads of the latency chain.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(64..=1 << 22))]
    pub steps: u32,
    /// Timed runs per measurement.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Untimed warm-up runs.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub warmup: u32,
    /// Also write every figure as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write DIR/peer.md with the matrix and stride charts (SVG and PNG).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
}

/// Refuses an output path whose folder does not exist, before any measurement.
pub fn check_output(path: &Option<PathBuf>) -> Result<()> {
    if let Some(p) = path
        && let Some(parent) = p.parent().filter(|d| !d.as_os_str().is_empty())
        && !parent.is_dir()
    {
        refuse!("cannot write {}: the folder {} does not exist", p.display(), parent.display());
    }
    Ok(())
}

/// Runs the lesson and prints it; returns whether every check passed.
pub fn run(args: Args) -> Result<bool> {
    let opts = Options {
        copy_bytes: args.copy_bytes,
        strided_bytes: args.strided_bytes,
        chain_bytes: args.chain_bytes,
        steps: args.steps,
        repeats: Repeats { warmup: args.warmup as usize, runs: args.runs as usize },
    };
    peer::check_options(&opts)?;
    check_output(&args.json)?;
    check_output(&args.report)?;
    let ordinals = multi::resolve(&args.device)?;
    if ordinals.len() < 2 {
        println!("peer: skipped: {} device chosen, the peer lesson needs two or more", ordinals.len());
        return Ok(true);
    }
    let record = peer::run(&ordinals, &opts)?;
    println!("{}", peer_report::markdown(&record));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&record)?;
        if let Err(e) = std::fs::write(path, text + "\n") {
            refuse!("cannot write {}: {e}", path.display());
        }
    }
    if let Some(dir) = &args.report {
        let files = peer_report::write(dir, &record)?;
        eprintln!("report: {} files in {}", files.len(), dir.display());
    }
    Ok(record.passed())
}
