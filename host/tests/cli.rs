//! The binary's behaviour on a machine without a GPU: help, refusals of bad input, and the
//! one-line no-driver error with exit code 2.

use std::process::{Command, Output, Stdio};

fn memlab(args: &[&str]) -> Output {
    memlab_env(args, &[])
}

/// `memlab ARGS` with extra environment variables.
fn memlab_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memlab"));
    cmd.envs(env.iter().copied());
    // The binary loads libcuda.so.1 when a command needs the GPU; on a machine without a driver,
    // the library `cargo xtask setup` fetched (cust's CUDA_LIBRARY_PATH) stands in, so cuInit is
    // reached and finds no device (`tests/no_driver.rs` runs with no library at all).
    if let Ok(dir) = std::env::var("CUDA_LIBRARY_PATH") {
        cmd.env("LD_LIBRARY_PATH", std::path::Path::new(&dir).join("lib64"));
    }
    cmd.args(args)
        // Hide any GPU, so the no-device path is the one taken on every machine.
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .expect("run memlab")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_lists_the_commands() {
    let o = memlab(&["--help"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("run-demos") && out.contains("devices"), "{out}");
}

#[test]
fn no_gpu_is_one_line_exit_2_and_no_result() {
    for args in [&["devices"][..], &["run-demos"][..], &["race-lesson"][..], &["bench"][..]] {
        let o = memlab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: no usable NVIDIA driver or GPU: cuInit failed with NoDevice"), "{err}");
        assert!(o.stdout.is_empty(), "nothing may be printed as a result");
    }
}

/// `memlab ARGS` exits 2 with one line on stderr containing `needle`, and prints no result.
fn assert_refused(args: &[&str], needle: &str) {
    let o = memlab(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}");
    assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
    assert!(o.stdout.is_empty());
}

#[test]
fn bad_sizes_are_refused_before_touching_the_gpu() {
    for (args, needle) in [
        (&["run-demos", "--transpose", "0x5"][..], "out of range: at least 1"),
        (&["run-demos", "--matmul=-3x4x4"][..], "'-3x4x4' for '--matmul <MATMUL>': -3x4x4 is negative"),
        (&["run-demos", "--matmul", "8x8x"][..], "not a whole number"),
        (
            &["run-demos", "--device", "-1"][..],
            "invalid value '-1' for '--device <DEVICE>': -1 is negative; sizes, counts and --device are whole numbers",
        ),
        (&["run-demos", "--matmul", "-4x4x4"][..], "'-4x4x4' for '--matmul <MATMUL>': -4x4x4 is negative"),
        (&["run-demos", "--matmul", "4x4"][..], "expected 3 sizes"),
        (&["run-demos", "--strided-bytes", "0MiB"][..], "at least 1 byte"),
        (&["run-demos", "--only", "nosuch"][..], "nosuch"),
        (&["run-demos", "--runs", "0"][..], "0"),
        (&["run-demos", "--strided-bytes", "100"][..], "out of range for the strided-read sweep: allowed 2048..="),
        (&["run-demos", "--only", "race"][..], "invalid value 'race' for '--only <ONLY>...' [possible values: memcpy,"),
        (
            &["race-lesson", "--matmul", "64x64x32"][..],
            "K = 32 gives one tile step and no race; use K above 32 (allowed 33..=",
        ),
        (&["race-lesson", "--matmul", "0x64x64"][..], "out of range: at least 1"),
        (&["race-lesson", "--runs", "0"][..], "0 is not in 1..=1000"),
        (&["no-such-command"][..], "unrecognized subcommand 'no-such-command' [commands: run-demos, devices, "),
        (&["run-demos", "--sgemm", "4096x0x4096"][..], "out of range: at least 1"),
        (&["bench", "--twins", "t.cubin", "--rounds", "0"][..], "0"),
        (&["bench", "--twins", "t.cubin", "--sgemm", "64x64"][..], "expected 3 sizes"),
    ] {
        assert_refused(args, needle);
    }
    // An unknown option is not taken for a negative value.
    assert_refused(&["run-demos", "--bogus"], "unexpected argument '--bogus' found");
    assert!(!stderr(&memlab(&["run-demos", "--bogus"])).contains("negative"));
}

#[test]
fn bank_iters_must_be_a_multiple_of_the_unroll() {
    for command in ["run-demos", "hierarchy"] {
        let o = memlab(&[command, "--bank-iters", "12"]);
        assert_eq!(o.status.code(), Some(2), "{command}");
        assert_eq!(
            stderr(&o).trim(),
            "error: invalid value '12' for '--bank-iters <BANK_ITERS>': 12 loads must be a multiple of 8 (the probe's unroll), 8 to 16777216"
        );
        assert!(o.stdout.is_empty(), "{command}");
    }
}

#[test]
fn cluster_options_are_refused_before_touching_the_gpu() {
    for (args, needle) in [
        (
            &["run-demos", "--only", "clusters", "--clusters", "2,32"][..],
            "invalid value '32' for '--clusters <CLUSTERS>': cluster size 32 is outside 1..=16: CUDA allows at most 16 blocks per cluster (non-portable above 8, cc 9.0)",
        ),
        (&["run-demos", "--clusters", "0"][..], "cluster size 0 is outside 1..=16"),
        (&["run-demos", "--clusters", "two"][..], "cluster size `two` is not a whole number"),
        (&["run-demos", "--cluster-reads", "0"][..], "0 reads must be a positive multiple of 8"),
        (&["hierarchy", "--cluster-reads", "33554432"][..], "at most 16777216"),
        (
            &["bench", "--only", "hierarchy"][..],
            "bench --only hierarchy: that demo's kernels have no CUDA C++ twins (demos with twins: memcpy,",
        ),
    ] {
        assert_refused(args, needle);
    }
    for command in ["run-demos", "hierarchy"] {
        let o = memlab(&[command, "--cluster-reads", "12"]);
        assert_eq!(o.status.code(), Some(2), "{command}");
        assert_eq!(
            stderr(&o).trim(),
            "error: invalid value '12' for '--cluster-reads <CLUSTER_READS>': 12 reads must be a positive multiple of 8 (the read kernel's unroll), at most 16777216"
        );
        assert!(o.stdout.is_empty(), "{command}");
    }
}

#[test]
fn hierarchy_refuses_bad_sizes_before_touching_the_gpu() {
    for (args, needle) in [
        (
            &["hierarchy", "--ladder-max", "3000"][..],
            "error: --ladder-max 3000 must be a power of two of at least 4096",
        ),
        (&["hierarchy", "--ladder-max", "2KiB"][..], "error: --ladder-max 2048 must be a power of two"),
        (
            &["hierarchy", "--dram-bytes", "100"][..],
            "'--dram-bytes <DRAM_BYTES>': --dram-bytes 100 must be a multiple of 16",
        ),
        // The hierarchy's DRAM size is its own option in run-demos too, not --strided-bytes.
        (
            &["run-demos", "--dram-bytes", "100"][..],
            "'--dram-bytes <DRAM_BYTES>': --dram-bytes 100 must be a multiple of 16",
        ),
        (&["hierarchy", "--steps", "8"][..], "8 is not in 64..=4194304"),
    ] {
        assert_refused(args, needle);
    }
}

#[test]
fn the_l2_lesson_refuses_byte_counts_that_are_not_whole_vectors() {
    let needle = "bytes: the L2 lesson reads 16-byte vectors, so give a multiple of 16 from 16 bytes to 32 GiB";
    for args in [
        &["run-demos", "--l2-stream-bytes", "100"][..],
        &["run-demos", "--l2-read-bytes", "4100"],
        &["run-demos", "--l2-stream-bytes", "64GiB"],
    ] {
        assert_refused(args, needle);
    }
}

#[test]
fn device_lists_are_refused_before_touching_the_gpu() {
    for command in ["run-demos", "hierarchy", "bench", "peer", "host-memory", "collectives"] {
        assert_refused(&[command, "--device", "0,0"], "`0,0` names device 0 twice: list each device once");
        assert_refused(&[command, "--device", ""], "the device list is empty: give `all`, one ordinal like 0");
        assert_refused(&[command, "--device", "0,,1"], "`0,,1` has an empty entry");
        assert_refused(&[command, "--device", "one"], "`one` in `one` is not a device ordinal");
    }
    // A well-formed list reaches the driver, which has no GPU here.
    assert_refused(&["run-demos", "--device", "all"], "no usable NVIDIA driver or GPU");
    assert_refused(&["hierarchy", "--device", "0,1"], "no usable NVIDIA driver or GPU");
}

#[test]
fn peer_and_host_memory_sizes_are_refused_before_touching_the_gpu() {
    assert_refused(&["peer", "--copy-bytes", "1000"], "--copy-bytes 1000 must be a multiple of 16384 bytes");
    assert_refused(&["peer", "--chain-bytes", "100"], "--chain-bytes 100 must be a multiple of 128 bytes");
    assert_refused(&["peer", "--strided-bytes", "1KiB"], "out of range for the strided-read sweep");
    assert_refused(&["host-memory", "--managed-bytes", "8GiB"], "--managed-bytes 8589934592 is out of range");
    assert_refused(&["collectives", "--max-bytes", "2GiB"], "allowed 8 <= min <= max <= 1073741824");
    // With sizes in range, the peer lesson reaches the driver.
    assert_refused(&["peer"], "no usable NVIDIA driver or GPU");
}

#[test]
fn a_lesson_asked_for_by_name_refuses_its_sizes_before_the_gpu() {
    // The TMA lesson's matrix past 2^32 - 1 elements: refused in run-demos and bench alike when
    // named; among all the lessons it would be skipped with a note instead.
    for command in ["run-demos", "bench"] {
        assert_refused(&[command, "--only", "tma", "--transpose", "65536x65536"], "4294967296 elements");
    }
}

#[test]
fn collectives_ask_the_driver_before_looking_for_nccl() {
    // No driver here: refused like every GPU command, even with no NCCL either (on a GPU machine
    // without NCCL, `collectives::skipped_line` is the whole output, exit 0).
    let o = memlab_env(&["collectives"], &[("MEMLAB_NCCL", "/nonexistent/libnccl.so.2")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no usable NVIDIA driver or GPU"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(o.stdout.is_empty());
}

#[test]
fn a_closed_pipe_ends_quietly_with_exit_0() {
    // `memlab occupancy ... | head -0`: the reader is gone before the first line is printed.
    let mut child = Command::new(env!("CARGO_BIN_EXE_memlab"))
        .args(["occupancy", "--cc", "9.0", "--threads", "256", "--regs", "40"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run memlab");
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "no panic message: {}", stderr(&o));
}

#[test]
fn output_paths_are_checked_before_any_work() {
    let run = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/report/run.json");
    for (args, flag) in [
        (&["run-demos", "--json", "/missing/dir/x.json"][..], "--json /missing/dir/x.json"),
        (&["run-demos", "--report", "/missing/dir/report"], "--report /missing/dir/report"),
        (&["bench", "--json", "/missing/dir/x.json"], "--json /missing/dir/x.json"),
        (&["run-demos", "--device", "all", "--json", "/missing/dir/x.json"], "--json /missing/dir/x.json"),
        (&["peer", "--json", "/missing/dir/x.json"], "--json /missing/dir/x.json"),
        (&["peer", "--report", "/missing/dir/report"], "--report /missing/dir/report"),
        (&["occupancy", "--threads", "256", "--regs", "40", "--chart", "/missing/dir/c"], "--chart /missing/dir/c"),
        (&["report", run, "--out", "/missing/dir/r"], "--out /missing/dir/r"),
    ] {
        let o = memlab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        // Named before the driver is touched: not the no-GPU refusal.
        assert_eq!(stderr(&o).trim_end(), format!("error: {flag}: the folder /missing/dir does not exist"));
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}
