//! The measurement core every lesson stands on: the [`Lab`] (the device, the run's settings,
//! the CUDA C++ twins), what a lesson is ([`Lesson`]), what lessons receive from each other
//! ([`Inputs`]), the one path every timed kernel takes ([`measure`]), device buffers and
//! their checks ([`buffers`]), the report's rows ([`rows`]) and figures ([`figure`]), and the footprints of a
//! compute-sanitizer run ([`sanitizer`]). Nothing here names a lesson or a kernel.

pub mod buffers;
pub mod figure;
pub mod inputs;
pub mod lesson;
pub mod measure;
pub mod rows;
pub mod sanitizer;
pub mod sizes;

use std::cell::RefCell;

use anyhow::Result;
use cust::module::Module;

pub use buffers::{
    check_free, check_staged, check_u32_elements, download, download_first, ensure_free, f32_bytes, full_gpu, poison,
    poisoned, recheck_exact_staged, staging_bytes, upload,
};
pub use figure::{Figure, Picture, Run};
pub use inputs::{Ceiling, Inputs, Shared};
pub use lesson::{Entry, Lesson, Needs, NoOptions, OptionsFor};
pub use measure::{KernelRun, measure, measure_then, model_blocks, occupancy_command};
pub use rows::{KernelRow, Level, Rate, Section, Work};
pub use sizes::{GEMM_COUNT_SIZE, ODD_GEMM_SIZES};

use crate::gpu::Gpu;
use crate::gpu::kernel::DriverOccupancy;
use crate::gpu::launch::LaunchShape;
use crate::gpu::tensor_map::{MapSlot, TensorMaps, TiledSpec};
use crate::gpu::timing::{Repeats, Timing};
use crate::phases::Phases;
use crate::verify::Check;

/// What every lesson of a run is measured with: the timed and warm-up runs, and whether this is
/// a compute-sanitizer run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Warm-up and timed runs per kernel.
    pub repeats: Repeats,
    /// A compute-sanitizer run: fixed footprints shrink to a few blocks ([`sanitizer`]).
    pub sanitizer: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { repeats: Repeats { warmup: 3, runs: 20 }, sanitizer: false }
    }
}

/// The state every lesson shares: the open device, the run's settings, and (for `memlab bench`)
/// the CUDA C++ twins every measured kernel is compared with.
pub struct Lab {
    /// The device and its loaded module.
    pub gpu: Gpu,
    /// This run's settings.
    pub settings: Settings,
    /// The twins, when this run compares each kernel with its CUDA C++ twin.
    pub twins: Option<Twins>,
    /// Where the run's wall time goes, per demo.
    pub phases: Phases,
    /// The tensor maps placed in the modules' constant memory (the TMA lesson).
    pub tma_maps: TensorMaps,
    /// Every launch [`measure`] checked, in order: what `--counters` matches the profiled
    /// launches against.
    pub measured: RefCell<Vec<MeasuredLaunch>>,
}

/// One kernel [`measure`] checked: its checked launch is the one a profiler sees.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredLaunch {
    /// Kernel entry point.
    pub kernel: String,
    /// The problem size, as the demo names it.
    pub size: String,
    /// Launch shape.
    pub shape: LaunchShape,
    /// Driver occupancy for that shape.
    pub occupancy: DriverOccupancy,
}

impl Lab {
    /// A lab without twins.
    pub fn new(gpu: Gpu, settings: Settings) -> Lab {
        let (phases, tma_maps, measured) = Default::default();
        Lab { gpu, settings, twins: None, phases, tma_maps, measured }
    }

    /// The slot of the tensor map `spec` describes, placed in the lab's module and the twins'.
    ///
    /// # Errors
    /// As for [`TiledSpec::encode`] and [`TensorMaps::place`].
    pub fn place_map(&self, spec: &TiledSpec) -> Result<MapSlot> {
        let map = spec.encode()?;
        let modules = [Some(&self.gpu.module), self.gpu.loaded_tensor_module(), self.twins.as_ref().map(|t| &t.module)];
        self.tma_maps.place(map, &modules.into_iter().flatten().collect::<Vec<_>>())
    }
}

/// The CUDA C++ twins of `memlab bench` (a module built by nvcc from `bench/twins.cu`) and the
/// comparisons [`measure`] made with them.
pub struct Twins {
    /// The twins' module, loaded in the lab's context.
    pub module: Module,
    /// Alternating rounds per kernel.
    pub rounds: usize,
    /// One comparison per measured kernel and size, in run order.
    pub rows: RefCell<Vec<TwinRow>>,
    /// Kernels measured that have no twin in the module, each once.
    pub missing: RefCell<Vec<String>>,
}

/// One kernel against its CUDA C++ twin: same launch shape and arguments, timed alternately.
#[derive(Debug, Clone)]
pub struct TwinRow {
    /// Kernel entry point (the twin has the same name).
    pub kernel: String,
    /// Problem size, as the demo names it.
    pub size: String,
    /// Registers per thread: Rust, twin.
    pub regs: (u32, u32),
    /// Medians of the alternating rounds: Rust, twin.
    pub timing: (Timing, Timing),
    /// The work of one launch (the same for both).
    pub work: Work,
    /// Both results checked: Rust, twin.
    pub checks: (Check, Check),
    /// What the checks compared.
    pub check_kind: String,
}
