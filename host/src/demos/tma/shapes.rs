//! The launch shapes of this lesson's kernels, one function per kernel entry (its typed
//! launch, in [`crate::launches`], takes the shape first).

use memlab_contracts::tma::{COPY_THREADS, TILE_BYTES, TRANSPOSE_BLOCK, smem_bytes, transpose_buffers};

use crate::gpu::launch::LaunchShape;

/// The shape of a pipelined kernel: `blocks` blocks of `block` threads with `buffers` buffers
/// of `buffer_bytes` each.
fn pipelined(blocks: u32, block: (u32, u32), buffer_bytes: u32, buffers: u32) -> LaunchShape {
    LaunchShape { grid: (blocks, 1), block, smem_bytes: smem_bytes(buffer_bytes, buffers) }
}

/// `tma_bulk_copy`: `n` f32 from `src` to `dst` (16-byte aligned, `n` a multiple of 4) in
/// 1-D bulk copies of `chunk` bytes (a multiple of 16) through `stages` shared buffers;
/// `blocks` blocks of 32 threads (`memlab_contracts::tma::Blocks`: persistent, or one per so
/// many chunks), `1024 + stages (chunk + 8)` B shared each; L2 `hint` of
/// `memlab_contracts::tma::hint` on every copy.
pub fn tma_bulk_copy(blocks: u32, chunk: u32, stages: u32) -> LaunchShape {
    pipelined(blocks, (COPY_THREADS, 1), chunk, stages)
}

/// `tma_copy`: a `rows x cols` f32 matrix through `box_rows x box_cols` tensor copies and
/// `stages` shared buffers; the slots of maps (`Lab::place_map`) of the input and the output with that
/// box, no swizzle; `blocks` blocks of 32 threads; L2 `hint`.
pub fn tma_copy(blocks: u32, box_rows: u32, box_cols: u32, stages: u32) -> LaunchShape {
    pipelined(blocks, (COPY_THREADS, 1), box_rows * box_cols * 4, stages)
}

/// `tma_transpose`: `rows x cols` into `cols x rows`; `map_in` box `64 x box_cols(swizzle)`
/// with that swizzle, `map_out` box `64 x 64`; `blocks` blocks of `32 x 16`,
/// `stages` input tiles and 2 output tiles of 16 KiB in shared memory; L2 `hint`.
pub fn tma_transpose(blocks: u32, stages: u32) -> LaunchShape {
    pipelined(blocks, TRANSPOSE_BLOCK, TILE_BYTES, transpose_buffers(stages))
}
