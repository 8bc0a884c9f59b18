//! What the embedded PTX must contain, checked without a GPU: every kernel present and
//! self-contained, shared memory where a lesson needs it and nowhere else, probes that really
//! issue the loads they time, and ptxas reporting no spills.

use memlab::ptx::ptxas;
use memlab::ptx::{self, count_ops, entry_body};

/// The demo kernels of the main lessons (other lessons add their own and test them).
const DEMO_KERNELS: [&str; 11] = [
    "matmul_naive",
    "matmul_tiled_16",
    "matmul_tiled_32",
    "copy",
    "transpose_naive",
    "transpose_tiled",
    "transpose_padded",
    "strided_read",
    "shared_bank_probe",
    "shared_bank_probe_8",
    "shared_bank_probe_16",
];

/// Kernels that stage data in shared memory.
const SHARED: [&str; 7] = [
    "matmul_tiled_16",
    "matmul_tiled_32",
    "transpose_tiled",
    "transpose_padded",
    "shared_bank_probe",
    "shared_bank_probe_8",
    "shared_bank_probe_16",
];
/// Kernels that must touch global memory only.
const GLOBAL_ONLY: [&str; 4] = ["matmul_naive", "copy", "transpose_naive", "strided_read"];

fn body<'a>(p: &'a ptx::Ptx, kernel: &str) -> &'a str {
    entry_body(p.text, kernel).unwrap_or_else(|| panic!("{} PTX lacks kernel {kernel}", p.arch))
}

#[test]
fn every_kernel_is_in_every_ptx_and_nothing_is_left_undefined() {
    for p in &ptx::ALL {
        let names = ptx::kernel_names(p.text);
        for kernel in DEMO_KERNELS {
            assert!(names.contains(&kernel), "{} lacks {kernel}", p.arch);
        }
        assert!(!p.text.contains(".extern .func"), "{} PTX calls an undefined function", p.arch);
        assert_eq!(p.text.matches(".entry ").count(), names.len(), "{}: an entry that is not visible", p.arch);
    }
}

#[test]
fn the_baseline_ptx_targets_volta_and_ptxas_assembles_it_for_sm_70() {
    // cc 7.0 (V100) is the oldest GPU the lab loads: its PTX must assemble for sm_70.
    let baseline = &ptx::ALL[0];
    assert_eq!((baseline.arch, baseline.cc), ("sm_70", (7, 0)));
    for p in [baseline, &ptx::COUNTING] {
        assert!(p.text.lines().any(|l| l.trim() == ".target sm_70"), "{}", p.arch);
        let report = ptxas::run(p.text, "sm_70").expect("ptxas -arch=sm_70 (install it with `cargo xtask setup`)");
        assert_eq!(report.len(), ptx::kernel_names(p.text).len());
    }
    // cp.async is sm_80 and up: rung 7 is not in the Volta PTX.
    assert!(!baseline.text.contains("cp.async"));
    assert!(!ptx::kernel_names(baseline.text).contains(&"sgemm_7_async_copy"));
}

#[test]
fn shared_memory_kernels_use_the_shared_state_space() {
    for p in &ptx::ALL {
        for kernel in SHARED {
            let b = body(p, kernel);
            assert!(count_ops(b, "ld.shared") > 0, "{}/{kernel}: no ld.shared", p.arch);
            assert!(count_ops(b, "st.shared") > 0, "{}/{kernel}: no st.shared", p.arch);
            assert!(count_ops(b, "bar.sync") + count_ops(b, "barrier.sync") > 0, "{}/{kernel}: no barrier", p.arch);
            // A generic pointer into shared memory would hide the state space from the lesson;
            // the only ones allowed are the transposes', which go straight back to it for the
            // inline `ld.shared` of `load_shared_in_order`.
            let generic = b.matches("cvta.shared").count();
            let allowed = if kernel.starts_with("transpose_") { b.matches("cvta.to.shared").count() } else { 0 };
            assert!(generic <= allowed, "{}/{kernel}: generic shared pointer", p.arch);
        }
        for kernel in GLOBAL_ONLY {
            let b = body(p, kernel);
            assert!(!b.contains(".shared"), "{}/{kernel} touches shared memory", p.arch);
            assert!(count_ops(b, "ld.global") > 0, "{}/{kernel}: no global load", p.arch);
            assert!(!b.contains("ld.local") && !b.contains("st.local"), "{}/{kernel}: local memory", p.arch);
        }
    }
}

#[test]
fn copy_and_naive_transpose_issue_all_loads_before_any_store() {
    for p in &ptx::ALL {
        let b = body(p, "transpose_naive");
        assert!(b.rfind("ld.global").unwrap() < b.find("st.global").unwrap(), "{}: naive: a load waits", p.arch);
        assert_eq!(count_ops(b, "ld.global"), 4, "{}/transpose_naive", p.arch);
        // copy's two paths lie interleaved in the PTX: its tile's 4 scalars, and on a thin
        // matrix its run's 4 float4s (each with 4 scalars for the run's tail); the run's float4
        // loads all come before its first float4 store.
        let b = body(p, "copy");
        assert!(b.rfind("ld.global.v4").unwrap() < b.find("st.global.v4").unwrap(), "{}: copy: a load waits", p.arch);
        assert_eq!((count_ops(b, "ld.global"), count_ops(b, "ld.global.v4")), (4 + 4 * 4, 4), "{}/copy", p.arch);
    }
}

#[test]
fn strided_probe_issues_eight_independent_global_loads() {
    for p in &ptx::ALL {
        let b = body(p, "strided_read");
        assert_eq!(count_ops(b, "ld.global"), memlab::reference::STRIDED_READS_PER_THREAD, "{}", p.arch);
        assert_eq!(count_ops(b, "st.global"), 1, "{}", p.arch);
    }
}

#[test]
fn bank_probe_loop_loads_one_bank_pattern_with_immediate_offsets() {
    for p in &ptx::ALL {
        let b = body(p, "shared_bank_probe");
        // The unrolled step: 8 loads at +0, +128, ..., +896 bytes (32 words apart) from one base,
        // so every load of a lane stays in the bank of word `lane * stride`.
        for u in 1..memlab::reference::BANK_PROBE_UNROLL {
            assert!(b.contains(&format!("+{}]", u * 128)), "{}: no load at +{} bytes", p.arch, u * 128);
        }
        // The host's checksum uses the same word values.
        let k = memlab::reference::bank_probe_word(1);
        assert!(b.contains(&k.to_string()) || b.contains(&(k as i32).to_string()), "{}: word hash differs", p.arch);
    }
}

#[test]
fn wide_bank_probes_load_8_and_16_bytes_a_lane_from_one_base() {
    for p in &ptx::ALL {
        for (kernel, op) in [("shared_bank_probe_8", "ld.shared.b64"), ("shared_bank_probe_16", "ld.shared.v4.b32")] {
            let b = body(p, kernel);
            // One 8- or 16-byte load per unrolled step slot, each one 128-byte bank row apart.
            assert_eq!(count_ops(b, op), memlab::reference::BANK_PROBE_UNROLL, "{}: {kernel}", p.arch);
            for u in 1..memlab::reference::BANK_PROBE_UNROLL {
                assert!(b.contains(&format!("+{}]", u * 128)), "{}: {kernel} no load at +{}", p.arch, u * 128);
            }
            assert_eq!(count_ops(b, "ld.shared.b32"), 0, "{}: {kernel} splits its loads", p.arch);
        }
    }
}

#[test]
fn register_pressure_keeps_its_accumulators_in_registers_without_a_cap() {
    for p in &ptx::ALL {
        let report = ptxas::run(p.text, p.arch).expect("ptxas (install it with `cargo xtask setup`)");
        let k = report.iter().find(|k| k.kernel == "register_pressure").expect("register_pressure compiled");
        // LLVM leaves the array in PTX local memory; ptxas promotes all of it to registers.
        assert!(k.regs > 128, "{}: {k:?}", p.arch);
        assert_eq!(k.stack_bytes, 0, "{}: {k:?}", p.arch);
    }
}

#[test]
fn ptxas_reports_no_spills_and_no_stack_for_any_kernel() {
    for p in &ptx::ALL {
        let report = ptxas::run(p.text, p.arch).expect("ptxas (install it with `cargo xtask setup`)");
        assert_eq!(report.len(), ptx::kernel_names(p.text).len(), "{}: {report:?}", p.arch);
        for k in &report {
            // The hierarchy lesson's local-memory kernels keep an array on the stack on purpose.
            let stack = if ["chase_local", "local_array_runtime_index"].contains(&k.kernel.as_str()) {
                0
            } else {
                k.stack_bytes
            };
            assert_eq!((k.spill_stores, k.spill_loads, stack), (0, 0, 0), "{}: {k:?}", p.arch);
            // register_pressure keeps 128 floats live on purpose, the SGEMM rungs 8 or 64
            // accumulators (tests/sgemm_ptx.rs); the rest are small kernels.
            // transpose_thin's launch bounds (sm_80 and up) cap it at 6 blocks of 256 threads per
            // SM; the sm_70 build holds its 16 strided floats and counters in up to 80.
            let thin_cap = 65536 / (memlab_contracts::transpose_thin::BLOCKS_PER_SM * 256) / 8 * 8;
            let most = match k.kernel.as_str() {
                "register_pressure" => 255,
                "transpose_thin" if p.arch == "sm_70" => 80,
                "transpose_thin" => thin_cap,
                kernel if kernel.starts_with("sgemm_") => 255,
                _ => 64,
            };
            assert!(k.regs > 0 && k.regs <= most, "{}: {k:?}", p.arch);
            // Shared memory is dynamic only: the launch, not the kernel, sizes it.
            assert_eq!(k.smem_bytes, 0, "{}: {k:?}", p.arch);
        }
    }
}

#[test]
fn the_counting_build_counts_every_matmul_global_load_and_the_timed_build_does_not() {
    for kernel in ["matmul_naive", "matmul_tiled_16", "matmul_tiled_32"] {
        let counting = body(&ptx::COUNTING, kernel);
        let loads = count_ops(counting, "ld.global");
        assert!(loads > 0, "{kernel}");
        // One atomic increment of GLOBAL_LOADS per global load.
        assert_eq!(counting.matches("atom.global.add.u64").count(), loads, "{kernel}");
        for p in &ptx::ALL {
            assert!(!body(p, kernel).contains("atom."), "{}/{kernel}: counting left in the timed build", p.arch);
        }
    }
    for p in &ptx::ALL {
        assert!(!p.text.contains("GLOBAL_LOADS"), "{}", p.arch);
    }
}

#[test]
fn tiled_transposes_pair_each_tile_read_with_its_store_in_sass() {
    // After the barrier, each of a thread's 4 (conflicted) tile reads is followed by the global
    // store of its value before the next read. The PTX always has them in that order; ptxas
    // used to predicate the guarded rows and issue three of the reads back to back.
    for p in &ptx::ALL {
        // CUDA 13's nvdisasm reads no sm_70 SASS: the sm_70 PTX is checked as a Turing GPU
        // runs it, assembled for sm_75.
        let sass_arch = if ptxas::CUDA12_ONLY.contains(&p.arch) { "sm_75" } else { p.arch };
        let sass =
            memlab::ptx::inspect::sass(p.text, sass_arch, false).expect("ptxas and nvdisasm (cargo xtask setup)");
        for kernel in ["transpose_tiled", "transpose_padded"] {
            let instrs = &sass[kernel];
            let barrier = instrs.iter().position(|i| i.base() == "BAR").expect("a barrier");
            // Up to the shifted path's own barrier (transpose_padded on rows that are not whole
            // sectors: a conflict-free tile, whose reads need no pairing).
            let end =
                instrs[barrier + 1..].iter().position(|i| i.base() == "BAR").map_or(instrs.len(), |n| barrier + 1 + n);
            let order: String = instrs[barrier..end]
                .iter()
                .filter_map(|i| match i.base() {
                    "LDS" => Some('L'),
                    "STG" => Some('S'),
                    _ => None,
                })
                .collect();
            // The last store may sit in a block both of transpose_padded's paths share (LLVM
            // merges their identical tails): no two reads back to back is the property.
            assert!(order == "LSLSLSLS" || order == "LSLSLSL", "{}/{kernel}: {order}", p.arch);
        }
    }
}

#[test]
fn opening_a_device_loads_every_kernel_but_rung_8s_configurations_which_load_on_first_use() {
    use memlab::gpu::context::eager_entries;
    use memlab_contracts::sgemm::TUNED;
    for p in &ptx::ALL {
        let all = ptx::kernel_names(p.text);
        let eager = eager_entries(p);
        let tuned: Vec<&str> = all.iter().copied().filter(|n| TUNED.iter().any(|c| c.name == *n)).collect();
        // Every kernel is in exactly one of the two; the sm_80 and sm_90 PTX have all of rung 8.
        assert_eq!(eager.len() + tuned.len(), all.len(), "{}", p.arch);
        assert!(eager.iter().all(|n| !n.starts_with("sgemm_8_")), "{}", p.arch);
        assert_eq!(tuned.len(), if p.arch == "sm_70" { 0 } else { TUNED.len() }, "{}", p.arch);
        if p.arch == "sm_90" {
            // The eager module is PTX ptxas assembles, with exactly those kernels.
            let text = ptx::only_entries(p.text, &eager).unwrap();
            let mut got: Vec<String> = ptxas::run(&text, p.arch).unwrap().into_iter().map(|k| k.kernel).collect();
            let mut want: Vec<String> = eager.iter().map(|n| n.to_string()).collect();
            got.sort();
            want.sort();
            assert_eq!(got, want);
            // It is about a third of the PTX: rung 8's unrolled tiles are the rest.
            assert!(text.len() * 2 < p.text.len(), "{} of {}", text.len(), p.text.len());
        }
    }
}
