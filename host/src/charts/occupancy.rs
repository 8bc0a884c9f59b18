//! The occupancy calculator's three graphs for one kernel.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{Chart, DrawResult, FONT, MARK, MEASURED};
use crate::lab::{Figure, KernelRow, Run, Section};
use crate::model::occupancy::{ArchLimits, KernelResources, Mode, occupancy};

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

    /// The report's figure of `kernel`'s three graphs in `run`, or the note that the run did
    /// not launch it.
    pub fn figure(run: &Run, kernel: &str) -> Figure {
        let (major, minor) = run.device.cc;
        let caption = format!(
            "The occupancy calculator's three graphs for `{kernel}` (hardware rules for cc {major}.{minor}); the red dot is the launch measured here."
        );
        let missing = format!("occupancy graphs of `{kernel}` (not in this run)");
        Figure::or_missing(OccupancyChart::for_kernel(run.sections, run.device.cc, kernel), caption, &missing)
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
