//! `memlab bench`: every Rust kernel against its CUDA C++ twin (`bench/twins.cu`, built with
//! nvcc into a cubin and loaded as a second module in the same context), timed alternately in
//! one process, plus the memcpy and cuBLAS ceilings; prints the table and writes it as JSON.
//!
//! It runs the demos whose kernels have twins ([`crate::lab::Lesson::twins`]) through the same runner
//! and measure path as `run-demos`, with the twins attached to the lab: for each kernel a demo
//! measures, [`crate::lab::measure`] checks both results, then times `--rounds` rounds of one Rust
//! launch and one twin launch back to back (Rust, twin, Rust, twin, ...) after two warm-up
//! launches of each; the report gives the medians and the speed ratio `twin time / Rust time`
//! (1.0: same speed; above 1: Rust is faster).
//!
//! With `--checked` the second module is the kernels' checked build instead (`ptx::CHECKED`:
//! every index of a global view or shared tile bounds-checked, trapping when out of bounds),
//! timed against the release build through the same path: the ratio is what the bounds checks
//! cost each kernel, and both builds' results are checked.

use std::cell::RefCell;
use std::path::PathBuf;

use anyhow::Result;
use cust::module::Module;

use crate::demos;
use crate::gpu::context::load_ptx_text;
use crate::gpu::cublas::NO_CUBLAS;
use crate::gpu::timing::Repeats;
use crate::gpu::{Gpu, describe};
use crate::lab::{Lab, Level, Rate, Section, Settings, TwinRow, Twins};
use crate::present::table::{self, Layout};
use crate::ptx;
use crate::registry::Lesson;
use crate::series::names;
use crate::{present::report, refuse};

/// Options of `bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// CUDA device: one ordinal, a list like 0,1, or `all` (each in turn, then side by side).
    #[arg(long, default_value = "0", value_parser = crate::cli::devices)]
    pub device: crate::cli::Devices,
    /// The CUDA C++ twins, a cubin or PTX built from bench/twins.cu for this GPU (`cargo xtask
    /// bench` builds it; by hand on a cc 9.0 GPU: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -cubin -o bench/build/twins.cubin bench/twins.cu).
    #[arg(long, default_value = "bench/build/twins.cubin")]
    pub twins: PathBuf,
    /// Time each kernel's release build against its checked build (bounds checks on, the
    /// embedded sm_90_checked PTX; cc 9.0 and up) instead of against the CUDA C++ twins.
    #[arg(long)]
    pub checked: bool,
    /// Write the results to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Demos to compare (default: every demo whose kernels have twins; with --checked, every demo).
    #[arg(long, num_args = 1.., value_parser = clap::builder::PossibleValuesParser::new(crate::registry::NAMES))]
    pub only: Vec<String>,
    /// Alternating rounds per kernel (medians are reported).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// Every lesson's options.
    #[command(flatten)]
    pub lessons: crate::registry::Options,
}

/// The demos whose kernels have CUDA C++ twins.
fn twinned() -> Vec<&'static str> {
    crate::registry::DEMOS.iter().filter(|d| d.needs.twins).map(|d| d.name).collect()
}

/// The ceiling a rate is read against.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ceiling {
    /// Device-to-device memcpy, GB/s.
    Memcpy(f64),
    /// The library product of the same input type and size (cuBLAS, or cuBLASLt for FP8),
    /// TFLOP/s.
    Cublas(f64),
    /// None (probes of shared memory or registers).
    None,
}

/// What the Rust kernels are timed against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Against {
    /// The CUDA C++ twins (`--twins`).
    Twins,
    /// The checked build of the same kernels (`--checked`).
    Checked,
}

impl Against {
    /// Names of the two sides in the table: the timed build, then what it is timed against.
    fn sides(self) -> (&'static str, &'static str) {
        match self {
            Against::Twins => ("Rust", "C++"),
            Against::Checked => ("release", "checked"),
        }
    }

    /// The ratio column's name and the line that explains it.
    fn ratio(self) -> (&'static str, &'static str) {
        match self {
            Against::Twins => (
                "speed ratio",
                "speed ratio = CUDA C++ median time / Rust median time (1.00: equal, above 1: Rust faster)",
            ),
            Against::Checked => (
                "checked / release",
                "checked / release = checked build's median time / release build's (1.00: the bounds checks cost nothing; 1.10: 10% slower)",
            ),
        }
    }
}

/// One line of the report: a comparison and its ceiling.
struct Row {
    twin: TwinRow,
    ceiling: Ceiling,
}

impl Row {
    /// Twin time over Rust time: Rust's speed relative to CUDA C++.
    fn speed_ratio(&self) -> f64 {
        self.twin.timing.1.median_ms / self.twin.timing.0.median_ms
    }

    /// Rust's rate and the twin's.
    fn rates(&self) -> (Rate, Rate) {
        let (rust, twin) = &self.twin.timing;
        (self.twin.work.rate(rust), self.twin.work.rate(twin))
    }

    /// The Rust rate as a share of the ceiling.
    fn share(&self) -> Option<f64> {
        match self.ceiling {
            Ceiling::Memcpy(c) | Ceiling::Cublas(c) => Some(self.rates().0.value() / c),
            Ceiling::None => None,
        }
    }
}

/// cuBLAS SGEMM TFLOP/s per size label (`MxNxK`), as the SGEMM demo measured it.
fn cublas_rates(sections: &[Section]) -> Vec<(String, f64)> {
    let series = sections.iter().flat_map(|s| &s.series).filter(|s| s.name == names::REFERENCE);
    series
        .flat_map(|s| s.points.iter())
        .filter_map(|p| Some((p.label.as_ref()?.strip_prefix("cuBLAS ")?.to_string(), p.y)))
        .collect()
}

/// The ceiling of one comparison: memcpy for global-memory GB/s, cuBLAS at the same size for
/// TFLOP/s.
fn ceiling(row: &TwinRow, memcpy: Option<f64>, cublas: &[(String, f64)]) -> Ceiling {
    match row.work.rate(&row.timing.0) {
        Rate::Gbs(_) if row.work.level == Level::Global => memcpy.map_or(Ceiling::None, Ceiling::Memcpy),
        Rate::Tflops(_) => {
            let key = ceiling_key(&row.kernel, &row.size);
            cublas.iter().find(|(size, _)| *size == key).map_or(Ceiling::None, |c| Ceiling::Cublas(c.1))
        }
        _ => Ceiling::None,
    }
}

/// The reference series' key (its label without "cuBLAS ") that `kernel`'s TFLOP/s at `size`
/// are read against: the tensor ladder's yardstick is the library product of its input type
/// ("cuBLAS BF16 MxNxK", "cuBLAS GemmEx TF32 MxNxK" and cuBLASLt's "cuBLAS FP8 MxNxK"), the
/// SGEMM's FP32 ("cuBLAS MxNxK").
fn ceiling_key(kernel: &str, size: &str) -> String {
    use memlab_contracts::tensor::{FP8, LADDER, TF32};
    if LADDER.iter().any(|r| r.name == kernel) {
        format!("BF16 {size}")
    } else if kernel == TF32.name {
        format!("GemmEx TF32 {size}")
    } else if kernel == FP8.name {
        format!("FP8 {size}")
    } else {
        size.to_string()
    }
}

/// Runs the comparison on each chosen device, then puts the devices side by side; returns
/// whether every result (Rust and twin) was right.
pub fn run(args: Args) -> Result<bool> {
    if !args.checked
        && let Some(o) = args.only.iter().find(|o| !twinned().contains(&o.as_str()))
    {
        refuse!(
            "bench --only {o}: that demo's kernels have no CUDA C++ twins (demos with twins: {}; --checked times every demo)",
            twinned().join(", ")
        );
    }
    // The path as given is checked before the driver is asked for the devices; each device's
    // own (suffixed when several run, in the same folder) once they are known.
    if let Some(path) = &args.json {
        crate::present::output::check_file("--json", path)?;
    }
    let settings = Settings { repeats: Repeats { warmup: 3, runs: args.rounds as usize }, sanitizer: false };
    let shared = args.lessons.lessons.shared();
    // The checked build has every kernel, so `--checked` also times the demos without twins.
    let selected: Vec<&'static Lesson> = crate::registry::DEMOS
        .iter()
        .filter(|d| (d.needs.twins || args.checked) && (args.only.is_empty() || args.only.iter().any(|o| o == d.name)))
        .collect();
    // Each lesson's refusals of these sizes, before the driver is asked anything.
    for lesson in &selected {
        (lesson.check)(&args.lessons, &shared, !args.only.is_empty())?;
    }
    let ordinals = super::multi::resolve(&args.device)?;
    let several = ordinals.len() > 1;
    let json_paths: Vec<Option<PathBuf>> =
        ordinals.iter().map(|&o| args.json.as_ref().map(|p| super::multi::per_device_path(p, o, several))).collect();
    for path in json_paths.iter().flatten() {
        crate::present::output::check_file("--json", path)?;
    }
    let (mut passed, mut figures) = (true, Vec::new());
    for (&ordinal, json) in ordinals.iter().zip(&json_paths) {
        let (ok, f) = run_on(&args, ordinal, settings, &selected, json.as_deref())?;
        passed &= ok;
        figures.push(f);
    }
    if several {
        let labels: Vec<String> = ordinals.iter().map(|o| format!("GPU {o}")).collect();
        let (header, rows) = super::multi::side_by_side(&labels, &figures);
        println!("\n{}\n\n{}", super::multi::heading(&ordinals), report::table(header, rows));
    }
    Ok(passed)
}

/// The comparison on one device; returns whether every result was right, and its figures
/// (memcpy, then each kernel's speed ratio) for the side-by-side table.
fn run_on(
    args: &Args,
    ordinal: u32,
    settings: Settings,
    selected: &[&Lesson],
    json_path: Option<&std::path::Path>,
) -> Result<(bool, Vec<(String, String)>)> {
    let gpu = Gpu::open(ordinal, None)?;
    let against = if args.checked { Against::Checked } else { Against::Twins };
    let module = comparison_module(args, &gpu, against, ordinal)?;
    println!("# memlab bench on {}\n\n{}\n", gpu.info.name, report::device(ordinal, &gpu.info, gpu.ptx.arch));
    let rounds = args.rounds as usize;
    let twins = Twins { module, rounds, rows: RefCell::default(), missing: RefCell::default() };
    let lab = Lab { twins: Some(twins), ..Lab::new(gpu, settings) };
    let (inputs, sections) = crate::registry::run_all(&lab, selected, &args.lessons, |_, _| ())?;
    let memcpy = inputs.memcpy_gbs();
    let cublas = cublas_rates(&sections);
    let twins = lab.twins.as_ref().expect("the lab has twins");
    // A kernel measured twice at one size (the matmul demo's `matmul_tiled_32` is also rung 1
    // of the ladder) is listed once.
    let mut rows: Vec<Row> = Vec::new();
    for twin in twins.rows.take() {
        if !rows.iter().any(|r| r.twin.kernel == twin.kernel && r.twin.size == twin.size) {
            rows.push(Row { ceiling: ceiling(&twin, memcpy, &cublas), twin });
        }
    }
    let notes = sections.iter().filter(|s| s.name == "sgemm").flat_map(|s| &s.notes);
    // The skipped rungs, and the configuration rung 8 ran at each size with its parameters.
    for note in notes.filter(|n| n.starts_with("skipped") || n.starts_with(demos::sgemm::TUNED_NOTE)) {
        println!("{note}\n");
    }
    println!("memcpy device-to-device: {}", memcpy.map_or("not measured".into(), |g| format!("{g:.0} GB/s")));
    for (size, t) in &cublas {
        let named = [("BF16 ", "cuBLAS GemmEx BF16"), ("GemmEx TF32 ", "cuBLAS GemmEx TF32"), ("FP8 ", "cuBLASLt FP8")];
        match named.iter().find_map(|(key, name)| Some((name, size.strip_prefix(key)?))) {
            Some((name, size)) => println!("{name} {size}: {t:.1} TFLOP/s"),
            None => println!("cuBLAS SGEMM {size}: {t:.2} TFLOP/s"),
        }
    }
    if cublas.is_empty() {
        println!("{NO_CUBLAS}");
    }
    let missing = twins.missing.take();
    if !missing.is_empty() && against == Against::Twins {
        println!("no CUDA C++ twin in {}: {} (timed without one)", args.twins.display(), missing.join(", "));
    }
    println!("\n{}\n", table(Layout::current(), &rows, against));
    println!("{}", against.ratio().1);
    let passed = sections.iter().all(Section::passed)
        && rows.iter().all(|r| r.twin.checks.0.passed() && r.twin.checks.1.passed());
    if let Some(path) = json_path {
        let doc = json(&lab, rounds, &rows, memcpy, &cublas, against);
        crate::present::output::write(path, serde_json::to_string_pretty(&doc)?)?;
        println!("wrote {}", path.display());
    }
    println!("{}", if passed { "All results verified." } else { "SOME RESULTS ARE WRONG: see the check column." });
    let memcpy_text = memcpy.map_or("not measured".into(), |g| format!("{g:.0} GB/s"));
    let figures = std::iter::once(("memcpy device-to-device".to_string(), memcpy_text))
        .chain(super::multi::numbered(
            rows.iter()
                .map(|r| (format!("{} {} speed ratio", r.twin.kernel, r.twin.size), format!("{:.3}", r.speed_ratio()))),
        ))
        .collect();
    Ok((passed, figures))
}

/// The module the lab's kernels are compared with: the CUDA C++ twins from `--twins`, or the
/// bounds-checked build of the same kernels (`--checked`, cc 7.0 or newer).
fn comparison_module(args: &Args, gpu: &Gpu, against: Against, ordinal: u32) -> Result<Module> {
    Ok(match against {
        Against::Checked if gpu.info.cc < ptx::CHECKED.cc => refuse!(
            "--checked needs compute capability {}.{} or newer (the checked build is {} PTX); device {ordinal} is {}.{}",
            ptx::CHECKED.cc.0,
            ptx::CHECKED.cc.1,
            ptx::CHECKED.arch,
            gpu.info.cc.0,
            gpu.info.cc.1
        ),
        Against::Checked => load_ptx_text("checked", ptx::CHECKED.text, None)?,
        Against::Twins => match Module::from_file(&args.twins) {
            Ok(m) => m,
            Err(e) => refuse!(
                "cannot load the twins from {}: {} (build them: nvcc -O3 -arch=native -cubin -o {} bench/twins.cu)",
                args.twins.display(),
                describe(e),
                args.twins.display()
            ),
        },
    })
}

fn rate_text(rate: Rate) -> String {
    match rate {
        Rate::Gbs(g) => format!("{g:.0} GB/s"),
        Rate::SharedGbs(g) => format!("{g:.0} GB/s shared"),
        Rate::Tflops(t) => format!("{t:.2} TFLOP/s"),
    }
}

/// The comparison table in `layout` (columns equal on every row said once above it in the
/// terminal).
fn table(layout: Layout, rows: &[Row], against: Against) -> String {
    let (ours, theirs) = against.sides();
    let header = vec![
        "kernel".to_string(),
        "size".into(),
        format!("regs {ours} / {theirs}"),
        format!("{ours} ms"),
        format!("{theirs} ms"),
        against.ratio().0.into(),
        format!("{ours} rate"),
        format!("{theirs} rate"),
        format!("{ours} share"),
        format!("check {ours} / {theirs}"),
    ];
    let body = rows.iter().map(|r| {
        let (rust_rate, twin_rate) = r.rates();
        let t = &r.twin;
        let share = match (r.share(), r.ceiling) {
            (Some(s), Ceiling::Memcpy(_)) => format!("{:.1}% of memcpy", 100.0 * s),
            (Some(s), _) => format!("{:.1}% of cuBLAS", 100.0 * s),
            (None, _) => "-".into(),
        };
        vec![
            t.kernel.clone(),
            t.size.clone(),
            format!("{} / {}", t.regs.0, t.regs.1),
            format!("{:.4}", t.timing.0.median_ms),
            format!("{:.4}", t.timing.1.median_ms),
            format!("{:.3}", r.speed_ratio()),
            rate_text(rust_rate),
            rate_text(twin_rate),
            share,
            format!("{} / {}", t.checks.0.summary(&t.check_kind), t.checks.1.summary(&t.check_kind)),
        ]
    });
    table::render_condensed(layout, header, body.collect())
}

/// The JSON record; with `--checked` the `cuda_*` fields are the checked build's.
fn json(
    lab: &Lab,
    rounds: usize,
    rows: &[Row],
    memcpy: Option<f64>,
    cublas: &[(String, f64)],
    against: Against,
) -> serde_json::Value {
    let info = &lab.gpu.info;
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let t = &r.twin;
            let (unit, rust, twin) = match r.rates() {
                (Rate::Gbs(a), Rate::Gbs(b)) => ("GB/s", a, b),
                (Rate::SharedGbs(a), Rate::SharedGbs(b)) => ("shared GB/s", a, b),
                (a, b) => ("TFLOP/s", a.value(), b.value()),
            };
            serde_json::json!({
                "kernel": t.kernel,
                "size": t.size,
                "regs_rust": t.regs.0,
                "regs_cuda": t.regs.1,
                "rust_median_ms": t.timing.0.median_ms,
                "rust_min_ms": t.timing.0.min_ms,
                "cuda_median_ms": t.timing.1.median_ms,
                "cuda_min_ms": t.timing.1.min_ms,
                "speed_ratio_cuda_time_over_rust_time": r.speed_ratio(),
                "unit": unit,
                "rust_rate": rust,
                "cuda_rate": twin,
                "rust_share_of_ceiling": r.share(),
                "ceiling": match r.ceiling { Ceiling::Memcpy(_) => "memcpy", Ceiling::Cublas(_) => "cuBLAS", Ceiling::None => "none" },
                "rust_check_passed": t.checks.0.passed(),
                "cuda_check_passed": t.checks.1.passed(),
            })
        })
        .collect();
    serde_json::json!({
        "device": info.name,
        "compute_capability": format!("{}.{}", info.cc.0, info.cc.1),
        "rounds": rounds,
        "against": match against { Against::Twins => "cuda_cpp_twins", Against::Checked => "checked_build" },
        "memcpy_gbs": memcpy,
        "cublas_sgemm_tflops": cublas.iter().map(|(s, t)| serde_json::json!({ "size": s, "tflops": t })).collect::<Vec<_>>(),
        "kernels": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::timing::Timing;
    use crate::lab::Work;
    use crate::verify::Check;

    /// A comparison of `kernel` at `size` shaped like the H200 bench's (docs/measurements/twins.md).
    fn twin(kernel: &str, size: &str, work: Work) -> TwinRow {
        let check = Check { checked: 67108864, mismatches: 0, first_bad: None, digest: 0x46ab_4307_c888_2a11 };
        TwinRow {
            kernel: kernel.into(),
            size: size.into(),
            regs: (126, 126),
            timing: (
                Timing { median_ms: 24.8864, min_ms: 24.8, runs: 15 },
                Timing { median_ms: 24.6273, min_ms: 24.6, runs: 15 },
            ),
            work,
            checks: (check.clone(), check),
            check_kind: "sampled dot products".into(),
        }
    }

    /// Rows shaped like the H200 bench (docs/measurements/twins.md): the longest names, sizes and checks.
    fn rows() -> Vec<Row> {
        let row = |kernel: &str, size: &str, work: Work, ceiling| Row { twin: twin(kernel, size, work), ceiling };
        let flop = 2.0 * 8192f64.powi(3);
        vec![
            row("transpose_vectorized", "8192x8192", Work::global_bytes(5.4e8), Ceiling::Memcpy(4022.0)),
            row(
                "sgemm_6_double_buffered",
                "8192x8192x8192",
                Work { flop, bytes: 8.0e8, level: Level::Global },
                Ceiling::Cublas(50.95),
            ),
            row(
                "shared_bank_probe",
                "stride 32",
                Work { flop: 0.0, bytes: 2.6e10, level: Level::Shared },
                Ceiling::None,
            ),
        ]
    }

    #[test]
    fn each_tensor_rung_is_read_against_the_library_product_of_its_input_type() {
        use memlab_contracts::tensor::{FP8, TF32, TMA_STORE, WGMMA};
        let size = "8192x8192x8192";
        assert_eq!(ceiling_key(WGMMA.name, size), "BF16 8192x8192x8192");
        assert_eq!(ceiling_key(TMA_STORE.name, size), "BF16 8192x8192x8192");
        assert_eq!(ceiling_key(TF32.name, size), "GemmEx TF32 8192x8192x8192");
        assert_eq!(ceiling_key(FP8.name, size), "FP8 8192x8192x8192");
        assert_eq!(ceiling_key("sgemm_6_double_buffered", size), size);
        // Through the reference series as the tensor lesson labels it: the FP8 rung's share is
        // of cuBLASLt, not of the SGEMM's cuBLAS at the same size.
        let labels = [("cuBLAS BF16", 620.0), ("cuBLAS FP8", 1250.0), ("cuBLAS", 51.0)];
        let points = labels.map(|(l, t)| (0.0, t, format!("{l} {size}")));
        let tensor = Section {
            series: vec![crate::series::Series::labelled(names::REFERENCE, "", "TFLOP/s", points)],
            ..Section::default()
        };
        let rates = cublas_rates(&[tensor]);
        let work = Work { flop: 2.0 * 8192f64.powi(3), bytes: 8.0e8, level: Level::Global };
        let fp8 = twin(FP8.name, size, work);
        assert_eq!(ceiling(&fp8, None, &rates), Ceiling::Cublas(1250.0));
        assert_eq!(ceiling(&twin(WGMMA.name, size, work), None, &rates), Ceiling::Cublas(620.0));
    }

    #[test]
    fn the_table_fits_the_terminal_and_markdown_keeps_every_column() {
        for width in [100, 160] {
            let t = table(Layout::Terminal(width), &rows(), Against::Twins);
            assert!(table::fits(&t, width), "{width}:\n{t}");
            assert!(t.contains("sgemm_6_double_buffered") && t.contains("44.18 TFLOP/s"), "{t}");
        }
        let md = table(Layout::Markdown, &rows(), Against::Twins);
        assert_eq!(md.lines().count(), 5, "{md}");
        assert!(md.lines().next().unwrap().contains(" check Rust / C++ "), "{md}");
        // `--checked`: the same rows, release against the checked build.
        let t = table(Layout::Terminal(100), &rows(), Against::Checked);
        assert!(table::fits(&t, 100), "{t}");
        let md = table(Layout::Markdown, &rows(), Against::Checked);
        let header = md.lines().next().unwrap();
        assert!(header.contains(" checked / release ") && header.contains(" check release / checked "), "{md}");
        assert!(!md.contains("C++"), "{md}");
    }
}
