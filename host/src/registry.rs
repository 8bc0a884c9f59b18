//! The registry of `run-demos`, `bench` and the report: every lesson's entry in the order it
//! runs (the lessons of `demos/`, then the hierarchy, the summary that measures one row per
//! level), the options of all of them, the runner that measures the shared ceiling once and
//! passes it in, and the report's figures (the lessons' in that order, then the summaries').
//! The commands iterate it; no lesson reads it.

use anyhow::Result;

use crate::demos::{self, HasOptions, memcpy};
use crate::lab::{Entry, Figure, Inputs, Lab, OptionsFor, Run, Section};
use crate::refuse;
use crate::summary::hierarchy::{self, Hierarchy};

/// Every lesson's flags: those of `demos/` and the hierarchy's.
#[derive(clap::Args, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
pub struct Options {
    /// The lessons' own flags.
    #[command(flatten)]
    pub lessons: demos::Options,
    /// The hierarchy's.
    #[command(flatten)]
    pub dram: hierarchy::Dram,
}

impl Options {
    /// The options that `run-demos` would parse from the lesson flags `flags`
    /// (`["--transpose", "31x33"]`); `&[]`: every default.
    ///
    /// # Errors
    /// clap's refusal of a flag.
    pub fn from_flags(flags: &[&str]) -> Result<Options, clap::Error> {
        use clap::{Args as _, FromArgMatches as _};
        let command = Options::augment_args(clap::Command::new("run-demos"));
        Options::from_arg_matches(&command.try_get_matches_from([&["run-demos"], flags].concat())?)
    }
}

impl HasOptions for Options {
    fn lessons(&self) -> &demos::Options {
        &self.lessons
    }
}

impl OptionsFor<Hierarchy> for Options {
    /// The hierarchy at its defaults, with the DRAM read and the rows it shares with the
    /// lessons at their options.
    fn options(&self) -> hierarchy::Options {
        let o = &self.lessons;
        hierarchy::Options {
            dram: self.dram,
            banks: o.banks.clone(),
            cluster_reads: o.clusters.reads,
            l2_stream_bytes: o.l2.stream_bytes,
            ..hierarchy::Options::default()
        }
    }
}

/// Every lesson of `run-demos`, in the order it runs them. The race lesson has its own command.
pub const DEMOS: [Entry<Options>; demos::lessons::<Options>().len() + 1] = {
    let lessons = demos::lessons::<Options>();
    let mut all = [Entry::of::<Hierarchy>(); demos::lessons::<Options>().len() + 1];
    let mut i = 0;
    while i < lessons.len() {
        all[i] = lessons[i];
        i += 1;
    }
    all
};

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

/// A lesson of [`DEMOS`].
pub type Lesson = Entry<Options>;

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

/// The report's figures of `run`: each lesson's, in [`DEMOS`] order, then the summaries' (the
/// roofline and the bandwidth bars, drawn from every section).
pub fn figures(run: &Run) -> Vec<Figure> {
    DEMOS.iter().flat_map(|d| (d.figures)(run)).chain(crate::summary::figures::figures(run)).collect()
}

/// Runs `demos` in order on `lab` at `options`, after measuring the memcpy ceiling once if any
/// of them reads it. Returns the inputs the demos received and their sections;
/// `progress(demo, done)` is called before (`false`) and after (`true`) every demo.
///
/// # Errors
/// The first demo's refusal.
pub fn run_all(
    lab: &Lab,
    demos: &[&Lesson],
    options: &Options,
    mut progress: impl FnMut(&Lesson, bool),
) -> Result<(Inputs, Vec<Section>)> {
    let shared = options.lessons.shared();
    let ceiling = || lab.phases.demo("memcpy ceiling", || memcpy::measure(lab, shared.matrix));
    let memcpy = demos.iter().any(|d| d.needs.memcpy).then(ceiling).transpose()?;
    let sweeps = demos.iter().any(|d| d.needs.memcpy_sweep);
    let memcpy_sweep = match sweeps && !shared.sweep.is_empty() {
        true => lab.phases.demo("memcpy sweep", || {
            shared.sweep.iter().map(|&s| memcpy::measure(lab, s)).collect::<Result<Vec<_>>>()
        })?,
        false => Vec::new(),
    };
    let inputs = Inputs { shared, memcpy, memcpy_sweep };
    let mut sections = Vec::with_capacity(demos.len());
    for demo in demos {
        progress(demo, false);
        sections.push(lab.phases.demo(demo.name, || (demo.run)(lab, &inputs, options))?);
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

    fn parsed(flags: &[&str]) -> Options {
        Options::from_flags(flags).unwrap()
    }

    #[test]
    fn each_lesson_owns_its_needs_and_refusals() {
        let by = |name| find(name).unwrap();
        // Only the transposes read the ceiling at each `--sizes` matrix.
        let names = |f: fn(&Lesson) -> bool| DEMOS.iter().filter(|d| f(d)).map(|d| d.name).collect::<Vec<_>>();
        assert_eq!(names(|d| d.needs.memcpy_sweep), ["transpose"]);
        // What some lessons read and have: the ceiling, and CUDA C++ twins (the hierarchy's
        // probes have none).
        for (name, memcpy, twins) in
            [("memcpy", true, true), ("tma", true, true), ("hierarchy", true, false), ("transpose", false, true)]
        {
            assert_eq!((by(name).needs.memcpy, by(name).needs.twins), (memcpy, twins), "{name}");
        }
        // A matrix the TMA lesson cannot describe (its padded pitch past 2^32 - 1 elements) is
        // refused when the lesson is asked for by name, skipped with a note otherwise.
        let huge = parsed(&["--transpose", "65536x65536"]);
        let check = |name, o: &Options, named| (by(name).check)(o, &o.lessons.shared(), named);
        let err = check("tma", &huge, true).unwrap_err().to_string();
        assert!(err.contains("65536"), "{err}");
        assert!(check("tma", &huge, false).is_ok());
        assert!(check("transpose", &huge, true).is_ok());
        // Host memory follows each lesson's own options, and the shared sizes the owners set.
        let bytes = |name, o: &Options| (by(name).host_bytes)(o, &o.lessons.shared());
        let defaults = parsed(&[]);
        let (small, sweep) =
            (parsed(&["--transpose", "100x10"]), parsed(&["--transpose", "100x10", "--sizes", "1000x1000"]));
        assert!(bytes("transpose", &sweep) > bytes("transpose", &small));
        assert!(bytes("memcpy", &sweep) > bytes("memcpy", &small));
        assert!(bytes("tma", &huge) > bytes("tma", &defaults));
        let small = parsed(&["--sgemm", "1000x1000x1000"]);
        assert!(bytes("sgemm", &small) < bytes("sgemm", &defaults));
        assert!(bytes("tma", &small) < bytes("tma", &defaults));
        assert_eq!(bytes("banks", &huge), 0);
        // The hierarchy's shared rows follow the lessons' options.
        let probes = parsed(&["--bank-iters", "64", "--cluster-reads", "16", "--l2-stream-bytes", "64MiB"]);
        let h: hierarchy::Options = OptionsFor::<Hierarchy>::options(&probes);
        assert_eq!((h.banks.iters, h.cluster_reads.reads, h.l2_stream_bytes), (64, 16, 64 << 20));
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
    fn the_options_round_trip_through_json_for_the_profiled_child() {
        let o = parsed(&["--transpose", "31x33", "--sgemm", "517x389x263", "128x128x128", "--clusters", "2,4"]);
        let back: Options = serde_json::from_str(&serde_json::to_string(&o).unwrap()).unwrap();
        assert_eq!(back, o);
        assert_eq!(back.lessons.shared().gemm, Some((517, 389, 263)));
        assert_eq!(back.lessons.clusters.sizes, [2, 4]);
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
