//! Hopper's warpgroup matrix multiply (`wgmma`) fed by TMA through a ring of shared-memory
//! stages paced by mbarriers, as inline PTX. cc 9.0 with the arch-specific features only: the
//! sm_90a PTX, which `host/build.rs` builds for the tensor ladder alone (`wgmma` and
//! `setmaxnreg` exist only for `sm_90a`; PTX ISA, "wgmma.mma_async" and "setmaxnreg": target
//! ISA notes).
//!
//! Sources: PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"
//! (`wgmma.mma_async`, `wgmma.fence`, `wgmma.commit_group`, `wgmma.wait_group`, "Matrix
//! Descriptor Format", "Register Fragments": the accumulator layout), "setmaxnreg",
//! "cp.async.bulk.tensor" (`.multicast::cluster`), "mbarrier" (remote arrival through
//! `.shared::cluster`), "membar/fence" (`fence.mbarrier_init`); CUDA C++ Programming Guide,
//! "Asynchronous Data Copies using the Tensor Memory Accelerator (TMA)".
//!
//! Soundness, beyond the device API's invariants and those of `device/tma.rs`:
//! 1. The launch contract: the block has the threads of its [`memlab_contracts::tensor::Rung`]
//!    and the dynamic shared bytes of `Rung::smem_bytes`; the maps are BF16 maps (FP32 for
//!    [`Tf32`], bytes for [`E4m3`]) whose boxes are the ring's tiles (rows of 128 bytes: `bm` of them for `A`,
//!    `bn / cluster` for `B`, 128-byte swizzle).
//!    A tensor copy then writes only inside its stage, and a descriptor only names bytes of the
//!    ring: [`Stage`] makes them from the stage's own addresses, with the offsets checked in
//!    the `checked` build.
//! 2. Every `.sync.aligned` instruction here (`wgmma.*`, `setmaxnreg`) is reached by all 128
//!    threads of a warpgroup together, as a block barrier is by the block (the device API's
//!    invariant 2). ptxas orders the accumulator registers around `wgmma.wait_group`: a read
//!    before the wait is serialised by it, not undefined.
//! 3. Ordering is the ring's protocol ([`Ring::load`] and [`Ring::consume`]): a stage is read
//!    only after its full barrier completes and reloaded only after every consumer of the
//!    cluster has released it, after its `wgmma`s completed. A wrong protocol races or hangs;
//!    it does not reach outside the ring.
//! 4. A [`Staging`] lies after the ring inside the launch's shared bytes (invariant 1, with
//!    `Rung::smem_bytes` of a rung with `tma_store`), one per consumer warpgroup, and only its
//!    warpgroup writes it, between a wait for its previous TMA stores' reads and a barrier of
//!    those 128 threads (`barrier.sync` with the warpgroup's own id, 1 + its slice); the map of
//!    `C` is a BF16 map with box `STORE_BOX` and the 128-byte swizzle, whose stores the copy
//!    engine clips to `C`.

use core::arch::asm;

use super::tma::{
    Map, SharedAddr, bulk_commit, bulk_wait_read, check, fence_proxy_async_shared, mbarrier_arrive_expect_tx,
    mbarrier_init, mbarrier_wait, tensor_load_2d, tensor_store_2d,
};
use memlab_contracts::tensor::{
    BK, BK_FP8, BK_TF32, ELEMENT_BYTES, MMA_K, Rung, STAGE_STEPS, STORE_BOX, SWIZZLE_ATOM_BYTES, WARPGROUP,
    WARPGROUP_ROWS,
};
use memlab_contracts::tma::{MBARRIER_BYTES, SMEM_ALIGN};
use memlab_device_api::arch::cluster::{cluster_ctarank, cluster_sync, map_shared_rank};
use memlab_device_api::global::{ReadWrite, Slice};
use memlab_device_api::{Block, arch};

/// A `wgmma` matrix descriptor (64 bits; PTX ISA, "Matrix Descriptor Format") of a K-major
/// tile under the 128-byte swizzle: start address `>> 4` in bits 0-13, leading byte offset 1
/// (unused by swizzled K-major tiles), stride byte offset 1024 `>> 4` (8 rows of 128 bytes) in
/// bits 32-45, swizzle mode 1 (128 bytes) in bits 62-63. Only a [`Stage`] makes one.
#[derive(Clone, Copy)]
pub struct Desc(u64);

impl Desc {
    /// The descriptor of the tile at shared address `at`, a 1024-byte aligned row group plus a
    /// depth offset of whole `k16` steps (32 bytes each): the swizzle is applied to the address
    /// bits, so stepping the start address inside a 128-byte line steps the depth.
    #[inline(always)]
    fn at(at: SharedAddr) -> Desc {
        let start = u64::from(at.0 & 0x3ffff) >> 4;
        Desc(start | (1 << 16) | (u64::from(SWIZZLE_ATOM_BYTES >> 4) << 32) | (1 << 62))
    }
}

/// One stage of the ring as its consumers see it: the tiles of `A` and `B` after their loads
/// completed.
#[derive(Clone, Copy)]
pub struct Stage {
    a: SharedAddr,
    b: SharedAddr,
    a_rows: u32,
}

/// Bytes of one tile row: `BK` BF16, one swizzle span.
const ROW_BYTES: u32 = BK * ELEMENT_BYTES;
/// Bytes one `k16` step moves along a row.
const STEP_BYTES: u32 = MMA_K * ELEMENT_BYTES;

impl Stage {
    /// The descriptor of rows `64 slice ..` of the stage's `A` tile at depth step `step`
    /// (`0 .. BK / 16`): the `m64` operand of warpgroup `slice`.
    #[inline(always)]
    pub fn a(&self, slice: u32, step: u32) -> Desc {
        check((slice + 1) * WARPGROUP_ROWS <= self.a_rows && step < STAGE_STEPS);
        Desc::at(self.a.add(slice * WARPGROUP_ROWS * ROW_BYTES + step * STEP_BYTES))
    }

    /// The descriptor of the stage's whole `B` tile at depth step `step`.
    #[inline(always)]
    pub fn b(&self, step: u32) -> Desc {
        check(step < STAGE_STEPS);
        Desc::at(self.b.add(step * STEP_BYTES))
    }
}

/// The accumulator of one warpgroup's `64 x N` tile of `C`, `N / 2` floats per thread, and the
/// `wgmma` that adds one `k16` step to it.
pub trait Accum: Sized {
    /// Columns of the tile (the `wgmma`'s `n`).
    const N: u32;
    /// All zeros.
    fn zero() -> Self;
    /// `D += A * B` for one `k16` step, BF16 inputs, FP32 accumulation
    /// (`wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16`, scale-d 1, no transposes: both
    /// operands K-major). Asynchronous: its results are complete after [`wait`].
    fn mma(&mut self, a: Desc, b: Desc);
    /// `D += A * B` for one `k8` step of FP32 inputs multiplied in TF32
    /// (`wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32`; both operands K-major, the only
    /// layout TF32 has): the same 32 bytes of each row as a BF16 `k16` step.
    fn mma_tf32(&mut self, a: Desc, b: Desc);
    /// `D += A * B` for one `k32` step of FP8 e4m3 inputs
    /// (`wgmma.mma_async.sync.aligned.m64nNk32.f32.e4m3.e4m3`; both operands K-major, the only
    /// layout 8-bit inputs have): the same 32 bytes of each row as a BF16 `k16` step.
    fn mma_e4m3(&mut self, a: Desc, b: Desc);
    /// Calls `f(j, [v0, v1, v2, v3])` for each 8 columns `j` (`0 .. N / 8`) with the
    /// thread's 4 values there, in straight-line code (a loop index into the array would send
    /// it to local memory).
    fn each_8_columns(&self, f: impl FnMut(u32, [f32; 4]));
}

/// `{%0, %1, ..., %N}`: the accumulator list of a `wgmma` template.
macro_rules! regs {
    ($first:literal $($i:literal)*) => { concat!("{{{", $first, "}", $(",{", $i, "}",)* "}}") };
}

/// The `wgmma` of shape `$shape` and input types `$types` over the accumulator `$d` at indices
/// `$i`, with scale-d 1 and `$imm` (the input scales, and for 16-bit inputs the transposes; a
/// TF32 or FP8 `wgmma` has no transpose operands).
macro_rules! wgmma {
    ($shape:literal, $types:literal, $imm:literal, $d:expr, $a:expr, $b:expr; $($i:literal)*) => {
        // SAFETY: registers and descriptors only; the warpgroup executes it together and the
        // descriptors name a stage of the ring (the module's invariants 1 and 2).
        unsafe {
            asm!(
                concat!("wgmma.mma_async.sync.aligned.", $shape, $types, " ", regs!($($i)*), ", {da}, {db}, 1, ", $imm, ";"),
                $(inout(reg32) $d[$i],)*
                da = in(reg64) $a.0, db = in(reg64) $b.0,
            )
        }
    };
}

/// [`wgmma!`] over the accumulator `[f32; 64]`: every index, `0 ..= 63`.
macro_rules! wgmma_64 {
    ($($args:tt)*) => {
        wgmma!($($args)*;
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63)
    };
}

/// [`wgmma!`] over the accumulator `[f32; 128]`: every index, `0 ..= 127`.
macro_rules! wgmma_128 {
    ($($args:tt)*) => {
        wgmma!($($args)*;
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
            64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
            96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127)
    };
}

impl Accum for [f32; 64] {
    const N: u32 = 128;
    #[inline(always)]
    fn zero() -> Self {
        [0.0; 64]
    }
    #[inline(always)]
    fn mma(&mut self, a: Desc, b: Desc) {
        wgmma_64!("m64n128k16", ".f32.bf16.bf16", "1, 1, 0, 0", self, a, b);
    }
    #[inline(always)]
    fn mma_tf32(&mut self, a: Desc, b: Desc) {
        wgmma_64!("m64n128k8", ".f32.tf32.tf32", "1, 1", self, a, b);
    }
    #[inline(always)]
    fn mma_e4m3(&mut self, a: Desc, b: Desc) {
        wgmma_64!("m64n128k32", ".f32.e4m3.e4m3", "1, 1", self, a, b);
    }
    #[inline(always)]
    fn each_8_columns(&self, mut f: impl FnMut(u32, [f32; 4])) {
        unroll!(j in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] => {
            f(j as u32, [self[4 * j], self[4 * j + 1], self[4 * j + 2], self[4 * j + 3]])
        });
    }
}

impl Accum for [f32; 128] {
    const N: u32 = 256;
    #[inline(always)]
    fn zero() -> Self {
        // A constant, not `[0.0; 128]`: rustc writes that repeat as a loop, whose run-time
        // index keeps the accumulator in local memory.
        const ZERO: [f32; 128] = [0.0; 128];
        ZERO
    }
    #[inline(always)]
    fn mma(&mut self, a: Desc, b: Desc) {
        wgmma_128!("m64n256k16", ".f32.bf16.bf16", "1, 1, 0, 0", self, a, b);
    }
    #[inline(always)]
    fn mma_tf32(&mut self, a: Desc, b: Desc) {
        wgmma_128!("m64n256k8", ".f32.tf32.tf32", "1, 1", self, a, b);
    }
    #[inline(always)]
    fn mma_e4m3(&mut self, a: Desc, b: Desc) {
        wgmma_128!("m64n256k32", ".f32.e4m3.e4m3", "1, 1", self, a, b);
    }
    #[inline(always)]
    fn each_8_columns(&self, mut f: impl FnMut(u32, [f32; 4])) {
        unroll!(j in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31] => {
            f(j as u32, [self[4 * j], self[4 * j + 1], self[4 * j + 2], self[4 * j + 3]])
        });
    }
}

/// Orders the warpgroup's register and shared accesses before the `wgmma`s that follow
/// (`wgmma.fence.sync.aligned`).
#[inline(always)]
fn fence() {
    // SAFETY: no operands; the warpgroup reaches it together (invariant 2).
    unsafe { asm!("wgmma.fence.sync.aligned;") };
}

/// Closes the warpgroup's `wgmma`s issued since the last commit into a group
/// (`wgmma.commit_group.sync.aligned`).
#[inline(always)]
fn commit() {
    // SAFETY: as for `fence`.
    unsafe { asm!("wgmma.commit_group.sync.aligned;") };
}

/// Waits until at most `PENDING` of the warpgroup's committed `wgmma` groups are in flight
/// (`wgmma.wait_group.sync.aligned`): the others' accumulators are written and their shared
/// operands read.
#[inline(always)]
pub fn wait<const PENDING: u32>() {
    // SAFETY: as for `fence`.
    unsafe { asm!("wgmma.wait_group.sync.aligned {n};", n = const PENDING) };
}

/// Lowers this warpgroup's registers per thread to `REGS` (`setmaxnreg.dec.sync.aligned.u32`),
/// handing the rest to the SM for other warpgroups to take.
#[inline(always)]
pub fn release_registers<const REGS: u32>() {
    // SAFETY: no operands; the warpgroup reaches it together (invariant 2); an increase that
    // finds too few free registers waits, it does not fail.
    unsafe { asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const REGS) };
}

/// Raises this warpgroup's registers per thread to `REGS` (`setmaxnreg.inc.sync.aligned.u32`),
/// waiting until the SM has them free.
#[inline(always)]
pub fn take_registers<const REGS: u32>() {
    // SAFETY: as for `release_registers`.
    unsafe { asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const REGS) };
}

/// The block's ring of GEMM stages: `stages` pairs of a `bm x 64` tile of `A` and a `bn x 64`
/// tile of `B`, the first 1024-byte aligned in the dynamic shared memory, then a full and an
/// empty mbarrier per stage. A stage's loads complete on its full barrier; its consumers release
/// it on its empty barrier, in every block of the cluster (a multicast load writes them all).
#[derive(Clone, Copy)]
pub struct Ring {
    base: SharedAddr,
    a_bytes: u32,
    b_bytes: u32,
    stages: u32,
    cluster: u32,
}

impl Ring {
    /// Carves the ring for `a_rows x 64` and `b_rows x 64` tiles in a block of `consumers`
    /// consumer warpgroups and clusters of `cluster` blocks (the launch's: invariant 1); thread 0
    /// initialises each full barrier for one arrival (the producer's `expect_tx`) and each empty
    /// barrier for `consumers x cluster` (every consumer of the cluster), then every thread of the cluster
    /// passes a cluster barrier (a launch without clusters is a cluster of one), after which
    /// the barriers are usable by the cluster's copies and arrivals. Every thread calls it,
    /// once (invariant 1 sizes the shared memory).
    #[inline(always)]
    pub fn carve(_block: Block, (a_rows, b_rows): (u32, u32), stages: u32, (consumers, cluster): (u32, u32)) -> Ring {
        let raw = SharedAddr::of(arch::dynamic_shared::<u8>());
        let pad = raw.0.wrapping_neg() % SMEM_ALIGN;
        let (a_bytes, b_bytes) = (a_rows * ROW_BYTES, b_rows * ROW_BYTES);
        let ring = Ring { base: raw.add(pad), a_bytes, b_bytes, stages, cluster };
        check(pad + stages * (a_bytes + b_bytes + 2 * MBARRIER_BYTES) <= arch::dynamic_shared_bytes() as u32);
        if crate::device::thread_idx_x() == 0 {
            for s in 0..stages {
                // SAFETY: inside the carve, 8-byte aligned, not in use yet.
                unsafe {
                    mbarrier_init(ring.full(s), 1);
                    mbarrier_init(ring.empty(s), consumers * cluster);
                }
            }
            // SAFETY: a fence has no operands. It makes the initialisations visible to the
            // cluster's other blocks, whose copies and arrivals reach these barriers.
            unsafe { asm!("fence.mbarrier_init.release.cluster;") };
        }
        cluster_sync();
        ring
    }

    /// Stage `s`'s tile of `A`.
    #[inline(always)]
    fn a(&self, s: u32) -> SharedAddr {
        check(s < self.stages);
        self.base.add(s * (self.a_bytes + self.b_bytes))
    }

    /// Stage `s`'s tile of `B`.
    #[inline(always)]
    fn b(&self, s: u32) -> SharedAddr {
        self.a(s).add(self.a_bytes)
    }

    /// Stage `s`'s full barrier.
    #[inline(always)]
    fn full(&self, s: u32) -> SharedAddr {
        check(s < self.stages);
        self.base.add(self.stages * (self.a_bytes + self.b_bytes) + s * MBARRIER_BYTES)
    }

    /// Stage `s`'s empty barrier.
    #[inline(always)]
    fn empty(&self, s: u32) -> SharedAddr {
        self.full(s).add(self.stages * MBARRIER_BYTES)
    }

    /// Loads step `step` of the K loop into its stage (`step % stages`): waits until every
    /// consumer of the cluster released the stage's previous round, tells the full barrier the
    /// stage's bytes, and starts the tensor copies of `A`'s box at column `x`, row `a_row` and
    /// of `B`'s at column `x`, row `b_row`. In a cluster of several blocks, this block copies
    /// only its share of `B` (rows `b_row + rank * share ..`, where the map's box is `share`
    /// rows) into every block of the cluster. One thread calls it per step, in step order.
    #[inline(always)]
    pub fn load(&self, step: u32, (a, b): (Map, Map), (x, a_row, b_row): (u32, u32, u32)) {
        let s = step % self.stages;
        let round = step / self.stages;
        // SAFETY: the barriers were initialised by `carve`; the boxes fit the stage
        // (invariant 1).
        unsafe {
            if round > 0 {
                mbarrier_wait(self.empty(s), (round - 1) & 1);
            }
            mbarrier_arrive_expect_tx(self.full(s), self.a_bytes + self.b_bytes);
            tensor_load_2d(self.a(s), a.0, x, a_row, self.full(s), None);
            if self.cluster > 1 {
                let (rank, blocks) = (cluster_ctarank(), self.cluster);
                let share = self.b_bytes / blocks;
                let rows = share / ROW_BYTES;
                let mask = ((1u32 << blocks) - 1) as u16;
                tensor_load_2d_multicast(self.b(s).add(rank * share), b.0, x, b_row + rank * rows, self.full(s), mask);
            } else {
                tensor_load_2d(self.b(s), b.0, x, b_row, self.full(s), None);
            }
        }
    }

    /// Consumes step `step` (stage `step % stages`): waits for the stage's loads, runs `issue`
    /// on it between a `wgmma.fence` and a commit, waits for those `wgmma`s to complete, then
    /// releases the stage in every block of the cluster (one arrival per warpgroup). Every
    /// thread of a consumer warpgroup calls it per step, in step order.
    #[inline(always)]
    pub fn consume(&self, step: u32, issue: impl FnOnce(Stage)) {
        let s = step % self.stages;
        // SAFETY: the barrier was initialised by `carve`.
        unsafe { mbarrier_wait(self.full(s), (step / self.stages) & 1) };
        fence();
        issue(Stage { a: self.a(s), b: self.b(s), a_rows: self.a_bytes / ROW_BYTES });
        commit();
        wait::<0>();
        if crate::device::thread_idx_x() % WARPGROUP == 0 {
            for rank in 0..self.cluster {
                // SAFETY: the empty barrier of the same stage in block `rank` of the cluster,
                // initialised by its `carve` before the cluster barrier there.
                unsafe { arrive_remote(map_shared_rank(self.empty(s).0, rank)) };
            }
        }
    }
}

/// Starts a tensor copy of the box at column `x`, row `y` of `map` into shared `dst` of every
/// block of the cluster in `mask`, each completing on its own mbarrier at `bar`'s offset
/// (`cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
/// .multicast::cluster`).
///
/// # Safety
/// As for `tma::tensor_load_2d`, in every block of `mask`.
#[inline(always)]
unsafe fn tensor_load_2d_multicast(
    dst: SharedAddr,
    map: *const super::tma::TensorMap,
    x: u32,
    y: u32,
    bar: SharedAddr,
    mask: u16,
) {
    // SAFETY: the caller's contract (the `# Safety` section above).
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{m}, {{{x}, {y}}}], [{b}], {k};",
            d = in(reg32) dst.0, m = in(reg64) map as u64, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar.0,
            k = in(reg16) mask,
        )
    };
}

/// Bytes of one box of a [`Staging`]: `64 x 64` BF16.
const BOX_BYTES: u32 = STORE_BOX.0 * STORE_BOX.1 * ELEMENT_BYTES;
/// Bytes of the unit the 128-byte swizzle permutes inside a row.
const CHUNK_BYTES: u32 = 16;
/// Rows of one swizzle atom: the chunk of row `r` is permuted by `r % ATOM_ROWS`.
const ATOM_ROWS: u32 = SWIZZLE_ATOM_BYTES / ROW_BYTES;

/// One consumer warpgroup's staging of its `64 x N` BF16 tile of `C` for TMA stores: `N / 64`
/// boxes of `64 x 64` ([`STORE_BOX`]), each 64 rows of 128 bytes under the 128-byte swizzle (the
/// 16-byte chunk `c` of row `r` at chunk `c ^ (r % 8)`), the layout the map of `C` reads.
/// The accumulator's fragment of one warp and 8 columns is an `8 x 8` BF16 matrix per 8 rows
/// (PTX ISA, "Register Fragments" of `wgmma` and "Matrix Store Instruction: stmatrix"), so
/// one `stmatrix.sync.aligned.m8n8.x4.shared.b16` writes 16 columns of the warp's 16 rows:
/// each lane names one 16-byte row of one matrix. The 8 rows of a matrix fall in 8 different
/// chunks, all 32 banks once: no bank conflicts.
#[derive(Clone, Copy)]
pub struct Staging {
    base: SharedAddr,
    slice: u32,
    bytes: u32,
}

impl Ring {
    /// The staging of consumer warpgroup `slice` of `rung` (the ring's, carved with its tiles):
    /// `Rung::staging_bytes / consumers` bytes at `Rung::staging_offset` past the ring's start,
    /// slices in order.
    #[inline(always)]
    pub fn staging(&self, rung: &Rung, slice: u32) -> Staging {
        let bytes = rung.staging_bytes() / rung.consumers.max(1);
        let base = self.base.add(rung.staging_offset(self.stages) + slice * bytes);
        let end = SharedAddr::of(arch::dynamic_shared::<u8>()).add(arch::dynamic_shared_bytes() as u32);
        check(slice < rung.consumers && base.0 + bytes <= end.0);
        Staging { base, slice, bytes }
    }
}

impl Staging {
    /// Writes the warpgroup's accumulator times `scale` as BF16 (`cvt.rn.bf16x2.f32`) into the
    /// staging, then one thread starts the TMA stores of its boxes to rows `row0 ..`, columns
    /// `col0 ..` of `C` through `map` (the copy engine clips what lies outside `C`) and commits
    /// them as one bulk group. It first waits until that thread's previous group has read the staging. Every
    /// thread of the warpgroup calls it together (invariant 2), and [`Staging::finish`] last.
    #[inline(always)]
    pub fn store<A: Accum>(&self, acc: &A, scale: f32, map: Map, (row0, col0): (u32, u32)) {
        // A tile wider than this staging would write past it, in any build: the safe function
        // refuses it (for the rungs' own tiles the comparison folds away).
        if A::N / STORE_BOX.1 * BOX_BYTES > self.bytes {
            arch::trap();
        }
        let t = crate::device::thread_idx_x() % WARPGROUP;
        if t == 0 {
            bulk_wait_read::<0>();
        }
        self.sync();
        // Lane `l` names row `l % 8` of matrix `l / 8`: matrices 0 and 1 are rows 0-7 and 8-15
        // of the first 8 columns of a pair of groups, 2 and 3 of the second.
        let lane = t % 32;
        let (q, r) = (lane / 8, 16 * (t / 32) + 8 * (lane / 8 % 2) + lane % 8);
        let mut first = [0u32; 2];
        acc.each_8_columns(|j, v| {
            let pair = [bf16x2(v[0] * scale, v[1] * scale), bf16x2(v[2] * scale, v[3] * scale)];
            if j % 2 == 0 {
                first = pair;
                return;
            }
            let group = j - 1 + q / 2;
            let (bx, chunk) = (group / 8, group % 8);
            let at = bx * BOX_BYTES + r * ROW_BYTES + (chunk ^ (r % ATOM_ROWS)) * CHUNK_BYTES;
            check(at + CHUNK_BYTES <= self.bytes);
            // SAFETY: each lane's row is inside this warpgroup's staging (checked, or by
            // invariant 4) and 16-byte aligned; no TMA store reads it (the wait above) and only
            // this warp writes it. The whole warp executes it (invariant 2).
            unsafe {
                asm!(
                    "stmatrix.sync.aligned.m8n8.x4.shared.b16 [{a}], {{{r0}, {r1}, {r2}, {r3}}};",
                    a = in(reg32) self.base.add(at).0,
                    r0 = in(reg32) first[0], r1 = in(reg32) first[1], r2 = in(reg32) pair[0], r3 = in(reg32) pair[1],
                )
            };
        });
        fence_proxy_async_shared();
        self.sync();
        if t == 0 {
            for bx in 0..A::N / STORE_BOX.1 {
                // SAFETY: the box was written by the warpgroup before the fence and the barrier
                // above, and is not written again before the next call's wait (invariant 4).
                unsafe { tensor_store_2d(map.0, col0 + bx * STORE_BOX.1, row0, self.base.add(bx * BOX_BYTES), None) };
            }
            bulk_commit();
        }
    }

    /// Waits until the last stores have read the staging, so the block may exit. Every thread
    /// of the warpgroup calls it once, after its last [`Staging::store`].
    #[inline(always)]
    pub fn finish(&self) {
        if crate::device::thread_idx_x() % WARPGROUP == 0 {
            bulk_wait_read::<0>();
        }
    }

    /// The barrier of this warpgroup's 128 threads alone (`barrier.sync.aligned`, id 1 + slice:
    /// id 0 is the block's).
    #[inline(always)]
    fn sync(&self) {
        // SAFETY: the warpgroup's threads reach it together (invariant 2); no other barrier of
        // the kernel uses this id.
        unsafe { asm!("barrier.sync.aligned {id}, {n};", id = in(reg32) 1 + self.slice, n = const WARPGROUP) };
    }
}

/// Arrives once on the mbarrier at `.shared::cluster` address `bar`
/// (`mbarrier.arrive.shared::cluster.b64`, release semantics by default).
///
/// # Safety
/// `bar` is an initialised mbarrier of a block of this cluster that has not exited.
#[inline(always)]
unsafe fn arrive_remote(bar: u32) {
    // SAFETY: the caller's contract (the `# Safety` section above).
    unsafe { asm!("mbarrier.arrive.shared::cluster.b64 _, [{b}];", b = in(reg32) bar) };
}

/// Keeps the block alive until every block of its cluster is done with it: a multicast copy
/// or a consumer's release may still reach this block's shared memory while it has nothing
/// left to do. Every thread calls it once, last.
#[inline(always)]
pub fn leave_cluster() {
    cluster_sync();
}

/// The first of the two rows of a warpgroup's `64 x N` accumulator that thread `t` (`0 .. 128`)
/// holds: `16 (t / 32) + (t % 32) / 4`, the other 8 below (PTX ISA, "Register Fragments").
#[inline(always)]
fn fragment_row(t: u32) -> u32 {
    16 * (t / 32) + (t % 32) / 4
}

/// Calls `f(at, lo, hi, has_hi)` for each pair of a warpgroup's `64 x N` accumulator that lies
/// inside the `m x n` row-major `C` at rows `row0 ..` and columns `col0 ..`: `at` the element
/// of `lo`, `hi` the next column's value, `has_hi` whether that column is inside `C`. Thread `t`
/// of the warpgroup holds, for each 8 columns `j`, the values of row `16 (t / 32) + (t % 32) / 4`
/// (and 8 below it) at columns `8 j + 2 (t % 4)` and the next (PTX ISA, "Register Fragments":
/// the `m64nNk16` `D` fragment, which `m64nNk8` shares).
#[inline(always)]
fn each_pair<A: Accum>(
    acc: &A,
    (m, n): (u32, u32),
    (row0, col0): (u32, u32),
    mut f: impl FnMut(usize, f32, f32, bool),
) {
    let t = crate::device::thread_idx_x() % WARPGROUP;
    let row = row0 + fragment_row(t);
    acc.each_8_columns(|j, v| {
        let col = col0 + 8 * j + 2 * (t % 4);
        for (r, lo, hi) in [(row, v[0], v[1]), (row + 8, v[2], v[3])] {
            if r >= m || col >= n {
                continue;
            }
            f(r as usize * n as usize + col as usize, lo, hi, col + 1 < n);
        }
    });
}

/// Writes a warpgroup's `64 x N` accumulator as BF16 into rows `row0 ..` and columns `col0 ..`
/// of the `m x n` row-major `c` (`cvt.rn.bf16x2.f32`, round to nearest even), skipping what
/// lies outside ([`each_pair`]). An even `n` writes each pair in one 32-bit store.
#[inline(always)]
pub fn store_bf16<A: Accum>(acc: &A, c: &mut Slice<u16, ReadWrite>, (m, n): (u32, u32), origin: (u32, u32)) {
    each_pair(acc, (m, n), origin, |at, lo, hi, has_hi| {
        if n % 2 == 0 {
            store_pair(c, at, bf16x2(lo, hi));
        } else {
            c.set(at, bf16x2(lo, 0.0) as u16);
            if has_hi {
                c.set(at + 1, bf16x2(hi, 0.0) as u16);
            }
        }
    });
}

/// Writes a warpgroup's `64 x N` accumulator as FP32 into rows `row0 ..` and columns `col0 ..`
/// of the `m x n` row-major `c`, skipping what lies outside ([`each_pair`]). An even `n` writes
/// each pair in one 64-bit store.
#[inline(always)]
pub fn store_f32<A: Accum>(acc: &A, c: &mut Slice<f32, ReadWrite>, (m, n): (u32, u32), origin: (u32, u32)) {
    each_pair(acc, (m, n), origin, |at, lo, hi, has_hi| {
        if n % 2 == 0 {
            check(at % 2 == 0 && at + 1 < c.len());
            // One 64-bit word (`lo` at the lower address): LLVM splits a `[f32; 2]` store.
            let pair = u64::from(lo.to_bits()) | (u64::from(hi.to_bits()) << 32);
            // SAFETY: inside `c` (checked, or by the launch contract: the caller's bounds), and
            // 8-byte aligned: `at` is even and the buffer 16-byte aligned.
            unsafe { *c.as_mut_ptr().add(at).cast::<u64>() = pair };
        } else {
            c.set(at, lo);
            if has_hi {
                c.set(at + 1, hi);
            }
        }
    });
}

/// An input type of the ladder: the elements of one 128-byte stage row and the `wgmma` that
/// adds one 32-byte step of them. All lay out a stage the same way (`memlab_contracts::tensor`),
/// so the ring serves each.
pub trait Input {
    /// Elements per 128-byte stage row (the TMA box's inner dimension).
    const BK: u32;
    /// One 32-byte step of the stage's rows: [`Accum::mma`], [`Accum::mma_tf32`] or
    /// [`Accum::mma_e4m3`].
    fn mma<A: Accum>(acc: &mut A, a: Desc, b: Desc);
}

/// An input type whose result a consumer stores from registers, and how.
pub trait DirectStore: Input {
    /// An element of `C`.
    type Out;
    /// [`store_bf16`] or [`store_f32`].
    fn store<A: Accum>(acc: &A, c: &mut Slice<Self::Out, ReadWrite>, mn: (u32, u32), origin: (u32, u32));
}

/// BF16 `A` and `B`, FP32 accumulation, BF16 `C`.
pub enum Bf16 {}

/// FP32 `A`, `B` and `C`, multiplied in TF32, FP32 accumulation.
pub enum Tf32 {}

/// FP8 e4m3 `A` and `B`, FP32 accumulator registers, BF16 `C` (through a [`Staging`]).
pub enum E4m3 {}

impl Input for Bf16 {
    const BK: u32 = BK;
    #[inline(always)]
    fn mma<A: Accum>(acc: &mut A, a: Desc, b: Desc) {
        acc.mma(a, b)
    }
}

impl DirectStore for Bf16 {
    type Out = u16;
    #[inline(always)]
    fn store<A: Accum>(acc: &A, c: &mut Slice<u16, ReadWrite>, mn: (u32, u32), origin: (u32, u32)) {
        store_bf16(acc, c, mn, origin)
    }
}

impl Input for Tf32 {
    const BK: u32 = BK_TF32;
    #[inline(always)]
    fn mma<A: Accum>(acc: &mut A, a: Desc, b: Desc) {
        acc.mma_tf32(a, b)
    }
}

impl DirectStore for Tf32 {
    type Out = f32;
    #[inline(always)]
    fn store<A: Accum>(acc: &A, c: &mut Slice<f32, ReadWrite>, mn: (u32, u32), origin: (u32, u32)) {
        store_f32(acc, c, mn, origin)
    }
}

impl Input for E4m3 {
    const BK: u32 = BK_FP8;
    #[inline(always)]
    fn mma<A: Accum>(acc: &mut A, a: Desc, b: Desc) {
        acc.mma_e4m3(a, b)
    }
}

/// `lo` and `hi` rounded to BF16 and packed, `lo` in the low half (`cvt.rn.bf16x2.f32`).
#[inline(always)]
fn bf16x2(lo: f32, hi: f32) -> u32 {
    let d: u32;
    // SAFETY: registers only.
    unsafe {
        asm!("cvt.rn.bf16x2.f32 {d}, {hi}, {lo};", d = out(reg32) d, hi = in(reg32) hi, lo = in(reg32) lo, options(pure, nomem, nostack))
    };
    d
}

/// Writes the packed pair `v` at elements `at` and `at + 1` of `c` (`at` even), one 32-bit store.
#[inline(always)]
fn store_pair(c: &mut Slice<u16, ReadWrite>, at: usize, v: u32) {
    check(at % 2 == 0 && at + 1 < c.len());
    // SAFETY: inside `c` (checked, or by the launch contract: the caller's bounds), and 4-byte
    // aligned: `at` is even and the buffer 16-byte aligned.
    unsafe { *c.as_mut_ptr().add(at).cast::<u32>() = v };
}
