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
//! cluster. The instructions are PTX ISA 7.8 / sm_90 (see [`crate::device::cluster`]), so this
//! module is compiled into the sm_90 PTX only.

use memlab_contracts::clusters::{DSMEM_STAGES, DSMEM_TILE, READ_UNROLL, READ_VECTORS, read_word};

use crate::device::cluster::{
    cluster_arrive, cluster_ctaid_x, cluster_ctaid_y, cluster_ctarank, cluster_id_x, cluster_nctaid_x,
    cluster_nctaid_y, cluster_nctarank, cluster_sync, cluster_wait, load_local4, load_remote, load_remote_f32,
    load_remote4, map_shared_rank, shared_address, store_remote,
};
use crate::device::probe::{clock64, globaltimer};
use crate::device::{
    block_dim_x, block_idx_x, block_idx_y, dynamic_shared, fma, global_idx_x, load, sync_threads, thread_idx_x,
    thread_idx_y,
};
use crate::hierarchy::warm_then_time;

/// DSMEM latency: block rank 0 of a one-cluster grid writes a chain into the shared memory of
/// block rank `target` (`st.shared::cluster`: `base + chain[w]` at word `w`, `base` the
/// target's `.shared::cluster` address from `mapa`), then its thread 0 follows `warm` links
/// untimed and times `steps` with `ld.shared::cluster.u32`, each load's result being the next
/// load's address. `target = 0` is the block's own shared memory reached through the cluster
/// window; the local `ld.shared` chase is `chase_shared` (`hierarchy.rs`).
///
/// - Launch: one cluster of `n` blocks (grid `n`, cluster `n`), `CHASE_THREADS` threads each;
///   `4 * words` bytes of dynamic shared memory per block.
/// - Memory level: distributed shared memory (the SM-to-SM network inside a GPC).
/// - `out`: the probe record `[cycles, ns, last offset]` (`hierarchy.rs`).
///
/// # Safety
/// `chain` holds `words` byte offsets, each a multiple of 4 below `4 * words`; `target` is
/// below the cluster's size; `out` holds three `u64`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn chase_dsmem(
    chain: *const u32,
    words: u32,
    target: u32,
    warm: u32,
    steps: u32,
    out: *mut u64,
) {
    let base = map_shared_rank(shared_address(dynamic_shared::<u32>()), target);
    // Every block of the cluster has started before any block touches another's memory.
    cluster_sync();
    if cluster_ctarank() == 0 {
        let mut w = thread_idx_x();
        while w < words {
            // SAFETY: word `w < words` of the target's `4 * words` bytes; the target is running.
            unsafe { store_remote(base + 4 * w, base + *chain.add(w as usize)) };
            w += block_dim_x();
        }
    }
    // Release/acquire: the chain is visible to the chasing thread.
    cluster_sync();
    if cluster_ctarank() == 0 && thread_idx_x() == 0 {
        // SAFETY: every word of the target's array holds the cluster address of another word.
        let (p, t) = warm_then_time(base, warm, steps, |p| unsafe { load_remote(p) });
        let (cycles, ns) = (clock64(), globaltimer());
        // SAFETY: `out` holds three `u64` (the probe record of `hierarchy.rs`).
        unsafe {
            (
                out.write(cycles.wrapping_sub(t.0)),
                out.add(1).write(ns.wrapping_sub(t.1)),
                out.add(2).write((p - base) as u64),
            )
        };
    }
    // The target stays resident until the chase is over.
    cluster_sync();
}

/// DSMEM bandwidth: each block fills `READ_VECTORS` 16-byte vectors of its shared memory, then
/// each thread reads `iters` vectors of the block of rank `(rank + peer_offset) % n` of its
/// cluster (`ld.shared::cluster.v4.u32`), or, with `peer_offset = 0`, of its own shared memory
/// with `ld.shared.v4.u32`; thread `t` reads vector `(t + i * blockDim) % READ_VECTORS` at step
/// `i` (a warp reads 512 contiguous bytes: no bank conflicts), `READ_UNROLL` loads in flight
/// before their sum. Writes the wrapping sum of every word it read to `out[global thread]`.
///
/// - Launch: grid a multiple of the cluster size `n`, `READ_THREADS` threads per block,
///   `READ_SMEM` bytes of dynamic shared memory.
/// - Memory level: distributed shared memory (a peer's) or shared memory (the own).
///
/// # Safety
/// `iters` is a multiple of `READ_UNROLL`; `out` holds one `u32` per thread of the grid.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn cluster_shared_read(iters: u32, peer_offset: u32, out: *mut u32) {
    let words = dynamic_shared::<u32>();
    let (rank, t, threads) = (cluster_ctarank(), thread_idx_x(), block_dim_x());
    let mut w = t;
    while w < 4 * READ_VECTORS {
        unsafe { *words.add(w as usize) = read_word(w, rank) };
        w += threads;
    }
    cluster_sync();
    let own = shared_address(words);
    let mask = READ_VECTORS - 1;
    let mut sum = 0u32;
    let mut i = 0;
    // One loop per path, so each holds only its own load instruction.
    macro_rules! rounds {
        ($base:expr, $load:ident) => {
            while i < iters {
                // Independent loads (the sum does not feed their addresses): ptxas issues the
                // round's loads before it waits for the first.
                for u in 0..READ_UNROLL {
                    let vector = (t + (i + u) * threads) & mask;
                    // SAFETY: vector < READ_VECTORS of the block's READ_SMEM bytes, 16-byte aligned.
                    let v = unsafe { $load($base + 16 * vector) };
                    sum = sum.wrapping_add(v[0]).wrapping_add(v[1]).wrapping_add(v[2]).wrapping_add(v[3]);
                }
                i += READ_UNROLL;
            }
        };
    }
    if peer_offset == 0 {
        rounds!(own, load_local4);
    } else {
        let peer = (rank + peer_offset) % cluster_nctarank().max(1);
        rounds!(map_shared_rank(own, peer), load_remote4);
    }
    unsafe { *out.add(global_idx_x() as usize) = sum };
    // No block leaves while a peer may still read its shared memory.
    cluster_sync();
}

/// The cost of the cluster-wide barrier: every thread passes `iters` barriers
/// (`barrier.cluster.arrive` + `barrier.cluster.wait`) after one untimed; thread 0 of each
/// block writes the SM cycles they took and where the block sits:
/// `out[2 b] = cycles`, `out[2 b + 1] = rank | ranks << 8 | cluster << 16` (`%cluster_ctarank`,
/// `%cluster_nctarank`, `%clusterid.x`), so the host checks the cluster shape it launched.
///
/// - Launch: grid a multiple of the cluster size, `BARRIER_THREADS` threads per block.
///   Shared memory: none.
/// - Memory level: none (synchronisation across the SMs of a cluster).
///
/// # Safety
/// `out` holds `2 * gridDim.x` `u64`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn cluster_barrier(iters: u32, out: *mut u64) {
    cluster_sync();
    let start = clock64();
    for _ in 0..iters {
        cluster_arrive();
        cluster_wait();
    }
    let cycles = clock64().wrapping_sub(start);
    if thread_idx_x() == 0 {
        let b = block_idx_x() as usize;
        let place = cluster_ctarank() | cluster_nctarank() << 8 | cluster_id_x() << 16;
        unsafe {
            *out.add(2 * b) = cycles;
            *out.add(2 * b + 1) = place as u64;
        }
    }
}

/// Tiled `C = A * B` (shapes and layout of `matmul.rs`: row-major f32, `A` `m x k`, `B`
/// `k x n`) with `32 x 32` tiles whose cluster shares them: the `cx` blocks of a cluster row
/// need the same `A` tile and the `cy` blocks of a cluster column the same `B` tile, so each
/// loads from global memory only the tile rows `r` with `r % cx` equal to its x in the cluster
/// (`A`) and `r % cy` equal to its y (`B`), and copies the other rows from the block that
/// loaded them (`ld.shared::cluster`). In-bounds global loads: `m k * gx / cx + k n * gy / cy`
/// for a grid of `gx x gy` blocks (`model::tiling::cluster_tiled_global_loads`), against
/// `m k * gx + k n * gy` for `matmul_tiled_32`. Two shared stages: a step writes the stage no
/// block of the cluster reads any more, so one cluster barrier per step suffices.
///
/// - Launch: block `32 x 32`, grid `(ceil(n / 32), ceil(m / 32))` rounded up to multiples of
///   the cluster `(cx, cy)` (any shape with `cx, cy <= 32`); `dsmem_smem_bytes()` = 16384 bytes
///   of dynamic shared memory.
/// - Memory level: global -> shared, shared -> shared across the cluster (DSMEM).
///
/// # Safety
/// `a`, `b`, `c` hold `m k`, `k n`, `m n` floats, each fewer than `2^32`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn matmul_dsmem_32(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
    const T: u32 = DSMEM_TILE;
    let tiles = dynamic_shared::<f32>();
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    // `max(1)`: the extents are never 0, and saying so keeps the panic path of `%` out.
    let (nx, ny) = (cluster_nctaid_x().max(1), cluster_nctaid_y().max(1));
    let (cx, cy) = (cluster_ctaid_x(), cluster_ctaid_y());
    let row = block_idx_y() * T + ty;
    let col = block_idx_x() * T + tx;
    let slot = ty * T + tx;
    // Who loads row `ty` of this block's A tile (same cluster row) and of its B tile.
    let (a_owner, b_owner) = (ty % nx, ty % ny);
    let (a_rank, b_rank) = (a_owner + cy * nx, cx + b_owner * nx);
    let mut acc = 0.0f32;
    let mut k0 = 0;
    let mut stage = 0;
    while k0 < k {
        // SAFETY (whole step): slots below 2 * T * T of the stage, inside the launch's bytes.
        let tile_a = unsafe { tiles.add((stage * 2 * T * T) as usize) };
        let tile_b = unsafe { tile_a.add((T * T) as usize) };
        let (ka, kb) = (k0 + tx, k0 + ty);
        if a_owner == cx {
            let v = if row < m && ka < k { unsafe { load(a.add((row * k + ka) as usize)) } } else { 0.0 };
            unsafe { *tile_a.add(slot as usize) = v };
        }
        if b_owner == cy {
            let v = if kb < k && col < n { unsafe { load(b.add((kb * n + col) as usize)) } } else { 0.0 };
            unsafe { *tile_b.add(slot as usize) = v };
        }
        // Release/acquire: every block's rows of this stage are written and visible.
        cluster_sync();
        if a_owner != cx {
            let remote = map_shared_rank(shared_address(unsafe { tile_a.add(slot as usize) }), a_rank);
            unsafe { *tile_a.add(slot as usize) = load_remote_f32(remote) };
        }
        if b_owner != cy {
            let remote = map_shared_rank(shared_address(unsafe { tile_b.add(slot as usize) }), b_rank);
            unsafe { *tile_b.add(slot as usize) = load_remote_f32(remote) };
        }
        unsafe { sync_threads() };
        let (a_row, b_col) = unsafe { (tile_a.add((ty * T) as usize), tile_b.add(tx as usize)) };
        for i in 0..T as usize {
            acc = unsafe { fma(*a_row.add(i), *b_col.add(i * T as usize), acc) };
        }
        stage = (stage + 1) % DSMEM_STAGES;
        k0 += T;
    }
    if row < m && col < n {
        unsafe { *c.add((row * n + col) as usize) = acc };
    }
    // No block leaves while a peer may still copy from its last stage.
    cluster_sync();
}
