//! Collectives across the machine's GPUs through NCCL (loaded at run time, `gpu::nccl`):
//! all-reduce (sum) and all-gather of `f32`, 8 B to 1 GiB, reported as nccl-tests reports
//! them: the algorithm bandwidth `algbw = bytes / time` and the bus bandwidth
//! `busbw = algbw x factor`, the factor `2 (n - 1) / n` for all-reduce and `(n - 1) / n` for
//! all-gather (nccl-tests, doc/PERFORMANCE.md), so that busbw reads against the link's speed
//! whatever the number of GPUs. `bytes` is the size of one rank's result buffer (all-gather:
//! every rank's contribution together).
//!
//! One process, one communicator per device (`ncclCommInitAll`); each size runs 5 times
//! untimed, then 20 times back to back between two host clock reads after all streams are
//! idle, ended when every device's stream is; the result on every device is checked against
//! the CPU's.

use std::time::Instant;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::matrix::PairMatrix;
use crate::gpu::Gpu;
use crate::gpu::nccl::{Collective, Nccl};
use crate::gpu::peer::DeviceMemory;
use crate::gpu::timing::Repeats;
use crate::lab::Section;
use crate::lab::sizes::bytes as size_text;
use crate::verify::{self, Check};

/// Smallest size measured, bytes (nccl-tests' `-b 8`).
pub const MIN_BYTES: usize = 8;
/// Largest size measured, bytes (`-e 1G`).
pub const MAX_BYTES: usize = 1 << 30;
/// Untimed and timed iterations per size (nccl-tests' `-w 5 -n 20`).
pub const REPEATS: Repeats = Repeats { warmup: 5, runs: 20 };

/// Powers of two from `min` to `max` bytes.
pub fn sizes(min: usize, max: usize) -> Vec<usize> {
    std::iter::successors(Some(min.max(1).next_power_of_two()), |&b| b.checked_mul(2))
        .take_while(|&b| b <= max)
        .collect()
}

/// nccl-tests' bus-bandwidth factor for `n` ranks.
pub fn bus_factor(which: Collective, n: usize) -> f64 {
    let n = n as f64;
    match which {
        Collective::AllReduce => 2.0 * (n - 1.0) / n,
        Collective::AllGather => (n - 1.0) / n,
    }
}

/// The element counts of one size: NCCL's `count` argument (per-rank result for all-reduce,
/// per-rank contribution for all-gather) and the result's bytes that `algbw` counts; `None`
/// when the size is too small to give every rank one element.
pub fn counts(which: Collective, bytes: usize, n: usize) -> Option<(usize, usize)> {
    match which {
        Collective::AllReduce => (bytes >= 4).then_some((bytes / 4, bytes / 4 * 4)),
        Collective::AllGather => {
            let per_rank = bytes / (4 * n);
            (per_rank > 0).then_some((per_rank, per_rank * 4 * n))
        }
    }
}

/// One measured size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Which collective.
    pub which: Collective,
    /// Bytes of one rank's result.
    pub bytes: usize,
    /// Time of one collective, microseconds.
    pub time_us: f64,
    /// Algorithm bandwidth, GB/s (1e9).
    pub algbw: f64,
    /// Bus bandwidth, GB/s.
    pub busbw: f64,
    /// Every rank's result against the CPU's.
    pub check: Check,
}

impl Point {
    /// The point for `bytes` moved in `time_us` by `n` ranks.
    pub fn new(which: Collective, bytes: usize, n: usize, time_us: f64, check: Check) -> Point {
        let algbw = bytes as f64 / (time_us * 1e-6) / 1e9;
        Point { which, bytes, time_us, algbw, busbw: algbw * bus_factor(which, n), check }
    }
}

/// The value rank `r` contributes at element `i`: small whole numbers, so sums are exact in
/// `f32`.
fn contribution(r: usize, i: usize) -> f32 {
    (r + 1) as f32 + (i % 7) as f32
}

/// What rank-independent element `i` of the result holds.
fn expected(which: Collective, n: usize, count: usize, i: usize) -> f32 {
    match which {
        Collective::AllReduce => (0..n).map(|r| contribution(r, i)).sum(),
        Collective::AllGather => contribution(i / count, i % count),
    }
}

/// Measures `which` on `gpus` (one rank each) at every size of `sizes`.
///
/// # Errors
/// NCCL's or the driver's error as one line.
pub fn measure(nccl: &Nccl, gpus: &[Gpu], which: Collective, sizes: &[usize], repeats: Repeats) -> Result<Vec<Point>> {
    let n = gpus.len();
    let largest = sizes.iter().filter_map(|&b| counts(which, b, n)).map(|(c, _)| c).max().unwrap_or(0);
    let send_words = largest;
    let recv_words = match which {
        Collective::AllReduce => largest,
        Collective::AllGather => largest * n,
    };
    let mut send = Vec::new();
    let mut recv = Vec::new();
    for (r, gpu) in gpus.iter().enumerate() {
        let words: Vec<u32> = (0..send_words).map(|i| contribution(r, i).to_bits()).collect();
        send.push(DeviceMemory::from_words(gpu, &words)?);
        recv.push(DeviceMemory::poisoned(gpu, recv_words * 4)?);
    }
    let comms = nccl.communicators(gpus)?;
    let (sp, rp): (Vec<u64>, Vec<u64>) = (send.iter().map(|m| m.ptr).collect(), recv.iter().map(|m| m.ptr).collect());
    let sync = || -> Result<()> {
        for g in gpus {
            g.make_current()?;
            g.stream.synchronize().map_err(|e| anyhow::anyhow!("collective: {}", crate::gpu::describe(e)))?;
        }
        Ok(())
    };
    let mut points = Vec::new();
    for &b in sizes {
        let Some((count, bytes)) = counts(which, b, n) else { continue };
        for m in &recv {
            m.poison()?;
        }
        for _ in 0..repeats.warmup.max(1) {
            comms.run(which, gpus, &sp, &rp, count)?;
        }
        sync()?;
        let t = Instant::now();
        for _ in 0..repeats.runs {
            comms.run(which, gpus, &sp, &rp, count)?;
        }
        sync()?;
        let time_us = t.elapsed().as_secs_f64() * 1e6 / repeats.runs.max(1) as f64;
        let words = bytes / 4;
        let mut got = Vec::with_capacity(n * words);
        for m in &recv {
            got.extend(m.read_words(words)?);
        }
        let check = verify::exact_u32(&got, |k| expected(which, n, count, k % words).to_bits());
        points.push(Point::new(which, bytes, n, time_us, check));
    }
    Ok(points)
}

/// The report section of one collective, with the peer copy bandwidth (the fastest one-way
/// copy-engine rate between two devices, when measured) and the link's theoretical rate as
/// anchors beside the largest size's bus bandwidth.
pub fn section(
    which: Collective,
    n: usize,
    points: &[Point],
    copy: Option<&PairMatrix<f64>>,
    link_gbs: Option<f64>,
) -> Section {
    let header = ["size", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "check"];
    let rows = points
        .iter()
        .map(|p| {
            vec![
                size_text(p.bytes),
                format!("{:.1}", p.time_us),
                format!("{:.2}", p.algbw),
                format!("{:.2}", p.busbw),
                p.check.summary("exact"),
            ]
        })
        .collect();
    let mut notes = vec![format!(
        "busbw = algbw x {:.3} ({} for {n} GPUs, as nccl-tests counts it)",
        bus_factor(which, n),
        match which {
            Collective::AllReduce => "2 (n - 1) / n",
            Collective::AllGather => "(n - 1) / n",
        }
    )];
    if let Some(last) = points.last() {
        let best = copy.and_then(|m| m.off_diagonal_range()).map(|(_, hi)| hi);
        if let Some(c) = best {
            notes.push(format!(
                "at {}: busbw {:.1} GB/s = {:.0}% of the fastest one-way peer copy ({c:.1} GB/s)",
                size_text(last.bytes),
                last.busbw,
                100.0 * last.busbw / c
            ));
        }
        if let Some(t) = link_gbs {
            notes.push(format!(
                "at {}: busbw {:.1} GB/s = {:.0}% of the link's theoretical {t:.0} GB/s per direction",
                size_text(last.bytes),
                last.busbw,
                100.0 * last.busbw / t
            ));
        }
    }
    let name = match which {
        Collective::AllReduce => "all-reduce (sum, f32)",
        Collective::AllGather => "all-gather (f32)",
    };
    Section {
        name: "collectives".into(),
        title: format!("NCCL {name} across {n} GPUs"),
        lesson: "A collective's bus bandwidth is the rate each GPU's link carries: it approaches the peer copy rate once messages are large enough to hide the per-call latency.".into(),
        sweep: Some((header.map(String::from).to_vec(), rows)),
        checks: points.iter().map(|p| p.check.clone()).collect(),
        notes,
        ..Section::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_run_from_8_bytes_to_1_gib_by_doubling() {
        let s = sizes(MIN_BYTES, MAX_BYTES);
        assert_eq!(s.len(), 28);
        assert_eq!((s[0], s[1], s[27]), (8, 16, 1 << 30));
        assert_eq!(sizes(5, 40), [8, 16, 32]);
    }

    #[test]
    fn bus_bandwidth_uses_nccl_tests_factors() {
        assert_eq!(bus_factor(Collective::AllReduce, 2), 1.0);
        assert_eq!(bus_factor(Collective::AllGather, 2), 0.5);
        assert_eq!(bus_factor(Collective::AllReduce, 8), 1.75);
        assert_eq!(bus_factor(Collective::AllGather, 8), 0.875);
        // 1 GiB in 4 ms: algbw 268.4 GB/s; all-reduce on 2 GPUs, busbw the same.
        let p = Point::new(Collective::AllReduce, 1 << 30, 2, 4000.0, verify::exact_one(1, 1));
        assert!((p.algbw - 268.435456).abs() < 1e-6);
        assert_eq!(p.busbw, p.algbw);
        let p = Point::new(Collective::AllGather, 1 << 30, 4, 4000.0, verify::exact_one(1, 1));
        assert!((p.busbw - 268.435456 * 0.75).abs() < 1e-6);
    }

    #[test]
    fn counts_give_every_rank_whole_elements() {
        assert_eq!(counts(Collective::AllReduce, 8, 2), Some((2, 8)));
        assert_eq!(counts(Collective::AllGather, 8, 2), Some((1, 8)));
        assert_eq!(counts(Collective::AllGather, 8, 3), None);
        assert_eq!(counts(Collective::AllGather, 1024, 3), Some((85, 1020)));
        assert_eq!(counts(Collective::AllReduce, 1 << 30, 8), Some((1 << 28, 1 << 30)));
    }

    #[test]
    fn expected_results_are_the_sum_and_the_ranks_in_order() {
        // Two ranks contribute 1 + i%7 and 2 + i%7.
        assert_eq!(expected(Collective::AllReduce, 2, 4, 3), 3.0 + 6.0);
        // All-gather of 4 per rank: element 5 is rank 1's element 1.
        assert_eq!(expected(Collective::AllGather, 2, 4, 5), 2.0 + 1.0);
    }

    #[test]
    fn the_section_compares_busbw_with_the_peer_copy_and_the_link() {
        let points = vec![
            Point::new(Collective::AllReduce, 8, 2, 20.0, verify::exact_one(1, 1)),
            Point::new(Collective::AllReduce, 1 << 30, 2, 2900.0, verify::exact_one(1, 1)),
        ];
        let mut copy = PairMatrix::new(2);
        copy.set(0, 1, 390.0);
        copy.set(1, 0, 385.0);
        let s = section(Collective::AllReduce, 2, &points, Some(&copy), Some(478.125));
        let rows = &s.sweep.as_ref().unwrap().1;
        assert_eq!(rows[0][0], "8 B");
        assert_eq!(rows[1][..4], ["1 GiB", "2900.0", "370.26", "370.26"]);
        assert_eq!(s.notes[0], "busbw = algbw x 1.000 (2 (n - 1) / n for 2 GPUs, as nccl-tests counts it)");
        assert_eq!(s.notes[1], "at 1 GiB: busbw 370.3 GB/s = 95% of the fastest one-way peer copy (390.0 GB/s)");
        assert_eq!(s.notes[2], "at 1 GiB: busbw 370.3 GB/s = 77% of the link's theoretical 478 GB/s per direction");
        assert!(s.passed());
    }
}
