//! Reading a run record back (`memlab report run.json`): every figure finite and in its
//! physical range, so that a hand-edited or corrupted record is refused in one line naming the
//! field, instead of being drawn as if measured.

use std::path::Path;

use anyhow::{Context, Result};

use crate::lab::{KernelRow, Rate};
use crate::model::roofline::{SM_BYTES_PER_CLOCK, max_flop_per_clock};
use crate::present::report_dir::RunRecord;
use crate::series::Series;
use crate::verify::Check;

impl RunRecord {
    /// Reads a record written by `run-demos --json`, checked by [`check`], with the fields
    /// this version derives filled in.
    ///
    /// # Errors
    /// An unreadable file, JSON that is not a run record (one line with serde's position), or
    /// a figure out of its physical range (one line naming the field).
    pub fn load(path: &Path) -> Result<RunRecord> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let mut record: RunRecord = match serde_json::from_str(&text) {
            Ok(record) => record,
            Err(_) if let Some(command) = other_record(&text) => crate::refuse!(
                "{} is a `memlab {command}` record; report reads run-demos records (`memlab run-demos --json FILE`)",
                path.display()
            ),
            Err(e) => match top_level(&text) {
                Some(found) => crate::refuse!(
                    "{} is not a memlab run record: it holds {found}, where `run-demos --json` writes an object",
                    path.display()
                ),
                None => crate::refuse!("{} is not a memlab run record: {e}", path.display()),
            },
        };
        if let Err(e) = check(&record) {
            crate::refuse!("{} is refused: {e}", path.display());
        }
        record.fill_occupancy_commands();
        record.rebuild_roofline();
        Ok(record)
    }
}

/// What JSON `text` holds at its top level when that is valid JSON but not an object: "an
/// array", "a number", ... (`None` for an object or for text that is not JSON).
fn top_level(text: &str) -> Option<&'static str> {
    match serde_json::from_str(text).ok()? {
        serde_json::Value::Object(_) => None,
        serde_json::Value::Array(_) => Some("an array"),
        serde_json::Value::String(_) => Some("a string"),
        serde_json::Value::Number(_) => Some("a number"),
        serde_json::Value::Bool(_) => Some("a boolean"),
        serde_json::Value::Null => Some("null"),
    }
}

/// The command whose JSON record `text` is when it is another command's than run-demos's:
/// `bench` (an object with its `against` and `rounds`, no `sections`), `peer` (its
/// `topology` and `copy_gbs` matrices) or `autotune` (the tuned file's `about` and `choices`).
fn other_record(text: &str) -> Option<&'static str> {
    let Ok(serde_json::Value::Object(doc)) = serde_json::from_str(text) else { return None };
    let has = |keys: &[&str]| keys.iter().all(|k| doc.contains_key(*k));
    if has(&["against", "rounds"]) && !doc.contains_key("sections") {
        Some("bench")
    } else if has(&["topology", "copy_gbs"]) {
        Some("peer")
    } else if has(&["about", "choices"]) {
        Some("autotune")
    } else {
        None
    }
}

/// Why a field is refused: `"<field> is <value>: <rule>"`.
type Refusal = String;

fn refuse(field: &str, value: impl std::fmt::Display, rule: &str) -> Result<(), Refusal> {
    Err(format!("{field} is {value}: {rule}"))
}

/// A time, a rate of a run that moved data, a clock: finite and above 0.
fn positive(field: &str, v: f64) -> Result<(), Refusal> {
    if v.is_finite() && v > 0.0 { Ok(()) } else { refuse(field, v, "must be a finite number above 0") }
}

/// A count of work, a rate, a ratio, a chart coordinate: finite and 0 or more.
fn non_negative(field: &str, v: f64) -> Result<(), Refusal> {
    if v.is_finite() && v >= 0.0 { Ok(()) } else { refuse(field, v, "must be a finite number, 0 or more") }
}

/// A count the hardware has at least one of (SMs, threads per block, clock).
fn at_least_one(field: &str, v: u64) -> Result<(), Refusal> {
    if v >= 1 { Ok(()) } else { refuse(field, v, "must be 1 or more") }
}

/// What no measured rate of this device can pass: its SMs at the fastest clock in the record,
/// times [`SM_BYTES_PER_CLOCK`] for GB/s (of any level: caches serve global reads above DRAM's
/// peak, so DRAM's is no bound) and [`max_flop_per_clock`] for TFLOP/s.
struct Ceilings {
    gbs: f64,
    tflops: f64,
}

impl Ceilings {
    fn of(record: &RunRecord) -> Ceilings {
        let d = &record.device;
        let ghz = (f64::from(d.sm_clock_khz) / 1e6).max(record.sm_clock_ghz.unwrap_or(0.0));
        let per_clock = f64::from(d.sms) * ghz;
        Ceilings {
            gbs: per_clock * f64::from(SM_BYTES_PER_CLOCK),
            tflops: per_clock * f64::from(max_flop_per_clock(d.cc.0, d.cc.1)) / 1e3,
        }
    }

    /// Refuses a rate above its ceiling.
    fn check(&self, field: &str, rate: Rate, device: &str) -> Result<(), Refusal> {
        let (ceiling, unit, what) = match rate {
            Rate::Gbs(_) | Rate::SharedGbs(_) => (self.gbs, "GB/s", "SMs x clock x 128 B, the SMs' load/store path"),
            Rate::Tflops(_) => (self.tflops, "TFLOP/s", "SMs x clock x its fastest unit's FLOP per clock"),
        };
        let v = rate.value();
        if v > ceiling {
            let rule = format!("above {device}'s physical limit of {ceiling:.0} {unit} ({what})");
            // Scientific notation for a figure beyond any device: 1e300, not 301 digits.
            let shown = if v >= 1e9 { format!("{v:e}") } else { v.to_string() };
            refuse(field, shown, &rule)?;
        }
        Ok(())
    }
}

/// A series' rate, by its y unit (`GB/s`, `GB/s, all SMs`, `TFLOP/s`): `None` for a series of
/// another quantity (cycles, ratios, hit fractions).
fn series_rate(s: &Series, y: f64) -> Option<Rate> {
    if s.y.starts_with("GB/s") {
        Some(Rate::Gbs(y))
    } else if s.y.starts_with("TFLOP/s") {
        Some(Rate::Tflops(y))
    } else {
        None
    }
}

/// A section check agrees with the sweep row that shows it: the row's check cell, which names
/// the check's output digest (`ok (...), output 1f2e...` from [`Check::summary`]), says `ok`
/// exactly when the check passed.
fn shown_check(at: &str, c: &Check, sweep: Option<&(Vec<String>, Vec<Vec<String>>)>) -> Result<(), Refusal> {
    let digest = format!("output {:016x}", c.digest);
    let Some(cell) = sweep.into_iter().flat_map(|(_, rows)| rows.iter().flatten()).find(|cell| cell.ends_with(&digest))
    else {
        return Ok(());
    };
    if cell.starts_with("ok") != c.passed() {
        let verdict = if c.passed() { "passed" } else { "failed" };
        refuse(
            &format!("{at}.mismatches"),
            c.mismatches,
            &format!("the check {verdict}, but its sweep row says `{cell}`"),
        )?;
    }
    Ok(())
}

/// A result check whose figures agree: mismatches within the elements checked, and a first
/// mismatch recorded exactly when there are mismatches (a check read back prints "ok" from its
/// first mismatch).
fn result_check(at: &str, c: &Check) -> Result<(), Refusal> {
    if c.mismatches > c.checked {
        refuse(&format!("{at}.mismatches"), c.mismatches, &format!("more than the {} elements checked", c.checked))?;
    }
    match (&c.first_bad, c.mismatches) {
        (None, m) if m > 0 => {
            refuse(&format!("{at}.mismatches"), m, "but first_bad is null: a failed check names its first mismatch")
        }
        (Some((i, ..)), 0) => refuse(&format!("{at}.first_bad"), format!("at {i}"), "but mismatches is 0"),
        _ => Ok(()),
    }
}

fn kernel(at: &str, k: &KernelRow) -> Result<(), Refusal> {
    let t = &k.timing;
    positive(&format!("{at}.timing.median_ms"), t.median_ms)?;
    positive(&format!("{at}.timing.min_ms"), t.min_ms)?;
    if t.min_ms > t.median_ms {
        refuse(&format!("{at}.timing.min_ms"), t.min_ms, &format!("must not exceed median_ms ({})", t.median_ms))?;
    }
    at_least_one(&format!("{at}.timing.runs"), t.runs as u64)?;
    let occupancy = k.occupancy.occupancy;
    if !(occupancy.is_finite() && (0.0..=1.0).contains(&occupancy)) {
        refuse(&format!("{at}.occupancy.occupancy"), occupancy, "must be a fraction from 0 to 1")?;
    }
    non_negative(&format!("{at}.rate"), k.rate.value())?;
    result_check(&format!("{at}.check"), &k.check)?;
    non_negative(&format!("{at}.work.flop"), k.work.flop)?;
    non_negative(&format!("{at}.work.bytes"), k.work.bytes)?;
    let s = &k.shape;
    for (name, v) in [("grid.0", s.grid.0), ("grid.1", s.grid.1), ("block.0", s.block.0), ("block.1", s.block.1)] {
        at_least_one(&format!("{at}.shape.{name}"), v.into())?;
    }
    Ok(())
}

/// A series' coordinates: finite, and 0 or more except the y of a series drawn on a linear
/// axis that shows values below 0 ([`crate::charts::SIGNED_Y_SERIES`]).
fn series(at: &str, s: &Series) -> Result<(), Refusal> {
    let signed_y = crate::charts::SIGNED_Y_SERIES.contains(&s.name.as_str());
    for (i, p) in s.points.iter().enumerate() {
        non_negative(&format!("{at}.points[{i}].x"), p.x)?;
        match signed_y {
            true if !p.y.is_finite() => refuse(&format!("{at}.points[{i}].y"), p.y, "must be a finite number")?,
            true => {}
            false => non_negative(&format!("{at}.points[{i}].y"), p.y)?,
        }
    }
    Ok(())
}

/// Sections a record holds besides one per demo ([`crate::registry::NAMES`]).
const SECTION_NAMES: [&str; 2] = ["roofline", "race"];

/// Checks every figure of `record`.
///
/// # Errors
/// The first field out of its range, named by its path in the JSON (with the section's and
/// kernel's or series' names), its value and the rule: a rate above the device's physical
/// limit ([`Ceilings`]: a kernel's, the memcpy's, a chart's point in GB/s or TFLOP/s), a
/// result check whose figures disagree or that its sweep row shows otherwise, a section name
/// memlab does not write.
pub fn check(record: &RunRecord) -> Result<(), Refusal> {
    let d = &record.device;
    for (name, v) in [
        ("cc.0", d.cc.0.into()),
        ("sms", d.sms.into()),
        ("regs_per_sm", d.regs_per_sm.into()),
        ("max_threads_per_sm", d.max_threads_per_sm.into()),
        ("max_threads_per_block", d.max_threads_per_block.into()),
        ("max_blocks_per_sm", d.max_blocks_per_sm.into()),
        ("sm_clock_khz", d.sm_clock_khz.into()),
        ("mem_clock_khz", d.mem_clock_khz.into()),
        ("bus_width_bits", d.bus_width_bits.into()),
        ("total_mem_bytes", d.total_mem_bytes),
    ] {
        at_least_one(&format!("device.{name}"), v)?;
    }
    if let Some(ghz) = record.sm_clock_ghz {
        positive("sm_clock_ghz", ghz)?;
        // The record's own compute ceiling scales with it, so an absurd clock would excuse any rate.
        let (lo, hi) = crate::summary::roofline::PLAUSIBLE_GHZ;
        if !(lo..=hi).contains(&ghz) {
            return refuse("sm_clock_ghz", ghz, &format!("no SM runs at that clock: allowed {lo}..={hi} GHz"));
        }
    }
    let ceilings = Ceilings::of(record);
    if let Some(gbs) = record.memcpy_gbs {
        positive("memcpy_gbs", gbs)?;
        ceilings.check("memcpy_gbs", Rate::Gbs(gbs), &d.name)?;
    }
    for (i, section) in record.sections.iter().enumerate() {
        let at = format!("sections[{i}] ({})", section.name);
        if !SECTION_NAMES.contains(&section.name.as_str()) && !crate::registry::NAMES.contains(&section.name.as_str()) {
            let known = [&crate::registry::NAMES[..], &SECTION_NAMES[..]].concat().join(", ");
            refuse(&format!("sections[{i}].name"), &section.name, &format!("not a section memlab writes ({known})"))?;
        }
        for (j, k) in section.kernels.iter().enumerate() {
            let at = format!("{at}.kernels[{j}] ({})", k.kernel);
            kernel(&at, k)?;
            ceilings.check(&format!("{at}.rate"), k.rate, &d.name)?;
        }
        for (j, c) in section.checks.iter().enumerate() {
            result_check(&format!("{at}.checks[{j}]"), c)?;
            shown_check(&format!("{at}.checks[{j}]"), c, section.sweep.as_ref())?;
        }
        for (j, s) in section.series.iter().enumerate() {
            let at = format!("{at}.series[{j}] ({})", s.name);
            series(&at, s)?;
            for (p, point) in s.points.iter().enumerate() {
                if let Some(rate) = series_rate(s, point.y) {
                    ceilings.check(&format!("{at}.points[{p}].y"), rate, &d.name)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> RunRecord {
        serde_json::from_str(include_str!("../../../docs/report/run.json")).unwrap()
    }

    #[test]
    fn the_recorded_h200_run_passes() {
        assert_eq!(check(&record()), Ok(()));
    }

    #[test]
    fn a_negative_bandwidth_is_refused_by_its_field() {
        let mut r = record();
        let (i, j) = r
            .sections
            .iter()
            .enumerate()
            .find_map(|(i, s)| {
                s.kernels.iter().position(|k| matches!(k.rate, crate::lab::Rate::Gbs(_))).map(|j| (i, j))
            })
            .unwrap();
        r.sections[i].kernels[j].rate = crate::lab::Rate::Gbs(-3992.0);
        let e = check(&r).unwrap_err();
        let k = &r.sections[i].kernels[j];
        assert_eq!(
            e,
            format!(
                "sections[{i}] ({}).kernels[{j}] ({}).rate is -3992: must be a finite number, 0 or more",
                r.sections[i].name, k.kernel
            )
        );
    }

    #[test]
    fn a_bench_record_is_refused_in_one_line() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/measurements/records/twins/bench.json"));
        let e = RunRecord::load(path).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "bench.json is a `memlab bench` record; report reads run-demos records (`memlab run-demos --json FILE`)"
            ),
            "{e}"
        );
        assert_eq!(other_record(include_str!("../../../docs/report/run.json")), None);
        let peer = include_str!("../../../docs/measurements/records/peer/peer.json");
        assert_eq!(other_record(peer), Some("peer"));
        assert_eq!(other_record(crate::tuned::EMBEDDED), Some("autotune"));
    }

    /// The first kernel row of `r` with its section's index and name and its own.
    fn first_row(r: &mut RunRecord) -> (String, &mut KernelRow) {
        let (i, s) = r.sections.iter_mut().enumerate().find(|(_, s)| !s.kernels.is_empty()).unwrap();
        let at = format!("sections[{i}] ({}).kernels[0] ({})", s.name, s.kernels[0].kernel);
        (at, &mut s.kernels[0])
    }

    #[test]
    fn a_check_whose_figures_disagree_is_refused() {
        let mut r = record();
        let (at, k) = first_row(&mut r);
        k.check.mismatches = 5;
        assert_eq!(
            check(&r).unwrap_err(),
            format!("{at}.check.mismatches is 5: but first_bad is null: a failed check names its first mismatch")
        );
        let mut r = record();
        let (at, k) = first_row(&mut r);
        k.check.first_bad = Some((7, "1".into(), "2".into()));
        assert_eq!(check(&r).unwrap_err(), format!("{at}.check.first_bad is at 7: but mismatches is 0"));
        let mut r = record();
        let (at, k) = first_row(&mut r);
        let checked = k.check.checked;
        (k.check.mismatches, k.check.first_bad) = (checked + 1, Some((0, "1".into(), "2".into())));
        assert_eq!(
            check(&r).unwrap_err(),
            format!("{at}.check.mismatches is {}: more than the {checked} elements checked", checked + 1)
        );
        // A failed check that says so is a record of a failure, not an inconsistent one.
        let mut r = record();
        let (_, k) = first_row(&mut r);
        (k.check.mismatches, k.check.first_bad) = (1, Some((0, "1".into(), "2".into())));
        assert_eq!(check(&r), Ok(()));
    }

    #[test]
    fn an_sm_clock_no_gpu_runs_at_is_refused() {
        let mut r = record();
        r.sm_clock_ghz = Some(1e6);
        let e = check(&r).unwrap_err();
        assert!(
            e.starts_with("sm_clock_ghz") && e.contains("is 1000000: no SM runs at that clock: allowed 0.1..=5 GHz"),
            "{e}"
        );
        r.sm_clock_ghz = Some(1.98);
        assert_eq!(check(&r), Ok(()));
    }

    #[test]
    fn a_rate_above_the_physical_limit_is_refused() {
        let r = record();
        let c = Ceilings::of(&r);
        let d = &r.device;
        // The H200: 132 SMs at 1.98 GHz, 128 B and 8192 FLOP (FP8 tensor) per SM per clock.
        assert!((c.gbs - f64::from(d.sms) * 1.98 * 128.0).abs() < 1.0, "{}", c.gbs);
        assert!((c.tflops - f64::from(d.sms) * 1.98 * 8192.0 / 1e3).abs() < 0.1, "{}", c.tflops);
        let mut r = record();
        let (at, k) = first_row(&mut r);
        k.rate = match k.rate {
            Rate::Tflops(_) => Rate::Tflops(1e300),
            Rate::Gbs(_) => Rate::Gbs(1e300),
            Rate::SharedGbs(_) => Rate::SharedGbs(1e300),
        };
        let e = check(&r).unwrap_err();
        assert!(e.starts_with(&format!("{at}.rate is 1e300: above NVIDIA H200's physical limit of ")), "{e}");
        // Just above the ceiling is refused; every recorded rate is below it.
        let mut r = record();
        let (_, k) = first_row(&mut r);
        k.rate = Rate::SharedGbs(c.gbs * 1.001);
        assert!(check(&r).unwrap_err().contains(&format!("physical limit of {:.0} GB/s", c.gbs)));
    }

    #[test]
    fn an_unknown_section_is_refused() {
        let mut r = record();
        r.sections[1].name = "transposes".into();
        let e = check(&r).unwrap_err();
        assert!(
            e.starts_with("sections[1].name is transposes: not a section memlab writes (memcpy, transpose, "),
            "{e}"
        );
        assert!(e.ends_with(", roofline, race)"), "{e}");
    }

    #[test]
    fn out_of_range_figures_are_named() {
        let mut r = record();
        r.memcpy_gbs = Some(0.0);
        assert_eq!(check(&r).unwrap_err(), "memcpy_gbs is 0: must be a finite number above 0");
        let mut r = record();
        r.device.sms = 0;
        assert_eq!(check(&r).unwrap_err(), "device.sms is 0: must be 1 or more");
        let mut r = record();
        let k = r.sections.iter_mut().flat_map(|s| &mut s.kernels).next().unwrap();
        k.occupancy.occupancy = 1.5;
        assert!(check(&r).unwrap_err().ends_with(".occupancy.occupancy is 1.5: must be a fraction from 0 to 1"));
        let mut r = record();
        let s = r.sections.iter_mut().flat_map(|s| &mut s.series).next().unwrap();
        s.points[0].y = f64::NAN;
        assert!(check(&r).unwrap_err().ends_with(".points[0].y is NaN: must be a finite number, 0 or more"));
        // Extreme but finite and positive, in a unit of no rate: valid (the charts must cope).
        let mut r = record();
        let s = r.sections.iter_mut().flat_map(|s| &mut s.series).find(|s| s.y.starts_with("cycles")).unwrap();
        s.points[0].y = 1e308;
        assert_eq!(check(&r), Ok(()));
    }

    #[test]
    fn a_chart_rate_and_the_memcpy_above_the_physical_limit_are_refused() {
        let c = Ceilings::of(&record());
        let mut r = record();
        r.memcpy_gbs = Some(c.gbs * 1.001);
        assert!(check(&r).unwrap_err().starts_with("memcpy_gbs is "), "{:?}", check(&r));
        for unit in ["GB/s", "TFLOP/s"] {
            let mut r = record();
            let (i, s) = r.sections.iter_mut().enumerate().find(|(_, s)| s.series.iter().any(|x| x.y == unit)).unwrap();
            let name = s.name.clone();
            let (j, series) = s.series.iter_mut().enumerate().find(|(_, x)| x.y == unit).unwrap();
            let limit = if unit == "GB/s" { c.gbs } else { c.tflops };
            series.points[0].y = limit * 1.001;
            let at = format!("sections[{i}] ({name}).series[{j}] ({}).points[0].y is ", series.name);
            let e = check(&r).unwrap_err();
            assert!(e.starts_with(&at) && e.contains(&format!("physical limit of {limit:.0} {unit}")), "{e}");
        }
    }

    #[test]
    fn a_failed_check_its_sweep_row_shows_as_ok_is_refused() {
        let mut r = record();
        let (i, s) =
            r.sections.iter_mut().enumerate().find(|(_, s)| !s.checks.is_empty() && s.sweep.is_some()).unwrap();
        let name = s.name.clone();
        (s.checks[0].mismatches, s.checks[0].first_bad) = (3, Some((5, "1".into(), "2".into())));
        let digest = format!("output {:016x}", s.checks[0].digest);
        let rows = &s.sweep.as_ref().unwrap().1;
        let shown = rows.iter().flatten().find(|c| c.ends_with(&digest)).unwrap().clone();
        assert!(shown.starts_with("ok ("), "{shown}");
        assert_eq!(
            check(&r).unwrap_err(),
            format!(
                "sections[{i}] ({name}).checks[0].mismatches is 3: the check failed, but its sweep row says `{shown}`"
            )
        );
    }
}
