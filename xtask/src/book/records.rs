//! The measurement pages' tables copied from a `memlab bench` record, checked figure by figure
//! against the record the page cites: a table that quotes another run, or a record replaced
//! under a page, fails `cargo xtask book --check` with the figure, the page's value and the
//! record's.
//!
//! The record a table comes from is the last `records/....json` path the page names at or
//! before the table. Two table shapes are read: `memlab bench`'s own (`kernel | size | regs ...`,
//! with the `memcpy ... cuBLAS: ...` line above it) and the SGEMM ladder's (`kernel | TFLOP/s,
//! 1024³ / ... | share of cuBLAS FP32 | Rust / C++ twin`). Each shown number must be the
//! record's value at the shown precision.

use std::fs;
use std::path::Path;
use std::sync::LazyLock;

use anyhow::{Context, Result};
use regex::Regex;
use serde_json::Value;

/// The pages and anchors whose tables quote a bench record.
pub const CITING: [(&str, &str); 2] =
    [("docs/measurements/twins.md", "table"), ("docs/measurements/sgemm.md", "ladder")];

static RECORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"records/[\w/.-]+\.json").unwrap());
static MEMCPY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"memcpy (\d+(?:\.\d+)?) GB/s").unwrap());
static CUBLAS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"((?:TF32 )?\d+x\d+x\d+) (\d+(?:\.\d+)?) TFLOP/s").unwrap());

/// Every disagreement between the [`CITING`] pages under `root` and their records.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    for (page, anchor) in CITING {
        let text = fs::read_to_string(root.join(page)).with_context(|| format!("cannot read {page}"))?;
        let start = format!("<!-- ANCHOR: {anchor} -->");
        let from = text.find(&start).with_context(|| format!("{page} has no `{start}`"))?;
        let to = text[from..].find("<!-- ANCHOR_END: ").with_context(|| format!("{page}:{anchor} has no end"))? + from;
        let block = &text[from..to];
        let table_at = block.find("\n|").map_or(to, |i| from + i);
        let cited =
            RECORD.find_iter(&text[..table_at]).last().with_context(|| format!("{page}:{anchor} cites no record"))?;
        let path = Path::new(page)
            .parent()
            .unwrap_or(Path::new(""))
            .join(cited.as_str().trim_start_matches("docs/measurements/"));
        let record: Value = serde_json::from_str(
            &fs::read_to_string(root.join(&path)).with_context(|| format!("cannot read {}", path.display()))?,
        )
        .with_context(|| format!("{} is not JSON", path.display()))?;
        let place = format!("{page}:{anchor} (record {})", cited.as_str());
        problems.extend(compare(block, &record).into_iter().map(|p| format!("{place}: {p}")));
    }
    Ok(problems)
}

/// A bench record's figures.
struct Record<'a>(&'a Value);

impl Record<'_> {
    /// cuBLAS TFLOP/s at `size` (`MxNxK`, or `TF32 MxNxK`).
    fn cublas(&self, size: &str) -> Option<f64> {
        let list = self.0["cublas_sgemm_tflops"].as_array()?;
        list.iter().find(|c| c["size"] == size).and_then(|c| c["tflops"].as_f64())
    }

    /// The rows of kernel `name` at `size`: that name exactly, else the names it begins
    /// (`sgemm_8` for the configuration autotune chose at that size).
    fn entries(&self, name: &str, size: &str) -> Vec<&Value> {
        let kernels: &[Value] = self.0["kernels"].as_array().map_or(&[], Vec::as_slice);
        let at = |exact: bool| -> Vec<&Value> {
            let hit = |k: &str| if exact { k == name } else { k.starts_with(&format!("{name}_")) };
            kernels.iter().filter(|k| k["size"] == size && k["kernel"].as_str().is_some_and(hit)).collect()
        };
        let exact = at(true);
        if exact.is_empty() { at(false) } else { exact }
    }
}

/// What in `block` (a page's lines) disagrees with `record`.
fn compare(block: &str, record: &Value) -> Vec<String> {
    let record = Record(record);
    let mut out = Vec::new();
    for line in block.lines().filter(|l| !l.starts_with('|')) {
        if let Some(m) = MEMCPY.captures(line) {
            expect(&mut out, "memcpy".into(), &m[1], record.0["memcpy_gbs"].as_f64());
        }
        if line.contains("cuBLAS: ") {
            for m in CUBLAS.captures_iter(line) {
                expect(&mut out, format!("cuBLAS {}", &m[1]), &m[2], record.cublas(&m[1]));
            }
        }
    }
    let rows: Vec<Vec<String>> = block
        .lines()
        .filter_map(|l| l.trim().strip_prefix('|')?.strip_suffix('|'))
        .map(|l| l.split('|').map(|c| c.trim().to_string()).collect::<Vec<_>>())
        .filter(|cells| !cells.iter().all(|c| c.chars().all(|ch| ch == '-' || ch == ':')))
        .collect();
    let Some((header, body)) = rows.split_first() else { return out };
    if header.len() >= 7 && header[0] == "kernel" && header[1] == "size" {
        twin_rows(&record, body, &mut out);
    } else if let Some(sizes) = header.get(1).and_then(|h| h.strip_prefix("TFLOP/s, ")) {
        let sizes: Vec<String> = sizes
            .split(" / ")
            .map(|s| {
                let n = s.trim().trim_end_matches('³');
                format!("{n}x{n}x{n}")
            })
            .collect();
        ladder_rows(&record, &sizes, body, &mut out);
    }
    out
}

/// `memlab bench`'s rows: kernel, size, registers, both medians, the ratio, Rust's rate.
fn twin_rows(record: &Record, body: &[Vec<String>], out: &mut Vec<String>) {
    for row in body.iter().filter(|r| r.len() >= 7) {
        let (name, size) = (&row[0], &row[1]);
        let [k] = record.entries(name, size)[..] else {
            out.push(format!("{name} at {size}: not one row of the record"));
            continue;
        };
        let regs = format!("{} / {}", k["regs_rust"], k["regs_cuda"]);
        if row[2] != regs {
            out.push(format!("{name} at {size}: registers {} here, {regs} in the record", row[2]));
        }
        let at = |what: &str| format!("{name} at {size}: {what}");
        expect(out, at("Rust ms"), &row[3], k["rust_median_ms"].as_f64());
        expect(out, at("C++ ms"), &row[4], k["cuda_median_ms"].as_f64());
        expect(out, at("speed ratio"), &row[5], k["speed_ratio_cuda_time_over_rust_time"].as_f64());
        let rate = row[6].split_whitespace().next().unwrap_or("");
        expect(out, at("Rust rate"), rate, k["rust_rate"].as_f64());
    }
}

/// The SGEMM ladder's rows at `sizes`: TFLOP/s, share of cuBLAS FP32 and the range of the
/// ratios to the twin per kernel; cuBLAS's own rows (FP32, TF32).
fn ladder_rows(record: &Record, sizes: &[String], body: &[Vec<String>], out: &mut Vec<String>) {
    for row in body.iter().filter(|r| r.len() >= 2) {
        let label = &row[0];
        let name = label.split('`').nth(1).unwrap_or(label).to_string();
        let rates: Vec<&str> = row[1].split(" / ").map(str::trim).collect();
        if label.starts_with("cuBLAS") {
            let prefix = if label.contains("TF32") { "TF32 " } else { "" };
            for (size, shown) in sizes.iter().zip(&rates) {
                expect(out, format!("{label} at {size}"), shown, record.cublas(&format!("{prefix}{size}")));
            }
            continue;
        }
        let found: Vec<Option<&Value>> =
            sizes.iter().map(|size| record.entries(&name, size).into_iter().next()).collect();
        for ((size, shown), k) in sizes.iter().zip(&rates).zip(&found) {
            expect(out, format!("{name} at {size}: TFLOP/s"), shown, k.and_then(|k| k["rust_rate"].as_f64()));
        }
        let shares = row.get(2).map_or(Vec::new(), |c| c.split(" / ").map(str::trim).collect());
        for ((size, shown), k) in sizes.iter().zip(&shares).zip(&found) {
            let share = k.and_then(|k| Some(k["rust_rate"].as_f64()? / record.cublas(size)?));
            expect(out, format!("{name} at {size}: share of cuBLAS"), shown, share);
        }
        let ratios: Vec<f64> =
            found.iter().flatten().filter_map(|k| k["speed_ratio_cuda_time_over_rust_time"].as_f64()).collect();
        if let Some((lo, hi)) = row.get(3).and_then(|c| c.split_once('-')) {
            let ends = (ratios.len() == sizes.len()).then(|| {
                (ratios.iter().copied().fold(f64::INFINITY, f64::min), ratios.iter().copied().fold(0.0, f64::max))
            });
            expect(out, format!("{name}: lowest Rust / C++ ratio"), lo, ends.map(|e| e.0));
            expect(out, format!("{name}: highest Rust / C++ ratio"), hi, ends.map(|e| e.1));
        }
    }
}

/// Adds to `out` what is wrong when `shown` is not the record's `value` for `what`.
fn expect(out: &mut Vec<String>, what: String, shown: &str, value: Option<f64>) {
    match value {
        Some(v) if same(shown, v) => {}
        Some(v) => out.push(format!("{what}: {shown} here, {v} in the record")),
        None => out.push(format!("{what}: {shown} here, none in the record")),
    }
}

/// Whether `shown` is `value` written with as many decimals as `shown` has.
fn same(shown: &str, value: f64) -> bool {
    let decimals = shown.split_once('.').map_or(0, |(_, d)| d.len());
    format!("{value:.decimals$}") == shown
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = r#"{"memcpy_gbs": 4021.38, "cublas_sgemm_tflops": [{"size": "1024x1024x1024", "tflops": 31.566},
        {"size": "TF32 1024x1024x1024", "tflops": 72.47}],
        "kernels": [{"kernel": "sgemm_8_64x64", "size": "1024x1024x1024", "regs_rust": 128, "regs_cuda": 119,
        "rust_median_ms": 0.07101, "cuda_median_ms": 0.07379, "speed_ratio_cuda_time_over_rust_time": 1.0391,
        "rust_rate": 30.241}]}"#;

    #[test]
    fn a_bench_table_agrees_with_its_record_figure_by_figure() {
        let record: Value = serde_json::from_str(RECORD).unwrap();
        let table = "memcpy 4021 GB/s. cuBLAS: 1024x1024x1024 31.57 TFLOP/s, TF32 1024x1024x1024 72.47 TFLOP/s.\n\n\
                     | kernel | size | regs Rust / C++ | Rust ms | C++ ms | C++ ms / Rust ms | Rust rate | checks |\n\
                     |---|---|---|---|---|---|---|---|\n\
                     | sgemm_8_64x64 | 1024x1024x1024 | 128 / 119 | 0.0710 | 0.0738 | 1.039 | 30.24 TFLOP/s | ok / ok |\n";
        assert_eq!(compare(table, &record), Vec::<String>::new());
        let stale = table.replace("4021 GB/s", "4013 GB/s").replace("128 / 119", "30 / 32").replace("30.24", "30.25");
        assert_eq!(
            compare(&stale, &record),
            [
                "memcpy: 4013 here, 4021.38 in the record",
                "sgemm_8_64x64 at 1024x1024x1024: registers 30 / 32 here, 128 / 119 in the record",
                "sgemm_8_64x64 at 1024x1024x1024: Rust rate: 30.25 here, 30.241 in the record",
            ]
        );
    }

    #[test]
    fn a_ladder_table_agrees_with_its_record_and_names_a_missing_size() {
        let record: Value = serde_json::from_str(RECORD).unwrap();
        let ladder = "| kernel | TFLOP/s, 1024³ | share of cuBLAS FP32 | Rust / C++ twin |\n|---|---|---|---|\n\
                      | `sgemm_8` (tuned) | 30.24 | 0.96 | 1.039-1.039 |\n| cuBLAS SGEMM (FP32) | 31.57 | 1 | |\n\
                      | cuBLAS SGEMM (TF32 allowed: `wgmma`) | 72.47 | | |\n";
        assert_eq!(compare(ladder, &record), Vec::<String>::new());
        let wider =
            ladder.replace("TFLOP/s, 1024³", "TFLOP/s, 1024³ / 2048³").replace("| 30.24 |", "| 30.24 / 45.36 |");
        let problems = compare(&wider, &record);
        assert!(problems.contains(&"sgemm_8 at 2048x2048x2048: TFLOP/s: 45.36 here, none in the record".to_string()));
    }

    #[test]
    fn the_measurement_pages_agree_with_the_records_they_cite() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let problems = check(&root).unwrap();
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
