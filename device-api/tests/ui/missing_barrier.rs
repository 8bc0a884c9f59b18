// The race lesson's bug (kernels-gpu/src/race.rs) on the device API: the tiled matmul of
// kernels-gpu/src/matmul.rs without its second barrier. It does not compile: the loop carries
// Reading tiles into a step that writes them.
use memlab_device_api::global::{GlobalIn, GlobalOut};
use memlab_device_api::shared::SharedTile;
use memlab_device_api::kernel;

const T: usize = 32;

// Stand-ins for kernels-gpu's device.rs indices (`threadIdx`, `blockIdx`) on the host.
fn thread_idx() -> (usize, usize) {
    (0, 0)
}
fn block_idx() -> (usize, usize) {
    (0, 0)
}

kernel! {
    pub fn matmul_tiled_32_missing_barrier(
        block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32,
    ) {
        let (barrier, mut tiles) = block.carve::<(SharedTile<f32, T, T, T>, SharedTile<f32, T, T, T>)>();
        let ((tx, ty), (bx, by)) = (thread_idx(), block_idx());
        let (row, col) = (by * T + ty, bx * T + tx);
        let (m, n, k) = (m as usize, n as usize, k as usize);
        let (a, b, mut c) = (a.matrix(m, k), b.matrix(k, n), c.matrix(m, n));
        let (a_row, b_col) = (tiles.0.row(ty), tiles.1.col(tx));
        let mut acc = 0.0f32;
        let mut k0 = 0;
        while k0 < k {
            let (ka, kb) = (k0 + tx, k0 + ty);
            tiles.0.set(ty, tx, if row < m && ka < k { a.get(row, ka) } else { 0.0 });
            tiles.1.set(ty, tx, if kb < k && col < n { b.get(kb, col) } else { 0.0 });
            let (tile_a, tile_b) = barrier.sync(tiles);
            for i in 0..T {
                acc += a_row.get(&tile_a, i) * b_col.get(&tile_b, i);
            }
            // The missing barrier: the next step overwrites tiles other warps may still read.
            tiles = (tile_a, tile_b);
            k0 += T;
        }
        if row < m && col < n {
            c.set(row, col, acc);
        }
    }
}

fn main() {}
