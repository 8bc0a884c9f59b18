//! The L2 lesson's kernels (`kernels-gpu/src/l2.rs`): persisting accesses and the two L2
//! partitions.

/// Threads per block of `hot_stream_read` (the grid fills every SM with these blocks).
pub const HOT_STREAM_THREADS: u32 = 256;
/// Threads of each block of `chase_l2_on_sm`: one warp, of which lane 0 chases.
pub const CHASE_SM_THREADS: u32 = 32;
/// Words before the per-hop cycles in `chase_l2_on_sm`'s record: `[SM of the block that chased,
/// cycles of all timed hops, last address]`.
pub const CHASE_SM_HEADER_WORDS: usize = 3;
/// Bytes of the shared-memory word `chase_l2_on_sm` stores each loaded address to (the store
/// that makes the second clock read wait for the load).
pub const CHASE_SM_SCRATCH_BYTES: u32 = 8;

/// Threads per block of `read_cg_chunks`: a chunk's [`CHUNK_VECTORS`] are read by these
/// threads, [`CHUNK_LOADS`] 16-byte vectors each.
pub const CHUNK_THREADS: u32 = 256;
/// 16-byte vectors per chunk: 16 KiB, the chunk of the public suite's L2 method (RRZE-HPC
/// gpu-benches, gpu-l2-cache).
pub const CHUNK_VECTORS: u32 = 1024;
/// Loads of one chunk per thread.
pub const CHUNK_LOADS: u32 = CHUNK_VECTORS / CHUNK_THREADS;
/// Chunks one block of `read_cg_chunks` reads (its region: 32 x 16 KiB = 512 KiB).
pub const CHUNKS_PER_BLOCK: u32 = 32;
/// 16-byte vectors of one region, the chunks one block reads.
pub const REGION_VECTORS: u32 = CHUNK_VECTORS * CHUNKS_PER_BLOCK;
/// Blocks of one `read_cg_chunks` launch: many short blocks (the suite's 200 000), so the
/// block scheduler balances the SMs and the launch's tail is one short block long.
pub const CHUNK_BLOCKS: u32 = 200_000;
