//! Where a run's wall time goes, per demo: host inputs (generation and upload), result checks
//! (download and comparison), timed GPU runs, and the rest. Kept in the run record (`--json`)
//! and printed on stderr after the report, so a run on the GPU machine shows whether the host
//! keeps up with the device. Within a demo, named steps ([`Phases::step`]) split its time
//! further, so "other" says what it is (a module's JIT, a CPU reference, a chain's layout).

use std::cell::RefCell;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// One demo's wall time, seconds, by phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// The demo, or work outside the demos: `open device` (the driver and the module's JIT),
    /// `memcpy ceiling` (measured once for the run), `roofline clock`.
    pub demo: String,
    /// Generating inputs and copying them to the device.
    pub inputs_s: f64,
    /// Copying results back and comparing them with the CPU references.
    pub checks_s: f64,
    /// Warm-up and timed launches (event timing, twins alternately).
    pub timed_s: f64,
    /// Everything from the demo's start to its end.
    pub total_s: f64,
    /// The process's peak resident set at the demo's end, bytes (`VmHWM`, since the process
    /// started: [`crate::host_ram::peak_after`]), so the demo that raised it is the first row
    /// showing it; absent off Linux, for rows that are not demos, and from runs recorded before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
    /// The demo's named steps, in the order each first ran, each with the phases counted within
    /// it (`demo` is the step's name; steps have no steps). Absent from runs recorded before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Phase>,
}

impl Phase {
    /// What the three named phases leave of the total: allocation, driver queries, models.
    pub fn other_s(&self) -> f64 {
        (self.total_s - self.inputs_s - self.checks_s - self.timed_s).max(0.0)
    }
}

/// The phases a demo's work is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// [`Phase::inputs_s`].
    Inputs,
    /// [`Phase::checks_s`].
    Checks,
    /// [`Phase::timed_s`].
    Timed,
}

/// The phases of a run so far, one per demo started.
#[derive(Debug, Default)]
pub struct Phases {
    done: RefCell<Vec<Phase>>,
    /// Whether a demo is running: work outside one (after it, or before the first) counts
    /// nowhere, not in the last row.
    running: std::cell::Cell<bool>,
}

impl Phases {
    /// Runs `work` as demo `demo`, counting its whole wall time as the demo's total.
    pub fn demo<R>(&self, demo: &str, work: impl FnOnce() -> R) -> R {
        self.done.borrow_mut().push(Phase { demo: demo.to_string(), ..Phase::default() });
        let start = Instant::now();
        let outer = self.running.replace(true);
        let (r, peak) = crate::host_ram::peak_after(work);
        self.running.set(outer);
        if let Some(p) = self.done.borrow_mut().last_mut() {
            p.total_s = start.elapsed().as_secs_f64();
            p.peak_rss_bytes = peak.map(|b| b as u64);
        }
        r
    }

    /// Runs `work`, adding its wall time to phase `kind` of the demo running (nothing outside a
    /// demo).
    pub fn time<R>(&self, kind: Kind, work: impl FnOnce() -> R) -> R {
        let start = Instant::now();
        let r = work();
        self.add(kind, start.elapsed().as_secs_f64());
        r
    }

    /// Runs `work` as step `name` of the demo running, counting its wall time and the phases
    /// within it under that name (steps of one name add up); outside a demo, just runs it.
    pub fn step<R>(&self, name: &str, work: impl FnOnce() -> R) -> R {
        let before =
            self.done.borrow().last().filter(|_| self.running.get()).map(|p| (p.inputs_s, p.checks_s, p.timed_s));
        let start = Instant::now();
        let r = work();
        let total_s = start.elapsed().as_secs_f64();
        if let (Some((inputs, checks, timed)), Some(p)) = (before, self.done.borrow_mut().last_mut()) {
            let (di, dc, dt) = (p.inputs_s - inputs, p.checks_s - checks, p.timed_s - timed);
            match p.steps.iter_mut().find(|s| s.demo == name) {
                Some(s) => {
                    s.inputs_s += di;
                    s.checks_s += dc;
                    s.timed_s += dt;
                    s.total_s += total_s;
                }
                None => p.steps.push(Phase {
                    demo: name.to_string(),
                    inputs_s: di,
                    checks_s: dc,
                    timed_s: dt,
                    total_s,
                    ..Phase::default()
                }),
            }
        }
        r
    }

    /// Records `seconds` of work outside any demo (opening the device) as a row of its own.
    pub fn record(&self, name: &str, seconds: f64) {
        self.done.borrow_mut().push(Phase { demo: name.to_string(), total_s: seconds, ..Phase::default() });
    }

    fn add(&self, kind: Kind, seconds: f64) {
        if !self.running.get() {
            return;
        }
        if let Some(p) = self.done.borrow_mut().last_mut() {
            *match kind {
                Kind::Inputs => &mut p.inputs_s,
                Kind::Checks => &mut p.checks_s,
                Kind::Timed => &mut p.timed_s,
            } += seconds;
        }
    }

    /// The phases recorded so far, in run order.
    pub fn take(&self) -> Vec<Phase> {
        std::mem::take(&mut self.done.borrow_mut())
    }
}

/// The phases as a table for stderr: one row per demo and a total row, seconds with one
/// decimal, and the process's peak resident set at each demo's end in MB (1e6 bytes; `-` where
/// unknown): the demo that raised the peak is the row where it grows. The total row has the
/// largest.
pub fn table(phases: &[Phase]) -> (Vec<String>, Vec<Vec<String>>) {
    let header =
        ["host phases (s)", "inputs", "checks", "timed", "other", "total", "peak RSS MB"].map(String::from).to_vec();
    let row = |name: &str, p: &Phase| {
        let mut row = vec![name.to_string()];
        row.extend([p.inputs_s, p.checks_s, p.timed_s, p.other_s(), p.total_s].map(|s| format!("{s:.1}")));
        row.push(p.peak_rss_bytes.map_or("-".into(), |b| format!("{:.0}", b as f64 / 1e6)));
        row
    };
    let sum = phases.iter().fold(Phase::default(), |a, p| Phase {
        demo: String::new(),
        inputs_s: a.inputs_s + p.inputs_s,
        checks_s: a.checks_s + p.checks_s,
        timed_s: a.timed_s + p.timed_s,
        total_s: a.total_s + p.total_s,
        peak_rss_bytes: a.peak_rss_bytes.max(p.peak_rss_bytes),
        steps: Vec::new(),
    });
    let mut rows: Vec<Vec<String>> = phases.iter().map(|p| row(&p.demo, p)).collect();
    rows.push(row("all (start-up included)", &sum));
    (header, rows)
}

/// The demos' steps as a table for stderr, `demo: step` per row, and per demo with steps the
/// rest of its time outside them (`demo: rest`); `None` when no demo has steps.
pub fn steps_table(phases: &[Phase]) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let mut rows = Vec::new();
    for p in phases.iter().filter(|p| !p.steps.is_empty()) {
        let sum = |f: fn(&Phase) -> f64| p.steps.iter().map(f).sum::<f64>();
        let rest = Phase {
            demo: "rest".into(),
            inputs_s: (p.inputs_s - sum(|s| s.inputs_s)).max(0.0),
            checks_s: (p.checks_s - sum(|s| s.checks_s)).max(0.0),
            timed_s: (p.timed_s - sum(|s| s.timed_s)).max(0.0),
            total_s: (p.total_s - sum(|s| s.total_s)).max(0.0),
            ..Phase::default()
        };
        for s in p.steps.iter().chain([&rest]) {
            let mut row = vec![format!("{}: {}", p.demo, s.demo)];
            row.extend([s.inputs_s, s.checks_s, s.timed_s, s.other_s(), s.total_s].map(|v| format!("{v:.1}")));
            rows.push(row);
        }
    }
    let header = ["host steps (s)", "inputs", "checks", "timed", "other", "total"].map(String::from).to_vec();
    (!rows.is_empty()).then_some((header, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_add_up_per_demo() {
        let phases = Phases::default();
        phases.time(Kind::Checks, || ()); // outside any demo: not counted
        phases.demo("transpose", || {
            phases.add(Kind::Inputs, 1.5);
            phases.add(Kind::Checks, 2.0);
            phases.add(Kind::Checks, 0.5);
            phases.time(Kind::Timed, || std::thread::sleep(std::time::Duration::from_millis(20)));
        });
        let done = phases.take();
        assert_eq!(done.len(), 1);
        let p = &done[0];
        assert_eq!((p.demo.as_str(), p.inputs_s, p.checks_s), ("transpose", 1.5, 2.5));
        assert!(p.timed_s >= 0.02 && p.total_s >= p.timed_s, "{p:?}");
        // The hand-added seconds exceed the wall time: the rest is clamped at 0.
        assert_eq!(p.other_s(), 0.0);
        assert!(phases.take().is_empty());
        let (header, rows) = table(&done);
        assert_eq!(header.len(), rows[0].len());
        assert_eq!(rows[1][0], "all (start-up included)");
        assert_eq!(rows[1][2], "2.5");
        // This machine runs Linux: the demo's peak resident set is measured, in MB.
        assert!(p.peak_rss_bytes.is_some_and(|b| b > 0), "{p:?}");
        assert_eq!(header[6], "peak RSS MB");
        let mb = |b: u64| format!("{:.0}", b as f64 / 1e6);
        let open = Phase { demo: "open device".into(), total_s: 1.0, ..Phase::default() };
        let big = Phase { demo: "tma".into(), peak_rss_bytes: Some(640_400_000), ..Phase::default() };
        let (_, rows) = table(&[open, done[0].clone(), big]);
        let peaks: Vec<&str> = rows.iter().map(|r| r[6].as_str()).collect();
        assert_eq!(peaks, ["-", &mb(p.peak_rss_bytes.unwrap()), "640", "640"], "the total row has the largest");
        assert_eq!(steps_table(&done), None);
    }

    #[test]
    fn steps_split_a_demo_and_the_rest_is_what_they_leave() {
        let phases = Phases::default();
        phases.step("outside", || ()); // outside any demo: not counted
        phases.demo("tma", || {
            phases.step("sweep", || phases.add(Kind::Checks, 1.0));
            phases.step("rows", || phases.add(Kind::Timed, 0.5));
            phases.step("sweep", || phases.add(Kind::Checks, 2.0));
            phases.add(Kind::Inputs, 0.375);
        });
        // After the demo, a step or phase counts nowhere: not in the demo that ended, nor in a
        // recorded row.
        phases.step("late", || phases.add(Kind::Checks, 5.0));
        phases.record("open", 4.0);
        phases.time(Kind::Timed, || ());
        phases.add(Kind::Timed, 7.0);
        let done = phases.take();
        assert_eq!((done[0].checks_s, done[0].steps.len(), done[1].timed_s), (3.0, 2, 0.0));
        let steps: Vec<(&str, f64, f64)> =
            done[0].steps.iter().map(|s| (s.demo.as_str(), s.checks_s, s.timed_s)).collect();
        assert_eq!(steps, [("sweep", 3.0, 0.0), ("rows", 0.0, 0.5)]);
        assert_eq!((done[1].demo.as_str(), done[1].total_s, done[1].other_s()), ("open", 4.0, 4.0));
        let (header, rows) = steps_table(&done).unwrap();
        assert_eq!(header[0], "host steps (s)");
        let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(names, ["tma: sweep", "tma: rows", "tma: rest"]);
        assert_eq!((rows[0][2].as_str(), rows[2][1].as_str()), ("3.0", "0.4"));
    }
}
