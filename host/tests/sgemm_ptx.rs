//! What the SGEMM ladder and the vectorized transpose must look like in PTX and to ptxas, checked
//! without a GPU: each rung really has what its name says (register blocking, 128-bit loads,
//! two shared stages, `cp.async`, `ldmatrix` and TF32 `mma.sync`), and nothing spills.

use memlab::ptx::ptxas;
use memlab::ptx::{self, count_ops, entry_body, opcodes};
use memlab_contracts::sgemm::{
    A_PITCH_PADDED, Algo, BK, STAGES, TF32_BK, TF32_STAGES, TF32_THREADS, TF32_WARP, THREADS, TILE, TM, TUNED, Tuned,
};

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
        // Aligned path: 4 float4 loads and 4 float4 stores; shifted path: 18 scalar loads and 4
        // float4 stores, aligned by the shift (each path has its scalar edge accesses too).
        let t = body(p, "transpose_vectorized");
        assert_eq!(count_ops(t, "ld.global.v4"), 4, "{}", p.arch);
        assert_eq!(count_ops(t, "st.global.v4"), 8, "{}", p.arch);
        assert!(count_ops(t, "ld.global") - count_ops(t, "ld.global.v4") >= 18, "{}", p.arch);
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
        // The transpose's two paths together still fit 8 blocks of 256 threads (32 registers),
        // the 2048 threads an SM holds: one path's registers set both paths' occupancy.
        if kernel == "transpose_vectorized" {
            assert!(k.regs <= 32, "{kernel}: {} registers", k.regs);
        }
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
                assert_eq!(rungs.len(), RUNGS.len() - 3);
                assert_eq!(
                    note.as_deref(),
                    Some(
                        "skipped sgemm_7_async_copy, rung 8 (sgemm_8_*), sgemm_9_tensor_tf32, sgemm_9_tensor_tf32_unswizzled: not compiled into the sm_70 PTX this device runs (they need cc 8.0)"
                    )
                );
            }
            _ => assert_eq!((rungs.len(), note), (RUNGS.len(), None), "{}", p.arch),
        }
    }
}

/// Every load and store of `body` names its state space (`.shared`, `.global`, `.param`): none
/// is generic, which would go through the generic-to-shared window check.
fn assert_no_generic_accesses(body: &str, what: &str) {
    for op in opcodes(body).filter(|op| op.starts_with("ld.") || op.starts_with("st.")) {
        let space = op.split('.').nth(1).unwrap_or("");
        assert!(["shared", "global", "param"].contains(&space), "{what}: generic access `{op}`");
    }
}

#[test]
fn rung_9_loads_fragments_by_ldmatrix_multiplies_by_tf32_mma_and_copies_by_cp_async() {
    let (mt, nt, ksteps) = ((TF32_WARP.0 / 16) as usize, (TF32_WARP.1 / 8) as usize, (TF32_BK / 8) as usize);
    // Chunks of 16 bytes per thread and tile, per fill site.
    let chunks = (TF32_BK * memlab_contracts::sgemm::TF32_TILE / 4 / TF32_THREADS) as usize;
    for kernel in ["sgemm_9_tensor_tf32", "sgemm_9_tensor_tf32_unswizzled"] {
        for p in &ptx::ALL {
            let Some(b) = entry_body(p.text, kernel) else {
                assert!(p.cc < (8, 0), "{} PTX lacks {kernel}", p.arch);
                continue;
            };
            let what = format!("{}/{kernel}", p.arch);
            // Per step: an ldmatrix.x4 per 16-row MMA tile and k = 8 slice of A, a TF32 MMA per
            // pair of tiles and slice, 2 32-bit loads of B per 8-column tile and slice.
            assert_eq!(count_ops(b, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), mt * ksteps, "{what}");
            assert_eq!(count_ops(b, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), mt * nt * ksteps, "{what}");
            assert_eq!(count_ops(b, "ld.shared.b32"), 2 * nt * ksteps, "{what}");
            // Both tiles global -> shared by cp.async only: no global load, no shared store,
            // 16-byte copies (rows of 4-float multiples) or four 4-byte ones, at 2 or more sites.
            let cg = count_ops(b, "cp.async.cg.shared.global");
            assert!(cg >= 2 * 2 * chunks && cg.is_multiple_of(2 * chunks), "{what}: {cg}");
            assert_eq!(count_ops(b, "cp.async.ca.shared.global"), 4 * cg, "{what}");
            assert_eq!(count_ops(b, "ld.global") + count_ops(b, "st.shared"), 0, "{what}");
            assert_eq!(count_ops(b, &format!("cp.async.wait_group {}", TF32_STAGES - 2)), 1, "{what}");
            assert_eq!(count_ops(b, "bar.sync"), 1, "{what}: one barrier per step");
            assert_eq!(count_ops(b, "fma.rn.f32"), 0, "{what}: the products are the tensor cores'");
            assert_no_generic_accesses(b, &what);
        }
    }
}

/// The PTX entry name of a configuration, from its parameters.
fn expected_name(c: &Tuned) -> String {
    let suffix = match c.algo {
        Algo::AsyncCopy => format!("s{}", c.stages),
        Algo::Registers => "regs".to_string(),
    };
    format!("sgemm_8_{}x{}x{}_w{}x{}_t{}x{}_{suffix}", c.bm, c.bn, c.bk, c.wm, c.wn, c.tm, c.tn)
}

#[test]
fn autotune_candidates_include_rung_6_and_larger_thread_tiles_and_are_named_by_their_parameters() {
    for c in TUNED {
        assert_eq!(c.name, expected_name(c));
        assert!(c.valid(), "{}", c.name);
    }
    // Rung 6 itself: its tile, depth, threads, 8 x 8 results, warp tiles of 32 x 64, padded A
    // pitch and two stages, with its algorithm.
    let rung6 = TUNED.iter().find(|c| c.algo == Algo::Registers && c.bm == TILE && c.bn == TILE && c.bk == BK);
    let rung6 = rung6.expect("rung 6's configuration is a candidate");
    assert_eq!(
        (rung6.threads(), rung6.tm, rung6.tn, (rung6.wm, rung6.wn), rung6.a_pitch(), rung6.stages),
        (THREADS, TM as u32, TM as u32, (32, 64), A_PITCH_PADDED, STAGES)
    );
    assert_eq!(rung6.smem_bytes(), memlab_contracts::sgemm::smem_bytes(A_PITCH_PADDED, TILE, STAGES));
    // Larger thread tiles (128 accumulators) at 1 block per SM, smaller blocks for small shapes.
    assert!(TUNED.iter().any(|c| c.tm * c.tn == 128 && c.blocks_per_sm(90) == 1));
    assert!(TUNED.iter().any(|c| c.bm * c.bn == 64 * 64));
    let names: std::collections::HashSet<&str> = TUNED.iter().map(|c| c.name).collect();
    assert_eq!(names.len(), TUNED.len(), "names are unique");
}

#[test]
fn every_configuration_of_rung_8_has_its_twin() {
    let twins = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/twins.cu")).unwrap();
    let listed: Vec<String> = twins
        .lines()
        .filter_map(|l| {
            let (kind, args) = l.strip_suffix(')')?.split_once('(')?;
            let v: Vec<u32> = args.split(',').map(|a| a.trim().parse().ok()).collect::<Option<_>>()?;
            match (kind, v.as_slice()) {
                ("TUNED_TWIN", &[bm, bn, bk, wm, wn, tm, tn, s]) => {
                    Some(format!("sgemm_8_{bm}x{bn}x{bk}_w{wm}x{wn}_t{tm}x{tn}_s{s}"))
                }
                ("STAGED_TWIN", &[bm, bn, bk, wm, wn, tm, tn]) => {
                    Some(format!("sgemm_8_{bm}x{bn}x{bk}_w{wm}x{wn}_t{tm}x{tn}_regs"))
                }
                _ => None,
            }
        })
        .collect();
    let names: Vec<String> = TUNED.iter().map(|c| c.name.to_string()).collect();
    assert_eq!(listed, names);
}

#[test]
fn rung_8_configurations_have_their_algorithms_instructions_in_cc_80_ptx_only() {
    for p in &ptx::ALL {
        for c in TUNED {
            let Some(b) = entry_body(p.text, c.name) else {
                assert!(p.cc < (8, 0), "{} PTX lacks {}", p.arch, c.name);
                continue;
            };
            let what = format!("{}/{}", p.arch, c.name);
            let (tm, tn, bk) = (c.tm as usize, c.tn as usize, c.bk as usize);
            let chunks = |rows: u32, cols: u32| (rows * cols / 4 / c.threads()) as usize;
            // Fully unrolled: every result's FMA per depth of a step, no accumulator in local
            // memory, 128-bit stores of C.
            assert_eq!(count_ops(b, "fma.rn.f32"), tm * tn * bk, "{what}");
            assert!(!b.contains(".local"), "{what}: accumulators in local memory");
            assert_eq!(count_ops(b, "st.global.v4"), tm * tn / 4, "{what}");
            assert_no_generic_accesses(b, &what);
            match c.algo {
                Algo::AsyncCopy => {
                    // A read by columns, 2 depths per 64-bit load; B 4 columns per 128-bit one.
                    assert_eq!(count_ops(b, "ld.shared.v2"), tm * bk / 2, "{what}");
                    assert_eq!(count_ops(b, "ld.shared.v4"), tn / 4 * bk, "{what}");
                    let site = chunks(c.bm, c.bk) + chunks(c.bk, c.bn);
                    let cg = count_ops(b, "cp.async.cg.shared.global");
                    assert!(cg >= 2 * site && cg.is_multiple_of(site), "{what}: {cg}");
                    assert_eq!(count_ops(b, "ld.global") + count_ops(b, "st.shared"), 0, "{what}");
                }
                Algo::Registers => {
                    // Rung 6's algorithm: 128-bit fragment loads of A (transposed) and B, both
                    // tiles through registers (prologue and loop), A stored by 4 scalar
                    // stores a chunk, B by one 128-bit store, one barrier per step.
                    assert_eq!(count_ops(b, "ld.shared.v4"), (tm / 4 + tn / 4) * bk, "{what}");
                    let (a, bt) = (chunks(c.bm, c.bk), chunks(c.bk, c.bn));
                    assert_eq!(count_ops(b, "ld.global.v4"), 2 * (a + bt), "{what}");
                    assert_eq!(count_ops(b, "st.shared.v4"), 2 * bt, "{what}");
                    assert_eq!(count_ops(b, "st.shared.b32") + count_ops(b, "st.shared.f32"), 2 * 4 * a, "{what}");
                    assert_eq!(count_ops(b, "cp.async"), 0, "{what}");
                    assert_eq!(count_ops(b, "bar.sync"), 2, "{what}");
                }
            }
        }
    }
}

#[test]
fn rungs_8_and_9_carry_their_launch_bounds_and_ptxas_keeps_them_without_spills() {
    for (arch, sm) in [("sm_80", 80), ("sm_90", 90)] {
        let p = ptx::ALL.iter().find(|p| p.arch == arch).unwrap();
        let report = ptxas::run(p.text, arch).expect("ptxas (run `cargo xtask setup`)");
        for (kernel, threads, blocks) in memlab_contracts::sgemm::launch_bounds(sm) {
            let b = entry_body(p.text, kernel).unwrap_or_else(|| panic!("{arch} PTX lacks {kernel}"));
            let head = &b[..b.find('{').unwrap()];
            assert!(head.contains(&format!(".maxntid {threads}, 1, 1")), "{arch} {kernel}: {head}");
            assert!(head.contains(&format!(".minnctapersm {blocks}")), "{arch} {kernel}: {head}");
            let k = report.iter().find(|k| k.kernel == kernel).unwrap_or_else(|| panic!("ptxas lacks {kernel}"));
            assert_eq!((k.stack_bytes, k.spill_stores, k.spill_loads), (0, 0, 0), "{arch} {kernel}: {k:?}");
            // The bounds hold: `blocks` blocks of `threads` fit the SM's 65536 registers.
            assert!(k.regs * threads * blocks <= 65536 && k.regs <= 255, "{arch} {kernel}: {} registers", k.regs);
        }
    }
    // The sm_80 PTX runs 64-result thread tiles at fewer blocks than the sm_90 one, the rest
    // alike; the split-K rung has one of those tiles.
    let bounds = |sm| memlab_contracts::sgemm::launch_bounds(sm).collect::<Vec<_>>();
    let fewer = bounds(80).iter().zip(bounds(90)).filter(|(a, b)| a.2 < b.2).count();
    let tile64 = memlab_contracts::sgemm::TUNED.iter().filter(|c| c.tm * c.tn == 64).count();
    assert_eq!(fewer, tile64 + 1);
}

#[test]
fn the_split_k_rung_shares_rung_6s_tile_and_its_reduce_sums_with_128_bit_accesses() {
    use memlab_contracts::sgemm::{SPLIT_K, SPLIT_K_REDUCE, split_k_config};
    let rung6 = split_k_config();
    for p in &ptx::ALL {
        let (Some(split), Some(reduce)) = (entry_body(p.text, SPLIT_K), entry_body(p.text, SPLIT_K_REDUCE)) else {
            assert!(p.cc < (8, 0), "{} PTX lacks the split-K rung", p.arch);
            continue;
        };
        let tile = body(p, rung6.name);
        // The same body as its configuration: 8 x 8 results, 8 depths, two stages.
        for op in ["fma.rn.f32", "ld.shared.v4", "st.global.v4", "bar.sync"] {
            assert_eq!(count_ops(split, op), count_ops(tile, op), "{}/{SPLIT_K}: {op}", p.arch);
        }
        assert!(!split.contains(".local"), "{}: accumulators in local memory", p.arch);
        // The reduce: a 128-bit load per split and a 128-bit store on the vector path.
        assert!(count_ops(reduce, "ld.global.v4") >= 2 && count_ops(reduce, "st.global.v4") == 1, "{}", p.arch);
        assert_eq!(count_ops(reduce, "bar.sync"), 0, "{}", p.arch);
    }
    // The launch bounds of its configuration: ptxas keeps 2 blocks of 256 per SM, no spills.
    let sm90 = ptx::ALL.iter().find(|p| p.arch == "sm_90").unwrap();
    let report = ptxas::run(sm90.text, "sm_90").expect("ptxas (run `cargo xtask setup`)");
    let k = report.iter().find(|k| k.kernel == SPLIT_K).expect("ptxas reports the split-K rung");
    assert_eq!((k.stack_bytes, k.spill_stores, k.spill_loads), (0, 0, 0), "{k:?}");
    assert!(k.regs * rung6.threads() * rung6.blocks_per_sm(90) <= 65536, "{} registers", k.regs);
}
