//! What the TMA lesson claims about its PTX, checked without a GPU: the kernels are in the sm_90
//! PTX only (PTX ISA 8.3), copy through `cp.async.bulk(.tensor)` in a ring of buffers with an
//! mbarrier wait each, with and without an L2 evict_first hint (`createpolicy`,
//! `.L2::cache_hint`), touch shared memory only through the `.shared` state space, and assemble with ptxas for sm_90
//! without spills, stack or static shared memory.

use memlab::gpu::tensor_map::MAPS_SYMBOL;
use memlab::ptx::ptxas;
use memlab::ptx::{self, count_ops, entry_body};
use memlab_contracts::tma::{MAP_BYTES, MAP_SLOTS, SWIZZLE_MODES, TILE, TRANSPOSE_READS, box_cols};

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

const TENSOR_LOAD: &str = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes";
const TENSOR_STORE: &str = "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group";
const BULK_LOAD: &str = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes";
const BULK_STORE: &str = "cp.async.bulk.global.shared::cta.bulk_group";

/// The `.L2::cache_hint` form of a copy (its policy an extra last operand).
fn hinted(op: &str) -> String {
    format!("{op}.L2::cache_hint")
}

/// Copies of `op` in `body` without the hint (`count_ops` counts by prefix: both forms).
fn unhinted(body: &str, op: &str) -> usize {
    count_ops(body, op) - count_ops(body, &hinted(op))
}

#[test]
fn tma_kernels_pipeline_bulk_copies_through_a_ring_of_mbarriers() {
    let (copy, bulk, transpose) = (body("tma_copy"), body("tma_bulk_copy"), body("tma_transpose"));
    let modes = SWIZZLE_MODES as usize;
    // One store per body (one per swizzle mode in the transpose), in both forms: without hint
    // and with the evict_first policy; loads at the ring's prologue and at its refill, at
    // least, each in both forms.
    for (b, load, store) in [(copy, TENSOR_LOAD, TENSOR_STORE), (bulk, BULK_LOAD, BULK_STORE)] {
        assert_eq!((unhinted(b, store), count_ops(b, &hinted(store))), (1, 1), "{store}");
        assert!(unhinted(b, load) >= 2, "{load}");
        assert!(count_ops(b, &hinted(load)) >= 2, "{load}");
    }
    assert_eq!((unhinted(transpose, TENSOR_STORE), count_ops(transpose, &hinted(TENSOR_STORE))), (modes, modes));
    // Each mode loads a tile as 64 / box_cols boxes, unrolled, at every load site (the prologue
    // and the refill, at least), as many in each form.
    let boxes: usize = (0..SWIZZLE_MODES).map(|m| (TILE / box_cols(m)) as usize).sum();
    let loads = unhinted(transpose, TENSOR_LOAD);
    assert!(loads >= 2 * boxes, "{loads} tensor loads");
    assert_eq!(count_ops(transpose, &hinted(TENSOR_LOAD)), loads);
    // The policy: `createpolicy` (PTX ISA, "createpolicy"), evict_first for every line.
    for (kernel, b) in [("tma_bulk_copy", bulk), ("tma_copy", copy), ("tma_transpose", transpose)] {
        assert!(count_ops(b, "createpolicy.fractional.L2::evict_first.b64") >= 1, "{kernel}");
    }
    // The copy ring reuses item j - 1's buffer while item j's store may still read its own:
    // `wait_group.read 1`; the transpose's output buffers and the blocks' exit wait for all.
    for (kernel, b) in [("tma_bulk_copy", bulk), ("tma_copy", copy)] {
        assert_eq!(b.matches("cp.async.bulk.wait_group.read 1;").count(), 1, "{kernel}");
    }
    assert_eq!(transpose.matches("cp.async.bulk.wait_group.read 1;").count(), 0);
    assert!(count_ops(transpose, "fence.proxy.async.shared::cta") >= 2 * SWIZZLE_MODES as usize);
    for (kernel, b) in [("tma_bulk_copy", bulk), ("tma_copy", copy), ("tma_transpose", transpose)] {
        assert!(count_ops(b, "mbarrier.init.shared::cta.b64") >= 1, "{kernel}");
        assert!(count_ops(b, "mbarrier.arrive.expect_tx.shared::cta.b64") >= 1, "{kernel}");
        assert!(count_ops(b, "mbarrier.try_wait.parity.shared::cta.b64") >= 1, "{kernel}");
        assert!(count_ops(b, "cp.async.bulk.commit_group") >= 1, "{kernel}");
        assert!(
            b.contains("cp.async.bulk.wait_group.read 0;"),
            "{kernel}: the buffers are read before the block exits"
        );
        // No data through registers to or from global memory: the copy engine moves it.
        assert_eq!(count_ops(b, "ld.global") + count_ops(b, "st.global"), 0, "{kernel}");
        // No call: no panic path (every divisor is kept non-zero).
        assert_eq!(count_ops(b, "call"), 0, "{kernel}");
    }
    // The maps are slots of the module's constant-memory array, whose generic address the
    // copies take (`cvta.const`): no tensormap-proxy fence, which a map in global memory needs
    // in every block.
    let maps = format!(".visible .const .align 64 .b8 {}[{}];", MAPS_SYMBOL.to_str().unwrap(), MAP_SLOTS * MAP_BYTES);
    assert_eq!(sm_90().text.matches(&maps).count(), 1, "{maps}");
    assert_eq!(count_ops(sm_90().text, "fence.proxy.tensormap"), 0);
    // Each slot is clamped to the array (`min.u32 .., 127`) before its address is formed.
    let clamp = format!(", {};", MAP_SLOTS - 1);
    for kernel in ["tma_copy", "tma_transpose"] {
        let b = body(kernel);
        assert!(count_ops(b, "cvta.const.u64") >= 2, "{kernel}");
        assert!(b.contains(MAPS_SYMBOL.to_str().unwrap()), "{kernel}");
        let clamps = b.lines().filter(|l| l.trim_start().starts_with("min.u32") && l.ends_with(&clamp)).count();
        assert!(clamps >= 2, "{kernel}: {clamps} slot clamps");
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
    // The transpose's tile traffic: one 128-bit shared load per read and mode (2 reads of 512
    // threads), 4 scalar stores per load.
    let t = body("tma_transpose");
    let loads = (TRANSPOSE_READS * SWIZZLE_MODES) as usize;
    assert_eq!(TRANSPOSE_READS, 2);
    assert_eq!(count_ops(t, "ld.shared.v4"), loads);
    assert_eq!(count_ops(t, "st.shared.b32") + count_ops(t, "st.shared.f32"), 4 * loads);
}

#[test]
fn ptxas_assembles_the_tma_kernels_without_spills_or_stack() {
    let report = ptxas::run(sm_90().text, "sm_90").expect("ptxas -arch=sm_90 (install it with `cargo xtask setup`)");
    for kernel in TMA_KERNELS {
        let k = report.iter().find(|k| k.kernel == kernel).unwrap_or_else(|| panic!("ptxas lacks {kernel}"));
        assert_eq!((k.spill_stores, k.spill_loads, k.stack_bytes, k.smem_bytes), (0, 0, 0, 0), "{kernel}");
        // One thread issues the copies: a handful of registers.
        assert!(k.regs <= 32, "{kernel}: {} registers", k.regs);
    }
}
