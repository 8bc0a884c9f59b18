//! The commands that need no GPU, run as a user would: the occupancy calculator on the seed's
//! worked examples and on cc 9.0, `inspect` on the built PTX, `report` from a recorded run, and
//! one-line refusals of bad input (exit 2).

use assert_cmd::Command;

fn memlab() -> Command {
    let mut cmd = Command::cargo_bin("memlab").expect("the memlab binary");
    // No command here loads the driver library.
    cmd.env("CUDA_VISIBLE_DEVICES", "");
    // Tests read whole sentences: a wide terminal wraps none (`cpu_commands_fit_100_columns`
    // sets its own widths).
    cmd.env("COLUMNS", "1000");
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

/// Whether `out` contains `needle` once line breaks and indents are folded to single spaces
/// (the commands wrap their prose to 100 columns).
fn has(out: &str, needle: &str) -> bool {
    out.split_whitespace().collect::<Vec<_>>().join(" ").contains(needle)
}

/// The cells of the Markdown table row whose first cells are `first`.
fn row(out: &str, first: &[&str]) -> Vec<String> {
    out.lines()
        .map(|l| l.split('|').map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect::<Vec<_>>())
        .find(|cells| cells.len() >= first.len() && cells.iter().zip(first).all(|(c, f)| c == f))
        .unwrap_or_else(|| panic!("no row {first:?} in\n{out}"))
}

/// The rows of `inspect`'s "lesson line -> SASS" table: lesson line, helper line (empty when
/// none), Rust text, SASS.
fn lesson_rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .filter(|l| l.starts_with("| ") && l.split('|').nth(1).is_some_and(|c| c.trim().contains(".rs:")))
        .map(|l| l.split('|').skip(1).take(4).map(|c| c.trim().to_string()).collect())
        .collect()
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
    assert_eq!(row(&out, &["warps"])[1], "4");
    assert!(has(&out, "resident per SM: 3 blocks = 48 warps = 1536 threads"), "{out}");
    assert!(has(&out, "occupancy: 75.0% (limited by registers)"), "{out}");
    assert!(has(&out, "registers: up to 42 per thread keep 3 blocks; 32 or fewer give 4 blocks (100.0%)"), "{out}");
}

#[test]
fn ex3_the_thread_cap_wins_over_spare_registers() {
    let out = textbook(&["--threads", "256", "--regs", "16"]);
    assert_eq!(row(&out, &["registers"])[1], "16");
    assert_eq!(row(&out, &["warps"])[1], "8");
    assert!(has(&out, "occupancy: 100.0% (limited by warps (threads per SM))"), "{out}");
}

#[test]
fn ex4_twenty_kib_of_shared_memory_limit_to_25_percent() {
    let out = textbook(&["--threads", "256", "--regs", "32", "--smem", "20KiB"]);
    assert_eq!(row(&out, &["shared memory"])[1..3], ["2", "20480 B"]);
    assert!(has(&out, "occupancy: 25.0% (limited by shared memory)"), "{out}");
    assert!(has(&out, "up to 24576 B of dynamic shared memory per block keep 2 blocks"), "{out}");
    assert!(has(&out, "16384 B or less gives 3 blocks (37.5%)"), "{out}");
}

#[test]
fn ex9_255_registers_give_12_5_percent_and_32_give_100() {
    let out = textbook(&["--threads", "128", "--regs", "255"]);
    assert!(has(&out, "occupancy: 12.5% (limited by registers)"), "{out}");
    assert!(has(&out, "32 or fewer reach the best any register count gives, 16 blocks (100.0%)"), "{out}");
}

#[test]
fn hardware_rules_on_cc_9_0() {
    // 33 registers round to 1280 per warp: 48 warps, 6 blocks of 256 (Simple would say 7).
    let out = ok(&["occupancy", "--cc", "9.0", "--threads", "256", "--regs", "33"]);
    assert!(has(&out, "cc 9.0 (Hopper), hardware rules"), "{out}");
    assert_eq!(row(&out, &["registers"])[1..3], ["6", "10240 registers"]);
    assert!(has(&out, "occupancy: 75.0% (limited by registers)"), "{out}");
    // 100 KiB + 1 KiB reserved per block: 2 blocks in 228 KiB.
    let out = ok(&["occupancy", "--cc", "9.0", "--threads", "256", "--regs", "32", "--smem", "100KiB", "--opt-in"]);
    assert_eq!(row(&out, &["shared memory"])[1..3], ["2", "103424 B"]);
    assert!(has(&out, "occupancy: 25.0% (limited by shared memory)"), "{out}");
    assert!(has(&out, "76800 B or less gives 3 blocks (37.5%)"), "{out}");
}

#[test]
fn a_kernel_that_fits_no_block_is_told_what_lets_it_launch() {
    // 100 KiB without opting in: over the 48 KiB per block, the launch fails.
    let out = ok(&["occupancy", "--cc", "9.0", "--threads", "256", "--regs", "32", "--smem", "100KiB"]);
    assert!(has(&out, "0 blocks, the launch fails"), "{out}");
    // The row names the per-block limit that fails it, beside the SM's 228 KiB.
    assert_eq!(row(&out, &["shared memory"])[1..4], ["0", "103424 B", "233472 B, 49152 B/block"]);
    assert!(
        has(&out, "at most 49152 B of dynamic shared memory per block lets it launch (4 blocks (50.0%) at 49152 B)"),
        "{out}"
    );
    assert!(has(&out, "with --opt-in (the kernel raises its limit) it launches as it is: 2 blocks (25.0%)"), "{out}");
    assert!(!has(&out, "keep 0 blocks") && !has(&out, "best is 0.0%"), "{out}");
    // Static and dynamic together over even the opt-in limit (227 KiB per block).
    let out = ok(&[
        "occupancy",
        "--cc",
        "9.0",
        "--threads",
        "256",
        "--regs",
        "32",
        "--static-smem",
        "40KiB",
        "--smem",
        "200KiB",
        "--opt-in",
    ]);
    assert!(
        has(&out, "at most 191488 B of dynamic shared memory per block lets it launch (1 block (12.5%) at 191488 B)"),
        "{out}"
    );
    assert!(!has(&out, "with --opt-in"), "{out}");
    // Dynamic shared memory alone over what any block may have is a wrong input: one line with
    // the per-block limits, opted in or not.
    for smem in ["48MiB", "240KiB"] {
        let line = refused(&["occupancy", "--cc", "9.0", "--threads", "256", "--regs", "32", "--smem", smem]);
        assert!(
            line.ends_with(
                "exceeds the shared memory one block may have on cc 9.0 (Hopper): at most 232448 B with --opt-in, \
                 49152 B without\n"
            ),
            "{line}"
        );
    }
    // 1024 threads x 255 registers: more than the SM's 65536 registers.
    let out = ok(&["occupancy", "--cc", "9.0", "--threads", "1024", "--regs", "255"]);
    assert!(has(&out, "registers: at most 64 per thread let it launch (1 block (50.0%) at 64)"), "{out}");
    assert!(has(&out, "block size: at most 256 threads per block let it launch (1 block (12.5%) at 256)"), "{out}");
    // A textbook SM of 512 threads: a block of 520 fits none, one of 512 (the next whole warps
    // below) fills it.
    let out = ok(&["occupancy", "--threads-per-sm", "512", "--threads", "520", "--regs", "32"]);
    assert!(has(&out, "block size: at most 512 threads per block let it launch (1 block (100.0%) at 512)"), "{out}");
    // A textbook SM has one shared-memory limit: no opting in to name.
    let textbook = ["occupancy", "--regs-per-sm", "65536", "--threads", "256", "--regs", "32"];
    let out = ok(&[&textbook[..], &["--static-smem", "40KiB", "--smem", "20KiB"]].concat());
    assert!(has(&out, "exceeds the 49152 B one block may have"), "{out}");
    assert!(!has(&out, "opt"), "{out}");
    let line = refused(&[&textbook[..], &["--smem", "60KiB"]].concat());
    assert!(
        line.ends_with(
            "one block may have on textbook SM (65536 registers, 2048 threads, 49152 B shared): at most 49152 B\n"
        ),
        "{line}"
    );
}

#[test]
fn kernel_figures_come_from_ptxas() {
    // register_pressure keeps 128 accumulators live: 168 registers on sm_90 (tests/ptx_content).
    let out = ok(&["occupancy", "--kernel", "register_pressure", "--threads", "256"]);
    assert!(has(&out, "168 registers per thread (ptxas -arch=sm_90 on the sm_90 PTX)"), "{out}");
    // 168 * 32 = 5376 per warp: 3 warps per sub-partition, 12 per SM, one block of 8 warps.
    assert!(has(&out, "occupancy: 12.5% (limited by registers)"), "{out}");
}

#[test]
fn the_tensor_ladders_figures_come_from_the_sm_90a_ptx() {
    // A cc 9.0 device loads the sm_90a PTX beside the sm_90 one; ptxas assembles it for sm_90a.
    let out = ok(&["occupancy", "--kernel", "tensor_1_wgmma", "--threads", "128"]);
    assert!(has(&out, "(ptxas -arch=sm_90a on the sm_90a PTX)"), "{out}");
    assert!(has(&out, "`tensor_1_wgmma`: 128 threads per block"), "{out}");
}

#[test]
fn occupancy_chart_is_drawn_for_given_numbers() {
    let dir = std::env::temp_dir().join(format!("memlab-occ-chart-{}", std::process::id()));
    let out = ok(&["occupancy", "--cc", "9.0", "--threads", "256", "--regs", "40", "--chart", dir.to_str().unwrap()]);
    assert!(has(&out, "charts: "), "{out}");
    let svg = std::fs::read_to_string(dir.join("occupancy.svg")).unwrap();
    assert!(svg.contains("Occupancy on cc 9.0 (256 threads, 40 registers") && svg.contains("75% here"), "{svg:.300}");
    assert!(std::fs::metadata(dir.join("occupancy.png")).unwrap().len() > 10_000);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn inspect_counts_memory_instructions_by_level() {
    // transpose_tiled: transpose_padded's body with an unpadded tile (transpose_padded has a
    // second path, for rows that are not whole sectors).
    let out = ok(&["inspect", "transpose_tiled", "--format", "markdown"]);
    // Four rows per thread (32x8 threads, 32x32 tile): four of each access, one barrier.
    for (level, access) in [("global", "loads"), ("global", "stores"), ("shared", "loads"), ("shared", "stores")] {
        let r = row(&out, &[level, access]);
        assert_eq!((r[3].as_str(), r[5].as_str()), ("4", "4"), "{level} {access}:\n{out}");
    }
    assert_eq!(row(&out, &["barrier", "block barriers"])[3..], ["1", "BAR", "1"]);
    assert_eq!(row(&out, &["local", "loads (stack, spills)"])[5], "0");
    // The tile's column read is the inline `ld.shared` of `load_shared_in_order` (the device
    // API's arch.rs) and the coalesced store the global view's (global.rs): both credited to the
    // transpose's line that reads the tile into the output.
    let read = lesson_rows(&out).into_iter().find(|r| r[3] == "LDS x4").expect(&out);
    assert!(read[0].starts_with("transpose.rs:") && read[1].starts_with("device-api/src/arch.rs:"), "{read:?}");
    assert!(read[2].contains("get_in_order"), "{read:?}");
    let store = lesson_rows(&out).into_iter().find(|r| r[3] == "STG.E x4").expect(&out);
    assert!(store[0] == read[0] && store[1].starts_with("device-api/src/global.rs:"), "{store:?}");
}

#[test]
fn inspect_credits_helper_loads_to_the_lesson_line_that_calls_them() {
    let out = ok(&["inspect", "sgemm_6_double_buffered", "--format", "markdown"]);
    // The 128-bit global loads of a tile step: `load4` (device.rs), through `Gemm::load4_a`
    // (device/gemm.rs), called by the staging line.
    let rows = lesson_rows(&out);
    let staged =
        rows.iter().find(|r| r[2].contains("g.load4_a(ar, ac)") && r[1].starts_with("device.rs:")).expect(&out);
    assert!(staged[0].starts_with("sgemm/vector.rs:") && staged[1].starts_with("device.rs:"), "{staged:?}");
    assert_eq!(staged[3], "LDG.E.128 x4", "{out}");
    // The 32 128-bit shared loads of the inner product: the A and B fragment lines.
    let shared: usize = rows
        .iter()
        .filter(|r| r[0].starts_with("sgemm/vector.rs:") && r[1].starts_with("device.rs:"))
        .filter_map(|r| r[3].strip_prefix("LDS.128 x")?.parse::<usize>().ok())
        .sum();
    assert_eq!(shared, 32, "{out}");
    // No helper line is a lesson line; the one exception is the entry's parameter loads (`LDC`,
    // the constant bank), which stand under `kernel!`, the device API's macro that declares it.
    for line in out.lines().filter(|l| l.starts_with("| device.rs") || l.starts_with("| device-api/")) {
        let ops = line.split('|').nth(4).unwrap_or_default().trim();
        assert!(
            line.starts_with("| device-api/src/kernel.rs:")
                && ops.strip_prefix("LDC x").is_some_and(|n| n.parse::<u32>().is_ok()),
            "no helper line is a lesson line:\n{out}"
        );
    }
}

/// Whether `piece` is a part of `word` that a line break after a separator (a path's `/`,
/// Rust's `::`, `(`, `,` or `.`) leaves whole: it starts the word or follows a separator, and
/// ends it or ends with one.
fn whole_piece_of(piece: &str, word: &str) -> bool {
    const SEPARATORS: [&str; 5] = ["/", "::", "(", ",", "."];
    word.match_indices(piece).any(|(at, _)| {
        let starts = at == 0 || SEPARATORS.iter().any(|s| word[..at].ends_with(s));
        let ends = at + piece.len() == word.len() || SEPARATORS.iter().any(|s| piece.ends_with(s));
        starts && ends
    })
}

#[test]
fn inspect_at_100_columns_breaks_no_word_and_credits_the_kernels_own_line() {
    let cell_words = |text: &str| -> Vec<String> {
        text.split(|c: char| c.is_whitespace() || c == '|')
            .filter(|w| !w.is_empty() && !w.chars().all(|c| c == '-'))
            .map(String::from)
            .collect()
    };
    // A kernel a lesson's macro declares (rung 8), one whose signature is longer than its
    // column, one with a long chain of calls.
    for kernel in ["sgemm_8_128x128x8_w32x64_t8x8_regs", "transpose_aligned_stores", "cluster_shared_read"] {
        let markdown = ok(&["inspect", kernel, "--format", "markdown"]);
        let out = memlab().env("COLUMNS", "100").args(["inspect", kernel]).output().expect("run memlab");
        let terminal = String::from_utf8(out.stdout).unwrap();
        let words: std::collections::HashSet<String> = cell_words(&markdown).into_iter().collect();
        for piece in cell_words(&terminal) {
            assert!(
                words.contains(&piece) || words.iter().any(|w| whole_piece_of(&piece, w)),
                "{kernel}: `{piece}` is a word cut inside:\n{terminal}"
            );
        }
        assert!(terminal.lines().all(|l| l.chars().count() <= 100), "{kernel}:\n{terminal}");
        // The parameters' loads the `kernel!` macro writes stand under the kernel's own line.
        let first = &lesson_rows(&markdown)[0];
        assert!(!first[0].starts_with("device-api/"), "{kernel}: {first:?}");
        assert!(first[1].starts_with("device-api/src/kernel.rs:") && first[3].starts_with("LDC"), "{first:?}");
    }
    let rung8 = ok(&["inspect", "sgemm_8_128x128x8_w32x64_t8x8_regs", "--format", "markdown"]);
    let first = &lesson_rows(&rung8)[0];
    assert!(first[0].starts_with("sgemm/tuned.rs:") && first[2].starts_with("`pub fn $name("), "{first:?}");
}

#[test]
fn inspect_says_ptx_locals_that_ptxas_removes_are_not_spills() {
    // register_pressure's 256 accumulators: a stack array in the PTX, registers in the SASS.
    let out = ok(&["inspect", "register_pressure"]);
    assert_eq!(row(&out, &["local", "stores (stack, spills)"])[3..], ["144", "STL", "0"]);
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("ptxas kept them all in registers, so the SASS has no LDL/STL"), "{out}");
    assert!(flat.contains("This is not spilling"), "{out}");
    let out = ok(&["inspect", "local_array_runtime_index"]).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(out.contains("LDL/STL in the SASS reach local memory") && out.contains("64 B stack frame"), "{out}");
}

#[test]
fn inspect_names_the_capability_a_kernel_needs() {
    let line = refused(&["inspect", "sgemm_7_async_copy", "--cc", "7.5"]);
    assert!(
        line.contains("needs cc 8.0 or newer") && line.contains("cp.async") && line.contains("sm_70 PTX"),
        "{line}"
    );
}

#[test]
fn cpu_commands_fit_100_columns() {
    for args in [
        &["inspect", "sgemm_6_double_buffered"][..],
        &["inspect", "transpose_vectorized", "--cc", "8.0"],
        &["occupancy", "--cc", "9.0", "--threads", "1024", "--regs", "32", "--smem", "8192B"],
        &["occupancy", "--kernel", "matmul_tiled_32", "--threads", "1024", "--smem", "8KiB"],
        &["occupancy", "--threads", "512", "--regs", "40", "--regs-per-sm", "65536"],
        &["occupancy", "--gpu", "RTX 4090", "--threads", "256", "--regs", "40", "--smem", "20KiB", "--suggest"],
        &["banks", "--width", "8", "--index", "t%4"],
        &["banks", "--width", "8", "--tile", "32x32", "--access", "column"],
        &["coalescing", "--struct", "16", "--fields", "0:4,4:4,8:4,12:4"],
    ] {
        for width in ["100", "160"] {
            let out = memlab().env("COLUMNS", width).args(args).output().expect("run memlab");
            assert!(out.status.success(), "{args:?}");
            let text = String::from_utf8(out.stdout).unwrap();
            let wide: Vec<&str> = text.lines().filter(|l| l.chars().count() > width.parse().unwrap()).collect();
            assert!(wide.is_empty(), "{args:?} at {width}: {wide:#?}");
        }
    }
}

#[test]
fn every_help_fits_100_columns() {
    // At 100 columns and on a wider terminal alike: help is capped at 100.
    let help = |args: &[&str]| {
        let mut text = String::new();
        for width in ["100", "160"] {
            let out = memlab().env("COLUMNS", width).args(args).arg("--help").output().expect("run memlab");
            assert!(out.status.success(), "{args:?}");
            text = String::from_utf8(out.stdout).unwrap();
            let wide: Vec<String> = text.lines().filter(|l| l.chars().count() > 100).map(String::from).collect();
            assert!(wide.is_empty(), "{args:?} --help at {width} columns: {wide:#?}");
        }
        text
    };
    let top = help(&[]);
    // The command list: "  NAME  description" lines between "Commands:" and the next heading.
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|&c| c != "help")
        .collect();
    assert!(commands.len() >= 10 && commands.contains(&"run-demos"), "{top}");
    for command in commands {
        help(&[command]);
    }
}

#[test]
fn inspect_shows_ptx_stack_slots_that_never_reach_local_memory() {
    let out = ok(&["inspect", "register_pressure"]);
    let ptx_local = row(&out, &["local", "stores (stack, spills)"]);
    assert!(ptx_local[3].parse::<usize>().unwrap() > 0, "the PTX has st.local:\n{out}");
    assert_eq!(ptx_local[5], "0", "ptxas keeps them in registers");
    assert!(has(&out, "168 registers per thread, 0 B stack frame, 0 B spill stores, 0 B spill loads"), "{out}");
}

#[test]
fn inspect_for_turing_has_sass_but_no_source_lines() {
    // A Turing GPU loads the sm_70 PTX; ptxas assembles it for its own SASS.
    let out = ok(&["inspect", "copy", "--cc", "7.5"]);
    assert!(has(&out, "(PTX sm_70, SASS sm_75)"), "{out}");
    // Every PTX global load of both of copy's paths (tiles, and one run on a thin matrix) is one
    // SASS load.
    let loads = row(&out, &["global", "loads"]);
    assert!(loads[3].parse::<usize>().unwrap() > 0 && loads[5] == loads[3], "{loads:?}");
    assert!(
        has(&out, "Rust source lines: not shown for the sm_70 PTX; only the sm_90 PTX carries line tables"),
        "{out}"
    );
}

#[test]
fn bad_input_is_one_line_with_the_allowed_range() {
    for (args, needle) in [
        (&["occupancy", "--threads", "1025", "--regs", "3"][..], "threads per block 1025 exceeds the limit of 1024"),
        (&["occupancy", "--threads", "128", "--regs", "256"][..], "registers per thread 256 exceeds the limit of 255"),
        (&["occupancy", "--threads", "0", "--regs", "3"][..], "a block needs at least 1 thread"),
        (
            &["occupancy", "--cc", "6.1", "--threads", "128", "--regs", "2"][..],
            "the nearest known are 7.0, 7.5, 8.0 (all known: 7.0, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 10.3, 11.0, 12.0, 12.1)",
        ),
        (
            &["occupancy", "--gpu", "GTX 1080", "--threads", "128", "--regs", "2"][..],
            "GPU names (closest: RTX 2080, RTX 3080, RTX 4080; `memlab occupancy --help` lists them)",
        ),
        (
            &["occupancy", "--gpu", "H300", "--threads", "256", "--regs", "32"][..],
            "invalid value 'H300' for '--gpu <GPU>': `H300` is not a known GPU: use a compute capability (7.0, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 10.3, 11.0, \
             12.0, 12.1), an SM target like sm_89, or one of 36 GPU names (closest: H100, H200, B300;",
        ),
        (
            &["occupancy", "--cc", "9.5", "--threads", "256", "--regs", "32"][..],
            "`9.5` is compute capability 9.5, which this lab has no limits for: the nearest known are 9.0, 10.0, 8.9 (",
        ),
        (
            &["occupancy", "--gpu", "H100", "--threads", "-256", "--regs", "32"][..],
            "invalid value '-256' for '--threads <THREADS>': -256 is negative",
        ),
        (&["occupancy", "--threads", "128", "--regs", "2", "--blocks", "0"][..], "0 is not in 1..=64"),
        (
            &["occupancy", "--gpu", "h200", "--threads", "256", "--regs", "0"][..],
            "--regs 0: a kernel uses at least 1 register per thread (ptxas gives even an empty kernel 4): allowed \
             1..=255",
        ),
        (&["banks", "--width", "3"][..], "access width 3 bytes is not modelled: allowed 4, 8 or 16"),
        (
            &["banks", "--stride", "0", "--offset", "232448"][..],
            "thread 0 accesses bytes 232448..232452, past the end of the 232448-byte shared array: allowed byte \
             offsets 0..=232444",
        ),
        (
            &["banks", "--tile", "32x32", "--offset", "4096", "--array", "4KiB"][..],
            "past the end of the 4096-byte shared array",
        ),
        (&["banks", "--index", "(t%4"][..], "`(t%4`: expected `)` at column 5"),
        (&["banks", "--lanes", "33"][..], "33 is not in 1..=32"),
        (&["banks", "--tile", "8x8", "--access", "diagonal"][..], "`diagonal` is not a tile access: use row or column"),
        (&["banks", "--width", "8", "--offset", "4"][..], "--offset 4 is not a multiple of the 8-byte width"),
        (&["banks", "--index", "t-1"][..], "the index is -1 at t = 0: indices must be 0 or more"),
        (
            &["banks", "--index", "t<<62"][..],
            "thread 1's byte address overflows 64 bits: allowed byte offsets 0..=232444 of the 232448-byte shared array",
        ),
        (&["banks", "--stride", "5000000000000000000"][..], "thread 1's byte address overflows 64 bits"),
        (
            &["banks", "--width", "16", "--stride", "8", "--swizzle", "128B", "--offset", "16"][..],
            "--offset 16 is not a multiple of the 128B swizzle's 1024-byte atom",
        ),
        (
            &["banks", "--swizzle", "64B", "--offset", "256"][..],
            "--offset 256 is not a multiple of the 64B swizzle's 512-byte atom",
        ),
        (
            &["banks", "--swizzle", "32b", "--offset", "128"][..],
            "--offset 128 is not a multiple of the 32B swizzle's 256-byte atom",
        ),
        (&["coalescing", "--elem", "17"][..], "17 is not in 1..=16"),
        (&["coalescing", "--elem", "8", "--offset", "4"][..], "a 8-byte access must start at a multiple of 8"),
        (&["coalescing", "--struct", "12", "--fields", "8:8"][..], "field 8:8 ends past the 12-byte struct"),
        (&["coalescing", "--lanes", "0"][..], "0 is not in 1..=32"),
        (
            &["coalescing", "--stride", "1000000000000000"][..],
            "lane 1's address is past the GPU's 49-bit virtual address space: allowed bytes 0..2^49",
        ),
        (&["coalescing", "--elem", "8", "--offset", "562949953421312", "--lanes", "1"][..], "lane 0's address is past"),
        (
            &["coalescing", "--struct", "12", "--fields", "18446744073709551615:4"][..],
            "field 18446744073709551615:4 ends past the 12-byte struct: allowed fields lie in bytes 0..12",
        ),
        (&["coalescing", "--index", "t<<62"][..], "lane 1's address is past the GPU's 49-bit"),
        (
            &["occupancy", "--threads", "128"][..],
            "required arguments were not provided: <--regs <REGS>|--kernel <KERNEL>|--blocks <N>>",
        ),
        (&["occupancy", "--threads", "128", "--smem", "5TB", "--regs", "1"][..], "unknown unit"),
        (
            &["occupancy", "--threads-per-sm", "100", "--threads", "32", "--regs", "1"][..],
            "multiple of the warp size 32",
        ),
        (
            &["occupancy", "--cc", "9.0", "--regs-per-sm", "1", "--threads", "32", "--regs", "1"][..],
            "cannot be used with",
        ),
        (
            &["occupancy", "--kernel", "matmul_tild", "--threads", "128"][..],
            "closest: matmul_tiled_16, matmul_tiled_32",
        ),
        (&["inspect", "nosuch"][..], "(`memlab inspect --list --cc 9.0` prints them all)"),
        (&["occupancy", "--cc", "8.6", "--kernel", "tma_copy", "--threads", "32"][..], "needs cc 9.0 or newer"),
        (&["occupancy", "--cc", "8.6", "--kernel", "nosuch", "--threads", "32"][..], "--list --cc 8.0` prints"),
        (&["inspect", "copy", "--list"][..], "cannot be used with"),
        (&["inspect", "copy", "--format", "html"][..], "invalid value 'html' for '--format <FORMAT>'"),
        (&["report", "/nonexistent/run.json", "--out", "/tmp/x"][..], "cannot read /nonexistent/run.json"),
    ] {
        let line = refused(args);
        assert!(line.contains(needle), "{args:?}: {line}");
    }
}

#[test]
fn occupancy_and_banks_help_list_every_gpu_name_on_one_line() {
    for command in ["occupancy", "banks"] {
        let help = memlab().args([command, "--help"]).env("COLUMNS", "100").output().expect("run memlab");
        let help = String::from_utf8(help.stdout).expect("utf-8 help");
        // A name's words are joined by no-break spaces, so no line break splits a name.
        let lines: Vec<String> = help.lines().map(|l| l.replace('\u{a0}', " ")).collect();
        for name in memlab::model::gpus::GPUS.map(|(name, _)| name) {
            assert!(lines.iter().any(|l| l.contains(name)), "{name} not on one line of {command} --help:\n{help}");
        }
    }
    // Each option naming a GPU says first what it is, then what it takes.
    let entry = |command: &str, option: &str| {
        let help = String::from_utf8(memlab().args([command, "--help"]).output().unwrap().stdout).unwrap();
        let at = help.find(&format!("{option} <")).unwrap_or_else(|| panic!("{command} --help has {option}"));
        let lines = help[at..].lines().skip(1).take_while(|l| !l.trim().is_empty());
        lines.map(str::trim).collect::<Vec<_>>().join(" ")
    };
    assert!(
        entry("occupancy", "--cc")
            .starts_with("The GPU whose limits apply (default 9.0, the H200; the same as --gpu): a compute capability")
    );
    assert!(entry("occupancy", "--gpu").starts_with("The GPU whose limits apply, as --cc: a compute capability"));
    assert!(
        entry("banks", "--cc")
            .starts_with("The GPU whose shared memory per block bounds the array and the tile (also --gpu;")
    );
    // A name copied from the help, no-break space and all, names the GPU.
    let out = ok(&["occupancy", "--gpu", "RTX\u{a0}3090", "--threads", "256", "--regs", "32"]);
    assert!(out.contains("cc 8.6"), "{out}");
}

#[test]
fn inspect_lists_the_kernels_of_the_ptx() {
    let sm90 = ok(&["inspect", "--list"]);
    assert!(sm90.lines().any(|l| l == "transpose_padded") && sm90.lines().any(|l| l == "tma_copy"), "{sm90}");
    // TMA is in the sm_90 PTX only.
    let sm80 = ok(&["inspect", "--list", "--cc", "8.0"]);
    assert!(sm80.lines().any(|l| l == "transpose_padded") && !sm80.lines().any(|l| l == "tma_copy"), "{sm80}");
}

#[test]
fn memlab_alone_asks_for_a_command_in_one_line() {
    assert_eq!(refused(&[]), "error: a command is required; `memlab --help` lists them\n");
}

#[test]
fn banks_gives_the_h200_figures_with_rule_and_picture() {
    let out = ok(&["banks", "--width", "8", "--index", "t%4"]);
    assert_eq!(row(&out, &["0"])[1..], ["0-15, 16-31", "2", "2", "0"]);
    assert!(has(&out, "rule: 32 banks of 4 bytes"), "{out}");
    assert!(has(&out, "measured on the H200"), "{out}");
    // The picture: lanes 0 and 4 share element 0 (banks 0 and 1), a broadcast.
    assert!(out.lines().any(|l| l.starts_with(" 1| 0* 0* 1* 1*")), "{out}");
    let out = ok(&["banks", "--width", "16", "--bytes", "((t>>1)%4)*16"]);
    assert_eq!(row(&out, &["0"])[2], "2");
    // The double tile's column store: 32 wavefronts per request, 30 conflicts, on all 32 warps.
    let out = ok(&["banks", "--width", "8", "--tile", "32x32", "--access", "column"]);
    assert_eq!(row(&out, &["0-31"])[2..], ["32", "2", "30"]);
    assert!(has(&out, "total: 1024 wavefronts, 64 ideal, 960 conflicts over 32 requests"), "{out}");
    // A 33-thread row: warps of 32 consecutive threads, the second with one lane.
    let out = ok(&["banks", "--tile", "32x32", "--block", "33x1"]);
    assert!(has(&out, "block 33x1 (warps of 32 consecutive threads x + 33*y: the last has 1 active lane)"), "{out}");
    assert!(has(&out, "total: 2 wavefronts, 2 ideal, 0 conflicts over 2 requests"), "{out}");
    // The default block follows the tile (at most 32 along each side), x along the access.
    for (access, block, warps) in [("row", "32x8", 8), ("column", "8x32", 8)] {
        let out = ok(&["banks", "--tile", "8x64", "--width", "16", "--swizzle", "128B", "--access", access]);
        assert!(has(&out, &format!("pitch 64, block {block},")), "{out}");
        assert!(has(&out, &format!("over {warps} requests")), "{out}");
    }
    // Two warps, word 4t: 3 conflicts each, 6 in all.
    let out = ok(&["banks", "--stride", "4", "--warps", "2"]);
    assert!(has(&out, "total: 8 wavefronts, 2 ideal, 6 conflicts over 2 requests"), "{out}");
    // The 16x16 block on a 16x17 tile covers two rows per warp: 2 wavefronts.
    let out = ok(&["banks", "--tile", "16x16", "--pitch", "17", "--block", "16x16", "--access", "column"]);
    assert_eq!(row(&out, &["0-7"])[2..], ["2", "1", "1"]);
    let json: serde_json::Value = serde_json::from_str(&ok(&["banks", "--stride", "2", "--json"])).unwrap();
    assert_eq!(json["total_wavefronts"], 2);
    assert_eq!(json["warps"][0]["conflicts"], 1);
}

#[test]
fn shared_memory_beyond_a_block_is_refused_and_blocks_needs_no_registers() {
    let limit = |cc: (u32, u32)| memlab::model::occupancy::ArchLimits::for_cc(cc.0, cc.1).unwrap().smem_per_block_optin;
    for (args, bytes) in
        [(&["banks", "--tile", "100000x100000"][..], 40_000_000_000u64), (&["banks", "--tile", "256x256"], 262_144)]
    {
        let e = refused(args);
        assert!(
            e.contains(&format!(
                "takes {bytes} B of shared memory: a block on cc 9.0 (Hopper) has at most {} B",
                limit((9, 0))
            )),
            "{e}"
        );
        assert!(e.contains("Technical Specifications per Compute Capability"), "{e}");
    }
    let e = refused(&["banks", "--array", "10GiB"]);
    assert!(e.contains(&format!("--array 10737418240 B is more shared memory than one block has: a block on cc 9.0 (Hopper) has at most {} B", limit((9, 0)))), "{e}");
    // 64 KiB fits a block of cc 7.5 (64 KiB) and 9.0, not 8.6 (99 KiB opt-in fits; 128 KiB does not).
    assert!(ok(&["banks", "--tile", "128x128", "--cc", "7.5"]).contains("32 warps"));
    let e = refused(&["banks", "--tile", "128x256", "--gpu", "RTX 3090"]);
    assert!(
        e.contains(&format!(
            "takes 131072 B of shared memory: a block on cc 8.6 (Ampere (GA10x)) has at most {} B",
            limit((8, 6))
        )),
        "{e}"
    );
    // `--blocks N` finds the register count itself, and the table shows that count.
    let out = ok(&["occupancy", "--gpu", "H100", "--threads", "256", "--smem", "48KiB", "--blocks", "3"]);
    let arch = memlab::model::occupancy::ArchLimits::for_cc(9, 0).unwrap();
    let res = memlab::model::occupancy::KernelResources::new(256, 0).with_dynamic_smem(48 << 10);
    let regs =
        memlab::model::occupancy::max_regs_for_blocks(arch, &res, 3, memlab::model::occupancy::Mode::Hardware).unwrap();
    assert!(has(&out, &format!("{regs} registers per thread (the most at which 3 blocks stay resident)")), "{out}");
    assert!(has(&out, &format!("registers for 3 blocks of 256 threads: at most {regs} per thread")), "{out}");
    assert!(has(&out, "resident per SM: 3 blocks"), "{out}");
    // 48KB and 48k are 48 KiB, as 48KiB is, and the help says so.
    let help = ok(&["occupancy", "--help"]);
    assert!(has(&help, "M/MB/MiB in any case: 48k = 48KB = 48KiB)"), "{help}");
    let kib = ok(&["occupancy", "--threads", "256", "--regs", "32", "--smem", "48KiB"]);
    for unit in ["48KB", "48k", "48K"] {
        assert_eq!(ok(&["occupancy", "--threads", "256", "--regs", "32", "--smem", unit]), kib, "{unit}");
    }
}

#[test]
fn coalescing_counts_a_struct_read_by_fields() {
    let out = ok(&["coalescing", "--struct", "16", "--fields", "0:4,4:4,8:4,12:4"]);
    assert_eq!(row(&out, &["all (L1)"])[1..3], ["4", "64"]);
    assert!(has(&out, "L2: 16 distinct sectors = 512 B"), "{out}");
    let out = ok(&["coalescing", "--elem", "16"]);
    assert_eq!(row(&out, &["16 B at +0"])[1..3], ["1", "16"]);
    assert!(has(&out, "L2: 16 distinct sectors = 512 B"), "{out}");
    // Stride 2 floats: half of every sector wasted; 128-byte segments: 2 of 2 used by half.
    let out = ok(&["coalescing", "--stride", "2"]);
    assert!(has(&out, "sector model 50.0% (128 useful / 256 B moved), 128-byte segment model 50.0%"), "{out}");
    assert!(has(&out, "source: CUDA C++ Best Practices Guide"), "{out}");
    // The last 8 bytes below 2^49 are in the address space (one past them is refused).
    let out = ok(&["coalescing", "--elem", "8", "--offset", "562949953421304", "--lanes", "1"]);
    assert!(has(&out, "element 0 at byte 562949953421304"), "{out}");
    // No load reads 3 or 12 bytes: the pieces of their alignment, as for char3 and float3.
    for (elem, loads, piece) in [("3", 3, 1), ("12", 3, 4)] {
        let out = ok(&["coalescing", "--elem", elem]);
        assert!(
            has(
                &out,
                &format!(
                    "no single load reads {elem} bytes: the compiler emits one load per piece of the alignment, {elem} bytes as {loads} loads of {piece} byte"
                )
            ),
            "{out}"
        );
        assert_eq!(row(&out, &["all (L1)"])[1], loads.to_string(), "{out}");
    }
    let json: serde_json::Value = serde_json::from_str(&ok(&["coalescing", "--stride", "64", "--json"])).unwrap();
    assert_eq!((json["traffic"]["l2_sectors"].clone(), json["dram_bytes"].clone()), (32.into(), 2048.into()));
    assert_eq!(json["segment_efficiency"], 1.0 / 32.0);
}

#[test]
fn occupancy_answers_by_name_suggests_and_explains_the_driver() {
    // A worked example: 4 blocks where the textbook gives 5, both numbers and the rule.
    let out = ok(&["occupancy", "--gpu", "RTX 4090", "--threads", "256", "--regs", "40", "--smem", "20KiB"]);
    assert!(out.contains("cc 8.9 (Ada Lovelace)"), "{out}");
    assert!(has(&out, "resident per SM: 4 blocks"), "{out}");
    assert!(
        has(
            &out,
            "the textbook arithmetic gives 5 blocks, 40 warps (83.3%) of the SM's 48; the driver's rules 4, 32 warps \
             (66.7%)"
        ),
        "{out}"
    );
    // A partial warp: both percentages count warps, so more blocks is never the lower figure.
    let partial = ok(&["occupancy", "--cc", "sm_90a", "--threads", "33", "--regs", "40"]);
    assert!(
        has(
            &partial,
            "the textbook arithmetic gives 32 blocks, 64 warps (100.0%) of the SM's 64; the driver's rules 24, 48 \
             warps (75.0%)"
        ),
        "{partial}"
    );
    assert!(
        has(&out, "the driver reserves 1024 B per block and allocates in 128 B units: 20480 + 1024 -> 21504 B"),
        "{out}"
    );
    assert!(has(&out, "cuda_occupancy.h"), "{out}");
    // --suggest and the inverse question.
    let out = ok(&["occupancy", "--gpu", "H200", "--threads", "256", "--regs", "65", "--suggest", "--blocks", "3"]);
    assert!(has(&out, "suggested block size: 896 threads (1 block per SM, 43.8%)"), "{out}");
    assert!(has(&out, "registers for 3 blocks of 256 threads: at most 80 per thread"), "{out}");
    // cc 8.6: 101120 B dynamic + 512 B static, opted in: over 99 KiB together, so no block.
    let out = ok(&[
        "occupancy",
        "--gpu",
        "sm_86",
        "--threads",
        "256",
        "--regs",
        "32",
        "--smem",
        "101120",
        "--static-smem",
        "512",
        "--opt-in",
    ]);
    assert!(has(&out, "resident per SM: 0 blocks, the launch fails: invalid argument: 101632 B"), "{out}");
    assert!(has(&out, "exceeds the opt-in limit of 101376 B (the limit applies to the sum)"), "{out}");
    // Not opted in: 200 KiB fails at 48 KiB; too many registers per block: too many resources.
    let out = ok(&["occupancy", "--threads", "128", "--regs", "32", "--smem", "200KiB"]);
    assert!(has(&out, "204800 B of static + dynamic shared memory per block exceeds the 49152 B"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&ok(&[
        "occupancy",
        "--cc",
        "8.9",
        "--threads",
        "256",
        "--regs",
        "40",
        "--smem",
        "20KiB",
        "--json",
        "--suggest",
    ]))
    .unwrap();
    assert_eq!((json["active_blocks"].as_u64(), json["textbook_blocks"].as_u64()), (Some(4), Some(5)));
    assert_eq!(json["suggested_block_size"], 768);
    let out = ok(&["occupancy", "--gpu", "V100", "--threads", "1024", "--regs", "65"]);
    assert!(
        has(&out, "the launch fails: too many resources requested for launch: the block needs 73728 registers"),
        "{out}"
    );
}

#[test]
fn report_refuses_a_file_that_is_not_a_run() {
    let path = std::env::temp_dir().join(format!("memlab-not-a-run-{}.json", std::process::id()));
    std::fs::write(&path, "{\"hello\": 1}").unwrap();
    let line = refused(&["report", path.to_str().unwrap(), "--out", "/tmp/x"]);
    assert!(line.contains("is not a memlab run record: missing field"), "{line}");
    // Valid JSON of another shape is named as such, not in the parser's words.
    std::fs::write(&path, "[]").unwrap();
    let line = refused(&["report", path.to_str().unwrap(), "--out", "/tmp/x"]);
    assert!(
        line.contains("is not a memlab run record: it holds an array, where `run-demos --json` writes an object"),
        "{line}"
    );
    std::fs::remove_file(path).unwrap();
}

/// `memlab report` of a copy of the recorded H200 run (`docs/report/run.json`) after `edit`:
/// the one line of its refusal (exit 2), after the file's path.
fn refused_record(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{root}/docs/report/run.json")).unwrap()).unwrap();
    edit(&mut record);
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("memlab-edited-run-{}-{n}.json", std::process::id()));
    std::fs::write(&path, record.to_string()).unwrap();
    let out = std::env::temp_dir().join(format!("memlab-edited-report-{}-{n}", std::process::id()));
    let line = refused(&["report", path.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    assert!(!out.exists(), "a refused record writes no report");
    let prefix = format!("error: {} is refused: ", path.display());
    line.trim_end().strip_prefix(&prefix).unwrap_or_else(|| panic!("{line}")).to_string()
}

#[test]
fn report_refuses_another_commands_record_in_one_line() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    for (file, command) in [
        ("docs/measurements/records/twins/bench.json", "bench"),
        ("docs/measurements/records/peer/peer.json", "peer"),
        ("host/tuned/sgemm.json", "autotune"),
    ] {
        let path = format!("{root}/{file}");
        let line = refused(&["report", &path, "--out", "/tmp/memlab-never-written"]);
        assert_eq!(
            line.trim_end(),
            format!(
                "error: {path} is a `memlab {command}` record; report reads run-demos records (`memlab run-demos --json FILE`)"
            )
        );
    }
}

#[test]
fn report_refuses_an_inconsistent_record_in_one_line() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{root}/docs/report/run.json")).unwrap()).unwrap();
    // The first kernel row: the section's place and name, the kernel's name.
    let (i, section) =
        run["sections"].as_array().unwrap().iter().enumerate().find(|(_, s)| s["kernels"][0].is_object()).unwrap();
    let row = format!(
        "sections[{i}] ({}).kernels[0] ({})",
        section["name"].as_str().unwrap(),
        section["kernels"][0]["kernel"].as_str().unwrap()
    );
    // The device's ceiling: SMs x clock x 128 B per SM per clock, at the fastest clock recorded.
    let device = &run["device"];
    let ceiling = |khz: f64, ghz: f64| {
        let sms = device["sms"].as_f64().unwrap();
        format!("{:.0}", sms * (khz / 1e6).max(ghz) * f64::from(memlab::model::roofline::SM_BYTES_PER_CLOCK))
    };
    let (khz, ghz) = (device["sm_clock_khz"].as_f64().unwrap(), run["sm_clock_ghz"].as_f64().unwrap());
    let limit = |c: &str| {
        format!("above NVIDIA H200's physical limit of {c} GB/s (SMs x clock x 128 B, the SMs' load/store path)")
    };

    // A failed check that names no mismatch, so that it reads as ok.
    let e = refused_record(|r| r["sections"][i]["kernels"][0]["check"]["mismatches"] = 5.into());
    assert_eq!(
        e,
        format!("{row}.check.mismatches is 5: but first_bad is null: a failed check names its first mismatch")
    );
    // A failed section check whose sweep row still says ok.
    let e = refused_record(|r| {
        let c = &mut r["sections"][0]["checks"][0];
        (c["mismatches"], c["first_bad"]) = (3.into(), serde_json::json!([5, "1", "2"]));
    });
    assert!(
        e.starts_with("sections[0] (memcpy).checks[0].mismatches is 3: the check failed, but its sweep row says `ok ("),
        "{e}"
    );
    // A rate beyond any device, and one beyond this record's own device at its recorded clock.
    let e = refused_record(|r| r["sections"][i]["kernels"][0]["rate"] = serde_json::json!({"Gbs": 1e300}));
    assert_eq!(e, format!("{row}.rate is 1e300: {}", limit(&ceiling(khz, ghz))));
    let e = refused_record(|r| {
        (r["device"]["sm_clock_khz"], r["sm_clock_ghz"]) = (100_000.into(), 0.1.into());
    });
    let memcpy = run["memcpy_gbs"].as_f64().unwrap();
    assert_eq!(e, format!("memcpy_gbs is {memcpy}: {}", limit(&ceiling(100_000.0, 0.1))));
    let e = refused_record(|r| r["memcpy_gbs"] = 1e300.into());
    assert_eq!(e, format!("memcpy_gbs is 1e300: {}", limit(&ceiling(khz, ghz))));
    // A chart's point in GB/s.
    let e = refused_record(|r| {
        let s = r["sections"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .flat_map(|s| s["series"].as_array_mut().unwrap())
            .find(|s| s["y"] == "GB/s")
            .unwrap();
        s["points"][0]["y"] = 1e300.into();
    });
    assert!(e.contains(".points[0].y is 1e300: ") && e.ends_with(&limit(&ceiling(khz, ghz))), "{e}");
    // A section memlab does not write.
    let e = refused_record(|r| r["sections"][i]["name"] = "transposes".into());
    assert!(e.starts_with(&format!("sections[{i}].name is transposes: not a section memlab writes (memcpy, ")), "{e}");
}
