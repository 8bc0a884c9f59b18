//! `memlab peer`: the peer lesson over every ordered pair of the chosen devices (see
//! `demos::peer`); skipped with one line where fewer than two devices are chosen.

use anyhow::Result;

use super::multi;
use crate::cli::{self, Devices};
use crate::demos::peer::{self, Options};
use crate::present::peer_report;

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
    /// Timed and warm-up runs.
    #[command(flatten)]
    pub runs: super::Runs,
    /// Output files (the report: DIR/peer.md with the matrix and stride charts).
    #[command(flatten)]
    pub outputs: super::Outputs,
}

/// Runs the lesson and prints it; returns whether every check passed.
pub fn run(args: Args) -> Result<bool> {
    let opts = Options {
        copy_bytes: args.copy_bytes,
        strided_bytes: args.strided_bytes,
        chain_bytes: args.chain_bytes,
        steps: args.steps,
        repeats: args.runs.repeats(),
    };
    peer::check_options(&opts)?;
    // One record for all the devices: the paths as given, checked before the driver is asked.
    let outputs = args.outputs.for_device(0, false)?;
    let ordinals = multi::resolve(&args.device)?;
    if ordinals.len() < 2 {
        println!("peer: skipped: {} device chosen, the peer lesson needs two or more", ordinals.len());
        return Ok(true);
    }
    let record = peer::run(&ordinals, &opts)?;
    println!("{}", peer_report::markdown(&record));
    if let Some(path) = &outputs.json {
        crate::present::output::write(path, serde_json::to_string_pretty(&record)? + "\n")?;
    }
    if let Some(dir) = &outputs.report {
        let files = peer_report::write(dir, &record)?;
        eprintln!("report: {} files in {}", files.len(), dir.display());
    }
    Ok(record.passed())
}
