//! Pure-Rust models of the three memory levels a kernel uses, with no GPU
//! and nothing else of the crate (serde derives only, for `--json`), so every prediction the demos print can be checked
//! on a laptop and compared against what the driver and the hardware report.
//!
//! - [`occupancy`]: how many blocks fit on one SM given registers, shared
//!   memory and warp slots, both the textbook arithmetic and the driver's
//!   own rules (`cuda_occupancy.h`).
//! - [`gpus`]: GPU names and SM targets mapped to the compute capabilities
//!   [`occupancy`] knows.
//! - [`banks`]: shared-memory wavefronts, bank conflicts and broadcasts for
//!   one warp request of 4-, 8- or 16-byte accesses, and 2-D tiles.
//! - [`coalescing`]: global-memory sectors (32 B) and segments (128 B)
//!   touched by one warp instruction or several, and the resulting efficiency.
//! - [`dram`]: what HBM moves per L2 miss (64-byte fetches) and how the
//!   spacing of fetches changes DRAM throughput, measured on the H200.
//! - [`gemm_tiles`]: the shared-memory requests of the SGEMM ladder's top rungs (padded and
//!   swizzled tiles, `ldmatrix`), fed to [`banks`].
//! - [`tiling`]: global element loads of naive vs shared-memory tiled
//!   matrix multiplication.
//! - [`clusters`]: how many thread-block clusters fit at once, GPC by GPC.
//! - [`split_k`]: the split of `k` the split-K SGEMM takes: blocks against SM slots, waves,
//!   and the partial sums' bytes against the idle slots they fill.
//! - [`roofline`]: arithmetic intensity, peak FP32 throughput and the
//!   roofline bound.

pub mod banks;
pub mod clusters;
pub mod coalescing;
pub mod dram;
pub mod gemm_tiles;
pub mod gpus;
pub mod l2;
pub mod occupancy;
pub mod roofline;
pub mod split_k;
pub mod tiling;
