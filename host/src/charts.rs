//! The report's charts, drawn with plotters to SVG and PNG: the coalescing and bank sweeps
//! against their models, the occupancy calculator's three graphs, the roofline, and bar charts
//! (bandwidth kernels against memcpy, the SGEMM ladder against its references).
//!
//! Each chart is a plain data struct (built from a run's [`Section`]s, so tests can compare its
//! points with the input) that implements [`Chart`]; [`save`] renders it with both backends.
//! Text uses the DejaVu Sans font compiled into the binary (plotters' `ab_glyph` feature), so
//! no system font or fontconfig is needed.

use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use crate::demos::{KernelRow, Level, Rate, Section};
use crate::model::occupancy::{ArchLimits, KernelResources, Mode, occupancy};
use crate::model::roofline::{AboveRoof, above_roof};
use crate::output;
use crate::series::{Point, Series, names};

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

/// The font family every chart draws text in (DejaVu Sans, registered by [`save`]).
pub(crate) const FONT: &str = "sans-serif";
/// Colours: measured data, first model, second model, marked point.
const MEASURED: RGBColor = RGBColor(0x1f, 0x5f, 0xbf);
/// The tensor-core roof of the roofline chart.
const TENSOR: RGBColor = RGBColor(0xc0, 0x50, 0x10);
const MODEL_A: RGBColor = RGBColor(0xd9, 0x5f, 0x02);
const MODEL_B: RGBColor = RGBColor(0x1b, 0x9e, 0x77);
/// A third model line (the DRAM-granularity model of the coalescing sweep).
const MODEL_C: RGBColor = RGBColor(0x75, 0x70, 0xb3);
const MARK: RGBColor = RGBColor(0xd0, 0x10, 0x10);

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TTF shipped by the `dejavu` crate; failure would be a build bug.
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("DejaVu Sans from the dejavu crate is not a valid font"));
    });
}

/// Writes `DIR/<stem>.svg` and `DIR/<stem>.png`, each whole or not at all ([`output`]), and
/// returns their paths.
///
/// # Errors
/// A file that cannot be written, or a drawing error.
pub fn save(chart: &impl Chart, dir: &Path) -> Result<[PathBuf; 2]> {
    register_font();
    let stem = chart.stem();
    let (svg, png) = (dir.join(format!("{stem}.svg")), dir.join(format!("{stem}.png")));
    let size = chart.size();
    let fail = |path: &Path, e: String| anyhow!("drawing {}: {e}", path.display());
    output::atomically(&svg, |temp| {
        let root = SVGBackend::new(temp, size).into_drawing_area();
        chart.draw(&root).and_then(|()| root.present()).map_err(|e| fail(&svg, e.to_string()))
    })?;
    output::atomically(&png, |temp| {
        let root = BitMapBackend::new(temp, size).into_drawing_area();
        chart.draw(&root).and_then(|()| root.present()).map_err(|e| fail(&png, e.to_string()))
    })?;
    Ok([svg, png])
}

/// A section of `sections` by demo name.
fn section<'a>(sections: &'a [Section], name: &str) -> Option<&'a Section> {
    sections.iter().find(|s| s.name == name)
}

/// A series of a section by name.
fn series<'a>(section: &'a Section, name: &str) -> Option<&'a Series> {
    section.series.iter().find(|s| s.name == name)
}

/// A power-of-two range covering `values` (all positive), for log axes.
/// Largest magnitude an axis reaches: extreme but valid values (a `y` of 1e308) are drawn at
/// the edge, and the axis and its padding stay finite (plotters' log axis loops forever on an
/// infinite end).
const AXIS_LIMIT: f64 = 1e300;

fn log_range(values: impl IntoIterator<Item = f64>) -> std::ops::Range<f64> {
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

/// `range` grown down to the 1-2-5 tick below it, so that the lowest values have a labelled
/// tick under them (32 cycles between 20 and 50, not under an unlabelled axis end).
fn down_to_tick(range: std::ops::Range<f64>) -> std::ops::Range<f64> {
    if !(range.start > 0.0 && range.start.is_finite()) {
        return range;
    }
    let decade = 10f64.powf(range.start.log10().floor());
    let tick = [5.0, 2.0, 1.0].map(|m| m * decade).into_iter().find(|t| *t <= range.start).unwrap_or(decade);
    tick * 0.97..range.end
}

fn log_label(v: f64) -> String {
    match v {
        v if !(1e-3..1e7).contains(&v) => format!("{v:.0e}"),
        v if v >= 1.0 => format!("{v:.0}"),
        v => format!("{v:.3}").trim_end_matches('0').to_string(),
    }
}

/// A measured sweep against one or two models, x as labelled categories (the sweep's points in
/// order), y on a log axis.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepChart {
    /// File stem.
    pub stem: &'static str,
    /// Title line.
    pub title: String,
    /// The x axis' description.
    pub x_desc: String,
    /// The measured series (drawn with markers) followed by the models (lines).
    pub series: Vec<Series>,
    /// How the y axis is drawn.
    pub y_axis: YAxis,
}

/// The y axis of a [`SweepChart`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YAxis {
    /// Logarithmic, for rates and latencies spanning decades; points at or below 0 are not drawn.
    Log,
    /// Linear from 0 (or below, for a value measured below 0) to 1 (or above), for fractions
    /// such as a hit fraction, whose noise may carry a measurement past either bound.
    Fraction,
}

/// The series drawn on a [`YAxis::Fraction`] axis: the only ones whose y may be below 0 in a
/// record (`record_check`), since a linear axis shows such a value where it lies.
pub const SIGNED_Y_SERIES: [&str; 4] =
    [names::PERSISTING_MEASURED, names::PERSISTING_MODEL, names::PERSISTING_PLAIN, names::PERSISTING_WINDOW];

impl SweepChart {
    /// The coalescing sweep: measured useful bandwidth / stride 1 against the sector and
    /// segment models, and the DRAM-granularity model where the run has it (runs recorded
    /// before it existed do not); `None` when the run has no coalescing section with series.
    pub fn coalescing(sections: &[Section]) -> Option<Self> {
        let s = section(sections, "coalescing")?;
        let mut series = [names::MEASURED, names::SECTOR_MODEL, names::SEGMENT_MODEL]
            .iter()
            .map(|n| series(s, n).cloned())
            .collect::<Option<Vec<_>>>()?;
        series.extend(self::series(s, names::DRAM_MODEL).cloned());
        let x_desc = series[0].x.clone();
        Some(SweepChart {
            stem: "coalescing",
            title: "Strided reads: useful bandwidth against stride".into(),
            x_desc,
            series,
            y_axis: YAxis::Log,
        })
    }

    /// The bank probe: time / stride 1 against the bank model's serialization factor.
    pub fn banks(sections: &[Section]) -> Option<Self> {
        let s = section(sections, "banks")?;
        let series =
            [names::MEASURED, names::BANK_MODEL].iter().map(|n| series(s, n).cloned()).collect::<Option<Vec<_>>>()?;
        // The last point is labelled "broadcast" on the axis (every lane reads one word).
        let x_desc = "stride (4-byte words); broadcast: every lane reads the same word".into();
        Some(SweepChart {
            stem: "banks",
            title: "Shared-memory bank probe: slowdown against stride".into(),
            x_desc,
            series,
            y_axis: YAxis::Log,
        })
    }

    /// The hierarchy's latency ladder: cycles per dependent load against the working set, with
    /// default caching and L2-only loads.
    pub fn ladder(sections: &[Section]) -> Option<Self> {
        let s = section(sections, "hierarchy")?;
        let series = [names::LADDER_DEFAULT, names::LADDER_L2]
            .iter()
            .map(|n| series(s, n).cloned())
            .collect::<Option<Vec<_>>>()?;
        // The named steps (the L2 partition step) go into the title: the x axis shows only
        // every few sizes.
        let steps: Vec<String> = self::series(s, names::LADDER_STEPS)
            .map(|st| {
                st.points
                    .iter()
                    .map(|p| {
                        format!(
                            "{} at {}",
                            p.label.as_deref().unwrap_or("step"),
                            crate::demos::hierarchy::ladder::bytes(p.x as usize)
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let title = match steps.is_empty() {
            true => "Latency ladder: one thread chasing dependent loads".into(),
            false => format!("Latency ladder: one thread chasing dependent loads ({})", steps.join(", ")),
        };
        Some(SweepChart { stem: "latency_ladder", title, x_desc: series[0].x.clone(), series, y_axis: YAxis::Log })
    }

    /// The chart of the `l2` section made of the series `names` (the first one measured),
    /// or `None` when the run lacks any of them.
    fn l2(sections: &[Section], stem: &'static str, title: &str, names: &[&str]) -> Option<Self> {
        let s = section(sections, "l2")?;
        let series = names.iter().map(|n| series(s, n).cloned()).collect::<Option<Vec<_>>>()?;
        let y_axis = if names.iter().all(|n| SIGNED_Y_SERIES.contains(n)) { YAxis::Fraction } else { YAxis::Log };
        Some(SweepChart { stem, title: title.into(), x_desc: series[0].x.clone(), series, y_axis })
    }

    /// L2 bandwidth against blocks per SM, one and four loads in flight per thread.
    pub fn l2_bandwidth(sections: &[Section]) -> Option<Self> {
        Self::l2(
            sections,
            "l2_bandwidth",
            "L2 read bandwidth against bytes in flight",
            &[names::L2_READ_UNROLLED, names::L2_READ_PLAIN],
        )
    }

    /// The hot re-reads' hit fraction against the hot buffer's size: `evict_first` measured
    /// and modelled, no policy and the window measured.
    pub fn persisting(sections: &[Section]) -> Option<Self> {
        Self::l2(
            sections,
            "l2_persisting",
            "Hot buffer re-read amid a stream: L2 hit fraction by policy",
            &[names::PERSISTING_MEASURED, names::PERSISTING_MODEL, names::PERSISTING_PLAIN, names::PERSISTING_WINDOW],
        )
    }

    /// Each SM's median L2 hit on lines SM 0 brought in, and the near/far level it falls in.
    pub fn partitions(sections: &[Section]) -> Option<Self> {
        Self::l2(
            sections,
            "l2_partitions",
            "L2 hits by SM: near and far partition",
            &[names::PARTITION_MEDIAN, names::PARTITION_MODEL],
        )
    }

    /// The TMA lesson's bulk-copy curve: GB/s against bytes per copy, one series per
    /// blocks-per-SM count (the first drawn solid, the others dashed).
    pub fn tma_curve(sections: &[Section]) -> Option<Self> {
        let s = section(sections, "tma")?;
        let series: Vec<Series> = s.series.iter().filter(|c| c.name.ends_with("per SM")).cloned().collect();
        (!series.is_empty() && !series[0].points.is_empty()).then(|| SweepChart {
            stem: "tma_bulk_curve",
            title: "TMA bulk copies: bandwidth against bytes per copy and blocks per SM".into(),
            x_desc: series[0].x.clone(),
            series,
            y_axis: YAxis::Log,
        })
    }

    /// The TMA lesson's pipeline sweeps: each kernel's fastest checked GB/s per stage count
    /// (the first drawn solid, the others dashed).
    pub fn tma_pipeline(sections: &[Section]) -> Option<Self> {
        let s = section(sections, "tma")?;
        let series: Vec<Series> =
            s.series.iter().filter(|c| c.name.ends_with(", fastest per stage count")).cloned().collect();
        let n = series.first()?.points.len();
        (n > 0 && series.iter().all(|c| c.points.len() == n)).then(|| SweepChart {
            stem: "tma_pipeline",
            title: "TMA pipelines: bandwidth against stages in the ring".into(),
            x_desc: series[0].x.clone(),
            series,
            y_axis: YAxis::Log,
        })
    }

    /// One sweep of the clusters lesson over cluster sizes: the series `measured` against the
    /// published figures (`published`); `None` when the run has no clusters section with them.
    pub fn clusters(
        sections: &[Section],
        stem: &'static str,
        title: &str,
        measured: &str,
        published: &str,
    ) -> Option<Self> {
        let s = section(sections, "clusters")?;
        let series = [measured, published].iter().map(|n| series(s, n).cloned()).collect::<Option<Vec<_>>>()?;
        Some(SweepChart { stem, title: title.into(), x_desc: series[0].x.clone(), series, y_axis: YAxis::Log })
    }

    /// The TMA transpose per swizzle mode: time / the fastest mode against the bank model's
    /// conflict factor of the tile's float4 column read, swizzled as the map says and unswizzled.
    pub fn tma_swizzle(sections: &[Section]) -> Option<Self> {
        let s = section(sections, "tma")?;
        let series = [names::MEASURED, names::BANK_MODEL, crate::demos::tma::UNSWIZZLED_MODEL]
            .iter()
            .map(|n| series(s, n).cloned())
            .collect::<Option<Vec<_>>>()?;
        Some(SweepChart {
            stem: "tma_swizzle",
            title: "TMA transpose: swizzle modes against the bank model".into(),
            x_desc: "the input tensor map's swizzle (box 64 rows x span)".into(),
            series,
            y_axis: YAxis::Log,
        })
    }

    /// The category label of point `i` (its label, else its x).
    fn category(&self, i: usize) -> String {
        let p: &Point = &self.series[0].points[i];
        p.label.clone().unwrap_or_else(|| format!("{}", p.x))
    }
}

impl Chart for SweepChart {
    fn stem(&self) -> String {
        self.stem.into()
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let n = self.series[0].points.len();
        let x = -0.5..(n as f64 - 0.5);
        let ys = self.series.iter().flat_map(|s| s.points.iter().map(|p| p.y));
        let mut builder = ChartBuilder::on(root);
        builder.caption(&self.title, (FONT, 22)).margin(14).x_label_area_size(46).y_label_area_size(70);
        match self.y_axis {
            YAxis::Log => {
                let y = down_to_tick(log_range(ys));
                let chart = builder.build_cartesian_2d(x, y.clone().log_scale().with_key_points(log_ticks(&y)))?;
                self.draw_on(chart, |v| log_label(*v), |y| y > 0.0)
            }
            YAxis::Fraction => {
                let (lo, hi) = ys
                    .filter(|v| v.is_finite())
                    .map(|v| v.clamp(-AXIS_LIMIT, AXIS_LIMIT))
                    .fold((0.0f64, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
                let pad = 0.05 * (hi - lo);
                let chart = builder.build_cartesian_2d(x, (lo - pad)..(hi + pad))?;
                self.draw_on(chart, |v| format!("{v:.2}"), |_| true)
            }
        }
    }
}

impl SweepChart {
    /// Draws the mesh, every series (points where `drawn` says so) and the legend on `chart`,
    /// whatever its y axis.
    fn draw_on<'a, DB, Y>(
        &self,
        mut chart: ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
        y_label: impl Fn(&f64) -> String,
        drawn: impl Fn(f64) -> bool,
    ) -> DrawResult<DB>
    where
        DB: DrawingBackend + 'a,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let measured = &self.series[0];
        let n = measured.points.len();
        // At most about 12 category labels, so long sweeps (the latency ladder) stay legible.
        let every = n.div_ceil(12).max(1);
        let label = |x: &f64| {
            let i = x.round();
            let shown = (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n && (i as usize).is_multiple_of(every);
            if shown { self.category(i as usize) } else { String::new() }
        };
        chart
            .configure_mesh()
            .x_desc(self.x_desc.as_str())
            .y_desc(measured.y.as_str())
            .x_labels(n)
            .x_label_formatter(&label)
            .y_label_formatter(&y_label)
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .draw()?;
        let colours = [MEASURED, MODEL_A, MODEL_B, MODEL_C];
        // Measured first, the models on top of it, dashed with open markers larger than the
        // measured dots: where a model predicts the measurement exactly, both stay visible.
        for (k, s) in self.series.iter().enumerate() {
            let colour = colours[k % colours.len()];
            // Models are drawn at the measured sweep's positions (same order and length).
            let xy: Vec<(f64, f64)> =
                s.points.iter().enumerate().filter(|(_, p)| drawn(p.y)).map(|(i, p)| (i as f64, p.y)).collect();
            if k == 0 {
                let style = ShapeStyle::from(&colour).stroke_width(3);
                chart
                    .draw_series(LineSeries::new(xy.clone(), style))?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], style));
                chart.draw_series(xy.iter().map(|&c| Circle::new(c, 5, colour.filled())))?;
            } else {
                let style = ShapeStyle::from(&colour).stroke_width(2);
                chart.draw_series(DashedLineSeries::new(xy.clone(), 7, 5, style))?.label(s.name.as_str()).legend(
                    move |(x, y)| {
                        EmptyElement::at((x, y))
                            + DashedPathElement::new(vec![(0, 0), (22, 0)], 5, 3, style)
                            + Circle::new((11, 0), 5, style)
                    },
                );
                chart.draw_series(xy.iter().map(|&c| Circle::new(c, 6 + 3 * k as i32, colour.stroke_width(2))))?;
            }
        }
        // The legend goes to the corner with the fewest points under it.
        let (xs, ys) = chart.plotting_area().get_pixel_range();
        let pixels: Vec<(i32, i32)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().enumerate().filter(|(_, p)| drawn(p.y)))
            .map(|(i, p)| chart.backend_coord(&(i as f64, p.y)))
            .collect();
        let corner = legend_corner(&pixels, (xs.start, xs.end), (ys.start, ys.end));
        chart
            .configure_series_labels()
            .position(corner)
            .label_font((FONT, 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        Ok(())
    }
}

/// The corner of a plot spanning pixels `xs` x `ys` whose box (the outer 45% of the width, 35%
/// of the height) covers the fewest of `points`: upper right first on a tie.
fn legend_corner(points: &[(i32, i32)], xs: (i32, i32), ys: (i32, i32)) -> SeriesLabelPosition {
    let (w, h) = ((xs.1 - xs.0) as f64, (ys.1 - ys.0) as f64);
    let right = |x: i32| (x - xs.0) as f64 > 0.55 * w;
    let left = |x: i32| ((x - xs.0) as f64) < 0.45 * w;
    let upper = |y: i32| ((y - ys.0) as f64) < 0.35 * h;
    let lower = |y: i32| (y - ys.0) as f64 > 0.65 * h;
    let count = |inside: &dyn Fn(i32, i32) -> bool| points.iter().filter(|&&(x, y)| inside(x, y)).count();
    [
        (SeriesLabelPosition::UpperRight, count(&|x, y| right(x) && upper(y))),
        (SeriesLabelPosition::LowerRight, count(&|x, y| right(x) && lower(y))),
        (SeriesLabelPosition::UpperLeft, count(&|x, y| left(x) && upper(y))),
        (SeriesLabelPosition::LowerLeft, count(&|x, y| left(x) && lower(y))),
    ]
    .into_iter()
    .min_by_key(|c| c.1)
    .map_or(SeriesLabelPosition::UpperRight, |c| c.0)
}

/// The occupancy calculator's three classic graphs for one kernel: occupancy against threads
/// per block, registers per thread and shared bytes per block, each with the kernel's current
/// point marked. Uses the hardware-mode model for the device's compute capability.
#[derive(Debug, Clone, PartialEq)]
pub struct OccupancyChart {
    /// Kernel name (title and file stem); `None` for resources given by hand.
    pub kernel: Option<String>,
    /// The architecture.
    pub arch: ArchLimits,
    /// The kernel's current resources.
    pub res: KernelResources,
    /// Model rules.
    pub mode: Mode,
}

/// One graph of [`OccupancyChart`]: x values and occupancy (0..=1) at each.
pub type Curve = Vec<(f64, f64)>;

impl OccupancyChart {
    /// The chart for the first kernel named `kernel` in `sections` (driver registers, static
    /// plus dynamic shared bytes, launch threads), or `None` if it is absent or its
    /// architecture has no table entry.
    pub fn for_kernel(sections: &[Section], cc: (u32, u32), kernel: &str) -> Option<Self> {
        let row: &KernelRow = sections.iter().flat_map(|s| &s.kernels).find(|k| k.kernel == kernel)?;
        let arch = *ArchLimits::for_cc(cc.0, cc.1)?;
        let res = KernelResources::new(row.shape.threads_per_block(), row.attrs.regs)
            .with_static_smem(row.attrs.static_smem)
            .with_dynamic_smem(row.shape.smem_bytes)
            .with_opt_in(true);
        Some(OccupancyChart { kernel: Some(kernel.into()), arch, res, mode: Mode::Hardware })
    }

    fn at(&self, res: KernelResources) -> f64 {
        occupancy(&self.arch, &res, self.mode).map_or(0.0, |o| o.occupancy)
    }

    /// Occupancy against threads per block (multiples of 32 up to the block limit).
    pub fn by_threads(&self) -> Curve {
        (1..=self.arch.max_threads_per_block / 32)
            .map(|w| (f64::from(w * 32), self.at(KernelResources { threads_per_block: w * 32, ..self.res })))
            .collect()
    }

    /// Occupancy against registers per thread (1..=255).
    pub fn by_registers(&self) -> Curve {
        (1..=self.arch.max_regs_per_thread)
            .map(|r| (f64::from(r), self.at(KernelResources { regs_per_thread: r, ..self.res })))
            .collect()
    }

    /// Occupancy against dynamic shared bytes per block (steps of the allocation granularity,
    /// or 256 bytes in the textbook SM, up to the opt-in limit).
    pub fn by_shared(&self) -> Curve {
        let step = self.arch.smem_alloc_granularity.max(256);
        let max = self.arch.smem_per_block_optin.saturating_sub(self.res.static_smem_bytes);
        (0..=max / step)
            .map(|i| {
                let d = i * step;
                (f64::from(d), self.at(KernelResources { dynamic_smem_bytes: d, ..self.res }))
            })
            .collect()
    }

    /// The current point of each graph: (threads, regs, dynamic shared bytes) and occupancy.
    pub fn current(&self) -> ([f64; 3], f64) {
        let r = &self.res;
        ([f64::from(r.threads_per_block), f64::from(r.regs_per_thread), f64::from(r.dynamic_smem_bytes)], self.at(*r))
    }
}

/// One graph of the occupancy chart; x values are divided by `x_unit` (1024 for KiB).
fn occupancy_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    x_desc: &str,
    curve: &Curve,
    current: (f64, f64),
    x_unit: f64,
) -> DrawResult<DB> {
    let curve: Curve = curve.iter().map(|&(x, y)| (x / x_unit, y)).collect();
    let current = (current.0 / x_unit, current.1);
    let x_max = curve.last().map_or(1.0, |p| p.0).max(current.0);
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 17))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(48)
        .build_cartesian_2d(0.0..x_max * 1.02, 0.0..105.0)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("occupancy %")
        .x_labels(6)
        .y_labels(6)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()?;
    // Occupancy changes in steps: draw each value until the next x.
    let mut steps = Vec::with_capacity(2 * curve.len());
    for (i, &(x, y)) in curve.iter().enumerate() {
        steps.push((x, 100.0 * y));
        let next = curve.get(i + 1).map_or(x, |p| p.0);
        steps.push((next, 100.0 * y));
    }
    chart.draw_series(LineSeries::new(steps, MEASURED.stroke_width(2)))?;
    let (cx, cy) = (current.0, 100.0 * current.1);
    // The label stays inside its panel: left of a point in the right part, and below the line.
    let offset = if cx > 0.6 * x_max { (-88, 10) } else { (10, 10) };
    let label = Text::new(format!("{cy:.0}% here"), offset, (FONT, 15).into_font().color(&MARK));
    chart.draw_series([EmptyElement::at((cx, cy)) + Circle::new((0, 0), 7, MARK.filled()) + label])?;
    Ok(())
}

impl Chart for OccupancyChart {
    fn stem(&self) -> String {
        self.kernel.as_ref().map_or("occupancy".into(), |k| format!("occupancy_{k}"))
    }

    fn size(&self) -> (u32, u32) {
        (1200, 430)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let r = &self.res;
        let title = format!(
            "Occupancy{} on cc {}.{} ({} threads, {} registers, {} B shared per block; {:?} rules)",
            self.kernel.as_ref().map_or(String::new(), |k| format!(" of {k}")),
            self.arch.major,
            self.arch.minor,
            r.threads_per_block,
            r.regs_per_thread,
            r.smem_bytes(),
            self.mode
        );
        let body = root.titled(&title, (FONT, 19))?;
        let panels = body.split_evenly((1, 3));
        let (x, occ) = self.current();
        let by_threads = self.by_threads();
        occupancy_panel(&panels[0], "against threads per block", "threads per block", &by_threads, (x[0], occ), 1.0)?;
        let by_registers = self.by_registers();
        let registers = (x[1], occ);
        occupancy_panel(
            &panels[1],
            "against registers per thread",
            "registers per thread",
            &by_registers,
            registers,
            1.0,
        )?;
        let (by_shared, shared) = (self.by_shared(), (x[2], occ));
        let desc = "dynamic shared memory per block, KiB";
        occupancy_panel(&panels[2], "against shared memory per block", desc, &by_shared, shared, 1024.0)?;
        Ok(())
    }
}

/// The transpose sweep over matrix sizes (`run-demos --sizes`): each kernel's rate at each size
/// as a share of memcpy at that size (GB/s when the run lacks memcpy at some size), one line
/// per kernel, the sizes in sweep order as categories.
#[derive(Debug, Clone, PartialEq)]
pub struct SizesChart {
    /// The sizes, in sweep order (`8191x8192`).
    pub sizes: Vec<String>,
    /// The y axis' description.
    pub y_desc: String,
    /// One line per kernel: its name and `(size index, y)` points; then the pitched layout's
    /// points per kernel (named `kernel pitched`), drawn as open markers in the kernel's colour.
    pub lines: Vec<(String, Vec<(usize, f64)>)>,
}

impl SizesChart {
    /// From the `transpose` section's [`names::SIZES`] series; `None` when the run swept no
    /// sizes.
    pub fn from_sections(sections: &[Section]) -> Option<Self> {
        let s = section(sections, "transpose")?;
        let swept: Vec<&Series> = s.series.iter().filter(|x| x.name.starts_with(names::SIZES)).collect();
        let memcpy_name = format!("{}{}", names::SIZES, names::SIZES_MEMCPY);
        let memcpy = swept.iter().find(|x| x.name == memcpy_name);
        let kernels: Vec<&&Series> = swept.iter().filter(|x| x.name != memcpy_name && !x.points.is_empty()).collect();
        let mut sizes: Vec<(usize, String)> = swept
            .iter()
            .flat_map(|x| &x.points)
            .map(|p| (p.x as usize, p.label.clone().unwrap_or_else(|| format!("{}", p.x))))
            .collect();
        sizes.sort();
        sizes.dedup_by_key(|p| p.0);
        if kernels.is_empty() || sizes.is_empty() {
            return None;
        }
        let ceiling =
            |x: f64| memcpy.and_then(|m| m.points.iter().find(|p| p.x == x)).map(|p| p.y).filter(|&y| y > 0.0);
        let share = kernels.iter().flat_map(|k| &k.points).all(|p| ceiling(p.x).is_some());
        let lines = kernels
            .iter()
            .map(|k| {
                let name = k.name.strip_prefix(names::SIZES).unwrap_or(&k.name).to_string();
                let points = k
                    .points
                    .iter()
                    .map(|p| {
                        let y = if share { 100.0 * p.y / ceiling(p.x).unwrap_or(1.0) } else { p.y };
                        (p.x as usize, y)
                    })
                    .collect();
                (name, points)
            })
            .collect();
        Some(SizesChart {
            sizes: sizes.into_iter().map(|p| p.1).collect(),
            y_desc: if share { "% of memcpy at the same size".into() } else { "GB/s (bytes read + written)".into() },
            lines,
        })
    }
}

impl Chart for SizesChart {
    fn stem(&self) -> String {
        "transpose_sizes".into()
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let n = self.sizes.len();
        let top = self.lines.iter().flat_map(|l| l.1.iter().map(|p| p.1)).fold(0.0, f64::max).clamp(1e-9, AXIS_LIMIT);
        let mut chart = ChartBuilder::on(root)
            .caption("Copy and transposes across matrix sizes", (FONT, 22))
            .margin(14)
            .x_label_area_size(46)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..top * 1.1)?;
        let label = |x: &f64| {
            let i = x.round();
            match (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                true => self.sizes[i as usize].clone(),
                false => String::new(),
            }
        };
        chart
            .configure_mesh()
            .x_desc("matrix, rows x cols f32")
            .y_desc(self.y_desc.as_str())
            .x_labels(n)
            .x_label_formatter(&label)
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .draw()?;
        let colours = [MEASURED, MODEL_A, MODEL_B, MODEL_C, MARK, RGBColor(0x66, 0x66, 0x66)];
        let dense: Vec<&str> =
            self.lines.iter().map(|l| l.0.as_str()).filter(|n| !n.ends_with(names::SIZES_PITCHED)).collect();
        for (name, points) in &self.lines {
            let kernel = name.strip_suffix(names::SIZES_PITCHED);
            let k = dense.iter().position(|d| Some(*d) == kernel || *d == name).unwrap_or(0);
            let colour = colours[k % colours.len()];
            let style = ShapeStyle::from(&colour).stroke_width(2);
            let xy: Vec<(f64, f64)> = points.iter().map(|&(i, y)| (i as f64, y)).collect();
            if kernel.is_some() {
                // The pitched layout: open markers only, a point per padded size.
                chart
                    .draw_series(xy.iter().map(|&c| Circle::new(c, 7, style)))?
                    .label(name.as_str())
                    .legend(move |(x, y)| Circle::new((x + 11, y), 6, style));
            } else {
                chart
                    .draw_series(LineSeries::new(xy.clone(), style))?
                    .label(name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], style));
                chart.draw_series(xy.iter().map(|&c| Circle::new(c, 4, colour.filled())))?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .label_font((FONT, 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        Ok(())
    }
}

/// One bar: label and value.
pub type Bar = (String, f64);

/// Horizontal bars with vertical reference lines, in one unit.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// File stem.
    pub stem: &'static str,
    /// Title line.
    pub title: String,
    /// Unit of the values, for the axis.
    pub unit: &'static str,
    /// The bars, top to bottom.
    pub bars: Vec<Bar>,
    /// Reference lines (e.g. memcpy, cuBLAS).
    pub references: Vec<Bar>,
    /// Why a bar passes a reference line, when one can (drawn under the title).
    pub note: Option<String>,
}

impl BarChart {
    /// Every kernel that streams global memory (GB/s) against the memcpy ceiling; `None` when
    /// no such kernel ran.
    pub fn bandwidth(sections: &[Section], memcpy_gbs: Option<f64>) -> Option<Self> {
        let bars: Vec<Bar> = sections
            .iter()
            .flat_map(|s| &s.kernels)
            // DRAM-bound kernels only: an L2-resident read would stand above the DRAM ceiling.
            .filter(|k| k.work.level == Level::Global)
            .filter_map(|k| match k.rate {
                Rate::Gbs(g) => Some((k.kernel.to_string(), g)),
                _ => None,
            })
            .collect();
        if bars.is_empty() {
            return None;
        }
        // A kernel that only reads (read_cg) can pass memcpy: a copy also writes, and DRAM
        // loses time turning the bus around between reads and writes.
        let note = memcpy_gbs.filter(|&m| bars.iter().any(|b| b.1 > m)).map(|_| {
            "Above the memcpy line: a kernel that only reads; memcpy reads and writes, and DRAM turns the bus around between them.".to_string()
        });
        Some(BarChart {
            stem: "bandwidth",
            title: "Global-memory kernels (AI ~ 0, off the roofline) against the memcpy ceiling".into(),
            unit: "GB/s (bytes read + written)",
            bars,
            references: memcpy_gbs.map(|g| ("memcpy D2D".to_string(), g)).into_iter().collect(),
            note,
        })
    }

    /// The SGEMM ladder: the `sgemm` section's kernels (TFLOP/s), each rung at every size the
    /// run measured (the n-th row of a rung is the n-th size, the size the n-th
    /// [`names::REFERENCE`] point names), with every reference (cuBLAS at each size) as a line;
    /// `None` when the run has no such section.
    pub fn sgemm_ladder(sections: &[Section]) -> Option<Self> {
        let s = section(sections, "sgemm")?;
        let references: Vec<Bar> = series(s, names::REFERENCE)
            .map(|r| r.points.iter().map(|p| (p.label.clone().unwrap_or_default(), p.y)).collect())
            .unwrap_or_default();
        // "cuBLAS 4096x4096x4096" and "cuBLAS TF32 4096x4096x4096" name one size, their last
        // word; the n-th size is the n-th one named, "4096x4096x4096" -> "4096³".
        let size_of = |label: &str| label.rsplit_once(' ').map_or(label, |r| r.1).to_string();
        let mut named: Vec<String> = Vec::new();
        for r in &references {
            let s = size_of(&r.0);
            if !named.contains(&s) {
                named.push(s);
            }
        }
        let size = |n: usize| named.get(n).map_or(format!("size {}", n + 1), |s| crate::cli::cubed(s));
        let mut rungs: Vec<(String, Vec<f64>)> = Vec::new();
        for k in &s.kernels {
            if let Rate::Tflops(t) = k.rate {
                let name = k.kernel.to_string();
                match rungs.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, rates)) => rates.push(t),
                    None => rungs.push((name, vec![t])),
                }
            }
        }
        if rungs.is_empty() {
            return None;
        }
        let sizes = rungs.iter().map(|r| r.1.len()).max().unwrap_or(1);
        let bars = rungs
            .iter()
            .flat_map(|(name, rates)| {
                rates.iter().enumerate().map(move |(n, &t)| {
                    if sizes > 1 { (format!("{name} {}", size(n)), t) } else { (name.to_string(), t) }
                })
            })
            .collect();
        let references = references
            .iter()
            .map(|(label, v)| match label.rsplit_once(' ') {
                Some((what, at)) => (format!("{what} {}", crate::cli::cubed(at)), *v),
                None => (label.clone(), *v),
            })
            .collect();
        Some(BarChart { stem: "sgemm_ladder", title: s.title.clone(), unit: "TFLOP/s", bars, references, note: None })
    }
}

impl Chart for BarChart {
    fn stem(&self) -> String {
        self.stem.into()
    }

    fn size(&self) -> (u32, u32) {
        (900, 140 + 44 * self.bars.len() as u32 + if self.note.is_some() { 24 } else { 0 })
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let n = self.bars.len() as f64;
        let max = self.bars.iter().chain(&self.references).map(|b| b.1).fold(0.0, f64::max).clamp(1e-9, AXIS_LIMIT);
        let root = match &self.note {
            Some(note) => {
                let (top, rest) = root.split_vertically(28);
                top.draw(&Text::new(note.as_str(), (16, 8), (FONT, 14).into_font().color(&MARK)))?;
                rest
            }
            None => root.clone(),
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, (FONT, 19))
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(10)
            .build_cartesian_2d(0.0..max * 1.12, 0.0..n)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_desc(self.unit)
            .x_label_formatter(&|v| compact(*v))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()?;
        // A value past the axis (the axis stops at AXIS_LIMIT) is drawn at its end: plotters
        // overflows an i32 mapping a point far outside the range. Labels keep the true value.
        let at = |v: f64| v.clamp(0.0, max * 1.12);
        for (i, (label, value)) in self.bars.iter().enumerate() {
            // Top bar first.
            let y = n - 1.0 - i as f64;
            chart.draw_series([Rectangle::new(
                [(0.0, y + 0.15), (at(*value), y + 0.85)],
                MEASURED.mix(0.75).filled(),
            )])?;
            let text = format!("{label}: {}", compact(*value));
            // Inside a long bar in white, after a short one in black.
            let (x, colour) = if *value > 0.4 * max { (max * 0.01, WHITE) } else { (at(*value) + max * 0.01, BLACK) };
            chart.draw_series([Text::new(text, (x, y + 0.68), (FONT, 15).into_font().color(&colour))])?;
        }
        for (j, (label, value)) in self.references.iter().enumerate() {
            chart.draw_series(DashedLineSeries::new(
                [(at(*value), 0.0), (at(*value), n)],
                8,
                5,
                MARK.stroke_width(2),
            ))?;
            // Right-aligned against its line, one line of text lower per reference; on the
            // line's right where the left would leave the plot.
            let text = format!("{label} {}", compact(*value));
            let width = text.chars().count() as i32 * 8;
            let line_x = chart.backend_coord(&(at(*value), n)).0;
            let left_edge = chart.plotting_area().get_pixel_range().0.start;
            let dx = if line_x - width - 6 < left_edge { 6 } else { -width - 6 };
            let label = Text::new(text, (dx, 4 + 17 * j as i32), (FONT, 14).into_font().color(&MARK));
            chart.draw_series([EmptyElement::at((at(*value), n)) + label])?;
        }
        Ok(())
    }
}

fn compact(v: f64) -> String {
    if v >= 100.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}

/// The roofline of the device (FP32 peak and the memcpy bandwidth, plus the clock x bus
/// bandwidth as a dashed roof) with every kernel that reports FLOP placed at its arithmetic
/// intensity (the [`names::ROOFLINE`] series of each section).
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
    /// Kernels: label, arithmetic intensity (FLOP/byte), TFLOP/s.
    pub points: Vec<(String, f64, f64)>,
    /// Dense TF32 tensor-core peak, TFLOP/s, drawn beside the FP32 roof (`None`: no TF32).
    pub tensor_tflops: Option<f64>,
}

impl RooflineChart {
    /// `None` when no section carries roofline points.
    pub fn new(sections: &[Section], peak_tflops: f64, memcpy_gbs: f64, theoretical_gbs: f64) -> Option<Self> {
        let points: Vec<_> = sections
            .iter()
            .filter_map(|s| series(s, names::ROOFLINE))
            .flat_map(|s| &s.points)
            // A point off a log axis (no bytes: infinite intensity) has no place on the chart.
            .filter(|p| p.x.is_finite() && p.y.is_finite() && p.x > 0.0 && p.y > 0.0)
            .map(|p| (p.label.clone().unwrap_or_default(), p.x, p.y))
            .fold(Vec::new(), |mut kept: Vec<(String, f64, f64)>, p| {
                // Each kernel once: its first point (the first size it ran at).
                if !kept.iter().any(|k| k.0 == p.0) {
                    kept.push(p);
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

    /// The balance point, FLOP/byte, against the memcpy roof.
    pub fn balance(&self) -> f64 {
        self.peak_tflops * 1e3 / self.memcpy_gbs
    }
}

impl Chart for RooflineChart {
    fn stem(&self) -> String {
        "roofline".into()
    }

    fn size(&self) -> (u32, u32) {
        (900, 600)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        // Room right of the highest intensity for the labels, which sit right of their points.
        let max_ai = self.points.iter().map(|p| p.1).fold(0.0, f64::max);
        let ais = self.points.iter().map(|p| p.1).chain([self.balance() * 4.0, 0.05, max_ai * 24.0]);
        let x = log_range(ais);
        let y_lo = (x.start * self.memcpy_gbs / 1e3).min(self.points.iter().map(|p| p.2).fold(f64::MAX, f64::min));
        let y = log_range([y_lo, self.tensor_tflops.unwrap_or(0.0).max(self.peak_tflops) * 1.5]);
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("Roofline: FP32 peak {:.1} TFLOP/s, memcpy {:.0} GB/s", self.peak_tflops, self.memcpy_gbs),
                (FONT, 20),
            )
            .margin(14)
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
        let roof = |gbs: f64| {
            let steps = 200;
            (0..=steps)
                .map(move |i| {
                    let ai = x.start * (x.end / x.start).powf(f64::from(i) / f64::from(steps));
                    (ai, (ai * gbs / 1e3).min(self.peak_tflops))
                })
                .collect::<Vec<_>>()
        };
        chart
            .draw_series(LineSeries::new(roof(self.memcpy_gbs), BLACK.stroke_width(3)))?
            .label(format!("roof: min(peak, AI x memcpy); balance {:.1} FLOP/byte", self.balance()))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], BLACK.stroke_width(3)));
        chart
            .draw_series(DashedLineSeries::new(roof(self.theoretical_gbs), 6, 4, BLACK.stroke_width(1)))?
            .label(format!("clock x bus {:.0} GB/s", self.theoretical_gbs))
            .legend(|(x, y)| EmptyElement::at((x, y)) + DashedPathElement::new(vec![(0, 0), (22, 0)], 6, 4, BLACK));
        if let Some(tensor) = self.tensor_tflops {
            let tensor_roof: Vec<(f64, f64)> =
                roof(f64::INFINITY).into_iter().map(|(ai, _)| (ai, (ai * self.memcpy_gbs / 1e3).min(tensor))).collect();
            chart
                .draw_series(DashedLineSeries::new(tensor_roof, 10, 5, TENSOR.stroke_width(2)))?
                .label(format!("TF32 tensor-core roof {tensor:.0} TFLOP/s (dense, wgmma rate)"))
                .legend(|(x, y)| {
                    EmptyElement::at((x, y)) + DashedPathElement::new(vec![(0, 0), (22, 0)], 10, 5, TENSOR)
                });
        }
        if (self.driver_peak_tflops / self.peak_tflops - 1.0).abs() > 1e-3 {
            let driver = [(self.balance(), self.driver_peak_tflops), (x.end, self.driver_peak_tflops)];
            chart
                .draw_series(DashedLineSeries::new(driver, 3, 3, MEASURED.stroke_width(1)))?
                .label(format!("FP32 peak at the driver's clock {:.1} TFLOP/s", self.driver_peak_tflops))
                .legend(|(x, y)| {
                    EmptyElement::at((x, y)) + DashedPathElement::new(vec![(0, 0), (22, 0)], 3, 3, MEASURED)
                });
        }
        // Kernels within a factor of about 2 in intensity, such as the SGEMM rungs, share one
        // label column right of their points, one line each, joined to its point by a thin
        // line; lone points alternate above and below.
        let mut groups: Vec<Vec<&(String, f64, f64)>> = Vec::new();
        for p in &self.points {
            match groups.iter_mut().find(|g| (g[0].1 / p.1).ln().abs() < 0.75) {
                Some(g) => g.push(p),
                None => groups.push(vec![p]),
            }
        }
        let font = (FONT, 15).into_font().color(&MEASURED);
        for (i, group) in groups.iter_mut().enumerate() {
            group.sort_by(|a, b| b.2.total_cmp(&a.2));
            for (_, ai, tflops) in group.iter() {
                chart.draw_series([EmptyElement::at((*ai, *tflops)) + Circle::new((0, 0), 7, MEASURED.filled())])?;
            }
            let pixels: Vec<(i32, i32)> = group.iter().map(|p| chart.backend_coord(&(p.1, p.2))).collect();
            let x = pixels[0].0 + 18;
            let roof_at = group[0].1 * self.memcpy_gbs / 1e3;
            let top = pixels[0].1.max(chart.backend_coord(&(group[0].1, roof_at.min(self.peak_tflops))).1 + 16);
            for (j, ((label, ai, tflops), &point)) in group.iter().zip(&pixels).enumerate() {
                let (peak, driver) = (self.peak_tflops * 1e12, self.driver_peak_tflops * 1e12);
                let text = match above_roof(*ai, tflops * 1e12, driver, peak, self.memcpy_gbs * 1e9) {
                    Some(AboveRoof::Clock) => format!("{label}: {tflops:.2} (clock)"),
                    Some(AboveRoof::Unexplained) => format!("{label}: {tflops:.2} (> FP32 peak)"),
                    _ => format!("{label}: {tflops:.2}"),
                };
                // Above the memory roof below the balance point the model's bytes overcount
                // DRAM traffic: L1 and L2 served part of the requested loads. Said above-left,
                // where the chart is empty.
                if above_roof(*ai, tflops * 1e12, driver, peak, self.memcpy_gbs * 1e9) == Some(AboveRoof::CacheReuse) {
                    let (lx, ly) = (point.0 - 110, point.1 - 46);
                    root.draw(&Text::new(text, (lx, ly), font.clone()))?;
                    root.draw(&Text::new("above the DRAM roof: L1/L2 reuse", (lx, ly + 17), font.clone()))?;
                    continue;
                }
                // A column runs down from its highest point, clear of the roof above it.
                let y = if group.len() > 1 {
                    top + 17 * j as i32
                } else if i % 2 == 0 {
                    point.1 - 14
                } else {
                    point.1 + 14
                };
                if group.len() > 1 {
                    root.draw(&PathElement::new(vec![point, (x - 3, y)], MEASURED.mix(0.6)))?;
                }
                root.draw(&Text::new(text, (x, y - 8), font.clone()))?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        Ok(())
    }
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
    fn the_legend_avoids_the_points() {
        let corner = |points: &[(i32, i32)]| legend_corner(points, (0, 100), (0, 100));
        // Pixels grow downwards: y 10 is near the top.
        assert!(matches!(corner(&[(20, 90)]), SeriesLabelPosition::UpperRight));
        assert!(matches!(corner(&[(80, 10), (90, 12)]), SeriesLabelPosition::LowerRight));
        assert!(matches!(corner(&[(80, 10), (90, 90)]), SeriesLabelPosition::UpperLeft));
        assert!(matches!(corner(&[(80, 10), (90, 90), (10, 10)]), SeriesLabelPosition::LowerLeft));
    }
}
