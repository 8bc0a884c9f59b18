//! The tensor-core ladder (`kernels-gpu/src/tensor.rs`, the sm_90a PTX): `wgmma` fed by TMA
//! through a ring of shared-memory stages, in BF16, then TF32 and FP8 e4m3.
//!
//! Layouts: `A` is `m x k` row-major, `B` is `n x k` row-major (each row of `B` is a column of
//! the product's right operand, so both operands are K-major, the layout `wgmma` reads from
//! shared memory for every input type; PTX ISA, "Asynchronous Warpgroup Level Matrix Shared
//! Memory Layout"), `C` is `m x n` row-major BF16. Each stage holds a `bm x 64` tile of `A`
//! and a `bn x 64` tile of `B`: 64 BF16 are 128 bytes, one span of the 128-byte swizzle, so a
//! tile row is one swizzled line and the TMA box's inner dimension is the whole span.
//!
//! The TF32 rung ([`TF32`]) keeps every byte of that layout: its `A`, `B` and `C` are FP32,
//! a stage row is [`BK_TF32`] = 32 of them (the same 128 bytes), and one `wgmma` step is
//! [`MMA_K_TF32`] = 8 deep (the same 32 bytes of a row), so the ring, the descriptors and the
//! stage bytes are the BF16 rungs'. The FP8 rung ([`FP8`]) does the same with 128 one-byte
//! e4m3 elements per row ([`BK_FP8`]) and `k32` steps ([`MMA_K_FP8`]), and a BF16 `C`.

use crate::tma::{MBARRIER_BYTES, SMEM_ALIGN};

/// Depth of one stage: 64 BF16, 128 bytes, the 128-byte swizzle's span.
pub const BK: u32 = 64;
/// Bytes of one BF16 element.
pub const ELEMENT_BYTES: u32 = 2;
/// Depth of one `wgmma` (`k16` for 16-bit inputs; PTX ISA, "wgmma.mma_async": shapes).
pub const MMA_K: u32 = 16;
/// Depth of one TF32 stage: 32 FP32, the same 128-byte swizzle span as [`BK`] BF16.
pub const BK_TF32: u32 = BK * ELEMENT_BYTES / 4;
/// Depth of one TF32 `wgmma` (`k8` for 32-bit inputs; PTX ISA, "wgmma.mma_async": shapes):
/// 32 bytes of a row, as [`MMA_K`] BF16.
pub const MMA_K_TF32: u32 = MMA_K * ELEMENT_BYTES / 4;
/// `wgmma` steps per stage: a 128-byte row holds 4 steps of 32 bytes for every input type
/// (`k16` of BF16, `k8` of TF32, `k32` of FP8).
pub const STAGE_STEPS: u32 = BK / MMA_K;
/// Depth of one FP8 stage: 128 e4m3 elements of one byte, the same 128-byte swizzle span.
pub const BK_FP8: u32 = BK * ELEMENT_BYTES;
/// Depth of one FP8 `wgmma` (`k32` for 8-bit inputs; PTX ISA, "wgmma.mma_async": shapes): 32
/// bytes of a row, as [`MMA_K`] BF16.
pub const MMA_K_FP8: u32 = MMA_K * ELEMENT_BYTES;
/// The per-tensor scale the FP8 rung's lesson passes (the product of `A`'s and `B`'s): a power
/// of two, so scaling the FP32 sums is exact and the check stays the BF16 rungs'.
pub const FP8_SCALE: f32 = 0.125;
/// Threads of a warpgroup: 4 consecutive warps, the unit that issues `wgmma`.
pub const WARPGROUP: u32 = 128;
/// Rows of `C` one warpgroup computes per `wgmma` (`m64`).
pub const WARPGROUP_ROWS: u32 = 64;
/// Bytes between 8-row groups of a swizzled tile: 8 rows of 128 bytes (the descriptor's stride
/// byte offset; PTX ISA, "Matrix Descriptor Format").
pub const SWIZZLE_ATOM_BYTES: u32 = 8 * BK * ELEMENT_BYTES;
/// Registers per thread the producer warpgroup keeps (`setmaxnreg.dec`), and the consumers
/// take (`setmaxnreg.inc`): `40 * 128 + 2 * 232 * 128 = 64512` of the SM's 65536 (PTX ISA,
/// "setmaxnreg": a multiple of 8 in 24..=256).
pub const PRODUCER_REGS: u32 = 40;
/// See [`PRODUCER_REGS`].
pub const CONSUMER_REGS: u32 = 232;

/// One rung of the ladder: its entry, its tile and its roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rung {
    /// The kernel's entry name.
    pub name: &'static str,
    /// Columns of the block's tile of `C` (the `wgmma`'s `n`: 128 or 256).
    pub bn: u32,
    /// Consumer warpgroups, each `64` rows of the tile; 0: one warpgroup loads and computes
    /// (no producer).
    pub consumers: u32,
    /// Blocks per cluster along `m`, which share the tile of `B` by multicast.
    pub cluster: u32,
    /// Whether the warpgroups rebalance registers with `setmaxnreg`.
    pub setmaxnreg: bool,
    /// Whether each consumer stages its tile of `C` in shared memory for a TMA store
    /// ([`Rung::staging_bytes`]) instead of storing it from registers.
    pub tma_store: bool,
}

impl Rung {
    /// Rows of the block's tile of `C`.
    pub const fn bm(&self) -> u32 {
        WARPGROUP_ROWS * if self.consumers == 0 { 1 } else { self.consumers }
    }

    /// Threads per block: the consumers and one producer warpgroup (one warpgroup without).
    pub const fn threads(&self) -> u32 {
        WARPGROUP * (self.consumers + 1)
    }

    /// Bytes one stage holds: the tiles of `A` and `B`.
    pub const fn stage_bytes(&self) -> u32 {
        (self.bm() + self.bn) * BK * ELEMENT_BYTES
    }

    /// Dynamic shared bytes with `stages` stages: the alignment slack for the 1024-byte aligned
    /// ring (the 128-byte swizzle repeats every 1024 bytes), the stages, a full and an empty
    /// mbarrier per stage, and the staging of `C` where the rung has one.
    pub const fn smem_bytes(&self, stages: u32) -> u32 {
        SMEM_ALIGN + self.staging_offset(stages) + self.staging_bytes()
    }

    /// Bytes from the ring's start to the staging of `C`: the stages and their mbarriers,
    /// rounded up to the next 1024 bytes (the staging's boxes are 128-byte swizzled too).
    pub const fn staging_offset(&self, stages: u32) -> u32 {
        let ring = stages * self.stage_bytes() + 2 * stages * MBARRIER_BYTES;
        if self.tma_store { ring.div_ceil(SMEM_ALIGN) * SMEM_ALIGN } else { ring }
    }

    /// Bytes of the staging of `C` for a TMA store: each consumer's `64 x bn` BF16 tile as
    /// `bn / 64` boxes of [`STORE_BOX`] (128-byte rows); 0 for a rung that stores from
    /// registers.
    pub const fn staging_bytes(&self) -> u32 {
        if self.tma_store { self.consumers * WARPGROUP_ROWS * self.bn * ELEMENT_BYTES } else { 0 }
    }

    /// Rows of `B` each block of a cluster loads and multicasts: its share of the tile.
    pub const fn b_box_rows(&self) -> u32 {
        self.bn / self.cluster
    }

    /// Grid `(x, y)` covering an `m x n` product: `x` along `n`, `y` along `m`, rounded up to
    /// whole clusters along `y` (a block past `m` loads zeros and stores nothing).
    pub const fn grid(&self, m: u32, n: u32) -> (u32, u32) {
        let y = m.div_ceil(self.bm());
        (n.div_ceil(self.bn), y.div_ceil(self.cluster) * self.cluster)
    }
}

/// Rung 1: one warpgroup, one stage, `64 x 128`: load, wait, multiply, wait.
pub const WGMMA: Rung =
    Rung { name: "tensor_1_wgmma", bn: 128, consumers: 0, cluster: 1, setmaxnreg: false, tma_store: false };
/// Rung 2: a producer warpgroup and one consumer, a ring of stages, `64 x 128`.
pub const PIPELINED: Rung =
    Rung { name: "tensor_2_pipelined", bn: 128, consumers: 1, cluster: 1, setmaxnreg: false, tma_store: false };
/// Rung 3: two consumers, registers moved to them, `128 x 128`.
pub const SPECIALIZED: Rung =
    Rung { name: "tensor_3_specialized", bn: 128, consumers: 2, cluster: 1, setmaxnreg: true, tma_store: false };
/// Rung 4: `128 x 256` tiles, `m64n256k16`.
pub const WIDE: Rung =
    Rung { name: "tensor_4_wide", bn: 256, consumers: 2, cluster: 1, setmaxnreg: true, tma_store: false };
/// Rung 5: rung 4 in clusters of 2 along `m`, each block loading half of the shared `B` tile
/// and multicasting it to both.
pub const MULTICAST: Rung =
    Rung { name: "tensor_5_multicast", bn: 256, consumers: 2, cluster: 2, setmaxnreg: true, tma_store: false };

/// Rung 6: rung 4 on a persistent grid (one block per SM) that walks the tiles in bands of
/// [`GROUP_ROWS`] tile rows ([`tile_origin`]): the producer's ring runs on from one tile into
/// the next, so the next tile's loads overlap this tile's stores, and the blocks working at
/// once share their tiles of `A` and `B` in L2.
pub const PERSISTENT: Rung =
    Rung { name: "tensor_6_persistent", bn: 256, consumers: 2, cluster: 1, setmaxnreg: true, tma_store: false };

/// Rung 8: rung 6 with its epilogue through shared memory: each consumer writes its BF16 tile
/// of `C` into a 128-byte-swizzled staging buffer (no bank conflicts) and one thread starts
/// TMA stores of it, so the consumers go on to the next tile while the copy engine writes `C`
/// in whole lines. The staging's 64 KiB leave room for 3 stages.
pub const TMA_STORE: Rung =
    Rung { name: "tensor_8_tma_store", bn: 256, consumers: 2, cluster: 1, setmaxnreg: true, tma_store: true };

/// The TMA store's box of `C`: `(rows, columns)`, 64 BF16 columns (128 bytes, the 128-byte
/// swizzle's span) by a warpgroup's 64 rows.
pub const STORE_BOX: (u32, u32) = (WARPGROUP_ROWS, BK);

/// The BF16 ladder, in order.
pub const LADDER: [Rung; 7] = [WGMMA, PIPELINED, SPECIALIZED, WIDE, MULTICAST, PERSISTENT, TMA_STORE];

/// Rung 7: rung 6 with FP32 operands and result, multiplied in TF32 (`m64n256k8.f32.tf32.tf32`):
/// the same pipeline for the inputs an FP32 SGEMM has.
pub const TF32: Rung =
    Rung { name: "tensor_7_tf32", bn: 256, consumers: 2, cluster: 1, setmaxnreg: true, tma_store: false };

/// Rung 9: rung 8 on FP8 e4m3 operands (`m64n256k32.f32.e4m3.e4m3`), FP32 accumulator
/// registers (Hopper's FP8 tensor cores keep fewer bits of the running sum: about 14, DeepSeek-V3
/// technical report, section 3.3.2), one per-tensor scale applied to the sums, BF16 `C`: a stage row is 128 elements, the same 128
/// bytes, so the ring, the swizzle, the descriptors and the staging are rung 8's.
pub const FP8: Rung =
    Rung { name: "tensor_9_fp8", bn: 256, consumers: 2, cluster: 1, setmaxnreg: true, tma_store: true };

/// Every entry of the sm_90a PTX, in rung order: the TF32 rung is 7, after the BF16 rungs up to
/// the persistent one, and FP8 is 9, after the TMA store.
pub const RUNGS: [Rung; 9] = [WGMMA, PIPELINED, SPECIALIZED, WIDE, MULTICAST, PERSISTENT, TF32, TMA_STORE, FP8];

/// Tile rows per band of the persistent rung's order: tile `t` walks down a band of 8 tile rows
/// before it moves one tile column right, so 132 blocks at once cover about 8 x 16 tiles: 8
/// tiles of `A` and 16 of `B` per step instead of 1 and 132 in row-major order.
pub const GROUP_ROWS: u32 = 8;

/// Tiles of `rung` covering an `m x n` product: `(rows, columns)` of tiles.
pub const fn tiles(rung: &Rung, m: u32, n: u32) -> (u32, u32) {
    (m.div_ceil(rung.bm()), n.div_ceil(rung.bn))
}

/// Row and column (in tiles) of tile `t` in the persistent order over `tiles = (rows, cols)`:
/// bands of [`GROUP_ROWS`] tile rows (the last band may be shorter), column-major inside a band.
pub const fn tile_origin(t: u32, (rows, cols): (u32, u32)) -> (u32, u32) {
    let per_band = GROUP_ROWS * cols;
    let first = (t / per_band) * GROUP_ROWS;
    let height = if rows - first < GROUP_ROWS { rows - first } else { GROUP_ROWS };
    let inside = t % per_band;
    (first + inside % height, inside / height)
}

/// Stages each rung runs with by default: rung 1 has one by design; the others take the
/// deepest ring that fits the 227 KiB a block may opt into (4 of 48 KiB for `128 x 256`, 3
/// beside the TMA store's 64 KiB of staging).
pub const fn default_stages(rung: &Rung) -> u32 {
    if rung.consumers == 0 {
        1
    } else if rung.tma_store {
        3
    } else {
        4
    }
}

/// The stage counts the pipeline lesson sweeps (rung 2).
pub const STAGE_SWEEP: [u32; 5] = [1, 2, 3, 4, 6];

/// `(entry, threads, blocks per SM)` of each rung, written into the sm_90a PTX as `.maxntid`
/// and `.minnctapersm` (what `__launch_bounds__(threads, 1)` writes): `setmaxnreg` takes effect
/// only under a register cap at entry, here `65536 / 384 = 170`, rounded down to 168.
pub fn launch_bounds() -> impl Iterator<Item = (&'static str, u32, u32)> {
    RUNGS.iter().map(|r| (r.name, r.threads(), 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_and_shared_bytes_are_the_documented_ones() {
        assert_eq!((WGMMA.bm(), WGMMA.threads(), WGMMA.smem_bytes(1)), (64, 128, 1024 + 24576 + 16));
        assert_eq!((PIPELINED.bm(), PIPELINED.threads()), (64, 256));
        assert_eq!((WIDE.bm(), WIDE.threads(), WIDE.stage_bytes()), (128, 384, 49152));
        assert_eq!(WIDE.smem_bytes(4), 1024 + 4 * 49152 + 64);
        assert!(WIDE.smem_bytes(4) <= 232_448, "4 stages fit the H200's 227 KiB opt-in");
        assert_eq!(MULTICAST.b_box_rows(), 128);
        assert_eq!(SWIZZLE_ATOM_BYTES, 1024);
        assert_eq!(PRODUCER_REGS * 128 + 2 * CONSUMER_REGS * 128, 64512);
        // The TF32 rung's rows and steps are the BF16 rungs' bytes.
        assert_eq!((BK_TF32 * 4, MMA_K_TF32 * 4), (BK * ELEMENT_BYTES, MMA_K * ELEMENT_BYTES));
        assert_eq!((BK_TF32 / MMA_K_TF32, TF32.smem_bytes(4)), (BK / MMA_K, WIDE.smem_bytes(4)));
        // The staging starts on a 1024-byte line after 3 stages and their barriers, and holds
        // two 64 x 256 BF16 tiles; 4 stages beside it would not fit.
        assert_eq!(TMA_STORE.staging_offset(3), 3 * 49152 + 1024);
        assert_eq!(TMA_STORE.smem_bytes(3), 1024 + 3 * 49152 + 1024 + 65536);
        assert!(TMA_STORE.smem_bytes(default_stages(&TMA_STORE)) <= 232_448);
        assert!(TMA_STORE.smem_bytes(4) > 232_448);
        assert_eq!(STORE_BOX.1 * ELEMENT_BYTES, 128);
        // FP8 rows and steps are the BF16 rungs' bytes too.
        assert_eq!((BK_FP8, MMA_K_FP8, BK_FP8 / MMA_K_FP8), (128, 32, BK / MMA_K));
        assert_eq!(FP8.smem_bytes(3), TMA_STORE.smem_bytes(3));
    }

    #[test]
    fn the_persistent_order_visits_every_tile_once_in_bands() {
        for (rows, cols) in [(64, 32), (5, 2), (9, 3), (1, 1), (17, 1)] {
            let mut seen = [[false; 64]; 64];
            for t in 0..rows * cols {
                let (r, c) = tile_origin(t, (rows, cols));
                assert!(r < rows && c < cols && !seen[r as usize][c as usize], "{t} in {rows}x{cols}");
                seen[r as usize][c as usize] = true;
            }
        }
        // Down a band of 8 rows, then the next column; the second band starts at row 8.
        assert_eq!(
            [tile_origin(0, (64, 32)), tile_origin(7, (64, 32)), tile_origin(8, (64, 32))],
            [(0, 0), (7, 0), (0, 1)]
        );
        assert_eq!(tile_origin(8 * 32, (64, 32)), (8, 0));
        assert_eq!(tiles(&PERSISTENT, 8192, 8192), (64, 32));
    }

    #[test]
    fn grids_cover_the_product_in_whole_clusters() {
        assert_eq!(WIDE.grid(8192, 8192), (32, 64));
        assert_eq!(MULTICAST.grid(517, 389), (2, 6));
        assert_eq!(WGMMA.grid(517, 389), (4, 9));
    }
}
