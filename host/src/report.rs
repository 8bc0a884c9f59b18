//! Printing: the device report and each demo's section as Markdown tables (comfy-table), so
//! the output pastes into a README as it is.

use comfy_table::{Table, presets::ASCII_MARKDOWN};

use crate::demos::{KernelRow, Rate, Section};
use crate::gpu::device::DeviceInfo;

/// A Markdown table (comfy-table's ASCII_MARKDOWN preset) of `header` and `rows`.
pub fn table(header: impl IntoIterator<Item = String>, rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut t = Table::new();
    t.load_preset(ASCII_MARKDOWN).set_header(header);
    for row in rows {
        t.add_row(row);
    }
    t.to_string()
}

/// Terminal width the commands' prose is wrapped to.
pub const COLUMNS: usize = 100;

/// `text` broken at spaces into lines of at most [`COLUMNS`] characters, lines after the first
/// indented by two spaces (a word longer than a line stays whole).
pub fn wrap(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.trim().is_empty() && line.len() + 1 + word.len() > COLUMNS {
            out += line.trim_end();
            out.push('\n');
            line = "  ".into();
        } else if !line.trim().is_empty() {
            line.push(' ');
        }
        line += word;
    }
    out + line.trim_end()
}

fn kib(bytes: u32) -> String {
    format!("{:.0} KiB", bytes as f64 / 1024.0)
}

/// The device report: what the driver says about one GPU.
pub fn device(ordinal: u32, info: &DeviceInfo, ptx_arch: &str) -> String {
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
    table(["figure".to_string(), "value".to_string()], rows.into_iter().map(|(k, v)| vec![k.to_string(), v]))
}

fn rate(row: &KernelRow, memcpy_gbs: Option<f64>) -> (String, String) {
    match row.rate {
        Rate::Gbs(g) => (format!("{g:.0} GB/s"), memcpy_gbs.map_or("-".into(), |m| format!("{:.0}%", 100.0 * g / m))),
        Rate::SharedGbs(g) => (format!("{g:.0} GB/s shared"), "-".into()),
        Rate::Tflops(t) => (format!("{t:.2} TFLOP/s"), "-".into()),
    }
}

/// The kernel table of a section: lesson, model, driver figures, measurement, check.
pub fn kernels(rows: &[KernelRow], memcpy_gbs: Option<f64>) -> String {
    let header = [
        "kernel",
        "lesson",
        "model predicts",
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
    ];
    let body = rows.iter().map(|r| {
        let (rate, share) = rate(r, memcpy_gbs);
        vec![
            r.kernel.to_string(),
            r.lesson.to_string(),
            r.prediction.clone(),
            r.attrs.regs.to_string(),
            (r.attrs.static_smem + r.shape.smem_bytes).to_string(),
            r.attrs.local_bytes.to_string(),
            r.occupancy.active_blocks.to_string(),
            match r.model_blocks {
                Some(b) if b == r.occupancy.active_blocks => format!("{b} (agrees)"),
                Some(b) => format!("{b} (DISAGREES)"),
                None => "no data".into(),
            },
            format!("{:.0}%", 100.0 * r.occupancy.occupancy),
            format!("{:.3}", r.timing.median_ms),
            format!("{:.3}", r.timing.min_ms),
            rate,
            share,
            r.check.summary(&r.check_kind),
        ]
    });
    table(header.map(String::from), body)
}

/// One demo's section: title, lesson, tables, notes.
pub fn section(s: &Section, memcpy_gbs: Option<f64>) -> String {
    let mut out = format!("## {}\n\n{}\n\n", s.title, s.lesson);
    if !s.kernels.is_empty() {
        out += &kernels(&s.kernels, memcpy_gbs);
        out += "\n\n";
    }
    if let Some((header, rows)) = &s.sweep {
        out += &table(header.clone(), rows.clone());
        out += "\n\n";
    }
    for note in &s.notes {
        out += &format!("- {note}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_lines_within_the_terminal() {
        let text = "word ".repeat(70);
        let wrapped = wrap(&text);
        assert!(wrapped.lines().all(|l| l.len() <= COLUMNS), "{wrapped}");
        assert_eq!(wrapped.split_whitespace().count(), 70);
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("  word")));
        assert_eq!(wrap("short line"), "short line");
    }

    #[test]
    fn tables_are_markdown_with_every_cell() {
        let t = table(["a".to_string(), "b".to_string()], [vec!["1".to_string(), "22".to_string()]]);
        let lines: Vec<_> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[0].starts_with('|') && lines[0].contains(" a ") && lines[0].contains(" b "));
        assert!(lines[1].starts_with("|-"));
        assert!(lines[2].contains(" 1 ") && lines[2].contains(" 22 "));
    }
}
