//! The peer lesson on paper: its Markdown (the same text `memlab peer` prints) and, with
//! `--report DIR`, `DIR/peer.md` with two charts beside it as SVG and PNG: the N x N
//! copy-engine bandwidth matrix, and the stride sweep over the link next to local HBM's.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::charts::{Chart, DrawResult, FONT, SweepChart, YAxis};
use crate::demos::peer::PeerRecord;
use crate::demos::peer::matrix::PairMatrix;
use crate::present::{output, report};
use crate::probes::strided::sector_model;
use crate::series::{Series, names};

/// The N x N matrix as a heat map: one cell per ordered pair, darker for faster, the value
/// written in each cell.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixChart {
    /// Title line.
    pub title: String,
    /// Device labels, rows and columns.
    pub labels: Vec<String>,
    /// The values, GB/s.
    pub values: PairMatrix<f64>,
}

impl Chart for MatrixChart {
    fn stem(&self) -> String {
        "peer_matrix".into()
    }

    fn size(&self) -> (u32, u32) {
        (760, 640)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let area = root.titled(&self.title, (FONT, 22))?;
        let (w, h) = area.dim_in_pixel();
        let n = self.values.n.max(1) as i32;
        let (left, top) = (130, 60);
        let cell = ((w as i32 - left - 30) / n).min((h as i32 - top - 30) / n);
        let max = (0..self.values.n)
            .flat_map(|i| (0..self.values.n).filter_map(move |j| self.values.get(i, j).copied()))
            .fold(0.0f64, f64::max);
        for (k, label) in self.labels.iter().enumerate() {
            let k = k as i32;
            area.draw(&Text::new(format!("to {label}"), (left + k * cell + 10, top - 30), (FONT, 17)))?;
            area.draw(&Text::new(format!("from {label}"), (10, top + k * cell + cell / 2 - 8), (FONT, 17)))?;
        }
        for i in 0..self.values.n {
            for j in 0..self.values.n {
                let (x, y) = (left + j as i32 * cell, top + i as i32 * cell);
                let (fill, text) = match self.values.get(i, j) {
                    Some(&v) => {
                        let t = if max > 0.0 { (v / max).clamp(0.0, 1.0) } else { 0.0 };
                        // Light blue to dark blue as the value rises.
                        let shade = |lo: f64, hi: f64| (lo + (hi - lo) * t) as u8;
                        (RGBColor(shade(222.0, 16.0), shade(235.0, 63.0), shade(247.0, 140.0)), format!("{v:.0} GB/s"))
                    }
                    None => (RGBColor(240, 240, 240), "-".to_string()),
                };
                area.draw(&Rectangle::new([(x, y), (x + cell - 4, y + cell - 4)], fill.filled()))?;
                let ink = if fill.0 < 120 { WHITE } else { BLACK };
                let style = TextStyle::from((FONT, 20).into_font()).color(&ink);
                area.draw(&Text::new(text, (x + cell / 2 - 45, y + cell / 2 - 10), style))?;
            }
        }
        Ok(())
    }
}

/// The stride sweep of device 0 over device 1's memory next to device 0's own HBM, useful
/// GB/s on a log axis, with the sector model scaled to the link's stride-1 rate.
pub fn coalescing_chart(record: &PeerRecord) -> Option<SweepChart> {
    let over_link = record.curves.iter().find(|c| c.accessor != c.owner)?;
    let local = record.curves.iter().find(|c| c.accessor == over_link.accessor && c.owner == c.accessor)?;
    let (x, y) = ("stride (4-byte elements)", "useful GB/s");
    let link_label =
        format!("{} reading {}'s HBM over the link", record.labels[over_link.accessor], record.labels[over_link.owner]);
    let first = over_link.points.first()?.1;
    let points = |c: &crate::demos::peer::Curve| c.points.iter().map(|&(s, g)| (s as f64, g)).collect::<Vec<_>>();
    let series = vec![
        Series::new(&link_label, x, y, points(over_link)),
        Series::new(&format!("{} reading its own HBM", record.labels[local.accessor]), x, y, points(local)),
        Series::new(
            &format!("{} x link stride 1", names::SECTOR_MODEL),
            x,
            y,
            over_link.points.iter().map(|&(s, _)| (s as f64, first * sector_model(s))),
        ),
    ];
    Some(SweepChart {
        stem: "peer_coalescing",
        title: "Strided reads over the link and from local HBM".into(),
        x_desc: x.into(),
        series,
        y_axis: YAxis::Log,
        marks: Vec::new(),
    })
}

/// The lesson as Markdown: topology, then every section.
pub fn markdown(record: &PeerRecord) -> String {
    let devices: Vec<String> = record.labels.iter().zip(&record.names).map(|(l, n)| format!("{l} ({n})")).collect();
    let (header, rows) = record.topology.table();
    let mut out = format!(
        "# memlab peer: {}\n\n## Topology\n\n{}\n\n{}\n\n",
        devices.join(", "),
        report::table(header, rows),
        record.topology.bus_ids_text()
    );
    for s in &record.sections {
        out += &format!("{}\n", report::section(s, None));
    }
    out += if record.passed() { "All results verified.\n" } else { "SOME RESULTS ARE WRONG: see the checks.\n" };
    out
}

/// Writes `DIR/peer.md` and its charts; returns every file written.
///
/// # Errors
/// The folder or a file cannot be written.
pub fn write(dir: &Path, record: &PeerRecord) -> Result<Vec<PathBuf>> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let matrix = MatrixChart {
        title: "Copy-engine bandwidth, one way (diagonal: within one GPU)".into(),
        labels: record.labels.clone(),
        values: record.copy_gbs.clone(),
    };
    let mut written: Vec<PathBuf> = output::save_chart(&matrix, dir)?.into();
    let mut figures = vec![format!("![N x N copy bandwidth](peer_matrix.svg)\n\n{}", matrix.title)];
    if let Some(chart) = coalescing_chart(record) {
        written.extend(output::save_chart(&chart, dir)?);
        figures.push("![strided reads over the link](peer_coalescing.svg)\n\nUseful bandwidth of `strided_read` against stride (log scale): over the link, from local HBM, and the 32-byte sector model scaled to the link's stride 1.".into());
    }
    let md = format!("{}\n## Charts\n\n{}\n", markdown(record), figures.join("\n\n"));
    let path = dir.join("peer.md");
    fs::write(&path, md).with_context(|| format!("cannot write {}", path.display()))?;
    written.insert(0, path);
    Ok(written)
}
