//! `memlab report` on arbitrary records: mutated copies of the real H200 record
//! (`docs/report/run.json`: any number replaced by any value, values of the wrong type, keys
//! removed) and records whose chart series are arbitrary values of the series type. Each ends,
//! within a few seconds ([`limit`]), in a written report or a one-line refusal: never a hang (a `y` of 1e308
//! once made the log axis loop forever), a panic, or a multi-line error.

use std::sync::mpsc;
use std::time::Duration;

use memlab::present::report_dir::{self, RunRecord};
use memlab::series::{Point, Series};
use proptest::prelude::*;
use serde_json::Value;

const REAL: &str = include_str!("../../docs/report/run.json");

/// What one record led to.
enum Outcome {
    Report,
    Refused(String),
}

/// How long one record may take: a minute, or ten times what the real record takes on this
/// machine now if that is longer. A report takes 0.2-0.3 s here; the bound is loose because a
/// loaded 2-core CI machine, running the other test modules' ptxas beside it, draws arbitrary
/// charts far slower (a clean clone missed five seconds), and a hang (the bug this catches: a
/// log axis looping forever) never ends at all.
fn limit() -> Duration {
    static LIMIT: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("memlab-record-props-{}-calibrate", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("run.json");
        std::fs::write(&path, REAL).unwrap();
        let start = std::time::Instant::now();
        let record = RunRecord::load(&path).expect("the real record loads");
        report_dir::write(&dir.join("out"), &record).expect("the real record's report");
        let took = start.elapsed();
        std::fs::remove_dir_all(&dir).unwrap();
        Duration::from_secs(60).max(10 * took)
    })
}

/// Reads `json` back as `memlab report` does and writes the report; panics past [`limit`].
fn report(json: String) -> Outcome {
    let limit = limit();
    static CASES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let case = CASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("memlab-record-props-{}-{case}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (send, receive) = mpsc::channel();
    let work = dir.clone();
    std::thread::spawn(move || {
        let path = work.join("run.json");
        std::fs::write(&path, json).unwrap();
        let outcome = RunRecord::load(&path).and_then(|record| report_dir::write(&work.join("out"), &record));
        let _ = send.send(outcome.map(|files| files.len()).map_err(|e| format!("{e:#}")));
    });
    let outcome = receive.recv_timeout(limit).unwrap_or_else(|_| panic!("a report or a refusal within {limit:?}"));
    let result = match outcome {
        Ok(files) => {
            assert!(files > 1 && dir.join("out/report.md").is_file());
            Outcome::Report
        }
        Err(e) => Outcome::Refused(e),
    };
    std::fs::remove_dir_all(&dir).unwrap();
    result
}

fn one_line(outcome: Outcome) -> Result<(), TestCaseError> {
    if let Outcome::Refused(e) = outcome {
        prop_assert!(!e.contains('\n') && !e.is_empty(), "a refusal in one line: {e}");
    }
    Ok(())
}

/// Every number in `v`, as a JSON pointer.
fn numbers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Number(_) => out.push(at),
        Value::Array(items) => items.iter().enumerate().for_each(|(i, x)| numbers(x, format!("{at}/{i}"), out)),
        Value::Object(map) => map.iter().for_each(|(k, x)| numbers(x, format!("{at}/{k}"), out)),
        _ => {}
    }
}

fn real() -> Value {
    serde_json::from_str(REAL).unwrap()
}

fn number_paths() -> Vec<String> {
    let mut out = Vec::new();
    numbers(&real(), String::new(), &mut out);
    out
}

/// A value for a number's place: any f64 (a non-finite one is written as `null`, as serde_json
/// writes it), extremes, integers of any size, or another type.
fn replacement() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(vec![1e308, -1e308, f64::MIN_POSITIVE, 5e-324, 0.0, -0.0, -1.0, 1e-300, 1e300])
            .prop_map(|f| serde_json::json!(f)),
        any::<i64>().prop_map(|i| serde_json::json!(i)),
        any::<u64>().prop_map(|u| serde_json::json!(u)),
        Just(Value::String("12".into())),
        Just(Value::Null),
    ]
}

/// Arbitrary points of a chart series: any finite or extreme coordinates, optional labels.
fn points() -> impl Strategy<Value = Vec<Point>> {
    let coordinate = prop_oneof![
        any::<f64>().prop_filter("JSON holds finite numbers", |f| f.is_finite()),
        0.0..1e4f64,
        prop::sample::select(vec![0.0, 1e-300, 1e300, 1e308, f64::MAX, -1.0]),
    ];
    prop::collection::vec(
        (coordinate.clone(), coordinate, prop::option::of("[a-z0-9 ]{0,12}")).prop_map(|(x, y, label)| Point {
            x,
            y,
            label,
        }),
        0..24,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn mutated_numbers_give_a_report_or_a_one_line_refusal(
        picks in prop::collection::vec((any::<prop::sample::Index>(), replacement()), 1..4)
    ) {
        let paths = number_paths();
        let mut doc = real();
        for (index, value) in picks {
            *doc.pointer_mut(index.get(&paths)).unwrap() = value;
        }
        one_line(report(doc.to_string()))?;
    }

    #[test]
    fn arbitrary_series_give_a_report_or_a_one_line_refusal(
        section in any::<prop::sample::Index>(),
        series in prop::collection::vec(points(), 1..4),
        names in prop::collection::vec(prop::sample::select(vec![
            "measured", "32-byte sector model", "128-byte segment model", "bank model", "roofline",
            "ld.global (L1 and L2)", "ld.global.cg (L2 only)", "reference", "other",
        ]), 4),
    ) {
        let mut doc = real();
        let sections = doc["sections"].as_array_mut().unwrap();
        let at = section.index(sections.len());
        let series: Vec<Series> = series
            .into_iter()
            .zip(names)
            .map(|(points, name)| Series { name: name.into(), x: "x".into(), y: "y".into(), points })
            .collect();
        sections[at]["series"] = serde_json::to_value(&series).unwrap();
        let valid = series.iter().flat_map(|s| &s.points).all(|p| p.x >= 0.0 && p.y >= 0.0);
        match report(doc.to_string()) {
            Outcome::Report => prop_assert!(valid, "a negative coordinate was drawn"),
            Outcome::Refused(e) => {
                prop_assert!(!valid, "a valid record was refused: {e}");
                prop_assert!(!e.contains('\n') && e.contains(".points["), "{e}");
            }
        }
    }

    #[test]
    fn damaged_structure_gives_a_one_line_refusal(cut in 1usize..REAL.trim_end().len()) {
        // A record cut short (a write that stopped midway) is not a record. The cut falls on a
        // character boundary: the record holds multi-byte characters ("4096³").
        let cut = REAL.floor_char_boundary(cut);
        match report(REAL[..cut].to_string()) {
            Outcome::Report => prop_assert!(false, "a record cut at byte {cut} was accepted"),
            Outcome::Refused(e) => prop_assert!(!e.contains('\n'), "{e}"),
        }
    }
}

#[test]
fn extreme_and_negative_figures_are_drawn_or_refused() {
    let mut doc = real();
    let coalescing = doc["sections"].as_array_mut().unwrap().iter_mut().find(|s| s["name"] == "coalescing").unwrap();
    coalescing["series"][0]["points"][2]["y"] = serde_json::json!(1e308);
    assert!(matches!(report(doc.to_string()), Outcome::Report), "a y of 1e308 is drawn, at the axis' edge");

    let mut doc = real();
    let row = doc["sections"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|s| s["kernels"].as_array_mut().unwrap())
        .find(|k| k["rate"].get("Gbs").is_some())
        .unwrap();
    row["rate"]["Gbs"] = serde_json::json!(-5.0);
    let Outcome::Refused(e) = report(doc.to_string()) else { panic!("a negative bandwidth was drawn") };
    assert!(e.contains(".rate is -5: must be a finite number, 0 or more"), "{e}");
}
