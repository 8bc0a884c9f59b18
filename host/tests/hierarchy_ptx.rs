//! The hierarchy lesson's kernels, checked in the PTX and with ptxas (no GPU): each probe
//! issues the load of the level it claims to time, the spill pair differs only in local
//! memory, and a register cap below `register_pressure`'s need makes ptxas spill.

use memlab::ptx::ptxas::{self, PtxasKernel};
use memlab::ptx::{self, count_ops, entry_body};
use memlab::reference::LOCAL_ARRAY_WORDS;
use memlab_contracts::hierarchy::{CONST_CHAIN_WORDS, LOCAL_CHAIN_WORDS, SM_CLOCK_CHAINS};

fn body<'a>(p: &'a ptx::Ptx, kernel: &str) -> &'a str {
    entry_body(p.text, kernel).unwrap_or_else(|| panic!("{} PTX lacks kernel {kernel}", p.arch))
}

/// ptxas's figures for `kernel`, assembled alone: the figures it has in the whole module, with or
/// without a register cap (`single_entry.rs`), in a fraction of the time.
fn ptxas_kernel(p: &ptx::Ptx, kernel: &str, options: &[&str]) -> PtxasKernel {
    let alone = ptx::only_entry(p.text, kernel).unwrap_or_else(|| panic!("{} PTX lacks kernel {kernel}", p.arch));
    let report = ptxas::run_with(&alone, p.arch, options).expect("ptxas (install it with `cargo xtask setup`)");
    report.into_iter().find(|k| k.kernel == kernel).unwrap_or_else(|| panic!("{kernel} not compiled"))
}

#[test]
fn each_probe_times_the_load_of_its_level_between_two_clock_reads() {
    let probes = [
        ("chase_global", "ld.global.u64"),
        ("chase_global_cg", "ld.global.cg.u64"),
        ("chase_shared", "ld.shared.u32"),
        ("chase_local", "ld.local.u32"),
        ("const_chase", "ld.const.u32"),
    ];
    for p in &ptx::ALL {
        for (kernel, load) in probes {
            let b = body(p, kernel);
            let (first_clock, last_clock) = (b.find("%clock64").unwrap(), b.rfind("%clock64").unwrap());
            assert!(first_clock < last_clock, "{}/{kernel}: one clock read", p.arch);
            assert!(b[first_clock..last_clock].contains(load), "{}/{kernel}: no {load} in the timed window", p.arch);
            assert!(b.contains("%globaltimer"), "{}/{kernel}", p.arch);
            // Every load of the chase is the one under test: one load kind per probe.
            for other in ["ld.global.u64", "ld.global.cg", "ld.shared.u32", "ld.local.u32", "ld.const.u32"] {
                if !load.starts_with(other) {
                    assert!(!b.contains(other), "{}/{kernel} also issues {other}", p.arch);
                }
            }
        }
        let reg = body(p, "register_chain");
        assert!(count_ops(reg, "fma.rn.f32") >= 1 && !reg.contains("ld.global"), "{}: register_chain", p.arch);
        assert!(body(p, "read_cg").contains("ld.global.cg.v4.u32"), "{}: read_cg", p.arch);
        let decl = format!(".const .align 4 .b32 memlab_const_chain[{CONST_CHAIN_WORDS}];");
        assert!(p.text.contains(&decl), "{}: constant chain declaration differs from {decl}", p.arch);
    }
}

#[test]
fn local_chase_keeps_its_chain_on_the_stack() {
    for p in &ptx::ALL {
        let k = ptxas_kernel(p, "chase_local", &[]);
        assert_eq!((k.stack_bytes, k.spill_stores), (4 * LOCAL_CHAIN_WORDS as u32, 0), "{}: {k:?}", p.arch);
    }
}

#[test]
fn the_spill_pair_differs_only_in_local_memory() {
    for p in &ptx::ALL {
        let constant = body(p, "local_array_constant_index");
        let runtime = body(p, "local_array_runtime_index");
        assert_eq!(count_ops(constant, "ld.local") + count_ops(constant, "st.local"), 0, "{}", p.arch);
        assert!(count_ops(runtime, "ld.local") >= LOCAL_ARRAY_WORDS, "{}: runtime-indexed reads", p.arch);
        assert!(count_ops(runtime, "st.local") >= LOCAL_ARRAY_WORDS, "{}: array stores", p.arch);
        // Same arithmetic: one FMA per element per round (LLVM unrolls the rounds of the
        // register version too, so it holds a multiple of 16).
        let (fc, fr) = (count_ops(constant, "fma.rn.f32"), count_ops(runtime, "fma.rn.f32"));
        assert!(fr == LOCAL_ARRAY_WORDS && fc > 0 && fc % LOCAL_ARRAY_WORDS == 0, "{}: {fc} vs {fr}", p.arch);
        let (c, r) =
            (ptxas_kernel(p, "local_array_constant_index", &[]), ptxas_kernel(p, "local_array_runtime_index", &[]));
        assert_eq!(c.stack_bytes, 0, "{}: {c:?}", p.arch);
        assert_eq!(r.stack_bytes, 4 * LOCAL_ARRAY_WORDS as u32, "{}: {r:?}", p.arch);
        // A stack array, not a spill: ptxas had registers enough.
        assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{}: {r:?}", p.arch);
    }
}

#[test]
fn a_register_cap_below_the_need_makes_register_pressure_spill() {
    for p in &ptx::ALL {
        let free = ptxas_kernel(p, "register_pressure", &["-maxrregcount=255"]);
        assert_eq!((free.spill_stores, free.stack_bytes), (0, 0), "{}: {free:?}", p.arch);
        let mut last_spill = 0;
        for cap in [128u32, 64, 32] {
            let k = ptxas_kernel(p, "register_pressure", &[&format!("-maxrregcount={cap}")]);
            assert!(k.regs <= cap, "{} cap {cap}: {k:?}", p.arch);
            assert!(k.spill_stores > last_spill && k.spill_loads > 0, "{} cap {cap}: {k:?}", p.arch);
            last_spill = k.spill_stores;
        }
    }
}

#[test]
fn the_clock_kernel_runs_its_fma_chains_between_two_clock_and_timer_reads() {
    for p in &ptx::ALL {
        let b = body(p, "sm_clock_under_load");
        assert_eq!((b.matches("%clock64").count(), b.matches("%globaltimer").count()), (2, 2), "{}", p.arch);
        let (first, last) = (b.find("%globaltimer").unwrap(), b.rfind("%clock64").unwrap());
        let window = &b[first..last];
        // Every FMA inside the window: one per chain per round, the rounds unrolled whole.
        let fmas = count_ops(window, "fma.rn.f32");
        assert!(fmas >= SM_CLOCK_CHAINS && fmas.is_multiple_of(SM_CLOCK_CHAINS), "{}: {fmas} FMAs", p.arch);
        assert_eq!(count_ops(b, "fma.rn.f32"), fmas, "{}: an FMA outside the timed window", p.arch);
        // Barriers on both sides, and nothing read from memory: the pipes under test are FP32.
        assert!(count_ops(b, "bar.sync") >= 2 && !b.contains("ld.global"), "{}", p.arch);
        let k = ptxas_kernel(p, "sm_clock_under_load", &[]);
        assert_eq!((k.stack_bytes, k.spill_stores, k.spill_loads), (0, 0, 0), "{}: {k:?}", p.arch);
    }
}
