//! `ptxas -v`: what NVIDIA's assembler says about each kernel (registers, spills, stack), read
//! on a machine with no GPU. ptxas comes from PyPI's `nvidia-cuda-nvcc` wheel (`cargo xtask
//! setup` installs it); its register counts match the driver's JIT on the H200 (measured).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, bail};

use crate::ptx::memo::Memo;

/// ptxas's figures for one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxasKernel {
    /// Entry point.
    pub kernel: String,
    /// Registers per thread.
    pub regs: u32,
    /// Stack frame per thread, bytes (local memory).
    pub stack_bytes: u32,
    /// Spill stores, bytes.
    pub spill_stores: u32,
    /// Spill loads, bytes.
    pub spill_loads: u32,
    /// Static shared memory, bytes.
    pub smem_bytes: u32,
}

/// How to get a missing CUDA tool, for a user of the source tree or of the bundled binary alone.
pub const MISSING_TOOL: &str =
    "`memlab doctor` gives the command that installs it; in the source tree, `cargo xtask setup`";

/// Where the CUDA binary tools are: `$MEMLAB_CUDA_BIN` (a folder), else what `cargo xtask
/// setup` installed under `target/cuda-tools` (in the source tree this binary was built in),
/// else the `PATH`.
pub fn tool(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("MEMLAB_CUDA_BIN") {
        return Path::new(&dir).join(name);
    }
    let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/cuda-tools/nvidia/cu13/bin").join(name);
    if setup.exists() { setup } else { PathBuf::from(name) }
}

/// SM targets CUDA 13's ptxas no longer accepts (Volta and Xavier: CUDA 13.0 dropped them from
/// offline compilation; the driver still JIT-compiles PTX for them): a CUDA 12 ptxas assembles
/// these.
pub const CUDA12_ONLY: [&str; 2] = ["sm_70", "sm_72"];

/// The ptxas that assembles for `arch`: [`tool`]'s, or for a [`CUDA12_ONLY`] target the CUDA 12
/// one: `$MEMLAB_CUDA12_BIN`, else what `cargo xtask setup` installed under
/// `target/cuda-tools-12`, else the `PATH`'s.
pub fn ptxas_for(arch: &str) -> PathBuf {
    if !CUDA12_ONLY.contains(&arch) {
        return tool("ptxas");
    }
    if let Some(dir) = std::env::var_os("MEMLAB_CUDA12_BIN") {
        return Path::new(&dir).join("ptxas");
    }
    let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/cuda-tools-12/nvidia/cuda_nvcc/bin/ptxas");
    if setup.exists() { setup } else { PathBuf::from("ptxas") }
}

/// Assembles `ptx` for `arch` (e.g. `"sm_90"`) with `ptxas -v` and returns each kernel's figures.
///
/// # Errors
/// ptxas missing ([`MISSING_TOOL`]) or rejecting the PTX.
pub fn run(ptx: &str, arch: &str) -> Result<Vec<PtxasKernel>> {
    run_with(ptx, arch, &[])
}

/// ptxas's figures for kernel `entry` of `ptx`, assembled alone ([`crate::ptx::only_entry`]:
/// the figures it has in the whole module, `host/tests/single_entry.rs`), in a fraction of the
/// whole module's time; `None` when `ptx` has no kernel `entry` or ptxas reports nothing for it.
///
/// # Errors
/// As for [`run`].
pub fn run_entry(ptx: &str, arch: &str, entry: &str) -> Result<Option<PtxasKernel>> {
    let Some(alone) = crate::ptx::only_entry(ptx, entry) else { return Ok(None) };
    Ok(run(&alone, arch)?.into_iter().find(|k| k.kernel == entry))
}

/// [`run`] with more ptxas options, e.g. `-maxrregcount=64` (the register cap the driver's JIT
/// applies for `CU_JIT_MAX_REGISTERS`).
///
/// # Errors
/// As for [`run`].
pub fn run_with(ptx: &str, arch: &str, options: &[&str]) -> Result<Vec<PtxasKernel>> {
    Ok(parse(&assembled(ptx, arch, options)?.log))
}

/// Assembles `ptx` for `arch` with `ptxas -v` and the `extra` flags (e.g. `-lineinfo`), then
/// calls `f` with ptxas's log and the cubin's path; the scratch folder is removed afterwards.
///
/// # Errors
/// ptxas missing or rejecting the PTX, or the error of `f`.
pub fn with_cubin<T>(ptx: &str, arch: &str, extra: &[&str], f: impl FnOnce(&str, &Path) -> Result<T>) -> Result<T> {
    let assembled = assembled(ptx, arch, extra)?;
    let dir = scratch_dir()?;
    let cubin = dir.join("out.cubin");
    let result = std::fs::write(&cubin, &assembled.cubin).map_err(Into::into).and_then(|()| f(&assembled.log, &cubin));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// What one ptxas run gave: its log (`-v`'s figures) and the cubin.
struct Assembly {
    log: String,
    cubin: Vec<u8>,
}

/// [`assemble`], once per process for each ptxas, target, flags and PTX: the same module is
/// asked for by many commands and tests (a whole sm_90 module takes ptxas ~4 s), and ptxas is
/// deterministic.
fn assembled(ptx: &str, arch: &str, extra: &[&str]) -> Result<Arc<Assembly>> {
    static DONE: Memo<Assembly> = Memo::new();
    DONE.get((ptxas_for(arch), arch, extra, ptx), || assemble(ptx, arch, extra))
}

/// A new scratch folder: tests run ptxas from several threads of one process.
fn scratch_dir() -> Result<PathBuf> {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("memlab-ptxas-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Runs `ptxas -v -arch=<arch> <extra> ptx`.
fn assemble(ptx: &str, arch: &str, extra: &[&str]) -> Result<Assembly> {
    let dir = scratch_dir()?;
    let input = dir.join(format!("kernels_{arch}.ptx"));
    let cubin = dir.join("out.cubin");
    let ptxas = ptxas_for(arch);
    let result = std::fs::write(&input, ptx).map_err(anyhow::Error::from).and_then(|()| {
        let out = Command::new(&ptxas)
            .arg(format!("-arch={arch}"))
            .arg("-v")
            .args(extra)
            .arg(&input)
            .arg("-o")
            .arg(&cubin)
            .output()
            .with_context(|| format!("cannot run {} ({})", ptxas.display(), MISSING_TOOL))?;
        let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            bail!("ptxas -arch={arch} failed: {}", log.lines().find(|l| l.contains("error")).unwrap_or(&log));
        }
        Ok(Assembly { log, cubin: std::fs::read(&cubin)? })
    });
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Parses `ptxas -v` output into one record per compiled entry function.
pub fn parse(log: &str) -> Vec<PtxasKernel> {
    let mut kernels: Vec<PtxasKernel> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let kernel = rest.split('\'').next().unwrap_or_default().to_string();
            kernels.push(PtxasKernel {
                kernel,
                regs: 0,
                stack_bytes: 0,
                spill_stores: 0,
                spill_loads: 0,
                smem_bytes: 0,
            });
            continue;
        }
        let Some(k) = kernels.last_mut() else { continue };
        if line.contains("bytes stack frame") {
            k.stack_bytes = number_before(line, "bytes stack frame");
            k.spill_stores = number_before(line, "bytes spill stores");
            k.spill_loads = number_before(line, "bytes spill loads");
        } else if line.contains("Used ") && line.contains("registers") {
            k.regs = number_before(line, "registers");
            k.smem_bytes = number_before(line, "bytes smem");
        }
    }
    kernels
}

/// The number just before `unit` in `line` (0 when absent).
fn number_before(line: &str, unit: &str) -> u32 {
    line.split(unit)
        .next()
        .filter(|head| head.len() < line.len())
        .and_then(|head| head.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ptxas_verbose_output() {
        let log = "ptxas info    : 0 bytes gmem\n\
            ptxas info    : Compiling entry function 'copy' for 'sm_90'\n\
            ptxas info    : Function properties for copy\n    \
            8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
            ptxas info    : Used 16 registers, used 0 barriers, 4224 bytes smem\n\
            ptxas info    : Compiling entry function 'b' for 'sm_90'\n\
            ptxas info    : Used 255 registers, used 1 barriers\n";
        let k = parse(log);
        assert_eq!(
            k[0],
            PtxasKernel {
                kernel: "copy".into(),
                regs: 16,
                stack_bytes: 8,
                spill_stores: 4,
                spill_loads: 12,
                smem_bytes: 4224
            }
        );
        assert_eq!((k[1].kernel.as_str(), k[1].regs, k[1].smem_bytes), ("b", 255, 0));
    }
}
