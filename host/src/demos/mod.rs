//! The lessons: one module per memory level or technique. Each owns its kernels' launch shapes
//! (its `shapes` module; the typed launches themselves are generated into
//! [`crate::launches`]), allocates its inputs, launches its kernels, checks every result against
//! the CPU reference, asks the driver for the kernels' figures, times them with events and
//! returns a [`crate::lab::Section`] of the report, through the measurement core below
//! ([`crate::lab`]) and the shared probes ([`crate::probes`]). A lesson names no other lesson:
//! what several need (the memcpy ceiling) is measured once by its owner and passed in as
//! [`crate::lab::Inputs`]. The summaries above them (`summary/`) compose them, and the
//! registry (`registry.rs`) lists them for `run-demos`.

pub mod banks;
pub mod clusters;
pub mod coalescing;
pub mod host_memory;
pub mod l2;
pub mod matmul;
pub mod memcpy;
pub mod occupancy;
pub mod peer;
pub mod race;
pub mod sgemm;
pub mod tensor;
pub mod tma;
pub mod transpose;

/// One field of the recorded H200 run (`docs/report/run.json`), for the demos' unit tests,
/// which check their notes against real rows.
#[cfg(test)]
pub(crate) fn recorded<T: serde::de::DeserializeOwned>(field: &str) -> T {
    let run: serde_json::Value = serde_json::from_str(include_str!("../../../docs/report/run.json")).unwrap();
    serde_json::from_value(run[field].clone()).unwrap_or_else(|e| panic!("run.json's {field}: {e}"))
}
