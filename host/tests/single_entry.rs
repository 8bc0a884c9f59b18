//! One kernel out of an embedded PTX (`ptx::only_entry`), as the register-cap sweeps load it:
//! the text holds that entry alone, and ptxas compiles it to the figures it has in the whole
//! module (registers, stack, spills, shared bytes), capped or not.

use memlab::ptx::ptxas;
use memlab::ptx::{self, kernel_names, only_entry};

/// The kernels the sweeps load alone, and one with dynamic shared memory (the module's
/// `.extern .shared` declaration must come along).
const KERNELS: [&str; 4] =
    ["register_pressure", "local_array_runtime_index", "local_array_constant_index", "transpose_padded"];

#[test]
fn one_kernel_compiles_as_it_does_in_the_whole_module() {
    for p in ptx::ALL.iter().filter(|p| ["sm_70", "sm_90"].contains(&p.arch)) {
        for options in [&[][..], &["-maxrregcount=64"][..]] {
            let whole = ptxas::run_with(p.text, p.arch, options).expect("ptxas (cargo xtask setup installs it)");
            for kernel in KERNELS {
                let text = only_entry(p.text, kernel).unwrap_or_else(|| panic!("{} PTX has {kernel}", p.arch));
                assert_eq!(kernel_names(&text), [kernel], "{}: one entry", p.arch);
                assert_eq!(
                    text.lines().find(|l| l.starts_with(".version")),
                    p.text.lines().find(|l| l.starts_with(".version"))
                );
                let alone = ptxas::run_with(&text, p.arch, options).unwrap_or_else(|e| panic!("{kernel}: {e:#}"));
                let want = whole.iter().find(|k| k.kernel == kernel).unwrap();
                assert_eq!(alone.len(), 1);
                assert_eq!(&alone[0], want, "{} {kernel} {options:?}", p.arch);
            }
        }
    }
}

#[test]
fn a_kernel_not_in_the_ptx_gives_none() {
    assert_eq!(only_entry(ptx::ALL[0].text, "no_such_kernel"), None);
    // A name that only prefixes an entry's is not that entry.
    assert_eq!(only_entry(ptx::ALL[0].text, "transpose"), None);
}

/// The load-counting matmuls, loaded without the rest of their build (`matmul` and `clusters`
/// demos): each compiles as in the whole module, and the counter they add to comes along.
#[test]
fn the_counting_kernels_compile_alone_as_in_their_build() {
    let sets: [(&ptx::Ptx, &[&str]); 2] = [
        (&ptx::COUNTING, &["matmul_naive", "matmul_tiled_16", "matmul_tiled_32"]),
        (&ptx::COUNTING_SM90, &["matmul_dsmem_32"]),
    ];
    for (p, kernels) in sets {
        let text = ptx::only_entries(p.text, kernels).unwrap();
        assert_eq!(kernel_names(&text), kernels);
        assert!(text.contains(".visible .global .align 8 .b8 GLOBAL_LOADS[8];"), "{}", p.arch);
        let whole = ptxas::run_with(p.text, p.arch, &[]).expect("ptxas (cargo xtask setup installs it)");
        let alone = ptxas::run_with(&text, p.arch, &[]).unwrap_or_else(|e| panic!("{kernels:?}: {e:#}"));
        assert_eq!(alone.len(), kernels.len());
        for k in &alone {
            assert_eq!(Some(k), whole.iter().find(|w| w.kernel == k.kernel), "{} {}", p.arch, k.kernel);
        }
    }
    assert_eq!(ptx::only_entries(ptx::COUNTING.text, &["matmul_naive", "no_such_kernel"]), None);
}
