//! Thread-block clusters and distributed shared memory (cc 9.0 and newer): a block reads and
//! writes the shared memory of the other blocks of its cluster over the SM-to-SM network of
//! its GPC, slower than its own shared memory and far faster than a round trip through L2.
//!
//! # Methods
//! - **Latency.** `chase_dsmem`: one thread of block rank 0 follows a random chain of 128
//!   links (16 KiB, one link per 128 bytes, [`chain`]) laid in the shared memory of the last
//!   block of its cluster (`ld.shared::cluster`), for clusters of 2, 4, 8 and 16; and in its own
//!   shared memory through the cluster window (rank 0). Beside it: the same chain in its own
//!   shared memory with `ld.shared` (`chase_shared`, the hierarchy's probe) and a 1 MiB chain
//!   in L2 (`chase_global_cg`). Cycles are the SM's `%clock64` over 4096 timed loads.
//! - **Bandwidth.** `cluster_shared_read`: every thread of as many clusters as the GPU holds
//!   at once (`cuOccupancyMaxActiveClusters`) reads 16-byte vectors of the next block's shared
//!   memory in its cluster, 8 loads in flight; the local line reads its own with `ld.shared.v4`.
//! - **Barrier.** `cluster_barrier`: one cluster passes 1024 cluster-wide barriers; cycles per
//!   barrier from the slowest block.
//! - **Tiles through DSMEM.** `matmul_dsmem_32` shares its `A` tiles along the cluster's rows and
//!   its `B` tiles along its columns; the load-counting sm_90 build counts its global loads
//!   against `model::tiling::cluster_tiled_global_loads`, and it is timed beside
//!   `matmul_tiled_32`.
//! - **Occupancy.** `cuOccupancyMaxActiveClusters` beside `model::clusters` (a cluster must fit
//!   in one GPC).
//!
//! # Why the cluster matmul is slower although its global traffic falls (measured on the H200)
//! `matmul_tiled_32` at 4096^3 takes 16.16 ms (8.50 TFLOP/s): 4029 SM cycles per block and
//! 32-wide step (2 blocks of 1024 threads on each of 132 SMs, 1.98 GHz,
//! `model::clusters::cycles_per_block_step`). Its 17.2 GB of global traffic move at 1.07 TB/s,
//! a fifth of the HBM's 4.8 TB/s: global memory never limited it, so cutting that traffic cannot
//! make it faster. `matmul_dsmem_32` cuts it 1.33x, 1.99x, 2.65x, 3.95x (clusters 2x1, 2x2, 4x2,
//! 4x4, counted exactly) and takes 22.05, 24.47, 25.80, 27.52 ms (6.23 down to 4.99 TFLOP/s):
//! 1467, 2072, 2401, 2830 cycles more per step. Each step still does 32 FMAs (64 FLOP) and 64
//! shared loads per thread, and adds on its critical path a cluster barrier (340-359 cycles
//! measured) and a dependent remote load (193-210 cycles) before the block barrier, with only
//! two blocks per SM to hide them. The remote loads the tiling model does not count are one per
//! 128 FLOP (2x1) to three per 128 FLOP (4x4) per thread; as bandwidth they are small (at most
//! 6 KiB per block-step, about 0.5 TB/s at 4x4 against the 3.1 TB/s the lesson measures), so the
//! cost is latency and waiting: the added cycles are 2.8x to 5.1x one barrier plus one remote
//! load, and grow with the cluster, because every step's barrier waits for the slowest of its
//! blocks, each on its own SM beside a block of another cluster.
//!
//! # Published figures (H800 PCIe and H100 SXM; Luo et al., "Benchmarking and Dissecting the
//! Nvidia Hopper GPU Architecture", 2024, and its 2025 follow-up)
//! Remote DSMEM load about 180-213 cycles over cluster sizes 2-16 (about 190 on the H100 SXM)
//! against about 30 for local shared memory; an exchange through global memory about 1100
//! cycles; DSMEM throughput about 3.3 TB/s at cluster size 2 and 2.7-2.9 TB/s at 4-16; a
//! cluster-wide barrier about 850 cycles.

use std::cell::Cell;

use anyhow::Result;
use cust::memory::CopyDestination;
use cust::module::Module;
use memlab_contracts::clusters::{
    BARRIER_RECORD_WORDS, BARRIER_THREADS, CHASE_THREADS, CLUSTER_SIZES, DSMEM_TILE, READ_SMEM, READ_THREADS,
    READ_UNROLL, READ_VECTORS, dsmem_smem_bytes, read_word,
};
use memlab_contracts::hierarchy::RECORD_WORDS;

use crate::charts::SweepChart;
use crate::gpu::cluster::{CLUSTER_CC, MAX_CLUSTER_SIZE, PORTABLE_CLUSTER_SIZE, max_active_clusters};
use crate::gpu::context::load_entries;
use crate::gpu::describe;
use crate::gpu::kernel::{attributes, function};
use crate::gpu::launch::LaunchShape;
use crate::lab::GEMM_COUNT_SIZE;
use crate::lab::Inputs;
use crate::lab::{Figure, Lesson, Run};
use crate::lab::{
    KernelRow, KernelRun, Lab, Level, Section, Work, check_u32_elements, download, ensure_free, f32_bytes, measure,
    model_blocks, poison, poisoned, upload,
};
use crate::launches;
use crate::model::clusters::{
    self as cluster_model, cycles_per_block_step, even_layout, layout_from_single_block_counts,
};
use crate::model::tiling::{MatmulShape, cluster_tiled_global_loads, tiled_global_loads};
use crate::probes::chain::{self, LINE_BYTES};
use crate::probes::gemm::shapes as gemm_shapes;
use crate::probes::latency::{self, Latency};
use crate::series::{Series, names};
use crate::verify::{self, Check};
use crate::{ptx, reference};

/// The grid of `matmul_dsmem_32` for an `m x n` result in `cx x cy` clusters: one block per
/// `32 x 32` tile, rounded up to whole clusters.
pub fn cluster_grid(m: u32, n: u32, (cx, cy): (u32, u32)) -> LaunchShape {
    let tiles = |len: u32, c: u32| len.div_ceil(DSMEM_TILE).div_ceil(c) * c;
    LaunchShape { grid: (tiles(n, cx), tiles(m, cy)), block: (DSMEM_TILE, DSMEM_TILE), smem_bytes: dsmem_smem_bytes() }
}

/// `blocks` blocks of `threads` threads with `smem` dynamic shared bytes, in one row.
fn row_of(blocks: u32, threads: u32, smem: u32) -> LaunchShape {
    LaunchShape { grid: (blocks, 1), block: (threads, 1), smem_bytes: smem }
}

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `chase_dsmem`: one cluster of `cluster` blocks of 256 threads, `4 * words` shared bytes
    /// each; block rank 0 chases the `words`-word chain in block rank `target`'s shared memory.
    pub fn chase_dsmem(cluster: u32, words: u32) -> LaunchShape {
        row_of(cluster, CHASE_THREADS, 4 * words)
    }

    /// `cluster_shared_read`: `blocks` blocks (a multiple of `cluster`) of 256 threads, 32 KiB
    /// of shared memory each; every thread reads `iters` vectors of the block `peer_offset`
    /// ranks further in its cluster (its own with `ld.shared` when 0).
    pub fn cluster_shared_read(blocks: u32) -> LaunchShape {
        row_of(blocks, READ_THREADS, READ_SMEM)
    }

    /// `cluster_barrier`: `blocks` blocks (a multiple of `cluster`) of 128 threads pass `iters`
    /// cluster barriers; `out` gets `[cycles, place]` per block.
    pub fn cluster_barrier(blocks: u32) -> LaunchShape {
        row_of(blocks, BARRIER_THREADS, 0)
    }

    /// `matmul_dsmem_32`: `C = A * B` as `matmul_tiled_32`, block `32 x 32`, 16 KiB of shared
    /// memory, in clusters of `cx x cy` blocks that share their tiles through DSMEM.
    pub fn matmul_dsmem_32(cluster: (u32, u32), m: u32, n: u32) -> LaunchShape {
        cluster_grid(m, n, cluster)
    }
}

/// Bytes of the DSMEM and local shared chains (128 links).
pub const CHAIN_BYTES: usize = 16 << 10;
/// Bytes of the L2 chain (`chase_global_cg`): far above L1, far below the L2 one SM reaches.
pub const L2_CHAIN_BYTES: usize = 1 << 20;
/// Timed loads per chase.
pub const STEPS: u32 = 4096;
/// Most 16-byte reads per thread `--cluster-reads` takes.
pub const MAX_READS: u32 = 1 << 24;

/// `--cluster-reads`: a positive multiple of the read kernel's unroll, at most [`MAX_READS`].
///
/// # Errors
/// A one-line refusal naming the rule.
pub fn reads(text: &str) -> Result<u32, String> {
    let reads: u32 = text.parse().map_err(|_| format!("`{text}` is not a whole number of reads"))?;
    if reads == 0 || reads > MAX_READS || !reads.is_multiple_of(READ_UNROLL) {
        return Err(format!(
            "{reads} reads must be a positive multiple of {READ_UNROLL} (the read kernel's unroll), at most {MAX_READS}"
        ));
    }
    Ok(reads)
}

/// The distributed-shared-memory read's length (the hierarchy's DSMEM row reads it too).
#[derive(clap::Args, Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
pub struct Reads {
    /// 16-byte reads per thread of the distributed-shared-memory read (a multiple of 8).
    #[arg(id = "cluster-reads", long = "cluster-reads", value_name = "CLUSTER_READS", default_value = "4096", value_parser = reads)]
    pub reads: u32,
}

/// The clusters lesson's options.
#[derive(clap::Args, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
pub struct Options {
    /// Blocks per thread-block cluster the clusters demo sweeps, a list like 2,4,8,16 (1 to
    /// 16; above 8 is non-portable, cc 9.0).
    #[arg(id = "clusters", long = "clusters", value_name = "CLUSTERS", value_delimiter = ',', default_values_t = CLUSTER_SIZES, value_parser = cluster_size)]
    pub sizes: Vec<u32>,
    /// The read's length.
    #[command(flatten)]
    pub reads: Reads,
}
/// Barriers `cluster_barrier` times.
pub const BARRIER_ITERS: u32 = 1024;
/// `--clusters`: one cluster size, 1 to [`MAX_CLUSTER_SIZE`].
///
/// # Errors
/// A one-line message naming the size and the limit.
pub fn cluster_size(text: &str) -> Result<u32, String> {
    let size: u32 = text.trim().parse().map_err(|_| format!("cluster size `{text}` is not a whole number"))?;
    if size == 0 || size > MAX_CLUSTER_SIZE {
        return Err(format!(
            "cluster size {size} is outside 1..={MAX_CLUSTER_SIZE}: CUDA allows at most {MAX_CLUSTER_SIZE} blocks per cluster (non-portable above {PORTABLE_CLUSTER_SIZE}, cc 9.0)"
        ));
    }
    Ok(size)
}

/// The `cx x cy` shape of `matmul_dsmem_32`'s clusters of `size` blocks: the most square one,
/// wider than tall (2 -> 2x1, 4 -> 2x2, 8 -> 4x2, 16 -> 4x4, 6 -> 3x2).
pub fn matmul_cluster(size: u32) -> (u32, u32) {
    let cy = (1..=size).filter(|d| size.is_multiple_of(*d) && d * d <= size).max().unwrap_or(1);
    (size / cy.max(1), cy.max(1))
}

/// The published figures per cluster size (see the module's header): remote load cycles,
/// throughput GB/s, barrier cycles.
pub fn published(cluster: u32) -> (&'static str, &'static str, &'static str) {
    let throughput = if cluster == 2 { "~3300" } else { "~2700-2900" };
    ("180-213", throughput, "~850")
}

/// Midpoints of [`published`], for the charts.
fn published_mid(cluster: u32) -> (f64, f64, f64) {
    (196.5, if cluster == 2 { 3300.0 } else { 2800.0 }, 850.0)
}

/// What the lesson measured at one cluster size.
pub struct AtSize {
    /// Blocks per cluster.
    pub cluster: u32,
    /// `chase_dsmem` in the last block of the cluster.
    pub remote: Latency,
    /// `cluster_shared_read` from the next block.
    pub read: KernelRow,
    /// `cluster_barrier` cycles per barrier (slowest block).
    pub barrier_cycles: f64,
    /// Clusters at once: the model, the driver (for `cluster_shared_read`).
    pub clusters_at_once: (u32, u32),
    /// `matmul_dsmem_32`'s counted loads: the cluster shape, the model, the count.
    pub counted: Counted,
    /// Every check of this size.
    pub checks: Vec<Check>,
}

/// The lesson: thread-block clusters and distributed shared memory.
pub struct Clusters;

/// The lesson's charts: stem, title, measured and published series, caption.
const CHARTS: [(&str, &str, &str, &str, &str); 3] = [
    (
        "dsmem_latency",
        "Distributed shared memory: dependent-load latency",
        names::DSMEM_LATENCY,
        names::DSMEM_LATENCY_PUBLISHED,
        "Cycles per dependent `ld.shared::cluster` load in the last block of a cluster, by cluster size, against the published figures (Luo et al. 2024, midpoint of 180-213 cycles).",
    ),
    (
        "dsmem_bandwidth",
        "Distributed shared memory: reads of the next block",
        names::DSMEM_READ,
        names::DSMEM_READ_PUBLISHED,
        "GB/s of 16-byte reads of the next block's shared memory on every SM, by cluster size, against the published DSMEM throughput (~3.3 TB/s at 2, ~2.7-2.9 TB/s at 4-16).",
    ),
    (
        "cluster_barrier",
        "The cluster-wide barrier",
        names::CLUSTER_BARRIER,
        names::CLUSTER_BARRIER_PUBLISHED,
        "Cycles per `barrier.cluster.arrive` + `wait` in one cluster, by cluster size, against the published ~850 cycles.",
    ),
];

impl Lesson for Clusters {
    const NAME: &'static str = "clusters";
    type Options = Options;

    fn run(lab: &Lab, inputs: &Inputs, options: &Options) -> Result<Section> {
        run(lab, options, inputs.shared.matmul)
    }

    /// The sweeps, drawn when the run has the lesson (a cc 9.0 GPU); a run without it has
    /// nothing to miss.
    fn figures(run: &Run) -> Vec<Figure> {
        CHARTS
            .iter()
            .filter_map(|&(stem, title, measured, published, caption)| {
                Figure::when_drawn(SweepChart::clusters(run.sections, stem, title, measured, published), caption)
            })
            .collect()
    }
}

/// Runs the lesson (skipped in one line below cc 9.0), its cluster GEMM at `matmul`.
fn run(lab: &Lab, options: &Options, matmul: (usize, usize, usize)) -> Result<Section> {
    let reads = options.reads.reads;
    let cc = lab.gpu.info.cc;
    if cc < CLUSTER_CC {
        return Ok(skipped(cc));
    }
    let (local, _index_chase, local_check) =
        lab.phases.step("latency probes", || latency::shared(lab, CHAIN_BYTES, STEPS))?;
    let (own_window, own_check) = lab.phases.step("latency probes", || dsmem_chase(lab, 2, 0, STEPS))?;
    let (l2, l2_check) = lab.phases.step("latency probes", || l2_latency(lab))?;
    let local_read = read_bandwidth(lab, CLUSTER_SIZES[0], 0, reads)?;
    // Only the cluster matmul of the counting build: the JIT compiles every kernel of a module.
    let counting = lab.phases.step("load the counting kernel", || {
        load_entries(&ptx::COUNTING_SM90, &[launches::entry::matmul_dsmem_32.name], None)
    })?;
    let units = units(lab);
    let mut sizes = Vec::new();
    for &cluster in &options.sizes {
        let at = || at_size(lab, &counting, (cluster, matmul_cluster(cluster)), reads, &units.layout);
        sizes.push(lab.phases.step("cluster sizes", at)?);
    }
    let k = matmul.2;
    let matmul = lab.phases.step("matmul rows", || matmul_rows(lab, matmul, &options.sizes))?;
    let mut checks = vec![local_check, own_check, l2_check];
    checks.extend(sizes.iter().flat_map(|s| s.checks.iter().cloned()));
    let mut notes = notes(lab, &local, &own_window, &l2, &local_read, &sizes, (&matmul, k));
    notes.insert(2, occupancy_note(&sizes, &units));
    let mut kernels = vec![local_read];
    kernels.extend(sizes.iter().map(|s| s.read.clone()));
    kernels.extend(matmul);
    Ok(Section {
        name: "clusters".into(),
        title: "Thread-block clusters: distributed shared memory across the SMs of a GPC".into(),
        lesson: "A block of a cluster reads another block's shared memory directly (mapa + ld.shared::cluster): slower than its own, far faster than through L2, and a cluster can share tiles so its global traffic falls.".into(),
        kernels,
        sweep: Some(sweep_table(&sizes)),
        checks,
        notes,
        series: series(&sizes),
    })
}

/// The section of a device without clusters: one line.
fn skipped(cc: (u32, u32)) -> Section {
    Section {
        name: "clusters".into(),
        title: "Thread-block clusters: skipped".into(),
        lesson: format!(
            "skipped: thread-block clusters need compute capability {}.{} or newer, this device is {}.{}",
            CLUSTER_CC.0, CLUSTER_CC.1, cc.0, cc.1
        ),
        ..Section::default()
    }
}

/// Everything measured at one cluster size.
fn at_size(
    lab: &Lab,
    counting: &Module,
    (cluster, matmul_cluster): (u32, (u32, u32)),
    reads: u32,
    units: &[u32],
) -> Result<AtSize> {
    let (remote, chase_check) = dsmem_chase(lab, cluster, cluster - 1, STEPS)?;
    let read = read_bandwidth(lab, cluster, 1, reads)?;
    let (barrier_cycles, barrier_check) = barrier(lab, cluster)?;
    let clusters_at_once = occupancy(lab, cluster, units)?;
    let (counted, count_check) = count_loads(lab, counting, matmul_cluster)?;
    let checks = vec![chase_check, read.check.clone(), barrier_check, count_check];
    Ok(AtSize { cluster, remote, read, barrier_cycles, clusters_at_once, counted, checks })
}

/// `chase_dsmem` in one cluster of `cluster` blocks, block 0 chasing in block `target`'s
/// shared memory; checked against the CPU's walk of the same chain. Timed through
/// [`measure`] (so `memlab bench` compares it with its twin); the latency is the checked run's.
pub fn dsmem_chase(lab: &Lab, cluster: u32, target: u32, steps: u32) -> Result<(Latency, Check)> {
    let next = chain::random_cycle(CHAIN_BYTES / LINE_BYTES, 11);
    let image = upload(&chain::shared_image(&next))?;
    let warm = next.len() as u32;
    let mut out = upload(&[u64::MAX; RECORD_WORDS])?;
    let words = (CHAIN_BYTES / 4) as u32;
    let launch =
        launches::chase_dsmem(shapes::chase_dsmem(cluster, words), &image, words, target, warm, steps, &mut out)
            .in_clusters((cluster, 1));
    let end = chain::walk(&next, 0, warm as u64 + steps as u64) as u64 * LINE_BYTES as u64;
    let seen = Cell::new(Latency { cycles: f64::NAN, ns: f64::NAN });
    let run = KernelRun {
        launch,
        lesson: "a dependent-load chain in another block's shared memory",
        prediction: "published ~180-213 cycles".into(),
        work: Work { flop: 0.0, bytes: 4.0 * steps as f64, level: Level::Shared },
        size: format!("cluster {cluster}, rank {target}"),
        reset: &|| poison(&out),
    };
    // The first checked run is the Rust kernel's (`measure` checks its twin after it).
    let check = || {
        let record = download(&out)?;
        let per = |total: u64| total as f64 / steps as f64;
        if seen.get().cycles.is_nan() {
            seen.set(Latency { cycles: per(record[0]), ns: per(record[1]) });
        }
        Ok((verify::exact_one(record[2], end), "chain end"))
    };
    let row = measure(lab, run, check)?;
    Ok((seen.get(), row.check))
}

/// `chase_global_cg` over a 1 MiB chain: an L2 hit, for comparison.
fn l2_latency(lab: &Lab) -> Result<(Latency, Check)> {
    let (points, check) = latency::ladder(lab, &[L2_CHAIN_BYTES], STEPS, usize::MAX)?;
    Ok((points[0].l2_only, check))
}

/// `cluster_shared_read` in clusters of `cluster`, as many as the GPU holds at once, each
/// block reading the block `peer_offset` ranks further (its own with `ld.shared` when 0);
/// checked thread by thread.
pub fn read_bandwidth(lab: &Lab, cluster: u32, peer_offset: u32, reads: u32) -> Result<KernelRow> {
    let gpu = &lab.gpu;
    let probe_shape = row_of(cluster, READ_THREADS, READ_SMEM);
    let f = function(gpu, "cluster_shared_read")?;
    let clusters = max_active_clusters(gpu, &f, "cluster_shared_read", &probe_shape, (cluster, 1))?;
    if clusters == 0 {
        crate::refuse!("the device holds no cluster of {cluster} blocks of `cluster_shared_read` at once");
    }
    let clusters = crate::lab::sanitizer::clusters(lab, clusters);
    let blocks = clusters * cluster;
    let threads = (blocks * READ_THREADS) as usize;
    let mut out = poisoned::<u32>(threads)?;
    let launch = launches::cluster_shared_read(shapes::cluster_shared_read(blocks), reads, peer_offset, &mut out)
        .in_clusters((cluster, 1));
    let (lesson, prediction) = if peer_offset == 0 {
        ("16-byte ld.shared reads of the block's own shared memory", "the local ceiling".to_string())
    } else {
        (
            "16-byte ld.shared::cluster reads of the next block's shared memory",
            format!("published {} GB/s", published(cluster).1),
        )
    };
    let run = KernelRun {
        launch,
        lesson,
        prediction,
        work: Work { flop: 0.0, bytes: threads as f64 * reads as f64 * 16.0, level: Level::Shared },
        size: format!(
            "cluster {cluster}, {clusters} clusters, {}",
            if peer_offset == 0 { "own" } else { "next block" }
        ),
        reset: &|| poison(&out),
    };
    let check = || {
        let got = download(&out)?;
        let sums = read_sums(cluster, peer_offset, reads);
        let want = |i: usize| {
            let (block, t) = (i / READ_THREADS as usize, i % READ_THREADS as usize);
            sums[(block % cluster as usize) * READ_THREADS as usize + t]
        };
        Ok((verify::exact_u32(&got, want), "exact sums"))
    };
    measure(lab, run, check)
}

/// The sum thread `t` of cluster rank `r` computes in `cluster_shared_read` with `reads` reads,
/// at index `r * READ_THREADS + t`: the kernel's reads walked on the CPU.
pub fn read_sums(cluster: u32, peer_offset: u32, reads: u32) -> Vec<u32> {
    let mut sums = Vec::with_capacity((cluster * READ_THREADS) as usize);
    for rank in 0..cluster {
        let peer = (rank + peer_offset) % cluster;
        for t in 0..READ_THREADS {
            let sum = (0..reads).fold(0u32, |sum, i| {
                let vector = (t + i * READ_THREADS) & (READ_VECTORS - 1);
                (0..4).fold(sum, |s, w| s.wrapping_add(read_word(4 * vector + w, peer)))
            });
            sums.push(sum);
        }
    }
    sums
}

/// `cluster_barrier` in one cluster of `cluster` blocks: cycles per barrier (slowest block)
/// and the check that every block ran at its place (rank, cluster size, cluster index).
pub fn barrier(lab: &Lab, cluster: u32) -> Result<(f64, Check)> {
    let blocks = cluster;
    let iters = crate::lab::sanitizer::iters(lab, BARRIER_ITERS);
    let mut out = upload(&vec![u64::MAX; BARRIER_RECORD_WORDS * blocks as usize])?;
    let launch = launches::cluster_barrier(shapes::cluster_barrier(blocks), iters, &mut out).in_clusters((cluster, 1));
    let seen = Cell::new(f64::NAN);
    let run = KernelRun {
        launch,
        lesson: "the cluster-wide barrier",
        prediction: "published ~850 cycles".into(),
        work: Work::default(),
        size: format!("cluster {cluster}"),
        reset: &|| poison(&out),
    };
    let check = || {
        let record = download(&out)?;
        let slowest = (0..blocks as usize).map(|b| record[2 * b]).max().unwrap_or(u64::MAX);
        if seen.get().is_nan() {
            seen.set(slowest as f64 / iters as f64);
        }
        let places: Vec<u32> = (0..blocks as usize).map(|b| record[2 * b + 1] as u32).collect();
        let want = |b: usize| (b as u32 % cluster) | (cluster << 8) | ((b as u32 / cluster) << 16);
        Ok((verify::exact_u32(&places, want), "block places"))
    };
    let row = measure(lab, run, check)?;
    Ok((seen.get(), row.check))
}

/// Clusters of `cluster` blocks of `cluster_shared_read` at once: the model (blocks per SM
/// from the occupancy model, the SMs per unit `units`) and the driver.
fn occupancy(lab: &Lab, cluster: u32, units: &[u32]) -> Result<(u32, u32)> {
    let gpu = &lab.gpu;
    let shape = row_of(cluster, READ_THREADS, READ_SMEM);
    let f = function(gpu, "cluster_shared_read")?;
    let driver = max_active_clusters(gpu, &f, "cluster_shared_read", &shape, (cluster, 1))?;
    let per_sm = model_blocks(gpu.info.cc, &attributes(gpu, "cluster_shared_read")?, &shape).unwrap_or(0);
    Ok((cluster_model::max_active_clusters(units, per_sm, cluster), driver))
}

/// The units clusters are scheduled in, as the model takes them.
pub struct Units {
    /// The driver's clusters at once of 1 to [`MAX_CLUSTER_SIZE`] blocks at 1 block per SM.
    pub single_block: Vec<u32>,
    /// SMs per unit, largest first: solved from `single_block`, else [`even_layout`].
    pub layout: Vec<u32>,
    /// Whether `layout` was solved from the driver's figures.
    pub solved: bool,
    /// The driver's refusal of a query at 1 block per SM, if any.
    pub refused: Option<String>,
}

/// The note on clusters at once: the driver's figures at 1 block per SM, the units they imply,
/// and where the model and the driver part.
fn occupancy_note(sizes: &[AtSize], units: &Units) -> String {
    let off: Vec<String> = sizes
        .iter()
        .filter(|s| s.clusters_at_once.0 != s.clusters_at_once.1)
        .map(|s| format!("cluster {}: model {}, driver {}", s.cluster, s.clusters_at_once.0, s.clusters_at_once.1))
        .collect();
    let figures = units.single_block.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    let layout = match (&units.refused, units.solved) {
        (Some(why), _) => format!(
            "the driver did not answer ({why}), so the model assumes the even layout, {}",
            units_text(&units.layout)
        ),
        (None, true) => format!("{figures}: they imply units of {} SMs", units_text(&units.layout)),
        (None, false) => {
            format!("{figures}: no layout gives them, so the model assumes the even one, {}", units_text(&units.layout))
        }
    };
    format!(
        "Clusters at once (cluster_shared_read): a cluster runs inside one unit of SMs (a GPC, or a TPC on its own), one block per SM, so a unit smaller than the cluster takes none. The driver does not report the units; its clusters at once at 1 block per SM, for clusters of 1-{MAX_CLUSTER_SIZE} blocks, are {layout}. {}",
        if off.is_empty() {
            "The model agrees with the driver at every size.".to_string()
        } else {
            format!("The model is off: {}.", off.join("; "))
        }
    )
}

/// SMs per unit as `18 x2, 16 x5, 8`: runs of one size counted.
fn units_text(layout: &[u32]) -> String {
    let runs = layout.chunk_by(|a, b| a == b);
    runs.map(|r| if r.len() > 1 { format!("{} x{}", r[0], r.len()) } else { r[0].to_string() })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Asks the driver how many clusters of `cluster_shared_read` of each size fit at 1 block per
/// SM (the device's opt-in shared memory per block) and solves the figures for the units. A
/// refused query leaves the model on [`even_layout`], and the note says why: the units are an
/// input of the model, not a result of the lesson.
fn units(lab: &Lab) -> Units {
    let gpu = &lab.gpu;
    let smem = gpu.info.smem_per_block_optin;
    let asked = crate::gpu::kernel::allow_dynamic_smem(gpu, "cluster_shared_read", smem).and_then(|()| {
        let f = function(gpu, "cluster_shared_read")?;
        (1..=MAX_CLUSTER_SIZE)
            .map(|c| max_active_clusters(gpu, &f, "cluster_shared_read", &row_of(c, READ_THREADS, smem), (c, 1)))
            .collect::<Result<Vec<u32>>>()
    });
    let (single_block, refused) = match asked {
        Ok(figures) => (figures, None),
        Err(e) => (Vec::new(), Some(format!("{e:#}"))),
    };
    let solved = layout_from_single_block_counts(&single_block, gpu.info.sms);
    Units {
        single_block,
        refused,
        solved: solved.is_some(),
        layout: solved.unwrap_or_else(|| even_layout(gpu.info.sms)),
    }
}

/// A counted matmul: its cluster shape, the model's loads, the counted loads.
type Counted = ((u32, u32), u64, u64);

/// The counting sm_90 build's (`module`) `matmul_dsmem_32` at [`GEMM_COUNT_SIZE`] in `cx x cy`
/// clusters: its counted global loads against the model's, and its product checked.
fn count_loads(lab: &Lab, module: &Module, cluster: (u32, u32)) -> Result<(Counted, Check)> {
    let (m, n, k) = GEMM_COUNT_SIZE;
    let (a_host, b_host) = (reference::random_f32(m * k, 1), reference::random_f32(k * n, 2));
    let (a, b) = (upload(&a_host)?, upload(&b_host)?);
    let mut c = poisoned::<f32>(m * n)?;
    let err = |e| anyhow::anyhow!("load counter: {}", describe(e));
    let mut counter = module.get_global::<u64>(c"GLOBAL_LOADS").map_err(err)?;
    counter.copy_from(&0).map_err(err)?;
    launches::matmul_dsmem_32(
        shapes::matmul_dsmem_32(cluster, m as u32, n as u32),
        &a,
        &b,
        &mut c,
        m as u32,
        n as u32,
        k as u32,
    )
    .in_clusters(cluster)
    .enqueue_in(&lab.gpu, module)?;
    lab.gpu.stream.synchronize().map_err(err)?;
    let mut counted = 0u64;
    counter.copy_to(&mut counted).map_err(err)?;
    let shape = MatmulShape::new(m as u64, n as u64, k as u64);
    let model = cluster_tiled_global_loads(shape, DSMEM_TILE as u64, (cluster.0 as u64, cluster.1 as u64));
    let (product, _) = verify::matmul_auto(&a_host, &b_host, &download(&c)?, (m, n, k));
    let count = verify::exact_one(counted, model);
    let both = if product.passed() { count } else { product };
    Ok(((cluster, model, counted), both))
}

/// `matmul_tiled_32` and `matmul_dsmem_32` in every cluster shape at the run's matmul size.
fn matmul_rows(lab: &Lab, (m, n, k): (usize, usize, usize), clusters: &[u32]) -> Result<Vec<KernelRow>> {
    check_u32_elements("the clusters demo", &[m * k, k * n, m * n])?;
    ensure_free("the clusters demo", f32_bytes(&[m * k, k * n, m * n]))?;
    let (a_host, b_host) = (reference::random_f32(m * k, 1), reference::random_f32(k * n, 2));
    let (a, b) = (upload(&a_host)?, upload(&b_host)?);
    let mut c = poisoned::<f32>(m * n)?;
    let shape = MatmulShape::new(m as u64, n as u64, k as u64);
    let size = format!("{m}x{n}x{k}");
    let (mu, nu, ku) = (m as u32, n as u32, k as u32);
    let mut launches = vec![(
        launches::matmul_tiled_32(gemm_shapes::matmul_tiled_32(mu, nu), &a, &b, &mut c, mu, nu, ku),
        tiled_global_loads(shape, DSMEM_TILE as u64),
        "32x32 tiles, each block loads both of its tiles",
        size.clone(),
    )];
    for cluster in clusters.iter().map(|&s| matmul_cluster(s)) {
        let loads = cluster_tiled_global_loads(shape, DSMEM_TILE as u64, (cluster.0 as u64, cluster.1 as u64));
        let launch = launches::matmul_dsmem_32(shapes::matmul_dsmem_32(cluster, mu, nu), &a, &b, &mut c, mu, nu, ku)
            .in_clusters(cluster);
        let lesson = "32x32 tiles shared through DSMEM across the cluster's rows (A) and columns (B)";
        launches.push((launch, loads, lesson, format!("{size}, cluster {}x{}", cluster.0, cluster.1)));
    }
    let mut rows = Vec::new();
    for (launch, loads, lesson, size) in launches {
        let work =
            Work { flop: 2.0 * (m * n * k) as f64, bytes: 4.0 * (loads + (m * n) as u64) as f64, level: Level::Global };
        let run = KernelRun {
            launch,
            lesson,
            prediction: format!("{:.3e} global loads", loads as f64),
            work,
            size,
            reset: &|| poison(&c),
        };
        let check = || Ok(verify::matmul_auto(&a_host, &b_host, &download(&c)?, (m, n, k)));
        rows.push(measure(lab, run, check)?);
    }
    Ok(rows)
}

/// `201 (180-213)`: a measured figure and the published one.
fn beside(measured: f64, published: &str) -> String {
    format!("{measured:.0} ({published})")
}

/// The sweep over cluster sizes: measured beside published, the occupancy model beside the
/// driver, the matmul's loads counted beside the model.
fn sweep_table(sizes: &[AtSize]) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "cluster",
        "remote load, cycles (published)",
        "remote read, GB/s (published)",
        "barrier, cycles (published)",
        "clusters at once: model / driver",
        "matmul_dsmem_32 loads: model / counted",
        "check",
    ];
    let rows = sizes
        .iter()
        .map(|s| {
            let (lat, bw, bar) = published(s.cluster);
            let ((cx, cy), model, counted) = s.counted;
            let failed = s.checks.iter().filter(|c| !c.passed()).count();
            vec![
                s.cluster.to_string(),
                beside(s.remote.cycles, lat),
                beside(s.read.rate.value(), bw),
                beside(s.barrier_cycles, bar),
                format!("{} / {}", s.clusters_at_once.0, s.clusters_at_once.1),
                format!("{cx}x{cy}: {model} / {counted}"),
                if failed == 0 { "ok".into() } else { format!("FAIL ({failed} of {})", s.checks.len()) },
            ]
        })
        .collect();
    (header.map(String::from).to_vec(), rows)
}

/// The three charts' series: each measured sweep and the published figures.
fn series(sizes: &[AtSize]) -> Vec<Series> {
    let x = "blocks per cluster";
    let measured = |pick: &dyn Fn(&AtSize) -> f64| -> Vec<(f64, f64, String)> {
        sizes.iter().map(|s| (s.cluster as f64, pick(s), s.cluster.to_string())).collect()
    };
    let published = |pick: fn((f64, f64, f64)) -> f64| -> Vec<(f64, f64, String)> {
        sizes.iter().map(|s| (s.cluster as f64, pick(published_mid(s.cluster)), s.cluster.to_string())).collect()
    };
    let (lat, bw, bar) = ("cycles per dependent load", "GB/s, all SMs", "cycles per barrier");
    vec![
        Series::labelled(names::DSMEM_LATENCY, x, lat, measured(&|s| s.remote.cycles)),
        Series::labelled(names::DSMEM_LATENCY_PUBLISHED, x, lat, published(|p| p.0)),
        Series::labelled(names::DSMEM_READ, x, bw, measured(&|s| s.read.rate.value())),
        Series::labelled(names::DSMEM_READ_PUBLISHED, x, bw, published(|p| p.1)),
        Series::labelled(names::CLUSTER_BARRIER, x, bar, measured(&|s| s.barrier_cycles)),
        Series::labelled(names::CLUSTER_BARRIER_PUBLISHED, x, bar, published(|p| p.2)),
    ]
}

/// The notes: the local and L2 references, the occupancy model, the matmul's traffic and time.
fn notes(
    lab: &Lab,
    local: &Latency,
    own: &Latency,
    l2: &Latency,
    local_read: &KernelRow,
    sizes: &[AtSize],
    (matmul, k): (&[KernelRow], usize),
) -> Vec<String> {
    let mut notes = vec![
        format!(
            "Latency references: own shared memory with ld.shared (chase_shared) {:.0} cycles (published ~30); own shared memory through the cluster window (ld.shared::cluster, rank 0) {:.0} cycles; L2 hit (chase_global_cg, {} KiB chain) {:.0} cycles; an exchange through global memory is published at ~1100 cycles.",
            local.cycles,
            own.cycles,
            L2_CHAIN_BYTES >> 10,
            l2.cycles
        ),
        format!(
            "Bandwidth reference: own shared memory with ld.shared.v4, same kernel and grid, {:.0} GB/s on all SMs.",
            local_read.rate.value()
        ),
    ];
    if let Some((base, rest)) = matmul.split_first() {
        let steps = k.div_ceil(DSMEM_TILE as usize) as f64;
        let step_cycles = |row: &KernelRow| {
            let slots = (lab.gpu.info.sms * row.occupancy.active_blocks) as f64;
            let blocks = row.shape.grid.0 as f64 * row.shape.grid.1 as f64;
            cycles_per_block_step(row.timing.median_ms, lab.gpu.info.sm_clock_khz as f64 * 1e3, slots, blocks, steps)
        };
        let base_step = step_cycles(base);
        for (row, at) in rest.iter().zip(sizes) {
            notes.push(format!(
                "{} ({}): the model's global traffic {:.0} MB against {:.0} MB for matmul_tiled_32 ({:.2}x less); {:.2} ms against {:.2} ms: {:.0} SM cycles per block and 32-wide step against {:.0}, {:+.0}, where each step waits at one cluster barrier ({:.0} cycles measured) and one remote load ({:.0} cycles) on its way to the FMAs.",
                row.kernel,
                row.size,
                row.work.bytes / 1e6,
                base.work.bytes / 1e6,
                base.work.bytes / row.work.bytes,
                row.timing.median_ms,
                base.timing.median_ms,
                step_cycles(row),
                base_step,
                step_cycles(row) - base_step,
                at.barrier_cycles,
                at.remote.cycles
            ));
        }
        let gbs = base.work.bytes / base.timing.median_ms / 1e6;
        notes.push(format!(
            "Why less global traffic can be slower: matmul_tiled_32 moves its {:.0} MB at {gbs:.0} GB/s, {:.0}% of the memory's theoretical {:.0} GB/s, and its step is 64 shared loads for 32 FMAs per thread; the cluster matmul keeps those and adds, per step, a cluster barrier that waits for the slowest block of the cluster and a dependent remote load before the block barrier, with {} blocks per SM to hide them. Its remote bytes are few (at most one 4-byte load per thread and step), so what they cost is latency and waiting, not DSMEM bandwidth.",
            base.work.bytes / 1e6,
            100.0 * gbs / lab.gpu.info.theoretical_bandwidth_gbs(),
            lab.gpu.info.theoretical_bandwidth_gbs(),
            base.occupancy.active_blocks
        ));
    }
    notes
}

/// The hierarchy table's "distributed shared memory" row (six columns) and its checks, `None`
/// below cc 9.0: the remote chase (`steps` timed loads) and the next-block read at cluster
/// size 2.
pub fn hierarchy_row(lab: &Lab, steps: u32, reads: Reads) -> Result<Option<(Vec<String>, Vec<Check>)>> {
    if lab.gpu.info.cc < CLUSTER_CC {
        return Ok(None);
    }
    let cluster = CLUSTER_SIZES[0];
    let (remote, chase_check) = dsmem_chase(lab, cluster, cluster - 1, steps)?;
    let read = read_bandwidth(lab, cluster, 1, reads.reads)?;
    let row = vec![
        "distributed shared memory".into(),
        "-".into(),
        format!("{:.0} cycles ({:.1} ns), another block of a cluster of {cluster}", remote.cycles, remote.ns),
        "-".into(),
        format!("{:.0} GB/s (all SMs)", read.rate.value()),
        "chase_dsmem; cluster_shared_read".into(),
    ];
    Ok(Some((row, vec![chase_check, read.check])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_written_as_runs_of_one_size() {
        assert_eq!(units_text(&[18, 18, 16, 16, 16, 16, 16, 8, 2, 2, 2, 2]), "18 x2, 16 x5, 8, 2 x4");
        assert_eq!(units_text(&[4]), "4");
    }

    #[test]
    fn matmul_clusters_are_the_most_square_shapes() {
        let shapes: Vec<(u32, u32)> = [1, 2, 3, 4, 6, 8, 12, 16].map(matmul_cluster).to_vec();
        assert_eq!(shapes, [(1, 1), (2, 1), (3, 1), (2, 2), (3, 2), (4, 2), (4, 3), (4, 4)]);
        assert_eq!(cluster_size("16"), Ok(16));
        assert_eq!(
            cluster_size("32").unwrap_err(),
            "cluster size 32 is outside 1..=16: CUDA allows at most 16 blocks per cluster (non-portable above 8, cc 9.0)"
        );
        assert!(cluster_size("0").unwrap_err().starts_with("cluster size 0 is outside 1..=16"));
        assert_eq!(cluster_size("x").unwrap_err(), "cluster size `x` is not a whole number");
    }

    #[test]
    fn matmul_grids_are_whole_clusters_of_tiles() {
        assert_eq!(cluster_grid(4096, 4096, (4, 4)).grid, (128, 128));
        assert_eq!(cluster_grid(67, 45, (4, 4)).grid, (4, 4));
        assert_eq!(cluster_grid(67, 45, (2, 1)).grid, (2, 3));
        assert_eq!(cluster_grid(1, 1, (4, 2)).grid, (4, 2));
        assert_eq!(cluster_grid(1, 1, (1, 1)).smem_bytes, 16384);
    }

    #[test]
    fn read_sums_depend_on_the_peer_read() {
        let reads = crate::cli::defaults::<Reads>().reads;
        assert_eq!(reads, 4096);
        let own = read_sums(2, 0, reads);
        let next = read_sums(2, 1, reads);
        assert_eq!(own.len(), 2 * READ_THREADS as usize);
        // Rank 0 reading rank 1 sums what rank 1 reading itself sums, and not what it reads
        // of its own memory.
        assert_eq!(next[..READ_THREADS as usize], own[READ_THREADS as usize..]);
        // Every thread's sum tells the ranks of a cluster of 16 apart with 8 reads (each vector
        // once), and its own rank from the next with the default reads (each vector 512 times,
        // so the sums lose their top 9 bits and a rarer pair of ranks may agree).
        let threads = READ_THREADS as usize;
        let sums = read_sums(16, 0, 8);
        for t in 0..threads {
            let mut of_t: Vec<u32> = (0..16).map(|r| sums[r * threads + t]).collect();
            of_t.sort_unstable();
            of_t.dedup();
            assert_eq!(of_t.len(), 16, "thread {t}");
        }
        let sums = read_sums(16, 0, reads);
        for (r, t) in (0..16).flat_map(|r| (0..threads).map(move |t| (r, t))) {
            assert_ne!(sums[r * threads + t], sums[(r + 1) % 16 * threads + t], "rank {r} thread {t}");
        }
        // Thread 0 of rank 0 reads vectors 0, 256, .., 1792, 512 times each (i * 256 mod 2048).
        let by_hand = (0..8).map(|j| (0..4).fold(0u32, |s, w| s.wrapping_add(read_word(4 * 256 * j + w, 0))));
        assert_eq!(
            own[0],
            by_hand.fold(0u32, |s, v| s.wrapping_add(v.wrapping_mul(reads / 8)))
        );
    }
}
