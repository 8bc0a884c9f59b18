//! Thread-block clusters and distributed shared memory (DSMEM): on cc 9.0 the blocks of a
//! cluster run at once on the SMs of one GPC, and each can read and write the others' shared
//! memory (CUDA C++ Programming Guide, "Thread Block Clusters", "Distributed Shared Memory").
//!
//! Four kernels: a dependent-load chain in another block's shared memory (`chase_dsmem`, the
//! latency), 16-byte reads of a peer's or the own shared memory on every SM
//! (`cluster_shared_read`, the bandwidth), the cluster-wide barrier (`cluster_barrier`), and a
//! tiled matmul whose cluster shares its `A` and `B` tiles through DSMEM (`matmul_dsmem_32`,
//! global loads fall by the cluster's extent). Every launch is a cluster launch
//! (`cuLaunchKernelEx` with a cluster-dimension attribute); the grid is a multiple of the
//! cluster. The instructions are PTX ISA 7.8 / sm_90, so this module is compiled into the
//! sm_90 PTX only.
//!
//! Written on the device API's [`cluster`] module: a block's shared memory is a
//! `ClusterSlice` whose phase says who may touch it, and only a cluster barrier moves it into a
//! phase that reaches other blocks (`mapa`, `ld`/`st.shared::cluster`), so a remote read before
//! the barrier that publishes the peer's writes does not compile.

use memlab_contracts::clusters::{BARRIER_RECORD_WORDS, DSMEM_TILE, READ_UNROLL, READ_VECTORS, read_word};
use memlab_contracts::hierarchy::RECORD_WORDS;
use memlab_device_api::global::{ReadWrite, Slice};

use crate::device::cluster::{
    Link, cluster_ctaid_x, cluster_ctaid_y, cluster_ctarank, cluster_id_x, cluster_nctaid_x, cluster_nctaid_y,
    cluster_nctarank, cluster_sync,
};
use crate::device::probe::{clock64, globaltimer};
use crate::device::{
    GlobalIn, GlobalOut, block_dim_x, block_idx_x, block_idx_y, fma, global_idx_x, grid_threads_x, kernel,
    thread_idx_x, thread_idx_y,
};
use crate::hierarchy::{record, warm_then_time};

kernel! {
    /// DSMEM latency: block rank 0 of a one-cluster grid writes a chain into the shared memory
    /// of block rank `target` (`st.shared::cluster`: the link to byte `chain[w]` at word `w`, a
    /// link being the target's `.shared::cluster` address from `mapa`), then its thread 0
    /// follows `warm` links untimed and times `steps` with `ld.shared::cluster.u32`, each load's
    /// result being the next load's address. `target = 0` is the block's own shared memory
    /// reached through the cluster window; the local `ld.shared` chase is `chase_shared`
    /// (`hierarchy.rs`).
    ///
    /// - Launch: one cluster of `n` blocks (grid `n`, cluster `n`), `CHASE_THREADS` threads
    ///   each; `4 * words` bytes of dynamic shared memory per block.
    /// - Memory level: distributed shared memory (the SM-to-SM network inside a GPC).
    /// - `out`: the probe record `[cycles, ns, last offset]` (`hierarchy.rs`).
    /// - Preconditions: `chain` holds `words` byte offsets, each a multiple of 4 below
    ///   `4 * words` (the links; checked in the `checked` build); `target` is below the
    ///   cluster's size.
    pub fn chase_dsmem(
        block: Block, chain: GlobalIn<u32>, words: u32, target: u32, warm: u32, steps: u32, out: GlobalOut<u64>,
    ) {
        let (chain, mut out) = (chain.slice(words as usize), out.slice(RECORD_WORDS));
        block.in_cluster::<Link>(words as usize, |cluster, links| {
            // Every block of the cluster has started before any block touches another's memory.
            let mut links = cluster.exchange(links);
            if cluster_ctarank() == 0 {
                let mut target_links = links.remote_mut(target);
                let mut w = thread_idx_x();
                while w < words {
                    let link = target_links.link(chain.get(w as usize));
                    target_links.set(w as usize, link);
                    w += block_dim_x();
                }
            }
            // Release/acquire: the chain is visible to the chasing thread.
            let links = cluster.publish(links);
            if cluster_ctarank() == 0 && thread_idx_x() == 0 {
                let target_links = links.remote(target);
                let (end, t) = warm_then_time(target_links.link(0), warm, steps, |p| target_links.follow(p));
                record(&mut out, t, target_links.offset(end) as u64);
            }
            // `in_cluster`'s last barrier keeps the target resident until the chase is over.
        });
    }
}

kernel! {
    /// DSMEM bandwidth: each block fills `READ_VECTORS` 16-byte vectors of its shared memory,
    /// then each thread reads `iters` vectors of the block of rank `(rank + peer_offset) % n` of
    /// its cluster (`ld.shared::cluster.v4.u32`), or, with `peer_offset = 0`, of its own shared
    /// memory with `ld.shared.v4.u32`; thread `t` reads vector `(t + i * blockDim) %
    /// READ_VECTORS` at step `i` (a warp reads 512 contiguous bytes: no bank conflicts),
    /// `READ_UNROLL` loads in flight before their sum. Writes the wrapping sum of every word it
    /// read to `out[global thread]`.
    ///
    /// - Launch: grid a multiple of the cluster size `n`, `READ_THREADS` threads per block,
    ///   `READ_SMEM` bytes of dynamic shared memory.
    /// - Memory level: distributed shared memory (a peer's) or shared memory (the own).
    /// - Preconditions: `iters` is a multiple of `READ_UNROLL`; `out` holds one `u32` per
    ///   thread of the grid.
    pub fn cluster_shared_read(block: Block, iters: u32, peer_offset: u32, out: GlobalOut<u32>) {
        let mut out = out.slice(grid_threads_x() as usize);
        block.in_cluster::<u32>(4 * READ_VECTORS as usize, |cluster, mut words| {
            let (rank, t, threads) = (cluster_ctarank(), thread_idx_x(), block_dim_x());
            let mut w = t;
            while w < 4 * READ_VECTORS {
                words.set(w as usize, read_word(w, rank));
                w += threads;
            }
            let words = cluster.publish(words);
            let mask = READ_VECTORS - 1;
            let mut sum = 0u32;
            let mut i = 0;
            // One loop per path, so each holds only its own load instruction.
            macro_rules! rounds {
                ($load:expr) => {
                    while i < iters {
                        // Independent loads (the sum does not feed their addresses): ptxas issues
                        // the round's loads before it waits for the first.
                        for u in 0..READ_UNROLL {
                            let vector = (t + (i + u) * threads) & mask;
                            let v: [u32; 4] = $load(4 * vector as usize);
                            sum = sum.wrapping_add(v[0]).wrapping_add(v[1]).wrapping_add(v[2]).wrapping_add(v[3]);
                        }
                        i += READ_UNROLL;
                    }
                };
            }
            if peer_offset == 0 {
                rounds!(|at| words.get4(at));
            } else {
                let peer = words.remote((rank + peer_offset) % cluster_nctarank().max(1));
                rounds!(|at| peer.get4(at));
            }
            out.set(global_idx_x() as usize, sum);
            // `in_cluster`'s last barrier: no block leaves while a peer may still read it.
        });
    }
}

kernel! {
    /// The cost of the cluster-wide barrier: every thread passes `iters` barriers
    /// (`barrier.cluster.arrive` + `barrier.cluster.wait`) after one untimed; thread 0 of each
    /// block writes the SM cycles they took and where the block sits:
    /// `out[2 b] = cycles`, `out[2 b + 1] = rank | ranks << 8 | cluster << 16`
    /// (`%cluster_ctarank`, `%cluster_nctarank`, `%clusterid.x`), so the host checks the
    /// cluster shape it launched.
    ///
    /// - Launch: grid a multiple of the cluster size, `BARRIER_THREADS` threads per block.
    ///   Shared memory: none (so no `in_cluster`: nothing of a block is reached from another).
    /// - Memory level: none (synchronisation across the SMs of a cluster).
    /// - Preconditions: `out` holds `2 * gridDim.x` `u64`.
    pub fn cluster_barrier(iters: u32, out: GlobalOut<u64>) {
        let blocks = grid_threads_x() / block_dim_x();
        let mut out = out.slice(BARRIER_RECORD_WORDS * blocks as usize);
        cluster_sync();
        let start = clock64();
        for _ in 0..iters {
            cluster_sync();
        }
        let cycles = clock64().wrapping_sub(start);
        if thread_idx_x() == 0 {
            let b = block_idx_x() as usize;
            let place = cluster_ctarank() | cluster_nctarank() << 8 | cluster_id_x() << 16;
            out.set(BARRIER_RECORD_WORDS * b, cycles);
            out.set(BARRIER_RECORD_WORDS * b + 1, place as u64);
        }
    }
}

kernel! {
    /// Tiled `C = A * B` (shapes and layout of `matmul.rs`: row-major f32, `A` `m x k`, `B`
    /// `k x n`) with `32 x 32` tiles whose cluster shares them: the `cx` blocks of a cluster row
    /// need the same `A` tile and the `cy` blocks of a cluster column the same `B` tile, so each
    /// loads from global memory only the tile rows `r` with `r % cx` equal to its x in the
    /// cluster (`A`) and `r % cy` equal to its y (`B`), and copies the other rows from the block
    /// that loaded them (`ld.shared::cluster`). In-bounds global loads: `m k * gx / cx + k n *
    /// gy / cy` for a grid of `gx x gy` blocks (`model::tiling::cluster_tiled_global_loads`),
    /// against `m k * gx + k n * gy` for `matmul_tiled_32`. Two shared stages
    /// (`cluster::DoubleBuffer`): a step writes the stage no block of the cluster reads any
    /// more, so one cluster barrier per step suffices.
    ///
    /// - Launch: block `32 x 32`, grid `(ceil(n / 32), ceil(m / 32))` rounded up to multiples
    ///   of the cluster `(cx, cy)` (any shape with `cx, cy <= 32`); `dsmem_smem_bytes()` =
    ///   16384 bytes of dynamic shared memory.
    /// - Memory level: global -> shared, shared -> shared across the cluster (DSMEM).
    /// - Buffers: `a`, `b`, `c` hold `m k`, `k n`, `m n` floats, each fewer than `2^32`.
    pub fn matmul_dsmem_32(
        block: Block, a: GlobalIn<f32>, b: GlobalIn<f32>, c: GlobalOut<f32>, m: u32, n: u32, k: u32,
    ) {
        const T: u32 = DSMEM_TILE;
        // A stage: the A tile, then the B tile.
        const STAGE: usize = (2 * T * T) as usize;
        const B_TILE: usize = (T * T) as usize;
        let (a, b) = (a.matrix(m as usize, k as usize), b.matrix(k as usize, n as usize));
        let mut c = c.matrix(m as usize, n as usize);
        block.in_cluster::<f32>(2 * STAGE, |cluster, tiles| {
            let (tx, ty) = (thread_idx_x(), thread_idx_y());
            // `max(1)`: the extents are never 0, and saying so keeps the panic path of `%` out.
            let (nx, ny) = (cluster_nctaid_x().max(1), cluster_nctaid_y().max(1));
            let (cx, cy) = (cluster_ctaid_x(), cluster_ctaid_y());
            let row = block_idx_y() * T + ty;
            let col = block_idx_x() * T + tx;
            let slot = (ty * T + tx) as usize;
            // Who loads row `ty` of this block's A tile (same cluster row) and of its B tile.
            let (a_owner, b_owner) = (ty % nx, ty % ny);
            let (a_rank, b_rank) = (a_owner + cy * nx, cx + b_owner * nx);
            let mut stages = cluster.double_buffer::<f32, STAGE>(tiles);
            let mut acc = 0.0f32;
            let mut k0 = 0;
            while k0 < k {
                let (ka, kb) = (k0 + tx, k0 + ty);
                if a_owner == cx {
                    stages.set(slot, if row < m && ka < k { a.get(row, ka) } else { 0.0 });
                }
                if b_owner == cy {
                    stages.set(B_TILE + slot, if kb < k && col < n { b.get(kb, col) } else { 0.0 });
                }
                // Release/acquire: every block's rows of this stage are written and visible.
                let mut published = cluster.step(stages);
                if a_owner != cx {
                    published.gather(a_rank, slot);
                }
                if b_owner != cy {
                    published.gather(b_rank, B_TILE + slot);
                }
                let tile = cluster.gathered(published);
                let (a_row, b_col) = ((ty * T) as usize, B_TILE + tx as usize);
                for i in 0..T as usize {
                    acc = fma(tile.get(a_row + i), tile.get(b_col + i * T as usize), acc);
                }
                stages = tile.next();
                k0 += T;
            }
            if row < m && col < n {
                c.set(row, col, acc);
            }
            // `in_cluster`'s last barrier: no block leaves while a peer may still copy from its
            // last stage.
        });
    }
}
