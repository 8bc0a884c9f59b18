//! A launch's shape: grid and block dimensions and dynamic shared bytes, and its checks against
//! the device's limits. Its own module, below the launches and the cluster launches that both
//! take it.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::device::DeviceInfo;
use crate::refuse;

/// Threads per warp on every CUDA device so far (CUDA C++ Programming Guide, "SIMT
/// Architecture").
pub const WARP_SIZE: u32 = 32;

/// Grid and block dimensions (x, y) and dynamic shared bytes of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchShape {
    /// Blocks along x and y.
    pub grid: (u32, u32),
    /// Threads per block along x and y.
    pub block: (u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub smem_bytes: u32,
}

impl LaunchShape {
    /// Threads in one block.
    pub fn threads_per_block(&self) -> u32 {
        self.block.0.saturating_mul(self.block.1)
    }

    /// The shape covering a `rows x cols` domain with `tile_rows x tile_cols` elements per block.
    pub fn covering(rows: usize, cols: usize, tile: (usize, usize), block: (u32, u32), smem_bytes: u32) -> Self {
        let blocks = |n: usize, t: usize| u32::try_from(n.div_ceil(t)).unwrap_or(u32::MAX);
        LaunchShape { grid: (blocks(cols, tile.1), blocks(rows, tile.0)), block, smem_bytes }
    }

    /// A one-dimensional launch of at least `threads` threads in blocks of `block`
    /// (`ceil(threads / block)` blocks).
    pub fn linear(threads: u32, block: u32, smem_bytes: u32) -> Self {
        LaunchShape { grid: (threads.div_ceil(block), 1), block: (block, 1), smem_bytes }
    }

    /// Checks the shape against the device's limits.
    ///
    /// # Errors
    /// A refusal naming the exceeded limit.
    pub fn check(&self, info: &DeviceInfo) -> Result<()> {
        let threads = self.threads_per_block();
        if threads == 0 || self.grid.0 == 0 || self.grid.1 == 0 {
            refuse!("empty launch: grid {:?}, block {:?}", self.grid, self.block);
        }
        if threads > info.max_threads_per_block {
            refuse!("{threads} threads per block exceeds the device limit of {}", info.max_threads_per_block);
        }
        if self.grid.0 > info.max_grid.0 || self.grid.1 > info.max_grid.1 {
            refuse!(
                "grid {}x{} exceeds the device limit of {}x{} blocks: the matrix is too large for this kernel",
                self.grid.0,
                self.grid.1,
                info.max_grid.0,
                info.max_grid.1
            );
        }
        if self.smem_bytes > info.smem_per_block_optin {
            refuse!(
                "{} bytes of shared memory per block exceeds the opt-in limit of {} bytes (default {})",
                self.smem_bytes,
                info.smem_per_block_optin,
                info.smem_per_block
            );
        }
        Ok(())
    }

    /// Refuses a block that is not a whole number of warps, for kernels whose indexing assumes
    /// full warps (`lane = threadIdx.x % 32` must cover every lane of every warp).
    ///
    /// # Errors
    /// A refusal naming `kernel`, the block and the allowed sizes.
    pub fn require_whole_warps(&self, kernel: &str, max_threads_per_block: u32) -> Result<()> {
        let threads = self.threads_per_block();
        if !threads.is_multiple_of(WARP_SIZE) {
            refuse!(
                "`{kernel}` needs threads per block a multiple of the warp size {WARP_SIZE}, got {threads}: allowed {WARP_SIZE}, {}, ..., {max_threads_per_block}",
                2 * WARP_SIZE
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covering_rounds_partial_tiles_up() {
        let s = LaunchShape::covering(33, 4097, (32, 32), (32, 8), 0);
        assert_eq!(s.grid, (129, 2));
        assert_eq!(s.threads_per_block(), 256);
        let s = LaunchShape::covering(1, 1, (16, 16), (16, 16), 0);
        assert_eq!(s.grid, (1, 1));
    }

    fn refusal(shape: LaunchShape) -> String {
        shape.check(&DeviceInfo::h200()).unwrap_err().to_string()
    }

    #[test]
    fn shapes_beyond_the_device_limits_are_refused_with_the_limit() {
        let ok = LaunchShape { grid: (4, 4), block: (32, 32), smem_bytes: 8192 };
        assert!(ok.check(&DeviceInfo::h200()).is_ok());
        assert_eq!(
            refusal(LaunchShape { block: (32, 33), ..ok }),
            "1056 threads per block exceeds the device limit of 1024"
        );
        assert_eq!(
            refusal(LaunchShape { smem_bytes: 232449, ..ok }),
            "232449 bytes of shared memory per block exceeds the opt-in limit of 232448 bytes (default 49152)"
        );
        assert!(
            refusal(LaunchShape { grid: (1, 65536), ..ok })
                .starts_with("grid 1x65536 exceeds the device limit of 2147483647x65535 blocks")
        );
        assert!(refusal(LaunchShape { grid: (0, 1), ..ok }).starts_with("empty launch"));
        // At the opt-in limit exactly, the shape is fine.
        assert!(LaunchShape { smem_bytes: 232448, ..ok }.check(&DeviceInfo::h200()).is_ok());
    }

    #[test]
    fn whole_warps_are_required_where_the_kernel_says_so() {
        let shape = LaunchShape { grid: (1, 1), block: (100, 1), smem_bytes: 0 };
        assert_eq!(
            shape.require_whole_warps("probe", 1024).unwrap_err().to_string(),
            "`probe` needs threads per block a multiple of the warp size 32, got 100: allowed 32, 64, ..., 1024"
        );
        assert!(LaunchShape { block: (32, 8), ..shape }.require_whole_warps("probe", 1024).is_ok());
    }
}
