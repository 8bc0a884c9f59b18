//! Global-memory coalescing: `strided_read` over strides 1, 2, 4, ..., 64, useful bandwidth
//! against the 128-byte-segment and 32-byte-sector models; `misaligned_read` at word offsets
//! 0 .. 16, against the sectors a misaligned warp request touches.

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::probes::{BLOCK, MISALIGNED_MAX_OFFSET, MISALIGNED_READS_PER_THREAD};

use std::cell::RefCell;

use crate::charts::SweepChart;
use crate::gpu::launch::LaunchShape;
use crate::gpu::staging::Staging;
use crate::lab::Inputs;
use crate::lab::{
    KernelRow, KernelRun, Lab, Section, Work, check_staged, ensure_free, f32_bytes, measure, poison, poisoned,
};
use crate::lab::{Figure, Lesson, Run, Shared};
use crate::launches;
use crate::probes::strided::{self};
use crate::reference::{self, STRIDED_READS_PER_THREAD};

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `misaligned_read`: thread `g < threads` sums the 8 words at `offset + g + r * threads`
    /// of `input` (`8 * threads + 32` words) into `partial[g]`; `offset <= 32`, `threads` a
    /// multiple of 32; one-dimensional blocks of 256.
    pub fn misaligned_read(threads: u32) -> LaunchShape {
        LaunchShape::linear(threads, BLOCK, 0)
    }
}

/// Word offsets of the alignment sweep: aligned, inside the first sector, and whole sectors.
pub const OFFSETS: [u32; 6] = [0, 1, 2, 4, 8, 16];

/// 32-byte sectors one warp request of 32 consecutive words touches when it starts `offset`
/// words past a 128-byte line (CUDA C++ Best Practices Guide, "Misaligned Accesses").
fn misaligned_sectors(offset: u32) -> u32 {
    (4 * (offset % 8) + 128).div_ceil(32)
}

/// `misaligned_read` at every offset of [`OFFSETS`] over the sweep's `input` of `words` words
/// (at least 288), measured.
fn alignment_sweep(
    lab: &Lab,
    input: &DeviceBuffer<u32>,
    partial: &mut DeviceBuffer<u32>,
    words: usize,
) -> Result<Vec<(u32, KernelRow)>> {
    // Whole warps, each reading 8 words, with the largest offset's words to spare.
    let threads = (words - MISALIGNED_MAX_OFFSET as usize) / MISALIGNED_READS_PER_THREAD / 32 * 32;
    let staging = RefCell::new(Staging::new(threads)?);
    let mut points = Vec::new();
    for offset in OFFSETS {
        let sectors = misaligned_sectors(offset);
        let run = KernelRun {
            launch: launches::misaligned_read(
                shapes::misaligned_read(threads as u32),
                input,
                partial,
                threads as u32,
                offset,
            ),
            lesson: "a warp's 32 consecutive words start `offset` words past a 128-byte line",
            // The neighbouring warp reads the other part of the straddled sector, so L2 and DRAM
            // move each sector once: the extra sector costs L1 requests, not DRAM bandwidth.
            prediction: format!("{sectors} L1 sectors per warp request, same DRAM bytes: 1.00x of offset 0"),
            work: Work::global_bytes((threads * MISALIGNED_READS_PER_THREAD * 4) as f64),
            size: format!("offset {offset}"),
            reset: &|| poison(partial),
        };
        let want = |g: usize| {
            let word = |r: usize| reference::strided_word(offset as usize + g + r * threads);
            (0..MISALIGNED_READS_PER_THREAD).fold(0u32, |s, r| s.wrapping_add(word(r)))
        };
        let check = || Ok((check_staged(&lab.gpu, &mut staging.borrow_mut(), partial, threads, want)?, "checksums"));
        points.push((offset, measure(lab, run, check)?));
    }
    Ok(points)
}

/// The coalescing lesson's options.
#[derive(clap::Args, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
pub struct Options {
    /// Bytes spanned by the strided-read buffer (B, KiB, MiB, GiB).
    #[arg(id = "strided-bytes", long = "strided-bytes", value_name = "STRIDED_BYTES", default_value = "1GiB", value_parser = strided_bytes)]
    pub bytes: usize,
}

/// `--strided-bytes`: a byte count the strided-read sweep can use.
fn strided_bytes(text: &str) -> Result<usize, String> {
    strided::check_bytes(crate::cli::bytes(text)?)
}

/// The lesson: coalesced and strided global loads.
pub struct Coalescing;

impl Lesson for Coalescing {
    const NAME: &'static str = "coalescing";
    const HOST_FLAGS: &'static [&'static str] = &["--strided-bytes"];
    type Options = Options;

    fn run(lab: &Lab, _: &Inputs, options: &Options) -> Result<Section> {
        run(lab, options.bytes)
    }

    /// The staging of the strided sweep's input.
    fn host_bytes(options: &Options, _: &Shared) -> usize {
        crate::lab::staging_bytes((options.bytes / 4, 1))
    }

    fn figures(run: &Run) -> Vec<Figure> {
        vec![Figure::or_missing(
            SweepChart::coalescing(run.sections),
            "Useful bandwidth of `strided_read` relative to stride 1 (log scale), against the 32-byte-sector and 128-byte-segment models.",
            "coalescing sweep (run the `coalescing` demo)",
        )]
    }
}

/// Runs the stride sweep over a buffer of `bytes` in the device's memory, then the alignment
/// sweep over the same buffer.
fn run(lab: &Lab, bytes: usize) -> Result<Section> {
    let words = bytes / 4;
    let max_threads = words / STRIDED_READS_PER_THREAD;
    // The input, the sweep's partial sums, the alignment sweep's.
    ensure_free("the strided-read demo", f32_bytes(&[words, max_threads, max_threads]))?;
    // Generated chunk by chunk into pinned staging: no host copy of the 1 GiB input.
    let input = poisoned::<u32>(words)?;
    Staging::new(words)?.upload(&lab.gpu, &input, reference::fill_strided_words)?;
    let points = strided::sweep(lab, &input, words, "lanes read 4-byte words `stride` elements apart")?;
    let (sweep, mut notes, series) = strided::table(&points);
    let mut kernels: Vec<_> = points.into_iter().map(|(_, row)| row).collect();
    let mut checks: Vec<_> = kernels.drain(1..).map(|row| row.check).collect();
    let mut partial = poisoned::<u32>(max_threads)?;
    let aligned = alignment_sweep(lab, &input, &mut partial, words)?;
    let aligned_gbs = aligned[0].1.rate.value();
    for (offset, row) in &aligned {
        let sectors = misaligned_sectors(*offset);
        notes.push(format!(
            "misaligned_read, offset {offset} words: {:.0} GB/s, {:.3}x of offset 0 (model 1.000x: {sectors} L1 sectors per warp, each DRAM sector once); {}",
            row.rate.value(),
            row.rate.value() / aligned_gbs,
            row.check.summary(&row.check_kind)
        ));
    }
    // The offset-1 row carries the driver's figures; every other offset adds its check.
    for (offset, row) in aligned {
        match offset {
            1 => kernels.push(row),
            _ => checks.push(row.check),
        }
    }
    Ok(Section {
        name: "coalescing".into(),
        title: format!("Global-memory coalescing: strided_read over {} MiB", bytes >> 20),
        lesson: "A warp's loads are served in 32-byte sectors: once lanes are 32 bytes or more apart, every 4-byte load drags in a whole sector.".into(),
        kernels,
        sweep: Some(sweep),
        checks,
        notes,
        series,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misaligned_warp_touches_one_sector_more() {
        let sectors: Vec<u32> = OFFSETS.iter().map(|&o| misaligned_sectors(o)).collect();
        assert_eq!(sectors, [4, 5, 5, 5, 4, 4]);
        assert_eq!(misaligned_sectors(7), 5);
        assert_eq!(misaligned_sectors(32), 4);
        // The smallest sweep still has one warp at the largest offset.
        assert!(strided::MIN_BYTES / 4 >= MISALIGNED_MAX_OFFSET as usize + 32 * MISALIGNED_READS_PER_THREAD);
    }
}
