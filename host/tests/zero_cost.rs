//! Zero cost, checked without a GPU: the lesson kernels rewritten on the safe device API
//! (`memlab-device`: typed global views, shared tiles, barrier phases) compile to the machine
//! code the raw-pointer kernels compiled to. For each kernel of [`KERNELS`], in the sm_70 and
//! sm_90 PTX: every memory instruction (`ld`/`st`/`atom`/`red`/`cp.async` by state space, type
//! and width, and the barriers) with its count, and `ptxas -v`'s registers, stack, spills and
//! static shared bytes, against `data/zero_cost_baseline.txt`, recorded from the raw kernels
//! before the rewrite (commit "zero-cost baseline").
//!
//! Regenerate it (only when a kernel is meant to change) with
//! `MEMLAB_WRITE_BASELINE=1 cargo test -p memlab --test all zero_cost`, and say why in the commit.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

use memlab::ptx::ptxas;
use memlab::ptx::{self, entry_body, opcodes};

/// The kernels rewritten on the device API (and the race lesson's raw kernel, which must not
/// move either): copy, the transposes, the matmuls, the probes, the any-size transpose.
const KERNELS: [&str; 16] = [
    "copy",
    "transpose_naive",
    "transpose_tiled",
    "transpose_padded",
    "transpose_vectorized",
    "matmul_naive",
    "matmul_tiled_16",
    "matmul_tiled_32",
    "matmul_tiled_32_missing_barrier",
    "strided_read",
    "misaligned_read",
    "shared_bank_probe",
    "shared_bank_probe_8",
    "shared_bank_probe_16",
    "register_pressure",
    "transpose_aligned_stores",
];

/// The cluster lesson's kernels (`clusters.rs`), in the sm_90 PTX only (PTX ISA 7.8), recorded
/// from their raw kernels before the rewrite on the distributed-shared-memory API.
const SM_90_KERNELS: [&str; 4] = ["chase_dsmem", "cluster_shared_read", "cluster_barrier", "matmul_dsmem_32"];

/// The hierarchy and L2 probes (`hierarchy.rs`, `l2.rs`), recorded from their
/// raw kernels before the rewrite (commit "zero-cost baseline: the hierarchy and L2 probes").
const PROBE_KERNELS: [&str; 14] = [
    "chase_global",
    "chase_global_cg",
    "chase_shared",
    "chase_shared_index",
    "chase_local",
    "const_chase",
    "register_chain",
    "sm_clock_under_load",
    "read_cg",
    "read_cg_unrolled",
    "local_array_constant_index",
    "local_array_runtime_index",
    "hot_stream_read",
    "chase_l2_on_sm",
];

/// The SGEMM ladder's entries (every `sgemm_*` in a compared PTX: rungs 2 to 7 in both, rung 8's
/// configurations and rung 9 from sm_80 up, so in the sm_90 PTX only), whose raw pieces moved
/// into `kernels-gpu/src/device/` wrappers: same instructions, same registers.
fn sgemm_kernels(ptx: &str) -> impl Iterator<Item = &str> {
    ptx::kernel_names(ptx).into_iter().filter(|k| k.starts_with("sgemm_"))
}

/// The PTX targets compared: the oldest the lab loads (CUDA 12's ptxas) and the H200's.
const ARCHS: [&str; 2] = ["sm_70", "sm_90"];

/// Opcode prefixes of the instructions that touch memory or order it.
const MEMORY_OPS: [&str; 7] = ["ld.", "st.", "atom.", "red.", "cp.async", "bar.", "barrier."];

fn baseline_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/zero_cost_baseline.txt")
}

/// One line per kernel and target: ptxas's figures, then each memory opcode (first token, e.g.
/// `ld.global.nc.v4.f32`) with its static count, sorted.
fn figures() -> String {
    let mut out = String::new();
    for arch in ARCHS {
        let p = ptx::ALL.iter().find(|p| p.arch == arch).expect("an embedded PTX per compared target");
        let report = ptxas::run(p.text, arch).expect("ptxas (install it with `cargo xtask setup`)");
        let sm_90_only = if arch == "sm_90" { &SM_90_KERNELS[..] } else { &[] };
        let sgemm: Vec<&str> = sgemm_kernels(p.text).collect();
        for &kernel in KERNELS.iter().chain(&PROBE_KERNELS).chain(sm_90_only).chain(&sgemm) {
            let body = entry_body(p.text, kernel).unwrap_or_else(|| panic!("{arch} PTX lacks {kernel}"));
            let k = report.iter().find(|k| k.kernel == kernel).expect("ptxas compiled every entry");
            let mut ops: BTreeMap<&str, usize> = BTreeMap::new();
            for op in opcodes(body).filter_map(|l| l.split_whitespace().next()) {
                if MEMORY_OPS.iter().any(|m| op.starts_with(m)) {
                    *ops.entry(op.trim_end_matches(';')).or_default() += 1;
                }
            }
            let ops: Vec<String> = ops.iter().map(|(op, n)| format!("{op} x{n}")).collect();
            writeln!(
                out,
                "{arch} {kernel}: regs {} stack {} spill {}/{} smem {} | {}",
                k.regs,
                k.stack_bytes,
                k.spill_stores,
                k.spill_loads,
                k.smem_bytes,
                ops.join(", ")
            )
            .unwrap();
        }
    }
    out
}

#[test]
fn rewritten_kernels_compile_to_the_raw_kernels_memory_instructions_and_registers() {
    let now = figures();
    if std::env::var_os("MEMLAB_WRITE_BASELINE").is_some() {
        std::fs::write(baseline_path(), &now).unwrap();
        return;
    }
    let baseline = std::fs::read_to_string(baseline_path()).expect("tests/data/zero_cost_baseline.txt");
    let moved: Vec<String> = baseline
        .lines()
        .zip(now.lines())
        .filter(|(was, is)| was != is)
        .map(|(was, is)| format!("  was {was}\n  now {is}"))
        .collect();
    assert_eq!(baseline.lines().count(), now.lines().count(), "kernel list changed:\n{now}");
    assert!(moved.is_empty(), "kernels moved off their baseline:\n{}", moved.join("\n"));
    // The figures are real: every kernel loads its parameters and touches memory.
    assert!(now.lines().all(|l| l.contains("ld.param")), "{now}");
}

#[test]
fn the_checked_build_traps_where_the_release_build_has_no_check() {
    let release = ptx::ALL.iter().find(|p| p.arch == ptx::CHECKED.arch).unwrap();
    // Every kernel is in the checked build, so `bench --checked` times each against itself.
    assert_eq!(ptx::kernel_names(ptx::CHECKED.text), ptx::kernel_names(release.text));
    let report = ptxas::run(ptx::CHECKED.text, ptx::CHECKED.arch).expect("ptxas assembles the checked build");
    assert_eq!(report.len(), ptx::kernel_names(release.text).len());
    // Kernels whose own guards (`row < m`, `x < cols`, ...) imply every bounds check: LLVM
    // proves the checks true and deletes them, so their checked build is their release build.
    // (Not `copy`: its thin path indexes the run at `block * 4096 + j`, which LLVM does not bound.)
    const IMPLIED: [&str; 2] = ["transpose_naive", "matmul_naive"];
    // Probes whose only views are written at constant indices or under the kernel's own guard.
    const PROBES_IMPLIED: [&str; 3] = ["register_chain", "local_array_constant_index", "local_array_runtime_index"];
    let implied = |k: &str| IMPLIED.contains(&k) || PROBES_IMPLIED.contains(&k);
    for kernel in KERNELS.iter().chain(&PROBE_KERNELS).chain(&SM_90_KERNELS).filter(|k| !k.ends_with("missing_barrier"))
    {
        let traps = |p: &str| entry_body(p, kernel).unwrap().matches("trap;").count();
        assert_eq!(traps(release.text), 0, "{kernel}: a check left in the release build");
        let checked = traps(ptx::CHECKED.text);
        assert_eq!(checked == 0, implied(kernel), "{kernel}: {checked} traps in the checked build");
    }
    // The raw kernels (the race lesson's) have no checks in either.
    assert_eq!(entry_body(ptx::CHECKED.text, "matmul_tiled_32_missing_barrier").unwrap().matches("trap;").count(), 0);
}
