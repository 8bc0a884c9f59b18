//! The registry of `run-demos`: every lesson in the order it runs, what it needs (the memcpy
//! ceiling, host memory for its sizes), and the runner that measures the shared ceiling once
//! and passes it in. The commands iterate it; no lesson reads it.

use anyhow::Result;

use crate::demos::l2;
use crate::demos::{banks, clusters, coalescing, matmul, memcpy, occupancy, sgemm, tensor, tma, transpose};
use crate::lab::{Inputs, Lab, Section, Sizes, f32_bytes};
use crate::probes::gemm;
use crate::refuse;
use crate::summary::hierarchy;

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

/// Host bytes of pinned staging for the transpose-shaped matrices of `sizes`: the copy and
/// transpose demos' peak.
fn transpose_host_bytes(sizes: &Sizes) -> usize {
    sizes.sweep.iter().chain([&sizes.transpose]).map(|&s| crate::lab::staging_bytes(s)).max().unwrap_or(0)
}

fn matmul_host_bytes(sizes: &Sizes) -> usize {
    gemm::host_bytes(sizes.matmul).max(gemm::host_bytes(sizes.matmul_naive))
}

fn sgemm_host_bytes(sizes: &Sizes) -> usize {
    sizes.sgemm.iter().map(|&s| gemm::host_bytes(s)).max().unwrap_or(0)
}

fn tensor_host_bytes(sizes: &Sizes) -> usize {
    sizes.tensor.iter().map(|&s| tensor::host_bytes(s)).max().unwrap_or(0)
}

/// The input (the copies' expected output), the staging of every checked output, and SGEMM
/// rungs 6 and 7's operands (at the first SGEMM size) beside it.
fn tma_host_bytes(sizes: &Sizes) -> usize {
    f32_bytes(&[sizes.transpose.0 * sizes.transpose.1])
        + crate::lab::staging_bytes(sizes.transpose)
        + sizes.sgemm.first().map_or(0, |&s| gemm::host_bytes(s))
}

fn coalescing_host_bytes(sizes: &Sizes) -> usize {
    crate::lab::staging_bytes((sizes.strided_bytes / 4, 1))
}

/// The host <-> device copies: one pageable and one pinned buffer; the DRAM read and the TMA
/// path go through staging.
fn hierarchy_host_bytes(sizes: &Sizes) -> usize {
    (2 * hierarchy::Options::default().transfer_bytes).max(crate::lab::staging_bytes((sizes.dram_bytes / 4, 1)))
}

/// For demos whose host buffers are small and fixed.
fn no_host_bytes(_: &Sizes) -> usize {
    0
}

/// The line a sanitizer run prints last (`sanitize.sh` reads it): how many entries of the
/// host's typed launches ([`crate::launches::ENTRIES`]) this process launched, and their names.
pub fn launched_line() -> String {
    launched_line_of(&crate::gpu::launch::launched(), crate::launches::ENTRIES.len())
}

/// [`launched_line`] for the entries `launched` of `total`.
fn launched_line_of(launched: &[&str], total: usize) -> String {
    format!("kernels launched ({} of {total}): {}", launched.len(), launched.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launched_line_has_the_shape_sanitize_sh_reads() {
        // sanitize.sh: sed -n 's/^kernels launched (\([0-9]*\) of.*/\1/p'
        assert_eq!(
            launched_line_of(&["copy", "transpose_naive"], 90),
            "kernels launched (2 of 90): copy transpose_naive"
        );
        let total = crate::launches::ENTRIES.len();
        assert!(launched_line().contains(&format!(" of {total}): ")), "{}", launched_line());
    }
}
