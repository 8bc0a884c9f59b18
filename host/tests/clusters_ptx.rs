//! What the clusters lesson claims about its kernels' PTX, checked without a GPU: they exist in
//! the sm_90 PTX only, reach other blocks' shared memory with `mapa` and `ld`/`st` in the
//! `.shared::cluster` state space, synchronise the cluster with `barrier.cluster`, never touch
//! shared memory through a generic address, and assemble for sm_90 without spills.

use memlab::ptx::inspect::ptx_counts;
use memlab::ptx::ptxas;
use memlab::ptx::{self, count_ops, entry_body};

const KERNELS: [&str; 4] = ["chase_dsmem", "cluster_shared_read", "cluster_barrier", "matmul_dsmem_32"];

fn sm90() -> &'static ptx::Ptx {
    ptx::ALL.iter().find(|p| p.arch == "sm_90").unwrap()
}

fn body(p: &'static ptx::Ptx, kernel: &str) -> &'static str {
    entry_body(p.text, kernel).unwrap_or_else(|| panic!("{} PTX lacks {kernel}", p.arch))
}

#[test]
fn cluster_kernels_are_in_the_sm_90_ptx_only() {
    for p in ptx::ALL.iter().chain([&ptx::COUNTING]) {
        let names = ptx::kernel_names(p.text);
        for kernel in KERNELS {
            assert_eq!(names.contains(&kernel), p.cc >= (9, 0), "{}/{kernel}", p.arch);
        }
        if p.cc < (9, 0) {
            for op in ["mapa", "barrier.cluster", "shared::cluster", "%cluster"] {
                assert!(!p.text.contains(op), "{} PTX has {op}", p.arch);
            }
        }
    }
    // PTX ISA 7.8 is the first with clusters.
    let version = sm90().text.lines().find_map(|l| l.trim().strip_prefix(".version ")).expect(".version");
    let (major, minor) = version.split_once('.').expect("major.minor");
    assert!((major.parse::<u32>().unwrap(), minor.parse::<u32>().unwrap()) >= (7, 8), "PTX ISA {version}");
    assert!(ptx::kernel_names(ptx::COUNTING_SM90.text).contains(&"matmul_dsmem_32"));
}

#[test]
fn remote_accesses_go_through_mapa_and_the_shared_cluster_state_space() {
    let p = sm90();
    // (kernel, mapa, ld.shared::cluster, st.shared::cluster) as the lesson describes them.
    let chase = body(p, "chase_dsmem");
    assert_eq!(count_ops(chase, "mapa.shared::cluster.u32"), 1);
    assert_eq!(count_ops(chase, "st.shared::cluster.u32"), 1, "the chain written into the target");
    assert!(count_ops(chase, "ld.shared::cluster.u32") >= 2, "the timed chase");
    assert_eq!(count_ops(chase, "ld.shared.") + count_ops(chase, "st.shared."), 0, "all through the cluster window");
    let read = body(p, "cluster_shared_read");
    assert_eq!(count_ops(read, "mapa.shared::cluster.u32"), 1, "one peer per block");
    // READ_UNROLL loads in flight on each path: remote and own.
    assert_eq!(count_ops(read, "ld.shared::cluster.v4.u32"), 8);
    assert_eq!(count_ops(read, "ld.shared.v4.u32"), 8);
    let matmul = body(p, "matmul_dsmem_32");
    assert_eq!(count_ops(matmul, "mapa.shared::cluster.u32"), 2, "the A and the B rows of other blocks");
    assert_eq!(count_ops(matmul, "ld.shared::cluster.f32"), 2);
    assert_eq!(count_ops(matmul, "ld.global"), 2, "each block loads only its share of A and B");
    assert_eq!(count_ops(matmul, "fma.rn.f32"), 32, "32 FMAs per step from the local tiles");
    assert!(count_ops(matmul, "ld.shared.f32") + count_ops(matmul, "ld.shared.b32") >= 64);
    for kernel in KERNELS {
        let b = body(p, kernel);
        // No generic ld/st: every access names its state space (a generic pointer into
        // shared memory would hide the level the lesson is about).
        assert_eq!(ptx_counts(b).generic, 0, "{kernel}: a generic ld/st");
        assert!(!b.contains("call"), "{kernel}: a call (a panic path)");
        assert!(!b.contains(".local"), "{kernel}: local memory");
    }
}

#[test]
fn the_cluster_barrier_is_split_arrive_and_wait_with_release_and_acquire_by_default() {
    let p = sm90();
    for kernel in KERNELS {
        let b = body(p, kernel);
        let (arrive, wait) = (count_ops(b, "barrier.cluster.arrive"), count_ops(b, "barrier.cluster.wait"));
        assert!(arrive > 0 && arrive == wait, "{kernel}: {arrive} arrives, {wait} waits");
        // Neither `.relaxed` (no release) nor `.aligned` (all threads of a warp together).
        assert!(
            !b.contains("barrier.cluster.arrive.relaxed") && !b.contains("barrier.cluster.arrive.aligned"),
            "{kernel}"
        );
    }
    for (kernel, reg) in [
        ("cluster_barrier", "%clusterid.x"),
        ("cluster_barrier", "%cluster_nctarank"),
        ("matmul_dsmem_32", "%cluster_nctaid.y"),
    ] {
        assert!(body(p, kernel).contains(reg), "{kernel} reads {reg}");
    }
}

#[test]
fn ptxas_assembles_the_cluster_kernels_without_spills() {
    let report = ptxas::run(sm90().text, "sm_90").expect("ptxas (run `cargo xtask setup`)");
    // (kernel, most registers): measured with CUDA 13's ptxas, room left for other versions.
    for (kernel, most) in
        [("chase_dsmem", 40), ("cluster_shared_read", 40), ("cluster_barrier", 24), ("matmul_dsmem_32", 64)]
    {
        let k = report.iter().find(|k| k.kernel == kernel).unwrap_or_else(|| panic!("ptxas lacks {kernel}"));
        assert_eq!((k.stack_bytes, k.spill_stores, k.spill_loads, k.smem_bytes), (0, 0, 0, 0), "{kernel}: {k:?}");
        assert!(k.regs > 0 && k.regs <= most, "{kernel}: {} registers", k.regs);
    }
    // matmul_dsmem_32's 1024 threads need at most 64 registers each to fit one block in the
    // 65536 registers of an SM.
    let counting = ptxas::run(ptx::COUNTING_SM90.text, "sm_90").expect("ptxas");
    assert!(counting.iter().any(|k| k.kernel == "matmul_dsmem_32"));
}

#[test]
fn the_counting_build_counts_each_share_of_a_and_b() {
    let counting = entry_body(ptx::COUNTING_SM90.text, "matmul_dsmem_32").unwrap();
    let loads = count_ops(counting, "ld.global");
    assert_eq!(loads, 2);
    assert_eq!(counting.matches("atom.global.add.u64").count(), loads);
    assert!(!body(sm90(), "matmul_dsmem_32").contains("atom."), "counting left in the timed build");
}
