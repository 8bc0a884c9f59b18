//! Finding and loading NVIDIA's shared libraries that the lab loads at run time (`dlopen`
//! through `libloading`): cuBLAS, cuBLASLt and NCCL. Where none is found the caller skips its
//! comparison with a note, so the binary needs only the driver. [`Library`] is the loaded file
//! and its entry points by name; [`status`] the one-line error of a call that failed.
//!
//! Search order: the file named by the library's environment variable (then nothing else),
//! every folder of `$LD_LIBRARY_PATH`, the CUDA toolkit's and the system's library folders,
//! then the given subfolders (e.g. `nvidia/nccl/lib`, where PyPI's wheels and so PyTorch keep
//! them) of every Python `sys.path` entry and of every `/usr/lib/python3*` and
//! `/usr/local/lib/python3*` `dist-packages`/`site-packages` folder.

use std::ffi::c_int;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

use crate::refuse;

/// A shared library loaded at run time, with the file it came from.
pub struct Library {
    /// The file that was loaded (or the soname the loader resolved).
    pub path: PathBuf,
    lib: libloading::Library,
}

impl Library {
    /// Loads `path`.
    ///
    /// # Safety
    /// Loading runs the file's initialisers: they must have no preconditions (as NVIDIA's
    /// libraries' have none).
    ///
    /// # Errors
    /// A file that cannot be loaded, in one line.
    pub unsafe fn load(path: PathBuf) -> Result<Library> {
        // SAFETY: the caller's word on the initialisers.
        match unsafe { libloading::Library::new(&path) } {
            Ok(lib) => Ok(Library { path, lib }),
            Err(e) => refuse!("cannot load {}: {e}", path.display()),
        }
    }

    /// The entry point `name` as `T`.
    ///
    /// # Safety
    /// `T` is `name`'s C signature (a function pointer type), and the value is called only
    /// while `self` is loaded.
    ///
    /// # Errors
    /// A library without `name`, in one line.
    pub unsafe fn symbol<T: Copy>(&self, name: &str) -> Result<T> {
        // SAFETY: the caller's word on the type.
        match unsafe { self.lib.get::<T>(name.as_bytes()) } {
            Ok(s) => Ok(*s),
            Err(e) => refuse!("{} lacks {name}: {e}", self.path.display()),
        }
    }
}

/// `Ok` for status 0 (`CUBLAS_STATUS_SUCCESS`), else the one-line error "`library` `what` failed
/// with status `code`".
///
/// # Errors
/// A status other than 0.
pub fn status(library: &str, what: &str, code: c_int) -> Result<()> {
    if code != 0 {
        refuse!("{library} {what} failed with status {code}");
    }
    Ok(())
}

/// Folders of Python packages: `python3`'s `sys.path`, then the usual system locations.
fn python_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let python = Command::new("python3").args(["-c", "import sys; print('\\n'.join(sys.path))"]).output();
    if let Ok(out) = python {
        dirs.extend(String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.is_empty()).map(PathBuf::from));
    }
    for root in ["/usr/lib", "/usr/local/lib", "/usr/lib64"] {
        let Ok(entries) = std::fs::read_dir(root) else { continue };
        let mut pythons: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python3")))
            .collect();
        pythons.sort();
        for p in pythons {
            dirs.extend(["dist-packages", "site-packages"].map(|d| p.join(d)));
        }
    }
    dirs
}

/// Candidate folders, in search order, with `python_subdirs` tried under every Python folder.
pub fn search_dirs(python_subdirs: &[&str]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    dirs.extend(["/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"].map(PathBuf::from));
    for entry in python_dirs() {
        dirs.extend(python_subdirs.iter().map(|d| Path::new(&entry).join(d)));
    }
    dirs
}

/// The library whose file name starts with `prefix` (e.g. `libnccl.so`): the file in `$env`
/// when that variable is set (a missing file then means none), else the first folder of
/// [`search_dirs`] that has one, highest name first within a folder.
pub fn find(env: &str, prefix: &str, python_subdirs: &[&str]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    find_in(&search_dirs(python_subdirs), prefix)
}

/// The first match of `prefix` in `dirs` (see [`find`]).
pub fn find_in(dirs: &[PathBuf], prefix: &str) -> Option<PathBuf> {
    dirs.iter().find_map(|dir| {
        let mut libs: Vec<PathBuf> = std::fs::read_dir(dir)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix)))
            .collect();
        libs.sort();
        libs.pop()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_highest_version_in_the_first_folder_that_has_one() {
        let root = std::env::temp_dir().join(format!("memlab-libs-{}", std::process::id()));
        let (a, b) = (root.join("a"), root.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        for f in ["libnccl.so.2", "libnccl.so.2.21.5", "libnccl-net.so"] {
            std::fs::write(b.join(f), b"").unwrap();
        }
        std::fs::write(a.join("libcublas.so.12"), b"").unwrap();
        let dirs = [root.join("missing"), a.clone(), b.clone()];
        assert_eq!(find_in(&dirs, "libnccl.so"), Some(b.join("libnccl.so.2.21.5")));
        assert_eq!(find_in(&dirs, "libcublas.so"), Some(a.join("libcublas.so.12")));
        assert_eq!(find_in(&dirs, "libnvrtc.so"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_failed_call_is_one_line_naming_it_and_its_status() {
        assert!(status("cuBLASLt", "cublasLtMatmul", 0).is_ok());
        let e = status("cuBLASLt", "cublasLtMatmul", 7).unwrap_err().to_string();
        assert_eq!(e, "cuBLASLt cublasLtMatmul failed with status 7");
    }

    #[test]
    fn a_file_that_is_no_library_is_refused_in_one_line() {
        let path = std::env::temp_dir().join(format!("memlab-not-a-library-{}.so", std::process::id()));
        std::fs::write(&path, b"not an ELF file").unwrap();
        // SAFETY: the file has no initialisers; loading it fails before any could run.
        let e = unsafe { Library::load(path.clone()) }.err().unwrap().to_string();
        std::fs::remove_file(&path).unwrap();
        assert!(e.starts_with(&format!("cannot load {}: ", path.display())) && !e.contains('\n'), "{e}");
    }

    #[test]
    fn python_subfolders_are_searched_after_the_system_folders() {
        let dirs = search_dirs(&["nvidia/nccl/lib"]);
        let system = dirs.iter().position(|d| d == Path::new("/usr/lib")).unwrap();
        assert!(dirs.iter().skip(system).any(|d| d.ends_with("nvidia/nccl/lib")) || python_dirs().is_empty());
        assert!(dirs.iter().take(system).all(|d| !d.ends_with("nvidia/nccl/lib")));
    }
}
