// A row of tile A read through tile B: with the pair's slots (0 and 1) in their types, a line
// is read through its own tile only, so the phase that guards the read is the right tile's.
use memlab_device_api::global::GlobalOut;
use memlab_device_api::kernel;
use memlab_device_api::shared::SharedTile;

kernel! {
    pub fn row_of_a_through_b(block: Block, out: GlobalOut<f32>) {
        let (barrier, tiles) = block.carve::<(SharedTile<f32, 4, 4, 4>, SharedTile<f32, 4, 4, 4>)>();
        let a_row = tiles.0.row(0usize);
        let (_tile_a, tile_b) = barrier.sync(tiles);
        out.slice(1).set(0, a_row.get(&tile_b, 0));
    }
}

fn main() {}
