//! What lessons receive from measurements they do not own: the memcpy ceiling, measured once
//! per run by its owner and passed to every lesson that shows its rates as a share of it.

use crate::gpu::timing::Timing;
use crate::verify::Check;

/// What demos receive from measurements they do not own.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// The memcpy ceiling, measured once per run by its owner, the memcpy lesson (absent when no demo
    /// of the run reads it).
    pub memcpy: Option<Ceiling>,
    /// The memcpy ceiling at each size of [`super::Sizes::sweep`], in order (empty without a sweep or
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
