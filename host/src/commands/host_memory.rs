//! `memlab host-memory`: host memory as a level, read by kernels (see `demos::host_memory`):
//! zero-copy mapped memory with its stride sweep and latency, and managed memory's page-fault
//! migration against a prefetch.

use anyhow::Result;

use super::multi;
use crate::cli::{self, Devices};
use crate::demos::host_memory::{self, Options};
use crate::gpu::Gpu;
use crate::gpu::timing::Repeats;
use crate::lab::{Lab, Settings};
use crate::present::report;

/// Options of `host-memory`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Devices: one ordinal, a list like 0,1, or `all` (each in turn).
    #[arg(long, default_value = "0", value_parser = cli::devices)]
    pub device: Devices,
    /// Bytes of the mapped buffer the stride sweep reads.
    #[arg(long, default_value = "256MiB", value_parser = cli::bytes)]
    pub mapped_bytes: usize,
    /// Bytes of managed memory (at most 4GiB and half the device's free memory).
    #[arg(long, default_value = "1GiB", value_parser = cli::bytes)]
    pub managed_bytes: usize,
    /// Bytes of the latency chain (a multiple of 128).
    #[arg(long, default_value = "16MiB", value_parser = cli::bytes)]
    pub chain_bytes: usize,
    /// Timed runs per measurement.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
}

/// Measures and prints every host level on each device; returns whether every check passed.
pub fn run(args: Args) -> Result<bool> {
    let opts = Options {
        mapped_bytes: args.mapped_bytes,
        managed_bytes: args.managed_bytes,
        chain_bytes: args.chain_bytes,
        runs: args.runs as usize,
        ..Options::default()
    };
    host_memory::check_options(&opts, usize::MAX)?;
    let mut passed = true;
    for ordinal in multi::resolve(&args.device)? {
        let gpu = Gpu::open(ordinal, None)?;
        let settings = Settings { repeats: Repeats { warmup: 1, runs: args.runs as usize }, ..Settings::default() };
        let lab = Lab::new(gpu, settings);
        let measured = host_memory::measure_all(&lab, &opts)?;
        let mut out = format!("# memlab host-memory on GPU {ordinal} ({})\n\n", lab.gpu.info.name);
        for s in measured.sections(opts.mapped_bytes) {
            passed &= s.passed();
            out += &format!("{}\n", report::section(&s, None));
        }
        println!("{out}");
    }
    println!("{}", if passed { "All results verified." } else { "SOME RESULTS ARE WRONG: see the checks." });
    Ok(passed)
}
