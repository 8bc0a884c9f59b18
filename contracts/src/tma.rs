//! TMA kernels (`kernels-gpu/src/tma.rs`): the tensor copy and transpose tiles, the bulk
//! copy's block, and the tensor map's shared-memory swizzle, which the transpose's reads and
//! the host's bank model both apply.

use crate::WORD_BYTES;

/// Tile edge of `tma_copy` and `tma_transpose`, elements (f32): a `64 x 64` tile is 16 KiB,
/// past the 8-12 KiB per copy that TMA needs to approach HBM peak (Luo et al., "Benchmarking
/// and Dissecting the Nvidia Hopper GPU Architecture", 2024).
pub const TILE: u32 = 64;
/// Bytes of one tile.
pub const TILE_BYTES: u32 = TILE * TILE * WORD_BYTES;
/// Threads of `tma_copy` and `tma_bulk_copy`: one warp, whose lane 0 issues the copies.
pub const COPY_THREADS: u32 = 32;
/// Threads of `tma_transpose`, `32 x 16`: each moves 2 float4 of the tile through registers.
/// Faster than 256 threads on the H200: 0.940-0.944x against 0.933-0.935x memcpy for one tile
/// per block in the scratch program of `docs/measurements/tma.md` (the lab's transpose,
/// with one block per few tiles as well: 0.908-0.936x, against 0.897-0.918x for 256 threads
/// in persistent blocks only).
pub const TRANSPOSE_BLOCK: (u32, u32) = (32, 16);
/// Float4 reads per thread of `tma_transpose`: `TILE * TILE / 4` float4 over 512 threads.
pub const TRANSPOSE_READS: u32 = TILE * TILE / 4 / (TRANSPOSE_BLOCK.0 * TRANSPOSE_BLOCK.1);

/// Alignment of every TMA tile in shared memory, bytes: the 128-byte swizzle's pattern repeats
/// every 1024 bytes and is a function of the shared address bits (PTX ISA, "Tensors: tensor
/// swizzling modes"), so a tile aligned to 1024 has the layout [`swizzle`] gives.
pub const SMEM_ALIGN: u32 = 1024;
/// Bytes of one `mbarrier` object (PTX ISA, "mbarrier": a 64-bit object, 8-byte aligned).
pub const MBARRIER_BYTES: u32 = 8;

/// Dynamic shared bytes of a kernel with `buffers` TMA buffers of `buffer_bytes` each (a
/// multiple of 8): room to align them to [`SMEM_ALIGN`], the buffers, then one mbarrier per
/// buffer (the device API's `Buffers::carve` lays them out so).
pub const fn smem_bytes(buffer_bytes: u32, buffers: u32) -> u32 {
    SMEM_ALIGN + buffers * (buffer_bytes + MBARRIER_BYTES)
}

/// Buffers of `tma_transpose` with `stages` input stages: the stages, and two output tiles (a
/// tile is transposed into one while the store of the previous one still reads the other).
pub const fn transpose_buffers(stages: u32) -> u32 {
    stages + 2
}

/// L2 eviction hints of the TMA copies, the kernels' `hint` parameter.
pub mod hint {
    /// No hint: the copies as plain `cp.async.bulk(.tensor)`.
    pub const NONE: u32 = 0;
    /// Every load and store carries `.L2::cache_hint` with an evict_first policy
    /// (`createpolicy.fractional.L2::evict_first`, fraction 1.0; PTX ISA, "createpolicy",
    /// "cp.async.bulk", "cp.async.bulk.tensor"): the lines a copy reads or writes once are the
    /// first the L2 evicts.
    pub const EVICT_FIRST: u32 = 1;
}

/// How many blocks a TMA kernel is launched with. Every kernel gives block `b` of a grid of
/// `g` the items (tiles, chunks) `b, b + g, ...`, so the grid alone chooses between the two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocks {
    /// Persistent blocks: grid `SMs x n`, each looping over its items.
    PerSm(u32),
    /// One block per `n` items (grid: items / `n`, rounded up): the block scheduler keeps as
    /// many resident per SM as fit and starts the next as one ends.
    PerItems(u32),
}

impl Blocks {
    /// The grid for `items` items on a GPU of `sms` SMs.
    pub const fn grid(self, sms: u32, items: u32) -> u32 {
        match self {
            Blocks::PerSm(n) => sms * if n == 0 { 1 } else { n },
            Blocks::PerItems(n) => {
                let g = items.div_ceil(if n == 0 { 1 } else { n });
                if g == 0 { 1 } else { g }
            }
        }
    }

    /// Blocks that must be resident on one SM at once for the configuration to run as meant.
    pub const fn min_resident(self) -> u32 {
        match self {
            Blocks::PerSm(n) => n,
            Blocks::PerItems(_) => 1,
        }
    }
}

/// One configuration of a pipelined TMA kernel: `stages` buffers of one box (or chunk) each,
/// its [`Blocks`], the copies' L2 [`hint`]. The bytes in flight per SM are at most
/// `stages x box bytes x resident blocks per SM`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pipeline {
    /// Box rows (1 for the 1-D bulk copy).
    pub box_rows: u32,
    /// Box columns, f32 (the chunk's floats for the 1-D bulk copy).
    pub box_cols: u32,
    /// Buffers in the ring, each holding one box.
    pub stages: u32,
    /// The grid: persistent blocks per SM, or one block per so many items.
    pub blocks: Blocks,
    /// The copies' L2 eviction hint, [`hint::NONE`] or [`hint::EVICT_FIRST`].
    pub hint: u32,
}

impl Pipeline {
    /// A configuration of `blocks_per_sm` persistent blocks per SM, without hint.
    pub const fn new(box_rows: u32, box_cols: u32, stages: u32, blocks_per_sm: u32) -> Pipeline {
        Pipeline { box_rows, box_cols, stages, blocks: Blocks::PerSm(blocks_per_sm), hint: hint::NONE }
    }

    /// A configuration of one block per `items` items, with a buffer for each (`items` stages),
    /// without hint.
    pub const fn per_items(box_rows: u32, box_cols: u32, items: u32) -> Pipeline {
        Pipeline { box_rows, box_cols, stages: items, blocks: Blocks::PerItems(items), hint: hint::NONE }
    }

    /// Bytes of one box.
    pub const fn box_bytes(&self) -> u32 {
        self.box_rows * self.box_cols * WORD_BYTES
    }

    /// The grid over a `rows x cols` f32 matrix (a 1-D copy of `n` floats: `1 x n`) on a GPU of
    /// `sms` SMs: its items are the boxes that cover the matrix, as the kernels count them.
    pub const fn grid(&self, sms: u32, rows: u32, cols: u32) -> u32 {
        self.blocks.grid(sms, rows.div_ceil(self.box_rows) * cols.div_ceil(self.box_cols))
    }
}

/// Boxes (rows x f32 columns) of the `tma_copy` sweep: 8 to 32 KiB, rows of 256 B to 1 KiB
/// (a tensor map's box is at most 256 elements per dimension: CUDA Driver API,
/// `cuTensorMapEncodeTiled`).
pub const COPY_BOXES: [(u32, u32); 5] = [(64, 64), (32, 128), (16, 256), (32, 256), (8, 256)];
/// Stages of every pipeline sweep (1: load, wait, store, one box at a time).
pub const PIPELINE_STAGES: [u32; 5] = [1, 2, 3, 4, 6];
/// Blocks per SM of the `tma_copy` and `tma_bulk_copy` sweeps.
pub const COPY_BLOCKS_PER_SM: [u32; 4] = [1, 2, 3, 4];
/// Chunks (bytes) of the pipelined `tma_bulk_copy` sweep.
pub const BULK_PIPELINE_CHUNKS: [u32; 3] = [8192, 16384, 32768];
/// Blocks per SM of the `tma_transpose` sweep.
pub const TRANSPOSE_BLOCKS_PER_SM: [u32; 3] = [1, 2, 3];
/// Items per block of the sweeps' non-persistent points ([`Pipeline::per_items`]) for
/// `tma_copy` and `tma_transpose`. One box per block was the fastest tensor copy measured on
/// the H200 (0.977-0.978x memcpy at 8192 x 8192, against 0.955-0.963x for the best persistent
/// ring, in the scratch program of `docs/measurements/tma.md`):
/// the block scheduler refills an SM as each block ends, so its loads never wait on a
/// ring's store.
pub const PER_BLOCK_ITEMS: [u32; 2] = [1, 2];
/// Chunks (bytes) and chunks per block of `tma_bulk_copy`'s non-persistent points: 8 to 16
/// KiB per block in copies of 1 to 8 KiB. Several smaller copies per block beat one large
/// one on the H200 (8 KiB per block: 0.951x memcpy as one copy, 0.973x as 4 of 2 KiB, in the
/// scratch program of `docs/measurements/tma.md`).
pub const BULK_PER_BLOCK: [(u32, u32); 7] =
    [(1024, 8), (2048, 4), (2048, 8), (4096, 2), (4096, 4), (8192, 1), (8192, 2)];

/// `tma_copy`'s configuration where no sweep has run (a run whose sweep found nothing
/// faster): one 32x256 box per block, 0.977-0.978x memcpy at 8192 x 8192 on the H200 (the
/// scratch program of `docs/measurements/tma.md`).
pub const COPY_DEFAULT: Pipeline = Pipeline::per_items(32, 256, 1);
/// `tma_bulk_copy`'s configuration where no sweep has run (the hierarchy table's TMA row):
/// 4 chunks of 2 KiB per block, 0.973x memcpy at 8192 x 8192 on the H200 (the scratch program
/// of `docs/measurements/tma.md`).
pub const BULK_DEFAULT: Pipeline = Pipeline::per_items(1, 512, 4);
/// `tma_transpose`'s configuration where no sweep has run: one tile per block, the fastest of
/// the sweep in 3 of the 6 H200 runs with the maps in constant memory (one block per 2 tiles
/// in the other 3; `docs/measurements/tma.md`).
pub const TRANSPOSE_DEFAULT: Pipeline = Pipeline::per_items(TILE, TILE, 1);

/// The tensor map's swizzle modes, as `CUtensorMapSwizzle` numbers them (CUDA Driver API,
/// `cuTensorMapEncodeTiled`): 0 none, 1 32-byte, 2 64-byte, 3 128-byte.
pub const SWIZZLE_MODES: u32 = 4;

/// Bytes of the swizzle span of `mode` (0 for none): a box's inner dimension may be at most
/// this wide when swizzled (CUDA Driver API, `cuTensorMapEncodeTiled`).
pub const fn swizzle_span(mode: u32) -> u32 {
    if mode == 0 { 0 } else { 16 << mode }
}

/// Columns (f32) of one box of `tma_transpose`'s input for swizzle `mode`: the span's width
/// (8, 16, 32) when swizzled, 32 (128 bytes) without swizzle; the `64 x 64` tile is loaded as
/// `TILE / box_cols` boxes of `TILE` rows, each landing in its own part of the tile.
pub const fn box_cols(mode: u32) -> u32 {
    if mode == 0 { 32 } else { swizzle_span(mode) / WORD_BYTES }
}

/// Where byte `offset` of a box (dense, rows of `box_cols * 4` bytes) lands in shared memory
/// under swizzle `mode`: bits 4.. of the offset (the 16-byte chunk) are XORed with the bits 7..
/// above them (the 128-byte line), `mode` bits of each (CUTLASS `Swizzle<mode, 4, 3>`; PTX
/// ISA, "Tensors: tensor swizzling modes"). Mode 0 leaves the offset alone.
pub const fn swizzle(mode: u32, offset: u32) -> u32 {
    let mask = (1 << mode) - 1;
    offset ^ (((offset >> 7) & mask) << 4)
}

/// Byte offset in `tma_transpose`'s input tile of the float4 at row `r`, columns `4 c4 ..+4`,
/// for swizzle `mode`: box `4 c4 / box_cols`, row `r` of it, swizzled.
pub const fn transpose_read_offset(mode: u32, r: u32, c4: u32) -> u32 {
    let w = box_cols(mode);
    let (b, c) = (4 * c4 / w, 4 * c4 % w);
    b * TILE * w * WORD_BYTES + swizzle(mode, (r * w + c) * WORD_BYTES)
}

/// Row and float4 column of read `i` (< [`TRANSPOSE_READS`]) of thread `t` of
/// `tma_transpose`: the 32 lanes of a warp read 32 consecutive rows of one float4 column (a
/// column read of the tile, the transpose's conflict-prone access).
pub const fn transpose_read(t: u32, i: u32) -> (u32, u32) {
    let idx = t + i * TRANSPOSE_BLOCK.0 * TRANSPOSE_BLOCK.1;
    (idx % TILE, idx / TILE)
}

/// Chunk sizes (bytes per `cp.async.bulk`) of the bulk-copy curve (one stage: load, wait,
/// store, wait, as the published measurements copy): 1 to 48 KiB, so that 4 blocks of the
/// largest still fit in an SM's 228 KiB of shared memory.
pub const BULK_CHUNKS: [u32; 7] = [1024, 2048, 4096, 8192, 16384, 32768, 49152];
/// Blocks per SM of the bulk-copy curve.
pub const BULK_BLOCKS_PER_SM: [u32; 4] = [1, 2, 3, 4];
/// Tensor maps the module's constant memory holds (`memlab_tma_maps`, 128 bytes each, 16 KiB
/// of the 64 KiB of a module's constant bank: CUDA C++ Programming Guide, "Features and
/// Technical Specifications"). The kernels take a map as its slot there: a map in constant
/// memory needs no `fence.proxy.tensormap` before its first use, one in global memory does
/// in every block (CUDA C++ Programming Guide, "Using TMA to transfer multi-dimensional
/// arrays"), which cost the one-tile-per-block transpose 11% on the H200 (3388 against 3796
/// GB/s; `docs/measurements/tma.md`).
pub const MAP_SLOTS: u32 = 128;
/// Bytes of one tensor map (`CUtensorMap`: CUDA Driver API, `cuTensorMapEncodeTiled`).
pub const MAP_BYTES: u32 = 128;

/// Granule of `cp.async.bulk`: size and both addresses a multiple of 16 bytes (PTX ISA,
/// "cp.async.bulk").
pub const BULK_GRANULE: u32 = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_covers_the_boxes_of_the_matrix() {
        // 8192 x 8192 in 32x256 boxes: 256 x 32 boxes, one block each.
        assert_eq!(Pipeline::per_items(32, 256, 1).grid(132, 8192, 8192), 8192);
        // Tiles of 64 x 64 over 100 x 130: 2 x 3 tiles, 2 per block.
        assert_eq!(Pipeline::per_items(TILE, TILE, 2).grid(132, 100, 130), 3);
        // 1-D: 4098 floats in chunks of 512 floats, 4 chunks per block: 9 chunks, 3 blocks.
        assert_eq!(Pipeline::per_items(1, 512, 4).grid(132, 1, 4098), 3);
        // Persistent: the SMs times the blocks per SM, whatever the matrix.
        assert_eq!(Pipeline::new(16, 256, 4, 2).grid(132, 8192, 8192), 264);
        assert_eq!(Blocks::PerSm(0).grid(132, 10), 132);
        assert_eq!(Blocks::PerItems(4).grid(132, 0), 1);
        assert_eq!((Blocks::PerSm(3).min_resident(), Blocks::PerItems(8).min_resident()), (3, 1));
    }

    #[test]
    fn swizzle_permutes_16_byte_chunks_inside_its_repeat() {
        for mode in 0..SWIZZLE_MODES {
            let repeat = 128u32 << mode.max(1);
            let mut seen = [false; 1024];
            for offset in (0..repeat).step_by(16) {
                let s = swizzle(mode, offset);
                assert!(s < repeat && s.is_multiple_of(16), "mode {mode} offset {offset} -> {s}");
                assert!(!seen[s as usize]);
                seen[s as usize] = true;
            }
        }
        // 128-byte swizzle: row 1's chunk 0 goes to chunk 1, row 7's chunk 2 to chunk 5.
        assert_eq!(swizzle(3, 128), 128 + 16);
        assert_eq!(swizzle(3, 7 * 128 + 32), 7 * 128 + (2 ^ 7) * 16);
        assert_eq!(swizzle(0, 7 * 128 + 32), 7 * 128 + 32);
    }

    #[test]
    fn transpose_reads_cover_the_tile_once() {
        let mut seen = [false; (TILE * TILE / 4) as usize];
        for t in 0..TRANSPOSE_BLOCK.0 * TRANSPOSE_BLOCK.1 {
            for i in 0..TRANSPOSE_READS {
                let (r, c4) = transpose_read(t, i);
                let k = (r * TILE / 4 + c4) as usize;
                assert!(!seen[k]);
                seen[k] = true;
            }
        }
        for mode in 0..SWIZZLE_MODES {
            let mut offsets: [u32; 1024] = [0; 1024];
            let mut n = 0;
            for r in 0..TILE {
                for c4 in 0..TILE / 4 {
                    offsets[n] = transpose_read_offset(mode, r, c4);
                    n += 1;
                }
            }
            offsets.sort_unstable();
            assert!(offsets.iter().enumerate().all(|(i, &o)| o == 16 * i as u32), "mode {mode}");
        }
    }
}
