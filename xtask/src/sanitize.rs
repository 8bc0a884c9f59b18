//! `cargo xtask sanitize-script DIR`: writes `DIR/sanitize.sh`, which runs every kernel of
//! `memlab run-demos` under compute-sanitizer's four tools (memcheck, racecheck, synccheck,
//! initcheck) at awkward sizes and prints one Markdown row per run. A lesson of the `lessons!`
//! list that no preset names runs at its defaults ([`lesson_presets`]), so a new lesson is in
//! the matrix without a line here.
//!
//! Every run passes `--sanitizer`: the lessons' fixed footprints (grids that fill every SM,
//! hundreds of L2 passes, 200 000-block reads, footprint sweeps) shrink to a few blocks while
//! every kernel still launches at the preset's sizes (`host/src/lab/sanitizer.rs`), and memlab
//! ends with the line `kernels launched (N of M): ...`, whose N each row shows.
//!
//! The GPU machines have compute-sanitizer but no cargo, so the matrix is a POSIX shell script
//! generated from the tables below; it runs next to a bundled `memlab` (`cargo xtask bundle DIR`).
//! The race lesson's broken kernel is not in the matrix: `run-demos` never launches it.

use std::fs;
use std::path::PathBuf;

use anyhow::Result;

/// compute-sanitizer's tools, each run with `--error-exitcode 9` so any report fails the run.
const TOOLS: [&str; 4] = ["memcheck", "racecheck", "synccheck", "initcheck"];

/// Size presets: name and `memlab` arguments. Every matmul and SGEMM dimension is a multiple of
/// neither 16 nor 32 (except where it is 1), every transpose has partial tiles (or is a single
/// element). One run (no warm-up) of every demo that launches kernels at the given sizes; the
/// 1000x1000 sizes in one run per group of demos, because racecheck takes minutes on the matmul
/// and SGEMM kernels there (measured on the H200, run alone: 201 s and 247 s) and `JOBS` can run the
/// groups side by side; the hierarchy demo, whose sizes follow the device, runs as its own
/// command with small options.
const PRESETS: [(&str, &str); 19] = [
    (
        "1x1",
        "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy transpose matmul sgemm coalescing banks --transpose 1x1 --matmul 1x1x1 --sgemm 1x1x1 --strided-bytes 2KiB --bank-iters 8",
    ),
    (
        "31x33",
        "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy transpose matmul sgemm coalescing banks --transpose 31x33 --matmul 31x33x47 --sgemm 31x33x47 --strided-bytes 4100 --bank-iters 8",
    ),
    (
        "33x4097",
        "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy transpose matmul sgemm coalescing banks --transpose 33x4097 --matmul 33x4097x65 --sgemm 33x4097x65 --strided-bytes 1MiB --bank-iters 16",
    ),
    ("1000x1000-transpose", "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy transpose --transpose 1000x1000"),
    // Thin matrices (a side of at most 16: `transpose_thin`, and `copy` as one run), 3 rows and
    // 7 columns (partial vectors and bands); a tall one, 70000 rows of 2 (more rows than grid
    // y's 65535 blocks), whose tile kernels run on one-dimensional grids of tiles.
    ("thin-3x1000", "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy transpose --transpose 3x1000"),
    ("thin-1000x7", "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy transpose --transpose 1000x7"),
    ("tall-70000x2", "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy transpose --transpose 70000x2"),
    (
        "1000x1000-probes",
        "run-demos --sanitizer --runs 1 --warmup 0 --only coalescing banks --strided-bytes 4000004 --bank-iters 64",
    ),
    ("1000x1000-matmul", "run-demos --sanitizer --runs 1 --warmup 0 --only matmul --matmul 1000x1000x1000"),
    ("1000x1000-sgemm", "run-demos --sanitizer --runs 1 --warmup 0 --only sgemm --sgemm 1000x1000x1000"),
    (
        "hierarchy",
        "hierarchy --sanitizer --ladder-max 64KiB --steps 64 --transfer-bytes 64KiB --dram-bytes 1MiB --bank-iters 8 --cluster-reads 8",
    ),
    // Thread-block clusters (cc 9.0; skipped in one line below): the chases, reads and barriers
    // at their fixed sizes with 8 reads per thread, the cluster matmul at odd sizes, in clusters
    // of 2 to 16 blocks and of 3 and 5 (odd clusters, odd matmul shapes 3x1 and 5x1).
    ("clusters-1x1", "run-demos --sanitizer --runs 1 --warmup 0 --only clusters --matmul 1x1x1 --cluster-reads 8"),
    (
        "clusters-31x33",
        "run-demos --sanitizer --runs 1 --warmup 0 --only clusters --matmul 31x33x47 --cluster-reads 8 --clusters 3,5",
    ),
    // The L2 lesson: a stream of 4097 vectors (not a multiple of any block), a hot
    // buffer of 4096 inside it, a 125001-vector bandwidth read (at 1 block/SM on 132 SMs some
    // threads take an unrolled step; every block count ends in the one-at-a-time tail); the
    // partition probe on 3 SMs (each SM's turn flushes the L2 with a read of twice its size).
    (
        "l2",
        "run-demos --sanitizer --runs 1 --warmup 0 --only l2 --l2-stream-bytes 65552 --l2-read-bytes 2000016 --l2-partition-sms 3",
    ),
    // TMA (cc 9.0): rows padded to the tensor maps' 16-byte stride, so odd widths run: a single
    // element (rows of 1 padded to 4, both ways), 31x33 (the input's rows padded from 33 to 36,
    // the output's from 31 to 32), 28x44 (no padding, partial tiles and boxes), 68x132 (several
    // tiles each way, so the rings wrap). Under --sanitizer each kernel path runs once, not the
    // sweeps (`Plan` in host/src/demos/tma/plan.rs). Its table's SGEMM rungs 6 and 7 run at the
    // first --sgemm size.
    ("tma-1x1", "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy tma --transpose 1x1 --sgemm 31x33x47"),
    ("tma-31x33", "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy tma --transpose 31x33 --sgemm 31x33x47"),
    ("tma-28x44", "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy tma --transpose 28x44 --sgemm 67x131x35"),
    ("tma-68x132", "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy tma --transpose 68x132 --sgemm 67x131x35"),
    // The tensor ladder (sm_90a): every rung at a size past one 128 x 256 tile in neither
    // dimension, a K of 19 that the 16-byte TMA pitch pads to 24 and one k-block covers.
    ("tensor-261x261x19", "run-demos --sanitizer --runs 1 --warmup 0 --only tensor --tensor 261x261x19"),
];

/// The arguments every `run-demos` run of the matrix starts with: one timed run, no warm-up,
/// the sanitizer's footprints.
const RUN_DEMOS: &str = "run-demos --sanitizer --runs 1 --warmup 0";

/// The lessons of `host/src/demos/mod.rs`'s `lessons!` list, by module name (each lesson's
/// `--only` name), in run order.
fn lessons() -> Vec<&'static str> {
    let list = include_str!("../../host/src/demos/mod.rs");
    let block = list.split("\nlessons! {").nth(1).and_then(|rest| rest.split('}').next()).unwrap_or_default();
    block.split(',').filter_map(|entry| Some(entry.split_once("::")?.0.trim())).collect()
}

/// Whether the `memlab` arguments `args` run demo `name` (in their `--only` list).
fn runs_demo(args: &str, name: &str) -> bool {
    let only = args.split(" --only ").nth(1).map(|rest| rest.split(" --").next().unwrap_or_default());
    only.is_some_and(|o| o.split_whitespace().any(|d| d == name))
}

/// One preset per lesson that no preset of [`PRESETS`] or [`DEFAULT_PRESETS`] names: the
/// lesson alone at its defaults, under the sanitizer's footprints (`host/src/lab/sanitizer.rs`),
/// which keep a lesson's fixed sizes small; a lesson whose defaults are slow under the tools, or
/// whose edge cases need sizes of their own, has presets above instead.
fn lesson_presets() -> Vec<(&'static str, String)> {
    let named = |lesson: &str| PRESETS.iter().chain(&DEFAULT_PRESETS).any(|p| runs_demo(p.1, lesson));
    lessons().into_iter().filter(|l| !named(l)).map(|l| (l, format!("{RUN_DEMOS} --only {l}"))).collect()
}

/// Every preset under every tool: [`PRESETS`], then [`lesson_presets`].
fn presets() -> Vec<(&'static str, String)> {
    PRESETS.iter().map(|&(preset, sizes)| (preset, sizes.to_string())).chain(lesson_presets()).collect()
}

/// Racecheck's own sizes for presets whose products take it minutes (measured on the H200, run
/// alone: 201 s for the matmul kernels at 1000^3 and 247 s for the SGEMM ladder): the same
/// kernels at a product past one tile of every rung in each dimension, still of no tile
/// multiple. Racecheck looks at shared-memory accesses within a block, which these sizes
/// exercise as the larger ones do (full tiles, partial edge tiles, a partial last depth step).
const RACECHECK_SIZES: [(&str, &str); 2] = [
    ("1000x1000-matmul", "run-demos --sanitizer --runs 1 --warmup 0 --only matmul --matmul 263x261x97"),
    ("1000x1000-sgemm", "run-demos --sanitizer --runs 1 --warmup 0 --only sgemm --sgemm 263x261x97"),
];

/// The arguments of `tool` at `preset` (whose arguments are `sizes`).
fn args_of(tool: &str, preset: &str, sizes: &str) -> String {
    match RACECHECK_SIZES.iter().find(|(p, _)| tool == "racecheck" && *p == preset) {
        Some((_, own)) => own.to_string(),
        None => sizes.to_string(),
    }
}

/// The default sizes (8192x8192, 1 GiB, 16384 loads; the TMA lesson at 8192x8192, its SGEMM
/// rungs small), one run per group of demos so that each group's result stands on its own, under
/// memcheck only: the other tools take far longer there; with `DEFAULT_SIZES=all` every tool
/// runs them. The products keep the default `m` and `n` (4096) with `k` 128: every tile and
/// edge of the default output, at 1/32 of the default's loads (at 4096^3 memcheck ran past
/// 200 s on the H200 for the matmul and clusters kernels).
const DEFAULT_PRESETS: [(&str, &str); 6] = [
    ("default-transpose", "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy transpose"),
    (
        "default-matmul",
        "run-demos --sanitizer --runs 1 --warmup 0 --only matmul --matmul 4096x4096x128 --matmul-naive 4096x4096x128",
    ),
    ("default-sgemm", "run-demos --sanitizer --runs 1 --warmup 0 --only sgemm --sgemm 4096x4096x128"),
    ("default-probes", "run-demos --sanitizer --runs 1 --warmup 0 --only coalescing banks"),
    ("default-clusters", "run-demos --sanitizer --runs 1 --warmup 0 --only clusters --matmul 4096x4096x128"),
    ("default-tma", "run-demos --sanitizer --runs 1 --warmup 0 --only memcpy tma --sgemm 67x131x35"),
];

/// One run: tool, preset name, `memlab` arguments.
type Run = (&'static str, &'static str, String);

/// The runs in the script's order: the awkward sizes, smallest first (so that a `DEADLINE_S`
/// cuts the slow runs, not the edge cases), then the default sizes under memcheck; and the
/// default sizes under the other tools (`DEFAULT_SIZES=all`, last).
fn runs() -> (Vec<Run>, Vec<Run>) {
    let presets = presets()
        .into_iter()
        .flat_map(|(preset, sizes)| TOOLS.iter().map(move |&tool| (tool, preset, args_of(tool, preset, &sizes))));
    let memcheck_default = DEFAULT_PRESETS.iter().map(|&(preset, sizes)| ("memcheck", preset, sizes.to_string()));
    let slow = DEFAULT_PRESETS
        .iter()
        .flat_map(|&(preset, sizes)| TOOLS[1..].iter().map(move |&tool| (tool, preset, sizes.to_string())))
        .collect();
    (presets.chain(memcheck_default).collect(), slow)
}

/// The script's text.
fn script() -> String {
    let lines = |runs: Vec<Run>| -> String {
        runs.into_iter().map(|(tool, preset, sizes)| format!("{tool} {preset} {sizes}\n")).collect()
    };
    let (always, slow) = runs();
    let (runs, slow) = (lines(always), lines(slow));
    format!(
        r#"#!/bin/sh
# Generated by `cargo xtask sanitize-script`: every kernel of `memlab run-demos` under
# compute-sanitizer's {tools} at awkward sizes, one Markdown row per run.
#
# Usage: sanitize.sh [MEMLAB]   (default: the memlab next to this script)
# Environment: SANITIZER (default: compute-sanitizer on PATH, else /usr/local/cuda/bin/),
#   LOGS (folder for the full logs, default ./sanitize-logs), DEADLINE_S (skip runs that would
#   start later than this many seconds after the first, default 3600), PER_RUN_S (stop one run
#   after this many seconds, exit 124, default 900), JOBS (runs at once through `xargs -P`,
#   GNU or BSD, default 1; rows come in the order runs finish), DEFAULT_SIZES=all (run the
#   default sizes under every tool, not only memcheck).
# Exit status: 0 when every run finished with no report and every result verified, 1 otherwise.
set -u
# One run: TOOL PRESET MEMLAB-ARGS...; prints its row, exits 1 unless it passed.
run() {{
  tool=$1; preset=$2; shift 2
  if [ $(( $(date +%s) - SANITIZE_T0 )) -ge "$SANITIZE_DEADLINE" ]; then
    echo "| $tool | $preset | skipped | - | past DEADLINE_S=$SANITIZE_DEADLINE | - | - |"
    exit 1
  fi
  log="$SANITIZE_LOGS/$tool-$preset.log"
  start=$(date +%s)
  timeout "$SANITIZE_PER_RUN" "$SANITIZE_TOOL" --tool "$tool" --error-exitcode 9 "$SANITIZE_MEMLAB" "$@" >"$log" 2>&1
  code=$?
  summary=$(grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -n 1 | sed 's/^=* *//')
  verdict=$(grep -E '^(All results verified|SOME RESULTS ARE WRONG)' "$log" | head -n 1)
  [ -n "$verdict" ] || verdict=$(grep -m 1 '^error:' "$log")
  kernels=$(sed -n 's/^kernels launched (\([0-9]*\) of.*/\1/p' "$log" | tail -n 1)
  echo "| $tool | $preset | $code | $(( $(date +%s) - start )) | ${{summary:-no summary}} | ${{verdict:-see $log}} | ${{kernels:--}} |"
  [ "$code" -eq 0 ] || exit 1
}}
if [ "${{1:-}}" = --one ]; then
  shift
  run "$@"
  exit 0
fi
here=$(cd "$(dirname "$0")" && pwd)
SANITIZE_MEMLAB=${{1:-$here/memlab}}
SANITIZE_TOOL=${{SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}}
SANITIZE_LOGS=${{LOGS:-sanitize-logs}}
SANITIZE_DEADLINE=${{DEADLINE_S:-3600}}
SANITIZE_PER_RUN=${{PER_RUN_S:-900}}
SANITIZE_T0=$(date +%s)
export SANITIZE_MEMLAB SANITIZE_TOOL SANITIZE_LOGS SANITIZE_DEADLINE SANITIZE_PER_RUN SANITIZE_T0
mkdir -p "$SANITIZE_LOGS"
echo "| tool | sizes | exit | s | sanitizer summary | demos | kernels |"
echo "|---|---|---|---|---|---|---|"
runs() {{
  cat <<'RUNS'
{runs}RUNS
  if [ "${{DEFAULT_SIZES:-}}" = all ]; then
    cat <<'RUNS'
{slow}RUNS
  fi
}}
# xargs exits non-zero when any run did.
runs | xargs -P "${{JOBS:-1}}" -L 1 sh "$0" --one || exit 1
"#,
        tools = TOOLS.join(", "),
    )
}

/// Writes `DIR/sanitize.sh` (executable).
pub fn write(dir: PathBuf) -> Result<()> {
    fs::create_dir_all(&dir)?;
    let path = dir.join("sanitize.sh");
    fs::write(&path, script())?;
    let mut perms = fs::metadata(&path)?.permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    fs::set_permissions(&path, perms)?;
    let (always, slow) = runs();
    eprintln!("xtask: wrote {} ({} runs, {} more with DEFAULT_SIZES=all)", path.display(), always.len(), slow.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_runs_every_tool_at_every_preset_and_checks_its_syntax() {
        let text = script();
        for tool in TOOLS {
            for (preset, sizes) in presets() {
                let args = args_of(tool, preset, &sizes);
                assert!(text.contains(&format!("\n{tool} {preset} {args}\n")), "{tool} {preset}");
            }
        }
        for (preset, sizes) in RACECHECK_SIZES {
            assert!(text.contains(&format!("\nracecheck {preset} {sizes}\n")), "{preset}");
            assert!(
                !text
                    .contains(&format!("\nracecheck {preset} {}\n", PRESETS.iter().find(|p| p.0 == preset).unwrap().1))
            );
        }
        for (preset, sizes) in DEFAULT_PRESETS {
            assert!(text.contains(&format!("\nmemcheck {preset} {sizes}\n")), "{preset}");
            for tool in &TOOLS[1..] {
                let at = text.find(&format!("\n{tool} {preset} {sizes}\n")).expect(preset);
                let cond = text.find("DEFAULT_SIZES:-").unwrap();
                let end = cond + text[cond..].find("  fi\n").unwrap();
                assert!(cond < at && at < end, "{tool} {preset} only with DEFAULT_SIZES=all");
            }
        }
        assert!(!text.contains("race-lesson"), "the broken kernel stays out of the matrix");
        let dir = std::env::temp_dir().join(format!("memlab-sanitize-{}", std::process::id()));
        write(dir.clone()).unwrap();
        let status = std::process::Command::new("sh").arg("-n").arg(dir.join("sanitize.sh")).status().unwrap();
        assert!(status.success(), "sh -n rejects the script");
        fs::remove_dir_all(dir).unwrap();
    }

    /// Runs the script with stand-ins for compute-sanitizer and memlab; the sanitizer stand-in
    /// reports an error for `FAIL_TOOL` at `FAIL_PRESET`'s sizes. Returns the exit status and
    /// the table rows.
    fn run_with_stubs(jobs: u32, fail: Option<(&str, &str)>, env: &[(&str, &str)]) -> (i32, Vec<String>) {
        let dir = std::env::temp_dir().join(format!("memlab-sanitize-run-{}-{jobs}-{}", std::process::id(), env.len()));
        fs::create_dir_all(&dir).unwrap();
        write(dir.clone()).unwrap();
        let stub = |name: &str, body: &str| {
            let path = dir.join(name);
            fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            let mut perms = fs::metadata(&path).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
            fs::set_permissions(&path, perms).unwrap();
            path
        };
        stub("memlab", "echo 'All results verified.'; echo 'kernels launched (3 of 90): a b c'");
        let presets = presets();
        let (fail_tool, fail_sizes) =
            fail.map_or(("", ""), |(t, p)| (t, presets.iter().find(|x| x.0 == p).unwrap().1.as_str()));
        let sanitizer = stub(
            "fake-sanitizer",
            &format!(
                "tool=$2; memlab=$5; shift 5; sleep ${{STUB_SLEEP:-0}}; \"$memlab\" \"$@\"\nif [ \"$tool\" = '{fail_tool}' ] && [ \"$*\" = '{fail_sizes}' ]; then \
                 echo '========= ERROR SUMMARY: 1 error'; exit 9; fi\necho '========= ERROR SUMMARY: 0 errors'"
            ),
        );
        let out = std::process::Command::new("sh")
            .arg(dir.join("sanitize.sh"))
            .env("SANITIZER", sanitizer)
            .env("LOGS", dir.join("logs"))
            .env("JOBS", jobs.to_string())
            .env_remove("DEFAULT_SIZES")
            .env_remove("DEADLINE_S")
            .env_remove("PER_RUN_S")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        fs::remove_dir_all(&dir).unwrap();
        let rows = String::from_utf8(out.stdout).unwrap().lines().skip(2).map(String::from).collect();
        (out.status.code().unwrap(), rows)
    }

    #[test]
    fn the_script_prints_a_row_per_run_in_parallel_and_fails_on_any_report() {
        let (code, rows) = run_with_stubs(4, None, &[]);
        assert_eq!(code, 0, "{rows:?}");
        assert_eq!(rows.len(), TOOLS.len() * presets().len() + DEFAULT_PRESETS.len());
        let exit = |row: &String| row.split('|').nth(3).unwrap().trim().to_string();
        assert!(
            rows.iter().all(|r| exit(r) == "0" && r.ends_with("0 errors | All results verified. | 3 |")),
            "{rows:?}"
        );
        let (code, rows) = run_with_stubs(4, Some(("racecheck", "31x33")), &[]);
        assert_eq!(code, 1);
        let failed: Vec<&String> = rows.iter().filter(|r| exit(r) != "0").collect();
        assert_eq!(failed.len(), 1, "{rows:?}");
        assert!(failed[0].starts_with("| racecheck | 31x33 | 9 |") && failed[0].contains("1 error"), "{failed:?}");
    }

    #[test]
    fn a_deadline_skips_the_slow_runs_not_the_edge_cases() {
        // One run at a time, 2 s each, none started 3 s after the first: the smallest sizes
        // run, the default sizes (listed last) are skipped.
        let (code, rows) = run_with_stubs(1, None, &[("STUB_SLEEP", "2"), ("DEADLINE_S", "3")]);
        assert_eq!(code, 1);
        assert_eq!(rows.len(), TOOLS.len() * presets().len() + DEFAULT_PRESETS.len());
        assert!(rows[0].starts_with("| memcheck | 1x1 | 0 |"), "{rows:?}");
        let last = rows.last().unwrap();
        assert!(last.starts_with("| memcheck | default-tma | skipped |") && last.contains("DEADLINE_S=3"), "{rows:?}");
    }

    /// Every presets' and run's `memlab` arguments.
    fn all_args() -> Vec<String> {
        let hand = PRESETS.iter().chain(&RACECHECK_SIZES).chain(&DEFAULT_PRESETS).map(|p| p.1.to_string());
        hand.chain(lesson_presets().into_iter().map(|p| p.1)).collect()
    }

    #[test]
    fn every_run_is_a_sanitizer_run_of_one_repeat() {
        for args in all_args() {
            assert!(args.starts_with(RUN_DEMOS) || args.starts_with("hierarchy "), "{args}");
            assert!(args.contains(" --sanitizer "), "{args}");
            assert!(args.starts_with("hierarchy ") || args.contains(" --runs 1 --warmup 0 "), "{args}");
        }
    }

    #[test]
    fn every_demo_that_launches_kernels_is_in_some_run() {
        // The lessons `host/src/demos/mod.rs` lists in `lessons!`, each by its module's name,
        // and the summary that `host/src/registry.rs` adds after them.
        let mut names = lessons();
        assert!(include_str!("../../host/src/registry.rs").contains("Entry::of::<Hierarchy>()"));
        names.push("hierarchy");
        assert!(names.len() >= 12 && names.contains(&"l2") && names.contains(&"occupancy"), "{names:?}");
        for &name in &names {
            // The hierarchy demo runs as its own command (the same measurements).
            let covered = all_args().iter().any(|args| runs_demo(args, name) || args.starts_with(&format!("{name} ")));
            assert!(covered, "demo `{name}` is in no sanitizer run");
        }
        // A lesson no hand preset names runs alone at its defaults, under every tool.
        let (script, derived) = (script(), lesson_presets());
        assert!(derived.iter().any(|p| p.0 == "occupancy"), "{derived:?}");
        for (lesson, args) in derived {
            assert_eq!(args, format!("{RUN_DEMOS} --only {lesson}"));
            for tool in TOOLS {
                assert!(script.contains(&format!("\n{tool} {lesson} {args}\n")), "{tool} {lesson}");
            }
        }
        // Every lesson module that launches kernels (it owns their `shapes`) belongs to a demo
        // above, the race lesson's broken kernel (own command, never in the matrix) and the
        // roofline's clock (every run-demos run with kernel rows) aside.
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/src");
        let mut owners = 0;
        let entries = ["demos", "summary"].into_iter().flat_map(|dir| std::fs::read_dir(src.join(dir)).unwrap());
        for entry in entries {
            let path = entry.unwrap().path();
            let file = if path.is_dir() { path.join("mod.rs") } else { path.clone() };
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let nested = path.is_dir()
                && std::fs::read_dir(&path)
                    .unwrap()
                    .any(|f| std::fs::read_to_string(f.unwrap().path()).is_ok_and(|t| t.contains("pub mod shapes")));
            if !text.contains("pub mod shapes") && !nested {
                continue;
            }
            owners += 1;
            let demo = path.file_stem().unwrap().to_str().unwrap();
            let ok = ["race", "roofline"].contains(&demo) || names.contains(&demo);
            assert!(ok, "{} launches kernels and belongs to no demo", path.display());
            // A registered lesson carries its module's name.
            if names.contains(&demo) {
                let named = text.contains(&format!("const NAME: &'static str = \"{demo}\";"));
                assert!(named, "{}: its Lesson is not named `{demo}`", file.display());
            }
        }
        assert!(owners >= 10, "{owners} lesson modules own launch shapes");
    }

    /// The `--transpose` size of a run's arguments, and whether it runs `demo`.
    fn transpose_of(args: &str, demo: &str) -> Option<(u32, u32)> {
        let only = args.split(" --only ").nth(1)?.split(" --").next()?;
        let size = args.split(" --transpose ").nth(1)?.split_whitespace().next()?;
        let (rows, cols) = size.split_once('x')?;
        only.split_whitespace().any(|d| d == demo).then(|| (rows.parse().unwrap(), cols.parse().unwrap()))
    }

    #[test]
    fn the_odd_thin_and_tall_shapes_have_presets() {
        let sizes = |demo: &str| PRESETS.iter().filter_map(|p| transpose_of(p.1, demo)).collect::<Vec<_>>();
        let (tma, transpose) = (sizes("tma"), sizes("transpose"));
        // TMA at widths whose rows are no multiple of 16 bytes, either way, and at those that are.
        assert!(tma.iter().any(|&(r, c)| c % 4 != 0 && r % 4 != 0), "{tma:?}");
        assert!(tma.contains(&(31, 33)) && tma.contains(&(28, 44)) && tma.contains(&(1, 1)), "{tma:?}");
        // `transpose_thin` both ways (a side of at most 16), and a thin matrix of more rows than
        // grid y's 65535 blocks.
        assert!(transpose.contains(&(3, 1000)) && transpose.contains(&(1000, 7)), "{transpose:?}");
        assert!(transpose.iter().any(|&(r, c)| r > 65535 && c <= 16), "{transpose:?}");
        for (r, c) in [(3, 1000), (1000, 7), (70000, 2)] {
            let preset = PRESETS.iter().find(|p| transpose_of(p.1, "transpose") == Some((r, c))).unwrap();
            assert!(!preset.1.contains(" tma"), "{}: the thin shapes are the transpose lesson's", preset.0);
        }
    }

    #[test]
    fn presets_avoid_tile_multiples() {
        for (_, sizes) in PRESETS.iter().chain(&RACECHECK_SIZES) {
            let words: Vec<&str> = sizes.split_whitespace().collect();
            for option in ["--matmul", "--sgemm"] {
                let Some(at) = words.iter().position(|w| *w == option) else { continue };
                let shape = words[at + 1];
                for d in shape.split('x').map(|d| d.parse::<u32>().unwrap()) {
                    assert!(d == 1 || (d % 16 != 0 && d % 32 != 0), "{shape}");
                }
            }
        }
    }
}
