//! `memlab race-lesson`: the broken-barrier matmul, run several times against the correct one.
//! Not a demo: `run-demos` never launches the broken kernel.

use anyhow::Result;

use crate::demos::race;
use crate::gpu::Gpu;
use crate::{cli, present::report};

/// Options of `race-lesson`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Matmul shape, MxNxK (K above 32, so that tiles are reused and can be overwritten).
    #[arg(long, default_value = "2048x2048x2048", value_parser = cli::dims::<3>)]
    pub matmul: [usize; 3],
    /// Runs of the broken kernel.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
}

/// Runs the lesson; returns whether the correct kernel matched the reference (wrong results
/// from the broken kernel are the lesson, not a failure).
pub fn run(args: Args) -> Result<bool> {
    let [m, n, k] = args.matmul;
    race::check_shape((m, n, k))?;
    let gpu = Gpu::open(args.device, None)?;
    let outcome = race::run(&gpu, (m, n, k), args.runs as usize)?;
    let section = race::section(&outcome, (m, n, k));
    println!("# memlab race lesson on {}\n\n{}", gpu.info.name, report::section(&section, None));
    Ok(section.passed())
}
