//! What the TMA lesson claims about its PTX, checked without a GPU: the kernels are in the sm_90
//! PTX only (PTX ISA 8.3), copy through `cp.async.bulk(.tensor)` with an mbarrier wait, touch
//! shared memory only through the `.shared` state space, and assemble with ptxas for sm_90
//! without spills, stack or static shared memory.

use memlab::ptx::{self, count_ops, entry_body};
use memlab::ptxas;
use memlab_contracts::tma::{SWIZZLE_MODES, TILE, box_cols};

const TMA_KERNELS: [&str; 3] = ["tma_bulk_copy", "tma_copy", "tma_transpose"];

fn sm_90() -> &'static ptx::Ptx {
    ptx::ALL.iter().find(|p| p.arch == "sm_90").expect("an sm_90 PTX")
}

fn body(kernel: &str) -> &'static str {
    entry_body(sm_90().text, kernel).unwrap_or_else(|| panic!("the sm_90 PTX lacks {kernel}"))
}

#[test]
fn the_sm_90_ptx_is_isa_8_3_and_only_it_has_the_tma_kernels() {
    for p in ptx::ALL.iter().chain([&ptx::COUNTING]) {
        let names = ptx::kernel_names(p.text);
        let version = p.text.lines().find(|l| l.starts_with(".version")).unwrap();
        for kernel in TMA_KERNELS {
            assert_eq!(names.contains(&kernel), p.arch == "sm_90", "{}: {kernel}", p.arch);
        }
        if p.arch == "sm_90" {
            assert_eq!(version, ".version 8.3");
        } else {
            assert!(!p.text.contains("cp.async.bulk") && !p.text.contains("mbarrier"), "{}", p.arch);
        }
    }
    let why = ptx::needs_newer(&ptx::ALL[1], "tma_transpose").unwrap();
    assert_eq!(
        why,
        "kernel `tma_transpose` needs cc 9.0 or newer (the sm_90 PTX and up have it, it uses cp.async.bulk.tensor): it is not in the sm_80 PTX, which cc 8.0 loads"
    );
    assert!(ptx::needs_newer(&ptx::ALL[0], "tma_bulk_copy").unwrap().contains("it uses cp.async.bulk)"));
}

#[test]
fn tma_kernels_copy_by_bulk_copies_and_wait_on_an_mbarrier() {
    let copy = body("tma_copy");
    assert_eq!(count_ops(copy, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"), 1);
    assert_eq!(count_ops(copy, "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"), 1);
    let bulk = body("tma_bulk_copy");
    assert_eq!(count_ops(bulk, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"), 1);
    assert_eq!(count_ops(bulk, "cp.async.bulk.global.shared::cta.bulk_group"), 1);
    assert_eq!(count_ops(bulk, "cp.async.bulk.wait_group.read"), 1, "the chunk is reused only once read");
    assert_eq!(count_ops(bulk, "cp.async.bulk.wait_group 0"), 0);
    let transpose = body("tma_transpose");
    // One body per swizzle mode, each loading its 64 / box_cols boxes, unrolled, and storing once.
    let boxes: u32 = (0..SWIZZLE_MODES).map(|m| TILE / box_cols(m)).sum();
    assert_eq!(
        count_ops(transpose, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"),
        boxes as usize
    );
    assert_eq!(count_ops(transpose, "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"), 4);
    assert_eq!(count_ops(transpose, "fence.proxy.async.shared::cta"), 4 + 4, "after init and before each store");
    for (kernel, b) in [("tma_bulk_copy", bulk), ("tma_copy", copy), ("tma_transpose", transpose)] {
        assert!(count_ops(b, "mbarrier.init.shared::cta.b64") >= 1, "{kernel}");
        assert!(count_ops(b, "mbarrier.arrive.expect_tx.shared::cta.b64") >= 1, "{kernel}");
        assert!(count_ops(b, "mbarrier.try_wait.parity.shared::cta.b64") >= 1, "{kernel}");
        assert!(count_ops(b, "cp.async.bulk.commit_group") >= 1, "{kernel}");
        assert!(
            b.contains("cp.async.bulk.wait_group.read 0;"),
            "{kernel}: the tile is read before it is reused or freed"
        );
        // No data through registers to or from global memory: the copy engine moves it.
        assert_eq!(count_ops(b, "ld.global") + count_ops(b, "st.global"), 0, "{kernel}");
    }
    for kernel in ["tma_copy", "tma_transpose"] {
        assert_eq!(
            count_ops(body(kernel), "fence.proxy.tensormap::generic.acquire.sys"),
            if kernel == "tma_copy" { 2 } else { 8 }
        );
    }
}

#[test]
fn tma_kernels_touch_shared_memory_only_through_the_shared_state_space() {
    for kernel in TMA_KERNELS {
        let b = body(kernel);
        // Generic loads and stores (no state space) would be `ld.b32`, `ld.v4.f32`, `st.u32`, ...
        let generic = ptx::opcodes(b)
            .filter(|op| op.starts_with("ld.") || op.starts_with("st."))
            .filter(|op| {
                !["shared", "param", "global", "local", "const"].iter().any(|s| op.split('.').nth(1) == Some(s))
            })
            .count();
        assert_eq!(generic, 0, "{kernel}: generic load or store");
        // The dynamic shared memory's generic pointer only goes straight back to the `.shared`
        // window (`SharedAddr::of`), where ptxas folds the pair away.
        let (generic, back) = (b.matches("cvta.shared").count(), b.matches("cvta.to.shared").count());
        assert!(generic <= back, "{kernel}: a generic pointer into shared memory");
    }
    // The transpose's tile traffic: one 128-bit shared load per read and mode, scalar stores.
    let t = body("tma_transpose");
    assert_eq!(count_ops(t, "ld.shared.v4"), 4 * 4);
    assert_eq!(count_ops(t, "st.shared.b32") + count_ops(t, "st.shared.f32"), 4 * 4 * 4);
}

#[test]
fn ptxas_assembles_the_tma_kernels_without_spills_or_stack() {
    let report = ptxas::run(sm_90().text, "sm_90").expect("ptxas -arch=sm_90 (install it with `cargo xtask setup`)");
    for kernel in TMA_KERNELS {
        let k = report.iter().find(|k| k.kernel == kernel).unwrap_or_else(|| panic!("ptxas lacks {kernel}"));
        assert_eq!((k.spill_stores, k.spill_loads, k.stack_bytes, k.smem_bytes), (0, 0, 0, 0), "{kernel}");
        // One thread issues the copies: a handful of registers (measured: 8, 6, 21).
        assert!(k.regs <= 32, "{kernel}: {} registers", k.regs);
    }
}
