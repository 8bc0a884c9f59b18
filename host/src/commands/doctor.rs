//! `memlab doctor`: what this machine has for the lab and what it lacks, with the command that
//! gets each missing piece. Runs anywhere; exits 0 when `run-demos` can run (a driver, and a
//! GPU that loads the lab's PTX), 2 otherwise.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::gpu::nvml::Nvml;
use crate::gpu::{Gpu, context, cublas, driver};
use crate::{ptx, ptx::ptxas, refuse};

/// Where `memlab` reads the CUDA binary tools from (`ptxas`, `nvdisasm`), before `PATH`.
pub const CUDA_BIN_VAR: &str = "MEMLAB_CUDA_BIN";

/// NVIDIA's PyPI wheels of the CUDA tools, for a machine without the CUDA toolkit; `pip install
/// --target DIR` puts their binaries in `DIR/nvidia/cu13/bin`.
const WHEELS: [(&str, &str); 4] = [
    ("ptxas", "nvidia-cuda-nvcc==13.*"),
    ("nvcc", "nvidia-cuda-nvcc==13.*"),
    ("nvdisasm", "nvidia-cuda-nvdisasm==13.*"),
    ("compute-sanitizer", "nvidia-cuda-sanitizer-api==13.*"),
];

/// One tool or library: what it is for, and where it was found.
struct Found {
    name: &'static str,
    purpose: &'static str,
    path: Option<PathBuf>,
}

/// `name` in each folder of `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(name)).find(|p| p.is_file())
}

/// A CUDA binary tool where the lab looks: [`ptxas::tool`] (`$MEMLAB_CUDA_BIN`, or `cargo xtask
/// setup`'s folder, else `PATH`), the one `memlab` runs; for a tool only scripts run
/// (`also_elsewhere`), then also `PATH` and the CUDA toolkit's `/usr/local/cuda/bin`.
fn cuda_tool(name: &str, also_elsewhere: bool) -> Option<PathBuf> {
    let tool = ptxas::tool(name);
    let used = if tool.is_absolute() { Some(tool).filter(|p| p.is_file()) } else { on_path(name) };
    let found = used.or_else(|| {
        also_elsewhere
            .then(|| {
                on_path(name).or_else(|| Some(Path::new("/usr/local/cuda/bin").join(name)).filter(|p| p.is_file()))
            })
            .flatten()
    })?;
    Some(found.canonicalize().unwrap_or(found))
}

/// A shared library as the dynamic loader finds it (`ldconfig`'s cache, `LD_LIBRARY_PATH`).
fn loadable(soname: &str) -> Option<PathBuf> {
    // SAFETY: loading runs the library's initialisers; NCCL's have no preconditions.
    let _lib = unsafe { libloading::Library::new(soname) }.ok()?;
    let stem = soname.split(".so").next().unwrap_or(soname);
    driver::loaded_library(&format!("{stem}.so"))
}

fn tools() -> Vec<Found> {
    let nvcc = std::env::var_os("NVCC").map(PathBuf::from).filter(|p| p.is_file()).or_else(|| cuda_tool("nvcc", true));
    vec![
        Found { name: "ptxas", purpose: "inspect, occupancy --kernel", path: cuda_tool("ptxas", false) },
        Found { name: "nvdisasm", purpose: "inspect (SASS)", path: cuda_tool("nvdisasm", false) },
        Found { name: "nvcc", purpose: "bench (builds the CUDA C++ twins)", path: nvcc },
        Found { name: "compute-sanitizer", purpose: "sanitize.sh", path: cuda_tool("compute-sanitizer", true) },
        Found { name: "ncu", purpose: "profiling (Nsight Compute)", path: cuda_tool("ncu", true) },
        Found { name: "libcublas", purpose: "the SGEMM ladder's reference", path: cublas::find() },
        Found { name: "libnccl", purpose: "collectives (all-reduce, all-gather)", path: loadable("libnccl.so.2") },
    ]
}

/// What is missing, and the commands that get it (`(what, commands)`). A bundle-only machine
/// has no source tree, so the CUDA tools come from NVIDIA's PyPI wheels into `~/memlab-cuda`,
/// which `MEMLAB_CUDA_BIN` (and `PATH`, for the sanitizer script) then names.
fn fixes(driver: bool, tools: &[Found]) -> Vec<(String, Vec<String>)> {
    let missing = |name: &str| tools.iter().any(|t| t.name == name && t.path.is_none());
    let pip = |wheels: &str| format!("python3 -m pip install --target ~/memlab-cuda \\\n        {wheels}");
    let mut out = Vec::new();
    if !driver {
        out.push((
            "the NVIDIA driver (on a machine with an NVIDIA GPU; https://www.nvidia.com/drivers)".into(),
            vec!["sudo ubuntu-drivers install    # Ubuntu; other systems: the distribution's nvidia-driver".into()],
        ));
    }
    let names: Vec<&str> = WHEELS.iter().map(|w| w.0).filter(|t| missing(t)).collect();
    if !names.is_empty() {
        // MEMLAB_CUDA_BIN moves memlab's ptxas and nvdisasm together, so it gets both.
        let for_memlab = missing("ptxas") || missing("nvdisasm");
        let mut wheels: Vec<String> = WHEELS
            .iter()
            .filter(|(tool, _)| missing(tool) || (for_memlab && matches!(*tool, "ptxas" | "nvdisasm")))
            .map(|(_, wheel)| format!("\"{wheel}\""))
            .collect();
        wheels.dedup();
        let bin = "~/memlab-cuda/nvidia/cu13/bin";
        let export = if for_memlab {
            format!("export {CUDA_BIN_VAR}={bin} PATH={bin}:$PATH")
        } else {
            format!("export PATH={bin}:$PATH")
        };
        out.push((names.join(", "), vec![pip(&wheels.join(" ")), export]));
    }
    if missing("libcublas") {
        out.push((
            "libcublas".into(),
            vec![
                pip("\"nvidia-cublas==13.*\""),
                "export LD_LIBRARY_PATH=~/memlab-cuda/nvidia/cu13/lib:$LD_LIBRARY_PATH".into(),
            ],
        ));
    }
    if missing("ncu") {
        out.push((
            "ncu (from NVIDIA's CUDA apt repository, https://developer.nvidia.com/cuda-downloads)".into(),
            vec!["sudo apt-get install cuda-nsight-compute-13-0".into()],
        ));
    }
    if missing("libnccl") {
        out.push((
            "libnccl".into(),
            vec![
                pip("\"nvidia-nccl-cu13\""),
                "export LD_LIBRARY_PATH=$(dirname $(find ~/memlab-cuda -name 'libnccl.so*')):$LD_LIBRARY_PATH".into(),
            ],
        ));
    }
    out
}

/// What the GPUs say: one block of lines per device, and whether any loads the lab's PTX.
fn gpus(nvml: Option<&Nvml>) -> (Vec<String>, Result<()>) {
    let count = match context::device_count() {
        Ok(n) => n,
        Err(e) => return (vec![format!("  none: {e}")], Err(e)),
    };
    let mut lines = Vec::new();
    let mut any = false;
    for ordinal in 0..count {
        let gpu = match Gpu::open(ordinal, None) {
            Ok(gpu) => gpu,
            Err(e) => {
                lines.push(format!("  {ordinal}: cannot run the lab: {e}"));
                continue;
            }
        };
        any = true;
        let info = &gpu.info;
        lines.push(format!(
            "  {ordinal}: {}, cc {}.{}, {} SMs, {:.1} GiB; loads the {} PTX (ISA {})",
            info.name,
            info.cc.0,
            info.cc.1,
            info.sms,
            info.total_mem_bytes as f64 / (1u64 << 30) as f64,
            gpu.ptx.arch,
            context::ptx_isa_version(gpu.ptx.text),
        ));
        let bus = crate::gpu::device::pci_bus_id(ordinal);
        let (clocks, others) = match (nvml, &bus) {
            (Some(nvml), Some(bus)) => (nvml.clocks(bus), nvml.other_processes(bus)),
            _ => (None, None),
        };
        lines.push(match clocks {
            Some(c) => format!(
                "     clocks now / max: SM {} / {} MHz, memory {} / {} MHz{}",
                c.sm,
                c.sm_max,
                c.mem,
                c.mem_max,
                if c.sm < c.sm_max { " (the SM clock rises under load)" } else { "" }
            ),
            None => "     clocks: unknown (NVML not available)".into(),
        });
        lines.push(match others {
            Some(pids) if pids.is_empty() => "     other processes on this GPU: none".into(),
            Some(pids) => format!(
                "     other processes on this GPU: {} (pids {}): they share the SMs and spoil timings",
                pids.len(),
                pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            ),
            None => "     other processes on this GPU: unknown (NVML not available)".into(),
        });
    }
    let usable = if any {
        Ok(())
    } else {
        Err(crate::error::Refusal(format!("none of the {count} GPU(s) can load the lab's PTX")).into())
    };
    (lines, usable)
}

/// Prints the report; `Ok(true)` when `run-demos` can run.
///
/// # Errors
/// A refusal (exit 2) naming why `run-demos` cannot run here.
pub fn run() -> Result<bool> {
    println!("memlab doctor\n\ndriver");
    let nvml = Nvml::open().ok();
    let usable = match driver::library() {
        Ok(_) => {
            let path =
                driver::loaded_library("libcuda.so").map_or("(path unknown)".into(), |p| p.display().to_string());
            println!("  {:<18} {path}", driver::LIBCUDA);
            let cuda = context::driver_version().map_or("unknown".into(), |(a, b)| format!("{a}.{b}"));
            let version =
                nvml.as_ref().and_then(Nvml::driver_version).map_or(String::new(), |v| format!(", driver {v}"));
            println!("  {:<18} {cuda}{version}", "CUDA version");
            println!("\nGPUs (PTX embedded: {})", ptx::ALL.iter().map(|p| p.arch).collect::<Vec<_>>().join(", "));
            let (lines, usable) = gpus(nvml.as_ref());
            for line in lines {
                println!("{line}");
            }
            usable
        }
        Err(why) => {
            // The loader's reason, without the library's name it starts with.
            let why = why.split_once(": ").filter(|(lib, _)| lib.contains("libcuda")).map_or(why, |(_, r)| r);
            println!("  {:<18} not found: {why}", driver::LIBCUDA);
            Err(crate::error::Refusal(format!("no NVIDIA driver ({} not found)", driver::LIBCUDA)).into())
        }
    };
    println!(
        "\ntools and libraries ({CUDA_BIN_VAR} = {})",
        std::env::var(CUDA_BIN_VAR).unwrap_or_else(|_| "unset".into())
    );
    let tools = tools();
    for t in &tools {
        let at = t.path.as_ref().map_or("not found".into(), |p| p.display().to_string());
        let line = format!("  {:<18} {at}  [{}]", t.name, t.purpose);
        // A long path goes on a line of its own, so the report fits 100 columns.
        if line.chars().count() <= 100 {
            println!("{line}");
        } else {
            println!("  {:<18} [{}]\n    {at}", t.name, t.purpose);
        }
    }
    let fixes = fixes(driver::library().is_ok(), &tools);
    if !fixes.is_empty() {
        println!("\nmissing, and how to get it");
        for (what, commands) in &fixes {
            println!("  {what}:");
            for c in commands {
                println!("    {c}");
            }
        }
    }
    match usable {
        Ok(()) => {
            println!("\nrun-demos can run here.");
            Ok(true)
        }
        Err(e) => refuse!("run-demos cannot run here: {e}"),
    }
}
