//! What a measured kernel becomes: its row of the report ([`KernelRow`]), its rate, its work,
//! and a lesson's part of the report ([`Section`]).

use serde::{Deserialize, Serialize};

use crate::gpu::kernel::{DriverOccupancy, KernelAttrs};
use crate::gpu::launch::LaunchShape;
use crate::gpu::timing::Timing;
use crate::series::Series;
use crate::verify::Check;

/// One kernel's line in the report: the driver's figures, the measurement and the check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelRow {
    /// Kernel entry point.
    pub kernel: String,
    /// The problem size as the demo names it ("4096x4096x4096", "stride 8"; empty in runs
    /// recorded before it existed).
    #[serde(default)]
    pub size: String,
    /// What it teaches, one line.
    pub lesson: String,
    /// The model's prediction for it, one short phrase.
    pub prediction: String,
    /// Driver attributes.
    pub attrs: KernelAttrs,
    /// Launch shape used.
    pub shape: LaunchShape,
    /// Driver occupancy for that shape.
    pub occupancy: DriverOccupancy,
    /// The occupancy model's (hardware mode) resident blocks per SM for the same kernel and
    /// shape, `None` when the model has no data for this architecture.
    pub model_blocks: Option<u32>,
    /// The `memlab occupancy` command that replays `model_blocks` (see [`occupancy_command`];
    /// filled in when reading a run recorded before it existed).
    #[serde(default)]
    pub occupancy_command: String,
    /// Event timing.
    pub timing: Timing,
    /// Measured rate.
    pub rate: Rate,
    /// The work of one launch (absent from runs recorded before it existed).
    #[serde(default)]
    pub work: Work,
    /// Result check.
    pub check: Check,
    /// What the check compared ("exact", "sampled dot products", "checksums").
    pub check_kind: String,
}

/// A measured rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Rate {
    /// GB/s (1e9 bytes/s) of global memory, bytes read + written.
    Gbs(f64),
    /// GB/s (1e9 bytes/s) of shared-memory loads, all SMs together.
    SharedGbs(f64),
    /// TFLOP/s (1e12 FLOP/s).
    Tflops(f64),
}

impl Rate {
    /// The number, in the variant's unit.
    pub fn value(self) -> f64 {
        match self {
            Rate::Gbs(v) | Rate::SharedGbs(v) | Rate::Tflops(v) => v,
        }
    }
}

/// One demo's part of the report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Section {
    /// Demo name (one of [`NAMES`], or `roofline`, `race`).
    pub name: String,
    /// Title line.
    pub title: String,
    /// The lesson, one or two lines.
    pub lesson: String,
    /// Kernel rows.
    pub kernels: Vec<KernelRow>,
    /// A sweep table (probes): header and rows.
    pub sweep: Option<(Vec<String>, Vec<Vec<String>>)>,
    /// Checks of sweep points not listed in `kernels`.
    pub checks: Vec<Check>,
    /// Notes: what agrees with the model and what does not.
    pub notes: Vec<String>,
    /// Chart data (sweeps, roofline placement), read by `charts`.
    #[serde(default)]
    pub series: Vec<Series>,
}

impl Section {
    /// Whether every check in the section passed.
    pub fn passed(&self) -> bool {
        self.kernels.iter().map(|k| &k.check).chain(&self.checks).all(Check::passed)
    }
}

/// The work of one launch, which the measured time turns into a rate and the roofline places.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Work {
    /// Floating-point operations (an FMA counts 2).
    pub flop: f64,
    /// Bytes the kernel requests from `level`: global memory as the lesson's model counts it
    /// (caches may serve part of it), or shared-memory loads.
    pub bytes: f64,
    /// The memory level `bytes` come from.
    pub level: Level,
}

/// Memory level of a kernel's main traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Level {
    /// Global memory (DRAM through L2).
    #[default]
    Global,
    /// Global memory whose working set stays in L2.
    L2,
    /// On-chip shared memory.
    Shared,
    /// Registers and local memory (per-thread arrays, spills).
    Registers,
}

impl Work {
    /// Moving `bytes` through global memory, no arithmetic.
    pub fn global_bytes(bytes: f64) -> Work {
        Work { flop: 0.0, bytes, level: Level::Global }
    }

    /// The rate a launch of `timing` achieved: TFLOP/s when the kernel computes, else GB/s of
    /// its level.
    pub fn rate(&self, timing: &Timing) -> Rate {
        match self.level {
            _ if self.flop > 0.0 => Rate::Tflops(timing.tflops(self.flop)),
            Level::Global | Level::L2 | Level::Registers => Rate::Gbs(timing.gbs(self.bytes)),
            Level::Shared => Rate::SharedGbs(timing.gbs(self.bytes)),
        }
    }
}
