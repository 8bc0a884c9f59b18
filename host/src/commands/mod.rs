//! The binary's commands: each module holds one command's options (`Args`, parsed by clap in
//! `main.rs`) and its `run`, which returns whether every check passed.

pub mod autotune;
pub mod banks;
pub mod bench;
pub mod coalescing;
pub mod collectives;
pub mod devices;
pub mod doctor;
pub mod hierarchy;
pub mod host_memory;
pub mod inspect;
pub mod multi;
pub mod occupancy;
pub mod peer;
pub mod race;
pub mod report;
pub mod run_demos;

/// Timed and warm-up runs per measurement, shared by `run-demos` and `peer`.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct Runs {
    /// Timed runs per measurement, at most (the median and minimum are reported); a measurement
    /// stops after 5 once its runs add up to 100 ms with their median within 1% of their minimum.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Untimed warm-up runs per measurement.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub warmup: u32,
}

impl Runs {
    /// As the timing module takes them.
    pub fn repeats(self) -> crate::gpu::timing::Repeats {
        crate::gpu::timing::Repeats { warmup: self.warmup as usize, runs: self.runs as usize }
    }
}

/// `--json FILE` and `--report DIR`, shared by `run-demos` and `peer`.
#[derive(clap::Args, Debug, Clone)]
pub struct Outputs {
    /// Also write every figure as JSON to FILE (`memlab report` reads a run-demos file back).
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Also write a Markdown report with SVG and PNG charts into DIR.
    #[arg(long, value_name = "DIR")]
    pub report: Option<std::path::PathBuf>,
}

impl Outputs {
    /// The paths the run on `ordinal` writes (each suffixed `-gpuN` when `several` devices run,
    /// see [`multi::per_device_path`]), checked before any GPU work so a run never ends in
    /// "cannot write".
    ///
    /// # Errors
    /// One line naming the flag, the path and the problem.
    pub fn for_device(&self, ordinal: u32, several: bool) -> anyhow::Result<Outputs> {
        let json = self.json.as_ref().map(|p| multi::per_device_path(p, ordinal, several));
        let report = self.report.as_ref().map(|d| multi::per_device_path(d, ordinal, several));
        if let Some(path) = &json {
            crate::present::output::check_file("--json", path)?;
        }
        if let Some(dir) = &report {
            crate::present::output::check_dir("--report", dir)?;
        }
        Ok(Outputs { json, report })
    }
}
