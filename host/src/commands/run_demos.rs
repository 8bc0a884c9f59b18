//! `memlab run-demos`: open the device, run the demos, print the report.

use std::path::PathBuf;

use anyhow::Result;

use crate::demos::{self, Lab, Sizes, coalescing, hierarchy};
use crate::gpu::Gpu;
use crate::gpu::timing::Repeats;
use crate::report_dir::{self, RunRecord};
use crate::{cli, output, progress, report};

/// Options of `run-demos`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Demos to run (default: all, in the listed order).
    #[arg(long, num_args = 1.., value_parser = clap::builder::PossibleValuesParser::new(demos::NAMES))]
    pub only: Vec<String>,
    /// Problem shapes.
    #[command(flatten)]
    pub shapes: super::Shapes,
    /// Naive matmul shape, MxNxK (default: the tiled shape).
    #[arg(long, value_parser = cli::dims::<3>)]
    pub matmul_naive: Option<[usize; 3]>,
    /// Bytes spanned by the strided-read buffer (B, KiB, MiB, GiB).
    #[arg(long, default_value = "1GiB", value_parser = strided_bytes)]
    pub strided_bytes: usize,
    /// Bytes of the hierarchy's DRAM read (B, KiB, MiB, GiB; a multiple of 16).
    #[arg(long, default_value = "1GiB", value_parser = cli::bytes)]
    pub dram_bytes: usize,
    /// Shared-memory loads per thread in the bank probe (a multiple of 8).
    #[arg(long, default_value_t = 16384, value_parser = clap::value_parser!(u32).range(8..=1 << 24))]
    pub bank_iters: u32,
    /// Timed runs per kernel (the median and minimum are reported).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Untimed warm-up runs per kernel.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub warmup: u32,
    /// Also write every figure of the run as JSON to FILE (`memlab report` reads it back).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write a Markdown report with SVG and PNG charts into DIR.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
}

/// `--strided-bytes`: a byte count the strided-read sweep can use.
fn strided_bytes(text: &str) -> Result<usize, String> {
    coalescing::check_bytes(cli::bytes(text)?)
}

/// Runs the demos and prints the report once all have run, so that a refusal on the way (a size
/// the device has no memory for, a shape it cannot launch) prints nothing as a result; returns
/// whether every check passed.
pub fn run(args: Args) -> Result<bool> {
    let mut sizes = args.shapes.apply(Sizes {
        strided_bytes: args.strided_bytes,
        dram_bytes: hierarchy::check_dram_bytes(args.dram_bytes)?,
        bank_iters: demos::banks::check_iters(args.bank_iters)?,
        repeats: Repeats { warmup: args.warmup as usize, runs: args.runs as usize },
        ..Sizes::default()
    });
    if let Some([m, n, k]) = args.matmul_naive {
        sizes.matmul_naive = (m, n, k);
    }
    let selected =
        if args.only.is_empty() { demos::NAMES.to_vec() } else { args.only.iter().map(String::as_str).collect() };
    // Checked before the GPU work, so a run never ends in "cannot write".
    if let Some(path) = &args.json {
        output::check_file("--json", path)?;
    }
    if let Some(dir) = &args.report {
        output::check_dir("--report", dir)?;
    }
    let selected = selected.into_iter().map(demos::find).collect::<Result<Vec<_>>>()?;
    let lab = Lab::new(Gpu::open(args.device, None)?, sizes);
    let mut out = format!(
        "# memlab on {}\n\n{}\n\n",
        lab.gpu.info.name,
        report::device(args.device, &lab.gpu.info, lab.gpu.ptx.arch)
    );
    let bar = progress::bar(selected.len());
    let (inputs, mut sections) = demos::run_all(&lab, &selected, |demo, done| match done {
        false => bar.set_message(demo.name),
        true => bar.inc(1),
    })?;
    bar.finish_and_clear();
    let memcpy_gbs = inputs.memcpy_gbs();
    for section in &sections {
        out += &format!("{}\n", report::section(section, memcpy_gbs));
    }
    // The roof's clock, measured once when there are kernels to place.
    let clock =
        sections.iter().any(|s| !s.kernels.is_empty()).then(|| demos::roofline::measure_clock(&lab)).transpose()?;
    if let Some(roofline) = demos::roofline::section(&lab.gpu.info, &sections, memcpy_gbs, clock.as_ref()) {
        out += &format!("{}\n", report::section(&roofline, memcpy_gbs));
        sections.push(roofline);
    }
    let all_passed = sections.iter().all(|s| s.passed());
    // The report is printed whole at the end: a refusal midway prints no partial result.
    println!(
        "{out}{}",
        if all_passed { "All results verified." } else { "SOME RESULTS ARE WRONG: see the check column." }
    );
    let record = RunRecord {
        ordinal: args.device,
        device: lab.gpu.info.clone(),
        ptx_arch: lab.gpu.ptx.arch.to_string(),
        memcpy_gbs,
        sm_clock_ghz: clock.as_ref().and_then(demos::roofline::SmClock::ghz),
        sections,
    };
    if let Some(path) = &args.json {
        record.save(path)?;
    }
    if let Some(dir) = &args.report {
        let files = report_dir::write(dir, &record)?;
        eprintln!("report: {} files in {}", files.len(), dir.display());
    }
    Ok(all_passed)
}
