//! The tensor-core ladder (the sm_90a PTX only): `C = A * B^T` in BF16 with FP32 accumulation
//! (then TF32 and FP8 e4m3 on the same pipeline),
//! `A` `m x k`, `B` `n x k`, `C` `m x n`, all row-major (`memlab_contracts::tensor` gives the
//! layouts, tiles and shared bytes). TMA copies each stage's tiles of `A` and `B` from global
//! memory into 128-byte-swizzled shared memory, and `wgmma` reads them from there through matrix
//! descriptors: no operand passes through registers, and no thread computes an address for
//! them. Each rung removes one wait or one byte of traffic:
//!
//! 1. `tensor_1_wgmma`: one warpgroup loads a stage, waits for it, multiplies, waits again. The
//!    copy and the math never overlap.
//! 2. `tensor_2_pipelined`: a producer warpgroup keeps `stages - 1` loads in flight while a
//!    consumer multiplies: full barriers (transaction bytes) say a stage landed, empty barriers
//!    that it was read.
//! 3. `tensor_3_specialized`: two consumers share each tile of `B`; `setmaxnreg` moves the
//!    producer's registers to them.
//! 4. `tensor_4_wide`: `128 x 256` tiles (`m64n256k16`): each byte loaded feeds twice the
//!    FLOPs of rung 3's `128 x 128` (64 FLOP/B against 43 for `A` and `B` together).
//! 5. `tensor_5_multicast`: blocks in clusters of 2 along `m` share one tile of `B`: each copies
//!    half and multicasts it to both, so L2 serves `B` once per cluster.
//! 6. `tensor_6_persistent`: one block per SM walks the tiles in bands of 8 tile rows; its ring
//!    runs on from tile to tile, so the next tile's loads overlap this tile's stores.
//! 7. `tensor_7_tf32`: rung 6 for FP32 operands, multiplied in TF32: the pipeline an FP32
//!    SGEMM gets from Hopper's tensor cores.
//! 8. `tensor_8_tma_store`: rung 6 with its epilogue through shared memory: the consumers
//!    write `C` into a swizzled staging buffer and the copy engine stores it in whole lines
//!    while they start the next tile.
//! 9. `tensor_9_fp8`: rung 8 on FP8 e4m3 operands with a per-tensor scale: 128 elements in
//!    the same 128-byte rows.
//!
//! Sizes: any `m, n, k >= 1`: the copy engine fills what lies outside `A` or `B` with zeros
//! and the stores skip what lies outside `C`; the host pads each row's pitch to 16 bytes (TMA's
//! stride granule). Written on `device/wgmma.rs`, whose soundness invariants are there.

use crate::device::tma::grid_blocks;
use crate::device::tma::{Map, MapIn};
use crate::device::wgmma::{
    Accum, Bf16, DirectStore, E4m3, Input, Ring, Staging, Tf32, leave_cluster, release_registers, store_bf16,
    take_registers,
};
use crate::device::{Block, GlobalOut, block_idx_x, block_idx_y, kernel, thread_idx_x};
use memlab_contracts::tensor::{
    BK, CONSUMER_REGS, FP8, MULTICAST, PERSISTENT, PIPELINED, PRODUCER_REGS, Rung, SPECIALIZED, STAGE_STEPS, TMA_STORE,
    WARPGROUP, WARPGROUP_ROWS, WGMMA, WIDE, tile_origin, tiles,
};
use memlab_device_api::global::{ReadWrite, Slice};

kernel! {
/// Rung 1: one warpgroup, one stage: thread 0 loads the `64 x 64` tile of `A` and the
/// `128 x 64` tile of `B`, every thread waits, the warpgroup issues 4 `m64n128k16`, waits for
/// them, and only then the next load starts.
///
/// - Launch: block `128 x 1`, grid `WGMMA.grid(m, n)` = `(ceil(n / 128), ceil(m / 64))`.
/// - Shared memory: `WGMMA.smem_bytes(1)` = 1024 + 24576 + 16 bytes, dynamic.
/// - Registers: 64 FP32 accumulators per thread.
/// - Memory level: global -> shared by TMA (`cp.async.bulk.tensor.2d`), shared -> tensor cores
///   by `wgmma` descriptors; `C` from registers to global.
/// - Parameters: the slots of BF16 maps of `A` (box `64 x 64`) and `B` (box `64 x 128`), both
///   128-byte swizzled; `c` holds `m n` BF16.
pub fn tensor_1_wgmma(block: Block, a: MapIn, b: MapIn, c: GlobalOut<u16>, m: u32, n: u32, k: u32) {
    let ring = Ring::carve(block, (WGMMA.bm(), WGMMA.bn), 1, (1, 1));
    let (maps, m0, n0) = ((a.map(), b.map()), block_idx_y() * WGMMA.bm(), block_idx_x() * WGMMA.bn);
    let mut acc = <[f32; 64]>::zero();
    for step in 0..k.div_ceil(BK) {
        if thread_idx_x() == 0 {
            ring.load(step, maps, (step * BK, m0, n0));
        }
        ring.consume(step, |stage| {
            for s in 0..STAGE_STEPS {
                acc.mma(stage.a(0, s), stage.b(s));
            }
        });
    }
    store_bf16(&acc, &mut c.slice(m as usize * n as usize), (m, n), (m0, n0));
}
}

kernel! {
/// Rung 2: warpgroup 0 produces (its thread 0 issues every load, `stages - 1` ahead),
/// warpgroup 1 consumes `64 x 128` tiles, as rung 1 does.
///
/// - Launch: block `256 x 1`, grid `PIPELINED.grid(m, n)`.
/// - Shared memory: `PIPELINED.smem_bytes(stages)`, dynamic; `stages >= 1`.
/// - Registers: 64 accumulators per consumer thread.
/// - Memory level, parameters: as [`tensor_1_wgmma`].
pub fn tensor_2_pipelined(block: Block, a: MapIn, b: MapIn, c: GlobalOut<u16>, m: u32, n: u32, k: u32, stages: u32) {
    specialized::<[f32; 64]>(block, &PIPELINED, (a.map(), b.map()), c, (m, n, k), stages)
}
}

kernel! {
/// Rung 3: one producer and two consumer warpgroups on a `128 x 128` tile, the producer down
/// to 40 registers per thread and the consumers up to 232 (`setmaxnreg`).
///
/// - Launch: block `384 x 1`, grid `SPECIALIZED.grid(m, n)`.
/// - Shared memory: `SPECIALIZED.smem_bytes(stages)`, dynamic.
/// - Registers: a cap of 168 per thread at entry (`.maxntid 384`, `.minnctapersm 1`), then 40
///   in the producer and 232 in each consumer; 64 accumulators per consumer thread.
/// - Memory level, parameters: as [`tensor_1_wgmma`], the map of `A` with box `64 x 128`.
pub fn tensor_3_specialized(block: Block, a: MapIn, b: MapIn, c: GlobalOut<u16>, m: u32, n: u32, k: u32, stages: u32) {
    specialized::<[f32; 64]>(block, &SPECIALIZED, (a.map(), b.map()), c, (m, n, k), stages)
}
}

kernel! {
/// Rung 4: rung 3 on `128 x 256` tiles, `m64n256k16`, 128 accumulators per consumer thread.
///
/// - Launch: block `384 x 1`, grid `WIDE.grid(m, n)`.
/// - Shared memory: `WIDE.smem_bytes(stages)` (49152 bytes a stage), dynamic.
/// - Registers, memory level: as [`tensor_3_specialized`]; the map of `B` with box `64 x 256`.
pub fn tensor_4_wide(block: Block, a: MapIn, b: MapIn, c: GlobalOut<u16>, m: u32, n: u32, k: u32, stages: u32) {
    specialized::<[f32; 128]>(block, &WIDE, (a.map(), b.map()), c, (m, n, k), stages)
}
}

kernel! {
/// Rung 5: rung 4 in clusters of 2 blocks along `m`, which compute the same columns of `C`:
/// each loads its own tile of `A` and half of the shared tile of `B`, multicast to both
/// (`.multicast::cluster`); a stage is reloaded once the consumers of both blocks released it.
///
/// - Launch: block `384 x 1`, grid `MULTICAST.grid(m, n)` (whole clusters along `y`), clusters
///   of `1 x 2`.
/// - Shared memory, registers: as [`tensor_4_wide`].
/// - Memory level: as rung 4, with L2 reads of `B` halved; the map of `B` with box `64 x 128`.
pub fn tensor_5_multicast(block: Block, a: MapIn, b: MapIn, c: GlobalOut<u16>, m: u32, n: u32, k: u32, stages: u32) {
    specialized::<[f32; 128]>(block, &MULTICAST, (a.map(), b.map()), c, (m, n, k), stages)
}
}

kernel! {
/// Rung 6: rung 4 on a persistent grid: block `b` computes tiles `b, b + grid, ...` of the
/// order `memlab_contracts::tensor::tile_origin` gives (bands of 8 tile rows), its producer
/// loading the next tile's stages while the consumers store this one.
///
/// - Launch: block `384 x 1`, grid `min(SMs, tiles) x 1` (one resident block per SM).
/// - Shared memory, registers, maps: as [`tensor_4_wide`].
/// - Memory level: as rung 4; the blocks working at once read about 8 tiles of `A` and 16 of
///   `B` per step, which stay in L2 between them.
pub fn tensor_6_persistent(block: Block, a: MapIn, b: MapIn, c: GlobalOut<u16>, m: u32, n: u32, k: u32, stages: u32) {
    let c = Direct::<Bf16> { c: c.slice(m as usize * n as usize), mn: (m, n) };
    persistent::<Bf16, _>(block, &PERSISTENT, (a.map(), b.map()), (m, n, k), stages, |_, _| c)
}
}

kernel! {
/// Rung 7: rung 6 with FP32 `A`, `B` and `C`, multiplied in TF32 (`m64n256k8.f32.tf32.tf32`,
/// 4 per stage): each stage row is 32 FP32, the same 128 bytes as rung 6's 64 BF16, so the
/// ring, the swizzle and the descriptors are rung 6's.
///
/// - Launch, shared memory, registers: as [`tensor_6_persistent`].
/// - Memory level: as rung 6, twice the bytes per FLOP (4-byte inputs).
/// - Parameters: the slots of FP32 maps of `A` (box `32 x 128`) and `B` (box `32 x 256`), both
///   128-byte swizzled; `c` holds `m n` FP32.
pub fn tensor_7_tf32(block: Block, a: MapIn, b: MapIn, c: GlobalOut<f32>, m: u32, n: u32, k: u32, stages: u32) {
    let c = Direct::<Tf32> { c: c.slice(m as usize * n as usize), mn: (m, n) };
    persistent::<Tf32, _>(block, &PERSISTENT, (a.map(), b.map()), (m, n, k), stages, |_, _| c)
}
}

kernel! {
/// Rung 8: rung 6 with its epilogue through shared memory: each consumer warpgroup writes its
/// `64 x 256` BF16 tile into its own 128-byte-swizzled staging (no bank conflicts), and one of
/// its threads starts 4 TMA stores of `64 x 64` boxes, so the warpgroup goes on to the next
/// tile while the copy engine writes `C` in whole 128-byte lines; it waits for those stores to
/// have read the staging only when it next fills it.
///
/// - Launch: block `384 x 1`, grid `min(SMs, tiles) x 1`, as [`tensor_6_persistent`].
/// - Shared memory: `TMA_STORE.smem_bytes(stages)` = 1024 + 3 x 49152 + 1024 + 65536 bytes at
///   3 stages (the staging leaves no room for a fourth), dynamic.
/// - Registers: as [`tensor_6_persistent`].
/// - Memory level: as rung 6 for `A` and `B`; `C` from registers to shared memory, then by TMA
///   to global memory.
/// - Parameters: the maps of `A` and `B` as rung 6; `c` the slot of a BF16 map of `C` (`m x
///   n`, rows padded to 16 bytes) with box `64 x 64` and the 128-byte swizzle.
pub fn tensor_8_tma_store(block: Block, a: MapIn, b: MapIn, c: MapIn, m: u32, n: u32, k: u32, stages: u32) {
    let c = c.map();
    persistent::<Bf16, _>(block, &TMA_STORE, (a.map(), b.map()), (m, n, k), stages, |ring, slice| {
        (ring.staging(&TMA_STORE, slice), c, 1.0)
    })
}
}

kernel! {
/// Rung 9: rung 8 on FP8 e4m3 `A` and `B` (`m64n256k32.f32.e4m3.e4m3`, 4 per stage), FP32
/// accumulator registers (whose sums Hopper's FP8 tensor cores keep to about 14 bits:
/// DeepSeek-V3 technical report, section 3.3.2), `C = scale * A * B^T` in BF16, `scale` the product of the two per-tensor
/// scales: each stage row is 128 elements, the same 128 bytes as rung 8's 64 BF16, so the ring,
/// the swizzle, the descriptors and the staging are rung 8's, for twice the FLOPs per byte.
///
/// - Launch, shared memory, registers: as [`tensor_8_tma_store`].
/// - Memory level: as rung 8, half the bytes of `A` and `B` per FLOP.
/// - Parameters: the slots of e4m3 maps (bytes) of `A` (box `128 x 128`) and `B` (box `128 x
///   256`), both 128-byte swizzled; `c` as [`tensor_8_tma_store`]'s; `scale` FP32.
pub fn tensor_9_fp8(block: Block, a: MapIn, b: MapIn, c: MapIn, scale: f32, m: u32, n: u32, k: u32, stages: u32) {
    let c = c.map();
    persistent::<E4m3, _>(block, &FP8, (a.map(), b.map()), (m, n, k), stages, |ring, slice| {
        (ring.staging(&FP8, slice), c, scale)
    })
}
}

/// Where a persistent consumer warpgroup puts each finished `64 x 256` tile of `C`.
trait Epilogue {
    /// Stores the accumulator at rows `origin.0 ..`, columns `origin.1 ..` of `C`.
    fn store(&mut self, acc: &[f32; 128], origin: (u32, u32));
    /// Called once after the last tile.
    fn finish(&self) {}
}

/// From registers straight into the `m x n` row-major `C` (rungs 6 and 7):
/// [`DirectStore::store`].
struct Direct<I: DirectStore> {
    c: Slice<I::Out, ReadWrite>,
    mn: (u32, u32),
}

impl<I: DirectStore> Epilogue for Direct<I> {
    #[inline(always)]
    fn store(&mut self, acc: &[f32; 128], origin: (u32, u32)) {
        I::store(acc, &mut self.c, self.mn, origin)
    }
}

/// Through the warpgroup's staging and the map of `C`, scaled (rungs 8 and 9).
impl Epilogue for (Staging, Map, f32) {
    #[inline(always)]
    fn store(&mut self, acc: &[f32; 128], origin: (u32, u32)) {
        self.0.store(acc, self.2, self.1, origin)
    }
    #[inline(always)]
    fn finish(&self) {
        self.0.finish()
    }
}

/// Rungs 6 to 9: `min(SMs, tiles)` blocks of `rung` walk the tiles of [`tile_origin`]'s
/// order; the producer's ring runs on from one tile into the next, and each consumer
/// warpgroup hands its finished tiles to the epilogue `epilogue(&ring, slice)` makes.
#[inline(always)]
fn persistent<I: Input, E: Epilogue>(
    block: Block,
    rung: &Rung,
    maps: (Map, Map),
    (m, n, k): (u32, u32, u32),
    stages: u32,
    epilogue: impl FnOnce(&Ring, u32) -> E,
) {
    let ring = Ring::carve(block, (rung.bm(), rung.bn), stages.max(1), (rung.consumers, 1));
    let (grid, steps) = (tiles(rung, m, n), k.div_ceil(I::BK));
    let count = grid.0 * grid.1;
    let origin = |t: u32| {
        let (row, col) = tile_origin(t, grid);
        (row * rung.bm(), col * rung.bn)
    };
    let wg = thread_idx_x() / WARPGROUP;
    if wg == 0 {
        release_registers::<PRODUCER_REGS>();
        if thread_idx_x() == 0 {
            let (mut t, mut step) = (block_idx_x(), 0);
            while t < count {
                let (m0, n0) = origin(t);
                for s in 0..steps {
                    ring.load(step + s, maps, (s * I::BK, m0, n0));
                }
                (t, step) = (t + grid_blocks(), step + steps);
            }
        }
    } else {
        take_registers::<CONSUMER_REGS>();
        let slice = wg - 1;
        let mut out = epilogue(&ring, slice);
        let (mut t, mut step) = (block_idx_x(), 0);
        while t < count {
            let (m0, n0) = origin(t);
            let mut acc = <[f32; 128]>::zero();
            for s in 0..steps {
                ring.consume(step + s, |stage| {
                    for kk in 0..STAGE_STEPS {
                        I::mma(&mut acc, stage.a(slice, kk), stage.b(kk));
                    }
                });
            }
            out.store(&acc, (m0 + slice * WARPGROUP_ROWS, n0));
            (t, step) = (t + grid_blocks(), step + steps);
        }
        out.finish();
    }
}

/// Rungs 2 to 5: warpgroup 0 produces, warpgroups `1 ..= rung.consumers` each consume the
/// `64`-row slice `wg - 1` of the block's tile; `A::N` is `rung.bn`.
#[inline(always)]
fn specialized<A: Accum>(
    block: Block,
    rung: &Rung,
    maps: (Map, Map),
    c: GlobalOut<u16>,
    (m, n, k): (u32, u32, u32),
    stages: u32,
) {
    let ring = Ring::carve(block, (rung.bm(), rung.bn), stages.max(1), (rung.consumers, rung.cluster));
    let (m0, n0, steps) = (block_idx_y() * rung.bm(), block_idx_x() * rung.bn, k.div_ceil(BK));
    let wg = thread_idx_x() / WARPGROUP;
    if wg == 0 {
        if rung.setmaxnreg {
            release_registers::<PRODUCER_REGS>();
        }
        if thread_idx_x() == 0 {
            for step in 0..steps {
                ring.load(step, maps, (step * BK, m0, n0));
            }
        }
    } else {
        if rung.setmaxnreg {
            take_registers::<CONSUMER_REGS>();
        }
        let slice = wg - 1;
        let mut acc = A::zero();
        for step in 0..steps {
            ring.consume(step, |stage| {
                for s in 0..STAGE_STEPS {
                    acc.mma(stage.a(slice, s), stage.b(s));
                }
            });
        }
        let row0 = m0 + slice * WARPGROUP_ROWS;
        store_bf16(&acc, &mut c.slice(m as usize * n as usize), (m, n), (row0, n0));
    }
    if rung.cluster > 1 {
        leave_cluster();
    }
}
