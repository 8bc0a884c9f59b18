//! What a lesson is to `run-demos` and `bench`: a type implementing [`Lesson`], with its name,
//! its options, what it needs from the run, the refusals it makes before any GPU work, its
//! run, and its charts in the report. The registry lists each lesson once ([`Entry::of`]); a lesson names no other lesson.

use anyhow::Result;

use super::{Figure, Inputs, Lab, Run, Section, Shared};

/// What a lesson needs from the run besides its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// It reads the memcpy ceiling (the runner measures it first when so).
    pub memcpy: bool,
    /// It also reads the memcpy ceiling at each matrix of the transposes' `--sizes` sweep.
    pub memcpy_sweep: bool,
    /// Its timed kernels have CUDA C++ twins in `bench/twins.cu` (`memlab bench` runs it).
    pub twins: bool,
}

impl Needs {
    /// No ceiling, and twins for every timed kernel: what most lessons need.
    pub const TWINS: Needs = Needs { memcpy: false, memcpy_sweep: false, twins: true };
}

/// One lesson of `run-demos`.
pub trait Lesson {
    /// Name on the command line (`--only`) and in the report.
    const NAME: &'static str;
    /// What it needs from the run.
    const NEEDS: Needs = Needs::TWINS;
    /// The options `host_bytes` follows (`--transpose`, `--sgemm`), named in a refusal.
    const HOST_FLAGS: &'static [&'static str] = &[];
    /// Its own flags on the command line (a `clap::Args`, the defaults written there once).
    /// What it measures at another lesson's size it finds in [`Shared`].
    type Options;

    /// Runs the lesson.
    ///
    /// # Errors
    /// A refusal (a size the device cannot hold or launch) or a driver failure.
    fn run(lab: &Lab, inputs: &Inputs, options: &Self::Options) -> Result<Section>;

    /// Host bytes it holds at its peak: its pinned staging and what its CPU references keep.
    /// Checked before any work ([`crate::host_ram`]).
    fn host_bytes(_: &Self::Options, _: &Shared) -> usize {
        0
    }

    /// Refuses, before any GPU work, what it cannot run at `options`; `named` when the user
    /// asked for it by name (`--only`), so that a lesson may skip itself with a note among all
    /// the others instead.
    ///
    /// # Errors
    /// The refusal, one line naming the option and the limit.
    fn check(_: &Self::Options, _: &Shared, _named: bool) -> Result<()> {
        Ok(())
    }

    /// Its charts in the report, in order, from the recorded run: each drawn, or named among
    /// the charts the run lacks; none unless the lesson draws some.
    fn figures(_: &Run) -> Vec<Figure> {
        Vec::new()
    }
}

/// How the registry's options `O` (every lesson's flags, parsed once) give lesson `L` its own.
pub trait OptionsFor<L: Lesson> {
    /// `L`'s options.
    fn options(&self) -> L::Options;
}

/// The options of a lesson with no flags of its own.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
pub struct NoOptions {}

/// A lesson as the registry lists it: its facts, and its functions on the registry's options
/// `O`.
pub struct Entry<O: 'static> {
    /// [`Lesson::NAME`].
    pub name: &'static str,
    /// [`Lesson::NEEDS`].
    pub needs: Needs,
    /// [`Lesson::HOST_FLAGS`].
    pub host_flags: &'static [&'static str],
    /// [`Lesson::run`] at the lesson's options.
    pub run: fn(&Lab, &Inputs, &O) -> Result<Section>,
    /// [`Lesson::host_bytes`] at the lesson's options.
    pub host_bytes: fn(&O, &Shared) -> usize,
    /// [`Lesson::check`] at the lesson's options.
    pub check: fn(&O, &Shared, bool) -> Result<()>,
    /// [`Lesson::figures`].
    pub figures: fn(&Run) -> Vec<Figure>,
}

// By hand: a derive would ask `O: Copy`, which the function pointers do not need.
impl<O> Clone for Entry<O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O> Copy for Entry<O> {}

impl<O> Entry<O> {
    /// The entry of lesson `L`.
    pub const fn of<L: Lesson>() -> Entry<O>
    where
        O: OptionsFor<L>,
    {
        Entry {
            name: L::NAME,
            needs: L::NEEDS,
            host_flags: L::HOST_FLAGS,
            run: |lab, inputs, all| L::run(lab, inputs, &all.options()),
            host_bytes: |all, shared| L::host_bytes(&all.options(), shared),
            check: |all, shared, named| L::check(&all.options(), shared, named),
            figures: L::figures,
        }
    }

    /// What needs the host memory, as a refusal names it: the lesson and its options.
    pub fn host_need(&self) -> String {
        match self.host_flags {
            [] => format!("the {} demo", self.name),
            flags => format!("the {} demo at its {}", self.name, flags.join(" and ")),
        }
    }
}
