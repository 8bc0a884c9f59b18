//! The demos: one module per memory lesson. Each allocates its inputs, launches its kernels,
//! checks every result against the CPU reference, asks the driver for the kernels' figures,
//! times them with events and returns a [`Section`] of the report.

pub mod banks;
pub mod coalescing;
pub mod hierarchy;
pub mod host_memory;
pub mod matmul;
pub mod memcpy;
pub mod occupancy;
pub mod peer;
pub mod race;
pub mod roofline;
pub mod sgemm;
pub mod transpose;

use anyhow::Result;
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy};

use crate::gpu::Gpu;
use crate::gpu::kernel::{self, DriverOccupancy, KernelAttrs};
use crate::gpu::launch::{Arg, LaunchShape, launch};
use crate::gpu::timing::{self, Repeats, Timing};
use crate::model::occupancy::{ArchLimits, KernelResources, Mode, occupancy};
use crate::refuse;
use crate::series::Series;
use crate::verify::Check;
use serde::{Deserialize, Serialize};

/// Names of the demos, in the order `run-demos` runs them.
pub const NAMES: [&str; 8] =
    ["memcpy", "transpose", "matmul", "sgemm", "coalescing", "banks", "occupancy", "hierarchy"];

/// Problem sizes and repeat counts of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizes {
    /// Transpose and copy matrix, `(rows, cols)`.
    pub transpose: (usize, usize),
    /// Matmul shape `(m, n, k)` for the tiled kernels.
    pub matmul: (usize, usize, usize),
    /// Matmul shape for the naive kernel (slow at large sizes).
    pub matmul_naive: (usize, usize, usize),
    /// SGEMM ladder shapes `(m, n, k)`, each timed next to cuBLAS.
    pub sgemm: Vec<(usize, usize, usize)>,
    /// Bytes spanned by the strided-read buffer.
    pub strided_bytes: usize,
    /// Shared-memory loads per thread in the bank probe (a multiple of 8).
    pub bank_iters: usize,
    /// Warm-up and timed runs per kernel.
    pub repeats: Repeats,
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes {
            transpose: (8192, 8192),
            matmul: (4096, 4096, 4096),
            matmul_naive: (4096, 4096, 4096),
            sgemm: vec![(4096, 4096, 4096), (8192, 8192, 8192)],
            strided_bytes: 1 << 30,
            bank_iters: 16384,
            repeats: Repeats { warmup: 3, runs: 20 },
        }
    }
}

/// The state every demo shares: the open device, the sizes, and the bandwidth ceiling once the
/// memcpy demo has measured it.
pub struct Lab {
    /// The device and its loaded module.
    pub gpu: Gpu,
    /// Sizes of this run.
    pub sizes: Sizes,
    /// Device-to-device memcpy bandwidth measured in this run, GB/s (read + write bytes).
    pub memcpy_gbs: Option<f64>,
}

/// One kernel's line in the report: the driver's figures, the measurement and the check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelRow {
    /// Kernel entry point.
    pub kernel: &'static str,
    /// What it teaches, one line.
    pub lesson: &'static str,
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
    pub check_kind: &'static str,
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
    /// Demo name (one of [`NAMES`]).
    pub name: &'static str,
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

/// Runs the named demo.
pub fn run(lab: &mut Lab, name: &str) -> Result<Section> {
    match name {
        "memcpy" => memcpy::run(lab),
        "transpose" => transpose::run(lab),
        "matmul" => matmul::run(lab),
        "sgemm" => sgemm::run(lab),
        "coalescing" => coalescing::run(lab),
        "banks" => banks::run(lab),
        "occupancy" => occupancy::run(lab),
        "hierarchy" => hierarchy::run(lab),
        other => refuse!("unknown demo `{other}`: choose from {}", NAMES.join(", ")),
    }
}

/// Refuses when `bytes` more device memory would not fit in what the device has free.
pub fn ensure_free(what: &str, bytes: usize) -> Result<()> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: cuMemGetInfo writes two sizes for the current context.
    let r = unsafe { cust::sys::cuMemGetInfo_v2(&mut free, &mut total) };
    if r != cust::sys::cudaError_enum::CUDA_SUCCESS {
        refuse!("cannot read free device memory: {r:?}");
    }
    check_free(what, bytes, free, total)
}

/// The refusal of [`ensure_free`], given the device's free and total bytes.
pub fn check_free(what: &str, bytes: usize, free: usize, total: usize) -> Result<()> {
    if bytes > free {
        refuse!(
            "{what} needs {:.2} GiB of device memory, but only {:.2} GiB of {:.2} GiB is free: choose smaller sizes",
            gib(bytes),
            gib(free),
            gib(total)
        );
    }
    Ok(())
}

/// Bytes of buffers of 4-byte elements with the given element counts, saturating at
/// `usize::MAX` (which no device has free), so absurd sizes reach the free-memory refusal
/// instead of wrapping around.
pub fn f32_bytes(counts: &[usize]) -> usize {
    counts.iter().fold(0usize, |sum, &n| sum.saturating_add(n.saturating_mul(4)))
}

fn gib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Refuses matrices the 32-bit-indexed kernels cannot address: every count (elements of one
/// matrix) must fit in a `u32`.
pub fn check_u32_elements(what: &str, counts: &[usize]) -> Result<()> {
    if let Some(&n) = counts.iter().find(|&&n| n > u32::MAX as usize) {
        refuse!(
            "{what}: a matrix of {n} elements is too large, the kernels index in 32 bits (at most {} elements)",
            u32::MAX
        );
    }
    Ok(())
}

/// Blocks and threads that fill every SM with blocks of `block` threads
/// (`SMs x max threads per SM / block` blocks).
pub fn full_gpu(info: &crate::gpu::device::DeviceInfo, block: u32) -> (u32, usize) {
    let blocks = info.sms * (info.max_threads_per_sm / block);
    (blocks, blocks as usize * block as usize)
}

/// Copies `data` to a new device buffer.
pub fn upload<T: DeviceCopy>(data: &[T]) -> Result<DeviceBuffer<T>> {
    DeviceBuffer::from_slice(data).map_err(|e| anyhow::anyhow!("upload: {}", crate::gpu::describe(e)))
}

/// Sets every byte of a buffer of 32-bit words to 0xFF (a NaN for f32), so that an output
/// element a kernel fails to write never passes a check.
pub fn poison<T: DeviceCopy + bytemuck::Pod>(buf: &mut DeviceBuffer<T>) -> Result<()> {
    assert_eq!(std::mem::size_of::<T>(), 4, "poison() is for 32-bit elements");
    buf.set_32(u32::MAX).map_err(|e| anyhow::anyhow!("memset: {}", crate::gpu::describe(e)))
}

/// A new poisoned device buffer of `n` 32-bit words (see [`poison`]).
pub fn poisoned<T: DeviceCopy + bytemuck::Pod>(n: usize) -> Result<DeviceBuffer<T>> {
    // SAFETY: every word is written by poison() before any read.
    let mut buf = unsafe { DeviceBuffer::<T>::uninitialized(n) }
        .map_err(|e| anyhow::anyhow!("alloc: {}", crate::gpu::describe(e)))?;
    poison(&mut buf)?;
    Ok(buf)
}

/// Copies a device buffer back to the host.
pub fn download<T: DeviceCopy + Default + Clone>(buf: &DeviceBuffer<T>) -> Result<Vec<T>> {
    let mut host = vec![T::default(); buf.len()];
    buf.copy_to(&mut host[..]).map_err(|e| anyhow::anyhow!("download: {}", crate::gpu::describe(e)))?;
    Ok(host)
}

/// Resident blocks per SM by the occupancy model in hardware mode.
pub fn model_blocks(cc: (u32, u32), attrs: &KernelAttrs, shape: &LaunchShape) -> Option<u32> {
    let arch = ArchLimits::for_cc(cc.0, cc.1)?;
    let res = KernelResources::new(shape.threads_per_block(), attrs.regs)
        .with_static_smem(attrs.static_smem)
        .with_dynamic_smem(shape.smem_bytes);
    occupancy(arch, &res, Mode::Hardware).ok().map(|o| o.active_blocks)
}

/// What [`measure`] needs to know about one kernel.
pub struct KernelRun<'a> {
    /// Entry point.
    pub kernel: &'static str,
    /// One-line lesson.
    pub lesson: &'static str,
    /// Model prediction.
    pub prediction: String,
    /// Launch shape.
    pub shape: LaunchShape,
    /// Parameters.
    pub args: &'a [Arg],
    /// The work one launch does.
    pub work: Work,
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

/// Launches a kernel once, lets `check` read its output, then times it and asks the driver for
/// its attributes and occupancy.
pub fn measure(
    lab: &Lab,
    run: KernelRun<'_>,
    check: impl FnOnce() -> Result<(Check, &'static str)>,
) -> Result<KernelRow> {
    let gpu = &lab.gpu;
    if run.shape.smem_bytes > gpu.info.smem_per_block {
        kernel::allow_dynamic_smem(gpu, run.kernel, run.shape.smem_bytes)?;
    }
    launch(gpu, run.kernel, &run.shape, run.args)?;
    if let Err(e) = gpu.stream.synchronize() {
        refuse!("kernel `{}` failed: {}", run.kernel, crate::gpu::describe(e));
    }
    let (check, check_kind) = check()?;
    let timing = timing::time(gpu, lab.sizes.repeats, || launch(gpu, run.kernel, &run.shape, run.args))?;
    let attrs = kernel::attributes(gpu, run.kernel)?;
    Ok(KernelRow {
        kernel: run.kernel,
        lesson: run.lesson,
        prediction: run.prediction,
        attrs,
        occupancy: kernel::occupancy(gpu, run.kernel, run.shape.threads_per_block(), run.shape.smem_bytes)?,
        model_blocks: model_blocks(gpu.info.cc, &attrs, &run.shape),
        shape: run.shape,
        rate: run.work.rate(&timing),
        work: run.work,
        timing,
        check,
        check_kind,
    })
}
