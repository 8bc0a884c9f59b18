//! Reading a run record back (`memlab report run.json`): every figure finite and in its
//! physical range, so that a hand-edited or corrupted record is refused in one line naming the
//! field, instead of being drawn as if measured.

use std::path::Path;

use anyhow::{Context, Result};

use crate::demos::KernelRow;
use crate::report_dir::RunRecord;
use crate::series::Series;

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
            Err(e) => crate::refuse!("{} is not a memlab run record: {e}", path.display()),
        };
        if let Err(e) = check(&record) {
            crate::refuse!("{} is refused: {e}", path.display());
        }
        record.fill_occupancy_commands();
        record.rebuild_roofline();
        Ok(record)
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

/// Checks every figure of `record`.
///
/// # Errors
/// The first field out of its range, named by its path in the JSON (with the section's and
/// kernel's or series' names), its value and the rule.
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
    if let Some(gbs) = record.memcpy_gbs {
        positive("memcpy_gbs", gbs)?;
    }
    if let Some(ghz) = record.sm_clock_ghz {
        positive("sm_clock_ghz", ghz)?;
    }
    for (i, section) in record.sections.iter().enumerate() {
        let at = format!("sections[{i}] ({})", section.name);
        for (j, k) in section.kernels.iter().enumerate() {
            kernel(&format!("{at}.kernels[{j}] ({})", k.kernel), k)?;
        }
        for (j, s) in section.series.iter().enumerate() {
            series(&format!("{at}.series[{j}] ({})", s.name), s)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> RunRecord {
        serde_json::from_str(include_str!("../../docs/report/run.json")).unwrap()
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
                s.kernels.iter().position(|k| matches!(k.rate, crate::demos::Rate::Gbs(_))).map(|j| (i, j))
            })
            .unwrap();
        r.sections[i].kernels[j].rate = crate::demos::Rate::Gbs(-3992.0);
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
        // Extreme but finite and positive: valid (the charts must cope).
        let mut r = record();
        let s = r.sections.iter_mut().flat_map(|s| &mut s.series).next().unwrap();
        s.points[0].y = 1e308;
        assert_eq!(check(&r), Ok(()));
    }
}
