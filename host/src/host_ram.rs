//! Host memory a run will need, checked against what the host has before any work, as device
//! memory is: a size whose host buffers do not fit is refused in one line instead of swapping
//! or being killed halfway. And what a demo used: its peak resident set, from `/proc` (Linux).

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
    parse_kib(meminfo, "MemAvailable:")
}

/// The value of line `key` (with its colon) of a `/proc` text whose values are in kB (KiB),
/// as bytes.
fn parse_kib(text: &str, key: &str) -> Option<usize> {
    let line = text.lines().find_map(|l| l.strip_prefix(key))?;
    let kib: usize = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// This process's peak resident set since its start, bytes: `VmHWM` of `/proc/self/status`.
/// `None` where the file or the line is missing (not Linux). Never reset (`/proc/self/clear_refs`
/// could): the kernel's high-water mark is also what `getrusage` and `/usr/bin/time` report at
/// exit, and a reset would make them report the last span only (measured: 126 MB for a run
/// that peaked at 666 MB).
pub fn peak_rss() -> Option<usize> {
    parse_peak_rss(&std::fs::read_to_string("/proc/self/status").ok()?)
}

/// The `VmHWM:` line of `/proc/self/status` text (in kB, that is KiB), as bytes.
pub fn parse_peak_rss(status: &str) -> Option<usize> {
    parse_kib(status, "VmHWM:")
}

/// Runs `work` and returns its result with the process's peak resident set at its end, bytes
/// (so far: a span that does not raise it shows the earlier peak); `None` where `/proc` cannot
/// report it (not Linux).
pub fn peak_after<R>(work: impl FnOnce() -> R) -> (R, Option<usize>) {
    let r = work();
    (r, peak_rss())
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
    fn reads_the_peak_resident_set_in_bytes() {
        // The lines around VmHWM as Linux 6.x writes them (tabs, then padding to the value).
        let status = "Name:\tmemlab\nVmPeak:\t 9012345 kB\nVmSize:\t 8000000 kB\nVmHWM:\t  1580000 kB\n\
                      VmRSS:\t  250000 kB\nThreads:\t12\n";
        assert_eq!(parse_peak_rss(status), Some(1_580_000 * 1024));
        assert_eq!(parse_peak_rss("VmRSS:\t 5 kB\n"), None, "VmRSS is not the peak");
        assert_eq!(parse_peak_rss("VmHWM:\t 5 MB\n"), None);
        // This machine has /proc: the peak covers a buffer touched during the span.
        let (_, peak) = peak_after(|| std::hint::black_box(vec![1u8; 64 << 20]).len());
        assert!(peak.is_some_and(|p| p >= 64 << 20), "{peak:?}");
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
