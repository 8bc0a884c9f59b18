//! What a lesson draws in the report: its [`Figure`]s, each a chart ([`Picture`], drawn by
//! `charts/`, written to disk by `present/`) with its caption, or the note naming a chart the
//! run lacks the data for; all built from the recorded run ([`Run`]).

use std::path::Path;

use super::Section;
use crate::gpu::device::DeviceInfo;

/// The recorded run a figure is drawn from.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// One section per lesson, in run order.
    pub sections: &'a [Section],
    /// The device's figures.
    pub device: &'a DeviceInfo,
    /// Device-to-device memcpy bandwidth, GB/s, when the memcpy ceiling was measured.
    pub memcpy_gbs: Option<f64>,
    /// The SM clock under a full FP32 load, GHz, when measured.
    pub sm_clock_ghz: Option<f64>,
}

impl Run<'_> {
    /// FP32 peak, TFLOP/s, at the SM clock measured under load (the driver's SM clock when the
    /// run has none); `None` for an architecture the roofline model has no FP32 lanes for.
    pub fn peak_tflops(&self) -> Option<f64> {
        self.device.peak_fp32(self.sm_clock_ghz).map(|p| p / 1e12)
    }
}

/// A chart as the report writes it: its file stem and its two renderings.
pub trait Picture {
    /// File name without extension, e.g. `"coalescing"`.
    fn stem(&self) -> String;
    /// Draws it as SVG into the file `path`.
    ///
    /// # Errors
    /// The drawing backend's error, as text.
    fn svg(&self, path: &Path) -> Result<(), String>;
    /// Draws it as PNG into the file `path`.
    ///
    /// # Errors
    /// The drawing backend's error, as text.
    fn png(&self, path: &Path) -> Result<(), String>;
}

/// One chart of a lesson in the report.
pub enum Figure {
    /// The chart, and what to read in it (Markdown).
    Drawn(Box<dyn Picture>, String),
    /// A chart the run lacks the data for, as the report's list of charts not drawn names it.
    Missing(String),
}

impl Figure {
    /// `chart` with `caption`, or `missing` when the run lacks its data (`chart` is `None`).
    pub fn or_missing(chart: Option<impl Picture + 'static>, caption: impl Into<String>, missing: &str) -> Figure {
        match chart {
            Some(c) => Figure::Drawn(Box::new(c), caption.into()),
            None => Figure::Missing(missing.into()),
        }
    }

    /// `chart` with `caption` when the run has its data; a run without it misses nothing.
    pub fn when_drawn(chart: Option<impl Picture + 'static>, caption: &str) -> Option<Figure> {
        chart.map(|c| Figure::Drawn(Box::new(c), caption.into()))
    }
}
