//! The registry of `run-demos`: every lesson's entry ([`Lesson`], which each lesson module
//! owns) in the order it runs, and the runner that measures the shared ceiling once and passes
//! it in. The commands iterate it; no lesson reads it.

use anyhow::Result;

use crate::demos::{banks, clusters, coalescing, l2, matmul, memcpy, occupancy, sgemm, tensor, tma, transpose};
use crate::lab::{Inputs, Lab, Lesson, Section};
use crate::refuse;
use crate::summary::hierarchy;

/// Every lesson of `run-demos`, in the order it runs them (each module's own entry). The race
/// lesson has its own command.
pub const DEMOS: [Lesson; 12] = [
    memcpy::LESSON,
    transpose::LESSON,
    matmul::LESSON,
    sgemm::LESSON,
    tensor::LESSON,
    coalescing::LESSON,
    banks::LESSON,
    occupancy::LESSON,
    hierarchy::LESSON,
    clusters::LESSON,
    l2::LESSON,
    tma::LESSON,
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
pub fn find(name: &str) -> Result<&'static Lesson> {
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
pub fn run_all(
    lab: &Lab,
    demos: &[&Lesson],
    mut progress: impl FnMut(&Lesson, bool),
) -> Result<(Inputs, Vec<Section>)> {
    let ceiling = || lab.phases.demo("memcpy ceiling", || memcpy::measure(lab));
    let memcpy = demos.iter().any(|d| d.uses_memcpy).then(ceiling).transpose()?;
    let sweeps = demos.iter().any(|d| d.uses_memcpy_sweep);
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
    use crate::lab::Sizes;

    #[test]
    fn each_lesson_owns_its_needs_and_refusals() {
        let by = |name| find(name).unwrap();
        // Only the transposes read the ceiling at each `--sizes` matrix; the hierarchy alone has
        // no twins.
        assert_eq!(DEMOS.iter().filter(|d| d.uses_memcpy_sweep).map(|d| d.name).collect::<Vec<_>>(), ["transpose"]);
        assert_eq!(DEMOS.iter().filter(|d| !d.twins).map(|d| d.name).collect::<Vec<_>>(), ["hierarchy"]);
        assert!(by("memcpy").uses_memcpy && by("tma").uses_memcpy && !by("sgemm").uses_memcpy);
        // A matrix the TMA lesson cannot describe (its padded pitch past 2^32 - 1 elements) is
        // refused when the lesson is asked for by name, skipped with a note otherwise.
        let huge = Sizes { transpose: (65536, 65536), ..Sizes::default() };
        let err = (by("tma").check)(&huge, true).unwrap_err().to_string();
        assert!(err.contains("65536"), "{err}");
        assert!((by("tma").check)(&huge, false).is_ok());
        assert!((by("transpose").check)(&huge, true).is_ok());
        // Host memory follows each lesson's own sizes.
        let sweep = Sizes { sweep: vec![(16384, 16384)], ..Sizes::default() };
        assert!((by("transpose").host_bytes)(&sweep) >= (by("transpose").host_bytes)(&Sizes::default()));
        assert_eq!((by("banks").host_bytes)(&huge), 0);
        // A host-memory refusal names the lesson and the options to make smaller, each a real
        // option of `run-demos`.
        assert_eq!(by("tma").host_need(), "the tma demo at its --transpose and --sgemm");
        assert_eq!(by("banks").host_need(), "the banks demo");
        use clap::Args as _;
        let command = crate::commands::run_demos::Args::augment_args(clap::Command::new("run-demos"));
        let options: Vec<String> =
            command.get_arguments().filter_map(|a| a.get_long()).map(|l| format!("--{l}")).collect();
        for flag in DEMOS.iter().flat_map(|d| d.host_flags) {
            assert!(options.iter().any(|o| o == flag), "{flag} is no option of run-demos: {options:?}");
        }
    }

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
