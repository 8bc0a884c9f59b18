//! Global-memory coalescing: `strided_read` over strides 1, 2, 4, ..., 64, useful bandwidth
//! against the 128-byte-segment and 32-byte-sector models.

use anyhow::Result;

use super::{KernelRun, Lab, Rate, Section, download, ensure_free, measure, poison, poisoned, upload};
use crate::gpu::launch::{Arg, LaunchShape};
use crate::model::coalescing::{TransactionModel, bandwidth_fraction_vs_unit_stride};
use crate::reference::{self, STRIDED_READS_PER_THREAD};
use crate::series::{Series, names};
use crate::verify;

/// Strides swept, in 4-byte elements.
pub const STRIDES: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Threads per block of the probe.
pub const BLOCK: u32 = 256;

/// Useful bandwidth relative to stride 1 when memory moves 32-byte sectors.
fn sector_model(stride: usize) -> f64 {
    bandwidth_fraction_vs_unit_stride(4, stride as u64, TransactionModel::Sector32)
}

/// The same under the older 128-byte-segment accounting.
fn segment_model(stride: usize) -> f64 {
    bandwidth_fraction_vs_unit_stride(4, stride as u64, TransactionModel::Segment128)
}

/// Runs the stride sweep over a buffer of `lab.sizes.strided_bytes`.
pub fn run(lab: &mut Lab) -> Result<Section> {
    let words = lab.sizes.strided_bytes / 4;
    let max_threads = words / STRIDED_READS_PER_THREAD;
    ensure_free("the strided-read demo", 4 * (words + max_threads))?;
    let input = upload(&(0..words).map(reference::strided_word).collect::<Vec<_>>())?;
    let mut partial = poisoned::<u32>(max_threads)?;
    let mut points = Vec::new();
    for stride in STRIDES {
        let threads = words / (STRIDED_READS_PER_THREAD * stride);
        poison(&mut partial)?;
        let shape = LaunchShape { grid: ((threads as u32).div_ceil(BLOCK), 1), block: (BLOCK, 1), smem_bytes: 0 };
        let args = [Arg::from(&input), Arg::from(&partial), Arg::U32(threads as u32), Arg::U32(stride as u32)];
        let prediction =
            format!("sectors: {:.3}x, segments: {:.3}x of stride 1", sector_model(stride), segment_model(stride));
        let lesson = "lanes read 4-byte words `stride` elements apart";
        let run = KernelRun { kernel: "strided_read", lesson, prediction, shape, args: &args };
        let check = || {
            let got = download(&partial)?;
            Ok((verify::exact_u32(&got[..threads], |g| reference::strided_partial(g, threads, stride)), "checksums"))
        };
        let useful = (threads * STRIDED_READS_PER_THREAD * 4) as f64;
        points.push((stride, measure(lab, run, check, |t| Rate::Gbs(t.gbs(useful)))?));
    }
    let base_gbs = points[0].1.rate.value();
    let header =
        ["stride", "useful GB/s", "measured vs stride 1", "sector model", "segment model", "closer to", "check"];
    let rows = points
        .iter()
        .map(|(stride, row)| {
            let measured = row.rate.value() / base_gbs;
            let (sector, segment) = (sector_model(*stride), segment_model(*stride));
            let closer =
                if (measured / sector).ln().abs() <= (measured / segment).ln().abs() { "sectors" } else { "segments" };
            vec![
                stride.to_string(),
                format!("{:.0}", row.rate.value()),
                format!("{measured:.3}"),
                format!("{sector:.3}"),
                format!("{segment:.3}"),
                closer.to_string(),
                row.check.summary(row.check_kind),
            ]
        })
        .collect();
    let (x, y) = ("stride (4-byte elements)", "useful bandwidth / stride-1 bandwidth");
    let series = vec![
        Series::new(names::MEASURED, x, y, points.iter().map(|(s, row)| (*s as f64, row.rate.value() / base_gbs))),
        Series::new(names::SECTOR_MODEL, x, y, STRIDES.map(|s| (s as f64, sector_model(s)))),
        Series::new(names::SEGMENT_MODEL, x, y, STRIDES.map(|s| (s as f64, segment_model(s)))),
    ];
    let mut kernels: Vec<_> = points.into_iter().map(|(_, row)| row).collect();
    let checks = kernels.drain(1..).map(|row| row.check).collect();
    Ok(Section {
        name: "coalescing",
        title: format!("Global-memory coalescing: strided_read over {} MiB", lab.sizes.strided_bytes >> 20),
        lesson: "A warp's loads are served in 32-byte sectors: once lanes are 32 bytes or more apart, every 4-byte load drags in a whole sector.".into(),
        kernels,
        sweep: Some((header.iter().map(|s| s.to_string()).collect(), rows)),
        checks,
        series,
        ..Section::default()
    })
}
