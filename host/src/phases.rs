//! Where a run's wall time goes, per demo: host inputs (generation and upload), result checks
//! (download and comparison), timed GPU runs, and the rest. Kept in the run record (`--json`)
//! and printed on stderr after the report, so a run on the GPU machine shows whether the host
//! keeps up with the device.

use std::cell::RefCell;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// One demo's wall time, seconds, by phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// The demo (or `memcpy ceiling`, measured once for the run).
    pub demo: String,
    /// Generating inputs and copying them to the device.
    pub inputs_s: f64,
    /// Copying results back and comparing them with the CPU references.
    pub checks_s: f64,
    /// Warm-up and timed launches (event timing, twins alternately).
    pub timed_s: f64,
    /// Everything from the demo's start to its end.
    pub total_s: f64,
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
}

impl Phases {
    /// Runs `work` as demo `demo`, counting its whole wall time as the demo's total.
    pub fn demo<R>(&self, demo: &str, work: impl FnOnce() -> R) -> R {
        self.done.borrow_mut().push(Phase { demo: demo.to_string(), ..Phase::default() });
        let start = Instant::now();
        let r = work();
        if let Some(p) = self.done.borrow_mut().last_mut() {
            p.total_s = start.elapsed().as_secs_f64();
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

    fn add(&self, kind: Kind, seconds: f64) {
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
/// decimal.
pub fn table(phases: &[Phase]) -> (Vec<String>, Vec<Vec<String>>) {
    let header = ["host phases (s)", "inputs", "checks", "timed", "other", "total"].map(String::from).to_vec();
    let row = |name: &str, p: &Phase| {
        let mut row = vec![name.to_string()];
        row.extend([p.inputs_s, p.checks_s, p.timed_s, p.other_s(), p.total_s].map(|s| format!("{s:.1}")));
        row
    };
    let sum = phases.iter().fold(Phase::default(), |a, p| Phase {
        demo: String::new(),
        inputs_s: a.inputs_s + p.inputs_s,
        checks_s: a.checks_s + p.checks_s,
        timed_s: a.timed_s + p.timed_s,
        total_s: a.total_s + p.total_s,
    });
    let mut rows: Vec<Vec<String>> = phases.iter().map(|p| row(&p.demo, p)).collect();
    rows.push(row("all demos", &sum));
    (header, rows)
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
        assert_eq!(rows[1][0], "all demos");
        assert_eq!(rows[1][2], "2.5");
    }
}
