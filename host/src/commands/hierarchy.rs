//! `memlab hierarchy`: the memory-hierarchy table measured on one GPU beside the seed's figures,
//! with the latency ladder as a table and a chart (see `summary::hierarchy` for the methods).

use anyhow::Result;

use crate::demos::memcpy;
use crate::gpu::Gpu;
use crate::lab::Inputs;
use crate::lab::{Lab, Settings};
use crate::summary::hierarchy::{self, LADDER_MIN, Options};
use crate::{cli, present::report, refuse};

/// Options of `hierarchy`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// CUDA device: one ordinal, a list like 0,1, or `all` (each in turn, then side by side).
    #[arg(long, default_value = "0", value_parser = cli::devices)]
    pub device: cli::Devices,
    /// Largest working set of the latency ladder, a power of two from 4KiB (default: the
    /// smallest power of two at least 4 x the device's L2).
    #[arg(long, value_parser = cli::bytes)]
    pub ladder_max: Option<usize>,
    /// Timed dependent loads per latency probe.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(64..=1 << 22))]
    pub steps: u32,
    /// Bytes of each host <-> device copy (B, K/KB/KiB, M/MB/MiB, G/GB/GiB; K = 1024 B).
    #[arg(long, default_value = "256MiB", value_parser = cli::bytes)]
    pub transfer_bytes: usize,
    /// The DRAM read.
    #[command(flatten)]
    pub dram: hierarchy::Dram,
    /// The shared-memory row's probe.
    #[command(flatten)]
    pub banks: crate::demos::banks::Options,
    /// The distributed-shared-memory row's read.
    #[command(flatten)]
    pub cluster_reads: crate::demos::clusters::Reads,
    /// For compute-sanitizer: every kernel, but grids that fill the GPU, L2 passes and fixed
    /// buffers shrink to a few blocks (figures mean nothing); prints the kernels launched.
    #[arg(long)]
    pub sanitizer: bool,
}

/// Measures and prints the table; returns whether every check passed.
pub fn run(args: Args) -> Result<bool> {
    if args.sanitizer {
        eprintln!("sanitizer footprints: every result is checked, but no figure is a measurement");
    }
    if let Some(max) = args.ladder_max
        && (!max.is_power_of_two() || max < LADDER_MIN)
    {
        refuse!("--ladder-max {max} must be a power of two of at least {LADDER_MIN} bytes (4KiB)");
    }
    let settings = Settings { sanitizer: args.sanitizer, ..Settings::default() };
    if args.transfer_bytes < 4 {
        refuse!("--transfer-bytes {} must be at least 4 bytes", args.transfer_bytes);
    }
    let ordinals = super::multi::resolve(&args.device)?;
    let (mut passed, mut figures) = (true, Vec::new());
    for &ordinal in &ordinals {
        let (ok, table) = run_on(&args, ordinal, settings)?;
        passed &= ok;
        // level -> "latency; bandwidth", the measured columns.
        figures.push(table.into_iter().map(|r| (r[0].clone(), format!("{}; {}", r[2], r[4]))).collect());
    }
    if ordinals.len() > 1 {
        let labels: Vec<String> = ordinals.iter().map(|o| format!("GPU {o}")).collect();
        let (header, rows) = super::multi::side_by_side(&labels, &figures);
        println!("{}\n\n{}\n", super::multi::heading(&ordinals), report::table(header, rows));
    }
    if args.sanitizer {
        println!("{}", crate::registry::launched_line());
    }
    Ok(passed)
}

/// Measures and prints the table on one device; returns whether every check passed and the
/// table's rows.
fn run_on(args: &Args, ordinal: u32, settings: Settings) -> Result<(bool, Vec<Vec<String>>)> {
    let gpu = Gpu::open(ordinal, None)?;
    println!("# memlab hierarchy on {}\n\n{}\n", gpu.info.name, report::device(ordinal, &gpu.info, gpu.ptx.arch));
    let lab = Lab::new(gpu, settings);
    let opts = Options {
        dram: args.dram,
        banks: args.banks.clone(),
        cluster_reads: args.cluster_reads,
        ladder_max: args.ladder_max,
        steps: args.steps,
        transfer_bytes: args.transfer_bytes,
        ..Options::default()
    };
    // The memcpy ceiling at the transposes' default matrix, measured by its owner and passed in.
    let shared = cli::defaults::<crate::registry::Options>().lessons.shared();
    let memcpy = Some(memcpy::measure(&lab, shared.matrix)?);
    let inputs = Inputs { shared, memcpy, memcpy_sweep: Vec::new() };
    let measured = hierarchy::measure_all(&lab, &opts, &inputs)?;
    let section = measured.section();
    println!("{}", report::section(&section, inputs.memcpy_gbs()));
    let (header, rows) = measured.ladder_table();
    println!("## The latency ladder\n\n{}\n", report::table(header, rows));
    let passed = section.passed();
    println!("{}", if passed { "All results verified." } else { "SOME RESULTS ARE WRONG: see the checks." });
    Ok((passed, measured.table().1))
}
