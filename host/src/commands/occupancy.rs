//! `memlab occupancy`: the occupancy calculator as a command, no GPU needed. Prints the
//! blocks each SM resource allows, the limiting resource, the occupancy, and what to change to
//! reach the next step; optionally draws the calculator's three graphs.

use std::path::PathBuf;

use anyhow::Result;

use crate::charts::OccupancyChart;
use crate::cli::{self, count};
use crate::model::gpus;
use crate::model::occupancy::{
    ArchLimits, KernelResources, LaunchFailure, Limit, Mode, Occupancy, UNLIMITED, max_regs_for_blocks, occupancy,
    register_targets, shared_memory_targets, suggest_block_size,
};
use crate::present::output;
use crate::present::table::{self, Layout};
use crate::{present::report, ptx, ptx::ptxas, refuse};

/// The seed's generic SM, used for any textbook figure not given.
const TEXTBOOK: (u32, u32, usize) = (65536, 2048, 48 << 10);

/// Rules of the calculator, as the command line names them.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeArg {
    /// Textbook arithmetic: exact division, no granularity.
    Simple,
    /// The driver's rules (`cuda_occupancy.h`): allocation units, reserve.
    Hardware,
}

/// Options of `occupancy`: the registers per thread come from --regs, --kernel (ptxas) or
/// --blocks (the most for N blocks), so one of them is required.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("registers").args(["regs", "kernel", "blocks"]).required(true).multiple(true)))]
pub struct Args {
    /// A compute capability (9.0), SM target (sm_89) or name (H200, "RTX 4090").
    #[arg(long, long_help = gpus::help("The GPU whose limits apply (default 9.0, the H200; the same as --gpu)"), value_parser = parse_cc, conflicts_with_all = ["gpu", "regs_per_sm", "threads_per_sm", "smem_per_sm"])]
    pub cc: Option<(u32, u32)>,
    /// The same as --cc, by another name (its own flag, so an error names the one typed).
    #[arg(long, long_help = gpus::help("The GPU whose limits apply, as --cc"), value_parser = parse_cc, conflicts_with_all = ["regs_per_sm", "threads_per_sm", "smem_per_sm"])]
    pub gpu: Option<(u32, u32)>,
    /// Textbook SM: registers per SM (default 65536; implies --mode simple).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    pub regs_per_sm: Option<u32>,
    /// Textbook SM: resident threads per SM, a multiple of 32 (default 2048).
    #[arg(long, value_parser = clap::value_parser!(u32).range(32..=1 << 16))]
    pub threads_per_sm: Option<u32>,
    /// Textbook SM: shared memory per SM (B, K/KB/KiB, M/MB/MiB in any case; K = 1024 B; default 48KiB).
    #[arg(long, value_parser = cli::bytes)]
    pub smem_per_sm: Option<usize>,
    /// Rules: simple (textbook) or hardware (driver, default for a real GPU).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Threads per block.
    #[arg(long)]
    pub threads: u32,
    /// Registers per thread (1..=255); taken from ptxas with --kernel; with --blocks N alone, the
    /// most at which N blocks stay resident.
    #[arg(long)]
    pub regs: Option<u32>,
    /// Dynamic shared memory per block (B, K/KB/KiB, M/MB/MiB in any case: 48k = 48KB = 48KiB), added to the static.
    #[arg(long, default_value = "0B", value_parser = bytes_or_zero)]
    pub smem: usize,
    /// Static shared memory per block (`__shared__` arrays; B, K/KB/KiB in any case; K = 1024 B), at most 48KiB.
    #[arg(long, default_value = "0B", value_parser = bytes_or_zero, conflicts_with = "kernel")]
    pub static_smem: usize,
    /// A kernel of the lab: registers and static shared bytes from `ptxas -v` on its PTX.
    #[arg(long, conflicts_with = "regs")]
    pub kernel: Option<String>,
    /// The kernel raised cudaFuncAttributeMaxDynamicSharedMemorySize (above 48 KiB).
    #[arg(long)]
    pub opt_in: bool,
    /// Also print the block size cudaOccupancyMaxPotentialBlockSize would pick.
    #[arg(long)]
    pub suggest: bool,
    /// The most registers per thread at which N blocks stay resident (__launch_bounds__).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub blocks: Option<u32>,
    /// Also draw the three occupancy graphs (SVG and PNG) into DIR.
    #[arg(long, value_name = "DIR")]
    pub chart: Option<PathBuf>,
    /// Print the answer as JSON instead of text.
    #[arg(long, conflicts_with = "chart")]
    pub json: bool,
}

/// Parses a compute capability, SM target or GPU name the occupancy tables know
/// ([`gpus::resolve`]).
pub fn parse_cc(text: &str) -> Result<(u32, u32), String> {
    gpus::resolve(text).map(|a| (a.major, a.minor))
}

/// A byte count that may be zero (`0`, `0B`).
fn bytes_or_zero(text: &str) -> Result<usize, String> {
    if text.trim().trim_end_matches(['B', 'b']).trim() == "0" { Ok(0) } else { cli::bytes(text) }
}

fn to_u32(what: &str, bytes: usize) -> Result<u32> {
    match u32::try_from(bytes) {
        Ok(b) => Ok(b),
        Err(_) => refuse!("{what} of {bytes} bytes is too large: allowed up to {} bytes", u32::MAX),
    }
}

/// The SM described by the options, its name for the report and the mode.
fn sm(args: &Args) -> Result<(ArchLimits, String, Mode)> {
    let textbook = args.regs_per_sm.is_some() || args.threads_per_sm.is_some() || args.smem_per_sm.is_some();
    if textbook {
        let regs = args.regs_per_sm.unwrap_or(TEXTBOOK.0);
        let threads = args.threads_per_sm.unwrap_or(TEXTBOOK.1);
        if !threads.is_multiple_of(32) {
            refuse!("--threads-per-sm {threads} must be a multiple of the warp size 32");
        }
        let smem = to_u32("--smem-per-sm", args.smem_per_sm.unwrap_or(TEXTBOOK.2))?;
        let arch = ArchLimits::textbook(regs, threads, smem);
        let name = format!("textbook SM ({regs} registers, {threads} threads, {smem} B shared)");
        let mode = if args.mode == Some(ModeArg::Hardware) { Mode::Hardware } else { Mode::Simple };
        return Ok((arch, name, mode));
    }
    let (major, minor) = args.cc.or(args.gpu).unwrap_or((9, 0));
    let Some(&arch) = ArchLimits::for_cc(major, minor) else { refuse!("no data for cc {major}.{minor}") };
    let mode = if args.mode == Some(ModeArg::Simple) { Mode::Simple } else { Mode::Hardware };
    Ok((arch, format!("cc {major}.{minor} ({})", arch.name), mode))
}

/// Registers and static shared bytes of a lab kernel, from ptxas on the PTX the architecture
/// would load (a textbook SM uses the sm_90 figures).
fn kernel_figures(kernel: &str, arch: &ArchLimits) -> Result<(u32, u32, String)> {
    let cc = if arch.major == 0 { (9, 0) } else { (arch.major, arch.minor) };
    let Some(p) = ptx::for_device(cc) else { refuse!("no embedded PTX runs on cc {}.{}", cc.0, cc.1) };
    // The tensor ladder's kernels are in the sm_90a PTX, which a cc 9.0 device loads beside it.
    let tensor = ptx::runs_tensor(cc).then_some(&ptx::TENSOR);
    let p = tensor.filter(|t| ptx::kernel_names(t.text).contains(&kernel)).unwrap_or(p);
    ptx::check_kernel(p, kernel)?;
    let sass_arch = if p.arch == ptx::TENSOR.arch { p.arch.to_string() } else { format!("sm_{}{}", cc.0, cc.1) };
    let k = match ptxas::run_entry(p.text, &sass_arch, kernel) {
        Ok(Some(k)) => k,
        Ok(None) => refuse!("ptxas reported nothing for `{kernel}`"),
        Err(e) => refuse!("--kernel needs ptxas: {e:#}"),
    };
    Ok((k.regs, k.smem_bytes, format!("ptxas -arch={sass_arch} on the {} PTX", p.arch)))
}

fn blocks(n: u32) -> String {
    if n == UNLIMITED { "no limit".into() } else { n.to_string() }
}

fn percent(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// The per-limit table: blocks allowed, what one block takes, what the SM has.
fn limits_table(arch: &ArchLimits, res: &KernelResources, o: &Occupancy) -> String {
    let warps = res.threads_per_block.div_ceil(arch.warp_size);
    let limiting = o.limiting_factors();
    let mark = |l: Limit| if limiting.contains(&l) { "<- limits" } else { "" }.to_string();
    let cap = if arch.max_blocks_per_sm == UNLIMITED { "no cap".into() } else { arch.max_blocks_per_sm.to_string() };
    let rows = vec![
        vec![
            // "warps" alone: the table fits 100 columns; the cells say what a warp slot holds.
            "warps".into(),
            blocks(o.blocks_by_warps),
            format!("{} ({} threads)", count(warps, "warp"), res.threads_per_block),
            format!("{} ({} threads)", count(arch.max_warps_per_sm, "warp"), arch.max_threads_per_sm),
            mark(Limit::Warps),
        ],
        vec![
            Limit::Registers.to_string(),
            blocks(o.blocks_by_regs),
            format!("{} registers", o.regs_per_block),
            format!("{} registers", arch.regs_per_sm),
            mark(Limit::Registers),
        ],
        vec![
            Limit::SharedMemory.to_string(),
            blocks(o.blocks_by_smem),
            format!("{} B", o.smem_per_block),
            // The per-block limit too when it is what fails the launch (the SM could hold more).
            match o.failure {
                Some(LaunchFailure::SharedMemory { limit, .. }) => {
                    format!("{} B, {limit} B/block", arch.max_smem_per_sm)
                }
                _ => format!("{} B", arch.max_smem_per_sm),
            },
            mark(Limit::SharedMemory),
        ],
        vec![Limit::BlockCap.to_string(), blocks(o.blocks_by_block_cap), "1 block".into(), cap, mark(Limit::BlockCap)],
    ];
    report::table(["limit", "blocks per SM", "a block takes", "SM has", ""].map(String::from), rows)
}

/// What to change for the next step up: registers, shared memory, block size. When no block
/// fits (the launch fails), only what lets it launch.
fn advice(arch: &ArchLimits, res: &KernelResources, o: &Occupancy, mode: Mode) -> Vec<String> {
    let occ_at = |r: KernelResources| occupancy(arch, &r, mode).ok();
    if o.active_blocks == 0 {
        return launch_advice(arch, res, mode);
    }
    let mut out = Vec::new();
    if let Ok(t) = register_targets(arch, res, mode) {
        let next = (1..res.regs_per_thread.min(arch.max_regs_per_thread + 1)).rev().find_map(|r| {
            occ_at(KernelResources { regs_per_thread: r, ..*res })
                .filter(|n| n.active_blocks > o.active_blocks)
                .map(|n| (r, n))
        });
        let mut line =
            format!("registers: up to {} per thread keep {}", t.keep_current, count(o.active_blocks, "block"));
        match next {
            Some((r, n)) => {
                line += &format!("; {r} or fewer give {} ({})", count(n.active_blocks, "block"), percent(n.occupancy));
                if t.best_blocks > n.active_blocks {
                    line += &format!(
                        "; {} or fewer reach the best any register count gives, {} ({})",
                        t.for_best,
                        count(t.best_blocks, "block"),
                        percent(t.best_occupancy)
                    );
                }
            }
            None => line += "; fewer registers add no block here",
        }
        out.push(line);
    }
    if let Ok(t) = shared_memory_targets(arch, res, mode) {
        let mut line = format!(
            "shared memory: up to {} B of dynamic shared memory per block keep {}",
            t.keep_current,
            count(o.active_blocks, "block")
        );
        match t
            .next_step
            .and_then(|(b, d)| occ_at(KernelResources { dynamic_smem_bytes: d, ..*res }).map(|n| (b, d, n)))
        {
            Some((_, d, n)) => {
                line += &format!("; {d} B or less gives {} ({})", count(n.active_blocks, "block"), percent(n.occupancy))
            }
            None => line += "; less shared memory adds no block here",
        }
        out.push(line);
    }
    let sizes: Vec<(u32, f64)> = (1..=arch.max_threads_per_block / arch.warp_size)
        .map(|w| w * arch.warp_size)
        .filter_map(|t| occ_at(KernelResources { threads_per_block: t, ..*res }).map(|n| (t, n.occupancy)))
        .collect();
    if let Some(best) = sizes.iter().map(|s| s.1).reduce(f64::max) {
        let at: Vec<String> = sizes.iter().filter(|s| s.1 == best).map(|s| s.0.to_string()).collect();
        let shown = if at.len() > 8 {
            format!("{} .. {} ({} sizes)", at[0], at[at.len() - 1], at.len())
        } else {
            at.join(", ")
        };
        out.push(format!(
            "block size: with these registers and shared bytes the best is {} at {shown} threads",
            percent(best)
        ));
    }
    out
}

/// What lets a kernel that fits no block launch, each change alone with the blocks it gives:
/// at most the per-block shared-memory limit (and the larger opt-in limit, when the kernel has
/// not opted in), fewer registers per thread, a smaller block.
fn launch_advice(arch: &ArchLimits, res: &KernelResources, mode: Mode) -> Vec<String> {
    let gives = |k: KernelResources| {
        let n = occupancy(arch, &k, mode).ok().filter(|n| n.active_blocks > 0)?;
        Some(format!("{} ({})", count(n.active_blocks, "block"), percent(n.occupancy)))
    };
    let smem = |opt_in: bool| {
        let k = KernelResources { smem_opt_in: opt_in, ..*res };
        let d = shared_memory_targets(arch, &k, mode).ok()?.next_step?.1;
        Some((d, gives(KernelResources { dynamic_smem_bytes: d, ..k })?))
    };
    let mut out = Vec::new();
    if let Some((d, g)) = smem(res.smem_opt_in) {
        out.push(format!(
            "shared memory: at most {d} B of dynamic shared memory per block lets it launch ({g} at {d} B)"
        ));
    }
    if !res.smem_opt_in && arch.smem_per_block_optin > arch.smem_per_block_default {
        let opted = KernelResources { smem_opt_in: true, ..*res };
        if let Some(g) = gives(opted) {
            out.push(format!("shared memory: with --opt-in (the kernel raises its limit) it launches as it is: {g}"));
        } else if let Some((d, g)) = smem(true) {
            out.push(format!("shared memory: with --opt-in (the kernel raises its limit), at most {d} B lets it launch ({g} at {d} B)"));
        }
    }
    let regs =
        (1..res.regs_per_thread).rev().find_map(|r| Some((r, gives(KernelResources { regs_per_thread: r, ..*res })?)));
    if let Some((r, g)) = regs {
        out.push(format!("registers: at most {r} per thread let it launch ({g} at {r})"));
    }
    // Whole warps below the block's size (520 threads: 512 first).
    let mut threads = (1..=(res.threads_per_block - 1) / arch.warp_size).rev().map(|w| w * arch.warp_size);
    if let Some((t, g)) = threads.find_map(|t| Some((t, gives(KernelResources { threads_per_block: t, ..*res })?))) {
        out.push(format!("block size: at most {t} threads per block let it launch ({g} at {t})"));
    }
    if out.is_empty() {
        out.push("no single change of shared memory, registers or block size lets a block fit".into());
    }
    out
}

/// Where the driver's rules change the textbook's answer: one line per limit that differs where
/// it matters (it binds, or nearly, under either rule), with both numbers and the rule that
/// makes the difference.
fn hardware_notes(arch: &ArchLimits, res: &KernelResources, o: &Occupancy) -> Vec<String> {
    let Ok(t) = occupancy(arch, res, Mode::Simple) else { return Vec::new() };
    let mut out = Vec::new();
    let most = t.active_blocks.max(o.active_blocks);
    let differs = |a: u32, b: u32| a != b && a.min(b) <= most;
    if t.active_blocks != o.active_blocks {
        // Both as the driver defines occupancy, warps over the SM's maximum: the textbook's own
        // figure counts threads, which a block of a partial warp makes lower than its warps.
        let warps = |w: u32| format!("{w} warps ({})", percent(f64::from(w) / f64::from(arch.max_warps_per_sm)));
        out.push(format!(
            "textbook vs driver: the textbook arithmetic gives {} blocks, {} of the SM's {}; the driver's rules {}, {}:",
            t.active_blocks,
            warps(t.active_warps),
            arch.max_warps_per_sm,
            o.active_blocks,
            warps(o.active_warps)
        ));
    }
    if differs(t.blocks_by_warps, o.blocks_by_warps) {
        out.push(format!(
            "warps: a block takes whole warps, {} for {} threads: {} blocks (textbook, by threads: {})",
            res.threads_per_block.div_ceil(arch.warp_size),
            res.threads_per_block,
            blocks(o.blocks_by_warps),
            blocks(t.blocks_by_warps)
        ));
    }
    if differs(t.blocks_by_regs, o.blocks_by_regs) {
        let per_warp = o.regs_per_block / res.threads_per_block.div_ceil(arch.warp_size).max(1);
        out.push(format!(
            "registers: allocated per warp, {} x 32 = {} rounded up to the {}-register unit = {per_warp}, each warp \
             from one of {} sub-partitions of {} registers: {} blocks (textbook, {} / {}: {})",
            res.regs_per_thread,
            res.regs_per_thread * 32,
            arch.reg_alloc_unit,
            arch.warp_alloc_granularity,
            arch.regs_per_sm / arch.warp_alloc_granularity,
            blocks(o.blocks_by_regs),
            arch.regs_per_sm,
            t.regs_per_block,
            blocks(t.blocks_by_regs)
        ));
    }
    if differs(t.blocks_by_smem, o.blocks_by_smem) {
        out.push(format!(
            "shared memory: the driver reserves {} B per block and allocates in {} B units: {} + {} -> {} B per \
             block, {} blocks (textbook, {} / {}: {})",
            arch.reserved_smem_per_block,
            arch.smem_alloc_granularity,
            res.smem_bytes(),
            arch.reserved_smem_per_block,
            o.smem_per_block,
            blocks(o.blocks_by_smem),
            arch.max_smem_per_sm,
            t.smem_per_block,
            blocks(t.blocks_by_smem)
        ));
    }
    out
}

/// `--suggest`: the block size the occupancy API would pick.
fn suggestion(arch: &ArchLimits, res: &KernelResources, mode: Mode) -> String {
    match suggest_block_size(arch, res, mode) {
        Some(s) => format!(
            "suggested block size: {} threads ({} block{} per SM, {}), the size cudaOccupancyMaxPotentialBlockSize \
             picks: the largest multiple of 32 with the most resident threads",
            s.threads,
            s.blocks,
            if s.blocks == 1 { "" } else { "s" },
            percent(s.occupancy)
        ),
        None => "suggested block size: none, no block size fits these registers and shared memory".into(),
    }
}

/// `--blocks N`: the most registers per thread at which N blocks stay resident.
fn inverse(arch: &ArchLimits, res: &KernelResources, n: u32, mode: Mode) -> String {
    let threads = res.threads_per_block;
    match max_regs_for_blocks(arch, res, n, mode) {
        Some(r) => {
            let textbook = max_regs_for_blocks(arch, res, n, Mode::Simple)
                .filter(|&t| t != r && mode == Mode::Hardware && arch.major != 0)
                .map_or(String::new(), |t| format!(" (the textbook arithmetic allows {t})"));
            format!(
                "registers for {n} blocks of {threads} threads: at most {r} per thread{textbook}; \
                 __launch_bounds__({threads}, {n}) or -maxrregcount={r} makes the compiler keep to it (spilling if \
                 it must)"
            )
        }
        None => {
            let best =
                occupancy(arch, &KernelResources { regs_per_thread: 1, ..*res }, mode).map_or(0, |o| o.active_blocks);
            format!(
                "registers for {n} blocks of {threads} threads: no register count reaches it, the other limits allow \
                 at most {best} blocks"
            )
        }
    }
}

/// The rule `mode` applies and its source.
fn rule(mode: Mode) -> &'static str {
    match mode {
        Mode::Hardware => {
            "blocks per SM = the least of the warp, register, shared-memory and block limits, with the driver's \
             allocation units and reserve (cudaOccMaxActiveBlocksPerMultiprocessor in NVIDIA's cuda_occupancy.h, \
             CUDA 13.0; memlab equals it on every configuration of its differential test); limits: CUDA C++ \
             Programming Guide, \"Technical Specifications per Compute Capability\""
        }
        Mode::Simple => {
            "blocks per SM = the least of each resource divided by one block's exact demand (textbook arithmetic, \
             no allocation units or reserve)"
        }
    }
}

/// The answer as `--json` prints it.
fn json(arch: &ArchLimits, res: &KernelResources, o: &Occupancy, mode: Mode, args: &Args) -> serde_json::Value {
    let lim = |b: u32| if b == UNLIMITED { serde_json::Value::Null } else { b.into() };
    let textbook = (mode == Mode::Hardware && arch.major != 0)
        .then(|| occupancy(arch, res, Mode::Simple).ok().map(|t| t.active_blocks))
        .flatten();
    serde_json::json!({
        "cc": format!("{}.{}", arch.major, arch.minor),
        "arch": arch.name,
        "mode": format!("{mode:?}"),
        "threads_per_block": res.threads_per_block,
        "regs_per_thread": res.regs_per_thread,
        "static_smem_bytes": res.static_smem_bytes,
        "dynamic_smem_bytes": res.dynamic_smem_bytes,
        "opted_in": res.smem_opt_in,
        "blocks_by_warps": lim(o.blocks_by_warps),
        "blocks_by_regs": lim(o.blocks_by_regs),
        "blocks_by_smem": lim(o.blocks_by_smem),
        "blocks_by_block_cap": lim(o.blocks_by_block_cap),
        "regs_per_block": o.regs_per_block,
        "smem_per_block": o.smem_per_block,
        "active_blocks": o.active_blocks,
        "active_warps": o.active_warps,
        "occupancy": o.occupancy,
        "limiting": o.limiting_factors().iter().map(Limit::to_string).collect::<Vec<_>>(),
        "launch_failure": o.failure.map(|f| f.to_string()),
        "textbook_blocks": textbook,
        "suggested_block_size": args.suggest.then(|| suggest_block_size(arch, res, mode).map(|s| s.threads)).flatten(),
        "regs_for_blocks": args.blocks.map(|n| serde_json::json!({"blocks": n, "max_regs_per_thread": max_regs_for_blocks(arch, res, n, mode)})),
        "rule": rule(mode),
    })
}

/// What the answer means: the resident blocks, warps and threads and what limits them, the
/// hardware's notes, the inverse and suggestion asked for, the rule, and what would change it.
fn print_explanation(args: &Args, arch: &ArchLimits, res: &KernelResources, o: &Occupancy, mode: Mode) {
    let layout = Layout::current();
    match o.failure {
        Some(f) => println!("{}", report::wrap(&format!("resident per SM: 0 blocks, the launch fails: {f}"))),
        None => {
            println!(
                "resident per SM: {} = {} = {}",
                count(o.active_blocks, "block"),
                count(o.active_warps, "warp"),
                count(o.active_threads, "thread")
            );
            let limits: Vec<String> = o.limiting_factors().iter().map(Limit::to_string).collect();
            println!("occupancy: {} (limited by {})", percent(o.occupancy), limits.join(" and "));
        }
    }
    if mode == Mode::Hardware && arch.major != 0 {
        for (i, line) in hardware_notes(arch, res, o).iter().enumerate() {
            let bullet = if i == 0 && line.starts_with("textbook") { "" } else { "- " };
            println!("{}", report::wrap(&format!("{bullet}{line}")));
        }
    }
    if args.suggest {
        println!("{}", report::wrap(&suggestion(arch, res, mode)));
    }
    if let Some(n) = args.blocks {
        println!("{}", report::wrap(&inverse(arch, res, n, mode)));
    }
    println!("{}\n", report::wrap(&format!("rule: {}", rule(mode))));
    println!("To change it:");
    for line in advice(arch, res, o, mode) {
        println!("{}", table::bullet(layout, &line));
    }
}

/// Runs the calculator and prints its answer.
pub fn run(args: Args) -> Result<bool> {
    if let Some(dir) = &args.chart {
        output::check_dir("--chart", dir)?;
    }
    let (arch, sm_name, mode) = sm(&args)?;
    if args.regs == Some(0) {
        refuse!(
            "--regs 0: a kernel uses at least 1 register per thread (ptxas gives even an empty kernel 4): allowed \
             1..={}",
            arch.max_regs_per_thread
        );
    }
    let dynamic = to_u32("--smem", args.smem)?;
    // A size no block of this GPU may have, opted in or not, is a wrong input, not a launch to
    // explain (a sum of static and dynamic over it still is: either part may change).
    if dynamic > arch.smem_per_block_optin {
        let without = if arch.smem_per_block_optin > arch.smem_per_block_default {
            format!(" with --opt-in, {} B without", arch.smem_per_block_default)
        } else {
            String::new()
        };
        refuse!(
            "--smem of {dynamic} B exceeds the shared memory one block may have on {sm_name}: at most {} B{without}",
            arch.smem_per_block_optin
        );
    }
    let (regs, static_smem, mut source) = match &args.kernel {
        Some(k) => kernel_figures(k, &arch)?,
        None => (args.regs.unwrap_or(0), to_u32("--static-smem", args.static_smem)?, "given".into()),
    };
    let mut res = KernelResources::new(args.threads, regs)
        .with_static_smem(static_smem)
        .with_dynamic_smem(dynamic)
        .with_opt_in(args.opt_in);
    // `--blocks N` with no register count given: the answer is one, and the table shows it.
    if let (None, None, Some(n)) = (&args.kernel, args.regs, args.blocks) {
        let Some(r) = max_regs_for_blocks(&arch, &res, n, mode) else {
            // No register count reaches N blocks: that is the whole answer.
            match args.json {
                true => println!("{}", serde_json::json!({"blocks": n, "max_regs_per_thread": null})),
                false => println!("{}", report::wrap(&inverse(&arch, &res, n, mode))),
            }
            return Ok(true);
        };
        res.regs_per_thread = r;
        source = format!("the most at which {} stay resident", count(n, "block"));
    }
    let regs = res.regs_per_thread;
    let o = match occupancy(&arch, &res, mode) {
        Ok(o) => o,
        Err(e) => refuse!("{e} on {sm_name}"),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json(&arch, &res, &o, mode, &args))?);
        return Ok(true);
    }
    let what = args.kernel.as_deref().map_or(String::new(), |k| format!("`{k}`: "));
    let layout = Layout::current();
    let title = format!(
        "Occupancy on {sm_name}, {} rules: {what}{} threads per block, {regs} registers per thread ({source}), \
         {} B static + {dynamic} B dynamic shared memory per block{}",
        format!("{mode:?}").to_lowercase(),
        args.threads,
        static_smem,
        if args.opt_in { ", opted in above 48 KiB" } else { "" }
    );
    println!("{}\n", table::wrap(layout, &title, "", "  "));
    println!("{}\n", limits_table(&arch, &res, &o));
    print_explanation(&args, &arch, &res, &o, mode);
    if let Some(dir) = &args.chart {
        std::fs::create_dir_all(dir)?;
        let [svg, png] = output::save_chart(&OccupancyChart { kernel: args.kernel.clone(), arch, res, mode }, dir)?;
        println!("\ncharts: {} {}", svg.display(), png.display());
    }
    Ok(true)
}
