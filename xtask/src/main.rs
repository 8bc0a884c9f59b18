//! `cargo xtask`: the project's tasks, in Rust instead of shell scripts.
//!
//! - `setup`: what building and testing need beyond cargo: a `libcuda.so` to link against
//!   (cust's build requires one; the machine's driver library, or Debian's `libcuda1` where
//!   there is none; the binary never needs it at run time, see `host/src/gpu/driver.rs`) and
//!   NVIDIA's `ptxas`/`nvdisasm`/`cuobjdump`, CUDA 12's `ptxas` (for sm_70) and the runtime
//!   headers (`cuda_occupancy.h`) from PyPI for the CPU tests; it prints what it found and
//!   where. The kernels' nightly toolchain is installed by `host/build.rs` itself, the host
//!   toolchain by `./x`.
//! - `test`: setup, then formatting, clippy, every test of the workspace and `book --check`.
//! - `book [--check]`: generate, check and build the memlab book (`book/mod.rs`).
//! - `run-demos [ARGS]` and every other `memlab` command: setup, build the `memlab` binary, run
//!   it.
//! - `bench [ARGS]`: build the CUDA C++ twins (`bench/twins.cu`) with the machine's nvcc for its
//!   GPU, build the binary, run `memlab bench` (JSON in `target/bench.json`).
//! - `bundle DIR`: build the binary and copy it to `DIR`, to run on a GPU machine without cargo.
//! - `sanitize-script DIR`: write `DIR/sanitize.sh`, the compute-sanitizer matrix (see
//!   `sanitize.rs`) to run next to a bundled `memlab` on a GPU machine.

mod book;
mod sanitize;

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

/// PyPI packages of NVIDIA's CUDA compiler tools (`ptxas`, `nvdisasm`, `cuobjdump`).
const CUDA_TOOL_WHEELS: [&str; 3] =
    ["nvidia-cuda-nvcc==13.*", "nvidia-cuda-nvdisasm==13.*", "nvidia-cuda-cuobjdump==13.*"];

/// CUDA 12's compiler wheel: its `ptxas` assembles for sm_70 (Volta), which CUDA 13 dropped,
/// for the test of the lab's sm_70 baseline PTX.
const CUDA12_PTXAS_WHEEL: &str = "nvidia-cuda-nvcc-cu12==12.9.*";

/// PyPI package of NVIDIA's CUDA runtime headers: its `include/cuda_occupancy.h` is the
/// occupancy calculator the model is tested against (`host/tests/cuda_occupancy_h.rs`).
const CUDA_RUNTIME_WHEEL: &str = "nvidia-cuda-runtime==13.*";

/// `./x --help`. The memlab commands are memlab's own to list (`./x help`).
const USAGE: &str = "\
usage: ./x COMMAND [ARGS]   (or cargo xtask COMMAND [ARGS])
  test                  fmt, clippy, the tests and the book check: what CI runs, no GPU needed
  setup                 fetch the CUDA tools the build and tests use (ptxas, headers, libcuda)
  book [--check]        regenerate docs/book/src/generated, build the book into target/book
                        (--check: compare instead of writing, and load each chapter in Chromium)
  bench [ARGS]          memlab bench with the CUDA C++ twins, built by nvcc (GPU machine)
  bundle DIR            DIR/memlab, self-contained (PTX embedded), for a GPU machine without cargo
  sanitize-script DIR   DIR/sanitize.sh: the compute-sanitizer matrix for a bundle
  MEMLAB-COMMAND [ARGS] build memlab (target/release/memlab) and run it: run-demos, occupancy,
                        inspect, ... (`./x help` lists them)
";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("setup") => setup().map(|tools| tools.print()),
        Some("test") => test(),
        Some("bundle") => dir_arg(&args).and_then(bundle),
        Some("sanitize-script") => dir_arg(&args).and_then(sanitize::write),
        Some("bench") => bench(&args[1..]),
        Some("book") => book::run(&args[1..]),
        Some(command) if !command.starts_with('-') => memlab(&args),
        Some("-h" | "--help") => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The DIR of `bundle DIR` and `sanitize-script DIR`: refused when missing or an option, so
/// that `./x bundle --help` prints its usage instead of making a folder named `--help`.
fn dir_arg(args: &[String]) -> Result<PathBuf> {
    match args.get(1) {
        Some(dir) if !dir.starts_with('-') => Ok(PathBuf::from(dir)),
        _ => bail!("usage: ./x {} DIR", args[0]),
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Paths `setup` prepared.
pub struct Tools {
    /// Folder holding `lib64/libcuda.so` (cust's `CUDA_LIBRARY_PATH`).
    cuda_link: PathBuf,
    /// Folder holding `ptxas`, `nvdisasm`, `cuobjdump`.
    cuda_bin: PathBuf,
    /// Folder holding `cuda_occupancy.h`.
    cuda_include: PathBuf,
    /// Folder holding CUDA 12's `ptxas` (for sm_70).
    cuda12_bin: PathBuf,
}

fn setup() -> Result<Tools> {
    let target = root().join("target");
    let cuda_link = target.join("cuda-link");
    let lib64 = cuda_link.join("lib64");
    if !lib64.join("libcuda.so").exists() {
        fs::create_dir_all(&lib64)?;
        match system_libcuda() {
            Some(lib) => {
                eprintln!("xtask: linking against the driver's {}", lib.display());
                std::os::unix::fs::symlink(&lib, lib64.join("libcuda.so"))?;
            }
            None => {
                eprintln!("xtask: no libcuda on this machine; fetching Debian's libcuda1 to link against");
                fetch_debian_libcuda(&target.join("apt-libcuda"), &lib64)?;
            }
        }
    }
    let tools = target.join("cuda-tools");
    let cuda_bin = tools.join("nvidia/cu13/bin");
    ensure_wheels(&tools, &cuda_bin.join("ptxas"), "NVIDIA's ptxas, nvdisasm and cuobjdump", &CUDA_TOOL_WHEELS)?;
    let runtime = target.join("cuda-runtime");
    let cuda_include = runtime.join("nvidia/cu13/include");
    ensure_wheels(
        &runtime,
        &cuda_include.join("cuda_occupancy.h"),
        "NVIDIA's CUDA runtime headers",
        &[CUDA_RUNTIME_WHEEL],
    )?;
    let tools12 = target.join("cuda-tools-12");
    let cuda12_bin = tools12.join("nvidia/cuda_nvcc/bin");
    ensure_wheels(&tools12, &cuda12_bin.join("ptxas"), "CUDA 12's ptxas (for sm_70)", &[CUDA12_PTXAS_WHEEL])?;
    Ok(Tools { cuda_link, cuda_bin, cuda_include, cuda12_bin })
}

impl Tools {
    /// Where each tool is (`setup` and `test` say it; the commands that only use them do not).
    fn print(&self) {
        let libcuda = self.cuda_link.join("lib64/libcuda.so");
        let resolved = fs::canonicalize(&libcuda).unwrap_or_else(|_| libcuda.clone());
        eprintln!("xtask: libcuda.so to link against: {} -> {}", libcuda.display(), resolved.display());
        eprintln!("xtask: ptxas, nvdisasm, cuobjdump: {}", self.cuda_bin.display());
        eprintln!("xtask: CUDA 12 ptxas (sm_70): {}", self.cuda12_bin.display());
        eprintln!("xtask: cuda_occupancy.h: {}", self.cuda_include.display());
    }
}

/// Installs `wheels` from PyPI into `dir` unless `marker`, a file one of them provides, is
/// there already.
fn ensure_wheels(dir: &Path, marker: &Path, what: &str, wheels: &[&str]) -> Result<()> {
    if !marker.exists() {
        eprintln!("xtask: installing {what} from PyPI into {}", dir.display());
        run(pip_install(dir).args(wheels))
            .with_context(|| format!("pip install of {what} (needs python3 with pip)"))?;
    }
    Ok(())
}

/// `pip install` of wheels (no dependencies) into `dir`.
fn pip_install(dir: &Path) -> Command {
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--target"]).arg(dir);
    cmd
}

/// The driver's `libcuda.so.1` as `ldconfig` knows it.
fn system_libcuda() -> Option<PathBuf> {
    let out = Command::new("ldconfig").arg("-p").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("libcuda.so.1") && l.contains("x86-64"))
        .filter_map(|l| l.split("=>").nth(1))
        .map(|p| PathBuf::from(p.trim()))
        .find(|p| p.exists())
}

/// Downloads Debian's non-free `libcuda1` with a private apt configuration (the machine's
/// sources stay untouched) and unpacks its `libcuda.so*` into `lib64`.
fn fetch_debian_libcuda(work: &Path, lib64: &Path) -> Result<()> {
    let lists = work.join("lists");
    fs::create_dir_all(lists.join("partial"))?;
    let codename = fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| t.lines().find_map(|l| l.strip_prefix("VERSION_CODENAME=").map(str::to_string)))
        .unwrap_or_else(|| "bookworm".into());
    let sources = work.join("sources.list");
    fs::write(&sources, format!("deb http://deb.debian.org/debian {codename} main non-free\n"))?;
    let opts = [
        format!("-oDir::Etc::SourceList={}", sources.display()),
        "-oDir::Etc::SourceParts=/dev/null".into(),
        format!("-oDir::State::Lists={}", lists.display()),
        "-oAPT::Sandbox::User=root".into(),
    ];
    run(Command::new("apt-get").args(&opts).args(["-qq", "update"])).context("apt-get update (private lists)")?;
    run(Command::new("apt-get").args(&opts).args(["-qq", "download", "libcuda1"]).current_dir(work))
        .context("apt-get download libcuda1")?;
    let deb = fs::read_dir(work)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .context("no libcuda1 .deb was downloaded")?;
    let unpacked = work.join("root");
    run(Command::new("dpkg").arg("-x").arg(&deb).arg(&unpacked))?;
    let lib_dir = unpacked.join("usr/lib/x86_64-linux-gnu/nvidia/current");
    for entry in fs::read_dir(&lib_dir).with_context(|| format!("{} missing in the package", lib_dir.display()))? {
        let path = entry?.path();
        if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("libcuda.so")) {
            // Copy links as links, so libcuda.so -> libcuda.so.1 -> libcuda.so.<version> stays.
            run(Command::new("cp").arg("-a").arg(&path).arg(lib64))?;
        }
    }
    Ok(())
}

fn cargo() -> Command {
    let mut cmd = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

fn test() -> Result<()> {
    let tools = setup()?;
    tools.print();
    run(cargo().args(["fmt", "--all", "--", "--check"])).context("cargo fmt --check: run `cargo fmt --all`")?;
    // kernels-gpu is outside the workspace (nvptx only); rustfmt follows its modules from lib.rs.
    run(Command::new("rustfmt").current_dir(root().join("kernels-gpu")).args([
        "--check",
        "--edition",
        "2024",
        "src/lib.rs",
    ]))
    .context("rustfmt --check of kernels-gpu")?;
    run(cargo()
        .args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])
        .env("CUDA_LIBRARY_PATH", &tools.cuda_link))?;
    run(cargo()
        .args(["test", "--workspace"])
        .env("CUDA_LIBRARY_PATH", &tools.cuda_link)
        .env("MEMLAB_CUDA_BIN", &tools.cuda_bin)
        .env("MEMLAB_CUDA_INCLUDE", &tools.cuda_include)
        .env("MEMLAB_CUDA12_BIN", &tools.cuda12_bin))?;
    // The binary the tests ran (`CARGO_BIN_EXE_memlab`), built with the test build's features.
    book::build(true, &tools, &root().join("target/debug/memlab"))
}

fn build_release(tools: &Tools) -> Result<PathBuf> {
    run(cargo().args(["build", "--release", "--package", "memlab"]).env("CUDA_LIBRARY_PATH", &tools.cuda_link))?;
    Ok(root().join("target/release/memlab"))
}

/// Builds the `memlab` binary and runs it with `args` (`run-demos ...`, `occupancy ...`), exiting
/// with its exit code. The binary is run directly, not through `cargo run`, so it sees the
/// machine as the bundled binary would: it loads the driver's library only for GPU commands,
/// and the library `setup` fetched to link against is never loaded.
fn memlab(args: &[String]) -> Result<()> {
    let tools = setup()?;
    let bin = build_release(&tools)?;
    let status = Command::new(&bin).args(args).status()?;
    std::process::exit(status.code().unwrap_or(2));
}

/// nvcc: `$NVCC`, else the `PATH`'s, else the CUDA toolkit's default location.
fn nvcc() -> Option<PathBuf> {
    let on_path = |name: &str| env::split_paths(&env::var_os("PATH")?).map(|d| d.join(name)).find(|p| p.is_file());
    env::var_os("NVCC")
        .map(PathBuf::from)
        .or_else(|| on_path("nvcc"))
        .or_else(|| Some(PathBuf::from("/usr/local/cuda/bin/nvcc")).filter(|p| p.is_file()))
}

fn bench(args: &[String]) -> Result<()> {
    let tools = setup()?;
    let nvcc = nvcc().context(
        "bench needs nvcc (CUDA toolkit) to build the CUDA C++ twins: none in $NVCC, on PATH or at /usr/local/cuda/bin",
    )?;
    if system_libcuda().is_none() {
        bail!("no NVIDIA driver library (libcuda.so.1) on this machine: bench needs an NVIDIA GPU and its driver");
    }
    let cubin = root().join("bench/build/twins.cubin");
    fs::create_dir_all(cubin.parent().unwrap())?;
    // SASS for the GPU of this machine, as the Rust PTX is JIT-compiled for it: -arch=native,
    // or on cc 9.0 the arch-specific sm_90a, which the tensor ladder's twins (wgmma) need.
    run(Command::new(&nvcc).args(["-O3", twins_arch(), "-cubin", "-o"]).arg(&cubin).arg(root().join("bench/twins.cu")))
        .context("nvcc of bench/twins.cu")?;
    let bin = build_release(&tools)?;
    let json = root().join("target/bench.json");
    let status =
        Command::new(&bin).arg("bench").arg("--twins").arg(&cubin).arg("--json").arg(&json).args(args).status()?;
    std::process::exit(status.code().unwrap_or(2));
}

/// nvcc's target for the twins: sm_90a when `nvidia-smi` reports GPU 0 as cc 9.0, else native.
fn twins_arch() -> &'static str {
    let cap = Command::new("nvidia-smi").args(["--query-gpu=compute_cap", "--format=csv,noheader", "-i", "0"]).output();
    match cap {
        Ok(out) if String::from_utf8_lossy(&out.stdout).trim() == "9.0" => "-gencode=arch=compute_90a,code=sm_90a",
        _ => "-arch=native",
    }
}

fn bundle(dir: PathBuf) -> Result<()> {
    let tools = setup()?;
    let bin = build_release(&tools)?;
    fs::create_dir_all(&dir)?;
    fs::copy(&bin, dir.join("memlab"))?;
    eprintln!(
        "xtask: {} is self-contained (PTX embedded); it needs only the NVIDIA driver",
        dir.join("memlab").display()
    );
    Ok(())
}

fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    if !status.success() {
        bail!("{:?} failed with {status}", cmd.get_program());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dir_argument_that_is_missing_or_an_option_is_refused_with_the_usage() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        assert_eq!(dir_arg(&args(&["bundle", "out"])).unwrap(), PathBuf::from("out"));
        for bad in [&["bundle", "--help"][..], &["bundle"], &["sanitize-script", "-h"]] {
            let err = dir_arg(&args(bad)).unwrap_err().to_string();
            assert_eq!(err, format!("usage: ./x {} DIR", bad[0]));
        }
    }
}
