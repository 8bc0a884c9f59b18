//! Occupancy, predicted and asked: the occupancy model in hardware mode against
//! `cuOccupancyMaxActiveBlocksPerMultiprocessor` over a sweep of register caps, block sizes and
//! dynamic shared bytes, with the textbook arithmetic alongside.
//!
//! The kernel is `register_pressure` (168 registers on sm_90 uncapped); each cap is a separate
//! module load of that kernel alone with `CU_JIT_MAX_REGISTERS`, and the register count the JIT really used is read
//! back from the driver (`CU_FUNC_ATTRIBUTE_NUM_REGS`), so the model gets the same input as the
//! driver.

use anyhow::Result;
use memlab_contracts::probes::{BLOCK, PRESSURE_ACCUMULATORS};

use crate::gpu::context::load_entry;
use crate::gpu::describe;
use crate::gpu::kernel::{allow_dynamic_smem_of, attributes_of, occupancy_of};
use crate::gpu::launch::LaunchShape;
use crate::gpu::staging::Staging;
use crate::lab::Inputs;
use crate::lab::Lesson;
use crate::lab::{KernelRow, KernelRun, Lab, Level, Section, Work, download, measure, poison, poisoned};
use crate::launches;
use crate::model::occupancy::{ArchLimits, KernelResources, Mode, occupancy};
use crate::{reference, refuse, verify};

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `register_pressure`: thread `g < threads` runs `iters` rounds of 128 FMAs on the floats
    /// `input[g + i * threads]` and writes one float to `out[g]`; one-dimensional blocks of 256.
    pub fn register_pressure(threads: u32) -> LaunchShape {
        LaunchShape::linear(threads, BLOCK, 0)
    }
}

/// Threads of the timed uncapped launch.
pub const TIMED_THREADS: usize = 1 << 20;
/// Reads per thread of the timed uncapped launch.
pub const TIMED_ITERS: usize = 64;
/// Threads of the timed launch checked against the CPU reference (spread over the grid).
const SAMPLES: usize = 4096;

/// Seed of the timed probe's input ([`reference::input_f32`]).
const SEED: u64 = 31;

/// JIT register caps swept (registers per thread).
pub const REG_CAPS: [u32; 18] = [16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 112, 128, 144, 160, 168, 192, 224, 255];
/// Block sizes swept (threads).
pub const BLOCK_SIZES: [u32; 11] = [32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024];
/// Dynamic shared bytes swept, before the device's opt-in maximum is appended.
pub const SMEM_BYTES: [u32; 7] = [0, 1024, 8 << 10, 20 << 10, 48 << 10, 64 << 10, 100 << 10];

const KERNEL: &str = launches::entry::register_pressure.name;

/// Resident blocks per SM by the model, 0 when the model says the block cannot launch.
fn model_blocks(arch: &ArchLimits, res: &KernelResources, mode: Mode) -> u32 {
    occupancy(arch, res, mode).map_or(0, |o| o.active_blocks)
}

/// `register_pressure` without a register cap, timed: the kernel at the register count it
/// needs, on [`TIMED_THREADS`] threads of [`TIMED_ITERS`] reads each.
///
/// # Errors
/// A launch refusal or a driver failure.
pub fn timed(lab: &Lab) -> Result<KernelRow> {
    let (threads, iters) = (TIMED_THREADS, TIMED_ITERS);
    crate::lab::ensure_free("the register-pressure probe", crate::lab::f32_bytes(&[threads * iters, threads]))?;
    // Generated chunk by chunk into pinned staging; the reference reads the generator: no host
    // copy of the 256 MiB input.
    let input = poisoned::<f32>(threads * iters)?;
    Staging::new(threads * iters)?
        .upload(&lab.gpu, &input, |offset, chunk| reference::fill_input(SEED, offset, chunk))?;
    let mut out = poisoned::<f32>(threads)?;
    let run = KernelRun {
        launch: launches::register_pressure(
            shapes::register_pressure(threads as u32),
            &input,
            &mut out,
            threads as u32,
            iters as u32,
        ),
        lesson: "128 live accumulators, no register cap",
        prediction: "the JIT's own register count: occupancy as the driver reports it".into(),
        work: Work { flop: (2 * PRESSURE_ACCUMULATORS * iters * threads) as f64, bytes: 0.0, level: Level::Registers },
        size: format!("{threads} threads x {iters}"),
        reset: &|| poison(&out),
    };
    let check = || {
        let want = |g| reference::register_pressure(|i| reference::input_f32(SEED, i), threads, iters, g);
        Ok((verify::sampled_f32(&download(&out)?, SAMPLES, want), "sampled threads"))
    };
    measure(lab, run, check)
}

/// The lesson: occupancy, the model against the driver.
pub struct Occupancy;

impl Lesson for Occupancy {
    const NAME: &'static str = "occupancy";
    type Options = crate::lab::NoOptions;

    fn run(lab: &Lab, _: &Inputs, _: &crate::lab::NoOptions) -> Result<Section> {
        run(lab)
    }
}

/// Runs the sweep and compares every configuration, then times the uncapped kernel.
fn run(lab: &Lab) -> Result<Section> {
    let info = &lab.gpu.info;
    let Some(arch) = ArchLimits::for_cc(info.cc.0, info.cc.1) else {
        refuse!("the occupancy model has no data for compute capability {}.{}", info.cc.0, info.cc.1);
    };
    let smem_sizes: Vec<u32> = SMEM_BYTES.iter().copied().chain([info.smem_per_block_optin]).collect();
    let (mut configs, mut hardware_agree, mut simple_agree) = (0usize, 0usize, 0usize);
    let mut mismatches = Vec::new();
    // Resident blocks per configuration, in sweep order: the model's and the driver's.
    let (mut model_counts, mut driver_counts) = (Vec::new(), Vec::new());
    let mut rows = Vec::new();
    for cap in REG_CAPS {
        let module = lab.phases.step("JIT per register cap", || load_entry(lab.gpu.ptx, KERNEL, Some(cap)))?;
        let f = match module.get_function(KERNEL) {
            Ok(f) => f,
            Err(e) => refuse!("`{KERNEL}` missing from the module: {}", describe(e)),
        };
        allow_dynamic_smem_of(&f, KERNEL, info.smem_per_block_optin, info.smem_per_block_optin)?;
        let attrs = attributes_of(&f)?;
        let (mut cap_configs, mut cap_agree) = (0, 0);
        for threads in BLOCK_SIZES {
            for &smem in &smem_sizes {
                let driver = occupancy_of(&f, KERNEL, threads, smem, info.max_warps_per_sm())?.active_blocks;
                let res = KernelResources::new(threads, attrs.regs)
                    .with_static_smem(attrs.static_smem)
                    .with_dynamic_smem(smem)
                    .with_opt_in(true);
                let hardware = model_blocks(arch, &res, Mode::Hardware);
                configs += 1;
                model_counts.push(hardware);
                driver_counts.push(driver);
                cap_configs += 1;
                simple_agree += usize::from(model_blocks(arch, &res, Mode::Simple) == driver);
                if hardware == driver {
                    hardware_agree += 1;
                    cap_agree += 1;
                } else {
                    mismatches.push(format!(
                        "{} regs, {threads} threads, {smem} B: driver {driver} blocks, model {hardware}",
                        attrs.regs
                    ));
                }
            }
        }
        rows.push(vec![
            cap.to_string(),
            attrs.regs.to_string(),
            attrs.local_bytes.to_string(),
            attrs.max_threads_per_block.to_string(),
            format!("{cap_agree}/{cap_configs}"),
        ]);
    }
    let header = ["JIT register cap", "registers used", "local B (spills)", "max threads/block", "model = driver"];
    let mut notes = vec![format!(
        "{configs} configurations ({} caps x {} block sizes x {} shared sizes): hardware model equals the driver on {hardware_agree}, textbook arithmetic on {simple_agree}.",
        REG_CAPS.len(),
        BLOCK_SIZES.len(),
        smem_sizes.len()
    )];
    notes.extend(mismatches.iter().take(10).map(|m| format!("mismatch: {m}")));
    let check = verify::exact_u32(&model_counts, |i| driver_counts[i]);
    Ok(Section {
        name: "occupancy".into(),
        kernels: vec![timed(lab)?],
        title: format!("Occupancy: model against cuOccupancyMaxActiveBlocksPerMultiprocessor, `{KERNEL}`"),
        lesson: "Registers are allocated per warp in units of 256 and shared memory per block with a reserve: the driver's block count follows those granularities, not the textbook division.".into(),
        sweep: Some((header.iter().map(|s| s.to_string()).collect(), rows)),
        checks: vec![check],
        notes,
        ..Section::default()
    })
}
