//! `memlab report`: the Markdown report and its charts from a run recorded with
//! `run-demos --json`, on any machine (no GPU needed).

use std::path::PathBuf;

use anyhow::Result;

use crate::present::report_dir::{self, RunRecord};

/// Options of `report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The JSON file written by `run-demos --json`.
    pub run: PathBuf,
    /// Folder to write `report.md` and the charts (SVG and PNG) into.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// Writes the report and prints the files written.
pub fn run(args: Args) -> Result<bool> {
    crate::present::output::check_dir("--out", &args.out)?;
    let record = RunRecord::load(&args.run)?;
    for file in report_dir::write(&args.out, &record)? {
        println!("{}", file.display());
    }
    Ok(true)
}
