//! The launch contracts of the lab's kernels: every constant both sides of a launch must agree
//! on (tile edges, block shapes, dynamic shared bytes as a function of the tile, the probes'
//! constants), written once and used by the `no_std` kernels (`kernels-gpu`, built for
//! `nvptx64-nvidia-cuda`) and by the host (`memlab`).
//!
//! One module per kernel module of `kernels-gpu`. Only constants and `const fn`s live here, so
//! moving a constant into this crate cannot change the kernels' code: the compiler folds it the
//! same way.
#![no_std]

pub mod clusters;
pub mod hierarchy;
pub mod l2;
pub mod matmul;
pub mod probes;
pub mod sgemm;
pub mod tensor;
pub mod tma;
pub mod transpose;
pub mod transpose_any;
pub mod transpose_thin;

/// Bytes of one `f32` (or `u32`) element of a shared-memory tile.
pub const WORD_BYTES: u32 = 4;

/// Dynamic shared bytes of `stages` copies of a `rows x pitch` tile of 4-byte words.
pub const fn tile_bytes(rows: u32, pitch: u32, stages: u32) -> u32 {
    stages * rows * pitch * WORD_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_bytes_are_the_ones_the_kernels_document() {
        use transpose::{PADDED_PITCH, TILE, TILED_PITCH, WIDE_PITCH, WIDE_TILE};
        assert_eq!(transpose::smem_bytes(TILE, TILED_PITCH), 4096);
        assert_eq!(transpose::smem_bytes(TILE, PADDED_PITCH), 4224);
        assert_eq!(transpose::smem_bytes(WIDE_TILE, WIDE_PITCH), 16640);
        // The shifted paths on rows that are not whole sectors stage 8 more rows.
        assert_eq!((transpose::padded_smem_bytes(8192), transpose::padded_smem_bytes(8191)), (4224, 5280));
        assert_eq!(transpose::padded_smem_bytes(1004), 5280);
        let wide = |r, c| transpose::wide_smem_bytes(r, c);
        assert_eq!(
            (wide(8192, 8192), wide(8191, 8192), wide(8192, 8191), wide(1004, 1000)),
            (16640, 18720, 18720, 18720)
        );
        assert_eq!(matmul::tiled_smem_bytes(matmul::TILE_16), 2048);
        assert_eq!(matmul::tiled_smem_bytes(matmul::TILE_32), 8192);
        use sgemm::{A_PITCH, A_PITCH_PADDED, RUNG2_TILE, STAGES, TILE as T, smem_bytes};
        assert_eq!(smem_bytes(RUNG2_TILE, RUNG2_TILE, 1), 4096);
        assert_eq!(smem_bytes(T, T, 1), 8192);
        assert_eq!(smem_bytes(A_PITCH, T, 1), 8192);
        assert_eq!(smem_bytes(A_PITCH_PADDED, T, 1), 8320);
        assert_eq!(smem_bytes(A_PITCH_PADDED, T, STAGES), 16640);
        assert_eq!(probes::BANK_PROBE_SMEM, 16384);
        assert_eq!(clusters::dsmem_smem_bytes(), 16384);
        assert_eq!(clusters::READ_SMEM, 32768);
    }

    #[test]
    fn block_shapes_cover_their_tiles() {
        // Each thread of a 32x8 block moves 4 rows of a 32x32 tile; of a 16x16 block, 4 float4
        // rows of a 64x64 tile.
        assert_eq!(transpose::BLOCK.0 * transpose::BLOCK.1 * 4, transpose::TILE * transpose::TILE);
        assert_eq!(transpose::WIDE_BLOCK.0 * transpose::WIDE_BLOCK.1 * 16, transpose::WIDE_TILE * transpose::WIDE_TILE);
        // The shifted path's 18 scalar loads per thread cover its staged rows exactly.
        let threads = transpose::WIDE_BLOCK.0 * transpose::WIDE_BLOCK.1;
        assert_eq!(transpose::WIDE_STAGED_ROWS * transpose::WIDE_TILE, 18 * threads);
        // Rungs: tile^2 results over the threads' results per thread.
        assert_eq!(sgemm::RUNG2_THREADS as usize * sgemm::RUNG2_TM, (sgemm::RUNG2_TILE * sgemm::RUNG2_TILE) as usize);
        assert_eq!(sgemm::THREADS as usize * sgemm::TM * sgemm::TM, (sgemm::TILE * sgemm::TILE) as usize);
    }

    #[test]
    fn the_bank_probe_stays_inside_its_array() {
        // Largest lane base (31 * 33) plus the largest unrolled offset inside the window.
        let highest = 31 * 33 + probes::BANK_PROBE_WINDOW - 32 + (probes::BANK_PROBE_UNROLL - 1) * 32;
        assert!(highest < probes::BANK_PROBE_WORDS, "{highest}");
        assert_eq!(probes::bank_probe_word(1), 0x9E37_79B9);
        assert_eq!(probes::bank_probe_word(2), 0x3C6E_F372);
    }
}
