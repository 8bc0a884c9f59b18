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
