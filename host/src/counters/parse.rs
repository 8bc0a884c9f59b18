//! Nsight Compute's raw page as CSV (`ncu --import FILE --csv --page raw --print-units base`):
//! a header row (`"ID"`, `"Kernel Name"`, `"Block Size"`, `"Grid Size"`, ..., then one column
//! per metric name), a row of units, then one row per profiled launch, in launch order.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

/// One profiled launch: its kernel, shape and metric values (in the metrics' base units:
/// bytes, sectors, percent).
#[derive(Debug, Clone, PartialEq)]
pub struct Profiled {
    /// Kernel name as ncu prints it (demangled; the lab's entries are not mangled).
    pub kernel: String,
    /// Block dimensions `(x, y, z)`.
    pub block: (u32, u32, u32),
    /// Grid dimensions `(x, y, z)`.
    pub grid: (u32, u32, u32),
    /// Metric name -> value; metrics ncu printed as `n/a` are left out.
    pub metrics: BTreeMap<String, f64>,
}

/// The launches of a raw-page CSV. Lines before the header (ncu's `==PROF==` notes) are skipped.
///
/// # Errors
/// One line naming the problem: no header, a missing column, a value that is not a number.
pub fn raw_csv(text: &str) -> Result<Vec<Profiled>> {
    let Some(start) = text.find("\"ID\",") else { bail!("ncu's raw CSV has no header row (\"ID\",...)") };
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(&text.as_bytes()[start..]);
    let header = reader.headers()?.clone();
    let column = |name: &str| match header.iter().position(|h| h == name) {
        Some(i) => Ok(i),
        None => bail!("ncu's raw CSV has no `{name}` column"),
    };
    let (kernel, block, grid) = (column("Kernel Name")?, column("Block Size")?, column("Grid Size")?);
    // Metric columns hold a `__` (Nsight's `unit__counter.rollup` names); the others describe the
    // launch, and so do the `device__attribute_*` and `launch__*` columns ncu adds on its own
    // (some are words: `device__attribute_confidential_computing_mode` is `No-CC` on the H200).
    let described = |h: &str| h.starts_with("device__attribute") || h.starts_with("launch__");
    let metrics: Vec<(usize, &str)> =
        header.iter().enumerate().filter(|(_, h)| h.contains("__") && !described(h)).collect();
    let mut launches = Vec::new();
    for (n, record) in reader.records().enumerate() {
        let record = record?;
        // The first row under the header gives each column's unit.
        if n == 0 && record.get(kernel).is_some_and(str::is_empty) {
            continue;
        }
        let field = |i: usize| record.get(i).unwrap_or("");
        let mut values = BTreeMap::new();
        for &(i, name) in &metrics {
            if let Some(v) = number(name, field(i))? {
                values.insert(name.to_string(), v);
            }
        }
        launches.push(Profiled {
            kernel: field(kernel).to_string(),
            block: dims(field(block))?,
            grid: dims(field(grid))?,
            metrics: values,
        });
    }
    Ok(launches)
}

/// A metric's value: thousands separators dropped, `n/a` and empty as `None`.
fn number(metric: &str, text: &str) -> Result<Option<f64>> {
    let t = text.trim();
    if t.is_empty() || t == "n/a" {
        return Ok(None);
    }
    match t.replace(',', "").parse::<f64>() {
        Ok(v) => Ok(Some(v)),
        Err(_) => bail!("ncu's raw CSV: `{metric}` is `{t}`, not a number"),
    }
}

/// `"(32, 8, 1)"` as `(32, 8, 1)`.
fn dims(text: &str) -> Result<(u32, u32, u32)> {
    let parts: Vec<Option<u32>> =
        text.trim().trim_start_matches('(').trim_end_matches(')').split(',').map(|p| p.trim().parse().ok()).collect();
    match parts[..] {
        [Some(x), Some(y), Some(z)] => Ok((x, y, z)),
        _ => bail!("ncu's raw CSV: `{text}` is not a launch dimension like (32, 8, 1)"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The raw page as ncu writes it: tool notes, the header, the units row, one row a launch
    /// (values with thousands separators, an `n/a`).
    pub const FIXTURE: &str = r#"==PROF== Connected to process 4242 (/opt/memlab/memlab)
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","device__attribute_confidential_computing_mode","launch__grid_size","dram__bytes_read.sum","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","lts__t_sector_hit_rate.pct"
"","","","","","","","","","","","","","byte","","sector","%"
"0","4242","memlab","127.0.0.1","copy","1","13","(32, 8, 1)","(256, 256, 1)","0","9.0","No-CC","65536","268,435,456","2,097,152","8,388,608","49.98"
"1","4242","memlab","127.0.0.1","shared_bank_probe","1","13","(256, 1, 1)","(1056, 1, 1)","0","9.0","No-CC","1056","4,224","0","0","n/a"
"#;

    #[test]
    fn the_raw_page_gives_each_launch_its_shape_and_metrics() {
        let launches = raw_csv(FIXTURE).unwrap();
        assert_eq!(launches.len(), 2);
        let copy = &launches[0];
        assert_eq!((copy.kernel.as_str(), copy.block, copy.grid), ("copy", (32, 8, 1), (256, 256, 1)));
        assert_eq!(copy.metrics["dram__bytes_read.sum"], 268_435_456.0);
        assert_eq!(copy.metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"], 8_388_608.0);
        assert_eq!(copy.metrics["lts__t_sector_hit_rate.pct"], 49.98);
        // Launch-describing columns are not metrics; n/a is left out.
        assert!(!copy.metrics.contains_key("CC"));
        // So are the device attributes ncu adds, words among them (the H200's `No-CC`).
        assert!(!copy.metrics.keys().any(|k| k.starts_with("device__") || k.starts_with("launch__")));
        assert!(!launches[1].metrics.contains_key("lts__t_sector_hit_rate.pct"));
        assert_eq!(launches[1].metrics["dram__bytes_read.sum"], 4224.0);
    }

    #[test]
    fn a_bad_page_is_refused_in_one_line() {
        assert!(raw_csv("==ERROR== no kernels were profiled\n").unwrap_err().to_string().contains("no header row"));
        let bad = FIXTURE.replace("\"49.98\"", "\"fast\"");
        assert_eq!(
            raw_csv(&bad).unwrap_err().to_string(),
            "ncu's raw CSV: `lts__t_sector_hit_rate.pct` is `fast`, not a number"
        );
        let no_grid = FIXTURE.replace("\"Grid Size\"", "\"Grid\"");
        assert_eq!(raw_csv(&no_grid).unwrap_err().to_string(), "ncu's raw CSV has no `Grid Size` column");
    }
}
