//! The strided-read sweep: `strided_read` at strides 1, 2, 4, ..., 64 over any memory the
//! lab's device can load, each point checked and timed, against the 32-byte-sector, the
//! 128-byte-segment and the DRAM models. The coalescing lesson runs it on the device's own
//! memory, the peer lesson over NVLink, the host-memory lesson over mapped host memory.

use std::cell::RefCell;

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::probes::BLOCK;

use crate::gpu::staging::Staging;
use crate::lab::{KernelRow, KernelRun, Lab, Work, check_staged, measure, poison, poisoned};
use crate::launches;
use crate::model::coalescing::{TransactionModel, bandwidth_fraction_vs_unit_stride};
use crate::model::dram;
use crate::reference::{self, STRIDED_READS_PER_THREAD};
use crate::series::{Series, names};

/// The launch shape of the sweep's kernel (its typed launch, in [`crate::launches`], takes the
/// shape first).
pub mod shapes {
    use super::BLOCK;
    use crate::gpu::launch::LaunchShape;

    /// `strided_read`: thread `g < threads` sums the 8 words at `(g + r * threads) * stride` of
    /// `input` into `partial[g]`; one-dimensional blocks of 256.
    pub fn strided_read(threads: u32) -> LaunchShape {
        LaunchShape::linear(threads, BLOCK, 0)
    }
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
}
