//! The commands that need no GPU, run as a user would: the occupancy calculator on the seed's
//! worked examples and on cc 9.0, `inspect` on the built PTX, `report` from a recorded run, and
//! one-line refusals of bad input (exit 2).

use assert_cmd::Command;

fn memlab() -> Command {
    let mut cmd = Command::cargo_bin("memlab").expect("the memlab binary");
    // No command here loads the driver library.
    cmd.env("CUDA_VISIBLE_DEVICES", "");
    cmd
}

/// Runs memlab with `args`, expects success, returns stdout.
fn ok(args: &[&str]) -> String {
    let out = memlab().args(args).output().expect("run memlab");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Runs memlab with `args`, expects exit 2 with one line on stderr and nothing on stdout;
/// returns the line.
fn refused(args: &[&str]) -> String {
    let out = memlab().args(args).output().expect("run memlab");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?} printed a result");
    stderr
}

/// The cells of the Markdown table row whose first cells are `first`.
fn row(out: &str, first: &[&str]) -> Vec<String> {
    out.lines()
        .map(|l| l.split('|').map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect::<Vec<_>>())
        .find(|cells| cells.len() >= first.len() && cells.iter().zip(first).all(|(c, f)| c == f))
        .unwrap_or_else(|| panic!("no row {first:?} in\n{out}"))
}

const TEXTBOOK: [&str; 6] = ["--regs-per-sm", "65536", "--threads-per-sm", "2048", "--smem-per-sm", "48KiB"];

fn textbook(extra: &[&str]) -> String {
    let args: Vec<&str> = ["occupancy"].iter().chain(&TEXTBOOK).chain(extra).copied().collect();
    ok(&args)
}

#[test]
fn help_lists_every_command() {
    let out = ok(&["--help"]);
    for cmd in ["run-demos", "devices", "occupancy", "inspect", "report"] {
        assert!(out.contains(cmd), "{cmd} missing from\n{out}");
    }
    let out = ok(&["occupancy", "--help"]);
    assert!(out.contains("--cc") && out.contains("--kernel") && out.contains("--smem"), "{out}");
    assert!(ok(&["run-demos", "--help"]).contains("--report"));
}

#[test]
fn ex1_registers_limit_512_threads_of_40_registers_to_75_percent() {
    let out = textbook(&["--threads", "512", "--regs", "40"]);
    assert_eq!(row(&out, &["registers"])[1..4], ["3", "20480 registers", "65536 registers"]);
    assert_eq!(row(&out, &["warps (threads per SM)"])[1], "4");
    assert!(out.contains("resident per SM: 3 blocks = 48 warps = 1536 threads"), "{out}");
    assert!(out.contains("occupancy: 75.0% (limited by registers)"), "{out}");
    assert!(out.contains("registers: up to 42 per thread keep 3 blocks; 32 or fewer give 4 blocks (100.0%)"), "{out}");
}

#[test]
fn ex3_the_thread_cap_wins_over_spare_registers() {
    let out = textbook(&["--threads", "256", "--regs", "16"]);
    assert_eq!(row(&out, &["registers"])[1], "16");
    assert_eq!(row(&out, &["warps (threads per SM)"])[1], "8");
    assert!(out.contains("occupancy: 100.0% (limited by warps (threads per SM))"), "{out}");
}

#[test]
fn ex4_twenty_kib_of_shared_memory_limit_to_25_percent() {
    let out = textbook(&["--threads", "256", "--regs", "32", "--smem", "20KiB"]);
    assert_eq!(row(&out, &["shared memory"])[1..3], ["2", "20480 B"]);
    assert!(out.contains("occupancy: 25.0% (limited by shared memory)"), "{out}");
    assert!(out.contains("up to 24576 B of dynamic shared memory per block keep 2 blocks"), "{out}");
    assert!(out.contains("16384 B or less gives 3 blocks (37.5%)"), "{out}");
}

#[test]
fn ex9_255_registers_give_12_5_percent_and_32_give_100() {
    let out = textbook(&["--threads", "128", "--regs", "255"]);
    assert!(out.contains("occupancy: 12.5% (limited by registers)"), "{out}");
    assert!(out.contains("32 or fewer reach the best any register count gives, 16 blocks (100.0%)"), "{out}");
}

#[test]
fn hardware_rules_on_cc_9_0() {
    // 33 registers round to 1280 per warp: 48 warps, 6 blocks of 256 (Simple would say 7).
    let out = ok(&["occupancy", "--cc", "9.0", "--threads", "256", "--regs", "33"]);
    assert!(out.contains("cc 9.0 (Hopper), Hardware rules"), "{out}");
    assert_eq!(row(&out, &["registers"])[1..3], ["6", "10240 registers"]);
    assert!(out.contains("occupancy: 75.0% (limited by registers)"), "{out}");
    // 100 KiB + 1 KiB reserved per block: 2 blocks in 228 KiB.
    let out = ok(&["occupancy", "--cc", "9.0", "--threads", "256", "--regs", "32", "--smem", "100KiB"]);
    assert_eq!(row(&out, &["shared memory"])[1..3], ["2", "103424 B"]);
    assert!(out.contains("occupancy: 25.0% (limited by shared memory)"), "{out}");
    assert!(out.contains("76800 B or less gives 3 blocks (37.5%)"), "{out}");
}

#[test]
fn kernel_figures_come_from_ptxas() {
    // register_pressure keeps 128 accumulators live: 168 registers on sm_90 (tests/ptx_content).
    let out = ok(&["occupancy", "--kernel", "register_pressure", "--threads", "256"]);
    assert!(out.contains("168 registers per thread (ptxas -arch=sm_90 on the sm_90 PTX)"), "{out}");
    // 168 * 32 = 5376 per warp: 3 warps per sub-partition, 12 per SM, one block of 8 warps.
    assert!(out.contains("occupancy: 12.5% (limited by registers)"), "{out}");
}

#[test]
fn occupancy_chart_is_drawn_for_given_numbers() {
    let dir = std::env::temp_dir().join(format!("memlab-occ-chart-{}", std::process::id()));
    let out = ok(&["occupancy", "--cc", "9.0", "--threads", "256", "--regs", "40", "--chart", dir.to_str().unwrap()]);
    assert!(out.contains("charts: "), "{out}");
    let svg = std::fs::read_to_string(dir.join("occupancy.svg")).unwrap();
    assert!(svg.contains("Occupancy on cc 9.0 (256 threads, 40 registers") && svg.contains("75% here"), "{svg:.300}");
    assert!(std::fs::metadata(dir.join("occupancy.png")).unwrap().len() > 10_000);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn inspect_counts_memory_instructions_by_level() {
    let out = ok(&["inspect", "transpose_padded"]);
    // Four rows per thread (32x8 threads, 32x32 tile): four of each access, one barrier.
    for (level, access) in [("global", "loads"), ("global", "stores"), ("shared", "loads"), ("shared", "stores")] {
        let r = row(&out, &[level, access]);
        assert_eq!((r[3].as_str(), r[5].as_str()), ("4", "4"), "{level} {access}:\n{out}");
    }
    assert_eq!(row(&out, &["barrier", "block barriers"])[3..], ["1", "BAR", "1"]);
    assert_eq!(row(&out, &["local", "loads (stack, spills)"])[5], "0");
    // The tile's column read comes from the inline `ld.shared` of `load_shared_in_order`, the
    // coalesced store from the transpose's own line.
    let read = out.lines().find(|l| l.contains("LDS x4")).expect(&out);
    assert!(read.contains("kernels-gpu/src/device.rs") && read.contains("asm!"), "{read}");
    let store = out.lines().find(|l| l.contains("STG.E x4")).expect(&out);
    assert!(store.contains("kernels-gpu/src/transpose.rs") && store.contains("output.add"), "{store}");
}

#[test]
fn inspect_shows_ptx_stack_slots_that_never_reach_local_memory() {
    let out = ok(&["inspect", "register_pressure"]);
    let ptx_local = row(&out, &["local", "stores (stack, spills)"]);
    assert!(ptx_local[3].parse::<usize>().unwrap() > 0, "the PTX has st.local:\n{out}");
    assert_eq!(ptx_local[5], "0", "ptxas keeps them in registers");
    assert!(out.contains("168 registers per thread, 0 B stack frame, 0 B spill stores, 0 B spill loads"), "{out}");
}

#[test]
fn inspect_for_turing_has_sass_but_no_source_lines() {
    let out = ok(&["inspect", "copy", "--cc", "7.5"]);
    assert!(out.contains("(PTX sm_75, SASS sm_75)"), "{out}");
    assert_eq!(row(&out, &["global", "loads"])[5], "4");
    assert!(out.contains("Rust source lines: only for the sm_90 PTX"), "{out}");
}

#[test]
fn bad_input_is_one_line_with_the_allowed_range() {
    for (args, needle) in [
        (&["occupancy", "--threads", "1025", "--regs", "3"][..], "threads per block 1025 exceeds the limit of 1024"),
        (&["occupancy", "--threads", "128", "--regs", "256"][..], "registers per thread 256 exceeds the limit of 255"),
        (&["occupancy", "--threads", "0", "--regs", "3"][..], "a block needs at least 1 thread"),
        (
            &["occupancy", "--threads", "128", "--regs", "32", "--smem", "300KiB"][..],
            "shared memory per block 307200 bytes exceeds the opt-in limit of 232448 bytes",
        ),
        (&["occupancy", "--cc", "6.1", "--threads", "128", "--regs", "2"][..], "use one of 7.5, 8.0, 8.6, 8.9, 9.0"),
        (&["occupancy", "--threads", "128"][..], "required arguments were not provided: --regs <REGS>"),
        (&["occupancy", "--threads", "128", "--smem", "5TB", "--regs", "1"][..], "unknown unit"),
        (
            &["occupancy", "--threads-per-sm", "100", "--threads", "32", "--regs", "1"][..],
            "multiple of the warp size 32",
        ),
        (
            &["occupancy", "--cc", "9.0", "--regs-per-sm", "1", "--threads", "32", "--regs", "1"][..],
            "cannot be used with",
        ),
        (&["occupancy", "--kernel", "nosuch", "--threads", "128"][..], "unknown kernel `nosuch`: choose from "),
        (&["inspect", "nosuch"][..], "unknown kernel `nosuch`: choose from "),
        (&["report", "/nonexistent/run.json", "--out", "/tmp/x"][..], "cannot read /nonexistent/run.json"),
    ] {
        let line = refused(args);
        assert!(line.contains(needle), "{args:?}: {line}");
    }
}

#[test]
fn report_refuses_a_file_that_is_not_a_run() {
    let path = std::env::temp_dir().join(format!("memlab-not-a-run-{}.json", std::process::id()));
    std::fs::write(&path, "{\"hello\": 1}").unwrap();
    let line = refused(&["report", path.to_str().unwrap(), "--out", "/tmp/x"]);
    assert!(line.contains("is not a memlab run record: missing field"), "{line}");
    std::fs::remove_file(path).unwrap();
}
