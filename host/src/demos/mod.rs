//! The demos: one module per memory lesson. Each owns its kernels' launch shapes (its `shapes`
//! module; the typed launches themselves are generated into [`crate::launches`]), allocates its
//! inputs, launches its kernels, checks every result against the CPU reference, asks the
//! driver for the kernels' figures, times them with events and returns a [`Section`] of the
//! report. A demo never runs another: what several need (the memcpy ceiling) is measured once
//! by its owner and passed in as [`Inputs`]. Every demo is registered in [`DEMOS`].

pub mod autotune;
pub mod banks;
pub mod clusters;
pub mod coalescing;
pub mod hierarchy;
pub mod host_memory;
pub mod l2;
pub mod matmul;
pub mod memcpy;
pub mod occupancy;
pub mod peer;
pub mod race;
pub mod roofline;
pub mod sanitizer;
pub mod sgemm;
pub mod tensor;
pub mod tma;
pub mod transpose;

use std::cell::RefCell;

use anyhow::Result;
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy};
use cust::module::Module;

use crate::gpu::Gpu;
use crate::gpu::kernel::{self, DriverOccupancy, KernelAttrs};
use crate::gpu::launch::{Launch, LaunchShape};
use crate::gpu::memory;
use crate::gpu::tensor_map::{MapSlot, TensorMaps, TiledSpec};
use crate::gpu::timing::{self, Repeats, Timing};
use crate::model::occupancy::{ArchLimits, KernelResources, Mode, occupancy};
use crate::phases::{Kind, Phases};
use crate::refuse;
use crate::series::Series;
use crate::verify::Check;
use serde::{Deserialize, Serialize};

/// One demo: its name (for `--only`), what it needs, and its entry point.
pub struct Demo {
    /// Name on the command line and in the report.
    pub name: &'static str,
    /// Runs the demo.
    pub run: fn(&Lab, &Inputs) -> Result<Section>,
    /// Whether it reads the memcpy ceiling (the runner measures it first when so).
    pub uses_memcpy: bool,
    /// Whether its timed kernels have CUDA C++ twins in `bench/twins.cu` (`memlab bench` runs
    /// these demos).
    pub twins: bool,
    /// Host bytes it holds at its peak for the run's sizes: its pinned staging and what its CPU
    /// references keep. Checked before any work ([`crate::host_ram`]).
    pub host_bytes: fn(&Sizes) -> usize,
}

/// Every demo of `run-demos`, in the order it runs them. The race lesson has its own command.
pub const DEMOS: [Demo; 12] = [
    Demo { name: "memcpy", run: memcpy::run, uses_memcpy: true, twins: true, host_bytes: transpose_host_bytes },
    Demo { name: "transpose", run: transpose::run, uses_memcpy: false, twins: true, host_bytes: transpose_host_bytes },
    Demo { name: "matmul", run: matmul::run, uses_memcpy: false, twins: true, host_bytes: matmul_host_bytes },
    Demo { name: "sgemm", run: sgemm::run, uses_memcpy: false, twins: true, host_bytes: sgemm_host_bytes },
    Demo { name: "tensor", run: tensor::run, uses_memcpy: false, twins: true, host_bytes: tensor_host_bytes },
    Demo {
        name: "coalescing",
        run: coalescing::run,
        uses_memcpy: false,
        twins: true,
        host_bytes: coalescing_host_bytes,
    },
    Demo { name: "banks", run: banks::run, uses_memcpy: false, twins: true, host_bytes: no_host_bytes },
    Demo { name: "occupancy", run: occupancy::run, uses_memcpy: false, twins: true, host_bytes: no_host_bytes },
    Demo { name: "hierarchy", run: hierarchy::run, uses_memcpy: true, twins: false, host_bytes: hierarchy_host_bytes },
    Demo { name: "clusters", run: clusters::run, uses_memcpy: false, twins: true, host_bytes: no_host_bytes },
    Demo { name: "l2", run: l2::run, uses_memcpy: false, twins: true, host_bytes: no_host_bytes },
    Demo { name: "tma", run: tma::run, uses_memcpy: true, twins: true, host_bytes: tma_host_bytes },
];

/// Names of the demos, in the order `run-demos` runs them.
pub const NAMES: [&str; DEMOS.len()] = {
    let mut names = [""; DEMOS.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = DEMOS[i].name;
        i += 1;
    }
    names
};

/// The demo called `name`.
///
/// # Errors
/// A refusal listing the demos.
pub fn find(name: &str) -> Result<&'static Demo> {
    match DEMOS.iter().find(|d| d.name == name) {
        Some(d) => Ok(d),
        None => refuse!("unknown demo `{name}`: choose from {}", NAMES.join(", ")),
    }
}

/// What demos receive from measurements they do not own.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// The memcpy ceiling, measured by [`memcpy::measure`] once per run (absent when no demo
    /// of the run reads it).
    pub memcpy: Option<memcpy::Measured>,
    /// The memcpy ceiling at each size of [`Sizes::sweep`], in order (empty without a sweep or
    /// without the transpose demo, the one that reads it).
    pub memcpy_sweep: Vec<memcpy::Measured>,
}

impl Inputs {
    /// The memcpy bandwidth, GB/s, when measured and its copy checked.
    pub fn memcpy_gbs(&self) -> Option<f64> {
        self.memcpy.as_ref().and_then(memcpy::Measured::gbs)
    }
}

/// Runs `demos` in order on `lab`, after measuring the memcpy ceiling once if any of them reads
/// it. Returns the inputs the demos received and their sections; `progress(demo, done)` is
/// called before (`false`) and after (`true`) every demo.
///
/// # Errors
/// The first demo's refusal.
pub fn run_all(lab: &Lab, demos: &[&Demo], mut progress: impl FnMut(&Demo, bool)) -> Result<(Inputs, Vec<Section>)> {
    let ceiling = || lab.phases.demo("memcpy ceiling", || memcpy::measure(lab));
    let memcpy = demos.iter().any(|d| d.uses_memcpy).then(ceiling).transpose()?;
    let sweeps = demos.iter().any(|d| d.name == "transpose");
    let memcpy_sweep = match sweeps && !lab.sizes.sweep.is_empty() {
        true => lab.phases.demo("memcpy sweep", || {
            lab.sizes.sweep.iter().map(|&s| memcpy::measure_at(lab, s)).collect::<Result<Vec<_>>>()
        })?,
        false => Vec::new(),
    };
    let inputs = Inputs { memcpy, memcpy_sweep };
    let mut sections = Vec::with_capacity(demos.len());
    for demo in demos {
        progress(demo, false);
        sections.push(lab.phases.demo(demo.name, || (demo.run)(lab, &inputs))?);
        progress(demo, true);
    }
    Ok((inputs, sections))
}

/// Problem sizes and repeat counts of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizes {
    /// Transpose and copy matrix, `(rows, cols)`.
    pub transpose: (usize, usize),
    /// Matrices `(rows, cols)` the transpose demo also sweeps copy and the transposes over
    /// (`run-demos --sizes`; empty: no sweep).
    pub sweep: Vec<(usize, usize)>,
    /// Matmul shape `(m, n, k)` for the tiled kernels.
    pub matmul: (usize, usize, usize),
    /// Matmul shape for the naive kernel (slow at large sizes).
    pub matmul_naive: (usize, usize, usize),
    /// SGEMM ladder shapes `(m, n, k)`, each timed next to cuBLAS.
    pub sgemm: Vec<(usize, usize, usize)>,
    /// Tensor-core ladder shapes `(m, n, k)`, each timed next to cuBLAS BF16.
    pub tensor: Vec<(usize, usize, usize)>,
    /// Bytes spanned by the strided-read buffer (the coalescing demo).
    pub strided_bytes: usize,
    /// Bytes of the hierarchy's DRAM read, a buffer far larger than L2 (a multiple of 16).
    pub dram_bytes: usize,
    /// Shared-memory loads per thread in the bank probe (a multiple of 8).
    pub bank_iters: usize,
    /// 16-byte reads per thread of `cluster_shared_read` (a multiple of 8; the clusters demo
    /// and the hierarchy's distributed-shared-memory row).
    pub cluster_reads: u32,
    /// Blocks per cluster the clusters demo sweeps (each 1 to 16).
    pub cluster_sizes: Vec<u32>,
    /// Bytes of the L2 lesson's streamed buffer (a multiple of 16), read once amid the hot one.
    pub l2_stream_bytes: usize,
    /// Bytes of the L2 lesson's bandwidth read (a multiple of 16); `None`: a quarter of the L2.
    pub l2_read_bytes: Option<usize>,
    /// SMs the L2 partition probe times (the first SM numbers); `None`: every SM.
    pub l2_partition_sms: Option<u32>,
    /// Warm-up and timed runs per kernel.
    pub repeats: Repeats,
    /// A compute-sanitizer run: fixed footprints shrink to a few blocks ([`sanitizer`]).
    pub sanitizer: bool,
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes {
            transpose: (8192, 8192),
            sweep: Vec::new(),
            matmul: (4096, 4096, 4096),
            matmul_naive: (4096, 4096, 4096),
            sgemm: vec![(4096, 4096, 4096), (8192, 8192, 8192)],
            tensor: vec![(4096, 4096, 4096), (8192, 8192, 8192)],
            strided_bytes: 1 << 30,
            dram_bytes: 1 << 30,
            bank_iters: 16384,
            cluster_reads: clusters::READ_ITERS,
            cluster_sizes: memlab_contracts::clusters::CLUSTER_SIZES.to_vec(),
            l2_stream_bytes: 1 << 30,
            l2_read_bytes: None,
            l2_partition_sms: None,
            repeats: Repeats { warmup: 3, runs: 20 },
            sanitizer: false,
        }
    }
}

/// The state every demo shares: the open device, the sizes, and (for `memlab bench`) the CUDA
/// C++ twins every measured kernel is compared with.
pub struct Lab {
    /// The device and its loaded module.
    pub gpu: Gpu,
    /// Sizes of this run.
    pub sizes: Sizes,
    /// The twins, when this run compares each kernel with its CUDA C++ twin.
    pub twins: Option<Twins>,
    /// Where the run's wall time goes, per demo.
    pub phases: Phases,
    /// The tensor maps placed in the modules' constant memory (the TMA lesson).
    pub tma_maps: TensorMaps,
    /// Every launch [`measure`] checked, in order: what `--counters` matches the profiled
    /// launches against.
    pub measured: RefCell<Vec<Measured>>,
}

/// One kernel [`measure`] checked: its checked launch is the one a profiler sees.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
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
    pub fn new(gpu: Gpu, sizes: Sizes) -> Lab {
        let (phases, tma_maps, measured) = Default::default();
        Lab { gpu, sizes, twins: None, phases, tma_maps, measured }
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

/// Host bytes of pinned staging for the transpose-shaped matrices of `sizes`: the copy and
/// transpose demos' peak.
fn transpose_host_bytes(sizes: &Sizes) -> usize {
    sizes.sweep.iter().chain([&sizes.transpose]).map(|&s| transpose::host_bytes(s)).max().unwrap_or(0)
}

fn matmul_host_bytes(sizes: &Sizes) -> usize {
    matmul::host_bytes(sizes.matmul).max(matmul::host_bytes(sizes.matmul_naive))
}

fn sgemm_host_bytes(sizes: &Sizes) -> usize {
    sizes.sgemm.iter().map(|&s| matmul::host_bytes(s)).max().unwrap_or(0)
}

fn tensor_host_bytes(sizes: &Sizes) -> usize {
    sizes.tensor.iter().map(|&s| tensor::host_bytes(s)).max().unwrap_or(0)
}

/// The input (the copies' expected output), the staging of every checked output, and SGEMM
/// rungs 6 and 7's operands (at the first SGEMM size) beside it.
fn tma_host_bytes(sizes: &Sizes) -> usize {
    f32_bytes(&[sizes.transpose.0 * sizes.transpose.1])
        + transpose::host_bytes(sizes.transpose)
        + sizes.sgemm.first().map_or(0, |&s| matmul::host_bytes(s))
}

fn coalescing_host_bytes(sizes: &Sizes) -> usize {
    transpose::host_bytes((sizes.strided_bytes / 4, 1))
}

/// The host <-> device copies: one pageable and one pinned buffer; the DRAM read and the TMA
/// path go through staging.
fn hierarchy_host_bytes(sizes: &Sizes) -> usize {
    (2 * hierarchy::Options::default().transfer_bytes).max(transpose::host_bytes((sizes.dram_bytes / 4, 1)))
}

/// For demos whose host buffers are small and fixed.
fn no_host_bytes(_: &Sizes) -> usize {
    0
}

/// Refuses when `bytes` more device memory would not fit in what the device has free.
pub fn ensure_free(what: &str, bytes: usize) -> Result<()> {
    let (free, total) = memory::free_and_total()?;
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

/// Sets every byte of a buffer to 0xFF (a NaN for f32 and for BF16), so that an output element
/// a kernel fails to write never passes a check.
pub fn poison<T: DeviceCopy + bytemuck::Pod>(buf: &DeviceBuffer<T>) -> Result<()> {
    match std::mem::size_of::<T>() % 4 {
        0 => memory::fill_words(buf, u32::MAX),
        _ => memory::fill_bytes(buf, u8::MAX),
    }
}

/// A new poisoned device buffer of `n` elements (see [`poison`]).
pub fn poisoned<T: DeviceCopy + bytemuck::Pod>(n: usize) -> Result<DeviceBuffer<T>> {
    // SAFETY: every word is written by poison() before any read.
    let buf = unsafe { DeviceBuffer::<T>::uninitialized(n) }
        .map_err(|e| anyhow::anyhow!("alloc: {}", crate::gpu::describe(e)))?;
    poison(&buf)?;
    Ok(buf)
}

/// Copies a device buffer back to the host.
pub fn download<T: DeviceCopy + Default + Clone>(buf: &DeviceBuffer<T>) -> Result<Vec<T>> {
    download_first(buf, buf.len())
}

/// The first `len` elements of `buf` (those a launch wrote, when it wrote fewer than the buffer
/// holds: no copy of the rest).
///
/// # Panics
/// When `len` exceeds `buf.len()`.
///
/// # Errors
/// A failed copy.
pub fn download_first<T: DeviceCopy + Default + Clone>(buf: &DeviceBuffer<T>, len: usize) -> Result<Vec<T>> {
    let mut host = vec![T::default(); len];
    buf.index(..len).copy_to(&mut host[..]).map_err(|e| anyhow::anyhow!("download: {}", crate::gpu::describe(e)))?;
    Ok(host)
}

/// The first `len` 32-bit words of `buf` (`f32` or `u32`) compared bit for bit with `want(i)`
/// as they arrive through `staging`, chunk by chunk on every core: no host copy of the whole
/// output, and no page faults on a fresh one per check. A `T` of another size fails to compile.
///
/// # Panics
/// When `len` exceeds `buf.len()`.
///
/// # Errors
/// A driver failure.
pub fn check_staged<T: DeviceCopy + bytemuck::Pod + Default + Sync>(
    gpu: &Gpu,
    staging: &mut crate::gpu::staging::Staging<T>,
    buf: &DeviceBuffer<T>,
    len: usize,
    want: impl Fn(usize) -> T + Sync,
) -> Result<Check> {
    const { assert!(std::mem::size_of::<T>() == 4, "check_staged compares 32-bit words") };
    let mut check = crate::verify::Streamed::new();
    staging.download_first(gpu, buf, len, |_, chunk| {
        check.chunk(bytemuck::cast_slice(chunk), |i| bytemuck::cast::<T, u32>(want(i)))
    })?;
    Ok(check.finish())
}

/// [`check_staged`] of a whole `f32` output that must be bit for bit one already checked in full
/// against the same `want` (`passed`): every element is compared as it arrives, without the
/// digest (a serial FNV chain per block). When every element matches, the words are
/// those `passed` hashed, so its check is this one's; any mismatch (or a `passed` that did not
/// pass) runs the full check for the digest and the first mismatch.
///
/// # Errors
/// A driver failure.
pub fn recheck_exact_staged(
    gpu: &Gpu,
    staging: &mut crate::gpu::staging::Staging<f32>,
    output: &DeviceBuffer<f32>,
    want: impl Fn(usize) -> f32 + Sync,
    passed: &Check,
) -> Result<Check> {
    if passed.passed() && passed.checked == output.len() {
        let mut bad = 0;
        staging.download(gpu, output, |offset, chunk| bad += crate::verify::mismatches_f32(chunk, offset, &want))?;
        if bad == 0 {
            return Ok(passed.clone());
        }
    }
    check_staged(gpu, staging, output, output.len(), want)
}

/// Resident blocks per SM by the occupancy model in hardware mode.
pub fn model_blocks(cc: (u32, u32), attrs: &KernelAttrs, shape: &LaunchShape) -> Option<u32> {
    let arch = ArchLimits::for_cc(cc.0, cc.1)?;
    let res = KernelResources::new(shape.threads_per_block(), attrs.regs)
        .with_static_smem(attrs.static_smem)
        .with_dynamic_smem(shape.smem_bytes)
        // `measure` opts in whenever a launch needs more than 48 KiB.
        .with_opt_in(true);
    occupancy(arch, &res, Mode::Hardware).ok().map(|o| o.active_blocks)
}

/// The `memlab occupancy` command line that computes [`model_blocks`] for the same kernel
/// figures and shape: the driver's registers, the block's threads, its static plus dynamic
/// shared bytes (the hardware rules are the command's default for `--cc`).
pub fn occupancy_command(cc: (u32, u32), attrs: &KernelAttrs, shape: &LaunchShape) -> String {
    let bytes = attrs.static_smem + shape.smem_bytes;
    let smem = if bytes > 0 { format!(" --smem {bytes}B") } else { String::new() };
    // Above the default per-block limit the kernel opted in (the launch does, `gpu::launch`).
    let default = crate::model::occupancy::ArchLimits::for_cc(cc.0, cc.1).map(|a| a.smem_per_block_default);
    let opt_in = if default.is_some_and(|d| bytes > d) { " --opt-in" } else { "" };
    format!(
        "memlab occupancy --cc {}.{} --threads {} --regs {}{smem}{opt_in}",
        cc.0,
        cc.1,
        shape.threads_per_block(),
        attrs.regs
    )
}

/// What [`measure`] needs to know about one kernel launch.
pub struct KernelRun<'a> {
    /// The typed launch: entry, shape, arguments.
    pub launch: Launch,
    /// One-line lesson.
    pub lesson: &'static str,
    /// Model prediction.
    pub prediction: String,
    /// The work one launch does.
    pub work: Work,
    /// The problem size, as a table names it (`8192x8192`, `stride 4`).
    pub size: String,
    /// Resets the kernel's output before each checked launch (poisons it), so a launch that
    /// writes nothing never passes on an earlier result.
    pub reset: &'a dyn Fn() -> Result<()>,
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

/// The path every timed kernel takes: resets and launches it once, lets `check` read its output,
/// then times it and asks the driver for its attributes and occupancy. With twins
/// ([`Lab::twins`]), the twin of the same name is reset, launched and checked the same way, and
/// the two are timed alternately ([`timing::alternate`]); the comparison goes to the twins'
/// rows and the Rust timing to the returned row.
///
/// # Errors
/// A refusal for a launch the device rejects or a kernel that faults.
pub fn measure(lab: &Lab, run: KernelRun<'_>, check: impl Fn() -> Result<(Check, &'static str)>) -> Result<KernelRow> {
    measure_then(lab, run, None, check)
}

/// [`measure`] for a kernel that needs a second launch after it to finish its result (the
/// split-K SGEMM's reduce): `then` is enqueued after `run.launch` in every checked and timed
/// run, the time is that of both, and the row describes `run.launch`'s kernel. Against the
/// twins, both twins run; a missing twin of either counts as missing.
///
/// # Errors
/// As for [`measure`].
pub fn measure_then(
    lab: &Lab,
    run: KernelRun<'_>,
    then: Option<&Launch>,
    check: impl Fn() -> Result<(Check, &'static str)>,
) -> Result<KernelRow> {
    let gpu = &lab.gpu;
    let launch = &run.launch;
    let (name, shape) = (launch.kernel, launch.shape);
    if shape.smem_bytes > gpu.info.smem_per_block {
        kernel::allow_dynamic_smem(gpu, name, shape.smem_bytes)?;
    }
    let sync = || -> Result<()> {
        match gpu.stream.synchronize() {
            Ok(()) => Ok(()),
            Err(e) => refuse!("kernel `{name}` failed: {}", crate::gpu::describe(e)),
        }
    };
    let rust = || -> Result<()> {
        launch.enqueue(gpu)?;
        then.map_or(Ok(()), |t| t.enqueue(gpu))
    };
    (run.reset)()?;
    // The checked launch is the one `--counters` profiles (ncu `--profile-from-start off`);
    // a second launch that finishes the result (the split-K reduce) runs outside the range, so
    // each profiled launch is one row's kernel.
    crate::gpu::profiler::range(|| {
        launch.enqueue(gpu)?;
        sync()
    })?;
    if let Some(t) = then {
        t.enqueue(gpu)?;
        sync()?;
    }
    let check = || lab.phases.time(Kind::Checks, &check);
    let (checked, check_kind) = check()?;
    let attrs = kernel::attributes(gpu, name)?;
    let twin = lab.twins.as_ref().map(|t| {
        let second = then.map(|l| t.module.get_function(l.kernel)).transpose();
        (t, t.module.get_function(name).and_then(|f| Ok((f, second?))))
    });
    let timing = match twin {
        Some((twins, Ok((f, f_then)))) => {
            let twin_run = || -> Result<()> {
                launch.enqueue_function(gpu, &f)?;
                match (then, &f_then) {
                    (Some(t), Some(g)) => t.enqueue_function(gpu, g),
                    _ => Ok(()),
                }
            };
            if shape.smem_bytes > gpu.info.smem_per_block {
                kernel::allow_dynamic_smem_of(&f, name, shape.smem_bytes, gpu.info.smem_per_block_optin)?;
            }
            (run.reset)()?;
            twin_run()?;
            sync()?;
            let (twin_check, _) = check()?;
            let (rust, twin_t) =
                lab.phases.time(Kind::Timed, || timing::alternate(gpu, twins.rounds, rust, twin_run))?;
            twins.rows.borrow_mut().push(TwinRow {
                kernel: name.to_string(),
                size: run.size.clone(),
                regs: (attrs.regs, kernel::attributes_of(&f)?.regs),
                timing: (rust.clone(), twin_t),
                work: run.work,
                checks: (checked.clone(), twin_check),
                check_kind: check_kind.to_string(),
            });
            rust
        }
        other => {
            if let Some((twins, Err(_))) = other {
                let mut missing = twins.missing.borrow_mut();
                if !missing.iter().any(|m| m == name) {
                    missing.push(name.to_string());
                }
            }
            lab.phases.time(Kind::Timed, || timing::time(gpu, lab.sizes.repeats, rust))?
        }
    };
    let occupancy = kernel::occupancy(gpu, name, shape.threads_per_block(), shape.smem_bytes)?;
    lab.measured.borrow_mut().push(Measured { kernel: name.to_string(), size: run.size.clone(), shape, occupancy });
    Ok(KernelRow {
        kernel: name.to_string(),
        size: run.size.clone(),
        lesson: run.lesson.to_string(),
        prediction: run.prediction,
        attrs,
        occupancy,
        model_blocks: model_blocks(gpu.info.cc, &attrs, &shape),
        shape,
        occupancy_command: occupancy_command(gpu.info.cc, &attrs, &shape),
        rate: run.work.rate(&timing),
        work: run.work,
        timing,
        check: checked,
        check_kind: check_kind.to_string(),
    })
}

/// One field of the recorded H200 run (`docs/report/run.json`), for the demos' unit tests,
/// which check their notes against real rows.
#[cfg(test)]
fn recorded<T: serde::de::DeserializeOwned>(field: &str) -> T {
    let run: serde_json::Value = serde_json::from_str(include_str!("../../../docs/report/run.json")).unwrap();
    serde_json::from_value(run[field].clone()).unwrap_or_else(|e| panic!("run.json's {field}: {e}"))
}
