//! Files the user asked for (`--json FILE`, `--report DIR` and its charts, `--chart DIR`, `report --out DIR`):
//! checked before any work, so a run never ends in "cannot write" after minutes on the GPU, and
//! written whole or not at all: into a temporary file in the same folder, renamed over the
//! target once complete (a rename within one file system is atomic).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, anyhow};

use crate::lab::Picture;
use crate::refuse;

/// A fresh name next to `path`, with the same extension (plotters picks the image format from
/// it): `DIR/.<name>.<pid>-<n>.tmp.<ext>`.
fn temp_path(path: &Path) -> PathBuf {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    path.with_file_name(format!(".{name}.{}-{n}.tmp{ext}", std::process::id()))
}

/// The folder a file path lives in (`.` for a bare name).
fn folder(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Whether a file can be created in `dir`: creates and removes one, which also catches
/// read-only file systems and missing permissions.
fn writable(flag: &str, dir: &Path) -> Result<()> {
    let probe = temp_path(&dir.join("probe"));
    match fs::File::create(&probe) {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => refuse!("{flag}: cannot write into the folder {} ({e})", dir.display()),
    }
}

/// Checks that `path` can be written: its folder exists and is writable, and it is not a folder.
///
/// # Errors
/// One line naming `flag` (e.g. `"--json"`), the path and the problem.
pub fn check_file(flag: &str, path: &Path) -> Result<()> {
    if path.is_dir() {
        refuse!("{flag} {}: is a folder; give a file name", path.display());
    }
    let dir = folder(path);
    if !dir.is_dir() {
        refuse!("{flag} {}: the folder {} does not exist", path.display(), dir.display());
    }
    writable(flag, dir)
}

/// Checks that files can be written into `dir`: it is a writable folder, or it does not exist
/// yet and its parent is a writable folder (it is then created when written).
///
/// # Errors
/// One line naming `flag` (e.g. `"--report"`), the folder and the problem.
pub fn check_dir(flag: &str, dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return writable(flag, dir);
    }
    if dir.exists() {
        refuse!("{flag} {}: is a file, not a folder", dir.display());
    }
    let parent = folder(dir);
    if !parent.is_dir() {
        refuse!("{flag} {}: the folder {} does not exist", dir.display(), parent.display());
    }
    writable(flag, parent)
}

/// Writes `path` through `write`, which gets a temporary path in the same folder; renames it
/// over `path` when `write` succeeds and removes it otherwise.
///
/// # Errors
/// The error of `write`, or a failed rename.
pub fn atomically<T>(path: &Path, write: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    let temp = temp_path(path);
    let result = write(&temp).and_then(|value| {
        fs::rename(&temp, path).with_context(|| format!("cannot write {}", path.display())).map(|()| value)
    });
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Writes `bytes` to `path` whole, through a temporary file in the same folder.
///
/// # Errors
/// The file cannot be written.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<()> {
    atomically(path, |temp| fs::write(temp, bytes).with_context(|| format!("cannot write {}", path.display())))
}

/// Writes chart `chart` as `DIR/<stem>.svg` and `DIR/<stem>.png`, each whole or not at all, and
/// returns their paths.
///
/// # Errors
/// A file that cannot be written, or a drawing error.
pub fn save_chart(chart: &dyn Picture, dir: &Path) -> Result<[PathBuf; 2]> {
    let stem = chart.stem();
    let (svg, png) = (dir.join(format!("{stem}.svg")), dir.join(format!("{stem}.png")));
    let fail = |path: &Path, e: String| anyhow!("drawing {}: {e}", path.display());
    atomically(&svg, |temp| chart.svg(temp).map_err(|e| fail(&svg, e)))?;
    atomically(&png, |temp| chart.png(temp).map_err(|e| fail(&png, e)))?;
    Ok([svg, png])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("memlab-output-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_missing_folder_is_refused_by_name() {
        let e = check_file("--json", Path::new("/missing/dir/x.json")).unwrap_err().to_string();
        assert_eq!(e, "--json /missing/dir/x.json: the folder /missing/dir does not exist");
        let e = check_dir("--report", Path::new("/missing/dir/report")).unwrap_err().to_string();
        assert_eq!(e, "--report /missing/dir/report: the folder /missing/dir does not exist");
    }

    #[test]
    fn files_and_folders_are_told_apart() {
        let dir = scratch("kinds");
        let file = dir.join("run.json");
        fs::write(&file, "x").unwrap();
        assert!(check_file("--json", &dir).unwrap_err().to_string().ends_with("is a folder; give a file name"));
        assert!(check_dir("--report", &file).unwrap_err().to_string().ends_with("is a file, not a folder"));
        check_file("--json", &file).unwrap();
        check_file("--json", &dir.join("new.json")).unwrap();
        check_dir("--report", &dir).unwrap();
        check_dir("--report", &dir.join("new")).unwrap();
        // The probes leave nothing behind.
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
    }

    #[test]
    fn writes_are_whole_or_absent() {
        let dir = scratch("atomic");
        let path = dir.join("run.json");
        write(&path, "first").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "first");
        let failed: Result<()> = atomically(&path, |temp| {
            fs::write(temp, "half")?;
            anyhow::bail!("the writer failed")
        });
        assert!(failed.is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), "first", "a failed write keeps the old file");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "and leaves no temporary file");
    }
}
