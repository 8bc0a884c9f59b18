//! The L2 lesson's answers as kernels: `read_cg_chunks` (the public suite's work split: many
//! short blocks, each a fixed 512 KiB region) beside `read_cg`, and the typed launch of
//! `hot_stream_read_evict_first` (timed by [`super::persisting`]).

use anyhow::Result;
use memlab_contracts::hierarchy::READ_CG_VECTOR_BYTES;
use memlab_contracts::l2::{CHUNK_THREADS, HOT_STREAM_THREADS, REGION_VECTORS};

use crate::gpu::launch::LaunchShape;
use crate::lab::sizes::bytes;
use crate::lab::{KernelRow, KernelRun, Lab, Level, Work, download, ensure_free, measure, poison, poisoned, upload};
use crate::launches;
use crate::reference;
use crate::verify;

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `read_cg_chunks`: `blocks` blocks of `CHUNK_THREADS` (`CHUNK_BLOCKS`, fewer under
    /// compute-sanitizer, at least `regions`), block `b` reading 512 KiB region `b % regions`
    /// of the `regions` in `input`.
    pub fn read_cg_chunks(blocks: u32) -> LaunchShape {
        LaunchShape { grid: (blocks, 1), block: (CHUNK_THREADS, 1), smem_bytes: 0 }
    }

    /// `hot_stream_read_evict_first`: as `hot_stream_read`, the streamed loads evict-first.
    pub fn hot_stream_read_evict_first(blocks: u32) -> LaunchShape {
        LaunchShape { grid: (blocks, 1), block: (HOT_STREAM_THREADS, 1), smem_bytes: 0 }
    }
}

/// Bytes of one region, what one block of `read_cg_chunks` reads (512 KiB).
pub const REGION_BYTES: usize = REGION_VECTORS as usize * READ_CG_VECTOR_BYTES;

/// Regions of a footprint of `footprint` bytes: the whole regions in it, at least one.
pub fn regions(footprint: usize) -> u32 {
    (footprint / REGION_BYTES).max(1) as u32
}

/// `read_cg_chunks` over the whole regions of `footprint` bytes, checked and timed.
pub fn chunks(lab: &Lab, footprint: usize) -> Result<KernelRow> {
    let regions = regions(footprint);
    let used = regions as usize * REGION_BYTES;
    let lesson = "L2 reads, many short blocks of a fixed 512 KiB each";
    ensure_free(lesson, used + 4 * regions as usize * CHUNK_THREADS as usize)?;
    let words = reference::strided_words(used / 4);
    let input = upload(&words)?;
    let mut out = poisoned::<u32>(regions as usize * CHUNK_THREADS as usize)?;
    let blocks = crate::lab::sanitizer::chunk_blocks(lab, regions);
    let launch = launches::read_cg_chunks(shapes::read_cg_chunks(blocks), &input, regions, &mut out);
    let work = Work { flop: 0.0, bytes: blocks as f64 * REGION_BYTES as f64, level: Level::L2 };
    let size = format!("{} in {regions} regions, {blocks} blocks", bytes(used));
    let prediction = "the busiest SM ends one short block after the others".to_string();
    let run = KernelRun { launch, lesson, prediction, work, size, reset: &|| poison(&out) };
    let want = reference::chunk_sums(&words, regions as usize);
    let check = || Ok((verify::exact_u32(&download(&out)?, |g| want[g]), "checksums"));
    measure(lab, run, check)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_footprint_is_read_in_whole_512_kib_regions() {
        assert_eq!(REGION_BYTES, 512 << 10);
        assert_eq!(regions(15 << 20), 30);
        assert_eq!(regions(2000016), 3);
        assert_eq!(regions(16), 1);
    }
}
