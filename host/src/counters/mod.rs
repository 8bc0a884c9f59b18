//! `run-demos --counters`: the lesson kernels' hardware counters beside the models' figures.
//! The lab re-runs itself under Nsight Compute (`ncu`) with the same lesson sizes, one timed
//! run and profiler ranges around each checked launch only ([`crate::gpu::profiler`]), so each
//! kernel [`measure`](crate::lab::measure) checked is profiled once, in the same order as
//! this run checked them ([`crate::lab::Lab::measured`]). The table becomes the run's
//! `counters` section (a sweep table, so records without it read as before).

pub mod expect;
pub mod ncu;
pub mod parse;

use std::ffi::OsString;
use std::path::Path;

use anyhow::{Result, bail};

use crate::lab::MeasuredLaunch;
use crate::lab::{Lab, Section};
use crate::registry::Options;
use expect::Counter;
use parse::Profiled;

/// The demos whose kernels are profiled: the lessons the models speak for (and whose runs
/// are short enough to replay).
pub const DEMOS: [&str; 7] = ["transpose", "matmul", "sgemm", "tensor", "coalescing", "banks", "occupancy"];

/// A measurement agrees with the model within this share of it (or of 1 where the model is 0).
pub const TOLERANCE: f64 = 0.05;

/// The line saying there is no `ncu` to run.
pub const NO_NCU: &str =
    "counters: no Nsight Compute (ncu not in $NCU, on PATH or at /usr/local/cuda/bin/ncu): no counters";

/// One line of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Kernel and size, `copy 8192x8192`.
    pub kernel: String,
    /// What is counted.
    pub counter: Counter,
    /// The model's figure, when it states one.
    pub model: Option<f64>,
    /// Nsight Compute's figure.
    pub measured: f64,
}

impl Line {
    /// MeasuredLaunch over model, when the model is not 0.
    pub fn ratio(&self) -> Option<f64> {
        self.model.filter(|&m| m != 0.0).map(|m| self.measured / m)
    }

    /// Whether the measurement is within [`TOLERANCE`] of the model.
    pub fn within(&self) -> Option<bool> {
        self.model.map(|m| (self.measured - m).abs() <= TOLERANCE * m.abs().max(1.0))
    }
}

/// Profiles the kernels this run checked in the demos of [`DEMOS`] (`starts`: each demo run
/// and the length of [`Lab::measured`] when it started), and returns the counters section;
/// `None`, with one line on stderr, when there is no `ncu`, profiling is not permitted or ncu
/// fails.
///
/// # Errors
/// The binary's own path is unknown, or ncu's output does not match the run's launches.
pub fn run(lab: &Lab, options: &Options, starts: &[(&str, usize)], ordinal: u32) -> Result<Option<Section>> {
    let measured = lab.measured.borrow();
    let (demos, launches) = profiled_launches(&measured, starts);
    if demos.is_empty() {
        eprintln!("counters: none of the demos run has lesson kernels to profile ({})", DEMOS.join(", "));
        return Ok(None);
    }
    let Some(ncu) = ncu::find(std::env::var_os("NCU"), std::env::var_os("PATH"), Path::new(ncu::DEFAULT_NCU)) else {
        eprintln!("{NO_NCU}");
        return Ok(None);
    };
    let exe = std::env::current_exe()?;
    let dir = std::env::temp_dir().join(format!("memlab-counters-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let report = dir.join("counters");
    let options_file = dir.join("lesson-options.json");
    std::fs::write(&options_file, serde_json::to_string(options)?)?;
    let child = ncu::child_args(&demos, &options_file, ordinal);
    eprintln!("counters: {} {}", ncu.display(), shell_words(&ncu::profile_args(&report, &exe, &child)));
    let outcome = ncu::run(&ncu, &ncu::profile_args(&report, &exe, &child), &report);
    let _ = std::fs::remove_dir_all(&dir);
    let csv = match outcome? {
        ncu::Outcome::Csv(csv) => csv,
        ncu::Outcome::Unavailable(line) => {
            eprintln!("{line}");
            return Ok(None);
        }
    };
    let lines = table(&launches, &parse::raw_csv(&csv)?, options.lessons.coalescing.bytes)?;
    Ok(Some(section(&lines, &demos)))
}

/// The demos of `starts` that [`DEMOS`] profiles, and the launches they checked, in order.
fn profiled_launches<'a>(
    measured: &'a [MeasuredLaunch],
    starts: &[(&'a str, usize)],
) -> (Vec<&'a str>, Vec<&'a MeasuredLaunch>) {
    let (mut demos, mut launches) = (Vec::new(), Vec::new());
    for (i, &(demo, start)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(measured.len(), |s| s.1);
        if DEMOS.contains(&demo) {
            demos.push(demo);
            launches.extend(&measured[start..end]);
        }
    }
    (demos, launches)
}

/// The options as one shell line, for the log.
fn shell_words(args: &[OsString]) -> String {
    args.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ")
}

/// Pairs each checked launch with the profiled one at the same place, and gives every counter
/// the model states or ncu measured (a shared-memory ratio of a kernel with no shared access
/// has no line).
///
/// # Errors
/// The profiled launches are not the checked ones (another count, or a kernel or shape
/// differs at some place).
pub fn table(launches: &[&MeasuredLaunch], profiled: &[Profiled], strided_bytes: usize) -> Result<Vec<Line>> {
    if launches.len() != profiled.len() {
        bail!("counters: ncu profiled {} launches, the run checked {}", profiled.len(), launches.len());
    }
    let mut lines = Vec::new();
    for (i, (launch, got)) in launches.iter().zip(profiled).enumerate() {
        let (grid, block) = (launch.shape.grid, launch.shape.block);
        if got.kernel != launch.kernel || (got.grid.0, got.grid.1) != grid || (got.block.0, got.block.1) != block {
            bail!(
                "counters: launch {i} is {} {:?} x {:?} under ncu, but {} {grid:?} x {block:?} in the run",
                got.kernel,
                got.grid,
                got.block,
                launch.kernel
            );
        }
        let model = expect::model(launch, strided_bytes);
        for counter in Counter::ALL {
            let Some(measured) = counter.measured(&got.metrics) else { continue };
            lines.push(Line {
                kernel: format!("{} {}", launch.kernel, launch.size),
                counter,
                model: model.get(&counter).copied(),
                measured,
            });
        }
    }
    Ok(lines)
}

/// The `counters` section: one sweep row a line.
pub fn section(lines: &[Line], demos: &[&str]) -> Section {
    let header = ["kernel", "counter", "model", "measured", "ratio", "within 5%"].map(String::from).to_vec();
    let rows = lines
        .iter()
        .map(|l| {
            vec![
                l.kernel.clone(),
                l.counter.label().to_string(),
                l.model.map_or("-".into(), figure),
                figure(l.measured),
                l.ratio().map_or("-".into(), |r| format!("{r:.3}")),
                l.within().map_or("-", |w| if w { "yes" } else { "no" }).to_string(),
            ]
        })
        .collect();
    let agreed = lines.iter().filter(|l| l.within() == Some(true)).count();
    let modelled = lines.iter().filter(|l| l.model.is_some()).count();
    Section {
        name: "counters".into(),
        title: format!("Nsight Compute counters beside the models: {}", demos.join(", ")),
        lesson: "Each lesson kernel's checked launch, profiled once: what the hardware counted next to what the lab's models say it should.".into(),
        sweep: Some((header, rows)),
        notes: vec![format!(
            "{agreed} of {modelled} modelled counters within 5%; the model column is empty where the lab states no model; achieved occupancy is set against the driver's theoretical figure, its ceiling"
        )],
        ..Section::default()
    }
}

/// A figure: whole numbers as integers, others to 3 decimals.
fn figure(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{v:.0}") } else { format!("{v:.3}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::kernel::DriverOccupancy;
    use crate::gpu::launch::LaunchShape;

    fn measured(kernel: &str, size: &str, grid: (u32, u32), block: (u32, u32)) -> MeasuredLaunch {
        MeasuredLaunch {
            kernel: kernel.into(),
            size: size.into(),
            shape: LaunchShape { grid, block, smem_bytes: 0 },
            occupancy: DriverOccupancy { active_blocks: 8, active_warps: 64, occupancy: 1.0 },
        }
    }

    #[test]
    fn the_fixture_pairs_with_the_run_and_judges_each_counter() {
        let run = [
            measured("copy", "8192x8192", (256, 256), (32, 8)),
            measured("shared_bank_probe", "stride 1", (1056, 1), (256, 1)),
        ];
        let launches: Vec<&MeasuredLaunch> = run.iter().collect();
        let profiled = parse::raw_csv(parse::tests::FIXTURE).unwrap();
        let lines = table(&launches, &profiled, 0).unwrap();
        let line = |kernel: &str, c: Counter| lines.iter().find(|l| l.kernel == kernel && l.counter == c).unwrap();
        // 2^28 B read against the model's 4 x 8192^2: ratio 1.
        let dram = line("copy 8192x8192", Counter::DramRead);
        assert_eq!(
            (dram.model, dram.measured, dram.ratio(), dram.within()),
            (Some(268435456.0), 268435456.0, Some(1.0), Some(true))
        );
        // 8388608 sectors over 2097152 requests: 4, as the row of 32 floats.
        assert_eq!(line("copy 8192x8192", Counter::LdSectorsPerRequest).measured, 4.0);
        // No model for the L2 hit rate: the measurement alone.
        let hit = line("copy 8192x8192", Counter::L2HitRate);
        assert_eq!((hit.model, hit.within()), (None, None));
        // The probe issued no global loads: no sectors-per-request line; its DRAM read has no model.
        assert!(lines.iter().all(|l| !(l.kernel.starts_with("shared") && l.counter == Counter::LdSectorsPerRequest)));
        let rows = section(&lines, &["transpose"]).sweep.unwrap().1;
        assert!(rows.contains(
            &["copy 8192x8192", "DRAM bytes read", "268435456", "268435456", "1.000", "yes"].map(String::from).to_vec()
        ));
    }

    #[test]
    fn a_profile_that_is_not_the_run_is_refused() {
        let profiled = parse::raw_csv(parse::tests::FIXTURE).unwrap();
        let other = measured("copy", "8192x8192", (128, 256), (32, 8));
        let probe = measured("shared_bank_probe", "stride 1", (1056, 1), (256, 1));
        assert_eq!(
            table(&[&other, &probe], &profiled, 0).unwrap_err().to_string(),
            "counters: launch 0 is copy (256, 256, 1) x (32, 8, 1) under ncu, but copy (128, 256) x (32, 8) in the run"
        );
        assert_eq!(
            table(&[&probe], &profiled, 0).unwrap_err().to_string(),
            "counters: ncu profiled 2 launches, the run checked 1"
        );
    }

    #[test]
    fn within_five_percent_and_of_one_where_the_model_is_zero() {
        let line = |model, measured| Line { kernel: String::new(), counter: Counter::DramRead, model, measured };
        assert_eq!(line(Some(100.0), 104.9).within(), Some(true));
        assert_eq!(line(Some(100.0), 94.0).within(), Some(false));
        // banks.md's 0.015 conflicts a request where the model says 0.
        assert_eq!((line(Some(0.0), 0.015).within(), line(Some(0.0), 0.015).ratio()), (Some(true), None));
        assert_eq!(line(None, 3.0).within(), None);
    }

    #[test]
    fn only_the_profiled_demos_launches_are_expected() {
        let run = [
            measured("copy", "a", (1, 1), (1, 1)),
            measured("l2_probe", "b", (1, 1), (1, 1)),
            measured("strided_read", "c", (1, 1), (1, 1)),
        ];
        let (demos, launches) = profiled_launches(&run, &[("transpose", 0), ("l2", 1), ("coalescing", 2)]);
        assert_eq!(demos, ["transpose", "coalescing"]);
        assert_eq!(launches.iter().map(|l| l.kernel.as_str()).collect::<Vec<_>>(), ["copy", "strided_read"]);
    }
}
