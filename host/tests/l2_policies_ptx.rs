//! The L2 lesson's policy kernels (`kernels-gpu/src/l2_policies.rs`) in the PTX, the SASS and
//! ptxas (no GPU): the 16-byte L2-only loads each claims, the `createpolicy` and
//! `.L2::cache_hint` of the evict-first stream, and where each kernel is compiled.

use memlab::ptx::inspect;
use memlab::ptx::ptxas;
use memlab::ptx::{self, count_ops, entry_body};
use memlab_contracts::l2::CHUNK_LOADS;

fn body<'a>(p: &'a ptx::Ptx, kernel: &str) -> &'a str {
    entry_body(p.text, kernel).unwrap_or_else(|| panic!("{} PTX lacks kernel {kernel}", p.arch))
}

#[test]
fn the_chunk_reader_issues_a_chunks_four_l2_loads_together_in_every_ptx() {
    for p in &ptx::ALL {
        let b = body(p, "read_cg_chunks");
        // Four 16-byte loads that skip L1 per chunk, no other global load, no generic load.
        assert_eq!(count_ops(b, "ld.global.cg.v4.u32") % CHUNK_LOADS as usize, 0, "{}", p.arch);
        assert!(count_ops(b, "ld.global.cg.v4.u32") >= CHUNK_LOADS as usize, "{}", p.arch);
        assert_eq!(count_ops(b, "ld.global"), count_ops(b, "ld.global.cg.v4.u32"), "{}", p.arch);
        assert_eq!(count_ops(b, "ld.") - count_ops(b, "ld.global") - count_ops(b, "ld.param"), 0, "{}", p.arch);
        assert_eq!(count_ops(b, "st.global.b32") + count_ops(b, "st.global.u32"), 1, "{}: one sum per thread", p.arch);
        assert!(!b.contains(".local"), "{}: no local memory", p.arch);
    }
    // In SASS every global load stays a 128-bit one: a chunk's loads each fetch 16 bytes.
    let p = ptx::ALL.iter().find(|p| p.arch == "sm_90").unwrap();
    let sass = inspect::sass(p.text, p.arch, false).expect("ptxas and nvdisasm (cargo xtask setup)");
    let loads: Vec<&str> =
        sass["read_cg_chunks"].iter().filter(|i| i.base() == "LDG").map(|i| i.opcode.as_str()).collect();
    assert!(loads.len() >= CHUNK_LOADS as usize, "{loads:?}");
    assert!(loads.iter().all(|o| o.contains(".128")), "{loads:?}");
}

#[test]
fn the_evict_first_stream_makes_its_policy_once_and_hints_only_the_streamed_loads() {
    let p90 = ptx::ALL.iter().find(|p| p.arch == "sm_90").unwrap();
    let b = body(p90, "hot_stream_read_evict_first");
    assert_eq!(count_ops(b, "createpolicy.fractional.L2::evict_first.b64"), 1);
    // The policy is made before the loop, not per load.
    assert!(b.find("createpolicy").unwrap() < b.find("ld.global").unwrap());
    assert_eq!(count_ops(b, "ld.global.cg.L2::cache_hint.v4.u32"), 1, "the streamed load");
    assert_eq!(count_ops(b, "ld.global.cg.v4.u32"), 1, "the hot load, no hint");
    assert_eq!(count_ops(b, "ld.global"), 2);
    assert_eq!(count_ops(b, "ld.") - count_ops(b, "ld.global") - count_ops(b, "ld.param"), 0, "no generic load");
    // The hinted load carries the policy's register.
    let policy = b.lines().find(|l| l.contains("createpolicy")).unwrap().split_whitespace().nth(1).unwrap();
    let policy = policy.trim_end_matches(',');
    assert!(b.lines().any(|l| l.contains("L2::cache_hint") && l.contains(policy)), "{policy}");
    // ptxas keeps it in registers (no stack, no spills, no static shared memory).
    let k = ptxas::run(p90.text, "sm_90")
        .expect("ptxas (cargo xtask setup)")
        .into_iter()
        .find(|k| k.kernel == "hot_stream_read_evict_first")
        .unwrap();
    assert_eq!((k.smem_bytes, k.stack_bytes, k.spill_stores), (0, 0, 0), "{k:?}");
    // The sm_70 and sm_80 PTX leave it out (PTX ISA 7.0 has no createpolicy) and say why.
    for p in ptx::ALL.iter().filter(|p| p.arch != "sm_90") {
        assert!(entry_body(p.text, "hot_stream_read_evict_first").is_none(), "{}", p.arch);
        let why = ptx::needs_newer(p, "hot_stream_read_evict_first").unwrap();
        assert!(
            why.contains("needs cc 9.0") && why.ends_with(&format!("which cc {}.{} loads", p.cc.0, p.cc.1)),
            "{why}"
        );
        assert!(why.contains("it uses createpolicy"), "{why}");
    }
}
