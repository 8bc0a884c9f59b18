//! What the SGEMM ladder and the vectorized transpose must look like in PTX and to ptxas, checked
//! without a GPU: each rung really has what its name says (register blocking, 128-bit loads,
//! two shared stages), and nothing spills.

use memlab::ptx::{self, count_ops, entry_body};
use memlab::ptxas;

const RUNGS: [&str; 5] = [
    "sgemm_2_register_1d",
    "sgemm_3_register_2d",
    "sgemm_4_vectorized",
    "sgemm_5_conflict_free",
    "sgemm_6_double_buffered",
];
/// The rungs with 128-bit global and shared accesses.
const VECTOR_RUNGS: [&str; 3] = ["sgemm_4_vectorized", "sgemm_5_conflict_free", "sgemm_6_double_buffered"];

fn body<'a>(p: &'a ptx::Ptx, kernel: &str) -> &'a str {
    entry_body(p.text, kernel).unwrap_or_else(|| panic!("{} PTX lacks kernel {kernel}", p.arch))
}

#[test]
fn register_blocked_rungs_do_64_fmas_per_depth_step_from_shared_memory() {
    for p in &ptx::ALL {
        // Rung 2: 8 results per thread, 8 depth steps, unrolled.
        assert_eq!(count_ops(body(p, "sgemm_2_register_1d"), "fma.rn.f32"), 64, "{}", p.arch);
        for kernel in &RUNGS[1..] {
            let b = body(p, kernel);
            // 8 x 8 results, 8 depth steps, unrolled: 512 FMAs in the loop body.
            assert_eq!(count_ops(b, "fma.rn.f32"), 512, "{}/{kernel}", p.arch);
            assert!(count_ops(b, "ld.shared") > 0 && count_ops(b, "bar.sync") > 0, "{}/{kernel}", p.arch);
            assert!(!b.contains(".local"), "{}/{kernel}: accumulators in local memory", p.arch);
        }
    }
}

#[test]
fn vector_rungs_and_the_vectorized_transpose_use_128_bit_accesses() {
    for p in &ptx::ALL {
        for kernel in VECTOR_RUNGS {
            let b = body(p, kernel);
            // Per depth step: two 128-bit loads of A and two of B, 8 steps.
            assert_eq!(count_ops(b, "ld.shared.v4"), 32, "{}/{kernel}", p.arch);
            assert!(count_ops(b, "ld.global.v4") >= 2, "{}/{kernel}", p.arch);
            assert_eq!(count_ops(b, "st.global.v4"), 16, "{}/{kernel}: 8x8 results as 16 float4", p.arch);
        }
        for kernel in &RUNGS[..2] {
            assert_eq!(count_ops(body(p, kernel), "ld.global.v4"), 0, "{}/{kernel} is the scalar rung", p.arch);
        }
        let t = body(p, "transpose_vectorized");
        assert_eq!(count_ops(t, "ld.global.v4"), 4, "{}", p.arch);
        assert_eq!(count_ops(t, "st.global.v4"), 4, "{}", p.arch);
    }
}

#[test]
fn double_buffering_loads_the_next_step_while_the_fmas_run() {
    for p in &ptx::ALL {
        let (single, double) = (body(p, "sgemm_5_conflict_free"), body(p, "sgemm_6_double_buffered"));
        // Single stage: one step's loads, then its FMAs.
        assert_eq!(count_ops(single, "ld.global.v4"), 2, "{}", p.arch);
        assert!(single.rfind("ld.global.v4").unwrap() < single.find("fma.rn.f32").unwrap(), "{}", p.arch);
        // Two stages: the first step's loads before the loop, and the next step's loads amid
        // this step's FMAs (between its first and its last).
        assert_eq!(count_ops(double, "ld.global.v4"), 4, "{}", p.arch);
        let next_loads = double.rfind("ld.global.v4").unwrap();
        assert!(double.find("fma.rn.f32").unwrap() < next_loads, "{}", p.arch);
        assert!(next_loads < double.rfind("fma.rn.f32").unwrap(), "{}", p.arch);
        // One barrier before the loop and one per step, as in the single-stage rung.
        assert_eq!(count_ops(double, "bar.sync"), 2, "{}", p.arch);
    }
}

#[test]
fn ptxas_fits_two_blocks_per_sm_without_spills() {
    let sm90 = ptx::ALL.iter().find(|p| p.arch == "sm_90").unwrap();
    let report = ptxas::run(sm90.text, "sm_90").expect("ptxas (run `cargo xtask setup`)");
    for kernel in RUNGS.iter().copied().chain(["sgemm_7_async_copy", "transpose_vectorized"]) {
        let k = report.iter().find(|k| k.kernel == kernel).unwrap_or_else(|| panic!("ptxas lacks {kernel}"));
        assert_eq!((k.stack_bytes, k.spill_stores, k.spill_loads), (0, 0, 0), "{kernel}: {k:?}");
        // 256 threads x 128 registers = 32768: two blocks in the 65536 registers of an SM.
        assert!(k.regs <= 128, "{kernel}: {} registers", k.regs);
    }
}

#[test]
fn the_async_copy_rung_copies_b_to_shared_without_registers_on_cc_80_ptx_only() {
    let kernel = "sgemm_7_async_copy";
    for p in &ptx::ALL {
        let Some(b) = entry_body(p.text, kernel) else {
            assert!(p.cc < (8, 0), "{} PTX lacks {kernel}", p.arch);
            continue;
        };
        assert!(p.cc >= (8, 0), "{}: cp.async needs cc 8.0", p.arch);
        // Each copy site (the prologue step and the loop) has a 16-byte copy of B inside the
        // matrix, a checked 16-byte one for 16-byte aligned rows, and four checked 4-byte ones
        // for rows that are not.
        assert_eq!(count_ops(b, "cp.async.cg.shared.global"), 2 * 2, "{}", p.arch);
        assert_eq!(count_ops(b, "cp.async.ca.shared.global"), 2 * 4, "{}", p.arch);
        assert_eq!(count_ops(b, "cp.async.wait_group 0"), 1, "{}: 2 stages, nothing left in flight", p.arch);
        // One group per step (prologue, loop) and one more on the path with no step (k = 0).
        assert_eq!(count_ops(b, "cp.async.commit_group"), 3, "{}", p.arch);
        assert_eq!(count_ops(b, "bar.sync"), 1, "{}: one barrier per step", p.arch);
        // B never passes through registers: no 128-bit shared store. A does, as in rung 6: one
        // 128-bit global load and 4 transposing stores per site. The loop's load is issued
        // before the step's 32 shared loads and its stores come after the last of them, so the
        // load is in flight while the step multiplies.
        assert_eq!(count_ops(b, "st.shared.v4"), 0, "{}", p.arch);
        assert_eq!(count_ops(b, "ld.global.v4"), 2, "{}", p.arch);
        assert_eq!(count_ops(b, "st.shared"), 2 * 4, "{}", p.arch);
        let next_a = b.rfind("ld.global.v4").unwrap();
        assert_eq!(count_ops(&b[next_a..], "ld.shared.v4"), 32, "{}", p.arch);
        assert!(b.rfind("st.shared").unwrap() > b.rfind("ld.shared.v4").unwrap(), "{}", p.arch);
        assert_eq!(count_ops(b, "fma.rn.f32"), 512, "{}", p.arch);
        assert_eq!(count_ops(b, "st.global.v4"), 16, "{}", p.arch);
        assert!(!b.contains(".local"), "{}: accumulators in local memory", p.arch);
    }
}

#[test]
fn the_ladder_offers_each_rung_only_where_its_ptx_has_it() {
    use memlab::demos::sgemm::{RUNGS, available};
    for p in &ptx::ALL {
        let (rungs, note) = available(p);
        let names: Vec<&str> = ptx::kernel_names(p.text);
        for rung in &RUNGS {
            let offered = rungs.iter().any(|r| r.entry.name == rung.entry.name);
            assert_eq!(offered, names.contains(&rung.entry.name), "{}/{}", p.arch, rung.entry.name);
        }
        match p.cc {
            (7, 0) => {
                assert_eq!(rungs.len(), RUNGS.len() - 1);
                assert_eq!(
                    note.as_deref(),
                    Some("skipped sgemm_7_async_copy: not compiled into the sm_70 PTX this device runs")
                );
            }
            _ => assert_eq!((rungs.len(), note), (RUNGS.len(), None), "{}", p.arch),
        }
    }
}
