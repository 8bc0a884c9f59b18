//! The report's charts, drawn with plotters to SVG and PNG: the coalescing and bank sweeps
//! against their models, the occupancy calculator's three graphs, the roofline, and bar charts
//! (bandwidth kernels against memcpy, the SGEMM ladder against its references).
//!
//! Each chart is a plain data struct (built from a run's [`Section`]s, so tests can compare its
//! points with the input) that implements [`Chart`], and so [`Picture`]: the lessons name the
//! charts they draw ([`crate::lab::Figure`]), and `present/` writes each with both backends.
//! Below the lessons and above [`crate::lab`], they name no lesson: what a chart needs of one
//! (its tensor-core kernels, the precision of a kernel) is passed in.
//!
//! Text uses the DejaVu Sans font compiled into the binary (plotters' `ab_glyph` feature), so
//! no system font or fontconfig is needed. Legends and labels sit where they cover no data:
//! keys above the plot ([`key`]), and the roofline's tags placed by [`labels`].

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::lab::{Picture, Section};
use crate::series::Series;

mod bars;
pub mod key;
pub mod labels;
mod occupancy;
mod roofline;
mod sizes;
mod sweep;

pub use bars::{Bar, BarChart, Reference, unique_names};
pub use occupancy::{Curve, OccupancyChart};
pub use roofline::{Precision, RoofPoint, RooflineChart};
pub use sizes::SizesChart;
pub use sweep::{Mark, SIGNED_Y_SERIES, SweepChart, YAxis};

/// What drawing on backend `DB` may fail with.
pub type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A chart that can draw itself on any plotters backend.
pub trait Chart {
    /// File name without extension, e.g. `"coalescing"`.
    fn stem(&self) -> String;
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32) {
        (900, 520)
    }
    /// Draws the whole chart on `root`.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

/// The font family every chart draws text in (DejaVu Sans, registered before each drawing).
pub(crate) const FONT: &str = "sans-serif";
/// Colours: measured data, first model, second model, marked point.
pub(crate) const MEASURED: RGBColor = RGBColor(0x1f, 0x5f, 0xbf);
/// The tensor-core roof of the roofline chart.
pub(crate) const TENSOR: RGBColor = RGBColor(0xc0, 0x50, 0x10);
pub(crate) const MODEL_A: RGBColor = RGBColor(0xd9, 0x5f, 0x02);
pub(crate) const MODEL_B: RGBColor = RGBColor(0x1b, 0x9e, 0x77);
/// A third model line (the DRAM-granularity model of the coalescing sweep).
pub(crate) const MODEL_C: RGBColor = RGBColor(0x75, 0x70, 0xb3);
pub(crate) const MARK: RGBColor = RGBColor(0xd0, 0x10, 0x10);
/// The BF16 tensor-core roof of the roofline chart.
pub(crate) const BF16: RGBColor = RGBColor(0x6a, 0x3d, 0x9a);
/// The FP8 tensor-core roof of the roofline chart.
pub(crate) const FP8: RGBColor = RGBColor(0x33, 0xa0, 0x2c);

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TTF shipped by the `dejavu` crate; failure would be a build bug.
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("DejaVu Sans from the dejavu crate is not a valid font"));
    });
}

/// Every chart is a [`Picture`] the report can write: drawn on each backend at its size, in
/// DejaVu Sans.
impl<C: Chart> Picture for C {
    fn stem(&self) -> String {
        Chart::stem(self)
    }

    fn svg(&self, path: &Path) -> Result<(), String> {
        register_font();
        let root = SVGBackend::new(path, self.size()).into_drawing_area();
        self.draw(&root).and_then(|()| root.present()).map_err(|e| e.to_string())
    }

    fn png(&self, path: &Path) -> Result<(), String> {
        register_font();
        let root = BitMapBackend::new(path, self.size()).into_drawing_area();
        self.draw(&root).and_then(|()| root.present()).map_err(|e| e.to_string())
    }
}

/// A section of `sections` by demo name.
pub(crate) fn section<'a>(sections: &'a [Section], name: &str) -> Option<&'a Section> {
    sections.iter().find(|s| s.name == name)
}

/// A series of a section by name.
pub(crate) fn series<'a>(section: &'a Section, name: &str) -> Option<&'a Series> {
    section.series.iter().find(|s| s.name == name)
}

/// Largest magnitude an axis reaches: extreme but valid values (a `y` of 1e308) are drawn at
/// the edge, and the axis and its padding stay finite (plotters' log axis loops forever on an
/// infinite end).
const AXIS_LIMIT: f64 = 1e300;

/// A power-of-two range covering `values` (all positive), for log axes.
pub fn log_range(values: impl IntoIterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| *v > 0.0 && v.is_finite())
        .map(|v| v.clamp(1.0 / AXIS_LIMIT, AXIS_LIMIT))
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return 0.5..2.0;
    }
    2f64.powf(lo.log2().floor() - 0.25)..2f64.powf(hi.log2().ceil() + 0.25)
}

/// Most decades a log axis labels at 1, 2 and 5; a wider range gets powers of ten only, every
/// so many decades, so that an extreme (but valid) value cannot flood the axis with labels.
const DENSE_DECADES: i32 = 6;

/// Ticks at 1, 2 and 5 times each power of ten inside `range` (10, 20, 50, 100, ...), so a
/// log axis can be read between its decades (every whole multiple when the range spans one
/// decade or less); past [`DENSE_DECADES`] decades, at most about a dozen powers of ten.
pub fn log_ticks(range: &std::ops::Range<f64>) -> Vec<f64> {
    if !(range.start > 0.0 && range.end.is_finite() && range.start < range.end) {
        return Vec::new();
    }
    let (lo, hi) = (range.start.log10().floor() as i32, range.end.log10().ceil() as i32);
    let ticks = |step: usize, marks: &[f64]| -> Vec<f64> {
        (lo..=hi)
            .step_by(step)
            .flat_map(|d| marks.iter().map(move |m| m * 10f64.powi(d)))
            .filter(|v| range.contains(v))
            .collect()
    };
    if hi - lo > DENSE_DECADES {
        return ticks(((hi - lo) / 12).max(1) as usize, &[1.0]);
    }
    // Where 1-2-5 leaves fewer than three labels (a range within about one decade), every
    // whole multiple of the power of ten.
    let sparse = ticks(1, &[1.0, 2.0, 5.0]);
    if sparse.len() >= 3 { sparse } else { ticks(1, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]) }
}

/// `range` grown to the ticks around it (1-2-5, or whole multiples within a decade), so that the lowest and the highest values have
/// a labelled tick beyond them (32 cycles between 20 and 50, 3900 GB/s under 5000, not under
/// an unlabelled axis end).
pub fn to_ticks(range: std::ops::Range<f64>) -> std::ops::Range<f64> {
    if !(range.start > 0.0 && range.start < range.end && range.end < AXIS_LIMIT) {
        return range;
    }
    // Within a decade the ticks are every whole multiple (log_ticks), so the ends may be too.
    let marks: &[f64] = if range.end / range.start < 10.0 {
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    } else {
        &[1.0, 2.0, 5.0, 10.0]
    };
    let decade = |v: f64| 10f64.powf(v.log10().floor());
    let below = |v: f64| marks.iter().rev().map(|m| m * decade(v)).find(|t| *t <= v).unwrap_or(decade(v));
    let above = |v: f64| marks.iter().map(|m| m * decade(v)).find(|t| *t >= v).unwrap_or(10.0 * decade(v));
    below(range.start) * 0.97..above(range.end) * 1.03
}

pub(crate) fn log_label(v: f64) -> String {
    match v {
        v if !(1e-3..1e7).contains(&v) => format!("{v:.0e}"),
        v if v >= 1.0 => format!("{v:.0}"),
        v => format!("{v:.3}").trim_end_matches('0').to_string(),
    }
}

/// A linear axis' label: the value with at most two decimals and no trailing zeros, so that
/// ticks read 0, 50, 100 (not 0.00, 50.00, 100) and 0.5, 1, 1.5.
pub fn linear_label(v: f64) -> String {
    let text = format!("{v:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" { "0".into() } else { text.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_within_about_a_decade_gets_every_whole_multiple() {
        // The TMA pipelines: 970 to 5000 GB/s had only 1000 and 2000 labelled.
        assert_eq!(log_ticks(&(970.0..5000.0)), [1000.0, 2000.0, 3000.0, 4000.0]);
        assert_eq!(log_ticks(&(27.0..1100.0)), [50.0, 100.0, 200.0, 500.0, 1000.0]);
    }

    #[test]
    fn a_log_axis_ends_on_ticks_beyond_its_data() {
        // The TMA bulk curve: data up to 3900 GB/s stopped under a top tick of 2000.
        let r = to_ticks(log_range([490.0, 3900.0]));
        let ticks = log_ticks(&r);
        assert_eq!(ticks, [200.0, 500.0, 1000.0, 2000.0, 5000.0]);
        assert!(r.start < 200.0 && r.end > 5000.0 && r.end < 5200.0, "{r:?}");
        // L2 hits of 271 to 333 cycles: ticks every 100 cycles, not 200 and 500 up to 1000.
        assert_eq!(log_ticks(&to_ticks(log_range([271.0, 333.0]))), [200.0, 300.0, 400.0, 500.0, 600.0, 700.0]);
        assert_eq!([0.0, 50.0, 100.0, 0.5, 1.25].map(linear_label), ["0", "50", "100", "0.5", "1.25"]);
    }
}
