//! Global-memory element loads of naive and shared-memory tiled matrix
//! multiplication, `C[M x N] = A[M x K] * B[K x N]` (row-major).
//!
//! Counting rule: one count per element load a thread issues to global
//! memory and that falls inside its matrix. Guarded loads that the bounds
//! check turns off (the padding of edge tiles, which kernels fill with 0
//! instead of reading) count zero. Caches are ignored: a load counts even if
//! L1/L2 would serve it, because this measures what the kernel asks for.
//!
//! - Naive: one thread per element of C, each reading a row of A and a
//!   column of B, `K` elements each: `2 * M * N * K` loads.
//! - Tiled with `T x T` blocks: a `ceil(M/T) x ceil(N/T)` grid; in each of
//!   `ceil(K/T)` steps a block loads its `T x T` tile of A and of B into
//!   shared memory (one element per thread per matrix). Every in-bounds
//!   element of A is loaded once by each of the `ceil(N/T)` block columns,
//!   and every element of B once by each of the `ceil(M/T)` block rows:
//!   `M * K * ceil(N/T) + K * N * ceil(M/T)` loads. When `T` divides `M`
//!   and `N` this is the naive count divided by `T`: each loaded value is
//!   reused `T` times from shared memory.
//! - Tiled with the tiles shared across a thread-block cluster of
//!   `cx x cy` blocks (`matmul_dsmem_32`): the grid is rounded up to whole
//!   clusters, `gx = cx * ceil(ceil(N/T) / cx)` by `gy = cy * ceil(ceil(M/T) / cy)`
//!   blocks. The `cx` blocks of a cluster row need the same A tile, so
//!   together they load it once (each its rows `r` with `r % cx` equal to
//!   its x in the cluster) and copy the rest from each other's shared memory;
//!   likewise the `cy` blocks of a cluster column with B:
//!   `M*K*(gx/cx) + K*N*(gy/cy)` loads. The blocks the rounding adds load
//!   their share of A (their rows are in bounds), none of B.

/// Matrix sizes for `C[M x N] = A[M x K] * B[K x N]`, in elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatmulShape {
    /// Rows of A and C.
    pub m: u64,
    /// Columns of B and C.
    pub n: u64,
    /// Columns of A, rows of B (the reduction length).
    pub k: u64,
}

impl MatmulShape {
    /// The shape `M x N` by `K`.
    pub const fn new(m: u64, n: u64, k: u64) -> Self {
        MatmulShape { m, n, k }
    }

    /// A square problem: all three sizes `size`.
    pub const fn square(size: u64) -> Self {
        MatmulShape::new(size, size, size)
    }

    /// Floating-point operations: one multiply and one add per term,
    /// `2 * M * N * K` FLOP.
    pub const fn flops(&self) -> u64 {
        2 * self.m * self.n * self.k
    }
}

/// Global element loads of the naive kernel: `2 * M * N * K`.
pub const fn naive_global_loads(shape: MatmulShape) -> u64 {
    2 * shape.m * shape.n * shape.k
}

/// Global element loads of the tiled kernel with `tile x tile` blocks,
/// counting in-bounds loads only: `M*K*ceil(N/T) + K*N*ceil(M/T)`.
///
/// # Panics
/// If `tile` is 0.
pub const fn tiled_global_loads(shape: MatmulShape, tile: u64) -> u64 {
    assert!(tile > 0, "tile width must be at least 1");
    shape.m * shape.k * shape.n.div_ceil(tile) + shape.k * shape.n * shape.m.div_ceil(tile)
}

/// [`tiled_global_loads`] for `bm x bn` tiles of `C`: each block reads a `bm x K` strip of `A`
/// and a `K x bn` strip of `B`.
///
/// # Panics
/// If a tile edge is 0.
pub const fn block_tiled_global_loads(shape: MatmulShape, (bm, bn): (u64, u64)) -> u64 {
    assert!(bm > 0 && bn > 0, "tile edges must be at least 1");
    shape.m * shape.k * shape.n.div_ceil(bn) + shape.k * shape.n * shape.m.div_ceil(bm)
}

/// Blocks of a grid of `tiles` tiles along one axis, rounded up to whole clusters of
/// `cluster` blocks.
const fn whole_clusters(tiles: u64, cluster: u64) -> u64 {
    tiles.div_ceil(cluster) * cluster
}

/// Global element loads of the tiled kernel whose `cx x cy` clusters share their tiles
/// (see the module's counting rule): `M*K*(gx/cx) + K*N*(gy/cy)`.
///
/// # Panics
/// If `tile`, `cx` or `cy` is 0.
pub const fn cluster_tiled_global_loads(shape: MatmulShape, tile: u64, (cx, cy): (u64, u64)) -> u64 {
    assert!(tile > 0 && cx > 0 && cy > 0, "tile and cluster must be at least 1");
    let gx = whole_clusters(shape.n.div_ceil(tile), cx);
    let gy = whole_clusters(shape.m.div_ceil(tile), cy);
    shape.m * shape.k * (gx / cx) + shape.k * shape.n * (gy / cy)
}

/// Counts the cluster-shared kernel's loads by walking its loops: for each block `(bx, by)` of
/// the grid rounded up to whole clusters, each step and each thread `(ty, tx)`, the thread
/// loads `A[by*T + ty][s*T + tx]` when `ty % cx == bx % cx` and `B[s*T + ty][bx*T + tx]` when
/// `ty % cy == by % cy`, each when in bounds. For checking [`cluster_tiled_global_loads`].
///
/// # Panics
/// If `tile`, `cx` or `cy` is 0.
pub fn simulate_cluster_tiled_loads(shape: MatmulShape, tile: u64, (cx, cy): (u64, u64)) -> u64 {
    assert!(tile > 0 && cx > 0 && cy > 0, "tile and cluster must be at least 1");
    let MatmulShape { m, n, k } = shape;
    let mut loads = 0;
    for by in 0..whole_clusters(m.div_ceil(tile), cy) {
        for bx in 0..whole_clusters(n.div_ceil(tile), cx) {
            for s in 0..k.div_ceil(tile) {
                for ty in 0..tile {
                    for tx in 0..tile {
                        let (row, col, ka, kb) = (by * tile + ty, bx * tile + tx, s * tile + tx, s * tile + ty);
                        if ty % cx == bx % cx && row < m && ka < k {
                            loads += 1;
                        }
                        if ty % cy == by % cy && kb < k && col < n {
                            loads += 1;
                        }
                    }
                }
            }
        }
    }
    loads
}

/// Naive loads / tiled loads: how many times less global traffic tiling
/// issues (exactly `tile` when it divides `M` and `N`).
pub fn traffic_ratio(shape: MatmulShape, tile: u64) -> f64 {
    naive_global_loads(shape) as f64 / tiled_global_loads(shape, tile) as f64
}

/// Counts the naive kernel's loads by walking its loops: each of the
/// `M * N` threads reads `A[i][kk]` and `B[kk][j]` for every `kk < K`.
/// For checking [`naive_global_loads`] on small sizes.
pub fn simulate_naive_loads(shape: MatmulShape) -> u64 {
    let mut loads = 0;
    for _i in 0..shape.m {
        for _j in 0..shape.n {
            for _kk in 0..shape.k {
                loads += 2; // A[i][kk] and B[kk][j], always in bounds
            }
        }
    }
    loads
}

/// Counts the tiled kernel's loads by walking its loops: for each block
/// `(bi, bj)` of the rounded-up grid, each step `s < ceil(K/T)`, and each
/// thread `(ty, tx)` of the `T x T` block, the thread loads
/// `A[bi*T + ty][s*T + tx]` and `B[s*T + ty][bj*T + tx]` when in bounds.
/// For checking [`tiled_global_loads`] on small sizes.
///
/// # Panics
/// If `tile` is 0.
pub fn simulate_tiled_loads(shape: MatmulShape, tile: u64) -> u64 {
    assert!(tile > 0, "tile width must be at least 1");
    let MatmulShape { m, n, k } = shape;
    let mut loads = 0;
    for bi in 0..m.div_ceil(tile) {
        for bj in 0..n.div_ceil(tile) {
            for s in 0..k.div_ceil(tile) {
                for ty in 0..tile {
                    for tx in 0..tile {
                        let (a_row, a_col) = (bi * tile + ty, s * tile + tx);
                        if a_row < m && a_col < k {
                            loads += 1;
                        }
                        let (b_row, b_col) = (s * tile + ty, bj * tile + tx);
                        if b_row < k && b_col < n {
                            loads += 1;
                        }
                    }
                }
            }
        }
    }
    loads
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ex8_1024_cubed_with_16_tiles() {
        let shape = MatmulShape::square(1024);
        assert_eq!(naive_global_loads(shape), 2_147_483_648);
        assert_eq!(tiled_global_loads(shape, 16), 134_217_728);
        assert_eq!(naive_global_loads(shape), 16 * tiled_global_loads(shape, 16));
        assert_eq!(traffic_ratio(shape, 16), 16.0);
        // The seed's per-block accounting: 64 steps x 512 loads x 4096 blocks.
        assert_eq!(64 * 512 * 4096, tiled_global_loads(shape, 16));
    }

    #[test]
    fn ratio_is_tile_width_when_it_divides() {
        for t in [1, 2, 4, 8, 16, 32] {
            assert_eq!(traffic_ratio(MatmulShape::new(64, 128, 96), t), t as f64);
        }
    }

    #[test]
    fn non_multiples_round_tiles_up_and_count_in_bounds_only() {
        // M=N=K=17, T=16: 2 block rows and columns, edge tiles mostly empty.
        let shape = MatmulShape::square(17);
        let tiled = tiled_global_loads(shape, 16);
        assert_eq!(tiled, 17 * 17 * 2 + 17 * 17 * 2);
        assert_eq!(naive_global_loads(shape), 2 * 17 * 17 * 17);
        // Ratio 17/2 = 8.5: the edge blocks reload whole rows of A and B
        // for very little reuse.
        assert_eq!(traffic_ratio(shape, 16), 8.5);
    }

    #[test]
    fn formulas_match_brute_force_on_odd_sizes() {
        let shapes = [
            MatmulShape::new(1, 1, 1),
            MatmulShape::new(5, 7, 3),
            MatmulShape::new(13, 9, 11),
            MatmulShape::new(17, 17, 17),
            MatmulShape::new(33, 20, 7),
            MatmulShape::new(8, 8, 8),
        ];
        for shape in shapes {
            assert_eq!(simulate_naive_loads(shape), naive_global_loads(shape));
            for tile in [1, 2, 3, 4, 5, 8, 16] {
                assert_eq!(simulate_tiled_loads(shape, tile), tiled_global_loads(shape, tile), "{shape:?} tile {tile}");
            }
        }
    }

    #[test]
    fn cluster_sharing_divides_the_tiled_loads_by_the_cluster_extent() {
        let shape = MatmulShape::square(4096);
        let tiled = tiled_global_loads(shape, 32);
        assert_eq!(cluster_tiled_global_loads(shape, 32, (1, 1)), tiled);
        // A shared by 2 blocks of a row, B by 2 of a column: half the loads.
        assert_eq!(cluster_tiled_global_loads(shape, 32, (2, 2)), tiled / 2);
        assert_eq!(cluster_tiled_global_loads(shape, 32, (4, 4)), tiled / 4);
        // A 2x1 cluster shares A only: A's half of the traffic halves.
        assert_eq!(cluster_tiled_global_loads(shape, 32, (2, 1)), tiled / 4 * 3);
        // The counting run's shape (67x45x33): grids 2x3 -> 4x4 for 4x4 clusters.
        let count = MatmulShape::new(67, 45, 33);
        assert_eq!(cluster_tiled_global_loads(count, 32, (4, 4)), 67 * 33 + 33 * 45);
        assert_eq!(cluster_tiled_global_loads(count, 32, (2, 1)), 67 * 33 + 33 * 45 * 3);
    }

    #[test]
    fn cluster_formula_matches_brute_force_on_odd_sizes() {
        for shape in [MatmulShape::new(1, 1, 1), MatmulShape::new(67, 45, 33), MatmulShape::new(13, 40, 9)] {
            for tile in [4, 8, 32] {
                for cluster in [(1, 1), (2, 1), (2, 2), (4, 2), (4, 4), (3, 5)] {
                    assert_eq!(
                        simulate_cluster_tiled_loads(shape, tile, cluster),
                        cluster_tiled_global_loads(shape, tile, cluster),
                        "{shape:?} tile {tile} cluster {cluster:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn flops_count_multiply_and_add() {
        assert_eq!(MatmulShape::new(2, 3, 4).flops(), 48);
    }
}
