//! The built binary on a machine with no NVIDIA driver: no `libcuda.so.1` anywhere on the
//! loader's search path (cargo's `LD_LIBRARY_PATH`, which may hold the stand-in library of
//! `cargo xtask setup`, is removed). The CPU commands work; the GPU commands, and `doctor`,
//! end with one line and exit 2. A driver function that `gpu/driver.rs` does not forward makes
//! the binary need `libcuda.so.1` to start: then every command here fails with exit 127.

use std::process::{Command, Output, Stdio};

/// Whether the machine's loader cache knows a driver library (a GPU machine).
fn driver_installed() -> bool {
    ["ldconfig", "/sbin/ldconfig"]
        .iter()
        .find_map(|l| Command::new(l).arg("-p").output().ok())
        .is_some_and(|o| String::from_utf8_lossy(&o.stdout).contains("libcuda.so.1"))
}

fn memlab(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memlab"));
    cmd.args(args).env_remove("LD_LIBRARY_PATH").env_remove("MEMLAB_LIBCUDA").stdin(Stdio::null());
    if driver_installed() {
        // On a GPU machine the driver is found through ldconfig's cache: name a missing one.
        cmd.env("MEMLAB_LIBCUDA", "/nonexistent/libcuda.so.1");
    }
    cmd.output().expect("run memlab")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn cpu_commands_run_without_a_driver() {
    let out = std::env::temp_dir().join(format!("memlab-no-driver-{}", std::process::id()));
    let run = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/report/run.json");
    for args in [
        &["--help"][..],
        &["occupancy", "--cc", "9.0", "--threads", "256", "--regs", "40"],
        &["occupancy", "--kernel", "transpose_padded", "--threads", "256"],
        &["inspect", "transpose_padded"],
        &["report", run, "--out", out.to_str().unwrap()],
    ] {
        let o = memlab(args);
        assert_eq!(o.status.code(), Some(0), "{args:?} without a driver: {}", text(&o.stderr));
        assert!(!o.stdout.is_empty(), "{args:?} printed nothing");
    }
    assert!(out.join("report.md").is_file());
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn gpu_commands_say_there_is_no_driver_in_one_line() {
    for args in [&["devices"][..], &["run-demos", "--only", "transpose"], &["hierarchy"], &["race-lesson"]] {
        let o = memlab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: no NVIDIA driver: libcuda.so.1 not found ("), "{err}");
        assert!(err.ends_with("; `memlab doctor` says what this machine has\n"), "{err}");
        assert_eq!(err.matches("libcuda.so.1").count(), 1, "the file is named once: {err}");
        assert!(o.stdout.is_empty(), "{args:?} printed a result: {}", text(&o.stdout));
    }
}

#[test]
fn doctor_reports_the_missing_driver_and_exits_2() {
    let o = memlab(&["doctor"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert_eq!(err.trim_end(), "error: run-demos cannot run here: no NVIDIA driver (libcuda.so.1 not found)");
    let out = text(&o.stdout);
    let driver_line = out.lines().find(|l| l.trim_start().starts_with("libcuda.so.1")).expect("a driver line");
    assert!(driver_line.contains("not found: "), "{out}");
    // Every tool has its line, found or not; the tests' ptxas and nvdisasm are found by path.
    let lines: Vec<&str> = out.lines().collect();
    for tool in ["ptxas", "nvdisasm", "nvcc", "compute-sanitizer", "ncu", "libcublas", "libnccl"] {
        let at = lines.iter().position(|l| l.trim_start().starts_with(&format!("{tool} "))).unwrap_or_else(|| {
            panic!("no line for {tool}:\n{out}");
        });
        if matches!(tool, "ptxas" | "nvdisasm") {
            // The path, on the tool's line or, when long, on the next.
            let both = format!("{} {}", lines[at], lines[at + 1]);
            assert!(!both.contains("not found") && both.contains(&format!("/{tool}")), "{both}");
        }
        // Each library names the command that loads it.
        if tool == "libnccl" {
            assert!(lines[at].contains("collectives (all-reduce, all-gather)"), "{}", lines[at]);
        }
    }
    assert!(!out.contains("GPUs"), "no GPU section without a driver:\n{out}");
    // What is missing comes with a command a bundle-only user can run (no source tree).
    assert!(!out.contains("cargo xtask"), "{out}");
    let fixes = &out[out.find("missing, and how to get it").expect("a list of what is missing")..];
    assert!(fixes.contains("the NVIDIA driver"), "{fixes}");
    if out.lines().any(|l| l.trim_start().starts_with("compute-sanitizer") && l.contains("not found")) {
        assert!(
            fixes.contains("pip install --target ~/memlab-cuda \\\n        \"nvidia-cuda-sanitizer-api==13.*\""),
            "{fixes}"
        );
        // ptxas is found, so MEMLAB_CUDA_BIN, which would move it, stays as it is.
        assert!(fixes.contains("\n    export PATH=~/memlab-cuda/nvidia/cu13/bin:$PATH\n"), "{fixes}");
    }
    assert!(out.lines().all(|l| l.chars().count() <= 100), "lines fit 100 columns:\n{out}");
}

#[test]
fn doctor_tells_a_bundle_user_without_ptxas_how_to_get_it() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memlab"));
    let o = cmd.arg("doctor").env("MEMLAB_CUDA_BIN", "/nonexistent").env("PATH", "/usr/bin:/bin").output().unwrap();
    let out = text(&o.stdout);
    let ptxas = out.lines().find(|l| l.trim_start().starts_with("ptxas ")).unwrap();
    assert!(ptxas.contains("not found"), "{out}");
    let heading = out.lines().find(|l| l.starts_with("  ptxas, ")).expect("ptxas among the missing");
    assert!(heading.contains("nvdisasm"), "{heading}");
    assert!(
        out.contains(
            "pip install --target ~/memlab-cuda \\\n        \"nvidia-cuda-nvcc==13.*\" \"nvidia-cuda-nvdisasm==13.*\""
        ),
        "{out}"
    );
    assert!(out.contains("export MEMLAB_CUDA_BIN=~/memlab-cuda/nvidia/cu13/bin PATH="), "{out}");
    assert!(!out.contains("cargo xtask"), "{out}");
}
