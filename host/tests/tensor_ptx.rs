//! What the tensor ladder claims about its PTX, checked without a GPU: its kernels are the
//! sm_90a PTX's only entries and in no other PTX; every rung feeds `wgmma.mma_async` from TMA
//! copies completing on mbarriers; the specialised rungs rebalance registers with `setmaxnreg`
//! under the register cap their launch bounds give; rung 5 multicasts; and ptxas assembles them
//! for sm_90a with the registers the contract plans and no spills or stack.

use memlab::ptx::ptxas;
use memlab::ptx::{self, count_ops, entry_body};
use memlab_contracts::tensor::{CONSUMER_REGS, FP8, MULTICAST, PRODUCER_REGS, RUNGS, Rung, TF32};

fn body(rung: &Rung) -> &'static str {
    entry_body(ptx::TENSOR.text, rung.name).unwrap_or_else(|| panic!("the sm_90a PTX lacks {}", rung.name))
}

const TMA_LOAD: &str = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes";

#[test]
fn only_the_sm_90a_ptx_has_the_ladder_and_it_has_nothing_else() {
    let header: Vec<&str> =
        ptx::TENSOR.text.lines().filter(|l| l.starts_with(".version") || l.starts_with(".target")).collect();
    assert_eq!(header, [".version 8.0", ".target sm_90a"]);
    let names = ptx::kernel_names(ptx::TENSOR.text);
    assert_eq!(names, RUNGS.iter().map(|r| r.name).collect::<Vec<_>>());
    for p in ptx::ALL.iter().chain([&ptx::COUNTING, &ptx::COUNTING_SM90, &ptx::CHECKED]) {
        assert!(!p.text.contains("wgmma") && !p.text.contains("setmaxnreg"), "{} PTX", p.arch);
    }
    let why = ptx::needs_newer(&ptx::ALL[2], "tensor_4_wide").unwrap();
    assert_eq!(
        why,
        "kernel `tensor_4_wide` is in the sm_90a PTX (it uses wgmma.mma_async and setmaxnreg), which loads on cc 9.0 only: it is not in the sm_90 PTX"
    );
    assert!(ptx::runs_tensor((9, 0)) && !ptx::runs_tensor((10, 0)) && !ptx::runs_tensor((8, 9)));
}

#[test]
fn every_rung_feeds_wgmma_from_tma_through_mbarriers() {
    for rung in &RUNGS {
        let b = body(rung);
        let tf32 = *rung == TF32;
        let shape = match (tf32, *rung == FP8) {
            (true, _) => format!("wgmma.mma_async.sync.aligned.m64n{}k8.f32.tf32.tf32", rung.bn),
            (_, true) => format!("wgmma.mma_async.sync.aligned.m64n{}k32.f32.e4m3.e4m3", rung.bn),
            _ => format!("wgmma.mma_async.sync.aligned.m64n{}k16.f32.bf16.bf16", rung.bn),
        };
        // Four 32-byte steps per 128-byte stage row (k16 of BF16, k8 of TF32), unrolled,
        // between a fence and a commit, then a wait
        // (LLVM may copy the K loop's body, e.g. apart for the loading thread: each copy whole).
        let groups = count_ops(b, "wgmma.commit_group.sync.aligned");
        assert!(groups >= 1, "{}", rung.name);
        assert_eq!(count_ops(b, &shape), 4 * groups, "{}: {shape}", rung.name);
        assert_eq!(count_ops(b, "wgmma.mma_async"), 4 * groups, "{}: one shape only", rung.name);
        for op in ["wgmma.fence.sync.aligned", "wgmma.wait_group.sync.aligned"] {
            assert_eq!(count_ops(b, op), groups, "{}: {op}", rung.name);
        }
        assert!(count_ops(b, "mbarrier.try_wait.parity.shared::cta.b64") >= 2, "{}: full and empty waits", rung.name);
        // One expect_tx per load, which copies A and B (B multicast in a cluster).
        let loads = count_ops(b, "mbarrier.arrive.expect_tx.shared::cta.b64");
        assert!(loads >= 1, "{}", rung.name);
        let releases = count_ops(b, "mbarrier.arrive.shared::cluster.b64");
        assert_eq!(releases, groups * rung.cluster as usize, "{}: a release per block of the cluster", rung.name);
        let inits = count_ops(b, "mbarrier.init.shared::cta.b64");
        assert!(inits >= 2 && inits.is_multiple_of(2), "{}: full and empty, {inits}", rung.name);
        let multicast = format!("{TMA_LOAD}.multicast::cluster");
        let tma = count_ops(b, TMA_LOAD) - count_ops(b, &multicast);
        let expected = if rung.cluster > 1 { (loads, loads) } else { (2 * loads, 0) };
        assert_eq!((tma, count_ops(b, &multicast)), expected, "{}", rung.name);
        // The epilogue packs pairs of results into BF16, or stores FP32 pairs as they are.
        let (pack, pairs) =
            (count_ops(b, "cvt.rn.bf16x2.f32"), count_ops(b, "st.global.b64") + count_ops(b, "st.global.u64"));
        let expected = if tf32 { pairs >= (rung.bn / 8) as usize && pack == 0 } else { pack >= (rung.bn / 8) as usize };
        assert!(expected, "{}: {pack} BF16 packs, {pairs} FP32 pair stores", rung.name);
        assert_eq!(count_ops(b, "st.local") + count_ops(b, "ld.local"), 0, "{}: accumulators in registers", rung.name);
        // The TMA-store rung writes C only through its staging: one stmatrix x4 per 16 columns
        // (four 8 x 8 BF16 matrices, 16 per consumer warp), no other shared store, then TMA
        // stores of the 4 boxes, waited for before the staging is written again and before the
        // exit.
        let tma_stores = count_ops(b, "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group");
        let global_stores = count_ops(b, "st.global");
        if rung.tma_store {
            assert_eq!((tma_stores, global_stores), (4, 0), "{}: TMA stores, no st.global", rung.name);
            // The per-tensor scale: one multiply per result for FP8, none (folded 1.0) for BF16.
            let scaled = if *rung == FP8 { rung.bn as usize / 2 } else { 0 };
            assert_eq!(count_ops(b, "mul.rn.f32"), scaled, "{}: scale", rung.name);
            let stmatrix = count_ops(b, "stmatrix.sync.aligned.m8n8.x4.shared.b16");
            assert_eq!((stmatrix, count_ops(b, "st.shared")), ((rung.bn / 16) as usize, 0), "{}: stmatrix", rung.name);
            assert_eq!(count_ops(b, "cp.async.bulk.commit_group"), 1, "{}", rung.name);
            assert_eq!(
                count_ops(b, "cp.async.bulk.wait_group.read 0"),
                2,
                "{}: before a refill, at the end",
                rung.name
            );
            assert!(count_ops(b, "fence.proxy.async.shared::cta") >= 1, "{}: writes before the copy", rung.name);
        } else {
            assert_eq!(tma_stores, 0, "{}: stores from registers", rung.name);
        }
    }
}

#[test]
fn the_specialised_rungs_move_registers_to_the_consumers() {
    for rung in &RUNGS {
        let b = body(rung);
        let (dec, inc) = (
            format!("setmaxnreg.dec.sync.aligned.u32 {PRODUCER_REGS};"),
            format!("setmaxnreg.inc.sync.aligned.u32 {CONSUMER_REGS};"),
        );
        let expected = usize::from(rung.setmaxnreg);
        assert_eq!((b.matches(&dec).count(), b.matches(&inc).count()), (expected, expected), "{}", rung.name);
        // The launch bounds `host/build.rs` writes: setmaxnreg needs a register cap at entry.
        let bounds = format!(".maxntid {}, 1, 1\n.minnctapersm 1", rung.threads());
        assert!(b.contains(&bounds), "{}: {bounds}", rung.name);
    }
    assert!(count_ops(body(&MULTICAST), "barrier.cluster.wait") >= 2, "the carve's and the leave's");
}

#[test]
fn ptxas_assembles_the_ladder_with_the_planned_registers() {
    let report =
        ptxas::run(ptx::TENSOR.text, "sm_90a").expect("ptxas -arch=sm_90a (install it with `cargo xtask setup`)");
    for rung in &RUNGS {
        let k = report.iter().find(|k| k.kernel == rung.name).unwrap_or_else(|| panic!("ptxas lacks {}", rung.name));
        assert_eq!((k.spill_stores, k.spill_loads, k.stack_bytes, k.smem_bytes), (0, 0, 0, 0), "{}", rung.name);
        // Under `.maxntid 384`: 65536 / 384 = 170, which ptxas rounds down to 168; the others
        // need less than their cap.
        let cap = (65536 / rung.threads()).min(255) / 8 * 8;
        assert!(k.regs <= cap, "{}: {} registers, cap {cap}", rung.name, k.regs);
        if rung.setmaxnreg {
            assert_eq!(k.regs, 168, "{}: the entry's cap, which setmaxnreg then moves", rung.name);
        }
    }
}
