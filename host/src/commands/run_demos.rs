//! `memlab run-demos`: open the device, run the demos, print the report.

use std::path::PathBuf;

use anyhow::Result;

use crate::demos::{self, Lab, Sizes, coalescing};
use crate::gpu::Gpu;
use crate::gpu::timing::Repeats;
use crate::report_dir::{self, RunRecord};
use crate::{cli, progress, report};

/// Options of `run-demos`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// CUDA device: one ordinal, a list like 0,1, or `all` (each in turn, then side by side;
    /// --json and --report then write one file or folder per device, suffixed `-gpuN`).
    #[arg(long, default_value = "0", value_parser = cli::devices)]
    pub device: cli::Devices,
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

/// Runs the demos on each chosen device, then puts the devices side by side; returns whether
/// every check passed.
pub fn run(args: Args) -> Result<bool> {
    let mut sizes = args.shapes.apply(Sizes {
        strided_bytes: args.strided_bytes,
        bank_iters: demos::banks::check_iters(args.bank_iters)?,
        repeats: Repeats { warmup: args.warmup as usize, runs: args.runs as usize },
        ..Sizes::default()
    });
    if let Some([m, n, k]) = args.matmul_naive {
        sizes.matmul_naive = (m, n, k);
    }
    let ordinals = super::multi::resolve(&args.device)?;
    let several = ordinals.len() > 1;
    let (mut passed, mut figures) = (true, Vec::new());
    for &ordinal in &ordinals {
        let (ok, record) = run_on(&args, sizes.clone(), ordinal, several)?;
        passed &= ok;
        figures.push(run_figures(&record));
    }
    if several {
        let labels: Vec<String> = ordinals.iter().map(|o| format!("GPU {o}")).collect();
        let (header, rows) = super::multi::side_by_side(&labels, &figures);
        println!("{}\n\n{}\n", super::multi::heading(&ordinals), report::table(header, rows));
    }
    Ok(passed)
}

/// The figures a run puts side by side with other devices': the memcpy ceiling, then every
/// kernel row's rate, named `demo: kernel`.
pub fn run_figures(record: &RunRecord) -> Vec<(String, String)> {
    let memcpy = record.memcpy_gbs.map(|g| ("memcpy: device-to-device".to_string(), format!("{g:.0} GB/s")));
    let kernels = record.sections.iter().flat_map(|s| {
        s.kernels.iter().map(move |k| {
            let rate = match k.rate {
                demos::Rate::Gbs(v) => format!("{v:.0} GB/s"),
                demos::Rate::SharedGbs(v) => format!("{v:.0} GB/s shared"),
                demos::Rate::Tflops(v) => format!("{v:.2} TFLOP/s"),
            };
            (format!("{}: {}", s.name, k.kernel), format!("{rate}{}", if k.check.passed() { "" } else { " WRONG" }))
        })
    });
    memcpy.into_iter().chain(super::multi::numbered(kernels)).collect()
}

/// Runs the demos on one device and prints the report once all have run, so that a refusal on
/// the way (a size the device has no memory for, a shape it cannot launch) prints nothing as a
/// result; returns whether every check passed, and the run's record.
fn run_on(args: &Args, sizes: Sizes, ordinal: u32, several: bool) -> Result<(bool, RunRecord)> {
    let names: Vec<&str> =
        if args.only.is_empty() { demos::NAMES.to_vec() } else { args.only.iter().map(String::as_str).collect() };
    let gpu = Gpu::open(ordinal, None)?;
    let mut out = format!("# memlab on {}\n\n{}\n\n", gpu.info.name, report::device(ordinal, &gpu.info, gpu.ptx.arch));
    let mut lab = Lab { gpu, sizes, memcpy_gbs: None };
    let mut sections = Vec::new();
    let bar = progress::bar(names.len());
    for name in names {
        bar.set_message(name.to_string());
        let section = demos::run(&mut lab, name)?;
        out += &format!("{}\n", report::section(&section, lab.memcpy_gbs));
        bar.inc(1);
        sections.push(section);
    }
    bar.finish_and_clear();
    let all_passed = sections.iter().all(|s| s.passed());
    if let Some(roofline) = demos::roofline::section(&lab, &sections) {
        out += &format!("{}\n", report::section(&roofline, lab.memcpy_gbs));
        sections.push(roofline);
    }
    // The report is printed whole at the end: a refusal midway prints no partial result.
    println!(
        "{out}{}",
        if all_passed { "All results verified." } else { "SOME RESULTS ARE WRONG: see the check column." }
    );
    let record = RunRecord {
        ordinal,
        device: lab.gpu.info.clone(),
        ptx_arch: lab.gpu.ptx.arch.to_string(),
        memcpy_gbs: lab.memcpy_gbs,
        sections,
    };
    if let Some(path) = &args.json {
        record.save(&super::multi::per_device_path(path, ordinal, several))?;
    }
    if let Some(dir) = &args.report {
        let dir = super::multi::per_device_path(dir, ordinal, several);
        let files = report_dir::write(&dir, &record)?;
        eprintln!("report: {} files in {}", files.len(), dir.display());
    }
    Ok((all_passed, record))
}
