//! Every typed launch against the PTX it launches: each entry's parameter list on the host
//! (generated from the kernel's signature in `kernels-gpu/src`) must match the `.param` list of
//! the same `.entry` in every embedded PTX: count, sizes, alignment and kind.

use memlab::gpu::launch::Param;
use memlab::{launches, ptx};

/// Every embedded PTX, the load-counting builds included.
fn all_ptx() -> impl Iterator<Item = &'static ptx::Ptx> {
    ptx::ALL.iter().chain([&ptx::COUNTING, &ptx::COUNTING_SM90])
}

#[test]
fn every_typed_launch_matches_its_entry_in_every_ptx() {
    let (mut checked, mut in_ptx) = (0, 0);
    for p in all_ptx() {
        let names = ptx::kernel_names(p.text);
        for entry in launches::ENTRIES.iter() {
            if !names.contains(&entry.name) {
                // Rung 7 (`cp.async`) is compiled for sm_80 and up only, the cluster and TMA
                // kernels for sm_90 and up: a newer PTX has them.
                assert!(ptx::needs_newer(p, entry.name).is_some(), "{} PTX lacks `{}`", p.arch, entry.name);
                continue;
            }
            if let Err(e) = ptx::check_params(p.text, entry.name, entry.params) {
                panic!("{} PTX: {e}", p.arch);
            }
            checked += 1;
        }
        in_ptx += names.len();
        for name in names {
            assert!(launches::ENTRIES.iter().any(|e| e.name == name), "{}: `{name}` has no typed launch", p.arch);
        }
    }
    // The sm_90a PTX holds the tensor ladder alone, each entry with its typed launch.
    let names = ptx::kernel_names(ptx::TENSOR.text);
    assert_eq!(names, memlab_contracts::tensor::RUNGS.iter().map(|r| r.name).collect::<Vec<_>>());
    for name in names {
        let entry = launches::ENTRIES.iter().find(|e| e.name == name).expect("a typed launch");
        if let Err(e) = ptx::check_params(ptx::TENSOR.text, name, entry.params) {
            panic!("sm_90a PTX: {e}");
        }
    }
    // Every entry of every PTX was checked (27 in the sm_80 and sm_90 PTX when this was written).
    assert_eq!(checked, in_ptx);
    assert!(checked >= 27 * 2 + 26 * 2, "{checked}");
}

#[test]
fn every_entry_has_one_typed_launch() {
    let mut names: Vec<&str> = launches::ENTRIES.iter().map(|e| e.name).collect();
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), count, "an entry declared twice");
}

#[test]
fn floats_are_passed_as_f32_parameters() {
    let chain = launches::ENTRIES.iter().find(|e| e.name == "register_chain").unwrap();
    assert_eq!(chain.params, [Param::F32, Param::F32, Param::F32, Param::U32, Param::Ptr]);
    for p in all_ptx() {
        let params = ptx::entry_params(p.text, "register_chain").unwrap();
        assert!(params[..3].iter().all(|q| q.float && q.size == 4 && q.decl == ".param .f32"), "{}", p.arch);
        // The same list with the floats bit-cast to u32, as the host once passed them: caught.
        let bitcast = [Param::U32, Param::U32, Param::U32, Param::U32, Param::Ptr];
        let err = ptx::check_params(p.text, "register_chain", &bitcast).unwrap_err();
        assert!(err.starts_with("`register_chain` parameter 0: the PTX declares `.param .f32`"), "{err}");
    }
}

#[test]
fn a_missing_or_extra_argument_is_caught() {
    let p = &ptx::ALL[2];
    let copy = [Param::Ptr, Param::Ptr, Param::U32, Param::U32];
    assert_eq!(ptx::check_params(p.text, "copy", &copy), Ok(()));
    let err = ptx::check_params(p.text, "copy", &copy[..3]).unwrap_err();
    assert_eq!(
        err,
        "`copy` parameter 3: the PTX declares `.param .u32` (4 bytes, align 4), the host passes nothing (4 PTX parameters, 3 host arguments)"
    );
    let extra = [&copy[..], &[Param::U32]].concat();
    assert!(
        ptx::check_params(p.text, "copy", &extra)
            .unwrap_err()
            .starts_with("`copy` parameter 4: the PTX declares nothing")
    );
    assert_eq!(ptx::check_params(p.text, "nosuch", &copy), Err("the PTX has no entry `nosuch`".into()));
}
