//! Timing with CUDA events on the lab's stream: warm-up runs first, then each timed run between
//! two events; the median and the minimum are reported. A measurement whose runs have settled
//! ([`settled`]: at least [`MIN_RUNS`], [`ENOUGH_MS`] of timed work, median within [`STABLE`]
//! of the minimum) stops before its last run: long kernels (an 8192³ SGEMM, 25 ms) then take
//! 5 runs instead of 20, short ones all of them.

use anyhow::Result;
use cust::event::{Event, EventFlags};

use super::context::Gpu;
use super::result::describe;
use serde::{Deserialize, Serialize};

/// Times of repeated runs of one piece of device work, milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Median over the timed runs, ms.
    pub median_ms: f64,
    /// Fastest timed run, ms.
    pub min_ms: f64,
    /// Number of timed runs.
    pub runs: usize,
}

impl Timing {
    /// Summarises run times (ms); `None` for no runs.
    pub fn from_runs(mut ms: Vec<f64>) -> Option<Timing> {
        if ms.is_empty() {
            return None;
        }
        ms.sort_by(f64::total_cmp);
        let n = ms.len();
        let median = if n % 2 == 1 { ms[n / 2] } else { (ms[n / 2 - 1] + ms[n / 2]) / 2.0 };
        Some(Timing { median_ms: median, min_ms: ms[0], runs: n })
    }

    /// Bandwidth in GB/s (1e9 bytes/s) for `bytes` moved in the median time.
    pub fn gbs(&self, bytes: f64) -> f64 {
        bytes / (self.median_ms * 1e-3) / 1e9
    }

    /// Rate in TFLOP/s for `flop` operations in the median time.
    pub fn tflops(&self, flop: f64) -> f64 {
        flop / (self.median_ms * 1e-3) / 1e12
    }
}

/// Timed runs a measurement takes before it may stop early.
pub const MIN_RUNS: usize = 5;
/// Timed milliseconds a measurement adds up before it may stop early.
pub const ENOUGH_MS: f64 = 100.0;
/// Runs have settled when their median is within this fraction of their minimum.
pub const STABLE: f64 = 0.01;

/// Whether the run times `ms` so far are enough: at least [`MIN_RUNS`] runs adding up to
/// [`ENOUGH_MS`], their median within [`STABLE`] of their minimum.
pub fn settled(ms: &[f64]) -> bool {
    ms.len() >= MIN_RUNS
        && ms.iter().sum::<f64>() >= ENOUGH_MS
        && Timing::from_runs(ms.to_vec()).is_some_and(|t| t.median_ms <= t.min_ms * (1.0 + STABLE))
}

/// How many runs to time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeats {
    /// Untimed runs first (JIT, caches, clocks).
    pub warmup: usize,
    /// Timed runs, at most: fewer once they have [`settled`].
    pub runs: usize,
}

/// Runs `enqueue` (which puts device work on the lab's stream) `warmup` times untimed, then
/// `runs` times each between two events (fewer once the times have [`settled`]), and returns
/// the event times.
///
/// # Errors
/// The first error of `enqueue` or of the driver (a faulting kernel shows here).
pub fn time(gpu: &Gpu, repeats: Repeats, mut enqueue: impl FnMut() -> Result<()>) -> Result<Timing> {
    let err = |e| anyhow::anyhow!("timing: {}", describe(e));
    for _ in 0..repeats.warmup {
        enqueue()?;
    }
    gpu.stream.synchronize().map_err(err)?;
    let (start, stop) = (Event::new(EventFlags::DEFAULT).map_err(err)?, Event::new(EventFlags::DEFAULT).map_err(err)?);
    let mut ms = Vec::with_capacity(repeats.runs);
    for _ in 0..repeats.runs {
        start.record(&gpu.stream).map_err(err)?;
        enqueue()?;
        stop.record(&gpu.stream).map_err(err)?;
        stop.synchronize().map_err(err)?;
        ms.push(stop.elapsed_time_f32(&start).map_err(err)? as f64);
        if settled(&ms) {
            break;
        }
    }
    Timing::from_runs(ms).ok_or_else(|| anyhow::anyhow!("timing: no timed runs"))
}

/// Times two launches alternately (`a`, `b`, `a`, `b`, ...) after two untimed pairs: `rounds`
/// event-timed runs of each, so both see the same clocks and temperature. Returns
/// `(a's timing, b's timing)`.
///
/// # Errors
/// As for [`time`].
pub fn alternate(
    gpu: &Gpu,
    rounds: usize,
    mut a: impl FnMut() -> Result<()>,
    mut b: impl FnMut() -> Result<()>,
) -> Result<(Timing, Timing)> {
    for _ in 0..2 {
        a()?;
        b()?;
    }
    let once = Repeats { warmup: 0, runs: 1 };
    let (mut a_ms, mut b_ms) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds {
        a_ms.push(time(gpu, once, &mut a)?.median_ms);
        b_ms.push(time(gpu, once, &mut b)?.median_ms);
    }
    let none = || anyhow::anyhow!("timing: no timed rounds");
    Ok((Timing::from_runs(a_ms).ok_or_else(none)?, Timing::from_runs(b_ms).ok_or_else(none)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_min_of_runs() {
        let t = Timing::from_runs(vec![3.0, 1.0, 2.0]).unwrap();
        assert_eq!((t.median_ms, t.min_ms, t.runs), (2.0, 1.0, 3));
        let t = Timing::from_runs(vec![4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!(t.median_ms, 2.5);
        assert_eq!(Timing::from_runs(vec![]), None);
    }

    #[test]
    fn runs_settle_when_long_enough_and_steady() {
        // Five 25 ms runs within 1%: settled.
        assert!(settled(&[25.0, 25.1, 25.0, 25.2, 25.1]));
        // Four are too few, however long.
        assert!(!settled(&[50.0, 50.0, 50.0, 50.0]));
        // Five 3 ms runs are 15 ms: short kernels take every run.
        assert!(!settled(&[3.0; 5]));
        assert!(settled(&[3.0; 34]));
        // A median 5% above the minimum is not steady.
        assert!(!settled(&[25.0, 26.25, 26.25, 26.25, 26.5]));
    }

    #[test]
    fn rates_use_the_median() {
        let t = Timing::from_runs(vec![2.0]).unwrap();
        // 1 GB in 2 ms is 500 GB/s; 1 TFLOP in 2 ms is 500 TFLOP/s.
        assert!((t.gbs(1e9) - 500.0).abs() < 1e-9);
        assert!((t.tflops(1e12) - 500.0).abs() < 1e-9);
    }
}
