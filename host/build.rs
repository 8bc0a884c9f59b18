//! The PTX build step (the project's stand-in for `cuda_builder`).
//!
//! Builds `../kernels-gpu` with rustc's own `nvptx64-nvidia-cuda` backend, once per entry of
//! [`BUILDS`], and leaves `kernels_<name>.ptx` in `OUT_DIR` for `src/ptx.rs` to embed.
//! The pinned nightly is read from `kernels-gpu/rust-toolchain.toml` and installed with its
//! components when missing (rustup does not auto-install toolchains on every machine).
//! A PTX that still calls an undefined function (`.extern .func`) fails the build.
//!
//! The `sm_90_lines` build (`-C debuginfo=line-tables-only`) is for `memlab inspect`, which maps
//! SASS back to Rust source lines; it is never loaded on a GPU. It is embedded as LLVM wrote
//! it, DWARF sections included: `memlab::ptx::line_tables` reads the inlined calls from them
//! and writes the PTX that `ptxas -lineinfo` accepts.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

#[path = "build/launches.rs"]
mod launches;

/// One PTX build: output name (`kernels_<name>.ptx`), target, cargo features, and whether it
/// carries line tables (`.file`/`.loc`) for `memlab inspect`.
struct Build {
    name: &'static str,
    arch: &'static str,
    features: &'static str,
    line_tables: bool,
}

/// The PTX ISA of the sm_90 builds, as a target feature: the backend's default for sm_90 is
/// ISA 7.8, and the TMA lesson needs 8.0 (`cp.async.bulk`, `cp.async.bulk.tensor`, `mbarrier`
/// transaction counts). It declares 8.3, which it needed while its tensor maps were read from
/// global memory (`fence.proxy.tensormap::generic`) and which every driver of CUDA 12.3 or
/// newer JITs. PTX ISA, "Release Notes" / each instruction's "PTX ISA Notes".
const SM_90_PTX_ISA: &str = "target-feature=+ptx83";

/// A baseline every supported GPU can JIT (cc 7.0, so V100s load the lab), Ampere's (cc 8.0, the first with
/// `cp.async`), Hopper's own (cc 9.0, PTX ISA 8.3: [`SM_90_PTX_ISA`]), the load-counting builds of the tiling
/// lessons (cc 7.0 for any GPU; cc 9.0 for the cluster matmul, in the sm_90 PTX only), Hopper's with line tables, and Hopper's checked build (bounds checks on, `memlab bench
/// --checked`). The sm_90 PTX holds the sm_80 one's kernels and the
/// Hopper-only ones (`kernels-gpu/src/tma.rs`, `clusters.rs`); it is what the H200 figures in the README were
/// measured with. The sm_90a PTX holds the tensor ladder alone (`kernels-gpu/src/tensor.rs`: `wgmma` and
/// `setmaxnreg` exist only with the arch-specific features, and such PTX loads on cc 9.0 alone).
const BUILDS: [Build; 8] = [
    Build { name: "sm_70", arch: "sm_70", features: "", line_tables: false },
    Build { name: "sm_80", arch: "sm_80", features: "", line_tables: false },
    Build { name: "sm_90", arch: "sm_90", features: "", line_tables: false },
    Build { name: "sm_70_counting", arch: "sm_70", features: "count-loads", line_tables: false },
    Build { name: "sm_90_counting", arch: "sm_90", features: "count-loads", line_tables: false },
    Build { name: "sm_90_lines", arch: "sm_90", features: "", line_tables: true },
    Build { name: "sm_90_checked", arch: "sm_90", features: "checked", line_tables: false },
    Build { name: "sm_90a", arch: "sm_90a", features: "", line_tables: false },
];

/// Variables the outer cargo sets for build scripts that would make the nested cargo use the
/// host's stable rustc, its flags, or its target directory.
const LEAKY_VARS: &[&str] = &[
    "RUSTC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTDOC",
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_RUSTC",
    "RUSTUP_TOOLCHAIN",
    "CARGO_MAKEFLAGS",
];

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let kernels = manifest_dir.join("../kernels-gpu").canonicalize().expect("kernels-gpu/ next to host/");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    for path in ["src", "Cargo.toml", "rust-toolchain.toml"] {
        println!("cargo:rerun-if-changed={}", kernels.join(path).display());
    }
    // The launch contracts and the device API are path dependencies of the kernels.
    for dep in ["../contracts", "../device-api"] {
        for path in ["src", "Cargo.toml"] {
            println!("cargo:rerun-if-changed={}", kernels.join(dep).join(path).display());
        }
    }

    launches::write(&kernels, &out_dir);
    let toolchain = pinned_toolchain(&kernels);
    ensure_toolchain(&toolchain);
    // `-Zbuild-std` compiles `core` into each build's target directory, three quarters of a
    // build's time, and the same `core` for every build: the arch flags reach only the kernel
    // crate (after `cargo rustc --`). So the first build runs alone, a new build's directory
    // starts as a copy of its directory, and the other builds then run side by side.
    let (first, rest) = BUILDS.split_first().unwrap();
    write_ptx(&kernels, &toolchain, first, &out_dir);
    for build in rest {
        seed_target_dir(&kernels, first, build);
    }
    let jobs = env::var("NUM_JOBS").ok().and_then(|n| n.parse().ok()).unwrap_or(1).clamp(1, rest.len());
    let next = AtomicUsize::new(0);
    thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                while let Some(build) = rest.get(next.fetch_add(1, Ordering::Relaxed)) {
                    write_ptx(&kernels, &toolchain, build, &out_dir);
                }
            });
        }
    });
    println!("cargo:rustc-env=MEMLAB_NIGHTLY={toolchain}");
    println!("cargo:rustc-env=MEMLAB_HOST_RUSTC={}", host_rustc_version());
}

/// Builds one PTX and writes it, with its launch bounds, to `out_dir/kernels_<name>.ptx`.
fn write_ptx(kernels: &Path, toolchain: &str, build: &Build, out_dir: &Path) {
    let ptx = build_ptx(kernels, toolchain, build);
    if let Some(line) = ptx.lines().find(|l| l.trim_start().starts_with(".extern .func")) {
        fail(&format!("the {} PTX is not self-contained, it still declares `{}`", build.name, line.trim()));
    }
    let ptx = with_launch_bounds(ptx, build.arch);
    fs::write(out_dir.join(format!("kernels_{}.ptx", build.name)), ptx).unwrap();
}

/// One target directory per build, so two builds never read each other's `kernels_gpu.s`.
fn target_dir(kernels: &Path, build: &Build) -> PathBuf {
    kernels.join("target").join(build.name)
}

/// Starts `build`'s target directory, when it has none yet, as a copy of `from`'s, whose `core`
/// cargo then finds fresh; its kernel crate, built with other flags or features, is rebuilt.
fn seed_target_dir(kernels: &Path, from: &Build, build: &Build) {
    let dir = target_dir(kernels, build);
    if dir.exists() {
        return;
    }
    let status = Command::new("cp").arg("-a").arg(target_dir(kernels, from)).arg(&dir).status();
    if !status.is_ok_and(|s| s.success()) {
        fail(&format!("could not copy the {} target directory to {}", from.name, dir.display()));
    }
}

/// `rustc --version` of the compiler building this crate (cargo's `RUSTC`), for the test that
/// checks it is the release pinned in `rust-toolchain.toml`.
fn host_rustc_version() -> String {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("--version").output().expect("cargo's RUSTC runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The `channel = "..."` of `kernels-gpu/rust-toolchain.toml`.
fn pinned_toolchain(kernels: &Path) -> String {
    let text = fs::read_to_string(kernels.join("rust-toolchain.toml")).expect("kernels-gpu/rust-toolchain.toml");
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("channel"))
        .filter_map(|rest| rest.split('"').nth(1))
        .next()
        .expect("a channel in kernels-gpu/rust-toolchain.toml")
        .to_string()
}

/// Installs the pinned nightly with `rust-src` (for `-Zbuild-std=core`) when it is missing.
fn ensure_toolchain(toolchain: &str) {
    let sysroot = rustup(toolchain, &["rustc", "--print", "sysroot"]).ok();
    let has_src =
        sysroot.as_ref().is_some_and(|root| Path::new(root.trim()).join("lib/rustlib/src/rust/library/core").is_dir());
    if has_src {
        return;
    }
    println!("cargo:warning=installing the kernels' pinned toolchain {toolchain} with rust-src (one time)");
    let status = Command::new("rustup")
        .args(["toolchain", "install", toolchain, "--profile", "minimal", "--component", "rust-src"])
        .status();
    if !status.is_ok_and(|s| s.success()) {
        fail(&format!(
            "could not install the pinned toolchain: run `rustup toolchain install {toolchain} --profile minimal --component rust-src`"
        ));
    }
}

/// Runs `rustup run <toolchain> <args>` and returns its stdout.
fn rustup(toolchain: &str, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new("rustup");
    cmd.args(["run", toolchain]).args(args);
    for var in LEAKY_VARS {
        cmd.env_remove(var);
    }
    let out = cmd.output().map_err(|e| format!("cannot run rustup: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// One PTX for `arch` with cargo `features`: fat LTO folds `core` into the kernel crate, `--emit=asm` writes the
/// module as PTX, and the no-op linker skips the bitcode linker this target would otherwise
/// need (it is not distributed for nvptx64). Line tables add `.file`/`.loc` directives.
fn build_ptx(kernels: &Path, toolchain: &str, build: &Build) -> String {
    let Build { name, arch, features, line_tables } = *build;
    let manifest = kernels.join("Cargo.toml");
    let target_dir = target_dir(kernels, build);
    let cpu = format!("target-cpu={arch}");
    let args = [
        "cargo",
        "rustc",
        "--release",
        "--quiet",
        "--target",
        "nvptx64-nvidia-cuda",
        "-Zbuild-std=core",
        "--manifest-path",
        manifest.to_str().unwrap(),
        "--target-dir",
        target_dir.to_str().unwrap(),
        "--features",
        features,
        "--",
        "--emit=asm",
        "-C",
        &cpu,
        "-C",
        "linker=true",
    ];
    let debug = ["-C", "debuginfo=line-tables-only"];
    let isa = ["-C", SM_90_PTX_ISA];
    let args: Vec<&str> = args
        .iter()
        .chain(if line_tables { &debug[..] } else { &[] })
        .chain(if arch == "sm_90" { &isa[..] } else { &[] })
        .copied()
        .collect();
    if let Err(err) = rustup(toolchain, &args) {
        fail(&format!("building kernels-gpu ({name}) failed:\n{err}"));
    }
    let asm = target_dir.join("nvptx64-nvidia-cuda/release/deps/kernels_gpu.s");
    let ptx = fs::read_to_string(&asm).unwrap_or_else(|e| fail(&format!("no PTX at {}: {e}", asm.display())));
    // Cargo takes `kernels_gpu.ptx`, which the no-op linker never writes, for the crate's output:
    // without it every run of this script rebuilt all the kernels, fresh or not (`cargo clippy`
    // and `cargo test` each run it).
    fs::write(asm.with_extension("ptx"), &ptx).unwrap();
    ptx
}

/// Writes `memlab_contracts::sgemm::launch_bounds` for `arch` (`sm_NN`),
/// `memlab_contracts::transpose_thin::launch_bounds`, and `memlab_contracts::tensor::launch_bounds`
/// for `sm_90a`, into its PTX: `.maxntid`
/// and `.minnctapersm` after the parameter list of each of those entries the PTX has (PTX ISA, "Performance-Tuning
/// Directives"), what `__launch_bounds__` writes for nvcc; rustc has no attribute for them.
fn with_launch_bounds(mut ptx: String, arch: &str) -> String {
    let number = arch.trim_start_matches("sm_").trim_end_matches('a');
    let sm = number.parse().expect("an arch is `sm_`, a number and an optional `a`");
    let tensor = memlab_contracts::tensor::launch_bounds().filter(|_| arch == "sm_90a");
    let thin = memlab_contracts::transpose_thin::launch_bounds(sm);
    for (entry, threads, blocks) in memlab_contracts::sgemm::launch_bounds(sm).chain(thin).chain(tensor) {
        let Some(start) = ptx.find(&format!(".entry {entry}(")) else { continue };
        let end = start + ptx[start..].find(')').expect("an entry's parameter list ends with `)`");
        ptx.insert_str(end + 1, &format!("\n.maxntid {threads}, 1, 1\n.minnctapersm {blocks}"));
    }
    ptx
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}
