//! The SGEMM ladder (`kernels-gpu/src/sgemm/`): rungs 2 to 7. Rung 1 is `matmul_tiled_32`.

use crate::WORD_BYTES;

/// Depth of one step of every rung: columns of `A` and rows of `B` staged at once.
pub const BK: u32 = 8;

/// Rung 2 (`sgemm_2_register_1d`): `64 x 64` tile of `C`, 512 threads, 8 results per thread.
pub const RUNG2_TILE: u32 = 64;
/// Threads per block of rung 2.
pub const RUNG2_THREADS: u32 = 512;
/// Results per thread of rung 2, down one column.
pub const RUNG2_TM: usize = 8;

/// Tile of `C` of rungs 3 to 7: `128 x 128`.
pub const TILE: u32 = 128;
/// Threads per block of rungs 3 to 7 (one-dimensional).
pub const THREADS: u32 = 256;
/// Results per thread of rungs 3 to 7 along each axis (`8 x 8`).
pub const TM: usize = 8;
/// Row pitch of the transposed `A` tile of rung 4, floats (conflicted stores).
pub const A_PITCH: u32 = TILE;
/// Row pitch of the transposed `A` tile of rungs 5 to 7, floats: rows 4 banks apart.
pub const A_PITCH_PADDED: u32 = 132;
/// Shared stages of rungs 6 and 7 (rungs 3 to 5 have one). Rung 7 measured on the H200 at
/// 4096^3 (TFLOP/s): 2 stages 42.9, 3 stages 41.0, 4 stages 41.9.
pub const STAGES: u32 = 2;

/// Dynamic shared bytes of a rung with a `bm x BK` tile of `A` (row pitch `a_pitch` when
/// stored transposed, else `bm`) and a `BK x bn` tile of `B`, `stages` times.
pub const fn smem_bytes(a_pitch: u32, bn: u32, stages: u32) -> u32 {
    stages * BK * (a_pitch + bn) * WORD_BYTES
}
