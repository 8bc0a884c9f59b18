//! Host memory a run will need, checked against what the host has before any work, as device
//! memory is: a size whose host buffers do not fit is refused in one line instead of swapping
//! or being killed halfway.

use anyhow::Result;

use crate::refuse;

/// `MemAvailable` of `/proc/meminfo`, bytes: the kernel's estimate of memory available to a
/// new workload without swapping (free memory plus reclaimable caches). `None` where the file
/// or the line is missing (not Linux, or a kernel before 3.14).
pub fn available() -> Option<usize> {
    parse_mem_available(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// The `MemAvailable:` line of `/proc/meminfo` text (in kB, that is KiB), as bytes.
pub fn parse_mem_available(meminfo: &str) -> Option<usize> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kib: usize = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// Refuses when `what` needs `bytes` of host memory and only `available` bytes are available.
///
/// # Errors
/// One line naming what, the need and what is available.
pub fn check(what: &str, bytes: usize, available: usize) -> Result<()> {
    if bytes > available {
        let gib = |b: usize| b as f64 / (1u64 << 30) as f64;
        refuse!(
            "{what} needs {:.2} GiB of host memory, but only {:.2} GiB is available (MemAvailable in /proc/meminfo): \
             choose smaller sizes",
            gib(bytes),
            gib(available)
        );
    }
    Ok(())
}

/// [`check`] against this host's [`available`] memory; passes where the host cannot say.
///
/// # Errors
/// One line naming what, the need and what is available.
pub fn ensure(what: &str, bytes: usize) -> Result<()> {
    match available() {
        Some(available) => check(what, bytes, available),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_available_in_bytes() {
        let text = "MemTotal:       131072000 kB\nMemFree:         1000 kB\nMemAvailable:   64000000 kB\n";
        assert_eq!(parse_mem_available(text), Some(64_000_000 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(parse_mem_available("MemAvailable: lots\n"), None);
        // This machine has the line (CI and the GPU machine run Linux).
        assert!(available().is_some_and(|b| b > 0));
    }

    #[test]
    fn refuses_what_does_not_fit_in_one_line() {
        assert!(check("the transpose demo", 1 << 30, 2 << 30).is_ok());
        let e = check("the sgemm demo", 3 << 30, 2 << 30).unwrap_err().to_string();
        assert_eq!(
            e,
            "the sgemm demo needs 3.00 GiB of host memory, but only 2.00 GiB is available (MemAvailable in \
             /proc/meminfo): choose smaller sizes"
        );
        assert!(!e.contains('\n'));
    }
}
