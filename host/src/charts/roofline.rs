//! The roofline: the FP32, TF32, BF16 and FP8 roofs over the memcpy bandwidth, every kernel that
//! computes at its intensity, each tagged with a number that a table beside the plot names.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::key::{self, Sample};
use super::labels::{self, Rect};
use super::{BF16, Chart, DrawResult, FONT, FP8, MARK, MEASURED, TENSOR, log_label, log_range, log_ticks, series};
use crate::lab::Section;
use crate::model::roofline::{AboveRoof, above_roof};
use crate::series::names;

/// The arithmetic a kernel computes in, and so the roof it is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// FP32 pipes.
    Fp32,
    /// TF32 tensor cores.
    Tf32,
    /// BF16 tensor cores.
    Bf16,
    /// FP8 tensor cores.
    Fp8,
}

impl Precision {
    /// The tensor-core precisions, each with a roof of its own.
    pub const TENSOR: [Precision; 3] = [Precision::Tf32, Precision::Bf16, Precision::Fp8];

    /// Its name on the chart.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "FP32",
            Precision::Tf32 => "TF32",
            Precision::Bf16 => "BF16",
            Precision::Fp8 => "FP8",
        }
    }

    fn colour(self) -> RGBColor {
        match self {
            Precision::Fp32 => MEASURED,
            Precision::Tf32 => TENSOR,
            Precision::Bf16 => BF16,
            Precision::Fp8 => FP8,
        }
    }
}

/// One kernel on the roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct RoofPoint {
    /// Kernel name.
    pub label: String,
    /// Arithmetic intensity, FLOP/byte.
    pub ai: f64,
    /// TFLOP/s.
    pub tflops: f64,
    /// Its roof.
    pub precision: Precision,
}

/// The roofline of the device (FP32 peak and the memcpy bandwidth, plus the clock x bus
/// bandwidth as a dashed roof, and the tensor-core roofs) with every kernel that reports FLOP
/// placed at its arithmetic intensity (the [`names::ROOFLINE`] series of each section).
#[derive(Debug, Clone, PartialEq)]
pub struct RooflineChart {
    /// FP32 peak, TFLOP/s, at the SM clock measured under load (the driver's when not measured).
    pub peak_tflops: f64,
    /// FP32 peak at the driver's SM clock, TFLOP/s (dashed when it differs from the roof): a
    /// compute-bound point above it is the clock's doing, not the caches'.
    pub driver_peak_tflops: f64,
    /// Measured memcpy bandwidth, GB/s (the solid memory roof).
    pub memcpy_gbs: f64,
    /// Clock x bus bandwidth, GB/s (dashed).
    pub theoretical_gbs: f64,
    /// The kernels.
    pub points: Vec<RoofPoint>,
    /// Dense TF32 tensor-core peak, TFLOP/s, at the roof's clock (`None`: no TF32).
    pub tensor_tflops: Option<f64>,
    /// Dense BF16 tensor-core peak, TFLOP/s, at the roof's clock (`None`: not in the model).
    pub bf16_tflops: Option<f64>,
    /// Dense FP8 tensor-core peak, TFLOP/s, at the roof's clock (`None`: not in the model).
    pub fp8_tflops: Option<f64>,
}

/// Half-side of a point's marker, pixels.
const MARKER: i32 = 6;
/// Table text size, pixels.
const TABLE: i32 = 13;
/// Width of the plot, pixels; the table takes the rest.
const PLOT_WIDTH: u32 = 820;

impl RooflineChart {
    /// `None` when no section carries roofline points. A point's precision is its kernel's,
    /// as `precision` gives it.
    pub fn new(
        sections: &[Section],
        precision: fn(&str) -> Precision,
        peak_tflops: f64,
        memcpy_gbs: f64,
        theoretical_gbs: f64,
    ) -> Option<Self> {
        let points: Vec<RoofPoint> = sections
            .iter()
            .filter_map(|s| series(s, names::ROOFLINE))
            .flat_map(|s| &s.points)
            // A point off a log axis (no bytes: infinite intensity) has no place on the chart.
            .filter(|p| p.x.is_finite() && p.y.is_finite() && p.x > 0.0 && p.y > 0.0)
            .fold(Vec::new(), |mut kept: Vec<RoofPoint>, p| {
                let label = p.label.clone().unwrap_or_default();
                // Each kernel once: its first point (the first size it ran at).
                if !kept.iter().any(|k| k.label == label) {
                    kept.push(RoofPoint { precision: precision(&label), label, ai: p.x, tflops: p.y });
                }
                kept
            });
        if points.is_empty() {
            return None;
        }
        Some(RooflineChart {
            peak_tflops,
            driver_peak_tflops: peak_tflops,
            memcpy_gbs,
            theoretical_gbs,
            points,
            tensor_tflops: None,
            bf16_tflops: None,
            fp8_tflops: None,
        })
    }

    /// The chart with the FP32 peak at the driver's clock, TFLOP/s, beside the measured roof.
    pub fn with_driver_peak(self, driver_peak_tflops: f64) -> Self {
        RooflineChart { driver_peak_tflops, ..self }
    }

    /// The chart with the TF32 tensor-core roof, TFLOP/s.
    pub fn with_tensor_peak(self, tensor_tflops: Option<f64>) -> Self {
        RooflineChart { tensor_tflops, ..self }
    }

    /// The chart with the BF16 tensor-core roof, TFLOP/s.
    pub fn with_bf16_peak(self, bf16_tflops: Option<f64>) -> Self {
        RooflineChart { bf16_tflops, ..self }
    }

    /// The same chart with the FP8 tensor-core roof, TFLOP/s.
    pub fn with_fp8_peak(self, fp8_tflops: Option<f64>) -> Self {
        RooflineChart { fp8_tflops, ..self }
    }

    /// The balance point, FLOP/byte, against the memcpy roof.
    pub fn balance(&self) -> f64 {
        self.peak_tflops * 1e3 / self.memcpy_gbs
    }

    /// The peak of a precision's roof, TFLOP/s, when the chart has it.
    pub fn peak(&self, p: Precision) -> Option<f64> {
        match p {
            Precision::Fp32 => Some(self.peak_tflops),
            Precision::Tf32 => self.tensor_tflops,
            Precision::Bf16 => self.bf16_tflops,
            Precision::Fp8 => self.fp8_tflops,
        }
    }

    /// Why a point lies above its own roof, if it does; the tensor peaks at the driver's clock
    /// scale as the FP32 one does.
    pub fn verdict(&self, p: &RoofPoint) -> Option<AboveRoof> {
        let peak = self.peak(p.precision)? * 1e12;
        let driver = peak * self.driver_peak_tflops / self.peak_tflops;
        above_roof(p.ai, p.tflops * 1e12, driver, peak, self.memcpy_gbs * 1e9)
    }

    /// Whether a point is drawn: not when it lies above its compute roof with no faster clock
    /// measured, a rate the units cannot reach (a wrong FLOP count or timing).
    pub fn drawn(&self, p: &RoofPoint) -> bool {
        self.verdict(p) != Some(AboveRoof::Unexplained)
    }

    /// The axes' ranges: intensity and TFLOP/s, covering every drawn point and every roof's
    /// bend.
    pub fn ranges(&self) -> (Range<f64>, Range<f64>) {
        let peaks = [Some(self.peak_tflops), self.tensor_tflops, self.bf16_tflops, self.fp8_tflops];
        let top = peaks.iter().flatten().fold(self.driver_peak_tflops, |a, &b| a.max(b));
        let drawn: Vec<&RoofPoint> = self.points.iter().filter(|p| self.drawn(p)).collect();
        let bends = peaks.iter().flatten().map(|p| p * 1e3 / self.memcpy_gbs * 2.0);
        let x = log_range(drawn.iter().map(|p| p.ai).chain(bends).chain([0.05]));
        let y_lo = (x.start * self.memcpy_gbs / 1e3).min(drawn.iter().map(|p| p.tflops).fold(f64::MAX, f64::min));
        let y_hi = drawn.iter().map(|p| p.tflops).fold(top, f64::max) * 1.5;
        (x, log_range([y_lo, y_hi]))
    }

    /// The pixel of `(ai, tflops)` in a plot spanning `plot` with the axes of [`Self::ranges`].
    pub fn pixel(&self, plot: Rect, (ai, tflops): (f64, f64)) -> (i32, i32) {
        let (x, y) = self.ranges();
        let f = |v: f64, r: &Range<f64>| (v.ln() - r.start.ln()) / (r.end.ln() - r.start.ln());
        let px = plot.x0 as f64 + f(ai, &x) * f64::from(plot.x1 - plot.x0);
        let py = plot.y1 as f64 - f(tflops, &y) * f64::from(plot.y1 - plot.y0);
        (px.round() as i32, py.round() as i32)
    }

    /// The tags of the drawn points (their numbers in the table), placed around their pixels
    /// `anchors` inside `plot` by [`labels::place`].
    pub fn tags(&self, anchors: &[(i32, i32)], plot: Rect) -> Vec<Option<Rect>> {
        let sizes: Vec<(i32, i32)> =
            (1..=anchors.len()).map(|n| (key::text_width(&n.to_string(), TABLE) + 4, 15)).collect();
        labels::place(anchors, &sizes, MARKER, plot)
    }

    /// One table row per point: number, kernel, TFLOP/s, FLOP/byte, roof, and why it passes
    /// its roof (L1/L2 reuse below the balance point, the boost clock above it) or is not drawn.
    pub fn table(&self) -> Vec<[String; 6]> {
        self.points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let roof = self
                    .peak(p.precision)
                    .map_or(format!("{} (none)", p.precision.name()), |_| p.precision.name().into());
                let why = match self.verdict(p) {
                    Some(AboveRoof::CacheReuse) => "L1/L2 reuse".to_string(),
                    Some(AboveRoof::Clock) => "boost clock".into(),
                    Some(AboveRoof::Unexplained) => "n/a: > peak, not drawn".into(),
                    None => String::new(),
                };
                [
                    format!("{}", i + 1),
                    p.label.clone(),
                    format!("{:.2}", p.tflops),
                    if p.ai < 1.0 { format!("{:.2}", p.ai) } else { format!("{:.1}", p.ai) },
                    roof,
                    why,
                ]
            })
            .collect()
    }

    fn key(&self) -> Vec<(Sample, String)> {
        let mut key = vec![
            (
                Sample::Line(MEASURED),
                format!(
                    "FP32 roof: min({:.1}, AI x memcpy); balance {:.1} FLOP/byte",
                    self.peak_tflops,
                    self.balance()
                ),
            ),
            (Sample::Dashed(RGBColor(0, 0, 0)), format!("clock x bus {:.0} GB/s", self.theoretical_gbs)),
        ];
        if (self.driver_peak_tflops / self.peak_tflops - 1.0).abs() > 1e-3 {
            key.push((
                Sample::Dashed(MEASURED),
                format!("FP32 peak at the driver's clock {:.1} TFLOP/s", self.driver_peak_tflops),
            ));
        }
        for p in Precision::TENSOR {
            if let Some(peak) = self.peak(p) {
                key.push((
                    Sample::Dashed(p.colour()),
                    format!("{} tensor-core roof {peak:.0} TFLOP/s (dense)", p.name()),
                ));
            }
        }
        key
    }

    /// The table beside the plot: one row per kernel, its number in its roof's colour (grey when
    /// it is not drawn).
    fn draw_table<DB: DrawingBackend>(&self, table_area: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let columns = [0, 24, 300, 362, 414, 462];
        let header = ["#", "kernel", "TFLOP/s", "FLOP/B", "roof", "past its roof"];
        let row = |area: &DrawingArea<DB, Shift>, y: i32, cells: &[String], colour: RGBColor| -> DrawResult<DB> {
            for (k, (cell, &cx)) in cells.iter().zip(&columns).enumerate() {
                let c = if k == 0 || k == 5 { colour } else { RGBColor(0, 0, 0) };
                area.draw(&Text::new(cell.as_str(), (cx + 4, y), (FONT, TABLE).into_font().color(&c)))?;
            }
            Ok(())
        };
        row(table_area, 10, &header.map(String::from), RGBColor(0, 0, 0))?;
        for (j, (cells, p)) in self.table().iter().zip(&self.points).enumerate() {
            let colour = if self.drawn(p) { p.precision.colour() } else { MARK };
            row(table_area, 30 + 18 * j as i32, cells, colour)?;
        }
        Ok(())
    }
}

impl Chart for RooflineChart {
    fn stem(&self) -> String {
        "roofline".into()
    }

    fn size(&self) -> (u32, u32) {
        let rows = 2 + self.points.len() as u32;
        (PLOT_WIDTH + 640, (560 + 44).max(60 + 18 * rows) + 40)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let peaks: Vec<String> = std::iter::once(Precision::Fp32)
            .chain(Precision::TENSOR)
            .filter_map(|p| self.peak(p).map(|v| format!("{} {v:.0}", p.name())))
            .collect();
        let title = format!("Roofline: peaks {} TFLOP/s; memcpy {:.0} GB/s", peaks.join(", "), self.memcpy_gbs);
        let area = key::titled(root, &title, &self.key())?;
        let (plot_area, table_area) = area.split_horizontally(PLOT_WIDTH);
        let (x, y) = self.ranges();
        let mut chart = ChartBuilder::on(&plot_area)
            .margin(14)
            .margin_top(4)
            .x_label_area_size(46)
            .y_label_area_size(70)
            .build_cartesian_2d(x.clone().log_scale(), y.clone().log_scale().with_key_points(log_ticks(&y)))?;
        chart
            .configure_mesh()
            .x_desc("arithmetic intensity, FLOP/byte of requested global loads")
            .y_desc("TFLOP/s")
            .x_label_formatter(&|v| log_label(*v))
            .y_label_formatter(&|v| log_label(*v))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()?;
        let roof = |gbs: f64, peak: f64| {
            let steps = 200;
            (0..=steps)
                .map(move |i| {
                    let ai = x.start * (x.end / x.start).powf(f64::from(i) / f64::from(steps));
                    (ai, (ai * gbs / 1e3).min(peak))
                })
                .collect::<Vec<_>>()
        };
        for p in Precision::TENSOR {
            if let Some(peak) = self.peak(p) {
                chart.draw_series(DashedLineSeries::new(
                    roof(self.memcpy_gbs, peak),
                    10,
                    5,
                    p.colour().stroke_width(2),
                ))?;
            }
        }
        chart.draw_series(DashedLineSeries::new(
            roof(self.theoretical_gbs, self.peak_tflops),
            6,
            4,
            BLACK.stroke_width(1),
        ))?;
        chart.draw_series(LineSeries::new(roof(self.memcpy_gbs, self.peak_tflops), MEASURED.stroke_width(3)))?;
        if (self.driver_peak_tflops / self.peak_tflops - 1.0).abs() > 1e-3 {
            let driver = [(self.balance(), self.driver_peak_tflops), (x.end, self.driver_peak_tflops)];
            chart.draw_series(DashedLineSeries::new(driver, 3, 3, MEASURED.stroke_width(1)))?;
        }
        // Each drawn point tagged with its number, placed clear of every marker and tag.
        let drawn: Vec<(usize, &RoofPoint)> = self.points.iter().enumerate().filter(|(_, p)| self.drawn(p)).collect();
        for (_, p) in &drawn {
            chart.draw_series([Circle::new((p.ai, p.tflops), MARKER as u32, p.precision.colour().filled())])?;
        }
        let anchors: Vec<(i32, i32)> = drawn.iter().map(|(_, p)| chart.backend_coord(&(p.ai, p.tflops))).collect();
        let (xs, ys) = chart.plotting_area().get_pixel_range();
        let plot = Rect { x0: xs.start, y0: ys.start, x1: xs.end, y1: ys.end };
        for ((&(i, p), tag), &anchor) in drawn.iter().zip(self.tags(&anchors, plot)).zip(&anchors) {
            let Some(r) = tag else { continue };
            let colour = p.precision.colour();
            let end = r.nearest(anchor);
            if (end.0 - anchor.0).abs().max((end.1 - anchor.1).abs()) > MARKER + 4 {
                root.draw(&PathElement::new(vec![anchor, end], colour.mix(0.7)))?;
            }
            root.draw(&Rectangle::new([(r.x0, r.y0), (r.x1, r.y1)], WHITE.mix(0.9).filled()))?;
            let font = (FONT, TABLE).into_font().color(&colour).pos(Pos::new(HPos::Center, VPos::Center));
            root.draw(&Text::new(format!("{}", i + 1), ((r.x0 + r.x1) / 2, (r.y0 + r.y1) / 2), font))?;
        }
        self.draw_table(&table_area)
    }
}
