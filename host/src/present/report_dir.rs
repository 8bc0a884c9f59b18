//! A run on disk: the JSON record `run-demos --json` writes (`report` reads it back through
//! [`crate::present::record_check`]), and the report folder `--report DIR` writes: `DIR/report.md` with
//! the lessons' and the summaries' charts ([`crate::charts`]) as SVG and PNG next to it.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::gpu::device::DeviceInfo;
use crate::lab::{Figure, Run, Section};
use crate::present::table::Layout;
use crate::registry;
use crate::{present::output, present::report};

/// Everything one `run-demos` measured, as written by `--json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// CUDA device ordinal.
    pub ordinal: u32,
    /// The device's figures.
    pub device: DeviceInfo,
    /// PTX target loaded, e.g. `"sm_90"`.
    pub ptx_arch: String,
    /// Device-to-device memcpy bandwidth, GB/s, when the memcpy demo ran.
    pub memcpy_gbs: Option<f64>,
    /// The SM clock under a full FP32 load, GHz (the median block of `sm_clock_under_load`),
    /// when measured and checked; absent from runs recorded before it was measured, whose
    /// roofline keeps the driver's clock.
    #[serde(default)]
    pub sm_clock_ghz: Option<f64>,
    /// One section per demo, in run order.
    pub sections: Vec<Section>,
    /// Wall time per demo and phase (absent from runs recorded before it was kept).
    #[serde(default)]
    pub phases: Vec<crate::phases::Phase>,
}

impl RunRecord {
    /// Writes the record as pretty JSON, whole or not at all ([`output::write`]).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        output::write(path, text + "\n")
    }

    /// Gives every kernel row recorded before rows carried their `memlab occupancy` command
    /// that command, from the row's figures and the device's compute capability.
    pub fn fill_occupancy_commands(&mut self) {
        let cc = self.device.cc;
        for row in self.sections.iter_mut().flat_map(|s| &mut s.kernels).filter(|r| r.occupancy_command.is_empty()) {
            row.occupancy_command = crate::lab::occupancy_command(cc, &row.attrs, &row.shape);
        }
    }

    /// Rebuilds the roofline section (derived from the other sections' kernels) with this
    /// version's rules and the recorded SM clock, when the run has one; the clock
    /// measurement's check is kept.
    pub fn rebuild_roofline(&mut self) {
        let Some(i) = self.sections.iter().position(|s| s.name == "roofline") else { return };
        let fresh = crate::summary::roofline::build(&self.device, self.memcpy_gbs, self.sm_clock_ghz, &self.sections);
        if let Some(mut fresh) = fresh {
            fresh.checks = std::mem::take(&mut self.sections[i].checks);
            self.sections[i] = fresh;
        }
    }

    /// FP32 peak, TFLOP/s, from the SM count, the FP32 lanes of the architecture and the SM
    /// clock measured under load (the driver's SM clock for runs recorded without it); `None`
    /// for an architecture the roofline model has no lanes for.
    pub fn peak_tflops(&self) -> Option<f64> {
        self.run().peak_tflops()
    }

    /// The run as its figures are drawn from it.
    pub fn run(&self) -> Run<'_> {
        Run {
            sections: &self.sections,
            device: &self.device,
            memcpy_gbs: self.memcpy_gbs,
            sm_clock_ghz: self.sm_clock_ghz,
        }
    }
}

/// One chart's place in the report: the image (SVG) and what to read in it.
struct Drawn {
    file: PathBuf,
    caption: String,
}

/// Writes `DIR/report.md` and the charts of every lesson and summary (in the registry's order,
/// [`registry::figures`]); returns every file written.
///
/// A chart whose data the run lacks (no coalescing section, no SGEMM ladder yet) is skipped
/// with a note in the report.
///
/// # Errors
/// The folder or a file cannot be written.
pub fn write(dir: &Path, record: &RunRecord) -> Result<Vec<PathBuf>> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let (mut drawn, mut missing) = (Vec::new(), Vec::new());
    for figure in registry::figures(&record.run()) {
        match figure {
            Figure::Drawn(chart, caption) => {
                let [svg, _png] = output::save_chart(chart.as_ref(), dir)?;
                drawn.push(Drawn { file: svg, caption });
            }
            Figure::Missing(what) => missing.push(what),
        }
    }
    let md = markdown(record, &drawn, &missing);
    let path = dir.join("report.md");
    output::write(&path, md)?;
    let mut written = vec![path];
    for f in &drawn {
        written.push(f.file.clone());
        written.push(f.file.with_extension("png"));
    }
    Ok(written)
}

fn markdown(record: &RunRecord, figures: &[Drawn], missing: &[String]) -> String {
    let mut md = format!(
        "# memlab report: {}\n\n{}\n\n## Charts\n\n",
        record.device.name,
        report::device_in(Layout::Markdown, record.ordinal, &record.device, &record.ptx_arch)
    );
    for f in figures {
        let name = f.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        md += &format!("![{name}]({name})\n\n{}\n\n", f.caption);
    }
    if !missing.is_empty() {
        md += "Not drawn, for lack of data:\n\n";
        for m in missing {
            md += &format!("- {m}\n");
        }
        md += "\n";
    }
    md += "## Tables\n\n";
    for s in &record.sections {
        md += &report::section_in(Layout::Markdown, s, record.memcpy_gbs);
        md += "\n";
    }
    md
}
