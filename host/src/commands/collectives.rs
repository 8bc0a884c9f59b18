//! `memlab collectives`: NCCL all-reduce and all-gather across the chosen GPUs, reported as
//! nccl-tests reports them, against the peer copy rate and the link's theoretical rate (see
//! `demos::peer::collectives`). Without NCCL, or with fewer than two GPUs, skipped with one
//! line; NCCL is looked for before any GPU is touched.

use anyhow::Result;

use super::multi;
use crate::cli::{self, Devices};
use crate::demos::peer::collectives::{self, MAX_BYTES, MIN_BYTES, REPEATS};
use crate::demos::peer::matrix::{PairMatrix, ordered_pairs};
use crate::demos::peer::topology::Topology;
use crate::gpu::Gpu;
use crate::gpu::nccl::{Collective, Nccl};
use crate::gpu::peer::{self, DeviceMemory};
use crate::gpu::timing::{self, Repeats};
use crate::verify::{self, Check};
use crate::{present::report, refuse};

/// Options of `collectives`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Devices: `all`, or a list like 0,1 (two or more).
    #[arg(long, default_value = "all", value_parser = cli::devices)]
    pub device: Devices,
    /// Smallest message, bytes.
    #[arg(long, default_value = "8", value_parser = cli::bytes)]
    pub min_bytes: usize,
    /// Largest message, bytes (at most 1GiB).
    #[arg(long, default_value = "1GiB", value_parser = cli::bytes)]
    pub max_bytes: usize,
}

/// The one line printed when NCCL is not found (`gpu::nccl` lists where it is looked for).
pub fn skipped_line() -> String {
    "collectives: skipped: NCCL not found (set MEMLAB_NCCL=/path/to/libnccl.so.2)".into()
}

/// Measures and prints both collectives; returns whether every check passed.
pub fn run(args: Args) -> Result<bool> {
    if args.min_bytes < MIN_BYTES || args.max_bytes > MAX_BYTES || args.min_bytes > args.max_bytes {
        refuse!(
            "--min-bytes {} / --max-bytes {}: allowed {MIN_BYTES} <= min <= max <= {MAX_BYTES}",
            args.min_bytes,
            args.max_bytes
        );
    }
    // The driver first: without one (or without a GPU) this is a GPU command like the others,
    // refused in one line; with GPUs but without NCCL the measurement is skipped.
    let ordinals = multi::resolve(&args.device)?;
    let Some(nccl) = Nccl::load()? else {
        println!("{}", skipped_line());
        return Ok(true);
    };
    if ordinals.len() < 2 {
        println!("collectives: skipped: {} device chosen, collectives need two or more", ordinals.len());
        return Ok(true);
    }
    let gpus = ordinals.iter().map(|&o| Gpu::open(o, None)).collect::<Result<Vec<_>>>()?;
    let topology = Topology::query(&ordinals)?;
    let (copy, copy_check) = peer_copies(&gpus, &topology)?;
    let link = ordered_pairs(gpus.len())
        .filter_map(|(i, j)| topology.paths.get(i, j).and_then(|p| p.theoretical_gbs()))
        .fold(None, |acc: Option<f64>, v| Some(acc.map_or(v, |a| a.min(v))));
    println!(
        "# memlab collectives: NCCL {} ({}) on {} GPUs, NCCL_NVLS_ENABLE={}\n",
        nccl.version_text(),
        nccl.path().display(),
        gpus.len(),
        std::env::var("NCCL_NVLS_ENABLE").unwrap_or_default()
    );
    let sizes = collectives::sizes(args.min_bytes, args.max_bytes);
    match &copy_check {
        Some(c) => println!("peer copies (the yardstick), received data: {}\n", c.summary("exact")),
        None => println!("peer copies: none (no pair has peer access)\n"),
    }
    let mut passed = copy_check.as_ref().is_none_or(Check::passed);
    for which in [Collective::AllReduce, Collective::AllGather] {
        let points = collectives::measure(&nccl, &gpus, which, &sizes, REPEATS)?;
        let section = collectives::section(which, gpus.len(), &points, Some(&copy), link);
        passed &= section.passed();
        println!("{}", report::section(&section, None));
    }
    println!("{}", if passed { "All results verified." } else { "SOME RESULTS ARE WRONG: see the checks." });
    Ok(passed)
}

/// One-way copy-engine bandwidth of 256 MiB for every ordered pair with peer access, the
/// yardstick of the bus bandwidth, and the check of every receiver's data.
fn peer_copies(gpus: &[Gpu], topology: &Topology) -> Result<(PairMatrix<f64>, Option<Check>)> {
    let bytes = 256 << 20;
    let words: Vec<u32> = (0..bytes / 4).map(|i| i as u32).collect();
    let mut gbs = PairMatrix::new(gpus.len());
    let mut checks = Vec::new();
    for (i, j) in ordered_pairs(gpus.len()) {
        if !topology.paths.get(i, j).is_some_and(|p| p.peer_access()) {
            continue;
        }
        // Without peer access enabled, cuMemcpyPeerAsync stages through the host (measured on
        // 2 H200s: 38.5 GB/s instead of the link's 396).
        peer::enable(&gpus[i], &gpus[j])?;
        peer::enable(&gpus[j], &gpus[i])?;
        let src = DeviceMemory::from_words(&gpus[i], &words)?;
        let dst = DeviceMemory::poisoned(&gpus[j], bytes)?;
        gpus[i].make_current()?;
        let repeats = Repeats { warmup: 2, runs: 10 };
        let t = timing::time(&gpus[i], repeats, || {
            peer::copy_peer(&dst, &gpus[j], &src, &gpus[i], bytes, &gpus[i].stream)
        })?;
        checks.push(verify::exact_u32(&dst.read()?, |k| words[k]));
        gbs.set(i, j, t.gbs(bytes as f64));
    }
    // The first failing pair's check, else the last pair's (all passed).
    Ok((gbs, checks.iter().find(|c| !c.passed()).or(checks.last()).cloned()))
}
