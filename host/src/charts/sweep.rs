//! Sweeps: a measured series against its models, the x axis the sweep's points as
//! categories, the y axis logarithmic or a fraction.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::key::{self, Sample};
use super::{
    Chart, DrawResult, FONT, MARK, MEASURED, MODEL_A, MODEL_B, MODEL_C, linear_label, log_label, log_range, log_ticks,
    section, series, to_ticks,
};
use crate::lab::Section;
use crate::series::{Point, Series, names};

/// Colours of the series, in order: measured, then the models.
const COLOURS: [RGBColor; 4] = [MEASURED, MODEL_A, MODEL_B, MODEL_C];
/// Most points a model is drawn with open markers at; past it, its dashed line alone (132
/// SMs' markers would merge into a band).
const MARKED_POINTS: usize = 40;

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
    /// Vertical marks between categories (a step in the data).
    pub marks: Vec<Mark>,
}

/// A vertical mark of a [`SweepChart`]: at category position `at` (0 the first point; 2.5
/// between the third and the fourth), with its label.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// Where, in category positions.
    pub at: f64,
    /// What it marks.
    pub label: String,
}

/// The y axis of a [`SweepChart`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YAxis {
    /// Logarithmic, for rates and latencies spanning decades; points at or below 0 are not drawn.
    Log,
    /// Linear from 0 to 1, for fractions such as a hit fraction; a value that noise carried
    /// past either bound is marked at the bound and named in the key, not drawn as data.
    Fraction,
}

/// The series drawn on a [`YAxis::Fraction`] axis: the only ones whose y may be below 0 in a
/// record (`record_check`); the chart marks such a value rather than drawing it.
pub const SIGNED_Y_SERIES: [&str; 4] =
    [names::PERSISTING_MEASURED, names::PERSISTING_MODEL, names::PERSISTING_PLAIN, names::PERSISTING_WINDOW];

/// The index of the first value above the largest step of the sorted `ys`, when that step is
/// at least four times the mean step between neighbours (two runs, not one spread).
fn step(ys: &[f64]) -> Option<usize> {
    let gaps: Vec<f64> = ys.windows(2).map(|w| w[1] - w[0]).collect();
    let (at, largest) = gaps.iter().copied().enumerate().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let mean = (ys[ys.len() - 1] - ys[0] - largest) / (gaps.len() as f64 - 1.0).max(1.0);
    (largest > 0.0 && largest >= 4.0 * mean).then_some(at + 1)
}

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
            marks: Vec::new(),
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
            marks: Vec::new(),
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
                            crate::lab::sizes::bytes(p.x as usize)
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let title = match steps.is_empty() {
            true => "Latency ladder: one thread chasing dependent loads".into(),
            false => format!("Latency ladder: one thread chasing dependent loads ({})", steps.join(", ")),
        };
        Some(SweepChart {
            stem: "latency_ladder",
            title,
            x_desc: series[0].x.clone(),
            series,
            y_axis: YAxis::Log,
            marks: Vec::new(),
        })
    }

    /// The chart of the `l2` section made of the series `names` (the first one measured),
    /// or `None` when the run lacks any of them.
    fn l2(sections: &[Section], stem: &'static str, title: &str, names: &[&str]) -> Option<Self> {
        let s = section(sections, "l2")?;
        let series = names.iter().map(|n| series(s, n).cloned()).collect::<Option<Vec<_>>>()?;
        let y_axis = if names.iter().all(|n| SIGNED_Y_SERIES.contains(n)) { YAxis::Fraction } else { YAxis::Log };
        Some(SweepChart { stem, title: title.into(), x_desc: series[0].x.clone(), series, y_axis, marks: Vec::new() })
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
    /// and modelled, no policy and the window measured. A fraction outside 0..=1 (timing noise)
    /// is marked, not drawn.
    pub fn persisting(sections: &[Section]) -> Option<Self> {
        Self::l2(
            sections,
            "l2_persisting",
            "Hot buffer re-read amid a stream: L2 hit fraction by policy",
            &[names::PERSISTING_MEASURED, names::PERSISTING_MODEL, names::PERSISTING_PLAIN, names::PERSISTING_WINDOW],
        )
    }

    /// Each SM's median L2 hit on lines SM 0 brought in, sorted, with the level of each run of
    /// SMs (the median of the SMs below the largest step between neighbours, and of those above
    /// it) and the step marked. The record's own level series classifies the SMs' medians by a
    /// cut between single hops, which no median reaches, so it is not drawn.
    pub fn partitions(sections: &[Section]) -> Option<Self> {
        let s = section(sections, "l2")?;
        let medians = series(s, names::PARTITION_MEDIAN)?.clone();
        let ys: Vec<f64> = medians.points.iter().map(|p| p.y).collect();
        let mut chart = SweepChart {
            stem: "l2_partitions",
            title: "L2 hits by SM on lines SM 0 brought in: near and far partition".into(),
            x_desc: medians.x.clone(),
            series: vec![medians.clone()],
            y_axis: YAxis::Log,
            marks: Vec::new(),
        };
        if let Some(step) = step(&ys) {
            let level = |run: &[f64]| run[run.len() / 2];
            let (near, far) = (level(&ys[..step]), level(&ys[step..]));
            let mut levels = medians.clone();
            levels.name = format!("level of each run: near {near:.0}, far {far:.0} cycles (median)");
            for (i, p) in levels.points.iter_mut().enumerate() {
                p.y = if i < step { near } else { far };
            }
            let first = medians.points[step].label.clone().unwrap_or_default();
            let label = format!("step at {first}: {step} SMs near, {} across the partition link", ys.len() - step);
            chart.marks.push(Mark { at: step as f64 - 0.5, label });
            chart.series.push(levels);
        }
        Some(chart)
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
            marks: Vec::new(),
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
            marks: Vec::new(),
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
        Some(SweepChart {
            stem,
            title: title.into(),
            x_desc: series[0].x.clone(),
            series,
            y_axis: YAxis::Log,
            marks: Vec::new(),
        })
    }

    /// The TMA transpose per swizzle mode: time / the fastest mode against the bank model's
    /// conflict factor of the tile's float4 column read, swizzled as the map says and unswizzled.
    pub fn tma_swizzle(sections: &[Section]) -> Option<Self> {
        let s = section(sections, "tma")?;
        let series = [names::MEASURED, names::BANK_MODEL, names::UNSWIZZLED_MODEL]
            .iter()
            .map(|n| series(s, n).cloned())
            .collect::<Option<Vec<_>>>()?;
        Some(SweepChart {
            stem: "tma_swizzle",
            title: "TMA transpose: swizzle modes against the bank model".into(),
            x_desc: "the input tensor map's swizzle (box 64 rows x span)".into(),
            series,
            y_axis: YAxis::Log,
            marks: Vec::new(),
        })
    }

    /// The category label of point `i` (its label, else its x).
    fn category(&self, i: usize) -> String {
        let p: &Point = &self.series[0].points[i];
        p.label.clone().unwrap_or_else(|| format!("{}", p.x))
    }

    /// The values the y axis can show: above 0 on a log axis, 0 to 1 for a fraction.
    pub fn possible(&self, y: f64) -> bool {
        match self.y_axis {
            YAxis::Log => y > 0.0,
            YAxis::Fraction => (0.0..=1.0).contains(&y),
        }
    }

    /// The points not drawn, as `(series, point)` indices: values outside [`Self::possible`]
    /// (on a fraction axis each is marked and named in the key instead).
    pub fn impossible(&self) -> Vec<(usize, usize)> {
        let points = self
            .series
            .iter()
            .enumerate()
            .flat_map(|(k, s)| s.points.iter().enumerate().map(move |(i, p)| (k, i, p.y)));
        points.filter(|p| p.2.is_finite() && !self.possible(p.2)).map(|p| (p.0, p.1)).collect()
    }

    /// The y axis' range: the drawn values grown to the ticks around them on a log axis, 0 to 1
    /// with a margin for a fraction.
    pub fn y_range(&self) -> Range<f64> {
        match self.y_axis {
            YAxis::Log => {
                let ys = self.series.iter().flat_map(|s| s.points.iter().map(|p| p.y));
                to_ticks(log_range(ys.filter(|&y| self.possible(y))))
            }
            YAxis::Fraction => -0.05..1.05,
        }
    }

    /// The key: each series, then each value not drawn.
    fn key(&self) -> Vec<(Sample, String)> {
        let mut key: Vec<(Sample, String)> = self
            .series
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let c = COLOURS[k % COLOURS.len()];
                (if k == 0 { Sample::Line(c) } else { Sample::Dashed(c) }, s.name.clone())
            })
            .collect();
        for (k, i) in self.impossible() {
            let (s, y) = (&self.series[k], self.series[k].points[i].y);
            let why = if y < 0.0 { "below zero" } else { "above one" };
            key.push((
                Sample::Cross(MARK),
                format!("{} at {}: {y:.2}, n/a: {why} (noise), not drawn", s.name, self.category(i)),
            ));
        }
        key
    }
}

impl Chart for SweepChart {
    fn stem(&self) -> String {
        self.stem.into()
    }

    fn size(&self) -> (u32, u32) {
        let key: Vec<String> = self.key().into_iter().map(|e| e.1).collect();
        (900, 480 + key::height(&key, 900) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let area = key::titled(root, &self.title, &self.key())?;
        let n = self.series[0].points.len();
        let x = -0.5..(n as f64 - 0.5);
        let y = self.y_range();
        let mut builder = ChartBuilder::on(&area);
        builder.margin(14).margin_top(4).x_label_area_size(46).y_label_area_size(70);
        match self.y_axis {
            YAxis::Log => {
                let chart = builder.build_cartesian_2d(x, y.clone().log_scale().with_key_points(log_ticks(&y)))?;
                self.draw_on(chart, |v| log_label(*v), y)
            }
            YAxis::Fraction => {
                let chart = builder.build_cartesian_2d(x, y.clone())?;
                self.draw_on(chart, |v| linear_label(*v), y)
            }
        }
    }
}

impl SweepChart {
    /// Draws the mesh, every series (its possible points), the marks and the crosses of the
    /// values not drawn on `chart`, whatever its y axis (`y` its range).
    fn draw_on<'a, DB, Y>(
        &self,
        mut chart: ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
        y_label: impl Fn(&f64) -> String,
        y: Range<f64>,
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
        // Measured first, the models on top of it, dashed with open markers larger than the
        // measured dots: where a model predicts the measurement exactly, both stay visible.
        for (k, s) in self.series.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            // Models are drawn at the measured sweep's positions (same order and length).
            let xy: Vec<(f64, f64)> =
                s.points.iter().enumerate().filter(|(_, p)| self.possible(p.y)).map(|(i, p)| (i as f64, p.y)).collect();
            if k == 0 {
                chart.draw_series(LineSeries::new(xy.clone(), colour.stroke_width(3)))?;
                chart.draw_series(xy.iter().map(|&c| Circle::new(c, 5, colour.filled())))?;
            } else {
                chart.draw_series(DashedLineSeries::new(xy.clone(), 7, 5, colour.stroke_width(2)))?;
                if n <= MARKED_POINTS {
                    chart.draw_series(xy.iter().map(|&c| Circle::new(c, 6 + 3 * k as i32, colour.stroke_width(2))))?;
                }
            }
        }
        for m in &self.marks {
            chart.draw_series(DashedLineSeries::new([(m.at, y.start), (m.at, y.end)], 6, 4, MARK.stroke_width(2)))?;
            let px = chart.backend_coord(&(m.at, y.end)).0;
            let right = chart.plotting_area().get_pixel_range().0.end;
            // Right of the line where it fits, else left of it.
            let fits = px + 8 + key::text_width(&m.label, 14) < right;
            let (hpos, dx) = if fits { (HPos::Left, 6) } else { (HPos::Right, -6) };
            let font = (FONT, 14).into_font().color(&MARK).pos(Pos::new(hpos, VPos::Top));
            let text = Text::new(m.label.clone(), (dx, 6), font);
            chart.draw_series([EmptyElement::at((m.at, y.end)) + text])?;
        }
        // A value that cannot be (a fraction below 0) is crossed out at the axis' edge.
        for (k, i) in self.impossible() {
            let at = if self.series[k].points[i].y < 0.0 { y.start } else { y.end };
            chart.draw_series([Cross::new((i as f64, at), 7, MARK.stroke_width(3))])?;
        }
        Ok(())
    }
}
