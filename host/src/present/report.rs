//! Printing: the device report and each demo's section, as full Markdown tables (the report
//! folder, `--format markdown`) or fitted to the terminal ([`crate::present::table`]).

use crate::gpu::device::DeviceInfo;
use crate::lab::{KernelRow, Rate, Section};
use crate::present::table::{self, Layout};

/// A table of `header` and `rows` in this process's layout ([`Layout::current`]).
pub fn table(header: impl IntoIterator<Item = String>, rows: impl IntoIterator<Item = Vec<String>>) -> String {
    table::render(Layout::current(), header.into_iter().collect(), rows.into_iter().collect())
}

/// `text` wrapped to this process's layout ([`Layout::current`]), lines after the first
/// indented by two spaces: the commands' prose.
pub fn wrap(text: &str) -> String {
    table::wrap(Layout::current(), text, "", "  ")
}

fn kib(bytes: u32) -> String {
    format!("{:.0} KiB", bytes as f64 / 1024.0)
}

/// The device report in this process's layout: what the driver says about one GPU.
pub fn device(ordinal: u32, info: &DeviceInfo, ptx_arch: &str) -> String {
    device_in(Layout::current(), ordinal, info, ptx_arch)
}

/// The device report in `layout`.
pub fn device_in(layout: Layout, ordinal: u32, info: &DeviceInfo, ptx_arch: &str) -> String {
    let rows = [
        ("device", format!("{ordinal}: {}", info.name)),
        (
            "compute capability",
            format!("{}.{} (PTX loaded: {ptx_arch}, built by rustc {})", info.cc.0, info.cc.1, crate::ptx::NIGHTLY),
        ),
        ("SMs", info.sms.to_string()),
        ("registers per SM / per block", format!("{} / {}", info.regs_per_sm, info.regs_per_block)),
        (
            "shared memory per SM / per block (default, opt-in) / reserved per block",
            format!(
                "{} / {}, {} / {} B",
                kib(info.smem_per_sm),
                kib(info.smem_per_block),
                kib(info.smem_per_block_optin),
                info.smem_reserved_per_block
            ),
        ),
        (
            "max threads per SM / per block, blocks per SM",
            format!("{} / {}, {}", info.max_threads_per_sm, info.max_threads_per_block, info.max_blocks_per_sm),
        ),
        ("L2 cache", format!("{:.0} MiB", info.l2_bytes as f64 / (1 << 20) as f64)),
        ("SM clock (driver's peak)", format!("{:.0} MHz", info.sm_clock_khz as f64 / 1e3)),
        (
            "memory clock x bus width",
            format!(
                "{:.0} MHz x {} bit = {:.0} GB/s theoretical",
                info.mem_clock_khz as f64 / 1e3,
                info.bus_width_bits,
                info.theoretical_bandwidth_gbs()
            ),
        ),
        ("device memory", format!("{:.1} GiB", info.total_mem_bytes as f64 / (1u64 << 30) as f64)),
    ];
    let rows = rows.into_iter().map(|(k, v)| vec![k.to_string(), v]).collect();
    table::render(layout, vec!["figure".to_string(), "value".to_string()], rows)
}

fn rate(row: &KernelRow, memcpy_gbs: Option<f64>) -> (String, String) {
    match row.rate {
        Rate::Gbs(g) => (format!("{g:.0} GB/s"), memcpy_gbs.map_or("-".into(), |m| format!("{:.0}%", 100.0 * g / m))),
        Rate::SharedGbs(g) => (format!("{g:.0} GB/s shared"), "-".into()),
        Rate::Tflops(t) => (format!("{t:.2} TFLOP/s"), "-".into()),
    }
}

/// Block, registers, shared bytes and local bytes of a row: what its occupancy depends on.
fn resources(r: &KernelRow) -> [String; 4] {
    [
        block(r),
        r.attrs.regs.to_string(),
        (r.attrs.static_smem + r.shape.smem_bytes).to_string(),
        r.attrs.local_bytes.to_string(),
    ]
}

/// The block shape: `256` or `32x8`.
fn block(row: &KernelRow) -> String {
    match row.shape.block {
        (x, 1) => x.to_string(),
        (x, y) => format!("{x}x{y}"),
    }
}

/// The model's block count against the driver's: Markdown's "blocks/SM (model)" cell, or
/// the terminal's one blocks/SM cell (the driver's count, the model's only where it differs).
fn model_cell(row: &KernelRow, terminal: bool) -> String {
    let driver = row.occupancy.active_blocks;
    match (row.model_blocks, terminal) {
        (Some(b), false) if b == driver => format!("{b} (agrees)"),
        (Some(b), false) => format!("{b} (DISAGREES)"),
        (None, false) => "no data".into(),
        (Some(b), true) if b == driver => b.to_string(),
        (Some(b), true) => format!("{driver} (model {b}: DISAGREES)"),
        (None, true) => format!("{driver} (no model data)"),
    }
}

/// The kernel table of a section: lesson, model, driver figures, block, measurement, check,
/// and the `memlab occupancy` command that replays the row's block count.
///
/// Markdown has one full row per kernel; the terminal layout says each kernel's lesson once
/// above the table, merges the driver's and the model's block counts and lists the replay
/// commands below it.
pub fn kernels(layout: Layout, rows: &[KernelRow], memcpy_gbs: Option<f64>) -> String {
    if layout.is_terminal() {
        return kernels_terminal(layout, rows, memcpy_gbs);
    }
    let header = [
        "kernel",
        "lesson",
        "model predicts",
        "block",
        "regs",
        "shared B",
        "local B",
        "blocks/SM (driver)",
        "blocks/SM (model)",
        "occupancy",
        "median ms",
        "min ms",
        "rate",
        "% memcpy",
        "check",
        "occupancy replay",
    ];
    let body = rows.iter().map(|r| {
        let (rate, share) = rate(r, memcpy_gbs);
        let mut cells = vec![r.kernel.to_string(), r.lesson.to_string(), r.prediction.clone()];
        cells.extend(resources(r));
        cells.extend([
            r.occupancy.active_blocks.to_string(),
            model_cell(r, false),
            format!("{:.0}%", 100.0 * r.occupancy.occupancy),
            format!("{:.3}", r.timing.median_ms),
            format!("{:.3}", r.timing.min_ms),
            rate,
            share,
            r.check.summary(&r.check_kind),
            format!("`{}`", r.occupancy_command),
        ]);
        cells
    });
    table::render(layout, header.map(String::from).to_vec(), body.collect())
}

fn kernels_terminal(layout: Layout, rows: &[KernelRow], memcpy_gbs: Option<f64>) -> String {
    let mut out = String::new();
    let mut said: Vec<String> = Vec::new();
    for r in rows {
        let lesson = format!("{}: {}", r.kernel, r.lesson);
        if !said.contains(&lesson) {
            out += &table::bullet(layout, &lesson);
            out += "\n";
            said.push(lesson);
        }
    }
    out += "\n";
    let header = [
        "kernel",
        "block",
        "regs",
        "shared B",
        "local B",
        "blocks/SM (= model)",
        "occ.",
        "median ms",
        "rate",
        "% memcpy",
    ];
    let body = rows.iter().map(|r| {
        let (rate, share) = rate(r, memcpy_gbs);
        let mut cells = vec![r.kernel.to_string()];
        cells.extend(resources(r));
        cells.extend([
            model_cell(r, true),
            format!("{:.0}%", 100.0 * r.occupancy.occupancy),
            format!("{:.3}", r.timing.median_ms),
            rate,
            share,
        ]);
        cells
    });
    out += &table::render_condensed(layout, header.map(String::from).to_vec(), body.collect());
    let intro = "Row by row: what the model predicts, the check, and the command that replays the row's \
                 blocks/SM with the occupancy model:";
    out += &format!("\n\n{}\n", table::text(layout, intro));
    for r in rows {
        out += &table::bullet(layout, &format!("{}: {}", r.kernel, r.prediction));
        out += "\n";
        out += &table::wrap(layout, &r.check.summary(&r.check_kind), "  check: ", "    ");
        out += "\n";
        out += &table::wrap(layout, &r.occupancy_command, "  replay: ", "    ");
        out += "\n";
    }
    out.trim_end().to_string()
}

/// One demo's section in this process's layout.
pub fn section(s: &Section, memcpy_gbs: Option<f64>) -> String {
    section_in(Layout::current(), s, memcpy_gbs)
}

/// One demo's section in `layout`: title, lesson, tables, notes.
pub fn section_in(layout: Layout, s: &Section, memcpy_gbs: Option<f64>) -> String {
    let mut out =
        format!("{}\n\n{}\n\n", table::text(layout, &format!("## {}", s.title)), table::text(layout, &s.lesson));
    if !s.kernels.is_empty() {
        out += &kernels(layout, &s.kernels, memcpy_gbs);
        out += "\n\n";
    }
    if let Some((header, rows)) = &s.sweep {
        out += &table::render_condensed(layout, header.clone(), rows.clone());
        out += "\n\n";
    }
    for note in &s.notes {
        out += &table::bullet(layout, note);
        out += "\n";
    }
    out
}
