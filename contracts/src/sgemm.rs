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

/// How a configuration of rung 8 moves its tiles from global to shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// Both tiles by `cp.async` (`sgemm/tuned.rs`), `stages` deep; `A` stored untransposed with
    /// rows padded to `bk + 4` floats and read by columns (64-bit loads of 2 depths).
    AsyncCopy,
    /// Rung 6's algorithm, generic over the tiles (`sgemm/staged.rs`): 128-bit global loads
    /// into registers during the FMAs, stored into the other of two stages after them, `A`
    /// transposed (rows of `bm + 4` floats) so that a thread's 4 rows at one depth are one
    /// 128-bit shared load, like its 4 columns of `B`.
    Registers,
}

/// One configuration of rung 8, the tuned rung (`kernels-gpu/src/sgemm/tuned.rs`): a `bm x bn`
/// tile of `C` per block, `bk` deep steps, warps owning `wm x wn` sub-tiles, threads `tm x tn`
/// results (in groups of 4 x 4), `stages` shared-memory stages filled as `algo` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuned {
    /// The PTX entry: `sgemm_8_<bm>x<bn>x<bk>_w<wm>x<wn>_t<tm>x<tn>_s<stages>` for
    /// [`Algo::AsyncCopy`], `sgemm_8_<bm>x<bn>x<bk>_w<wm>x<wn>_t<tm>x<tn>_regs` for
    /// [`Algo::Registers`] (always 2 stages).
    pub name: &'static str,
    /// How tiles reach shared memory.
    pub algo: Algo,
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

    /// Row pitch of the tile of `A` in shared memory, floats, one 16-byte chunk of padding:
    /// [`Algo::AsyncCopy`] stores `bm` rows of `bk + 4`, so that the rows a warp reads at one
    /// depth (consecutive ones) start in different groups of 4 banks; [`Algo::Registers`]
    /// stores it transposed, `bk` rows of `bm + 4`, so that the 4 scalar stores of a thread's
    /// 4 depths land 4 banks apart from its neighbours' (rung 5's padding).
    pub const fn a_pitch(&self) -> u32 {
        match self.algo {
            Algo::AsyncCopy => self.bk + 4,
            Algo::Registers => self.bm + 4,
        }
    }

    /// Floats of one stage: the padded tile of `A` and the `bk x bn` tile of `B`.
    pub const fn stage_floats(&self) -> u32 {
        let a = match self.algo {
            Algo::AsyncCopy => self.bm * self.a_pitch(),
            Algo::Registers => self.bk * self.a_pitch(),
        };
        a + self.bk * self.bn
    }

    /// Dynamic shared bytes: `stages` stages.
    pub const fn smem_bytes(&self) -> u32 {
        self.stages * self.stage_floats() * WORD_BYTES
    }

    /// Blocks per SM the kernel is compiled for (`.minnctapersm`) in the PTX for `sm` (80 or
    /// 90): as many as [`tuned_regs`] registers per thread allow, or 1 for thread tiles above
    /// 64 results, whose accumulators alone take 128 registers (ptxas may then use up to 255).
    pub const fn blocks_per_sm(&self, sm: u32) -> u32 {
        if self.tm * self.tn > 64 { 1 } else { SM_REGISTERS / (self.threads() * tuned_regs(sm, self.tm * self.tn)) }
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
            && (matches!(self.algo, Algo::AsyncCopy) || self.stages == 2)
            && self.smem_bytes() <= 99 * 1024
    }
}

/// Declares the configurations of rung 8 compiled into the PTX, each `name = Algo (bm, bn, bk,
/// wm, wn, tm, tn, stages)`, by calling `$callback!` with the list: the one list that the
/// contract table ([`TUNED`]), the kernels (one entry each) and the host's typed launches are
/// built from.
///
/// Measured on the H200 (`memlab autotune`, TFLOP/s at 1024^3 / 2048^3 / 4096^3;
/// cuBLAS FP32 30.1 / 48.8 / 51.1): the `AsyncCopy` ones 15.5-30.0 / 35.0-38.2 / 36.3-39.4,
/// below rung 6 (43.7 at 4096^3): reading `A` by columns costs 64-bit shared loads where rung
/// 6 reads it transposed in 128-bit ones. The `Registers` ones are rung 6's algorithm at other
/// tiles (the first is rung 6's own configuration), so the tuned rung is never slower than
/// rung 6; the `8 x 16` and `16 x 8` thread tiles halve the shared loads per FMA at 1 block
/// per SM.
#[macro_export]
macro_rules! tuned_configs {
    ($callback:path) => {
        $callback! {
            sgemm_8_128x128x8_w32x64_t8x8_s3 = AsyncCopy (128, 128, 8, 32, 64, 8, 8, 3),
            sgemm_8_128x128x8_w32x64_t8x8_s4 = AsyncCopy (128, 128, 8, 32, 64, 8, 8, 4),
            sgemm_8_128x128x16_w32x64_t8x8_s2 = AsyncCopy (128, 128, 16, 32, 64, 8, 8, 2),
            sgemm_8_128x128x16_w32x64_t8x8_s4 = AsyncCopy (128, 128, 16, 32, 64, 8, 8, 4),
            sgemm_8_128x128x16_w64x32_t8x8_s2 = AsyncCopy (128, 128, 16, 64, 32, 8, 8, 2),
            sgemm_8_128x64x16_w64x32_t8x8_s3 = AsyncCopy (128, 64, 16, 64, 32, 8, 8, 3),
            sgemm_8_64x64x16_w32x32_t4x8_s3 = AsyncCopy (64, 64, 16, 32, 32, 4, 8, 3),
            sgemm_8_64x64x32_w32x32_t4x8_s2 = AsyncCopy (64, 64, 32, 32, 32, 4, 8, 2),
            sgemm_8_128x128x8_w32x64_t8x8_regs = Registers (128, 128, 8, 32, 64, 8, 8, 2),
            sgemm_8_128x128x8_w64x32_t8x8_regs = Registers (128, 128, 8, 64, 32, 8, 8, 2),
            sgemm_8_128x128x8_w64x64_t8x16_regs = Registers (128, 128, 8, 64, 64, 8, 16, 2),
            sgemm_8_128x256x8_w64x64_t8x16_regs = Registers (128, 256, 8, 64, 64, 8, 16, 2),
            sgemm_8_256x128x8_w64x64_t16x8_regs = Registers (256, 128, 8, 64, 64, 16, 8, 2),
            sgemm_8_128x64x8_w64x32_t8x8_regs = Registers (128, 64, 8, 64, 32, 8, 8, 2),
            sgemm_8_64x64x8_w32x32_t4x8_regs = Registers (64, 64, 8, 32, 32, 4, 8, 2),
        }
    };
}

macro_rules! tuned_table {
    ($($name:ident = $algo:ident ($bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $tm:literal, $tn:literal, $s:literal)),* $(,)?) => {
        /// Every configuration of rung 8 in the PTX (sm_80 and up), in [`tuned_configs!`]'s order.
        pub const TUNED: &[Tuned] = &[$(
            Tuned { name: stringify!($name), algo: Algo::$algo, bm: $bm, bn: $bn, bk: $bk, wm: $wm, wn: $wn, tm: $tm, tn: $tn, stages: $s }
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

/// Registers per thread that thread tiles of 64 results need in the sm_80 PTX: ptxas (CUDA 13.0)
/// spills 4-24 bytes under [`TUNED_REGS`] there and takes 142-165 registers when free (measured
/// here on every such configuration of [`tuned_configs!`]; the sm_90 PTX fits in 128). At 168,
/// blocks of 128 threads run 3 per SM and blocks of 256 one.
pub const SM80_TILE64_REGS: u32 = 168;

/// Registers per thread a rung-8 configuration with `results` per thread is compiled for in the
/// PTX for `sm` (80 or 90): [`TUNED_REGS`], or [`SM80_TILE64_REGS`] for 64 results below sm_90.
pub const fn tuned_regs(sm: u32, results: u32) -> u32 {
    if sm < 90 && results == 64 { SM80_TILE64_REGS } else { TUNED_REGS }
}

/// Registers in an SM's register file, every compute capability from 7.0 to 9.0 (CUDA C++
/// Programming Guide, "Technical Specifications per Compute Capability").
const SM_REGISTERS: u32 = 65536;

/// The launch bounds of rungs 8 (the split-K rung with its configuration's) and 9 in the PTX for `sm` (80 or 90) as `(entry, threads per
/// block, blocks per SM)`: the host's build step writes them into the PTX as `.maxntid` and
/// `.minnctapersm` (PTX ISA, "Performance-Tuning Directives"), CUDA C++'s
/// `__launch_bounds__(threads, blocks)`, for which rustc has no attribute. ptxas then caps
/// registers at `65536 / (threads x blocks)` (at most 255).
pub fn launch_bounds(sm: u32) -> impl Iterator<Item = (&'static str, u32, u32)> {
    let tf32 = |name| (name, TF32_THREADS, SM_REGISTERS / (TF32_THREADS * TUNED_REGS));
    let tuned = TUNED.iter().map(move |c| (c.name, c.threads(), c.blocks_per_sm(sm)));
    let split = split_k_config();
    let split_k = (SPLIT_K, split.threads(), split.blocks_per_sm(sm));
    tuned.chain([split_k, tf32("sgemm_9_tensor_tf32"), tf32("sgemm_9_tensor_tf32_unswizzled")])
}

/// The split-K rung (`kernels-gpu/src/sgemm/split_k.rs`): rung 6's block tile (the
/// [`TUNED`] configuration `sgemm_8_128x128x8_w32x64_t8x8_regs`, the `Registers` algorithm) over
/// a range of `k` chosen by the block's split, its partial tile written to a workspace of
/// `splits` `m x n` slices; [`SPLIT_K_REDUCE`] then sums the slices into `C`.
pub const SPLIT_K: &str = "sgemm_split_k_128x128";
/// The configuration of [`TUNED`] whose tile, threads and shared bytes [`SPLIT_K`] has.
pub const SPLIT_K_CONFIG: &str = "sgemm_8_128x128x8_w32x64_t8x8_regs";
/// The reduce kernel of the split-K rung: `C[i] = sum over s of W[s m n + i]`, `s` in order.
pub const SPLIT_K_REDUCE: &str = "sgemm_split_k_reduce";
/// Threads per block of [`SPLIT_K_REDUCE`]; each thread sums 4 consecutive elements.
pub const REDUCE_THREADS: u32 = 256;
/// The most splits the split-K rung takes: beyond 16 the partial sums (16 `m x n` slices written
/// and read back) cost more than any wave they could fill saves at the shapes of the lesson.
pub const MAX_SPLITS: u32 = 16;

/// The configuration [`SPLIT_K`] shares its tile with.
pub const fn split_k_config() -> &'static Tuned {
    let mut i = 0;
    while i < TUNED.len() {
        if const_eq(TUNED[i].name, SPLIT_K_CONFIG) {
            return &TUNED[i];
        }
        i += 1;
    }
    panic!("SPLIT_K_CONFIG names a configuration of TUNED")
}

const fn const_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Depth steps (of `bk`) each split of a `k`-deep product covers when asked for `splits`:
/// `per = ceil(ceil(k / bk) / splits)`, at least 1. Split `s` covers steps `s per ..
/// (s + 1) per`, the last one up to `ceil(k / bk)`: every split starts and ends on a whole step,
/// so only the product's own last step is partial.
pub const fn split_steps(k: u32, bk: u32, splits: u32) -> u32 {
    let steps = k.div_ceil(bk);
    let per = steps.div_ceil(if splits == 0 { 1 } else { splits });
    if per == 0 { 1 } else { per }
}

/// The splits that have work when `splits` are asked for: `ceil(steps / split_steps)` (asking
/// for 5 splits of 8 steps gives 4 of 2). The grid has this many.
pub const fn splits_used(k: u32, bk: u32, splits: u32) -> u32 {
    let steps = k.div_ceil(bk);
    let used = steps.div_ceil(split_steps(k, bk, splits));
    if used == 0 { 1 } else { used }
}

#[cfg(test)]
mod split_k_tests {
    use super::*;

    #[test]
    fn splits_cover_every_step_once() {
        for k in [1, 7, 8, 9, 64, 263, 1000, 4096] {
            for splits in 1..=MAX_SPLITS {
                let (per, used) = (split_steps(k, BK, splits), splits_used(k, BK, splits));
                let steps = k.div_ceil(BK);
                assert!(used <= splits && used >= 1, "k {k} splits {splits}");
                // The used splits reach the last step, and the last one has at least one step.
                assert!(per * used >= steps && per * (used - 1) < steps, "k {k} splits {splits}");
            }
        }
        assert_eq!((split_steps(64, 8, 5), splits_used(64, 8, 5)), (2, 4));
        assert_eq!((split_steps(4096, 8, 8), splits_used(4096, 8, 8)), (64, 8));
        assert_eq!(split_k_config().name, SPLIT_K_CONFIG);
        assert_eq!(split_k_config().algo, Algo::Registers);
    }
}
