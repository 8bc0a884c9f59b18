//! TMA, the tensor memory accelerator (cc 9.0; compiled into the sm_90 PTX only, as
//! `cp.async.bulk`, `cp.async.bulk.tensor` and `mbarrier` transaction counts need `sm_90` and
//! PTX ISA 8.0): copies between global and shared memory that one thread starts and a copy
//! engine beside the SM carries out, without passing through registers. Completion of a load
//! is reported on an `mbarrier` as transaction bytes; a store is tracked in bulk groups.
//!
//! Every kernel here is a pipeline: block `b` of a grid of `g` loops over the tiles `b, b + g,
//! ...` through a ring of `stages` shared buffers, each with its mbarrier, keeping the loads of
//! the next tiles in flight while the current one is stored. The grid is the host's choice
//! (`memlab_contracts::tma::Blocks`): persistent blocks (`SMs x blocks per SM`), or one block
//! per few tiles, which the block scheduler replaces as each ends. The bytes in flight per SM
//! (`stages x box bytes x resident blocks`) decide the bandwidth; the host sweeps stages, boxes
//! and grids at run time (`memlab_contracts::tma::Pipeline`), and the copies' L2
//! eviction hint (the `hint` parameter, `memlab_contracts::tma::hint`: every load and store
//! with `.L2::cache_hint` and an evict_first `createpolicy`; PTX ISA, "createpolicy").
//!
//! Matrices are row-major `f32`. The tensor maps (`CUtensorMap`, built by the host with
//! `cuTensorMapEncodeTiled`) live in the module's constant memory, written before the launch,
//! and a kernel takes each as its slot there; each describes one matrix, its box (the tile one
//! copy moves) and its swizzle.
//! Tensor copies handle the edges themselves (zeros read outside the matrix, stores clipped),
//! so any `rows, cols >= 1` works; the host refuses what a tensor map cannot describe (a row
//! pitch that is not a multiple of 16 bytes: `cols` not a multiple of 4). The copies, mbarriers
//! and buffers are the safe API of `device/tma.rs`, whose soundness invariants are written there.

use memlab_contracts::tma as contract;

use crate::device::l2_policy::L2Policy;
use crate::device::tma::{Buffers, MapIn, bulk_commit, bulk_wait_read, fence_proxy_async_shared, grid_blocks};
use crate::device::{Block, GlobalIn, GlobalOut, block_idx_x, kernel, thread_idx_x, thread_idx_y};

/// Items (tiles, chunks) of `count` that this block handles: `block_idx_x() + j * grid`.
#[inline(always)]
fn mine(count: u32) -> u32 {
    // `max(1)` on every divisor keeps the kernels free of division-by-zero panics (a launch
    // never has 0 blocks, and the host passes no zero box or chunk).
    let (b, grid) = (block_idx_x(), grid_blocks().max(1));
    if b < count { (count - b - 1) / grid + 1 } else { 0 }
}

/// The item of this block's `j`-th turn.
#[inline(always)]
fn item(j: u32) -> u32 {
    block_idx_x() + j * grid_blocks()
}

/// The copies' L2 policy for `hint` ([`contract::hint`]): evict_first, or none.
#[inline(always)]
fn policy(hint: u32) -> Option<L2Policy> {
    (hint == contract::hint::EVICT_FIRST).then(L2Policy::evict_first)
}

/// Lane 0's pipeline of a copy through `buffers` (a ring of `stages` buffers): `load(slot, j)`
/// starts the load of this block's `j`-th item into buffer `slot` (its expect and copies),
/// `store(slot, j)` its store. Loads run `stages - 1` items ahead; the load of item `j + stages
/// - 1` reuses the buffer of item `j - 1`, once that item's store has read it
/// (`cp.async.bulk.wait_group.read 1`: the store of item `j` may still be reading). With one
/// stage, each item is loaded, stored and read out before the next.
#[inline(always)]
fn copy_ring(buffers: &Buffers, count: u32, mut load: impl FnMut(u32, u32), mut store: impl FnMut(u32, u32)) {
    let stages = buffers.count();
    let ahead = stages - 1;
    let prologue = if ahead < count { ahead } else { count };
    for k in 0..prologue {
        load(k, k);
    }
    let (mut slot, mut parity, mut next_slot) = (0, 0, prologue);
    for j in 0..count {
        if ahead == 0 {
            load(0, j);
        }
        buffers.wait(slot, parity);
        store(slot, j);
        bulk_commit();
        if ahead == 0 {
            bulk_wait_read::<0>();
        } else {
            bulk_wait_read::<1>();
            if j + ahead < count {
                load(next_slot, j + ahead);
                next_slot = if next_slot + 1 == stages { 0 } else { next_slot + 1 };
            }
        }
        slot += 1;
        if slot == stages {
            slot = 0;
            parity ^= 1;
        }
    }
    // The block may exit once its stores have read their buffers (CUTLASS's epilogue does
    // the same); the global writes complete before the grid does.
    bulk_wait_read::<0>();
}

kernel! {
    /// Copies `n` floats from `src` to `dst` with 1-D bulk copies of `chunk` bytes through a
    /// ring of `stages` shared buffers: block `b` moves chunks `b, b + grid, ...`; its lane 0
    /// loads (`cp.async.bulk` global -> shared, completion on the buffer's mbarrier) up to
    /// `stages - 1` chunks ahead and stores each (`cp.async.bulk` shared -> global) as it lands.
    /// One stage is the unpipelined copy of the bulk-copy curve (load, wait, store, wait).
    ///
    /// - Launch: block `32 x 1` ([`contract::COPY_THREADS`]), any grid ([`contract::Blocks`]).
    /// - Shared memory: [`contract::smem_bytes`]`(chunk, stages)` = `1024 + stages (chunk + 8)`.
    /// - Preconditions: `src`, `dst` hold `n` floats, 16-byte aligned, not overlapping; `n` a
    ///   multiple of 4; `chunk` a multiple of 16; `stages >= 1`; `hint` of [`contract::hint`].
    /// - Memory level: global <-> shared by the copy engine; no registers hold the data.
    pub fn tma_bulk_copy(
        block: Block,
        src: GlobalIn<f32>,
        dst: GlobalOut<f32>,
        n: u32,
        chunk: u32,
        stages: u32,
        hint: u32,
    ) {
        let buffers = Buffers::carve(block, chunk, stages);
        if thread_idx_x() != 0 {
            return;
        }
        let (src, mut dst) = (src.slice(n as usize), dst.slice(n as usize));
        let hint = policy(hint);
        let per = (chunk / 4).max(1);
        let count = mine(n.div_ceil(per));
        let span = |j: u32| {
            let first = item(j) * per;
            (first as usize, (n - first).min(per) * 4)
        };
        copy_ring(
            &buffers,
            count,
            |slot, j| {
                let (first, bytes) = span(j);
                buffers.expect(slot, bytes);
                buffers.load_bulk(slot, &src, first, bytes, hint);
            },
            |slot, j| {
                let (first, bytes) = span(j);
                buffers.store_bulk(slot, &mut dst, first, bytes, hint);
            },
        );
    }
}

kernel! {
    /// Copies a `rows x cols` matrix with 2-D tensor copies of `box_rows x box_cols` boxes
    /// through a ring of `stages` shared buffers: block `b` moves the boxes `b, b + grid, ...`
    /// (row-major over the matrix); lane 0 loads through `map_in` (`cp.async.bulk.tensor`
    /// global -> shared, completion on the buffer's mbarrier) `stages - 1` boxes ahead and
    /// stores each through `map_out` (shared -> global) as it lands.
    ///
    /// - Launch: block `32 x 1` ([`contract::COPY_THREADS`]), any grid ([`contract::Blocks`]).
    /// - Shared memory: [`contract::smem_bytes`]`(box_rows * box_cols * 4, stages)`.
    /// - Preconditions: `map_in`, `map_out` are the slots of tensor maps of the input and output
    ///   `rows x cols` f32 matrices, box `box_rows x box_cols`, no swizzle; `stages >= 1`; `hint`
    ///   of [`contract::hint`].
    /// - Memory level: global <-> shared by the copy engine, one box per copy.
    #[allow(clippy::too_many_arguments)]
    pub fn tma_copy(
        block: Block,
        map_in: MapIn,
        map_out: MapIn,
        rows: u32,
        cols: u32,
        box_rows: u32,
        box_cols: u32,
        stages: u32,
        hint: u32,
    ) {
        let box_bytes = box_rows * box_cols * 4;
        let buffers = Buffers::carve(block, box_bytes, stages);
        if thread_idx_x() != 0 {
            return;
        }
        let (map_in, map_out) = (map_in.map(), map_out.map());
        let hint = policy(hint);
        let (box_rows, box_cols) = (box_rows.max(1), box_cols.max(1));
        let across = cols.div_ceil(box_cols).max(1);
        let count = mine(across * rows.div_ceil(box_rows));
        let at = |j: u32| {
            let t = item(j);
            ((t % across) * box_cols, (t / across) * box_rows)
        };
        copy_ring(
            &buffers,
            count,
            |slot, j| {
                let (x, y) = at(j);
                buffers.expect(slot, box_bytes);
                buffers.load_tile(slot, 0, map_in, x, y, hint);
            },
            |slot, j| {
                let (x, y) = at(j);
                buffers.store_tile(slot, 0, map_out, x, y, hint);
            },
        );
    }
}

kernel! {
    /// Transposes a `rows x cols` matrix into `cols x rows` through shared memory, `64 x 64`
    /// tiles moved by tensor copies both ways. Block `b` handles the tiles `b, b + grid, ...`
    /// through `stages` input buffers and two output buffers. Lane 0 loads each tile as `64 /
    /// box_cols(swizzle)` boxes of 64 rows (`map_in`, swizzle mode `swizzle`), `stages` tiles
    /// ahead, completion on the buffer's mbarrier; every thread waits, reads 2 float4 of the
    /// tile's columns (the 32 lanes of a warp: 32 rows of one float4 column, at
    /// the swizzled offsets of [`contract::transpose_read_offset`]) and writes them transposed
    /// into an output buffer (lanes on consecutive words: conflict-free); after a proxy fence
    /// and a block barrier, lane 0 stores that buffer through `map_out` and refills the input
    /// buffer just read. The output buffers alternate: a tile is written into one while the
    /// store of the previous tile may still read the other (lane 0 waits for the store before
    /// last to have read it, before the barrier). The input tile's column read is where the
    /// swizzle matters: unswizzled, its 8 lanes of a 16-byte phase hit the same banks.
    ///
    /// - Launch: block `32 x 16` ([`contract::TRANSPOSE_BLOCK`]), any grid ([`contract::Blocks`]).
    /// - Shared memory: [`contract::smem_bytes`]`(16384, `[`contract::transpose_buffers`]`(stages))`.
    /// - Preconditions: `map_in` is the slot of a map of the `rows x cols` input, box `64 x box_cols(swizzle)`
    ///   rows x columns, swizzle `swizzle` (< 4); `map_out` the `cols x rows` output, box
    ///   `64 x 64`, no swizzle; `stages >= 1`; `hint` of [`contract::hint`].
    /// - Memory level: global <-> shared by the copy engine; shared (float4 reads, scalar writes).
    #[allow(clippy::too_many_arguments)]
    pub fn tma_transpose(
        block: Block,
        map_in: MapIn,
        map_out: MapIn,
        rows: u32,
        cols: u32,
        swizzle: u32,
        stages: u32,
        hint: u32,
    ) {
        let maps = (map_in, map_out);
        // One body per mode, so the box width and the swizzle fold into constants.
        match swizzle {
            0 => transpose_tiles::<0>(block, maps, rows, cols, stages, hint),
            1 => transpose_tiles::<1>(block, maps, rows, cols, stages, hint),
            2 => transpose_tiles::<2>(block, maps, rows, cols, stages, hint),
            _ => transpose_tiles::<3>(block, maps, rows, cols, stages, hint),
        }
    }
}

/// The body of [`tma_transpose`] for swizzle mode `MODE`.
#[inline(always)]
fn transpose_tiles<const MODE: u32>(
    block: Block,
    (map_in, map_out): (MapIn, MapIn),
    rows: u32,
    cols: u32,
    stages: u32,
    hint: u32,
) {
    const T: u32 = contract::TILE;
    let w = const { contract::box_cols(MODE) };
    let buffers = Buffers::carve(block, contract::TILE_BYTES, contract::transpose_buffers(stages));
    let t = thread_idx_y() * contract::TRANSPOSE_BLOCK.0 + thread_idx_x();
    // Lane 0 alone issues the copies.
    let maps = if t == 0 { Some((map_in.map(), map_out.map())) } else { None };
    let hint = policy(hint);
    let across = cols.div_ceil(T).max(1);
    let count = mine(across * rows.div_ceil(T));
    let at = |j: u32| {
        let tile = item(j);
        ((tile % across) * T, (tile / across) * T)
    };
    let load = |slot: u32, j: u32| {
        if let Some((map_in, _)) = maps {
            let (c0, r0) = at(j);
            buffers.expect(slot, contract::TILE_BYTES);
            for b in 0..T / w {
                buffers.load_tile(slot, b * T * w * 4, map_in, c0 + b * w, r0, hint);
            }
        }
    };
    let prologue = if stages < count { stages } else { count };
    for k in 0..prologue {
        load(k, k);
    }
    let (mut slot, mut parity) = (0, 0);
    for j in 0..count {
        buffers.wait(slot, parity);
        let out = stages + (j & 1);
        for i in 0..contract::TRANSPOSE_READS {
            let (r, c4) = contract::transpose_read(t, i);
            let v = buffers.read4(slot, contract::transpose_read_offset(MODE, r, c4));
            for (q, v) in v.iter().enumerate() {
                buffers.write(out, (4 * c4 + q as u32) * T + r, *v);
            }
        }
        fence_proxy_async_shared();
        if maps.is_some() {
            // The store of tile j - 1 has read the other output buffer, written next turn.
            bulk_wait_read::<0>();
        }
        buffers.sync();
        if let Some((_, map_out)) = maps {
            let (c0, r0) = at(j);
            buffers.store_tile(out, 0, map_out, r0, c0, hint);
            bulk_commit();
            // Every thread has read this input buffer (the barrier above): refill it.
            if j + stages < count {
                load(slot, j + stages);
            }
        }
        slot += 1;
        if slot == stages {
            slot = 0;
            parity ^= 1;
        }
    }
    if maps.is_some() {
        bulk_wait_read::<0>();
    }
}
