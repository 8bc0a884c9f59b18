// A published slice kept past `in_cluster`'s last cluster barrier, after which its peers may
// have exited and freed their shared memory. It does not compile: the phases that reach other
// blocks carry the closure's own lifetime.
use memlab_device_api::global::GlobalOut;
use memlab_device_api::kernel;

kernel! {
    pub fn read_the_next_block_after_the_cluster(block: Block, out: GlobalOut<u32>) {
        let mut out = out.slice(1);
        let mut kept = None;
        block.in_cluster::<u32>(32, |cluster, words| {
            kept = Some(cluster.publish(words));
        });
        out.set(0, kept.unwrap().remote(1).get(0));
    }
}

fn main() {}
