//! The distributed-shared-memory API on the host, where a cluster is one block (rank 0 of 1)
//! and its `.shared::cluster` addresses are offsets into the stand-in shared buffer: what the
//! cluster lesson's kernels do, each value checked; and the phases that do not compile
//! (`tests/ui/`; regenerate their `.stderr` with
//! `TRYBUILD=overwrite cargo test -p memlab-device-api --test cluster`).

use memlab_device_api::cluster::{Link, cluster_ctarank, cluster_nctarank};
use memlab_device_api::global::{GlobalIn, GlobalOut};
use memlab_device_api::kernel;

const WORDS: usize = 64;

kernel! {
    /// Fills the slice, publishes it, and reads it back locally and through the cluster window:
    /// `out[i] = local word i`, `out[WORDS + i] = remote word i`, then four words with the
    /// 16-byte loads.
    pub fn publish_and_read(block: Block, out: GlobalOut<u32>) {
        let mut out = out.slice(2 * WORDS + 8);
        block.in_cluster::<u32>(WORDS, |cluster, mut words| {
            for i in 0..WORDS {
                words.set(i, 3 * i as u32 + 1);
            }
            let words = cluster.publish(words);
            let own = words.remote(cluster_ctarank());
            for i in 0..WORDS {
                out.set(i, words.get(i));
                out.set(WORDS + i, own.get(i));
            }
            let (local4, remote4) = (words.get4(8), own.get4(8));
            for j in 0..4 {
                out.set(2 * WORDS + j, local4[j]);
                out.set(2 * WORDS + 4 + j, remote4[j]);
            }
        });
    }
}

kernel! {
    /// Writes the chain `chain` (byte offsets) as links through the cluster window, publishes
    /// it, and follows `steps` links from word 0: `out = [end byte offset]`.
    pub fn chase(block: Block, chain: GlobalIn<u32>, steps: u32, out: GlobalOut<u32>) {
        let (chain, mut out) = (chain.slice(WORDS), out.slice(1));
        block.in_cluster::<Link>(WORDS, |cluster, links| {
            let mut links = cluster.exchange(links);
            let mut target = links.remote_mut(0);
            for w in 0..WORDS {
                let link = target.link(chain.get(w));
                target.set(w, link);
            }
            let links = cluster.publish(links);
            let target = links.remote(0);
            let mut p = target.link(0);
            for _ in 0..steps {
                p = target.follow(p);
            }
            out.set(0, target.offset(p));
        });
    }
}

kernel! {
    /// Three double-buffered steps of `STAGE` words, element `i` of step `s` = `s * 100 + i`;
    /// the odd elements are gathered from rank 0 (this block) instead of written; `out` gets
    /// each step's sum of its stage.
    pub fn double_buffered(block: Block, out: GlobalOut<f32>) {
        const STAGE: usize = 8;
        let mut out = out.slice(3);
        block.in_cluster::<f32>(2 * STAGE, |cluster, slice| {
            let mut stages = cluster.double_buffer::<f32, STAGE>(slice);
            for s in 0..3 {
                for i in (0..STAGE).step_by(2) {
                    stages.set(i, (s * 100 + i) as f32);
                    stages.set(i + 1, (s * 100 + i + 1) as f32);
                }
                let mut published = cluster.step(stages);
                for i in (1..STAGE).step_by(2) {
                    published.gather(cluster_nctarank() - 1, i);
                }
                let stage = cluster.gathered(published);
                out.set(s, (0..STAGE).map(|i| stage.get(i)).sum());
                stages = stage.next();
            }
        });
    }
}

#[test]
fn a_published_slice_reads_back_what_was_written_locally_and_through_the_window() {
    let mut out = vec![0u32; 2 * WORDS + 8];
    unsafe { publish_and_read(out.as_mut_ptr()) };
    let expected: Vec<u32> = (0..WORDS as u32).map(|i| 3 * i + 1).collect();
    assert_eq!(out[..WORDS], expected);
    assert_eq!(out[WORDS..2 * WORDS], expected);
    assert_eq!(out[2 * WORDS..2 * WORDS + 4], expected[8..12]);
    assert_eq!(out[2 * WORDS + 4..], expected[8..12]);
}

#[test]
fn a_chase_follows_the_links_written_through_the_window() {
    // Word w links to word (w + 5) % WORDS: 7 steps from word 0 end at word 35.
    let chain: Vec<u32> = (0..WORDS as u32).map(|w| 4 * ((w + 5) % WORDS as u32)).collect();
    let mut out = [u32::MAX];
    unsafe { chase(chain.as_ptr(), 7, out.as_mut_ptr()) };
    assert_eq!(out[0], 4 * 35);
}

#[test]
fn a_double_buffer_gives_each_step_its_own_stage() {
    let mut out = [0.0f32; 3];
    unsafe { double_buffered(out.as_mut_ptr()) };
    // Stage s holds s * 100 + 0..8: 800 s + 28 (the gathers copy this block's own slots).
    assert_eq!(out, [28.0, 828.0, 1628.0]);
}

#[test]
fn remote_reads_before_the_cluster_barrier_and_after_the_cluster_do_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/remote_read_before_cluster_barrier.rs");
    t.compile_fail("tests/ui/cluster_view_outlives_the_cluster.rs");
}
