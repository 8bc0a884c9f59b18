//! The race lesson (`memlab race-lesson`, never part of `run-demos`): why the tiled matmul needs
//! its second barrier. Runs `matmul_tiled_32` once as the reference, then the same kernel with
//! that barrier removed several times, and counts the elements that differ.

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::matmul::{TILE_32, tiled_smem_bytes};

use crate::gpu::Gpu;
use crate::gpu::launch::{Launch, LaunchShape};
use crate::lab::{Section, download, ensure_free, f32_bytes, poison, poisoned, upload};
use crate::launches;
use crate::probes::gemm::{MatmulLaunch, matmul_launch, square_tiles};
use crate::verify::{self, Check};
use crate::{reference, refuse};

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `matmul_tiled_32_missing_barrier`: `matmul_tiled_32`'s launch (block `32 x 32`,
    /// 8192 B shared) and parameters, without its second barrier.
    pub fn matmul_tiled_32_missing_barrier(m: u32, n: u32) -> LaunchShape {
        square_tiles(m, n, TILE_32, tiled_smem_bytes(TILE_32))
    }
}

/// The correct kernel: both barriers in place.
pub const CORRECT: &str = launches::entry::matmul_tiled_32.name;
/// The broken kernel: the barrier after the multiply-adds removed.
pub const BROKEN: &str = launches::entry::matmul_tiled_32_missing_barrier.name;
/// Tile edge of both kernels; the block is `TILE x TILE` threads.
pub const TILE: usize = TILE_32 as usize;

/// What one lesson run found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The correct kernel against the f64 CPU reference.
    pub reference: Check,
    /// Each broken run, bit for bit against the correct kernel's output.
    pub runs: Vec<Check>,
}

impl Outcome {
    /// Broken runs whose output differed from the correct kernel's.
    pub fn wrong_runs(&self) -> usize {
        self.runs.iter().filter(|c| !c.passed()).count()
    }
}

/// Refuses shapes on which the broken kernel cannot race: with `k <= 32` the block makes one
/// step, so no tile is ever overwritten.
pub fn check_shape((_, _, k): (usize, usize, usize)) -> Result<()> {
    if k <= TILE {
        refuse!(
            "race lesson: K = {k} gives one tile step and no race; use K above {TILE} (allowed {}..=4294967295)",
            TILE + 1
        );
    }
    Ok(())
}

fn launch_and_wait(gpu: &Gpu, launch: &Launch) -> Result<()> {
    launch.enqueue(gpu)?;
    if let Err(e) = gpu.stream.synchronize() {
        refuse!("kernel `{}` failed: {}", launch.kernel, crate::gpu::describe(e));
    }
    Ok(())
}

/// Runs the correct kernel once and the broken one `runs` times on `m x n x k` (inputs from the
/// matmul demo's seeds).
pub fn run(gpu: &Gpu, (m, n, k): (usize, usize, usize), runs: usize) -> Result<Outcome> {
    check_shape((m, n, k))?;
    ensure_free("the race lesson", f32_bytes(&[m * k, k * n, m * n]))?;
    let a_host = reference::random_f32(m * k, 1);
    let b_host = reference::random_f32(k * n, 2);
    let (a, b) = (upload(&a_host)?, upload(&b_host)?);
    let mut c = poisoned::<f32>(m * n)?;
    let (m32, n32, k32) = (m as u32, n as u32, k as u32);
    let launch = |kernel: MatmulLaunch, c: &mut DeviceBuffer<f32>| kernel(&a, &b, c, m32, n32, k32);
    let correct = launch(matmul_launch!(matmul_tiled_32, crate::probes::gemm::shapes::matmul_tiled_32), &mut c);
    let broken =
        launch(matmul_launch!(matmul_tiled_32_missing_barrier, shapes::matmul_tiled_32_missing_barrier), &mut c);
    launch_and_wait(gpu, &correct)?;
    let want = download(&c)?;
    let (reference, _) = verify::matmul_auto(&a_host, &b_host, &want, (m, n, k));
    let mut checks = Vec::with_capacity(runs);
    for _ in 0..runs {
        poison(&c)?;
        launch_and_wait(gpu, &broken)?;
        checks.push(verify::exact_f32(&download(&c)?, &want));
    }
    Ok(Outcome { reference, runs: checks })
}

/// The lesson's report section: one row per broken run, and what racecheck says about it.
pub fn section(outcome: &Outcome, (m, n, k): (usize, usize, usize)) -> Section {
    let header =
        ["run", "elements differing from matmul_tiled_32", "first difference (index: got vs want)", "output digest"];
    let rows = outcome
        .runs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let first = c.first_bad.as_ref().map_or("-".into(), |(e, got, want)| format!("{e}: {got} vs {want}"));
            vec![(i + 1).to_string(), format!("{} of {}", c.mismatches, c.checked), first, format!("{:016x}", c.digest)]
        })
        .collect();
    let wrong = outcome.wrong_runs();
    let verdict = if wrong > 0 {
        format!(
            "{wrong} of {} runs of `{BROKEN}` gave wrong results: the race is real on this GPU.",
            outcome.runs.len()
        )
    } else {
        format!(
            "All {} runs happened to come out right: a race makes results wrong only sometimes, which is what makes it dangerous. racecheck finds it either way.",
            outcome.runs.len()
        )
    };
    Section {
        name: "race".into(),
        title: format!("The race lesson: {BROKEN}, {m}x{n}x{k}"),
        lesson: "The tiled matmul's second barrier keeps a warp from storing the next step's tile while other warps still read this one. Remove it and warp w overwrites row w of tile B under the other warps' feet.".into(),
        sweep: Some((header.iter().map(|s| s.to_string()).collect(), rows)),
        checks: vec![outcome.reference.clone()],
        notes: vec![
            format!("`{CORRECT}` against the f64 reference: {}.", outcome.reference.summary("checked")),
            "Both kernels do the same multiply-adds in the same order, so any bit that differs comes from the race.".into(),
            verdict,
            format!("`compute-sanitizer --tool racecheck memlab race-lesson --matmul 64x64x64 --runs 1` flags `{BROKEN}` only (measured on the H200): an error between the next step's store to tile B and the multiply-add loop's reads of it by other warps, and a warning for tile A, whose row only the storing warp reads."),
        ],
        ..Section::default()
    }
}
