//! Registers and spills: the local-array pair (an array indexed by constants stays in
//! registers, one indexed at run time goes to local memory) and the register-pressure sweep
//! (`register_pressure` under a falling JIT register cap: spills appear, occupancy rises).

use anyhow::Result;

use crate::demos::{KernelRow, KernelRun, Lab, Level, Work, download, measure, poison, poisoned, upload};
use crate::gpu::Gpu;
use crate::gpu::launch::{Arg, LaunchShape};
use crate::ptx::{count_ops, entry_body};
use crate::ptxas::{self, PtxasKernel};
use crate::reference;
use crate::verify::{self, Check};

/// Threads per block of both lessons.
const BLOCK: u32 = 256;
/// Threads checked against the CPU reference (spread over the grid).
const SAMPLES: usize = 2048;

/// Register caps of the sweep (`CU_JIT_MAX_REGISTERS`); 255 is the architecture's limit, so no
/// cap at all for a kernel that needs 168.
pub const CAPS: [u32; 7] = [255, 168, 128, 96, 64, 48, 32];

/// Threads of a full GPU: every SM at its thread limit.
fn full_gpu_threads(lab: &Lab) -> (u32, usize) {
    crate::demos::full_gpu(&lab.gpu.info, BLOCK)
}

/// Compares `got[g]` with `want(g)` bit for bit at `SAMPLES` threads spread over `threads`.
fn sampled(got: &[f32], threads: usize, want: impl Fn(usize) -> f32) -> Check {
    verify::sampled_f32(&got[..threads], SAMPLES, want)
}

/// What `ptxas -v` says about `kernel` in the loaded PTX with `options`, or why it cannot say.
pub fn ptxas_figures(lab: &Lab, kernel: &str, options: &[&str]) -> Result<PtxasKernel, String> {
    let report = ptxas::run_with(lab.gpu.ptx.text, lab.gpu.ptx.arch, options).map_err(|e| format!("{e:#}"))?;
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
    let (blocks, threads) = full_gpu_threads(lab);
    let words = reference::LOCAL_ARRAY_WORDS;
    let input_host = reference::random_f32((words + 1) * threads, 21);
    let input = upload(&input_host)?;
    let mut out = poisoned::<f32>(threads)?;
    let shape = LaunchShape { grid: (blocks, 1), block: (BLOCK, 1), smem_bytes: 0 };
    let base = [Arg::from(&input), Arg::from(&out), Arg::U32(threads as u32), Arg::U32(iters)];
    let runtime = [&base[..], &[Arg::U32(1)]].concat();
    let pair = [
        ("local_array_constant_index", "16-float array, constant indices", &base[..]),
        ("local_array_runtime_index", "the same array indexed by a runtime shift", &runtime[..]),
    ];
    let (mut rows, mut notes) = (Vec::new(), Vec::new());
    for (kernel, lesson, args) in pair {
        // Both kernels compute the same values: a kernel that wrote nothing must not pass on
        // the other's output.
        poison(&mut out)?;
        let body = entry_body(lab.gpu.ptx.text, kernel).unwrap_or_default();
        let (loads, stores) = (count_ops(body, "ld.local"), count_ops(body, "st.local"));
        let figures = ptxas_figures(lab, kernel, &[]);
        let prediction = format!("PTX: {loads} ld.local, {stores} st.local");
        let flops = 2.0 * (threads * words) as f64 * iters as f64;
        let work = Work { flop: flops, bytes: 0.0, level: Level::Registers };
        let run = KernelRun { kernel, lesson, prediction: prediction.clone(), shape, args, work };
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

/// `register_pressure` under every cap in [`CAPS`]: each cap loads the module again with
/// `CU_JIT_MAX_REGISTERS` (`Gpu::open` retains the device's primary context, the lab's own, so
/// the buffers serve every module), and the driver's JIT, not the PTX, decides the spills.
/// Each row's prediction is ptxas's view of the same cap.
pub fn register_sweep(lab: &Lab, iters: u32) -> Result<Vec<KernelRow>> {
    let (blocks, threads) = full_gpu_threads(lab);
    let input_host = reference::random_f32(iters as usize * threads, 22);
    let input = upload(&input_host)?;
    let mut out = poisoned::<f32>(threads)?;
    let args = [Arg::from(&input), Arg::from(&out), Arg::U32(threads as u32), Arg::U32(iters)];
    let shape = LaunchShape { grid: (blocks, 1), block: (BLOCK, 1), smem_bytes: 0 };
    let flops = 2.0 * (threads * reference::PRESSURE_ACCUMULATORS) as f64 * iters as f64;
    let mut rows = Vec::new();
    for cap in CAPS {
        poison(&mut out)?;
        let figures = ptxas_figures(lab, "register_pressure", &[&format!("-maxrregcount={cap}")]);
        let capped = Lab { gpu: Gpu::open(lab.gpu.ordinal, Some(cap))?, sizes: lab.sizes.clone(), memcpy_gbs: None };
        let prediction = format!("cap {cap}: {}", ptxas_phrase(&figures));
        let lesson = "128 live accumulators under a register cap";
        let work = Work { flop: flops, bytes: 0.0, level: Level::Registers };
        let run = KernelRun { kernel: "register_pressure", lesson, prediction, shape, args: &args, work };
        let check = || {
            let want = |g| reference::register_pressure(&input_host, threads, iters as usize, g);
            Ok((sampled(&download(&out)?, threads, want), "sampled threads"))
        };
        rows.push(measure(&capped, run, check)?);
    }
    Ok(rows)
}
