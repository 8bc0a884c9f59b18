//! Horizontal bars against reference lines: the bandwidth kernels against memcpy, the SGEMM
//! ladder against cuBLAS at each size.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::key::{self, Sample};
use super::{
    AXIS_LIMIT, Chart, DrawResult, FONT, MARK, MEASURED, MODEL_A, MODEL_B, TENSOR, linear_label, section, series,
};
use crate::lab::{Level, Rate, Section};
use crate::series::names;

/// One bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Its name: what makes it different from every other bar.
    pub label: String,
    /// Its value, in the chart's unit.
    pub value: f64,
    /// Its class, an index into [`BarChart::classes`] (its colour and key entry).
    pub class: usize,
}

/// A reference line over some of the bars.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// The key entry it is listed under, shared by lines drawn alike ("cuBLAS FP32").
    pub key: String,
    /// What tells it from the other lines of its key entry ("4096³"; empty for a lone line).
    pub label: String,
    /// Its value, in the chart's unit.
    pub value: f64,
    /// The bars, top first, that it spans.
    pub rows: Range<usize>,
}

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
    /// What each class of bars is, for the key (none: one class, no key entry).
    pub classes: Vec<String>,
    /// Reference lines (e.g. memcpy, cuBLAS).
    pub references: Vec<Reference>,
    /// Why a bar passes a reference line, when one can (drawn in the key).
    pub note: Option<String>,
}

/// The colours of the bar classes, in order.
const CLASS_COLOURS: [RGBColor; 3] = [MEASURED, MODEL_A, MODEL_B];
/// The colours of the reference keys, in order.
const REFERENCE_COLOURS: [RGBColor; 2] = [MARK, TENSOR];
/// Height of one bar's row, pixels.
const ROW: u32 = 26;
/// Bar label and value text size, pixels.
const TEXT: i32 = 14;

/// The kernels whose hot buffer is re-read amid a stream (the L2 lesson's persisting sweep):
/// their re-reads of a buffer that fits in L2 hit there, so they pass the DRAM ceiling.
const HOT_REREADS: &str = "hot_stream_read";

/// Names that tell `rows` (kernel, size, demo) apart: the kernel alone where it is unique,
/// with its size where its sizes differ, with its demo where they do not, with both where
/// neither alone does.
pub fn unique_names(rows: &[(&str, &str, &str)]) -> Vec<String> {
    rows.iter()
        .map(|&(kernel, size, demo)| {
            let same: Vec<&(&str, &str, &str)> = rows.iter().filter(|r| r.0 == kernel).collect();
            let sizes_differ = same.iter().filter(|r| r.1 == size).count() == 1;
            let demos_differ = same.iter().filter(|r| r.2 == demo).count() == 1;
            match (same.len(), sizes_differ, demos_differ) {
                (1, _, _) => kernel.to_string(),
                (_, true, _) => format!("{kernel} {size}"),
                (_, false, true) => format!("{kernel} ({demo} demo)"),
                _ => format!("{kernel} {size} ({demo} demo)"),
            }
        })
        .collect()
}

impl BarChart {
    /// Every kernel that streams global memory (GB/s) against the memcpy ceiling, the hot
    /// re-read kernels in a class of their own (their re-reads hit L2); `None` when no such
    /// kernel ran.
    pub fn bandwidth(sections: &[Section], memcpy_gbs: Option<f64>) -> Option<Self> {
        let rows: Vec<(&str, &str, &str, f64)> = sections
            .iter()
            .flat_map(|s| s.kernels.iter().map(move |k| (s, k)))
            // Global-memory kernels only: an L2-resident read has its own chart.
            .filter(|(_, k)| k.work.level == Level::Global)
            .filter_map(|(s, k)| match k.rate {
                Rate::Gbs(g) => Some((k.kernel.as_str(), k.size.as_str(), s.name.as_str(), g)),
                _ => None,
            })
            .collect();
        if rows.is_empty() {
            return None;
        }
        let names = unique_names(&rows.iter().map(|r| (r.0, r.1, r.2)).collect::<Vec<_>>());
        let bars: Vec<Bar> = rows
            .iter()
            .zip(names)
            .map(|(r, label)| Bar { label, value: r.3, class: usize::from(r.0.starts_with(HOT_REREADS)) })
            .collect();
        // A kernel that only reads (read_cg) can pass memcpy: a copy also writes, and DRAM
        // loses time turning the bus around between reads and writes.
        let note = memcpy_gbs.filter(|&m| bars.iter().any(|b| b.class == 0 && b.value > m)).map(|_| {
            "A DRAM bar past memcpy: a kernel that only reads; memcpy reads and writes, and DRAM turns the bus around between them.".to_string()
        });
        let mut classes = vec!["DRAM: every byte from HBM".to_string()];
        if bars.iter().any(|b| b.class == 1) {
            classes.push(
                "L2-resident: a hot buffer re-read amid a stream; the re-reads of a buffer that fits in L2 hit there"
                    .into(),
            );
        }
        let n = bars.len();
        Some(BarChart {
            stem: "bandwidth",
            title: "Global-memory kernels (AI ~ 0, off the roofline) against the memcpy ceiling".into(),
            unit: "GB/s (bytes read + written)",
            bars,
            classes,
            references: memcpy_gbs
                .map(|g| Reference { key: "memcpy D2D".into(), label: String::new(), value: g, rows: 0..n })
                .into_iter()
                .collect(),
            note,
        })
    }

    /// The SGEMM ladder: the `sgemm` section's kernels (TFLOP/s), grouped by size (the n-th
    /// row of a rung is the n-th size, the size the n-th [`names::REFERENCE`] point names),
    /// each group under its own references (cuBLAS at that size); the tensor-core rungs (the
    /// kernels named in `tensor`) in a class of their own. `None` when the run has no such
    /// section.
    pub fn sgemm_ladder(sections: &[Section], tensor: &[&str]) -> Option<Self> {
        let s = section(sections, "sgemm")?;
        let refs: Vec<(String, f64)> = series(s, names::REFERENCE)
            .map(|r| r.points.iter().map(|p| (p.label.clone().unwrap_or_default(), p.y)).collect())
            .unwrap_or_default();
        // "cuBLAS 4096x4096x4096" and "cuBLAS TF32 4096x4096x4096" name one size, their last
        // word; the n-th size is the n-th one named, "4096x4096x4096" -> "4096³".
        let split = |label: &str| {
            label.rsplit_once(' ').map_or((label.to_string(), String::new()), |(k, s)| (k.to_string(), s.to_string()))
        };
        let mut named: Vec<String> = Vec::new();
        for (label, _) in &refs {
            let size = split(label).1;
            if !named.contains(&size) {
                named.push(size);
            }
        }
        let size = |n: usize| named.get(n).map_or(format!("size {}", n + 1), |s| crate::cli::cubed(s));
        let mut rungs: Vec<(&str, Vec<f64>)> = Vec::new();
        for k in &s.kernels {
            if let Rate::Tflops(t) = k.rate {
                match rungs.iter_mut().find(|(n, _)| *n == k.kernel) {
                    Some((_, rates)) => rates.push(t),
                    None => rungs.push((k.kernel.as_str(), vec![t])),
                }
            }
        }
        if rungs.is_empty() {
            return None;
        }
        let sizes = rungs.iter().map(|r| r.1.len()).max().unwrap_or(1);
        let class = |name: &str| usize::from(tensor.contains(&name));
        let mut bars = Vec::new();
        let mut groups = Vec::new();
        for n in 0..sizes {
            let start = bars.len();
            for (name, rates) in &rungs {
                if let Some(&t) = rates.get(n) {
                    let label = if sizes > 1 { format!("{name} {}", size(n)) } else { name.to_string() };
                    bars.push(Bar { label, value: t, class: class(name) });
                }
            }
            groups.push(start..bars.len());
        }
        let references = refs
            .iter()
            .map(|(label, v)| {
                let (what, at) = split(label);
                let n = named.iter().position(|s| *s == at).unwrap_or(0);
                let key = if what == "cuBLAS" { "cuBLAS FP32".to_string() } else { what };
                let rows = if sizes > 1 { groups.get(n).cloned().unwrap_or(0..0) } else { 0..bars.len() };
                Reference { key, label: if at.is_empty() { at } else { crate::cli::cubed(&at) }, value: *v, rows }
            })
            .collect();
        let mut classes = vec!["FP32 pipes".to_string()];
        if bars.iter().any(|b| b.class == 1) {
            classes.push("TF32 tensor cores (mma.sync)".into());
        }
        Some(BarChart {
            stem: "sgemm_ladder",
            title: s.title.clone(),
            unit: "TFLOP/s",
            bars,
            classes,
            references,
            note: None,
        })
    }

    /// The key: each class of bars, each reference key with its lines' values, the note.
    fn key(&self) -> Vec<(Sample, String)> {
        let mut key: Vec<(Sample, String)> = match self.classes.len() {
            0 | 1 => Vec::new(),
            _ => self.classes.iter().enumerate().map(|(i, c)| (Sample::Block(class_colour(i)), c.clone())).collect(),
        };
        for (i, k) in self.reference_keys().iter().enumerate() {
            let lines: Vec<String> = self
                .references
                .iter()
                .filter(|r| r.key == *k)
                .map(
                    |r| if r.label.is_empty() { compact(r.value) } else { format!("{} {}", r.label, compact(r.value)) },
                )
                .collect();
            let over = if self.references.iter().any(|r| r.key == *k && r.rows.len() < self.bars.len()) {
                " (over the bars of its size)"
            } else {
                ""
            };
            key.push((
                Sample::Dashed(REFERENCE_COLOURS[i % REFERENCE_COLOURS.len()]),
                format!("{k}{over}: {}", lines.join(", ")),
            ));
        }
        key.extend(self.note.iter().map(|n| (Sample::Note, n.clone())));
        key
    }

    /// The distinct reference keys, in order.
    fn reference_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for r in &self.references {
            if !keys.contains(&r.key) {
                keys.push(r.key.clone());
            }
        }
        keys
    }

    /// The x axis' end: past every bar and line, with room for the longest bar's value label.
    pub fn x_end(&self) -> f64 {
        let max = self.bars.iter().map(|b| b.value).chain(self.references.iter().map(|r| r.value)).fold(0.0, f64::max);
        max.clamp(1e-9, AXIS_LIMIT) * 1.15
    }

    /// Where bar `i`'s value label starts, in axis units, for labels `width` axis units wide:
    /// after the bar, moved past any reference line of its row it would cross.
    pub fn value_at(&self, i: usize, width: f64) -> f64 {
        let pad = 0.006 * self.x_end();
        let mut lines: Vec<f64> = self.references.iter().filter(|r| r.rows.contains(&i)).map(|r| r.value).collect();
        lines.sort_by(f64::total_cmp);
        let mut x = self.bars[i].value.max(0.0) + pad;
        for l in lines {
            if l >= x - pad && l <= x + width + pad {
                x = l + pad;
            }
        }
        x
    }
}

fn class_colour(i: usize) -> RGBColor {
    CLASS_COLOURS[i % CLASS_COLOURS.len()]
}

impl Chart for BarChart {
    fn stem(&self) -> String {
        self.stem.into()
    }

    fn size(&self) -> (u32, u32) {
        let key: Vec<String> = self.key().into_iter().map(|e| e.1).collect();
        (1000, 70 + ROW * self.bars.len() as u32 + key::height(&key, 1000) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let area = key::titled(root, &self.title, &self.key())?;
        let n = self.bars.len() as f64;
        let end = self.x_end();
        let names = self.bars.iter().map(|b| key::text_width(&b.label, TEXT)).max().unwrap_or(0);
        let mut chart = ChartBuilder::on(&area)
            .margin(14)
            .margin_top(4)
            .x_label_area_size(40)
            .y_label_area_size(names as u32 + 12)
            .build_cartesian_2d(0.0..end, 0.0..n)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc(self.unit)
            .x_label_formatter(&|v| linear_label(*v))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()?;
        // A value past the axis is drawn at its end: plotters overflows an i32 mapping a point
        // far outside the range. Labels keep the true value.
        let at = |v: f64| v.clamp(0.0, end);
        // Top bar first: bar i spans y n-1-i .. n-i.
        let top = |i: usize| n - i as f64;
        for (j, k) in self.reference_keys().iter().enumerate() {
            let colour = REFERENCE_COLOURS[j % REFERENCE_COLOURS.len()];
            for r in self.references.iter().filter(|r| r.key == *k && !r.rows.is_empty()) {
                let line = [(at(r.value), top(r.rows.end - 1) - 1.0), (at(r.value), top(r.rows.start))];
                chart.draw_series(DashedLineSeries::new(line, 8, 5, colour.stroke_width(2)))?;
            }
        }
        let px_per_unit = f64::from(chart.plotting_area().dim_in_pixel().0) / end;
        for (i, bar) in self.bars.iter().enumerate() {
            let y = top(i) - 1.0;
            let colour = class_colour(bar.class);
            chart.draw_series([Rectangle::new(
                [(0.0, y + 0.15), (at(bar.value), y + 0.85)],
                colour.mix(0.8).filled(),
            )])?;
            let name = (FONT, TEXT).into_font().color(&BLACK).pos(Pos::new(HPos::Right, VPos::Center));
            chart.draw_series([EmptyElement::at((0.0, y + 0.5)) + Text::new(bar.label.clone(), (-6, 0), name)])?;
            let value = compact(bar.value);
            let x = self.value_at(i, f64::from(key::text_width(&value, TEXT)) / px_per_unit);
            let font = (FONT, TEXT).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
            chart.draw_series([EmptyElement::at((at(x), y + 0.5)) + Text::new(value, (0, 0), font)])?;
        }
        Ok(())
    }
}

pub(crate) fn compact(v: f64) -> String {
    if v >= 100.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}
