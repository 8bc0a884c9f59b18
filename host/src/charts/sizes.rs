//! The transpose sweep over matrix sizes, as a share of memcpy at each size.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{AXIS_LIMIT, Chart, DrawResult, FONT, MARK, MEASURED, MODEL_A, MODEL_B, MODEL_C, section};
use crate::lab::Section;
use crate::series::{Series, names};

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
