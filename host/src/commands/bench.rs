//! `memlab bench`: every Rust kernel against its CUDA C++ twin (`bench/twins.cu`, built with
//! nvcc into a cubin and loaded as a second module in the same context), timed alternately in
//! one process, plus the memcpy and cuBLAS ceilings; prints the table and writes it as JSON.
//!
//! Per kernel: both results are checked once, then `--rounds` rounds each time one Rust launch
//! and one twin launch back to back (Rust, twin, Rust, twin, ...), after two warm-up launches of
//! each; the report gives the medians and the speed ratio `twin time / Rust time` (1.0: same
//! speed; above 1: Rust is faster).

use std::path::PathBuf;

use anyhow::Result;
use cust::function::{Function, FunctionAttribute};
use cust::module::Module;

use crate::demos::sgemm::{NO_CUBLAS, Operands, Rung, available, time_cublas};
use crate::demos::{self, Lab, Rate, Sizes, download, poison, poisoned, upload};
use crate::gpu::cublas::Cublas;
use crate::gpu::launch::{Arg, LaunchShape, launch, launch_function};
use crate::gpu::timing::{Repeats, Timing, time};
use crate::gpu::{Gpu, describe, kernel};
use crate::verify::{self, Check};
use crate::{reference, refuse, report};

/// Options of `bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// CUDA device: one ordinal, a list like 0,1, or `all` (each in turn, then side by side).
    #[arg(long, default_value = "0", value_parser = crate::cli::devices)]
    pub device: crate::cli::Devices,
    /// The CUDA C++ twins, a cubin or PTX built from bench/twins.cu for this GPU (`cargo xtask
    /// bench` builds it; by hand: nvcc -O3 -arch=sm_90 -cubin -o bench/build/twins.cubin bench/twins.cu).
    #[arg(long, default_value = "bench/build/twins.cubin")]
    pub twins: PathBuf,
    /// Write the results to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Alternating rounds per kernel (medians are reported).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// Problem shapes.
    #[command(flatten)]
    pub shapes: super::Shapes,
}

/// The ceiling a rate is read against.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ceiling {
    /// Device-to-device memcpy, GB/s.
    Memcpy(f64),
    /// cuBLAS SGEMM at the same size, TFLOP/s.
    Cublas(f64),
    /// None (probes of shared memory or registers).
    None,
}

/// One line of the report.
#[derive(Debug, Clone)]
struct Row {
    kernel: &'static str,
    size: String,
    regs: (u32, u32),
    rust: Timing,
    twin: Timing,
    rust_rate: Rate,
    twin_rate: Rate,
    ceiling: Ceiling,
    checks: (Check, Check),
    check_kind: &'static str,
}

impl Row {
    /// Twin time over Rust time: Rust's speed relative to CUDA C++.
    fn speed_ratio(&self) -> f64 {
        self.twin.median_ms / self.rust.median_ms
    }

    /// The Rust rate as a share of the ceiling.
    fn share(&self) -> Option<f64> {
        match self.ceiling {
            Ceiling::Memcpy(c) | Ceiling::Cublas(c) => Some(self.rust_rate.value() / c),
            Ceiling::None => None,
        }
    }
}

/// The amount of work one launch does, turned into a rate.
#[derive(Clone, Copy)]
enum Work {
    /// Global bytes read + written.
    Bytes(f64),
    /// Shared-memory bytes loaded.
    SharedBytes(f64),
    /// Floating-point operations.
    Flop(f64),
}

impl Work {
    fn rate(self, t: &Timing) -> Rate {
        match self {
            Work::Bytes(b) => Rate::Gbs(t.gbs(b)),
            Work::SharedBytes(b) => Rate::SharedGbs(t.gbs(b)),
            Work::Flop(f) => Rate::Tflops(t.tflops(f)),
        }
    }
}

/// One kernel launch to compare.
struct Case<'a> {
    kernel: &'static str,
    size: String,
    shape: LaunchShape,
    args: &'a [Arg],
    work: Work,
    ceiling: Ceiling,
}

/// The open device, the twins' module and the run's settings.
struct Bench {
    lab: Lab,
    twins: Module,
    rounds: usize,
    rows: Vec<Row>,
}

impl Bench {
    fn twin(&self, name: &str) -> Result<Function<'_>> {
        match self.twins.get_function(name) {
            Ok(f) => Ok(f),
            Err(e) => refuse!("the twins module has no kernel `{name}`: {}", describe(e)),
        }
    }

    /// Checks and times one case. `reset` prepares the output `out` before each checked
    /// launch, `check` reads it afterwards (the Rust result first, then the twin's).
    fn compare<O>(
        &mut self,
        case: Case<'_>,
        out: &mut O,
        reset: impl Fn(&mut O) -> Result<()>,
        mut check: impl FnMut(&O) -> Result<(Check, &'static str)>,
    ) -> Result<()> {
        let gpu = &self.lab.gpu;
        let twin = self.twin(case.kernel)?;
        let rust_launch = || launch(gpu, case.kernel, &case.shape, case.args);
        let twin_launch = || launch_function(gpu, &twin, case.kernel, &case.shape, case.args);
        let sync =
            || gpu.stream.synchronize().map_err(|e| anyhow::anyhow!("`{}` failed: {}", case.kernel, describe(e)));
        reset(out)?;
        rust_launch()?;
        sync()?;
        let (rust_check, kind) = check(out)?;
        reset(out)?;
        twin_launch()?;
        sync()?;
        let (twin_check, _) = check(out)?;
        for _ in 0..2 {
            rust_launch()?;
            twin_launch()?;
        }
        let once = Repeats { warmup: 0, runs: 1 };
        let (mut rust_ms, mut twin_ms) = (Vec::new(), Vec::new());
        for _ in 0..self.rounds {
            rust_ms.push(time(gpu, once, rust_launch)?.median_ms);
            twin_ms.push(time(gpu, once, twin_launch)?.median_ms);
        }
        let (rust, twin_t) = (Timing::from_runs(rust_ms).unwrap(), Timing::from_runs(twin_ms).unwrap());
        let twin_regs =
            twin.get_attribute(FunctionAttribute::NumRegisters).map_err(|e| anyhow::anyhow!(describe(e)))?;
        self.rows.push(Row {
            kernel: case.kernel,
            size: case.size,
            regs: (kernel::attributes(gpu, case.kernel)?.regs, twin_regs.max(0) as u32),
            rust_rate: case.work.rate(&rust),
            twin_rate: case.work.rate(&twin_t),
            rust,
            twin: twin_t,
            ceiling: case.ceiling,
            checks: (rust_check, twin_check),
            check_kind: kind,
        });
        Ok(())
    }
}

/// Runs the comparison on each chosen device, then puts the devices side by side; returns
/// whether every result (Rust and twin) was right.
pub fn run(args: Args) -> Result<bool> {
    let ordinals = super::multi::resolve(&args.device)?;
    let several = ordinals.len() > 1;
    let (mut passed, mut figures) = (true, Vec::new());
    for &ordinal in &ordinals {
        let json = args.json.as_ref().map(|p| super::multi::per_device_path(p, ordinal, several));
        let (ok, f) = run_on(&args, ordinal, json.as_deref())?;
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
fn run_on(args: &Args, ordinal: u32, json_path: Option<&std::path::Path>) -> Result<(bool, Vec<(String, String)>)> {
    let gpu = Gpu::open(ordinal, None)?;
    let twins = match Module::from_file(&args.twins) {
        Ok(m) => m,
        Err(e) => refuse!(
            "cannot load the twins from {}: {} (build them: nvcc -O3 -arch=native -cubin -o {} bench/twins.cu)",
            args.twins.display(),
            describe(e),
            args.twins.display()
        ),
    };
    println!("# memlab bench on {}\n\n{}\n", gpu.info.name, report::device(ordinal, &gpu.info, gpu.ptx.arch));
    let sizes =
        args.shapes.apply(Sizes { repeats: Repeats { warmup: 3, runs: args.rounds as usize }, ..Sizes::default() });
    let mut bench =
        Bench { lab: Lab { gpu, sizes, memcpy_gbs: None }, twins, rounds: args.rounds as usize, rows: Vec::new() };
    demos::memcpy::run(&mut bench.lab)?;
    let memcpy = bench.lab.memcpy_gbs.unwrap_or(f64::NAN);
    transposes(&mut bench, Ceiling::Memcpy(memcpy))?;
    let cublas = Cublas::open(&bench.lab.gpu)?;
    let mut cublas_tflops = Vec::new();
    matmuls(&mut bench, cublas.as_ref(), &mut cublas_tflops)?;
    probes(&mut bench, memcpy)?;
    let table = table(&bench.rows);
    println!("memcpy device-to-device: {memcpy:.0} GB/s");
    for (size, t) in &cublas_tflops {
        println!("cuBLAS SGEMM {size}: {}", t.map_or("skipped".into(), |t| format!("{t:.2} TFLOP/s")));
    }
    if cublas.is_none() {
        println!("{NO_CUBLAS}");
    }
    println!("\n{table}\n");
    println!("speed ratio = CUDA C++ median time / Rust median time (1.00: equal, above 1: Rust faster)");
    let passed = bench.rows.iter().all(|r| r.checks.0.passed() && r.checks.1.passed());
    if let Some(path) = json_path {
        let doc = json(&bench, memcpy, &cublas_tflops);
        if let Err(e) = std::fs::write(path, serde_json::to_string_pretty(&doc)?) {
            refuse!("cannot write {}: {e}", path.display());
        }
        println!("wrote {}", path.display());
    }
    println!("{}", if passed { "All results verified." } else { "SOME RESULTS ARE WRONG: see the check column." });
    let figures = std::iter::once(("memcpy device-to-device".to_string(), format!("{memcpy:.0} GB/s")))
        .chain(super::multi::numbered(
            bench
                .rows
                .iter()
                .map(|r| (format!("{} {} speed ratio", r.kernel, r.size), format!("{:.3}", r.speed_ratio()))),
        ))
        .collect();
    Ok((passed, figures))
}

/// Copy and the transposes (kernels-gpu `transpose`), GB/s against memcpy.
fn transposes(bench: &mut Bench, ceiling: Ceiling) -> Result<()> {
    let (rows, cols) = bench.lab.sizes.transpose;
    let n = rows * cols;
    demos::check_u32_elements("the transposes", &[n])?;
    demos::ensure_free("the transposes", demos::f32_bytes(&[n, n]))?;
    let input_host = reference::random_f32(n, 7);
    let transposed = reference::transpose(&input_host, rows, cols);
    let input = upload(&input_host)?;
    let mut output = poisoned::<f32>(n)?;
    for kernel in demos::transpose::KERNELS {
        let args = [Arg::from(&input), Arg::from(&output), Arg::U32(rows as u32), Arg::U32(cols as u32)];
        let want = if kernel.name == "copy" { &input_host } else { &transposed };
        let (shape, work) = (kernel.shape(rows, cols), Work::Bytes(8.0 * n as f64));
        let case = Case { kernel: kernel.name, size: format!("{rows}x{cols}"), shape, args: &args, work, ceiling };
        bench.compare(case, &mut output, poison, |out| Ok((verify::exact_f32(&download(out)?, want), "exact")))?;
    }
    Ok(())
}

/// The matmuls below the SGEMM ladder (whose rung 1 is `matmul_tiled_32`), with the launch
/// shapes of the `matmul` demo.
const MATMULS: [Rung; 2] = [
    Rung { kernel: "matmul_naive", block: (16, 16), tile: 16, smem: 0, lesson: "" },
    Rung { kernel: "matmul_tiled_16", block: (16, 16), tile: 16, smem: 2048, lesson: "" },
];

/// The matmuls and the SGEMM ladder, TFLOP/s against cuBLAS at the same size.
fn matmuls(bench: &mut Bench, cublas: Option<&Cublas>, cublas_tflops: &mut Vec<(String, Option<f64>)>) -> Result<()> {
    let mut cases = vec![(bench.lab.sizes.matmul, MATMULS.to_vec())];
    let (rungs, skipped) = available(bench.lab.gpu.ptx);
    if let Some(note) = skipped {
        println!("{note}\n");
    }
    cases.extend(bench.lab.sizes.sgemm.iter().map(|&size| (size, rungs.clone())));
    for (size, kernels) in cases {
        let (m, n, k) = size;
        let label = format!("{m}x{n}x{k}");
        let mut ops = Operands::new(size)?;
        let cublas_t = match cublas_tflops.iter().find(|(l, _)| *l == label) {
            Some(&(_, t)) => t,
            None => {
                let t = time_cublas(&bench.lab, cublas, &mut ops)?.map(|t| t.tflops(ops.flop()));
                cublas_tflops.push((label.clone(), t));
                t
            }
        };
        let ceiling = cublas_t.map_or(Ceiling::None, Ceiling::Cublas);
        for rung in kernels {
            let args = ops.args();
            let (shape, work) = (rung.shape(m, n), Work::Flop(ops.flop()));
            let case = Case { kernel: rung.kernel, size: label.clone(), shape, args: &args, work, ceiling };
            bench.compare(case, &mut ops, |ops| poison(&mut ops.c), |ops| ops.check())?;
        }
    }
    Ok(())
}

/// The probes: strided reads (GB/s of useful bytes against memcpy), the bank probe (shared
/// GB/s), the register-pressure probe (TFLOP/s). Twins are checked against the Rust result.
fn probes(bench: &mut Bench, memcpy: f64) -> Result<()> {
    const PROBE_BLOCK: u32 = 256;
    let words = 1usize << 28;
    let input = upload(&(0..words).map(reference::strided_word).collect::<Vec<u32>>())?;
    for stride in [1usize, 32] {
        let threads = words / (8 * stride);
        let mut partial = poisoned::<u32>(threads)?;
        let args = [Arg::from(&input), Arg::from(&partial), Arg::U32(threads as u32), Arg::U32(stride as u32)];
        let shape =
            LaunchShape { grid: ((threads as u32).div_ceil(PROBE_BLOCK), 1), block: (PROBE_BLOCK, 1), smem_bytes: 0 };
        let work = Work::Bytes((threads * 8 * 4) as f64);
        let case = Case {
            kernel: "strided_read",
            size: format!("stride {stride}"),
            shape,
            args: &args,
            work,
            ceiling: Ceiling::Memcpy(memcpy),
        };
        let want = |g| reference::strided_partial(g, threads, stride);
        bench.compare(case, &mut partial, poison, |p| Ok((verify::exact_u32(&download(p)?, want), "checksums")))?;
    }
    let (blocks, threads) = demos::full_gpu(&bench.lab.gpu.info, PROBE_BLOCK);
    let iters = bench.lab.sizes.bank_iters;
    for stride in [1usize, 32] {
        let mut out = poisoned::<u32>(threads)?;
        let args = [Arg::from(&out), Arg::U32(stride as u32), Arg::U32(iters as u32)];
        let smem = (reference::BANK_PROBE_WORDS * 4) as u32;
        let shape = LaunchShape { grid: (blocks, 1), block: (PROBE_BLOCK, 1), smem_bytes: smem };
        let sums: Vec<u32> = (0..32).map(|lane| reference::bank_probe_sum(lane, stride, iters)).collect();
        let work = Work::SharedBytes((threads * iters * 4) as f64);
        let case = Case {
            kernel: "shared_bank_probe",
            size: format!("stride {stride}"),
            shape,
            args: &args,
            work,
            ceiling: Ceiling::None,
        };
        bench.compare(case, &mut out, poison, |p| {
            Ok((verify::exact_u32(&download(p)?, |g| sums[g % 32]), "checksums"))
        })?;
    }
    let (threads, iters) = (1usize << 20, 64usize);
    let input_host = reference::random_f32(threads * iters, 31);
    let input = upload(&input_host)?;
    let mut out = poisoned::<f32>(threads)?;
    let args = [Arg::from(&input), Arg::from(&out), Arg::U32(threads as u32), Arg::U32(iters as u32)];
    let shape =
        LaunchShape { grid: ((threads as u32).div_ceil(PROBE_BLOCK), 1), block: (PROBE_BLOCK, 1), smem_bytes: 0 };
    let work = Work::Flop((2 * 128 * iters * threads) as f64);
    let case = Case {
        kernel: "register_pressure",
        size: format!("{threads} threads x {iters}"),
        shape,
        args: &args,
        work,
        ceiling: Ceiling::None,
    };
    // Both languages against the f32 reference (same FMA order), at 4096 sampled threads.
    let want = |g| reference::register_pressure(&input_host, threads, iters, g);
    bench
        .compare(case, &mut out, poison, |p| Ok((verify::sampled_f32(&download(p)?, 4096, want), "sampled threads")))?;
    Ok(())
}

fn rate_text(rate: Rate) -> String {
    match rate {
        Rate::Gbs(g) => format!("{g:.0} GB/s"),
        Rate::SharedGbs(g) => format!("{g:.0} GB/s shared"),
        Rate::Tflops(t) => format!("{t:.2} TFLOP/s"),
    }
}

fn table(rows: &[Row]) -> String {
    let header = [
        "kernel",
        "size",
        "regs Rust / C++",
        "Rust ms",
        "C++ ms",
        "speed ratio",
        "Rust rate",
        "C++ rate",
        "Rust share",
        "check Rust / C++",
    ];
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::ASCII_MARKDOWN).set_header(header);
    for r in rows {
        let share = match (r.share(), r.ceiling) {
            (Some(s), Ceiling::Memcpy(_)) => format!("{:.1}% of memcpy", 100.0 * s),
            (Some(s), _) => format!("{:.1}% of cuBLAS", 100.0 * s),
            (None, _) => "-".into(),
        };
        t.add_row([
            r.kernel.to_string(),
            r.size.clone(),
            format!("{} / {}", r.regs.0, r.regs.1),
            format!("{:.4}", r.rust.median_ms),
            format!("{:.4}", r.twin.median_ms),
            format!("{:.3}", r.speed_ratio()),
            rate_text(r.rust_rate),
            rate_text(r.twin_rate),
            share,
            format!("{} / {}", r.checks.0.summary(r.check_kind), r.checks.1.summary(r.check_kind)),
        ]);
    }
    t.to_string()
}

fn json(bench: &Bench, memcpy: f64, cublas: &[(String, Option<f64>)]) -> serde_json::Value {
    let info = &bench.lab.gpu.info;
    let rows: Vec<serde_json::Value> = bench
        .rows
        .iter()
        .map(|r| {
            let (unit, rust, twin) = match (r.rust_rate, r.twin_rate) {
                (Rate::Gbs(a), Rate::Gbs(b)) => ("GB/s", a, b),
                (Rate::SharedGbs(a), Rate::SharedGbs(b)) => ("shared GB/s", a, b),
                (a, b) => ("TFLOP/s", a.value(), b.value()),
            };
            serde_json::json!({
                "kernel": r.kernel,
                "size": r.size,
                "regs_rust": r.regs.0,
                "regs_cuda": r.regs.1,
                "rust_median_ms": r.rust.median_ms,
                "rust_min_ms": r.rust.min_ms,
                "cuda_median_ms": r.twin.median_ms,
                "cuda_min_ms": r.twin.min_ms,
                "speed_ratio_cuda_time_over_rust_time": r.speed_ratio(),
                "unit": unit,
                "rust_rate": rust,
                "cuda_rate": twin,
                "rust_share_of_ceiling": r.share(),
                "ceiling": match r.ceiling { Ceiling::Memcpy(_) => "memcpy", Ceiling::Cublas(_) => "cuBLAS", Ceiling::None => "none" },
                "rust_check_passed": r.checks.0.passed(),
                "cuda_check_passed": r.checks.1.passed(),
            })
        })
        .collect();
    serde_json::json!({
        "device": info.name,
        "compute_capability": format!("{}.{}", info.cc.0, info.cc.1),
        "rounds": bench.rounds,
        "memcpy_gbs": memcpy,
        "cublas_sgemm_tflops": cublas.iter().map(|(s, t)| serde_json::json!({ "size": s, "tflops": t })).collect::<Vec<_>>(),
        "kernels": rows,
    })
}
