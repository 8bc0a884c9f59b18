// A remote read before the cluster barrier that publishes the peer's writes: the peer may not
// have started, and its writes are not visible. It does not compile: a Writing slice has no
// `remote`; only `Cluster::publish` (barrier.cluster) gives one.
use memlab_device_api::global::GlobalOut;
use memlab_device_api::kernel;

kernel! {
    pub fn read_the_next_block_unpublished(block: Block, out: GlobalOut<u32>) {
        let mut out = out.slice(1);
        block.in_cluster::<u32>(32, |_cluster, mut words| {
            words.set(0, 1);
            out.set(0, words.remote(1).get(0));
        });
    }
}

fn main() {}
