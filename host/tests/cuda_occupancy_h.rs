//! The occupancy model against NVIDIA's own calculator: `cuda_occupancy.h` from the
//! `nvidia-cuda-runtime` wheel (`cargo xtask setup` installs it), compiled with the machine's
//! C++ compiler into a small shim (`tests/shim/cuda_occupancy_shim.cpp`) that answers the same
//! questions. For every compute capability in the table: resident blocks, each limit and the
//! shared memory charged per block on more than 10,000 configurations (block size, registers,
//! static and dynamic shared memory, opted in or not), and the block size
//! `cudaOccMaxPotentialOccupancyBlockSize` picks on 1,000 more. Every answer must be equal.
//!
//! The shim describes each SM with the table's figures (what `cudaGetDeviceProperties` reports
//! for such a GPU) and each kernel as the runtime's `cudaFuncAttributes` conversion does: one
//! block barrier, and `maxDynamicSharedSizeBytes` at the 48 KiB default or, opted in, at the
//! largest the kernel may set.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use memlab::model::occupancy::{ARCHS, ArchLimits, KernelResources, Mode, UNLIMITED, occupancy, suggest_block_size};

/// Configurations per compute capability.
const CONFIGS: usize = 10_500;
/// Block-size suggestions per compute capability.
const SUGGESTIONS: usize = 1_000;

/// The folder holding `cuda_occupancy.h`: `$MEMLAB_CUDA_INCLUDE`, else where `cargo xtask setup`
/// installs it.
fn include_dir() -> PathBuf {
    let dir = std::env::var_os("MEMLAB_CUDA_INCLUDE").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/cuda-runtime/nvidia/cu13/include")
    });
    assert!(
        dir.join("cuda_occupancy.h").is_file(),
        "no cuda_occupancy.h in {}: run `cargo xtask setup` (pip wheel nvidia-cuda-runtime)",
        dir.display()
    );
    dir
}

/// Compiles the shim with `$CXX` (default `c++`) and returns its path.
fn shim() -> PathBuf {
    let out = std::env::temp_dir().join(format!("memlab-cuda-occupancy-shim-{}", std::process::id()));
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/shim/cuda_occupancy_shim.cpp");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let status = Command::new(&cxx)
        .arg("-O1")
        .arg("-I")
        .arg(include_dir())
        .arg(&source)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C++ compiler `{cxx}`: {e}"));
    assert!(status.success(), "{cxx} failed on {}", source.display());
    out
}

/// Sends every question to the shim at once and returns its answers, one per question.
fn ask(shim: &PathBuf, questions: Vec<String>) -> Vec<String> {
    let mut child = Command::new(shim).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("start the shim");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for q in questions {
            writeln!(stdin, "{q}").unwrap();
        }
    });
    let answers: Vec<String> = BufReader::new(child.stdout.take().unwrap()).lines().map(Result::unwrap).collect();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success());
    answers
}

/// splitmix64: a fixed sequence of configurations on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True once in `n` draws.
    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next() % u64::from(hi - lo + 1)) as u32
    }
}

/// A kernel configuration on `arch`, drawn to cover every limit and both sides of each
/// boundary (48 KiB, the opt-in maximum, the register file's per-block check).
fn config(arch: &ArchLimits, rng: &mut Rng) -> KernelResources {
    let threads = match rng.next() % 3 {
        0 => 32 * rng.range(1, 32),
        1 => rng.range(1, 1024),
        // Small blocks, where the block cap binds.
        _ => rng.range(1, 128),
    };
    // Most kernels use few registers; a third of the draw covers up to 255.
    let regs = if rng.one_in(3) { rng.range(0, 255) } else { rng.range(0, 64) };
    let static_smem = if rng.one_in(2) { 0 } else { rng.range(0, 48 * 1024) };
    let opt_in = rng.one_in(2);
    let limit = if rng.one_in(2) { 48 * 1024 } else { arch.smem_per_block_optin };
    let dynamic = match rng.next() % 5 {
        0 => 0,
        1 => rng.range(0, 48 * 1024),
        2 => rng.range(0, arch.smem_per_block_optin + 1024),
        // Within 256 bytes of a limit, static included.
        _ => (limit.saturating_sub(static_smem) + rng.range(0, 512)).saturating_sub(256),
    };
    KernelResources::new(threads, regs).with_static_smem(static_smem).with_dynamic_smem(dynamic).with_opt_in(opt_in)
}

fn question(kind: char, arch: &ArchLimits, res: &KernelResources) -> String {
    format!(
        "{kind} {} {} {} {} {} {} {} {} {} {} {}",
        arch.major,
        arch.minor,
        arch.max_threads_per_sm,
        arch.max_smem_per_sm,
        arch.smem_per_block_optin,
        arch.reserved_smem_per_block,
        res.threads_per_block,
        res.regs_per_thread,
        res.static_smem_bytes,
        res.dynamic_smem_bytes,
        u8::from(res.smem_opt_in)
    )
}

/// memlab's answer in the shim's format.
fn model_answer(arch: &ArchLimits, res: &KernelResources) -> String {
    let o = occupancy(arch, res, Mode::Hardware).expect("a configuration the model accepts");
    let lim = |b: u32| if b == UNLIMITED { -1 } else { i64::from(b) };
    format!(
        "{} {} {} {} {} {}",
        o.active_blocks,
        lim(o.blocks_by_warps),
        lim(o.blocks_by_regs),
        lim(o.blocks_by_smem),
        lim(o.blocks_by_block_cap),
        o.smem_per_block
    )
}

#[test]
fn the_model_equals_cuda_occupancy_h_on_every_capability() {
    let shim = shim();
    let mut rng = Rng(13);
    let mut questions = Vec::new();
    let mut expected = Vec::new();
    for arch in &ARCHS {
        for _ in 0..CONFIGS {
            let res = config(arch, &mut rng);
            questions.push(question('M', arch, &res));
            expected.push(model_answer(arch, &res));
        }
        for _ in 0..SUGGESTIONS {
            let res = config(arch, &mut rng);
            questions.push(question('S', arch, &res));
            let block = suggest_block_size(arch, &res, Mode::Hardware).map_or(0, |s| s.threads);
            expected.push(block.to_string());
        }
    }
    let answers = ask(&shim, questions.clone());
    std::fs::remove_file(&shim).ok();
    assert_eq!(answers.len(), questions.len(), "the shim answered {} of {}", answers.len(), questions.len());
    let differ: Vec<String> = questions
        .iter()
        .zip(&answers)
        .zip(&expected)
        .filter(|((_, theirs), ours)| theirs != ours)
        .map(|((q, theirs), ours)| format!("{q}: cuda_occupancy.h {theirs}, memlab {ours}"))
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} answers differ, the first:\n{}",
        differ.len(),
        questions.len(),
        differ[..differ.len().min(20)].join("\n")
    );
    // The draw reaches every limit and both outcomes of a launch on every capability.
    for arch in &ARCHS {
        let cc = format!("M {} {} ", arch.major, arch.minor);
        let of_arch: Vec<&String> =
            questions.iter().zip(&answers).filter(|(q, _)| q.starts_with(&cc)).map(|(_, a)| a).collect();
        assert!(of_arch.len() >= 10_000);
        let zero = of_arch.iter().filter(|a| a.starts_with("0 ")).count();
        let limited = |i: usize| {
            of_arch.iter().filter(|a| !a.starts_with("0 ") && a.split(' ').next() == a.split(' ').nth(i)).count()
        };
        let (warps, regs, smem, cap) = (limited(1), limited(2), limited(3), limited(4));
        let cc = format!(
            "cc {}.{}: {zero} failed, limited by warps {warps}, regs {regs}, smem {smem}, cap {cap}",
            arch.major, arch.minor
        );
        assert!(zero > 100 && zero < of_arch.len() * 3 / 5, "{cc}");
        assert!([warps, regs, smem, cap].iter().all(|&n| n > 100), "{cc}");
    }
}
