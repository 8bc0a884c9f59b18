//! Running the lab's own binary under Nsight Compute: finding `ncu`, the two command lines (the
//! profiled run, then the import of its report as CSV) and what a refusal means.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use super::expect::METRICS;

/// Where CUDA's installer puts `ncu` when it is on no `PATH`.
pub const DEFAULT_NCU: &str = "/usr/local/cuda/bin/ncu";

/// The status Nsight Compute reports when the driver withholds the performance counters from
/// this user (Nsight Compute documentation, "ERR_NVGPUCTRPERM").
pub const NO_PERMISSION: &str = "ERR_NVGPUCTRPERM";

/// `ncu`: `$NCU` when set, else the first `ncu` on `path`, else [`DEFAULT_NCU`] (`fallback`)
/// when it exists.
pub fn find(ncu: Option<OsString>, path: Option<OsString>, fallback: &Path) -> Option<PathBuf> {
    if let Some(ncu) = ncu.filter(|n| !n.is_empty()) {
        return Some(PathBuf::from(ncu));
    }
    let on_path = path.iter().flat_map(std::env::split_paths).map(|dir| dir.join("ncu")).find(|p| p.is_file());
    on_path.or_else(|| fallback.is_file().then(|| fallback.to_path_buf()))
}

/// The `run-demos` options of the profiled child: the lessons' options the parent ran at (the
/// JSON file `options`, which `--lesson-options` reads back) on the same device, the demos
/// given, one timed run and no warm-up (only the checked launch is profiled).
pub fn child_args(demos: &[&str], options: &Path, ordinal: u32) -> Vec<String> {
    let mut args: Vec<String> = ["run-demos", "--device", &ordinal.to_string(), "--only"].map(String::from).into();
    args.extend(demos.iter().map(|d| d.to_string()));
    args.extend(["--lesson-options".into(), options.display().to_string()]);
    args.extend(["--runs", "1", "--warmup", "0"].map(String::from));
    args
}

/// `ncu`'s options for the profiled run: the metrics of [`METRICS`], only the launches inside
/// profiler ranges (the lab opens one around each checked launch), the report written to
/// `report` (`.ncu-rep` added by ncu); then `exe` and its `child` options.
pub fn profile_args(report: &Path, exe: &Path, child: &[String]) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["--profile-from-start", "off", "--metrics"].map(OsString::from).into();
    args.push(METRICS.join(",").into());
    args.extend([
        "--force-overwrite".into(),
        "--export".into(),
        report.as_os_str().to_owned(),
        exe.as_os_str().to_owned(),
    ]);
    args.extend(child.iter().map(OsString::from));
    args
}

/// `ncu`'s options that print a report's raw page as CSV in the metrics' base units.
pub fn import_args(report: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--import".into(), report.as_os_str().to_owned()];
    args.extend(["--csv", "--page", "raw", "--print-units", "base"].map(OsString::from));
    args
}

/// What a profiled run gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The raw page as CSV.
    Csv(String),
    /// Why there are no counters, one line (the run goes on without them).
    Unavailable(String),
}

/// Runs `ncu` with `profile` options, then imports the report it wrote to `report`.
///
/// # Errors
/// `ncu` cannot be started.
pub fn run(ncu: &Path, profile: &[OsString], report: &Path) -> Result<Outcome> {
    let start = |args: &[OsString]| {
        Command::new(ncu).args(args).output().with_context(|| format!("cannot run {}", ncu.display()))
    };
    let out = start(profile)?;
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if said.contains(NO_PERMISSION) {
        return Ok(Outcome::Unavailable(format!(
            "counters: profiling is not permitted on this GPU (ncu: {NO_PERMISSION}; an administrator can allow it, \
             NVIDIA's ERR_NVGPUCTRPERM page says how): no counters"
        )));
    }
    let mut with_rep = report.as_os_str().to_owned();
    with_rep.push(".ncu-rep");
    let imported = start(&import_args(Path::new(&with_rep)))?;
    if !out.status.success() || !imported.status.success() {
        let last = said.lines().rev().find(|l| l.contains("==ERROR==")).or_else(|| said.lines().last()).unwrap_or("");
        return Ok(Outcome::Unavailable(format!(
            "counters: ncu failed ({}): {}: no counters",
            out.status,
            last.trim()
        )));
    }
    Ok(Outcome::Csv(String::from_utf8_lossy(&imported.stdout).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder under the system's temporary one.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("memlab-counters-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// An executable shell script `ncu` in `dir`.
    fn fake_ncu(dir: &Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("ncu");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn the_child_runs_the_lessons_at_the_runs_sizes_once() {
        let args = child_args(&["transpose", "sgemm"], Path::new("/tmp/o.json"), 1).join(" ");
        assert_eq!(
            args,
            "run-demos --device 1 --only transpose sgemm --lesson-options /tmp/o.json --runs 1 --warmup 0"
        );
        let profile = profile_args(Path::new("/tmp/r"), Path::new("/opt/memlab"), &["run-demos".into()]);
        let profile: Vec<String> = profile.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(profile[..3], ["--profile-from-start", "off", "--metrics"]);
        assert_eq!(profile[3].split(',').count(), METRICS.len());
        assert!(profile[3].contains("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"));
        assert_eq!(profile[4..], ["--force-overwrite", "--export", "/tmp/r", "/opt/memlab", "run-demos"]);
        let import: Vec<String> =
            import_args(Path::new("/tmp/r.ncu-rep")).iter().map(|a| a.to_string_lossy().into()).collect();
        assert_eq!(import.join(" "), "--import /tmp/r.ncu-rep --csv --page raw --print-units base");
    }

    #[test]
    fn ncu_is_found_at_ncu_then_on_path_then_under_cuda() {
        let dir = scratch("find");
        let on_path = fake_ncu(&dir, "exit 0");
        let missing = dir.join("nowhere");
        assert_eq!(find(Some("/opt/ncu".into()), Some(dir.clone().into()), &missing), Some("/opt/ncu".into()));
        assert_eq!(find(None, Some(std::env::join_paths([&missing, &dir]).unwrap()), &missing), Some(on_path.clone()));
        assert_eq!(find(None, Some(missing.clone().into()), &on_path), Some(on_path));
        assert_eq!(find(Some("".into()), None, &missing), None);
    }

    #[test]
    fn a_refusal_of_the_counters_is_one_line() {
        let dir = scratch("perm");
        let ncu = fake_ncu(&dir, "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission' >&2; exit 1");
        let Outcome::Unavailable(line) = run(&ncu, &[], &dir.join("r")).unwrap() else {
            panic!("counters from a refusal")
        };
        assert!(line.starts_with("counters: profiling is not permitted") && !line.contains('\n'), "{line}");
        let broken = fake_ncu(&dir, "echo '==ERROR== the application returned an error code (2)'; exit 2");
        let Outcome::Unavailable(line) = run(&broken, &[], &dir.join("r")).unwrap() else {
            panic!("counters from a failure")
        };
        assert_eq!(
            line,
            "counters: ncu failed (exit status: 2): ==ERROR== the application returned an error code (2): no counters"
        );
        // A profiled run, then the import: the CSV the import printed.
        let works = fake_ncu(&dir, "[ \"$1\" = --import ] && echo '\"ID\",\"Kernel Name\"'; exit 0");
        assert_eq!(run(&works, &[], &dir.join("r")).unwrap(), Outcome::Csv("\"ID\",\"Kernel Name\"\n".into()));
    }
}
