//! What lessons receive from what they do not own: the sizes another lesson's options set
//! ([`Shared`]), and the memcpy ceiling, measured once per run by its owner and passed to every
//! lesson that shows its rates as a share of it.

use crate::gpu::timing::Timing;
use crate::verify::Check;

/// The sizes several lessons measure at, each set by one lesson's option and passed to the
/// others by the registry, so that their rows compare.
#[derive(Debug, Clone, PartialEq)]
pub struct Shared {
    /// The transposes' matrix, `(rows, cols)` of f32 (`--transpose`): the memcpy ceiling and
    /// the TMA lesson measure at it too.
    pub matrix: (usize, usize),
    /// The transposes' sweep (`--sizes`), at each of which the runner measures the ceiling.
    pub sweep: Vec<(usize, usize)>,
    /// The first SGEMM shape (`--sgemm`): the TMA lesson times rungs 6 and 7 at it.
    pub gemm: Option<(usize, usize, usize)>,
    /// The tiled matmul's shape (`--matmul`): the clusters lesson's DSMEM GEMM runs at it.
    pub matmul: (usize, usize, usize),
}

impl Shared {
    /// Host bytes of pinned staging for the matrices the ceiling is measured at (the matrix
    /// and each of the sweep): the copy and transpose lessons' peak.
    pub fn matrix_staging_bytes(&self) -> usize {
        self.sweep.iter().chain([&self.matrix]).map(|&s| super::staging_bytes(s)).max().unwrap_or(0)
    }
}

/// What lessons receive from what they do not own.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The sizes set by other lessons' options.
    pub shared: Shared,
    /// The memcpy ceiling, measured once per run by its owner, the memcpy lesson (absent when no demo
    /// of the run reads it).
    pub memcpy: Option<Ceiling>,
    /// The memcpy ceiling at each size of [`Shared::sweep`], in order (empty without a sweep or
    /// without the transpose demo, the one that reads it).
    pub memcpy_sweep: Vec<Ceiling>,
}

impl Inputs {
    /// The memcpy bandwidth, GB/s, when measured and its copy checked.
    pub fn memcpy_gbs(&self) -> Option<f64> {
        self.memcpy.as_ref().and_then(Ceiling::gbs)
    }
}

/// One measurement of the bandwidth ceiling: a checked device-to-device copy of an f32 matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    /// The matrix copied, `(rows, cols)` of f32.
    pub matrix: (usize, usize),
    /// Event timing of the copies.
    pub timing: Timing,
    /// The copy checked element by element.
    pub check: Check,
}

impl Ceiling {
    /// Bytes read plus written by one copy.
    pub fn bytes(&self) -> f64 {
        2.0 * 4.0 * (self.matrix.0 * self.matrix.1) as f64
    }

    /// GB/s of the median copy; `None` when the copy was wrong (no ceiling from a wrong copy).
    pub fn gbs(&self) -> Option<f64> {
        self.check.passed().then(|| self.timing.gbs(self.bytes()))
    }
}
