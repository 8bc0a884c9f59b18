//! The hierarchy's probes (`kernels-gpu/src/hierarchy.rs`).

/// Words of the record every latency probe writes: `[cycles, ns, end]`.
pub const PROBE_RECORD_WORDS: usize = 3;
/// Words of the record buffer: the probe record, then one end per lane of the constant-memory
/// probe's warp.
pub const RECORD_WORDS: usize = PROBE_RECORD_WORDS + CONST_CHASE_THREADS as usize;
/// Threads of the shared-memory chase's block (one thread chases; the others fill the chain).
pub const SHARED_CHASE_THREADS: u32 = 256;
/// Threads of the constant-memory probe: one warp.
pub const CONST_CHASE_THREADS: u32 = 32;
/// Words of the constant-memory chain `const_chase` follows (1 KiB, well inside the constant
/// cache).
pub const CONST_CHAIN_WORDS: usize = 256;
/// Words of `chase_local`'s per-thread chain (128 bytes of local memory).
pub const LOCAL_CHAIN_WORDS: usize = 32;
/// Floats of the per-thread array of the spill pair (`local_array_*`).
pub const LOCAL_ARRAY_WORDS: usize = 16;
/// Bytes `read_cg` reads per load: one 16-byte vector (`ld.global.cg.v4.u32`).
pub const READ_CG_VECTOR_BYTES: usize = 16;
/// Threads per block of `sm_clock_under_load` (the grid fills every SM with these blocks).
pub const SM_CLOCK_THREADS: u32 = 256;
/// Independent FMA chains per thread of `sm_clock_under_load`: enough independent FMAs in
/// flight per warp to keep the FP32 pipes busy despite the FMA's latency.
pub const SM_CLOCK_CHAINS: usize = 8;
/// Words per block of `sm_clock_under_load`'s clock record: `[cycles, ns]`.
pub const SM_CLOCK_RECORD_WORDS: usize = 2;
/// Loads in flight per thread of `read_cg_unrolled` (16-byte vectors issued before any is used).
pub const READ_CG_UNROLL: usize = 4;
