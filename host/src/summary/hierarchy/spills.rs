//! Registers and spills: the local-array pair (an array indexed by constants stays in
//! registers, one indexed at run time goes to local memory) and the register-pressure sweep
//! (`register_pressure` under a falling JIT register cap: spills appear, occupancy rises).

use anyhow::Result;
use memlab_contracts::probes::BLOCK;

use crate::demos::occupancy;
use crate::gpu::Gpu;
use crate::gpu::launch::LaunchShape;
use crate::lab::{KernelRow, KernelRun, Lab, Level, Work, download, measure, poison, poisoned, upload};
use crate::launches;
use crate::ptx::ptxas::{self, PtxasKernel};
use crate::ptx::{Ptx, count_ops, entry_body};
use crate::reference;
use crate::verify::{self, Check};

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `local_array_constant_index`: thread `g < threads` runs `iters` rounds over its 16-float
    /// array (`input` holds `17 * threads` floats), constant indices; one-dimensional blocks of 256.
    pub fn local_array_constant_index(threads: u32) -> LaunchShape {
        LaunchShape::linear(threads, BLOCK, 0)
    }

    /// `local_array_runtime_index`: the same with the neighbour index shifted by `shift` (1 gives
    /// the same result) at run time.
    pub fn local_array_runtime_index(threads: u32) -> LaunchShape {
        LaunchShape::linear(threads, BLOCK, 0)
    }
}
/// Threads checked against the CPU reference (spread over the grid).
const SAMPLES: usize = 2048;

/// Register caps of the sweep (`CU_JIT_MAX_REGISTERS`); 255 is the architecture's limit, so no
/// cap at all for a kernel that needs 168.
pub const CAPS: [u32; 7] = [255, 168, 128, 96, 64, 48, 32];

/// Threads of the sweep: every SM at its thread limit (a few blocks under `--sanitizer`).
fn full_gpu_threads(lab: &Lab) -> usize {
    crate::lab::sanitizer::grid(lab, BLOCK).1
}

/// Compares `got[g]` with `want(g)` bit for bit at `SAMPLES` threads spread over `threads`.
fn sampled(got: &[f32], threads: usize, want: impl Fn(usize) -> f32) -> Check {
    verify::sampled_f32(&got[..threads], SAMPLES, want)
}

/// What `ptxas -v` says about `kernel` in the loaded PTX with `options` (assembling that kernel
/// alone, [`crate::ptx::only_entry`]), or why it cannot say.
pub fn ptxas_figures(ptx: &Ptx, kernel: &str, options: &[&str]) -> Result<PtxasKernel, String> {
    let text =
        crate::ptx::only_entry(ptx.text, kernel).ok_or_else(|| format!("`{kernel}` is not in the {} PTX", ptx.arch))?;
    let report = ptxas::run_with(&text, ptx.arch, options).map_err(|e| format!("{e:#}"))?;
    report.into_iter().find(|k| k.kernel == kernel).ok_or_else(|| format!("ptxas did not compile `{kernel}`"))
}

/// A `ptxas -v` figure as one phrase.
pub fn ptxas_phrase(figures: &Result<PtxasKernel, String>) -> String {
    match figures {
        Ok(k) => format!(
            "ptxas: {} regs, {} B stack, {} B spill stores, {} B spill loads",
            k.regs, k.stack_bytes, k.spill_stores, k.spill_loads
        ),
        Err(e) => format!("ptxas not run ({})", e.lines().next().unwrap_or("")),
    }
}

/// The spill pair, measured: both kernels' rows and one note per kernel with the PTX and ptxas
/// evidence of where the array lives.
pub fn local_array_pair(lab: &Lab, iters: u32) -> Result<(Vec<KernelRow>, Vec<String>)> {
    let threads = full_gpu_threads(lab);
    let words = reference::LOCAL_ARRAY_WORDS;
    let input_host = reference::random_f32((words + 1) * threads, 21);
    let input = upload(&input_host)?;
    let mut out = poisoned::<f32>(threads)?;
    let t = threads as u32;
    let pair = [
        (
            launches::local_array_constant_index(shapes::local_array_constant_index(t), &input, &mut out, t, iters),
            "16-float array, constant indices",
        ),
        (
            launches::local_array_runtime_index(shapes::local_array_runtime_index(t), &input, &mut out, t, iters, 1),
            "the same array indexed by a runtime shift",
        ),
    ];
    let (mut rows, mut notes) = (Vec::new(), Vec::new());
    for (launch, lesson) in pair {
        let kernel = launch.kernel;
        // Both kernels compute the same values: the reset poisons the output, so a kernel that
        // wrote nothing never passes on the other's output.
        let body = entry_body(lab.gpu.ptx.text, kernel).unwrap_or_default();
        let (loads, stores) = (count_ops(body, "ld.local"), count_ops(body, "st.local"));
        let figures = ptxas_figures(lab.gpu.ptx, kernel, &[]);
        let prediction = format!("PTX: {loads} ld.local, {stores} st.local");
        let flops = 2.0 * (threads * words) as f64 * iters as f64;
        let work = Work { flop: flops, bytes: 0.0, level: Level::Registers };
        let size = format!("{threads} threads x {iters}");
        let run = KernelRun { launch, lesson, prediction: prediction.clone(), work, size, reset: &|| poison(&out) };
        let check = || {
            let got = download(&out)?;
            Ok((
                sampled(&got, threads, |g| reference::local_array(&input_host, threads, iters as usize, g)),
                "sampled threads",
            ))
        };
        let row = measure(lab, run, check)?;
        notes.push(format!(
            "`{kernel}`: {prediction}; {}; driver: {} regs, {} B local per thread; {:.3} ms",
            ptxas_phrase(&figures),
            row.attrs.regs,
            row.attrs.local_bytes,
            row.timing.median_ms
        ));
        rows.push(row);
    }
    let ratio = rows[1].timing.median_ms / rows[0].timing.median_ms;
    notes.push(format!("indexing the array at run time costs {ratio:.1}x the time: same arithmetic, same result"));
    Ok((rows, notes))
}

/// `register_pressure` under every cap in [`CAPS`]: each cap loads that kernel alone again with
/// `CU_JIT_MAX_REGISTERS` (`Gpu::open_one_kernel` retains the device's primary context, the lab's own, so
/// the buffers serve every module), and the driver's JIT, not the PTX, decides the spills.
/// Each row's prediction is ptxas's view of the same cap.
pub fn register_sweep(lab: &Lab, iters: u32) -> Result<Vec<KernelRow>> {
    let threads = full_gpu_threads(lab);
    let input_host = reference::random_f32(iters as usize * threads, 22);
    let input = upload(&input_host)?;
    let mut out = poisoned::<f32>(threads)?;
    let flops = 2.0 * (threads * reference::PRESSURE_ACCUMULATORS) as f64 * iters as f64;
    let ptx = lab.gpu.ptx;
    std::thread::scope(|scope| {
        // ptxas for every cap at once, on threads of its own, while the caps are measured in
        // turn, instead of each cap waiting for its own ptxas process.
        let ptxas_runs = CAPS.map(|cap| {
            scope.spawn(move || ptxas_figures(ptx, "register_pressure", &[&format!("-maxrregcount={cap}")]))
        });
        let mut rows = Vec::new();
        for (cap, ptxas_run) in CAPS.into_iter().zip(ptxas_runs) {
            let capped = Lab::new(Gpu::open_one_kernel(lab.gpu.ordinal, "register_pressure", cap)?, lab.settings);
            let figures = ptxas_run.join().expect("a ptxas run does not panic");
            let run = KernelRun {
                launch: launches::register_pressure(
                    occupancy::shapes::register_pressure(threads as u32),
                    &input,
                    &mut out,
                    threads as u32,
                    iters,
                ),
                lesson: "128 live accumulators under a register cap",
                prediction: format!("cap {cap}: {}", ptxas_phrase(&figures)),
                work: Work { flop: flops, bytes: 0.0, level: Level::Registers },
                size: format!("cap {cap}"),
                reset: &|| poison(&out),
            };
            let check = || {
                let want = |g| reference::register_pressure(|i| input_host[i], threads, iters as usize, g);
                Ok((sampled(&download(&out)?, threads, want), "sampled threads"))
            };
            rows.push(measure(&capped, run, check)?);
        }
        Ok(rows)
    })
}
