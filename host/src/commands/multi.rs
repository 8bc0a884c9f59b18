//! Running a command on several devices (`--device all`, `--device 0,1`): the ordinals to
//! run on, the output file of each device, and the table that puts the devices side by side.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::cli::Devices;
use crate::gpu::context;
use crate::refuse;

/// The ordinals `devices` names on this machine.
///
/// # Errors
/// A refusal for no driver or GPU, or an ordinal out of range.
pub fn resolve(devices: &Devices) -> Result<Vec<u32>> {
    let count = context::device_count()?;
    match devices.resolve(count) {
        Ok(list) => Ok(list),
        Err(e) => refuse!("{e}"),
    }
}

/// The file a run on `ordinal` writes when the user asked for `path`: `path` itself when one
/// device runs, else `path` with `-gpu<ordinal>` before its extension (`run.json` ->
/// `run-gpu1.json`; a folder `report` -> `report-gpu1`), so no device's output overwrites
/// another's.
pub fn per_device_path(path: &Path, ordinal: u32, several: bool) -> PathBuf {
    if !several {
        return path.to_path_buf();
    }
    let stem = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}-gpu{ordinal}.{}", ext.to_string_lossy()),
        None => format!("{stem}-gpu{ordinal}"),
    };
    path.with_file_name(name)
}

/// The devices side by side: one row per figure (in the order first seen), one column per
/// device (`labels`); `-` where a device has no such figure. Figures are `(name, value)`.
pub fn side_by_side(labels: &[String], figures: &[Vec<(String, String)>]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut names: Vec<&str> = Vec::new();
    for (name, _) in figures.iter().flatten() {
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    let header = std::iter::once("figure".to_string()).chain(labels.iter().cloned()).collect();
    let rows = names
        .iter()
        .map(|&name| {
            std::iter::once(name.to_string())
                .chain(figures.iter().map(|f| f.iter().find(|(n, _)| n == name).map_or("-".into(), |(_, v)| v.clone())))
                .collect()
        })
        .collect();
    (header, rows)
}

/// Numbers repeated names (`copy`, `copy #2`, ...), so that figures of repeated kernels keep
/// their own rows in [`side_by_side`].
pub fn numbered(figures: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, value) in figures {
        let seen = out.iter().filter(|(n, _)| n == &name || n.starts_with(&format!("{name} #"))).count();
        let name = if seen == 0 { name } else { format!("{name} #{}", seen + 1) };
        out.push((name, value));
    }
    out
}

/// The heading printed before the comparison table.
pub fn heading(ordinals: &[u32]) -> String {
    let list: Vec<String> = ordinals.iter().map(|o| format!("GPU {o}")).collect();
    format!("## The devices side by side: {}", list.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn one_column_per_device_and_a_dash_for_a_missing_figure() {
        let labels = ["GPU 0".to_string(), "GPU 1".to_string()];
        let (header, rows) = side_by_side(
            &labels,
            &[
                f(&[("memcpy", "3900 GB/s"), ("copy", "3700 GB/s")]),
                f(&[("memcpy", "3890 GB/s"), ("sgemm", "42 TFLOP/s")]),
            ],
        );
        assert_eq!(header, ["figure", "GPU 0", "GPU 1"]);
        assert_eq!(
            rows,
            [
                vec!["memcpy", "3900 GB/s", "3890 GB/s"],
                vec!["copy", "3700 GB/s", "-"],
                vec!["sgemm", "-", "42 TFLOP/s"],
            ]
        );
    }

    #[test]
    fn repeated_names_are_numbered() {
        let got = numbered(f(&[("sgemm", "1"), ("copy", "2"), ("sgemm", "3"), ("sgemm", "4")]));
        assert_eq!(got, f(&[("sgemm", "1"), ("copy", "2"), ("sgemm #2", "3"), ("sgemm #3", "4")]));
    }

    #[test]
    fn several_devices_write_one_file_each() {
        assert_eq!(per_device_path(Path::new("out/run.json"), 1, false), Path::new("out/run.json"));
        assert_eq!(per_device_path(Path::new("out/run.json"), 1, true), Path::new("out/run-gpu1.json"));
        assert_eq!(per_device_path(Path::new("out/report"), 0, true), Path::new("out/report-gpu0"));
    }
}
