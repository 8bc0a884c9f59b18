//! What a lesson gives the registry of `run-demos`: its name, what it needs from the run, the
//! refusals of the run's sizes it makes before any GPU work, and its entry point. Each lesson
//! module holds its own `LESSON`; the registry lists them in order, one line each.

use anyhow::Result;

use super::{Inputs, Lab, Section, Sizes};

/// One lesson of `run-demos`.
pub struct Lesson {
    /// Name on the command line (`--only`) and in the report.
    pub name: &'static str,
    /// Runs the lesson.
    pub run: fn(&Lab, &Inputs) -> Result<Section>,
    /// Whether it reads the memcpy ceiling (the runner measures it first when so).
    pub uses_memcpy: bool,
    /// Whether it also reads the memcpy ceiling at each matrix of `--sizes`.
    pub uses_memcpy_sweep: bool,
    /// Whether its timed kernels have CUDA C++ twins in `bench/twins.cu` (`memlab bench` runs
    /// these lessons).
    pub twins: bool,
    /// Host bytes it holds at its peak for the run's sizes: its pinned staging and what its CPU
    /// references keep. Checked before any work ([`crate::host_ram`]).
    pub host_bytes: fn(&Sizes) -> usize,
    /// The options `host_bytes` follows, for the refusal (`--transpose`, `--sgemm`).
    pub host_flags: &'static [&'static str],
    /// Refuses, before any GPU work, what it cannot run at the run's sizes; `named` when the
    /// user asked for it by name (`--only`), so that a lesson may skip itself with a note among
    /// all the others instead.
    pub check: fn(&Sizes, bool) -> Result<()>,
}

impl Lesson {
    /// A lesson that reads no ceiling, holds only small fixed host buffers, has twins and
    /// refuses nothing before it runs.
    pub const fn new(name: &'static str, run: fn(&Lab, &Inputs) -> Result<Section>) -> Lesson {
        Lesson {
            name,
            run,
            uses_memcpy: false,
            uses_memcpy_sweep: false,
            twins: true,
            host_bytes: |_| 0,
            host_flags: &[],
            check: |_, _| Ok(()),
        }
    }

    /// This lesson, reading the memcpy ceiling.
    pub const fn with_memcpy(self) -> Lesson {
        Lesson { uses_memcpy: true, ..self }
    }

    /// This lesson, reading the memcpy ceiling at each matrix of `--sizes` too.
    pub const fn with_memcpy_sweep(self) -> Lesson {
        Lesson { uses_memcpy_sweep: true, ..self }
    }

    /// This lesson, without CUDA C++ twins.
    pub const fn without_twins(self) -> Lesson {
        Lesson { twins: false, ..self }
    }

    /// This lesson, holding `host_bytes(sizes)` of host memory at its peak, which the options
    /// `flags` set.
    pub const fn with_host_bytes(self, host_bytes: fn(&Sizes) -> usize, flags: &'static [&'static str]) -> Lesson {
        Lesson { host_bytes, host_flags: flags, ..self }
    }

    /// What needs the host memory, as a refusal names it: the lesson and its options.
    pub fn host_need(&self) -> String {
        match self.host_flags {
            [] => format!("the {} demo", self.name),
            flags => format!("the {} demo at its {}", self.name, flags.join(" and ")),
        }
    }

    /// This lesson, refusing with `check` before any GPU work.
    pub const fn with_check(self, check: fn(&Sizes, bool) -> Result<()>) -> Lesson {
        Lesson { check, ..self }
    }
}
