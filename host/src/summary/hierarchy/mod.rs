//! The memory-hierarchy table, measured on the GPU in front of the user and printed beside the
//! seed's rough figures (registers ~1 cycle, shared/L1 ~20-30, L2 ~200, HBM ~400-800 cycles;
//! ~20, ~10, ~4, 1-3 TB/s).
//!
//! # Methods
//! - **Latency ladder.** One thread follows a chain of dependent 8-byte loads (`chase_global`,
//!   plain `ld.global`, cached in L1 and L2; `chase_global_cg`, `ld.global.cg`, L2 only). The
//!   host lays the chain out as a random single cycle over slots 128 bytes (one cache line)
//!   apart ([`chain`]), so each load waits for the previous one, no two consecutive loads share
//!   a line, and the order defeats any prefetcher. Working sets run from 4 KiB to four times the
//!   L2 the driver reports or 2 GiB, whichever is more ([`ladder::sizes`], [`LADDER_FLOOR`]:
//!   past the TLBs' reach); the chain is walked once untimed, then
//!   4096 loads are timed by the SM's `%clock64` (cycles) and the GPU's `%globaltimer` (ns);
//!   the L2-only probe then times 4096 more straight on from where the default probe stopped,
//!   on the chain that walk warmed.
//!   [`ladder::plateaus`] finds the runs of sizes at one latency; where a run ends, the level's
//!   capacity lies between its last size and the next one.
//! - **Other levels.** Shared memory: the same chase with `ld.shared` over 16 KiB, twice: the
//!   loaded value used as the next address (`chase_shared`) and as an index, `j = s[j]`
//!   (`chase_shared_index`, an extra shift-and-add per hop, as published tables time it). Local memory:
//!   a 32-word chain in a per-thread array, `ld.local`. Constant memory: one warp follows a
//!   chain in a `.const` array with `ld.const`, all lanes on one address (broadcast) or on 32
//!   different ones. Registers: a chain of dependent FMAs.
//! - **Bandwidth.** Shared memory: `shared_bank_probe` at stride 1 on every SM (the banks
//!   demo's probe, measured here). L2: `read_cg_chunks` (many short blocks of a fixed 512 KiB,
//!   the public suite's split: the cell's figure) over a quarter of the L2, beside
//!   `read_cg_unrolled` (four 16-byte `ld.global.cg` loads in flight per thread, 8 blocks per SM,
//!   256 passes) and `read_cg` (one in flight). Persisting L2: `hot_stream_read` with and
//!   without an access-policy window, and `hot_stream_read_evict_first` (`demos::l2`; cc 8.0
//!   and later, evict_first in the sm_90 PTX). DRAM: `read_cg` over a buffer of `--dram-bytes` (1 GiB) once, the
//!   device-to-device memcpy (the run's ceiling, passed in), and the theoretical figure from
//!   memory clock x bus width. The bus: 256 MiB host <-> device,
//!   pageable against pinned memory.
//! - **Outer levels.** Host memory read by kernels (`demos::host_memory`: mapped pinned
//!   memory's stride-1 read and a chain's latency over the bus; managed memory's first-touch
//!   fault migration and prefetch) and, on a machine with two or more GPUs, the next GPU's
//!   memory over the link (`demos::peer::nearest_level`: a chain's latency, the copy rate).
//! - **Spills.** `local_array_constant_index` against `local_array_runtime_index` (PTX
//!   `ld.local`/`st.local`, `ptxas -v`, the driver's local bytes, time), and
//!   `register_pressure` under JIT register caps 255 .. 32.
//!
//! # Limits
//! - Cycles are SM clock cycles: the clock during the chase is reported (cycles / ns) next to
//!   the driver's peak; a GPU boosting or throttling changes ns, not cycles.
//! - The chain of small working sets is cached after the warm-up walk; chains over twice the L2
//!   are walked only partly before timing (2 x L2 / 128 links), so their timed loads find
//!   lines not yet cached, as a cyclic walk over more than the cache always does. The L2-only
//!   probe finds the caches as the default probe left them: its loads skip L1, and the L2 holds
//!   the lines the default walk brought in last, as after a warm-up walk of its own.
//! - One thread runs on one SM and sees the L2 as that SM does: the capacity the L2-only ladder
//!   implies can fall short of the driver's L2 size (on the H200, measured: hits up to 24 MiB
//!   of the 60 MiB reported, slower hits up to 48 MiB). The L2 is split in two partitions
//!   (NVIDIA's A100 and H100 whitepapers); the ladder labels the step inside the L2 as the
//!   partition step ([`ladder::partition_step`]), and `demos::l2` times the same lines from every
//!   SM to show near and far hits.
//! - Large working sets span many pages: beyond the TLBs' reach a load also pays a page-table
//!   walk, so the DRAM plateau rises with size and is not DRAM latency alone.
//! - The latency of a level includes the load's issue and the dependent address use (a few
//!   cycles); one clock read is not overlapped, which is noise over 4096 loads.
//! - `%globaltimer` ticks coarser than 1 ns on some GPUs; over windows of tens of microseconds
//!   that is below a percent.
//! - The constant probe reads 32-bit offsets with `ld.const` (the constant cache); the seed's
//!   "~1 cycle" is a constant *operand* of an arithmetic instruction, which costs no load at all.

pub mod dsmem;
pub mod ladder;
pub mod spills;
pub mod tma_path;

use anyhow::Result;

use crate::charts::SweepChart;
use crate::lab::Inputs;
use crate::lab::sizes::bytes;
use crate::lab::{Figure, Lesson, Needs, Run, Shared};
use crate::lab::{KernelRow, Lab, Level, Section};
use crate::probes::{bandwidth, chain, latency};
use crate::series::{Series, names};
use crate::verify::Check;
use bandwidth::Transfer;
use ladder::Plateau;
use latency::{LadderPoint, Latency};

/// The hierarchy's own flag: the DRAM read's size.
#[derive(clap::Args, Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
pub struct Dram {
    /// Bytes of the DRAM read (B, K/KB/KiB, M/MB/MiB, G/GB/GiB; K = 1024 B; a multiple of 16).
    #[arg(id = "dram-bytes", long = "dram-bytes", value_name = "DRAM_BYTES", default_value = "1GiB", value_parser = dram_bytes)]
    pub bytes: usize,
}

/// `--dram-bytes` as clap parses it: a byte count [`check_dram_bytes`] takes.
fn dram_bytes(text: &str) -> Result<usize, String> {
    check_dram_bytes(crate::cli::bytes(text)?).map_err(|e| e.to_string())
}

/// What the hierarchy demo measures and how much: its own sizes, and the lessons' whose rows
/// it shares (the bank probe's, the DSMEM read's, the L2 stream's).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The DRAM read.
    pub dram: Dram,
    /// The shared-memory row's probe (the banks lesson's `--bank-iters`).
    pub banks: crate::demos::banks::Options,
    /// The DSMEM row's read (the clusters lesson's `--cluster-reads`).
    pub cluster_reads: crate::demos::clusters::Reads,
    /// The L2 persisting row's stream (the L2 lesson's `--l2-stream-bytes`).
    pub l2_stream_bytes: usize,
    /// Largest working set of the ladder, bytes (a power of two); `None`: the smallest power of
    /// two at least four times the device's L2 and at least [`LADDER_FLOOR`], halved while it
    /// would take more than half the device's free memory.
    pub ladder_max: Option<usize>,
    /// Timed loads per latency probe.
    pub steps: u32,
    /// Bytes of each host <-> device copy.
    pub transfer_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        use crate::cli::defaults;
        Options {
            dram: defaults(),
            banks: defaults(),
            cluster_reads: defaults(),
            l2_stream_bytes: defaults::<crate::demos::l2::Options>().stream_bytes,
            ladder_max: None,
            steps: 4096,
            transfer_bytes: 256 << 20,
        }
    }
}

/// Smallest working set of the ladder.
pub const LADDER_MIN: usize = 4 << 10;
/// The ladder's default reaches at least this far (2 GiB): past the reach of the TLBs, so the
/// step of page-table walks shows beyond the DRAM plateau.
pub const LADDER_FLOOR: usize = 2 << 30;
/// Relative spread of a ladder plateau (see [`ladder::plateaus`]).
pub const PLATEAU_TOLERANCE: f64 = 0.2;
/// Bytes of the shared-memory chain.
const SHARED_CHAIN_BYTES: usize = 16 << 10;
/// Dependent FMAs timed by the register probe.
const FMA_STEPS: u32 = 1 << 20;
/// Passes of `read_cg` over the L2-sized buffer.
const L2_PASSES: u32 = 256;
/// Rounds of the spill pair.
const LOCAL_ARRAY_ITERS: u32 = 256;
/// Reads per thread of the register-pressure sweep.
const PRESSURE_ITERS: u32 = 64;

/// The seed's figures (second seed's table), per level: latency, bandwidth.
pub const SEED: [(&str, &str, &str); 6] = [
    ("registers", "~1 cycle", "~20 TB/s"),
    ("shared memory / L1", "~20-30 cycles", "~10 TB/s"),
    ("L2", "~200 cycles", "~4 TB/s"),
    ("global memory (HBM)", "~400-800 cycles", "1-3 TB/s"),
    ("constant memory", "~1 cycle on a hit", "-"),
    ("local memory", "~400-800 cycles", "-"),
];

/// Everything the demo measured.
pub struct Measured {
    /// The latency ladder, ascending sizes.
    pub ladder: Vec<LadderPoint>,
    /// Plateaus of the default-caching ladder.
    pub default_plateaus: Vec<Plateau>,
    /// Plateaus of the L2-only ladder.
    pub l2_plateaus: Vec<Plateau>,
    /// Register FMA chain.
    pub register: Latency,
    /// Shared-memory chase, the loaded value the next address (`chase_shared`).
    pub shared: Latency,
    /// Shared-memory chase, `j = s[j]` (`chase_shared_index`).
    pub shared_index: Latency,
    /// Local-memory chase.
    pub local: Latency,
    /// Constant memory, broadcast and 32 addresses.
    pub constant: (Latency, Latency),
    /// `read_cg_unrolled` over a quarter of L2, 256 passes.
    pub l2_read: KernelRow,
    /// `read_cg` over the same, one load in flight per thread.
    pub l2_read_plain: KernelRow,
    /// `read_cg_chunks` over the same (whole 512 KiB regions): many short blocks.
    pub l2_read_chunks: KernelRow,
    /// The L2 persisting row (`demos::l2::persisting`), or why it was skipped.
    pub persisting: Result<Vec<String>, String>,
    /// The L2 partition step of the L2-only ladder: (last size near, first size past it).
    pub partition_step: Option<(usize, usize)>,
    /// Why the ladder stops short of its default (device memory), if it does.
    pub ladder_capped: Option<String>,
    /// `read_cg` over the DRAM buffer, once.
    pub dram_read: KernelRow,
    /// `shared_bank_probe` at stride 1.
    pub shared_read: KernelRow,
    /// Device-to-device memcpy, GB/s (read + write), when the run measured it and its copy
    /// was right.
    pub memcpy_gbs: Option<f64>,
    /// Host <-> device copies.
    pub transfers: Vec<Transfer>,
    /// The spill pair's rows and notes.
    pub spill_pair: (Vec<KernelRow>, Vec<String>),
    /// The register sweep's rows.
    pub sweep: Vec<KernelRow>,
    /// Checks of the probes (chain ends, FMA result, transfers).
    pub checks: Vec<(&'static str, Check)>,
    /// The outer levels' rows (host mapped, managed, the nearest peer GPU), in the table's
    /// six columns.
    pub outer: Vec<Vec<String>>,
    /// The distributed-shared-memory row ([`dsmem`]), on cc 9.0 and newer.
    pub dsmem: Option<Vec<String>>,
    /// The device's L2, bytes.
    pub l2_bytes: usize,
    /// The device's compute capability.
    pub cc: (u32, u32),
    /// The driver's peak SM clock, GHz.
    pub peak_clock_ghz: f64,
    /// The DRAM figure from memory clock x bus width, GB/s.
    pub theoretical_gbs: f64,
}

/// The lesson: one latency and bandwidth row per level.
pub struct Hierarchy;

impl Lesson for Hierarchy {
    const NAME: &'static str = "hierarchy";
    const NEEDS: Needs = Needs { memcpy: true, memcpy_sweep: false, twins: false };
    const HOST_FLAGS: &'static [&'static str] = &["--dram-bytes"];
    type Options = Options;

    fn run(lab: &Lab, inputs: &Inputs, options: &Options) -> Result<Section> {
        Ok(measure_all(lab, options, inputs)?.section())
    }

    /// The host <-> device copies: one pageable and one pinned buffer; the DRAM read and the
    /// TMA path go through staging.
    fn host_bytes(options: &Options, _: &Shared) -> usize {
        (2 * options.transfer_bytes).max(crate::lab::staging_bytes((options.dram.bytes / 4, 1)))
    }

    fn figures(run: &Run) -> Vec<Figure> {
        vec![Figure::or_missing(
            SweepChart::ladder(run.sections),
            "Cycles per dependent load against the chain's working set (log scale): the plateaus are L1, the near L2 partition, the far one, HBM, and HBM with page-table walks past the TLBs' reach.",
            "latency ladder (run the `hierarchy` demo)",
        )]
    }
}

/// `--dram-bytes`: the hierarchy's DRAM read, a multiple of 16 bytes (`read_cg`'s vectors)
/// that `read_cg` can count in a `u32` of vectors.
///
/// # Errors
/// A refusal naming the rule.
pub fn check_dram_bytes(bytes: usize) -> Result<usize> {
    if !bytes.is_multiple_of(16) || bytes > 16 * (u32::MAX as usize) {
        crate::refuse!("--dram-bytes {bytes} must be a multiple of 16 bytes and at most 64 GiB");
    }
    Ok(bytes)
}

/// The ladder's largest working set for a device with `l2_bytes` of L2.
pub fn default_ladder_max(l2_bytes: usize) -> usize {
    (4 * l2_bytes.max(LADDER_MIN)).next_power_of_two().max(LADDER_FLOOR)
}

/// The default ladder's end on a device with `free` bytes free: `max` halved while it exceeds
/// half of them (the chain and everything else the demo allocates), and the sentence saying so
/// when it had to; at least [`LADDER_MIN`].
pub fn fit_ladder_max(max: usize, free: usize) -> (usize, Option<String>) {
    let mut fit = max;
    while fit > LADDER_MIN && fit > free / 2 {
        fit /= 2;
    }
    let why = (fit < max).then(|| {
        format!(
            "the latency ladder stops at {} instead of {}: the device has {} free",
            bytes(fit),
            bytes(max),
            bytes(free)
        )
    });
    (fit, why)
}

/// Measures every row of the table; the memcpy row is the run's ceiling from `inputs`.
pub fn measure_all(lab: &Lab, opts: &Options, inputs: &Inputs) -> Result<Measured> {
    let l2_bytes = lab.gpu.info.l2_bytes as usize;
    let (max, ladder_capped) = match opts.ladder_max {
        Some(max) => (max, None),
        None => fit_ladder_max(default_ladder_max(l2_bytes), crate::gpu::memory::free_and_total()?.0),
    };
    let steps = opts.steps;
    let (ladder, ladder_check) = lab.phases.step("latency ladder", || {
        latency::ladder(lab, &ladder::sizes(LADDER_MIN, max), steps, 2 * l2_bytes / chain::LINE_BYTES)
    })?;
    let series =
        |pick: fn(&LadderPoint) -> f64| -> Vec<(usize, f64)> { ladder.iter().map(|p| (p.bytes, pick(p))).collect() };
    let default_plateaus = ladder::plateaus(&series(|p| p.default.cycles), PLATEAU_TOLERANCE, 2);
    let l2_plateaus = ladder::plateaus(&series(|p| p.l2_only.cycles), PLATEAU_TOLERANCE, 2);
    let ((register, register_check), (shared, shared_index, shared_check), (local, local_check), constant) =
        lab.phases.step("latency probes", || latency_probes(lab, steps))?;
    let (broadcast, serialized, constant_check) = constant;
    let partition_step = ladder::partition_step(&l2_plateaus, l2_bytes);

    let (l2_read, l2_read_plain, l2_read_chunks) = lab.phases.step("L2 reads", || l2_reads(lab, l2_bytes))?;
    let persisting = lab.phases.step("L2 persisting", || persisting_row(lab, opts.l2_stream_bytes))?;
    let dram_read = lab.phases.step("DRAM read", || dram_read(lab, opts.dram.bytes))?;
    let shared_read =
        lab.phases.step("shared read", || crate::demos::banks::measure_stride(lab, 1, opts.banks.iters))?;
    let memcpy_gbs = inputs.memcpy_gbs();
    let repeats = crate::gpu::timing::Repeats { warmup: 1, runs: 5 };
    let transfers = lab.phases.step("host transfers", || bandwidth::transfers(lab, opts.transfer_bytes, repeats))?;

    let (outer, outer_checks) = outer_levels(lab, (steps, opts.dram.bytes), memcpy_gbs)?;

    // Distributed shared memory (cc 9.0 and newer), between shared memory and L2.
    let dsmem = lab.phases.step("DSMEM row", || dsmem::row(lab, steps, opts.cluster_reads))?;

    let spill_pair = lab.phases.step("spill pair", || spills::local_array_pair(lab, LOCAL_ARRAY_ITERS))?;
    let sweep = lab.phases.step("register sweep", || spills::register_sweep(lab, PRESSURE_ITERS))?;

    let mut checks = vec![
        ("ladder chain ends", ladder_check),
        ("FMA chain result", register_check),
        ("shared chain ends (address and index chase)", shared_check),
        ("local chain end", local_check),
        ("constant chain ends (32 lanes x 2)", constant_check),
    ];
    checks.extend(transfers.iter().map(|t| ("transfer data", t.check.clone())));
    let dsmem = dsmem.map(|(row, dsmem_checks)| {
        checks.extend(dsmem_checks);
        row
    });
    checks.extend(outer_checks);
    let info = &lab.gpu.info;
    Ok(Measured {
        ladder,
        default_plateaus,
        l2_plateaus,
        register,
        shared,
        shared_index,
        local,
        constant: (broadcast, serialized),
        l2_read,
        l2_read_plain,
        l2_read_chunks,
        persisting,
        partition_step,
        ladder_capped,
        dram_read,
        shared_read,
        memcpy_gbs,
        transfers,
        spill_pair,
        sweep,
        checks,
        outer,
        dsmem,
        l2_bytes,
        cc: lab.gpu.info.cc,
        peak_clock_ghz: info.sm_clock_khz as f64 / 1e6,
        theoretical_gbs: info.theoretical_bandwidth_gbs(),
    })
}

/// The register, shared, local and constant latency probes, each with its check.
#[allow(clippy::type_complexity)]
fn latency_probes(
    lab: &Lab,
    steps: u32,
) -> Result<((Latency, Check), (Latency, Latency, Check), (Latency, Check), (Latency, Latency, Check))> {
    Ok((
        latency::register(lab, FMA_STEPS)?,
        latency::shared(lab, SHARED_CHAIN_BYTES, steps)?,
        latency::local(lab, steps)?,
        latency::constant(lab, steps)?,
    ))
}

/// The L2 rows: a quarter of the L2 read [`L2_PASSES`] times with 4 loads in flight per
/// thread and with one, and by the chunked reader of the L2 lesson.
fn l2_reads(lab: &Lab, l2_bytes: usize) -> Result<(KernelRow, KernelRow, KernelRow)> {
    let l2_ws = crate::lab::sanitizer::bytes(lab, crate::demos::l2::l2_footprint(l2_bytes));
    let l2_prediction = format!("{} x {L2_PASSES} passes, L2 hits", bytes(l2_ws));
    let read = |reader, what, prediction| bandwidth::read(lab, reader, l2_ws, L2_PASSES, Level::L2, what, prediction);
    Ok((
        read(
            bandwidth::Reader::UNROLLED,
            "a quarter of L2, read 256 times, 4 loads in flight per thread",
            l2_prediction.clone(),
        )?,
        read(bandwidth::Reader::PLAIN, "a quarter of L2, read 256 times", l2_prediction)?,
        crate::demos::l2::policies::chunks(lab, l2_ws)?,
    ))
}

/// The DRAM row: `--dram-bytes` (whole 16-byte vectors), far larger than L2, read once.
fn dram_read(lab: &Lab, dram_bytes: usize) -> Result<KernelRow> {
    let dram_bytes = dram_bytes / 16 * 16;
    bandwidth::read(
        lab,
        bandwidth::Reader::PLAIN,
        dram_bytes,
        1,
        Level::Global,
        "a buffer far larger than L2, read once",
        format!("{}, every byte from DRAM", bytes(dram_bytes)),
    )
}

/// The outer levels: host memory read by kernels, the TMA path, then the nearest peer GPU (if
/// any), with their checks.
#[allow(clippy::type_complexity)]
fn outer_levels(
    lab: &Lab,
    (steps, dram_bytes): (u32, usize),
    memcpy_gbs: Option<f64>,
) -> Result<(Vec<Vec<String>>, Vec<(&'static str, Check)>)> {
    let host = lab.phases.step("host memory levels", || {
        crate::demos::host_memory::measure_all(
            lab,
            &crate::demos::host_memory::Options::for_hierarchy(steps).for_sanitizer(crate::lab::sanitizer::on(lab)),
        )
    })?;
    let mut outer = host.hierarchy_rows();
    let mut outer_checks: Vec<(&'static str, Check)> = host.checks.iter().map(|c| ("host memory", c.clone())).collect();
    outer_checks.extend(host.mapped_sweep.iter().map(|(_, r)| ("mapped strided_read", r.check.clone())));
    if let Some((row, check)) = lab.phases.step("TMA path", || tma_path::row(lab, dram_bytes, memcpy_gbs))? {
        outer.push(row);
        outer_checks.push(("TMA path", check));
    }
    if let Some(peer) = lab.phases.step("peer GPU", || crate::demos::peer::nearest_level(lab, 16 << 20, steps))? {
        outer.push(peer.hierarchy_row());
        outer_checks.extend(peer.checks.into_iter().map(|c| ("peer GPU", c)));
    }
    Ok((outer, outer_checks))
}

/// The "L2 persisting" row: `hot_stream_read` at the hot size whose reuse distance is just past
/// the L2 (the lesson's `demos::l2::persisting`), or the one line saying why it is skipped.
fn persisting_row(lab: &Lab, stream_bytes: usize) -> Result<Result<Vec<String>, String>> {
    use crate::demos::l2::persisting;
    let limits = crate::gpu::l2::limits(&lab.gpu)?;
    if let Some(why) = persisting::unsupported(lab.gpu.info.cc, &limits) {
        return Ok(Err(why));
    }
    let stream = crate::lab::sanitizer::bytes(lab, stream_bytes);
    let sizes = persisting::hot_sizes(lab.gpu.info.l2_bytes as usize, stream);
    // The size whose reuse distance is just past the L2 (the third), or the largest that fits.
    let hot = sizes[sizes.len().min(3) - 1];
    Ok(persisting::measure_sizes(lab, limits, stream, &[hot])?
        .and_then(|m| m.hierarchy_row().ok_or_else(|| "L2 persisting: nothing measured".to_string())))
}

/// `36 cycles (18.2 ns)`.
fn latency_text(l: &Latency) -> String {
    format!("{:.0} cycles ({:.1} ns)", l.cycles, l.ns)
}

/// The seed's level, latency and bandwidth of its row `i`.
fn seed(i: usize) -> (String, String, String) {
    (SEED[i].0.to_string(), SEED[i].1.to_string(), SEED[i].2.to_string())
}

/// One row of the table: the level and the seed's latency and bandwidth, then the measured
/// latency, the measured bandwidth, and what measured them.
fn table_row((level, seed_lat, seed_bw): (String, String, String), lat: String, bw: String, by: String) -> Vec<String> {
    vec![level, seed_lat, lat, seed_bw, bw, by]
}

/// A kernel row's rate as the table writes a bandwidth.
fn gbs(row: &KernelRow) -> String {
    format!("{:.0} GB/s", row.rate.value())
}

/// The plateau holding the ladder's smallest (`first`) or largest size, else that point alone.
fn end_latency(points: &[(usize, f64)], plateaus: &[Plateau], first: bool) -> (f64, String) {
    let (size, lone) = if first { points[0] } else { points[points.len() - 1] };
    match plateaus.iter().find(|p| p.first_bytes <= size && size <= p.last_bytes) {
        Some(p) => (p.latency, format!("plateau {} .. {}", bytes(p.first_bytes), bytes(p.last_bytes))),
        None => (lone, format!("at {}", bytes(size))),
    }
}

/// The plateaus as one phrase each: sizes, latency, implied capacity.
fn plateau_notes(name: &str, plateaus: &[Plateau]) -> Vec<String> {
    plateaus
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let capacity = match p.next_bytes {
                Some(next) => format!("holds at least {} and less than {}", bytes(p.last_bytes), bytes(next)),
                None => "the last level measured".into(),
            };
            format!(
                "{name} plateau {}: {} .. {} ({} sizes) at {:.0} cycles: {capacity}",
                i + 1,
                bytes(p.first_bytes),
                bytes(p.last_bytes),
                p.points,
                p.latency
            )
        })
        .collect()
}

impl Measured {
    fn series(&self, pick: fn(&LadderPoint) -> &Latency) -> Vec<(usize, f64)> {
        self.ladder.iter().map(|p| (p.bytes, pick(p).cycles)).collect()
    }

    /// Cycles over ns of the whole ladder: the SM clock while the chases ran, GHz.
    pub fn measured_clock_ghz(&self) -> f64 {
        let cycles: f64 = self.ladder.iter().map(|p| p.default.cycles + p.l2_only.cycles).sum();
        let ns: f64 = self.ladder.iter().map(|p| p.default.ns + p.l2_only.ns).sum();
        cycles / ns
    }

    /// The measured table beside the seed's: one row per level, then the bus.
    pub fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header =
            ["level", "seed latency", "measured latency", "seed bandwidth", "measured bandwidth", "measured by"];
        let mut rows = self.on_chip_rows();
        rows.extend(self.off_chip_rows());
        // Distributed shared memory sits right below the shared-memory row.
        if let Some(row) = &self.dsmem {
            let at = rows.iter().position(|r| r[0] == "shared memory").map_or(rows.len(), |i| i + 1);
            rows.insert(at, row.clone());
        }
        rows.extend(self.outer.iter().cloned());
        (header.map(String::from).to_vec(), rows)
    }

    /// `cycles` as the table writes a latency, with ns at the ladder's measured clock.
    fn at(&self, cycles: f64) -> String {
        format!("{cycles:.0} cycles ({:.0} ns)", cycles / self.measured_clock_ghz())
    }

    /// The rows of the registers, shared memory, L1, L2 and the L2's persisting window.
    fn on_chip_rows(&self) -> Vec<Vec<String>> {
        let (l1, l1_where) = end_latency(&self.series(|p| &p.default), &self.default_plateaus, true);
        let (l2, l2_where) = end_latency(&self.series(|p| &p.l2_only), &self.l2_plateaus, true);
        let shared_seed = || (SEED[1].1.to_string(), SEED[1].2.to_string());
        let mut rows = vec![
            table_row(
                seed(0),
                format!("{} per dependent FMA", latency_text(&self.register)),
                "-".into(),
                "register_chain".into(),
            ),
            table_row(
                ("shared memory".into(), shared_seed().0, shared_seed().1),
                format!(
                    "address chase {}; index chase (j = s[j]) {}",
                    latency_text(&self.shared),
                    latency_text(&self.shared_index)
                ),
                format!("{} (all SMs)", gbs(&self.shared_read)),
                "chase_shared, chase_shared_index; shared_bank_probe stride 1".into(),
            ),
            table_row(
                ("L1 (global loads)".into(), shared_seed().0, shared_seed().1),
                self.at(l1),
                "-".into(),
                format!("chase_global, {l1_where}"),
            ),
            table_row(
                seed(2),
                self.at(l2),
                format!(
                    "{} with many short blocks ({} in L2); one grid of 8 blocks/SM: {}, one load in flight per thread: {}",
                    gbs(&self.l2_read_chunks),
                    bytes(self.l2_bytes / 4),
                    gbs(&self.l2_read),
                    gbs(&self.l2_read_plain)
                ),
                format!("chase_global_cg, {l2_where}; read_cg_chunks, read_cg_unrolled, read_cg"),
            ),
        ];
        rows.push(match &self.persisting {
            Ok(r) => table_row((r[0].clone(), r[1].clone(), r[3].clone()), r[2].clone(), r[4].clone(), r[5].clone()),
            Err(why) => {
                table_row(("L2 persisting".into(), "-".into(), "-".into()), "-".into(), "skipped".into(), why.clone())
            }
        });
        rows
    }

    /// The rows of DRAM, constant and local memory, and each direction of the bus.
    fn off_chip_rows(&self) -> Vec<Vec<String>> {
        let (dram, dram_where) = end_latency(&self.series(|p| &p.default), &self.default_plateaus, false);
        let (broadcast, serialized) = &self.constant;
        let mut rows = vec![
            table_row(
                seed(3),
                self.at(dram),
                format!(
                    "read {}, memcpy {}, clock x bus {:.0} GB/s",
                    gbs(&self.dram_read),
                    self.memcpy_gbs.map_or("not measured".into(), |g| format!("{g:.0} GB/s")),
                    self.theoretical_gbs
                ),
                format!("chase_global, {dram_where}; read_cg; cuMemcpyDtoD"),
            ),
            table_row(
                seed(4),
                format!("broadcast {}; 32 addresses {}", latency_text(broadcast), latency_text(serialized)),
                "-".into(),
                "const_chase, one warp".into(),
            ),
            table_row(seed(5), format!("{} (L1 hit)", latency_text(&self.local)), "-".into(), "chase_local".into()),
        ];
        rows.extend(self.transfers.iter().map(|t| {
            table_row(
                (format!("bus, {} ({})", t.direction, t.memory), "-".into(), "-".into()),
                "-".into(),
                format!("{:.1} GB/s", t.gbs),
                format!("cuMemcpy*Async, {}", bytes(t.bytes)),
            )
        }));
        rows
    }

    /// The ladder as a table: size, cycles and ns with default caching and with L2 only.
    pub fn ladder_table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header = ["working set", "default cycles", "default ns", "L2-only cycles", "L2-only ns"];
        let rows = self
            .ladder
            .iter()
            .map(|p| {
                vec![
                    bytes(p.bytes),
                    format!("{:.1}", p.default.cycles),
                    format!("{:.1}", p.default.ns),
                    format!("{:.1}", p.l2_only.cycles),
                    format!("{:.1}", p.l2_only.ns),
                ]
            })
            .collect();
        (header.map(String::from).to_vec(), rows)
    }

    /// The notes: plateaus and capacities, constant memory, clock, spills, the ladder chart.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = plateau_notes("default-caching ladder", &self.default_plateaus);
        notes.extend(plateau_notes("L2-only ladder", &self.l2_plateaus));
        notes.push(format!("the driver reports {} of L2", bytes(self.l2_bytes)));
        notes.extend(self.ladder_capped.clone());
        if let Some((near, next)) = self.partition_step {
            notes.push(format!(
                "L2 partition step between {} and {}: one SM's lines fill its near partition (half of {}: {}), then are served from the far one across the link between the partitions (`memlab run-demos --only l2` times the same lines from every SM)",
                bytes(near),
                bytes(next),
                bytes(self.l2_bytes),
                bytes(self.l2_bytes / 2)
            ));
        }
        notes.push(format!(
            "shared memory: chase_shared times `ld.shared p, [p]` (the loaded value is the next address, no arithmetic): {:.0} cycles; chase_shared_index times `j = s[j]` as published microbenchmarks do (shift and add make the address): {:.0} cycles, {:.0} more per hop",
            self.shared.cycles,
            self.shared_index.cycles,
            self.shared_index.cycles - self.shared.cycles
        ));
        if self.cc == (9, 0) {
            notes.push(
                "the CUDA C++ Programming Guide gives cc 9.0 a 256 KB unified L1/shared data cache per SM".into(),
            );
        }
        let (broadcast, serialized) = &self.constant;
        notes.push(format!(
            "constant memory: 32 lanes on 32 addresses take {:.1}x a broadcast",
            serialized.cycles / broadcast.cycles
        ));
        notes.push(format!(
            "SM clock during the chases {:.2} GHz (cycles / globaltimer ns); the driver's peak {:.2} GHz",
            self.measured_clock_ghz(),
            self.peak_clock_ghz
        ));
        notes.extend(self.spill_pair.1.iter().cloned());
        for row in &self.sweep {
            notes.push(format!(
                "register_pressure {}: driver {} regs, {} B local, {} blocks/SM ({:.0}% occupancy), {:.3} ms",
                row.prediction,
                row.attrs.regs,
                row.attrs.local_bytes,
                row.occupancy.active_blocks,
                100.0 * row.occupancy.occupancy,
                row.timing.median_ms
            ));
        }
        for (what, check) in &self.checks {
            notes.push(format!("check, {what}: {}", check.summary("exact")));
        }
        notes.push("latency ladder, cycles per load (`#` default caching, `o` L2 only):".into());
        let sizes: Vec<usize> = self.ladder.iter().map(|p| p.bytes).collect();
        let default: Vec<f64> = self.ladder.iter().map(|p| p.default.cycles).collect();
        let l2: Vec<f64> = self.ladder.iter().map(|p| p.l2_only.cycles).collect();
        notes.extend(ladder::chart(&sizes, &default, &l2, 50).into_iter().map(|l| format!("`{l}`")));
        notes
    }

    /// The latency ladder as chart series: one labelled point per working set, cycles per load.
    fn ladder_series(&self) -> Vec<Series> {
        let (x, y) = ("working set", "cycles per dependent load");
        let points = |pick: fn(&LadderPoint) -> f64| {
            self.ladder.iter().map(move |p| (p.bytes as f64, pick(p), bytes(p.bytes))).collect::<Vec<_>>()
        };
        let mut series = vec![
            Series::labelled(names::LADDER_DEFAULT, x, y, points(|p| p.default.cycles)),
            Series::labelled(names::LADDER_L2, x, y, points(|p| p.l2_only.cycles)),
        ];
        if let Some((_, next)) = self.partition_step {
            let at = self.ladder.iter().find(|p| p.bytes == next).map_or(0.0, |p| p.l2_only.cycles);
            series.push(Series::labelled(names::LADDER_STEPS, x, y, [(next as f64, at, "L2 partition step".into())]));
        }
        series
    }

    /// The demo's report section.
    pub fn section(&self) -> Section {
        let mut kernels = vec![
            self.shared_read.clone(),
            self.l2_read.clone(),
            self.l2_read_plain.clone(),
            self.l2_read_chunks.clone(),
        ];
        kernels.push(self.dram_read.clone());
        kernels.extend(self.spill_pair.0.iter().cloned());
        kernels.extend(self.sweep.iter().cloned());
        Section {
            name: "hierarchy".into(),
            title: "The memory hierarchy, measured: latency ladder, bandwidth per level, spills".into(),
            lesson: "Each level down the hierarchy is bigger and slower: dependent loads show the latency of the level that holds the working set, many threads show its bandwidth, and an array indexed at run time leaves the registers for local memory.".into(),
            kernels,
            sweep: Some(self.table()),
            checks: self.checks.iter().map(|(_, c)| c.clone()).collect(),
            notes: self.notes(),
            series: self.ladder_series(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladder_reaches_four_times_l2_and_at_least_2_gib() {
        assert_eq!(default_ladder_max(60 << 20), 2 << 30);
        assert_eq!(default_ladder_max(6 << 20), 2 << 30);
        assert_eq!(default_ladder_max(0), 2 << 30);
        assert_eq!(default_ladder_max(1 << 30), 4 << 30);
    }

    #[test]
    fn the_default_ladder_shrinks_to_half_the_free_memory_and_says_so() {
        assert_eq!(fit_ladder_max(2 << 30, 100 << 30), (2 << 30, None));
        let (fit, why) = fit_ladder_max(2 << 30, 3 << 30);
        assert_eq!(fit, 1 << 30);
        assert_eq!(why.unwrap(), "the latency ladder stops at 1 GiB instead of 2 GiB: the device has 3 GiB free");
        assert_eq!(fit_ladder_max(2 << 30, 0).0, LADDER_MIN);
    }

    #[test]
    fn end_latency_prefers_the_plateau_holding_the_end() {
        let points = [(4096, 30.0), (8192, 31.0), (16384, 300.0), (32768, 600.0)];
        let p = ladder::plateaus(&points, 0.2, 2);
        let (first, how) = end_latency(&points, &p, true);
        assert_eq!((first, how.as_str()), (30.5, "plateau 4 KiB .. 8 KiB"));
        let (last, how) = end_latency(&points, &p, false);
        assert_eq!((last, how.as_str()), (600.0, "at 32 KiB"));
    }

    #[test]
    fn plateau_notes_state_capacity_bounds() {
        let p = Plateau { first_bytes: 4096, last_bytes: 196608, next_bytes: Some(262144), latency: 33.4, points: 12 };
        let notes = plateau_notes("x", &[p]);
        assert_eq!(
            notes,
            ["x plateau 1: 4 KiB .. 192 KiB (12 sizes) at 33 cycles: holds at least 192 KiB and less than 256 KiB"]
        );
    }
}
