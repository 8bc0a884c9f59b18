//! `memlab run-demos`: open the device, run the demos, print the report.

use anyhow::Result;

use crate::gpu::Gpu;
use crate::lab::{Lab, Settings};
use crate::present::report_dir::{self, RunRecord};
use crate::registry::{Lesson, Options};
use crate::{cli, host_ram, phases, present::report, progress};

/// Options of `run-demos`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// CUDA device: one ordinal, a list like 0,1, or `all` (each in turn, then side by side;
    /// --json and --report then write one file or folder per device, suffixed `-gpuN`).
    #[arg(long, default_value = "0", value_parser = cli::devices)]
    pub device: cli::Devices,
    /// Demos to run (default: all, in the listed order).
    #[arg(long, num_args = 1.., value_parser = clap::builder::PossibleValuesParser::new(crate::registry::NAMES))]
    pub only: Vec<String>,
    /// Every lesson's options.
    #[command(flatten)]
    pub lessons: crate::registry::Options,
    /// For compute-sanitizer: every kernel at the sizes given, but grids that fill the GPU, L2
    /// passes, footprint sweeps and fixed buffers shrink to a few blocks (figures mean nothing);
    /// prints the kernels launched. Its figures are not measurements, so it writes no --json
    /// or --report.
    #[arg(long, conflicts_with_all = ["json", "report"])]
    pub sanitizer: bool,
    /// Then profile the lesson kernels (transpose, matmul, sgemm, tensor, coalescing, banks,
    /// occupancy) once each under Nsight Compute (`ncu` from $NCU, PATH or /usr/local/cuda/bin)
    /// and print their counters beside the models' figures (a `counters` section).
    #[arg(long, conflicts_with = "sanitizer")]
    pub counters: bool,
    /// The lessons' options from a JSON file instead of the flags (how `--counters` runs the
    /// lab again under Nsight Compute at the parent's options).
    #[arg(long, hide = true, value_name = "FILE")]
    pub lesson_options: Option<std::path::PathBuf>,
    /// Timed and warm-up runs.
    #[command(flatten)]
    pub runs: super::Runs,
    /// Output files.
    #[command(flatten)]
    pub outputs: super::Outputs,
}

/// Runs the demos on each chosen device, then puts the devices side by side; returns whether
/// every check passed.
pub fn run(mut args: Args) -> Result<bool> {
    if let Some(path) = &args.lesson_options {
        let read = std::fs::read_to_string(path).map_err(|e| e.to_string());
        match read.and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string())) {
            Ok(lessons) => args.lessons = lessons,
            Err(e) => crate::refuse!("--lesson-options {}: {e}", path.display()),
        }
    }
    if args.sanitizer {
        eprintln!("sanitizer footprints: every result is checked, but no figure is a measurement");
    }
    let settings = Settings { repeats: args.runs.repeats(), sanitizer: args.sanitizer };
    let shared = args.lessons.lessons.shared();
    let selected = if args.only.is_empty() {
        crate::registry::NAMES.to_vec()
    } else {
        args.only.iter().map(String::as_str).collect()
    };
    let selected = selected.into_iter().map(crate::registry::find).collect::<Result<Vec<_>>>()?;
    // Each lesson's refusals of these sizes, before the driver is asked anything.
    for lesson in &selected {
        (lesson.check)(&args.lessons, &shared, !args.only.is_empty())?;
    }
    // The paths as given are checked before the driver is asked for the devices; each device's
    // own (suffixed when several run, in the same folders) once they are known.
    args.outputs.for_device(0, false)?;
    // Host memory before the driver is asked anything: the demos run one after another, so the
    // largest one counts.
    let need = selected.iter().map(|d| (d, (d.host_bytes)(&args.lessons, &shared))).max_by_key(|p| p.1);
    if let Some((lesson, bytes)) = need {
        host_ram::ensure(&lesson.host_need(), bytes)?;
    }
    let ordinals = super::multi::resolve(&args.device)?;
    let several = ordinals.len() > 1;
    let outputs = ordinals.iter().map(|&o| args.outputs.for_device(o, several)).collect::<Result<Vec<_>>>()?;
    let (mut passed, mut figures) = (true, Vec::new());
    for (&ordinal, outputs) in ordinals.iter().zip(&outputs) {
        let (ok, record) = run_on(&selected, (&args.lessons, settings), ordinal, outputs, args.counters)?;
        passed &= ok;
        figures.push(run_figures(&record));
    }
    if several {
        let labels: Vec<String> = ordinals.iter().map(|o| format!("GPU {o}")).collect();
        let (header, rows) = super::multi::side_by_side(&labels, &figures);
        println!("{}\n\n{}\n", super::multi::heading(&ordinals), report::table(header, rows));
    }
    if args.sanitizer {
        println!("{}", crate::registry::launched_line());
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
                crate::lab::Rate::Gbs(v) => format!("{v:.0} GB/s"),
                crate::lab::Rate::SharedGbs(v) => format!("{v:.0} GB/s shared"),
                crate::lab::Rate::Tflops(v) => format!("{v:.2} TFLOP/s"),
            };
            (format!("{}: {}", s.name, k.kernel), format!("{rate}{}", if k.check.passed() { "" } else { " WRONG" }))
        })
    });
    memcpy.into_iter().chain(super::multi::numbered(kernels)).collect()
}

/// Runs the demos on one device and prints the report once all have run, so that a refusal on
/// the way (a size the device has no memory for, a shape it cannot launch) prints nothing as a
/// result; returns whether every check passed, and the run's record.
fn run_on(
    selected: &[&'static Lesson],
    (options, settings): (&Options, Settings),
    ordinal: u32,
    outputs: &super::Outputs,
    counters: bool,
) -> Result<(bool, RunRecord)> {
    let opened = std::time::Instant::now();
    let lab = Lab::new(Gpu::open(ordinal, None)?, settings);
    // Driver start-up and the module's JIT, before any demo.
    lab.phases.record("open device", opened.elapsed().as_secs_f64());
    let mut out = format!(
        "# memlab on {}\n\n{}\n\n",
        lab.gpu.info.name,
        report::device(ordinal, &lab.gpu.info, lab.gpu.ptx.arch)
    );
    let bar = progress::bar(selected.len());
    let sanitizer = lab.settings.sanitizer;
    // Where each demo's checked launches start in `lab.measured`, for --counters.
    let mut starts = Vec::new();
    let (inputs, mut sections) = crate::registry::run_all(&lab, selected, options, |demo, done| match done {
        // A sanitizer run stopped by a time limit says in its log which demo it was in.
        false if sanitizer => eprintln!("sanitizer run: {} ...", demo.name),
        false => {
            starts.push((demo.name, lab.measured.borrow().len()));
            bar.set_message(demo.name)
        }
        true => bar.inc(1),
    })?;
    bar.finish_and_clear();
    let memcpy_gbs = inputs.memcpy_gbs();
    for section in &sections {
        out += &format!("{}\n", report::section(section, memcpy_gbs));
    }
    // The roof's clock, measured once when there are kernels to place.
    let clock = sections
        .iter()
        .any(|s| !s.kernels.is_empty())
        .then(|| lab.phases.demo("roofline clock", || crate::summary::roofline::measure_clock(&lab)))
        .transpose()?;
    if let Some(roofline) = crate::summary::roofline::section(&lab.gpu.info, &sections, memcpy_gbs, clock.as_ref()) {
        out += &format!("{}\n", report::section(&roofline, memcpy_gbs));
        sections.push(roofline);
    }
    if let Some(counted) =
        counters.then(|| crate::counters::run(&lab, options, &starts, ordinal)).transpose()?.flatten()
    {
        out += &format!("{}\n", report::section(&counted, memcpy_gbs));
        sections.push(counted);
    }
    let all_passed = sections.iter().all(|s| s.passed());
    let phases = lab.phases.take();
    let (header, rows) = phases::table(&phases);
    eprintln!("{}", report::table(header, rows));
    if let Some((header, rows)) = phases::steps_table(&phases) {
        eprintln!("{}", report::table(header, rows));
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
        memcpy_gbs,
        sm_clock_ghz: clock.as_ref().and_then(crate::summary::roofline::SmClock::ghz),
        sections,
        phases,
    };
    if let Some(path) = &outputs.json {
        record.save(path)?;
    }
    if let Some(dir) = &outputs.report {
        let files = report_dir::write(dir, &record)?;
        eprintln!("report: {} files in {}", files.len(), dir.display());
    }
    Ok((all_passed, record))
}
