//! Global-memory coalescing: `strided_read` over strides 1, 2, 4, ..., 64, useful bandwidth
//! against the 128-byte-segment and 32-byte-sector models; `misaligned_read` at word offsets
//! 0 .. 16, against the sectors a misaligned warp request touches.

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::probes::{BLOCK, MISALIGNED_MAX_OFFSET, MISALIGNED_READS_PER_THREAD};

use std::cell::RefCell;

use crate::gpu::launch::LaunchShape;
use crate::gpu::staging::Staging;
use crate::lab::Inputs;
use crate::lab::{
    KernelRow, KernelRun, Lab, Section, Work, check_staged, ensure_free, f32_bytes, measure, poison, poisoned,
};
use crate::launches;
use crate::model::coalescing::{TransactionModel, bandwidth_fraction_vs_unit_stride};
use crate::model::dram;
use crate::reference::{self, STRIDED_READS_PER_THREAD};
use crate::series::{Series, names};

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `strided_read`: thread `g < threads` sums the 8 words at `(g + r * threads) * stride` of
    /// `input` into `partial[g]`; one-dimensional blocks of 256.
    pub fn strided_read(threads: u32) -> LaunchShape {
        LaunchShape::linear(threads, BLOCK, 0)
    }

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

/// Strides swept, in 4-byte elements.
pub const STRIDES: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Fewest bytes the sweep accepts: at the widest stride each thread still makes its
/// [`STRIDED_READS_PER_THREAD`] loads (one thread at least).
pub const MIN_BYTES: usize = 4 * STRIDED_READS_PER_THREAD * STRIDES[STRIDES.len() - 1];
/// Most bytes the sweep accepts: at stride 1 the thread count must fit the kernel's `u32`.
pub const MAX_BYTES: usize = 4 * STRIDED_READS_PER_THREAD * u32::MAX as usize;

/// Refuses a buffer size the sweep cannot use.
///
/// # Errors
/// A one-line message with the allowed range in bytes.
pub fn check_bytes(bytes: usize) -> Result<usize, String> {
    if !(MIN_BYTES..=MAX_BYTES).contains(&bytes) {
        return Err(format!(
            "{bytes} bytes is out of range for the strided-read sweep: allowed {MIN_BYTES}..={MAX_BYTES} (stride {} needs {STRIDED_READS_PER_THREAD} loads per thread, the thread count is a u32)",
            STRIDES[STRIDES.len() - 1]
        ));
    }
    Ok(bytes)
}

/// Useful bandwidth relative to stride 1 when memory moves 32-byte sectors.
pub fn sector_model(stride: usize) -> f64 {
    bandwidth_fraction_vs_unit_stride(4, stride as u64, TransactionModel::Sector32)
}

/// The same under the older 128-byte-segment accounting.
fn segment_model(stride: usize) -> f64 {
    bandwidth_fraction_vs_unit_stride(4, stride as u64, TransactionModel::Segment128)
}

/// The same past the sector: 64-byte DRAM fetches and their locality, as measured on the H200
/// (`model::dram`).
fn dram_model(stride: usize) -> f64 {
    dram::strided_fraction(4, stride as u64, &dram::DramLocality::H200)
}

/// Runs the stride sweep over a buffer of `lab.sizes.strided_bytes` in the device's memory, then
/// the alignment sweep over the same buffer.
pub fn run(lab: &Lab, _: &Inputs) -> Result<Section> {
    let words = lab.sizes.strided_bytes / 4;
    let max_threads = words / STRIDED_READS_PER_THREAD;
    // The input, the sweep's partial sums, the alignment sweep's.
    ensure_free("the strided-read demo", f32_bytes(&[words, max_threads, max_threads]))?;
    // Generated chunk by chunk into pinned staging: no host copy of the 1 GiB input.
    let input = poisoned::<u32>(words)?;
    Staging::new(words)?.upload(&lab.gpu, &input, reference::fill_strided_words)?;
    let points = sweep(lab, &input, words, "lanes read 4-byte words `stride` elements apart")?;
    let (sweep, mut notes, series) = table(&points);
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
        title: format!("Global-memory coalescing: strided_read over {} MiB", lab.sizes.strided_bytes >> 20),
        lesson: "A warp's loads are served in 32-byte sectors: once lanes are 32 bytes or more apart, every 4-byte load drags in a whole sector.".into(),
        kernels,
        sweep: Some(sweep),
        checks,
        notes,
        series,
    })
}

/// `strided_read` at every stride of [`STRIDES`] over the `words` words of `input` (the
/// device's own memory, or a view of a peer GPU's or of mapped host memory: any memory the
/// lab's device can load, see `gpu::memory::View`), word `i` holding [`reference::strided_word`]`(i)`. Each point is checked
/// against the CPU's sums before it is timed.
pub fn sweep(
    lab: &Lab,
    input: &DeviceBuffer<u32>,
    words: usize,
    lesson: &'static str,
) -> Result<Vec<(usize, KernelRow)>> {
    let max_threads = words / STRIDED_READS_PER_THREAD;
    let mut partial = poisoned::<u32>(max_threads)?;
    // The partial sums come back through pinned staging, checked chunk by chunk (at 1 GiB and
    // stride 1, 128 MiB of them).
    let staging = RefCell::new(Staging::new(max_threads)?);
    let mut points = Vec::new();
    for stride in STRIDES {
        let threads = words / (STRIDED_READS_PER_THREAD * stride);
        let launch = launches::strided_read(
            shapes::strided_read(threads as u32),
            input,
            &mut partial,
            threads as u32,
            stride as u32,
        );
        let prediction = format!(
            "sectors: {:.3}x, segments: {:.3}x, DRAM: {:.3}x of stride 1",
            sector_model(stride),
            segment_model(stride),
            dram_model(stride)
        );
        let useful = (threads * STRIDED_READS_PER_THREAD * 4) as f64;
        let run = KernelRun {
            launch,
            lesson,
            prediction,
            work: Work::global_bytes(useful),
            size: format!("stride {stride}"),
            reset: &|| poison(&partial),
        };
        let check = || {
            // Only the partial sums this stride's threads wrote: at stride 64, 1/64 of the buffer.
            let want = |g| reference::strided_partial(g, threads, stride);
            Ok((check_staged(&lab.gpu, &mut staging.borrow_mut(), &partial, threads, want)?, "checksums"))
        };
        points.push((stride, measure(lab, run, check)?));
    }
    Ok(points)
}

/// A sweep table: header and rows.
pub type Table = (Vec<String>, Vec<Vec<String>>);

/// The sweep against the sector and segment models: the table, the note on which model is
/// closer, and the chart series (measured / stride 1 and both models).
pub fn table(points: &[(usize, KernelRow)]) -> (Table, Vec<String>, Vec<Series>) {
    let base_gbs = points[0].1.rate.value();
    let header = [
        "stride",
        "useful GB/s",
        "measured vs stride 1",
        "sector model",
        "measured / sector",
        "segment model",
        "measured / segment",
        "DRAM model",
        "measured / DRAM",
        "check",
    ];
    let mut closer_counts = [0usize; 2];
    let rows = points
        .iter()
        .map(|(stride, row)| {
            let measured = row.rate.value() / base_gbs;
            let (sector, segment) = (sector_model(*stride), segment_model(*stride));
            let sectors_closer = (measured / sector).ln().abs() <= (measured / segment).ln().abs();
            closer_counts[usize::from(!sectors_closer)] += 1;
            vec![
                stride.to_string(),
                format!("{:.0}", row.rate.value()),
                format!("{measured:.3}"),
                format!("{sector:.3}"),
                format!("{:.2}", measured / sector),
                format!("{segment:.3}"),
                format!("{:.2}", measured / segment),
                format!("{:.3}", dram_model(*stride)),
                format!("{:.2}", measured / dram_model(*stride)),
                row.check.summary(&row.check_kind),
            ]
        })
        .collect();
    let notes = vec![format!(
        "Closer to the 32-byte sector model at {} of {} strides, to the 128-byte segment model at {}; ratios near 1.00 mean the model predicts the measured fall-off.",
        closer_counts[0],
        points.len(),
        closer_counts[1]
    ), "Past stride 8 both fall short: the H200 reads 64 bytes from HBM per L2 miss (a sector pair) and serves isolated fetches slower than fetches that share a 256-byte block; the DRAM model counts both (docs/measurements/dram.md).".to_string()];
    let (x, y) = ("stride (4-byte elements)", "useful bandwidth / stride-1 bandwidth");
    let series = vec![
        Series::new(names::MEASURED, x, y, points.iter().map(|(s, row)| (*s as f64, row.rate.value() / base_gbs))),
        Series::new(names::SECTOR_MODEL, x, y, STRIDES.map(|s| (s as f64, sector_model(s)))),
        Series::new(names::SEGMENT_MODEL, x, y, STRIDES.map(|s| (s as f64, segment_model(s)))),
        Series::new(names::DRAM_MODEL, x, y, STRIDES.map(|s| (s as f64, dram_model(s)))),
    ];
    ((header.iter().map(|s| s.to_string()).collect(), rows), notes, series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_sizes_outside_the_sweep_are_refused_with_the_range() {
        assert_eq!(MIN_BYTES, 2048);
        // The sanitizer footprint is enough for the widest stride.
        assert_eq!(check_bytes(crate::lab::sanitizer::BYTES), Ok(crate::lab::sanitizer::BYTES));
        assert_eq!(check_bytes(2048), Ok(2048));
        assert_eq!(check_bytes(1 << 30), Ok(1 << 30));
        let err = check_bytes(2047).unwrap_err();
        assert!(
            err.starts_with("2047 bytes is out of range for the strided-read sweep: allowed 2048..=137438953440"),
            "{err}"
        );
        assert!(check_bytes(MAX_BYTES + 1).is_err());
    }

    #[test]
    fn a_misaligned_warp_touches_one_sector_more() {
        let sectors: Vec<u32> = OFFSETS.iter().map(|&o| misaligned_sectors(o)).collect();
        assert_eq!(sectors, [4, 5, 5, 5, 4, 4]);
        assert_eq!(misaligned_sectors(7), 5);
        assert_eq!(misaligned_sectors(32), 4);
        // The smallest sweep still has one warp at the largest offset.
        assert!(MIN_BYTES / 4 >= MISALIGNED_MAX_OFFSET as usize + 32 * MISALIGNED_READS_PER_THREAD);
    }
}
