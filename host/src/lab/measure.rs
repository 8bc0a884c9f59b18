//! The path every timed kernel takes: reset, one checked launch (the one a profiler sees), the
//! check, then the timing, alone or alternating with its CUDA C++ twin, and the driver's
//! figures beside the occupancy model's.

use anyhow::Result;

use super::rows::{KernelRow, Work};
use super::{Lab, MeasuredLaunch, TwinRow, Twins};
use crate::gpu::kernel::{self, KernelAttrs};
use crate::gpu::launch::{Launch, LaunchShape};
use crate::gpu::timing::{self, Timing};
use crate::model::occupancy::{ArchLimits, KernelResources, Mode, occupancy};
use crate::phases::Kind;
use crate::refuse;
use crate::verify::Check;
use cust::function::Function;

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
    let (name, shape) = (run.launch.kernel, run.launch.shape);
    if shape.smem_bytes > gpu.info.smem_per_block {
        kernel::allow_dynamic_smem(gpu, name, shape.smem_bytes)?;
    }
    (run.reset)()?;
    // The checked launch is the one `--counters` profiles (ncu `--profile-from-start off`);
    // a second launch that finishes the result (the split-K reduce) runs outside the range, so
    // each profiled launch is one row's kernel.
    crate::gpu::profiler::range(|| {
        run.launch.enqueue(gpu)?;
        sync(lab, name)
    })?;
    if let Some(t) = then {
        t.enqueue(gpu)?;
        sync(lab, name)?;
    }
    let check = || lab.phases.time(Kind::Checks, &check);
    let (checked, check_kind) = check()?;
    let attrs = kernel::attributes(gpu, name)?;
    let rust = || -> Result<()> {
        run.launch.enqueue(gpu)?;
        then.map_or(Ok(()), |t| t.enqueue(gpu))
    };
    let twin = lab.twins.as_ref().map(|twins| (twins, twin_functions(twins, name, then)));
    let timing = match twin {
        Some((twins, Ok(functions))) => {
            let twin = TwinRun { twins, functions, then, attrs, checked: &checked, check_kind };
            time_against_twin(lab, &run, twin, &rust, &check)?
        }
        // No twins, or none of this kernel: timed alone.
        alone => {
            if let Some((twins, Err(_))) = alone {
                note_missing(twins, name);
            }
            lab.phases.time(Kind::Timed, || timing::time(gpu, lab.settings.repeats, rust))?
        }
    };
    let occupancy = kernel::occupancy(gpu, name, shape.threads_per_block(), shape.smem_bytes)?;
    lab.measured.borrow_mut().push(MeasuredLaunch {
        kernel: name.to_string(),
        size: run.size.clone(),
        shape,
        occupancy,
    });
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

/// Waits for the lab's stream; a fault is a refusal naming the kernel.
fn sync(lab: &Lab, name: &str) -> Result<()> {
    match lab.gpu.stream.synchronize() {
        Ok(()) => Ok(()),
        Err(e) => refuse!("kernel `{name}` failed: {}", crate::gpu::describe(e)),
    }
}

/// The twins of the kernel `name` and of its finishing launch `then`, when the module has both.
fn twin_functions<'m>(
    twins: &'m Twins,
    name: &str,
    then: Option<&Launch>,
) -> cust::error::CudaResult<TwinFunctions<'m>> {
    let second = then.map(|l| twins.module.get_function(l.kernel)).transpose()?;
    Ok((twins.module.get_function(name)?, second))
}

/// A twin's entry and that of its finishing launch.
type TwinFunctions<'m> = (Function<'m>, Option<Function<'m>>);

/// Records, once, that the twins' module has no kernel `name` (or no twin of its finishing
/// launch).
fn note_missing(twins: &Twins, name: &str) {
    let mut missing = twins.missing.borrow_mut();
    if !missing.iter().any(|m| m == name) {
        missing.push(name.to_string());
    }
}

/// What [`time_against_twin`] needs besides the Rust kernel's run.
struct TwinRun<'a> {
    twins: &'a Twins,
    functions: TwinFunctions<'a>,
    then: Option<&'a Launch>,
    attrs: KernelAttrs,
    checked: &'a Check,
    check_kind: &'static str,
}

/// Resets, launches and checks the twin as the Rust kernel was, times the two alternately,
/// records the comparison in the twins' rows, and returns the Rust kernel's timing.
fn time_against_twin(
    lab: &Lab,
    run: &KernelRun<'_>,
    twin: TwinRun<'_>,
    rust: &dyn Fn() -> Result<()>,
    check: &dyn Fn() -> Result<(Check, &'static str)>,
) -> Result<Timing> {
    let gpu = &lab.gpu;
    let (name, shape) = (run.launch.kernel, run.launch.shape);
    let (f, f_then) = &twin.functions;
    let twin_run = || -> Result<()> {
        run.launch.enqueue_function(gpu, f)?;
        match (twin.then, f_then) {
            (Some(t), Some(g)) => t.enqueue_function(gpu, g),
            _ => Ok(()),
        }
    };
    if shape.smem_bytes > gpu.info.smem_per_block {
        kernel::allow_dynamic_smem_of(f, name, shape.smem_bytes, gpu.info.smem_per_block_optin)?;
    }
    (run.reset)()?;
    twin_run()?;
    sync(lab, name)?;
    let (twin_check, _) = check()?;
    let (rust, twin_t) = lab.phases.time(Kind::Timed, || timing::alternate(gpu, twin.twins.rounds, rust, twin_run))?;
    twin.twins.rows.borrow_mut().push(TwinRow {
        kernel: name.to_string(),
        size: run.size.clone(),
        regs: (twin.attrs.regs, kernel::attributes_of(f)?.regs),
        timing: (rust.clone(), twin_t),
        work: run.work,
        checks: (twin.checked.clone(), twin_check),
        check_kind: twin.check_kind.to_string(),
    });
    Ok(rust)
}
