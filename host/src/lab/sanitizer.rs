//! Footprints for compute-sanitizer (`run-demos --sanitizer`, `hierarchy --sanitizer`): every
//! kernel still launches, at the sizes the user gave, but what the lessons fix for timing
//! (grids that fill every SM, hundreds of passes over a quarter of the L2, 200 000-block L2
//! reads, flushes of twice the L2, footprint sweeps, checks of every SGEMM rung at 517x389x263,
//! persistent grids over every SM) shrinks to a few blocks, two passes and one sweep point (the
//! TMA lesson's sweeps shrink in its own `Plan`).
//!
//! Why: under compute-sanitizer every instrumented load and store is checked, so a launch runs
//! 10 to 1000 times slower (measured on the H200: racecheck of the small presets, whose fixed
//! grids fill 132 SMs, ran past 200 s). A sanitizer run is about coverage (each kernel at small
//! and odd sizes, partial tiles and tails), not timing; the figures of such a run mean nothing.
//! Each function returns its input unchanged when the run is not a sanitizer run.

use memlab_contracts::l2::CHUNK_BLOCKS;

use super::{Lab, ODD_GEMM_SIZES};
use crate::gpu::device::DeviceInfo;

/// Blocks of a grid that would fill every SM: three, so that a grid-stride loop takes more
/// than one block and the last block is not the first.
pub const GRID_BLOCKS: u32 = 3;
/// Passes of a multi-pass read: two, so the pass loop runs more than once.
pub const PASSES: u32 = 2;
/// Iterations of a timed loop (cluster barriers): a multiple of every unroll (8).
pub const ITERS: u32 = 8;
/// Largest fixed footprint, bytes: two 512 KiB regions of `read_cg_chunks` and three vectors of
/// a third, so every reader has a tail; a multiple of 16 (the readers' vector).
pub const BYTES: usize = (1 << 20) + 48;
/// Clusters of a launch that would fill the GPU with clusters.
pub const CLUSTERS: u32 = 2;
/// `read_cg_chunks` blocks per region: two, so every region is read by more than one block.
pub const CHUNK_BLOCKS_PER_REGION: u32 = 2;
/// The SGEMM ladder's element-by-element sizes ([`ODD_GEMM_SIZES`] shrunk): `m` and `n`
/// past the largest tile height and width (256) so a full tile and a partial one run each way
/// (the interior's 128-bit path and the edge's); the first not a
/// multiple of 4 (scalar paths), the second a multiple of 4 but of no tile, `k` of neither
/// (a partial last depth step of 8).
pub const ODD_SIZES: [(usize, usize, usize); 2] = [(261, 261, 19), (260, 260, 12)];

/// Whether this run is a sanitizer run.
pub fn on(lab: &Lab) -> bool {
    lab.settings.sanitizer
}

/// `full` normally, `small` in a sanitizer run.
fn pick<T>(on: bool, full: T, small: T) -> T {
    if on { small } else { full }
}

/// Blocks and threads of a grid of `block`-thread blocks that fills every SM
/// ([`super::full_gpu`]), or [`GRID_BLOCKS`] of them.
pub fn grid(lab: &Lab, block: u32) -> (u32, usize) {
    grid_for(on(lab), &lab.gpu.info, block)
}

fn grid_for(on: bool, info: &DeviceInfo, block: u32) -> (u32, usize) {
    let (full, _) = super::full_gpu(info, block);
    let blocks = pick(on, full, full.min(GRID_BLOCKS));
    (blocks, blocks as usize * block as usize)
}

/// SMs a persistent grid (so many blocks per SM) spans: the device's, or one, so that a few
/// blocks loop over every item of a small matrix and a ring of buffers wraps (the TMA lesson).
pub fn sms(lab: &Lab) -> u32 {
    sms_for(on(lab), &lab.gpu.info)
}

fn sms_for(on: bool, info: &DeviceInfo) -> u32 {
    pick(on, info.sms, 1)
}

/// `passes`, or at most [`PASSES`].
pub fn passes(lab: &Lab, passes: u32) -> u32 {
    pick(on(lab), passes, passes.min(PASSES))
}

/// `iters`, or at most [`ITERS`].
pub fn iters(lab: &Lab, iters: u32) -> u32 {
    pick(on(lab), iters, iters.min(ITERS))
}

/// `bytes`, or at most [`BYTES`] (a multiple of 16 stays one).
pub fn bytes(lab: &Lab, bytes: usize) -> usize {
    pick(on(lab), bytes, bytes.min(BYTES))
}

/// `clusters`, or at most [`CLUSTERS`].
pub fn clusters(lab: &Lab, clusters: u32) -> u32 {
    pick(on(lab), clusters, clusters.min(CLUSTERS))
}

/// The points of a sweep, or its first.
pub fn sweep<T>(lab: &Lab, mut points: Vec<T>) -> Vec<T> {
    if on(lab) {
        points.truncate(1);
    }
    points
}

/// Blocks of a `read_cg_chunks` launch over `regions` regions: [`CHUNK_BLOCKS`], or
/// [`CHUNK_BLOCKS_PER_REGION`] per region.
pub fn chunk_blocks(lab: &Lab, regions: u32) -> u32 {
    pick(on(lab), CHUNK_BLOCKS, regions.saturating_mul(CHUNK_BLOCKS_PER_REGION))
}

/// The SGEMM ladder's element-by-element sizes.
pub fn odd_sizes(lab: &Lab) -> [(usize, usize, usize); 2] {
    pick(on(lab), ODD_GEMM_SIZES, ODD_SIZES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sanitizer_grid_is_three_blocks_and_otherwise_the_full_gpu() {
        let h200 = DeviceInfo::h200();
        assert_eq!(grid_for(false, &h200, 256), (132 * 8, 132 * 8 * 256));
        assert_eq!(grid_for(true, &h200, 256), (3, 768));
        assert_eq!((sms_for(false, &h200), sms_for(true, &h200)), (132, 1));
        // A GPU whose full grid is smaller keeps it.
        let tiny = DeviceInfo { sms: 1, max_threads_per_sm: 512, ..h200 };
        assert_eq!(grid_for(true, &tiny, 256), (2, 512));
    }

    #[test]
    fn the_small_footprints_keep_every_tail_and_loop() {
        const { assert!(PASSES > 1 && GRID_BLOCKS > 1 && CLUSTERS > 1 && CHUNK_BLOCKS_PER_REGION > 1) };
        const { assert!(ITERS.is_multiple_of(8)) };
        // Whole 16-byte vectors (the readers'); the lessons check they accept it.
        assert!(BYTES.is_multiple_of(16));
    }

    #[test]
    fn the_sgemm_sizes_keep_the_shapes_the_full_ones_test() {
        let [(m0, n0, k0), (m1, n1, k1)] = ODD_SIZES;
        // As ODD_GEMM_SIZES: the first of no multiple of 4, the second of multiples of 4 but
        // of no tile, k never a multiple of the depth step 8; both past one 256 x 256 tile.
        assert!([m0, n0, k0].iter().all(|d| d % 4 != 0));
        assert!([m1, n1, k1].iter().all(|d| d % 4 == 0 && d % 8 != 0));
        assert!(m0 > 256 && m1 > 256 && n0 > 256 && n1 > 256);
        for (small, full) in ODD_SIZES.iter().zip(ODD_GEMM_SIZES) {
            assert!(small.0 * small.1 * small.2 * 25 < full.0 * full.1 * full.2, "{small:?}");
        }
    }
}
