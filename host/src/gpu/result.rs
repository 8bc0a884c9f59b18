//! The driver's status codes as Rust errors: every raw driver call in `gpu/` (`cust::sys`,
//! [`super::driver::raw`]) hands its `CUresult` to [`check`], and a failure becomes a
//! [`DriverError`] that names the call, the code and the driver's description of it. The
//! layers, as in cudarc: raw bindings (`sys`), then this result layer, then the safe wrappers
//! of the other modules.

use std::ffi::{CStr, c_char};
use std::fmt;

use cust::sys::{CUresult, cudaError_enum};

/// A driver call that did not return `CUDA_SUCCESS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverError {
    /// The driver function, as CUDA names it (`"cuMemAlloc"`), with the argument that tells
    /// calls apart where a fixed one does (`"cuCtxGetLimit(PERSISTING_L2_CACHE_SIZE)"`).
    pub call: &'static str,
    /// What the lab was doing, in its words (`"allocating 4096 bytes on device 1"`), for the
    /// figures the call name cannot hold; `None` when the call says it all.
    pub during: Option<String>,
    /// The driver's status.
    pub code: CUresult,
}

impl DriverError {
    /// The same error, saying what the lab was doing when the call failed.
    pub fn during(self, what: impl Into<String>) -> DriverError {
        DriverError { during: Some(what.into()), ..self }
    }
}

/// `Ok` when `code`, the status driver function `call` returned, is `CUDA_SUCCESS`. The call
/// comes first, so that a call site reads `check("cuMemFree", unsafe { cuMemFree_v2(ptr) })`.
///
/// # Errors
/// A [`DriverError`] naming `call` and `code` otherwise.
pub fn check(call: &'static str, code: CUresult) -> Result<(), DriverError> {
    if code == cudaError_enum::CUDA_SUCCESS {
        return Ok(());
    }
    Err(DriverError { call, during: None, code })
}

/// The driver's description of `code` (`cuGetErrorString`), `None` without a driver or for a
/// code it does not know.
pub fn description(code: CUresult) -> Option<&'static str> {
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: writes one pointer, to a static string of the driver's, on success.
    check("cuGetErrorString", unsafe { cust::sys::cuGetErrorString(code, &mut text) }).ok()?;
    if text.is_null() {
        return None;
    }
    // SAFETY: on success the driver wrote a NUL-terminated string that lives as long as it.
    unsafe { CStr::from_ptr(text) }.to_str().ok()
}

/// `"<during>: <call> failed: <code's name> (<driver's description>)"`; the description
/// is left out when the driver gives none.
impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(during) = &self.during {
            write!(f, "{during}: ")?;
        }
        write!(f, "{} failed: {:?}", self.call, self.code)?;
        match description(self.code) {
            Some(text) => write!(f, " ({text})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for DriverError {}

/// An error of cust's safe wrappers as one line: its name and the driver's description.
pub fn describe(err: cust::error::CudaError) -> String {
    format!("{err:?} ({})", err.to_string().trim_matches('"'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_passes_and_a_failure_names_the_call_and_the_code() {
        assert_eq!(check("cuInit", cudaError_enum::CUDA_SUCCESS), Ok(()));
        let e = check("cuMemAlloc", cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY).unwrap_err();
        assert_eq!((e.call, e.code), ("cuMemAlloc", cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY));
        let text = e.during("allocating 4096 bytes on device 1").to_string();
        // The driver's description follows when a driver is loaded.
        assert!(
            text.starts_with("allocating 4096 bytes on device 1: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"),
            "{text}"
        );
    }

    #[test]
    fn without_what_it_was_doing_the_line_starts_with_the_call() {
        let e = check("cuCtxGetLimit(PERSISTING_L2_CACHE_SIZE)", cudaError_enum::CUDA_ERROR_INVALID_VALUE).unwrap_err();
        assert!(e.to_string().starts_with("cuCtxGetLimit(PERSISTING_L2_CACHE_SIZE) failed: CUDA_ERROR_INVALID_VALUE"));
    }
}
