//! TMA, the tensor memory accelerator (cc 9.0; compiled into the sm_90 PTX only, as
//! `cp.async.bulk`, `cp.async.bulk.tensor` and `mbarrier` transaction counts need `sm_90` and
//! PTX ISA 8.0): copies between global and shared memory that one thread starts and a copy
//! engine beside the SM carries out, without passing through registers. Completion of a load
//! is reported on an `mbarrier` as transaction bytes; a store is tracked in bulk groups.
//!
//! Matrices are row-major `f32`. The tensor maps (`CUtensorMap`, built by the host with
//! `cuTensorMapEncodeTiled`) live in global memory, 64-byte aligned, written before the launch;
//! each describes one matrix, its box (the tile one copy moves) and its swizzle.
//! Tensor copies handle the edges themselves (zeros read outside the matrix, stores clipped),
//! so any `rows, cols >= 1` works; the host refuses what a tensor map cannot describe (a row
//! pitch that is not a multiple of 16 bytes: `cols` not a multiple of 4).

use memlab_contracts::tma as contract;

use crate::device::tma::{
    SharedAddr, TensorMap, bulk_commit, bulk_load, bulk_store, bulk_wait_read, fence_proxy_async_shared,
    mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait, tensor_load_2d, tensor_store_2d, tensormap_acquire,
};
use crate::device::{block_idx_x, block_idx_y, dynamic_shared, sync_threads, thread_idx_x, thread_idx_y};

/// The block's tiles, aligned to [`contract::SMEM_ALIGN`] inside the dynamic shared memory, as
/// a pointer and its `.shared` address, and the mbarrier `tile_bytes` after them.
#[inline(always)]
fn shared_tiles(tile_bytes: u32) -> (*mut u8, SharedAddr, SharedAddr) {
    let base = dynamic_shared::<u8>();
    let addr = SharedAddr::of(base);
    let pad = addr.0.wrapping_neg() % contract::SMEM_ALIGN;
    // SAFETY: the launch gives `smem_bytes(tile_bytes)` bytes, `SMEM_ALIGN` more than pad.
    let tiles = unsafe { base.add(pad as usize) };
    let tiles_addr = addr.add(pad);
    (tiles, tiles_addr, tiles_addr.add(tile_bytes))
}

/// Thread 0 initialises the block's mbarrier for one arrival per phase; the barrier after it
/// makes it usable by every thread.
///
/// # Safety
/// Called once, by every thread of the block.
#[inline(always)]
unsafe fn init_barrier(bar: SharedAddr) {
    if thread_idx_x() == 0 && thread_idx_y() == 0 {
        unsafe { mbarrier_init(bar, 1) };
    }
    unsafe { sync_threads() };
}

/// Copies `n` floats from `src` to `dst` with 1-D bulk copies of `chunk` bytes through shared
/// memory: block `b` moves chunks `b, b + grid, ...`; its lane 0 loads a chunk
/// (`cp.async.bulk` global -> shared, completion on the mbarrier), waits, stores it
/// (`cp.async.bulk` shared -> global) and waits for the store to have read it before the next.
/// A block keeps `chunk` bytes in flight, so the grid's blocks per SM times `chunk` is the
/// SM's bytes in flight: the bulk-copy curve varies both.
///
/// - Launch: block `32 x 1` ([`contract::COPY_THREADS`]), any grid (the curve uses `SMs x k`).
/// - Shared memory: `smem_bytes(chunk)` = `1024 + chunk + 8` dynamic bytes.
/// - Memory level: global <-> shared by the copy engine; no registers hold the data.
///
/// # Safety
/// `src` and `dst` hold `n` floats, 16-byte aligned, not overlapping; `n` a multiple of 4;
/// `chunk` a multiple of 16 no larger than the launch's tile bytes.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn tma_bulk_copy(src: *const f32, dst: *mut f32, n: u32, chunk: u32) {
    let (_, tile, bar) = shared_tiles(chunk);
    unsafe { init_barrier(bar) };
    if thread_idx_x() != 0 {
        return;
    }
    let total = n as u64 * 4;
    let chunks = total.div_ceil(chunk as u64) as u32;
    let mut parity = 0;
    let mut i = block_idx_x();
    while i < chunks {
        let offset = i as u64 * chunk as u64;
        let bytes = (total - offset).min(chunk as u64) as u32;
        unsafe {
            mbarrier_arrive_expect_tx(bar, bytes);
            bulk_load(tile, src.cast::<u8>().add(offset as usize), bytes, bar);
            mbarrier_wait(bar, parity);
            bulk_store(dst.cast::<u8>().add(offset as usize), tile, bytes);
        }
        bulk_commit();
        bulk_wait_read();
        parity ^= 1;
        i += grid_blocks();
    }
}

/// Blocks in the grid along x (`nctaid.x`).
#[inline(always)]
fn grid_blocks() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { core::arch::nvptx::_grid_dim_x() }
}

/// Copies a `rows x cols` matrix with 2-D tensor copies, one `64 x 64` tile per block: lane 0
/// loads the tile through `map_in` (`cp.async.bulk.tensor` global -> shared, completion on the
/// mbarrier), waits, and stores it through `map_out` (shared -> global).
///
/// - Launch: block `32 x 1` ([`contract::COPY_THREADS`]), grid `(ceil(cols / 64), ceil(rows / 64))`.
/// - Shared memory: [`contract::COPY_SMEM`] = `1024 + 16384 + 8` dynamic bytes.
/// - Memory level: global <-> shared by the copy engine, 16 KiB per copy.
///
/// # Safety
/// `map_in` and `map_out` point to tensor maps in global memory of the input and output
/// `rows x cols` f32 matrices, box `64 x 64`, no swizzle.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn tma_copy(map_in: *const TensorMap, map_out: *const TensorMap) {
    let (_, tile, bar) = shared_tiles(contract::TILE_BYTES);
    unsafe { init_barrier(bar) };
    if thread_idx_x() != 0 {
        return;
    }
    let (x, y) = (block_idx_x() * contract::TILE, block_idx_y() * contract::TILE);
    unsafe {
        tensormap_acquire(map_in);
        tensormap_acquire(map_out);
        mbarrier_arrive_expect_tx(bar, contract::TILE_BYTES);
        tensor_load_2d(tile, map_in, x, y, bar);
        mbarrier_wait(bar, 0);
        tensor_store_2d(map_out, x, y, tile);
    }
    bulk_commit();
    // The block may exit once the store has read the tile (CUTLASS's epilogue does the same).
    bulk_wait_read();
}

/// Transposes a `rows x cols` matrix into `cols x rows` through shared memory, one `64 x 64`
/// tile per block, both global sides moved by tensor copies. Lane 0 loads the tile as
/// `64 / box_cols(swizzle)` boxes of 64 rows (`map_in`, swizzle mode `swizzle`), completion on
/// the mbarrier; every thread waits, then reads 4 float4 of the tile's columns (the 32 lanes of
/// a warp: 32 rows of one float4 column, at the swizzled offsets of
/// [`contract::transpose_read_offset`]) and writes them transposed into a plain `64 x 64`
/// output tile (lanes on consecutive words: conflict-free); after a proxy fence and a block
/// barrier, lane 0 stores that tile through `map_out`. The input tile's column read is where
/// the swizzle matters: unswizzled, its 8 lanes of a 16-byte phase hit the same banks.
///
/// - Launch: block `32 x 8` ([`contract::TRANSPOSE_BLOCK`]), grid `(ceil(cols / 64), ceil(rows / 64))`.
/// - Shared memory: [`contract::TRANSPOSE_SMEM`] = `1024 + 2 * 16384 + 8` dynamic bytes.
/// - Memory level: global <-> shared by the copy engine; shared (float4 reads, scalar writes).
///
/// # Safety
/// `map_in` describes the `rows x cols` input, box `64 x box_cols(swizzle)` rows x columns,
/// swizzle `swizzle` (< 4); `map_out` the `cols x rows` output, box `64 x 64`, no swizzle.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn tma_transpose(map_in: *const TensorMap, map_out: *const TensorMap, swizzle: u32) {
    // One body per mode, so the box width and the swizzle fold into constants.
    unsafe {
        match swizzle {
            0 => transpose_tile::<0>(map_in, map_out),
            1 => transpose_tile::<1>(map_in, map_out),
            2 => transpose_tile::<2>(map_in, map_out),
            _ => transpose_tile::<3>(map_in, map_out),
        }
    }
}

/// The body of [`tma_transpose`] for swizzle mode `MODE`.
///
/// # Safety
/// As for [`tma_transpose`].
#[inline(always)]
unsafe fn transpose_tile<const MODE: u32>(map_in: *const TensorMap, map_out: *const TensorMap) {
    const T: u32 = contract::TILE;
    let w = const { contract::box_cols(MODE) };
    let (tiles, tile_in, bar) = shared_tiles(2 * contract::TILE_BYTES);
    let tile_out = tile_in.add(contract::TILE_BYTES);
    unsafe { init_barrier(bar) };
    let (c0, r0) = (block_idx_x() * T, block_idx_y() * T);
    let t = thread_idx_y() * contract::TRANSPOSE_BLOCK.0 + thread_idx_x();
    if t == 0 {
        unsafe {
            tensormap_acquire(map_in);
            tensormap_acquire(map_out);
            mbarrier_arrive_expect_tx(bar, contract::TILE_BYTES);
            for b in 0..T / w {
                tensor_load_2d(tile_in.add(b * T * w * 4), map_in, c0 + b * w, r0, bar);
            }
        }
    }
    unsafe { mbarrier_wait(bar, 0) };
    let out = unsafe { tiles.add(contract::TILE_BYTES as usize) }.cast::<f32>();
    for i in 0..contract::TRANSPOSE_READS {
        let (r, c4) = contract::transpose_read(t, i);
        let at = contract::transpose_read_offset(MODE, r, c4) as usize;
        let v = unsafe { crate::device::load4(tiles.add(at).cast::<f32>()) };
        for (q, v) in v.iter().enumerate() {
            unsafe { *out.add(((4 * c4 + q as u32) * T + r) as usize) = *v };
        }
    }
    fence_proxy_async_shared();
    unsafe { sync_threads() };
    if t == 0 {
        unsafe { tensor_store_2d(map_out, r0, c0, tile_out) };
        bulk_commit();
        bulk_wait_read();
    }
}
