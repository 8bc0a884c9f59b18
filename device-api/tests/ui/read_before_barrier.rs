// A read-after-write race: reading a tile in the phase that writes it, before the barrier that
// publishes the other threads' writes. It does not compile: a Writing tile has no `get`.
use memlab_device_api::global::GlobalOut;
use memlab_device_api::shared::SharedTile;
use memlab_device_api::kernel;

kernel! {
    pub fn reverse_in_block(block: Block, out: GlobalOut<f32>) {
        let (_barrier, mut tile) = block.carve::<SharedTile<f32, 1, 32, 32>>();
        let mut out = out.slice(32);
        tile.set(0, 0, 1.0);
        out.set(0, tile.get(0, 31));
    }
}

fn main() {}
