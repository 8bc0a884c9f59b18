//! Every line of the terminal layout fits its width: the `run-demos` report rendered from the
//! recorded H200 run (the same functions `run-demos` prints its sections with), and the
//! commands that need no GPU, run with `COLUMNS`.

use std::path::Path;

use memlab::present::report;
use memlab::present::report_dir::RunRecord;
use memlab::present::table::{Layout, fits};

fn recorded() -> RunRecord {
    RunRecord::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/report/run.json")).expect("the recorded run")
}

/// The `run-demos` output of the recorded run in `layout`.
fn run_demos_output(layout: Layout) -> String {
    let r = recorded();
    let mut out = report::device_in(layout, r.ordinal, &r.device, &r.ptx_arch) + "\n\n";
    for s in &r.sections {
        out += &report::section_in(layout, s, r.memcpy_gbs);
        out += "\n";
    }
    out
}

fn too_wide(text: &str, width: u16) -> Vec<&str> {
    text.lines().filter(|l| l.chars().count() > width as usize).collect()
}

#[test]
fn the_recorded_run_fits_100_120_and_160_columns() {
    for width in [100, 120, 160] {
        let out = run_demos_output(Layout::Terminal(width));
        assert!(fits(&out, width), "{width} columns, too wide: {:#?}", too_wide(&out, width));
        // Nothing is lost: every kernel row, its block and its replay command are there.
        for s in &recorded().sections {
            for k in &s.kernels {
                let cmd = &k.occupancy_command;
                assert!(cmd.starts_with("memlab occupancy --cc 9.0 --threads "), "{cmd}");
                let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
                assert!(flat.contains(&format!("replay: {cmd}")), "{width}: no replay of {}", k.kernel);
                assert!(flat.contains(&format!("- {}: {}", k.kernel, k.prediction)), "{width}: {}", k.kernel);
            }
        }
    }
}

#[test]
fn markdown_keeps_one_full_line_per_row() {
    let out = run_demos_output(Layout::Markdown);
    let header = out.lines().find(|l| l.starts_with("| kernel") && l.contains("| lesson")).expect("a kernel table");
    for col in ["model predicts", "block", "blocks/SM (driver)", "blocks/SM (model)", "min ms", "occupancy replay"] {
        assert!(header.contains(col), "{col} in {header}");
    }
    let row = out.lines().find(|l| l.starts_with("| transpose_padded ")).expect("a transpose_padded row");
    assert!(
        row.contains("| 32x8 ")
            && row.contains("`memlab occupancy --cc 9.0 --threads 256 --regs ")
            && row.contains(" --smem 4224B`"),
        "{row}"
    );
    assert!(!fits(&out, 160), "Markdown rows are not wrapped");
}

/// `memlab occupancy` as the binary parses it.
#[derive(clap::Parser)]
#[command(name = "memlab")]
enum Memlab {
    Occupancy(memlab::commands::occupancy::Args),
}

#[test]
fn every_rows_occupancy_command_parses_and_replays_its_block_count() {
    use clap::Parser;
    use memlab::model::occupancy::{ArchLimits, KernelResources, Mode, occupancy};
    let record = recorded();
    let rows: Vec<_> = record.sections.iter().flat_map(|s| &s.kernels).collect();
    assert!(rows.len() > 30, "every demo's rows");
    for row in rows {
        let words: Vec<&str> = row.occupancy_command.split_whitespace().collect();
        let Memlab::Occupancy(args) = Memlab::try_parse_from(&words).unwrap_or_else(|e| panic!("{words:?}: {e}"));
        let (major, minor) = args.cc.expect("the command names the device's cc");
        assert_eq!((args.threads, args.regs), (row.shape.threads_per_block(), Some(row.attrs.regs)));
        let res = KernelResources::new(args.threads, args.regs.unwrap())
            .with_dynamic_smem(args.smem as u32)
            .with_opt_in(args.opt_in);
        let o = occupancy(ArchLimits::for_cc(major, minor).unwrap(), &res, Mode::Hardware).unwrap();
        assert_eq!(Some(o.active_blocks), row.model_blocks, "{}", row.occupancy_command);
        assert_eq!(o.active_blocks, row.occupancy.active_blocks, "the driver's count too: {}", row.occupancy_command);
    }
}

#[test]
fn the_roofline_table_tells_repeated_kernels_apart_and_names_what_passes_a_roof() {
    let record = recorded();
    let roofline = record.sections.iter().find(|s| s.name == "roofline").expect("rebuilt on load");
    let (_, rows) = roofline.sweep.as_ref().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    // Measured by the matmul, sgemm and clusters demos at 4096³, and by the ladder at 8192³.
    assert!(names.contains(&"matmul_tiled_32 4096³ (x3)") && names.contains(&"matmul_tiled_32 8192³"), "{names:?}");
    // register_pressure under the occupancy demo's seven register caps: one row, counted.
    assert!(names.iter().any(|n| n.starts_with("register_pressure") && n.ends_with("(x7)")), "{names:?}");
    assert!(names.contains(&"sgemm_7_async_copy 8192³"), "{names:?}");
    // read_cg twice: L2-resident and from DRAM, told apart by the bound.
    let unique: std::collections::BTreeSet<(&str, &str)> =
        rows.iter().map(|r| (r[0].as_str(), r[2].as_str())).collect();
    assert_eq!(unique.len(), names.len(), "no two rows alike: {names:?}");
    let naive = rows.iter().find(|r| r[0] == "matmul_naive").unwrap();
    assert_eq!(naive[5], "above it: L1/L2 reuse", "no percentage of a roof the kernel did not meet");
    let read_cg = rows.iter().find(|r| r[0] == "read_cg" && r[2] == "memory").unwrap();
    assert_eq!(read_cg[5], "above memcpy");
}

#[test]
fn the_roof_is_drawn_at_the_recorded_clock_and_a_point_past_the_drivers_peak_is_the_clocks() {
    // A run recorded without the clock (as runs before the clock was measured) keeps the
    // driver's 1.98 GHz; the recorded run has it, so it is taken out here.
    let mut record = recorded();
    record.sm_clock_ghz = None;
    record.rebuild_roofline();
    let notes = |r: &RunRecord| r.sections.iter().find(|s| s.name == "roofline").unwrap().notes.join("\n");
    assert!(
        notes(&record).contains("x 1.98 GHz, the driver's peak clock (the SM clock was not measured"),
        "{}",
        notes(&record)
    );
    // Measured at 2.1 GHz: the peak is 132 x 128 x 2 x 2.1 GHz, both clocks are printed.
    record.sm_clock_ghz = Some(2.1);
    let peak = record.peak_tflops().unwrap();
    assert!((peak - 70.96).abs() < 0.01, "{peak}");
    // The first sgemm_7 rung (4096³) sped up past the driver's peak (66.9 TFLOP/s) but not past 2.1 GHz's.
    let row =
        record.sections.iter_mut().flat_map(|s| &mut s.kernels).find(|k| k.kernel == "sgemm_7_async_copy").unwrap();
    row.timing.median_ms = row.work.flop / 68e12 * 1e3;
    record.rebuild_roofline();
    let text = notes(&record);
    assert!(
        text.contains("FP32 peak 71.0 TFLOP/s = 132 SMs x 128 lanes x 2 x 2.10 GHz, the SM clock measured"),
        "{text}"
    );
    assert!(text.contains("at the driver's peak clock of 1.98 GHz it would be 66.9 TFLOP/s"), "{text}");
    let clock_note = text.lines().find(|l| l.starts_with("Above the FP32 roof at the driver's 1.98 GHz")).expect(&text);
    assert!(clock_note.contains("sgemm_7_async_copy") && clock_note.contains("2.10 GHz under load"), "{clock_note}");
    // matmul_naive stays the caches': below the balance point.
    let reuse = text.lines().find(|l| l.starts_with("Above the memory roof")).expect(&text);
    assert!(reuse.contains("matmul_naive") && !reuse.contains("sgemm_7"), "{reuse}");
    let roofline = record.sections.iter().find(|s| s.name == "roofline").unwrap();
    let rows = &roofline.sweep.as_ref().unwrap().1;
    let rung = rows.iter().find(|r| r[0].starts_with("sgemm_7_async_copy")).unwrap();
    assert_eq!(rung[5], "96%, past driver clock", "{rung:?}");
    let out = report::section_in(Layout::Terminal(100), roofline, record.memcpy_gbs);
    assert!(fits(&out, 100), "too wide: {:#?}", too_wide(&out, 100));
}
