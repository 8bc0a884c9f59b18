//! Thread-block clusters and distributed shared memory (`kernels-gpu/src/clusters.rs`).

use crate::tile_bytes;

/// Cluster sizes the lesson sweeps: 2, 4, 8 (the portable maximum) and 16 (non-portable on
/// cc 9.0; CUDA C++ Programming Guide, "Thread Block Clusters").
pub const CLUSTER_SIZES: [u32; 4] = [2, 4, 8, 16];
/// The largest cluster a launch may ask for without the non-portable attribute
/// (`CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`; CUDA C++ Programming Guide,
/// "Thread Block Clusters": "a maximum of 8 thread blocks in a cluster is supported as a
/// portable cluster size").
pub const PORTABLE_CLUSTER_SIZE: u32 = 8;

/// Threads per block of `chase_dsmem` (one thread chases; all of them write the chain).
pub const CHASE_THREADS: u32 = 256;

/// Threads per block of `cluster_shared_read`.
pub const READ_THREADS: u32 = 256;
/// 16-byte vectors of shared memory per block of `cluster_shared_read` (a power of two: the
/// reads wrap with a mask). 2048 vectors: 32 KiB, so 7 blocks fit an H200 SM's 228 KiB.
pub const READ_VECTORS: u32 = 2048;
/// Dynamic shared bytes of `cluster_shared_read`.
pub const READ_SMEM: u32 = READ_VECTORS * 16;
/// Loads per unrolled round of `cluster_shared_read` (independent 16-byte loads in flight per
/// thread before their sum is taken).
pub const READ_UNROLL: u32 = 8;

/// The value `cluster_shared_read` stores in word `w` of the block of cluster rank `rank`:
/// the word index and the rank mixed by MurmurHash3's 32-bit finalizer, so the sums of a
/// thread's reads differ from one rank to another and a read of the wrong block's memory fails
/// the host's check.
pub const fn read_word(w: u32, rank: u32) -> u32 {
    let mut h = w.wrapping_add(rank.wrapping_mul(0x9E37_79B9));
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// Threads per block of `cluster_barrier`.
pub const BARRIER_THREADS: u32 = 128;
/// Words `cluster_barrier` writes per block: `[cycles, rank | ranks << 8 | cluster << 16]`.
pub const BARRIER_RECORD_WORDS: usize = 2;

/// Tile edge of `matmul_dsmem_32`: the tile of `matmul_tiled_32`, block `32 x 32` threads.
pub const DSMEM_TILE: u32 = 32;
/// Shared-memory stages of `matmul_dsmem_32`: two, so that one cluster barrier per step
/// suffices (a step writes the buffer no block of the cluster reads any more).
pub const DSMEM_STAGES: u32 = 2;

/// Dynamic shared bytes of `matmul_dsmem_32`: `DSMEM_STAGES` pairs of `32 x 32` tiles of `A`
/// and `B`, 16384 bytes.
pub const fn dsmem_smem_bytes() -> u32 {
    tile_bytes(DSMEM_TILE, DSMEM_TILE, 2 * DSMEM_STAGES)
}
