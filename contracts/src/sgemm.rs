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

/// One configuration of rung 8, the tuned rung (`kernels-gpu/src/sgemm/tuned.rs`): a `bm x bn`
/// tile of `C` per block, `bk` deep steps, warps owning `wm x wn` sub-tiles, threads `tm x tn`
/// results (in groups of 4 x 4), `stages` shared-memory stages filled by `cp.async`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuned {
    /// The PTX entry: `sgemm_8_<bm>x<bn>x<bk>_w<wm>x<wn>_t<tm>x<tn>_s<stages>`.
    pub name: &'static str,
    /// Rows of the block's `C` tile.
    pub bm: u32,
    /// Columns of the block's `C` tile.
    pub bn: u32,
    /// Depth of one step: columns of `A`, rows of `B` staged at once.
    pub bk: u32,
    /// Rows of a warp's sub-tile.
    pub wm: u32,
    /// Columns of a warp's sub-tile.
    pub wn: u32,
    /// Rows of a thread's results (a multiple of 4).
    pub tm: u32,
    /// Columns of a thread's results (a multiple of 4).
    pub tn: u32,
    /// Shared-memory stages (2 or more).
    pub stages: u32,
}

impl Tuned {
    /// Warps per block.
    pub const fn warps(&self) -> u32 {
        (self.bm / self.wm) * (self.bn / self.wn)
    }

    /// Threads per block (one-dimensional).
    pub const fn threads(&self) -> u32 {
        32 * self.warps()
    }

    /// Lanes of a warp along its rows: `wm / tm` (and `wn / tn` along its columns).
    pub const fn lane_rows(&self) -> u32 {
        self.wm / self.tm
    }

    /// Row pitch of the `bm x bk` tile of `A` in shared memory, floats: `bk + 4`, one 16-byte
    /// chunk of padding, so that the rows a warp reads at one depth (consecutive ones) start in
    /// different groups of 4 banks.
    pub const fn a_pitch(&self) -> u32 {
        self.bk + 4
    }

    /// Dynamic shared bytes: `stages` copies of the padded `bm x bk` tile of `A` and the
    /// `bk x bn` tile of `B`.
    pub const fn smem_bytes(&self) -> u32 {
        self.stages * (self.bm * self.a_pitch() + self.bk * self.bn) * WORD_BYTES
    }

    /// Whether the configuration is one the kernel can run: warps tile the block, 32 lanes
    /// tile the warp with groups of 4 x 4 results, every thread copies whole 16-byte chunks of
    /// both tiles, and the stages fit in 99 KiB, the smallest opt-in limit of the GPUs that
    /// run the sm_80 PTX (cc 8.6 and 8.9; CUDA C++ Programming Guide, "Technical
    /// Specifications per Compute Capability").
    pub const fn valid(&self) -> bool {
        let dims = self.bm.is_multiple_of(self.wm)
            && self.bn.is_multiple_of(self.wn)
            && self.tm.is_multiple_of(4)
            && self.tn.is_multiple_of(4);
        let lanes = dims && self.wm.is_multiple_of(self.tm) && self.wn.is_multiple_of(self.tn);
        lanes
            && (self.wm / self.tm) * (self.wn / self.tn) == 32
            && self.bk.is_multiple_of(4)
            && (self.bm * self.bk / 4).is_multiple_of(self.threads())
            && (self.bk * self.bn / 4).is_multiple_of(self.threads())
            && self.stages >= 2
            && self.smem_bytes() <= 99 * 1024
    }
}

/// Declares the configurations of rung 8 compiled into the PTX, each `name = (bm, bn, bk, wm,
/// wn, tm, tn, stages)`, by calling `$callback!` with the list: the one list that the contract
/// table ([`TUNED`]), the kernels (one entry each) and the host's typed launches are built from.
#[macro_export]
macro_rules! tuned_configs {
    ($callback:path) => {
        $callback! {
            sgemm_8_128x128x8_w32x64_t8x8_s3 = (128, 128, 8, 32, 64, 8, 8, 3),
            sgemm_8_128x128x8_w32x64_t8x8_s4 = (128, 128, 8, 32, 64, 8, 8, 4),
            sgemm_8_128x128x16_w32x64_t8x8_s2 = (128, 128, 16, 32, 64, 8, 8, 2),
            sgemm_8_128x128x16_w32x64_t8x8_s4 = (128, 128, 16, 32, 64, 8, 8, 4),
            sgemm_8_128x128x16_w64x32_t8x8_s2 = (128, 128, 16, 64, 32, 8, 8, 2),
            sgemm_8_128x64x16_w64x32_t8x8_s3 = (128, 64, 16, 64, 32, 8, 8, 3),
            sgemm_8_64x64x16_w32x32_t4x8_s3 = (64, 64, 16, 32, 32, 4, 8, 3),
            sgemm_8_64x64x32_w32x32_t4x8_s2 = (64, 64, 32, 32, 32, 4, 8, 2),
        }
    };
}

macro_rules! tuned_table {
    ($($name:ident = ($bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $tm:literal, $tn:literal, $s:literal)),* $(,)?) => {
        /// Every configuration of rung 8 in the PTX (sm_80 and up), in [`tuned_configs!`]'s order.
        pub const TUNED: &[Tuned] = &[$(
            Tuned { name: stringify!($name), bm: $bm, bn: $bn, bk: $bk, wm: $wm, wn: $wn, tm: $tm, tn: $tn, stages: $s }
        ),*];
    };
}
tuned_configs!(tuned_table);

const _: () = {
    let mut i = 0;
    while i < TUNED.len() {
        assert!(TUNED[i].valid());
        i += 1;
    }
};

/// Where the 16-byte chunk `flat` (in row-major order) of a tile of `A` lies in shared memory:
/// the chunk's place inside its 128-byte line (8 chunks, one pass over the 32 banks) XOR the
/// line's index, modulo 8. A bijection inside every line, so a warp's `cp.async` writes of whole
/// lines stay at one wavefront per line, while the chunks of one column in 8 consecutive rows of
/// 16 floats (rung 9's `ldmatrix` of one 8 x 4 matrix), which unswizzled fall two by two into
/// the same 4 banks (2-way conflict), land in 8 different groups of 4 banks. CUTLASS's `Swizzle<3,4,3>`, in chunks.
pub const fn swizzle_a(flat: u32) -> u32 {
    flat ^ ((flat >> 3) & 7)
}

/// Rung 9 (`sgemm_9_tensor_tf32`): `128 x 128` tile of `C`, 8 warps of `64 x 32`.
pub const TF32_TILE: u32 = 128;
/// Rung 9's depth of one step (two `k = 8` MMA steps).
pub const TF32_BK: u32 = 16;
/// Rung 9's threads per block.
pub const TF32_THREADS: u32 = 256;
/// Rung 9's shared-memory stages.
pub const TF32_STAGES: u32 = 3;
/// Rung 9's warp tile: rows (4 MMA tiles of 16) and columns (4 MMA tiles of 8).
pub const TF32_WARP: (u32, u32) = (64, 32);

/// Where the 16-byte chunk `chunk` of row `k` of rung 9's `B` tile lies in its row: the
/// chunk's place XOR `2 (k mod 4)`. A fragment load reads rows `k .. k + 3` (lanes' `k = lane %
/// 4`) at 8 consecutive columns: two chunks per row, the same two banks groups in every row
/// unswizzled (4-way conflict), 8 different ones swizzled.
pub const fn swizzle_b_tf32(k: u32, chunk: u32) -> u32 {
    chunk ^ ((k & 3) << 1)
}

/// Rung 9's dynamic shared bytes: [`TF32_STAGES`] copies of the `128 x 16` tile of `A` and the
/// `16 x 128` tile of `B`.
pub const fn tf32_smem_bytes() -> u32 {
    TF32_STAGES * TF32_BK * 2 * TF32_TILE * WORD_BYTES
}

/// Registers per thread rungs 8 and 9 are compiled for: at 128, an SM's 65536 registers hold
/// 512 threads (2 blocks of 256, 4 of 128), where ptxas left alone takes up to 167 (measured,
/// sm_90) and halves the blocks per SM.
pub const TUNED_REGS: u32 = 128;

/// Registers in an SM's register file, every compute capability from 7.0 to 9.0 (CUDA C++
/// Programming Guide, "Technical Specifications per Compute Capability").
const SM_REGISTERS: u32 = 65536;

/// The launch bounds of rungs 8 and 9 as `(entry, threads per block, blocks per SM)`: the host's
/// build step writes them into the PTX as `.maxntid` and `.minnctapersm` (PTX ISA,
/// "Performance-Tuning Directives"), CUDA C++'s `__launch_bounds__(threads, blocks)`, for which
/// rustc has no attribute. ptxas then caps registers at [`TUNED_REGS`].
pub fn launch_bounds() -> impl Iterator<Item = (&'static str, u32, u32)> {
    let tf32 = |name| (name, TF32_THREADS, SM_REGISTERS / (TF32_THREADS * TUNED_REGS));
    let tuned = TUNED.iter().map(|c| (c.name, c.threads(), SM_REGISTERS / (c.threads() * TUNED_REGS)));
    tuned.chain([tf32("sgemm_9_tensor_tf32"), tf32("sgemm_9_tensor_tf32_unswizzled")])
}
