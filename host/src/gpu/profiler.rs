//! Profiler ranges: `cuProfilerStart` / `cuProfilerStop` around the launches a profiler started
//! with `--profile-from-start off` (Nsight Compute CLI, "Profile" options) is to see. Without a
//! profiler attached both calls do nothing (CUDA Driver API, "Profiler Control").

use anyhow::Result;

use super::result::check;

/// Runs `f` (launches and their synchronisation) inside one profiler range.
///
/// # Errors
/// A failed start or stop call, or `f`'s error.
pub fn range<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    // SAFETY: no arguments; the context is current (the lab's launches need it).
    check("cuProfilerStart", unsafe { cust::sys::cuProfilerStart() })?;
    let out = f();
    // SAFETY: as above; the range is closed whatever `f` returned.
    check("cuProfilerStop", unsafe { cust::sys::cuProfilerStop() })?;
    out
}
