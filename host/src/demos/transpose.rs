//! Shared memory and bank conflicts: copy, naive, tiled and padded transposes of one matrix,
//! and (`run-demos --sizes`) the same kernels swept over matrix sizes against memcpy.
//!
//! The input is never held on the host: it is generated chunk by chunk into pinned staging
//! buffers and uploaded ([`reference::fill_input`]), and each output is checked chunk by chunk
//! as it comes back, against the generator at the transposed index.

use std::cell::RefCell;

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::transpose::{
    BLOCK, PADDED_PITCH, TILE, TILED_PITCH, WIDE_BLOCK, WIDE_PITCH, WIDE_TILE, smem_bytes,
};

use super::{
    Inputs, KernelRow, KernelRun, Lab, Section, Work, check_u32_elements, ensure_free, f32_bytes, measure, poison,
    poisoned,
};
use crate::gpu::launch::{Launch, LaunchShape};
use crate::gpu::staging::Staging;
use crate::model::banks::WarpRequest;
use crate::model::coalescing::WarpAccess;
use crate::phases::Kind;
use crate::reference;
use crate::series::{Point, Series, names};
use crate::verify::Streamed;

/// Seed of the transposed matrix ([`reference::input_f32`]).
pub const SEED: u64 = 7;

/// The shape of a kernel that moves one `tile x tile` tile per block of a `rows x cols` input.
fn tiles(rows: u32, cols: u32, tile: u32, block: (u32, u32), smem: u32) -> LaunchShape {
    LaunchShape::covering(rows as usize, cols as usize, (tile as usize, tile as usize), block, smem)
}

crate::kernels! {
    /// `copy`: the bandwidth ceiling of the transposes. `input` and `output` are `rows x cols`
    /// f32; block `32 x 8`, one block per `32 x 32` tile, no shared memory.
    fn copy(; input: &DeviceBuffer<f32>, output: &mut DeviceBuffer<f32>, rows: u32, cols: u32)
        => tiles(rows, cols, TILE, BLOCK, 0);
    /// `transpose_naive`: `input` `rows x cols`, `output` `cols x rows`; block `32 x 8`, one
    /// block per `32 x 32` tile, no shared memory.
    fn transpose_naive(; input: &DeviceBuffer<f32>, output: &mut DeviceBuffer<f32>, rows: u32, cols: u32)
        => tiles(rows, cols, TILE, BLOCK, 0);
    /// `transpose_tiled`: as [`transpose_naive`], through a `32 x 32` shared tile (4096 B).
    fn transpose_tiled(; input: &DeviceBuffer<f32>, output: &mut DeviceBuffer<f32>, rows: u32, cols: u32)
        => tiles(rows, cols, TILE, BLOCK, smem_bytes(TILE, TILED_PITCH));
    /// `transpose_padded`: as [`transpose_naive`], through a `32 x 33` shared tile (4224 B).
    fn transpose_padded(; input: &DeviceBuffer<f32>, output: &mut DeviceBuffer<f32>, rows: u32, cols: u32)
        => tiles(rows, cols, TILE, BLOCK, smem_bytes(TILE, PADDED_PITCH));
    /// `transpose_vectorized`: block `16 x 16`, one block per `64 x 64` tile, a `64 x 65`
    /// shared tile (16640 B); buffers 16-byte aligned (every device allocation is).
    fn transpose_vectorized(; input: &DeviceBuffer<f32>, output: &mut DeviceBuffer<f32>, rows: u32, cols: u32)
        => tiles(rows, cols, WIDE_TILE, WIDE_BLOCK, smem_bytes(WIDE_TILE, WIDE_PITCH));
}

/// A typed launch of one of this lesson's kernels: `(input, output, rows, cols)`.
pub type TransposeLaunch = fn(&DeviceBuffer<f32>, &mut DeviceBuffer<f32>, u32, u32) -> Launch;

/// The kernels with what each teaches, the copy ceiling first.
pub const KERNELS: [(TransposeLaunch, &str); 5] = [
    (kernels::copy, "coalesced reads and writes: the ceiling for this launch shape"),
    (kernels::transpose_naive, "reads coalesced, writes strided by a whole row: a sector per lane"),
    (
        kernels::transpose_tiled,
        "32x32 shared tile: global traffic coalesced, but the tile's column read is a bank conflict",
    ),
    (kernels::transpose_padded, "32x33 shared tile: one pad word per row spreads a column over all 32 banks"),
    (kernels::transpose_vectorized, "64x65 shared tile, 128-bit loads and stores: 16 floats per thread in flight"),
];

/// The models' prediction for one launch on a `rows x cols` input: the global store efficiency
/// (sector model) and, for the tiled kernels, the bank factor of the tile's column read.
fn prediction(launch: &Launch, rows: usize) -> String {
    let store_stride = if launch.kernel == "transpose_naive" { rows as u64 } else { 1 };
    let stores = WarpAccess::new(4, store_stride).analyze().sector_efficiency();
    let mut text = format!("stores {:.1}% sector-efficient", 100.0 * stores);
    let shape = &launch.shape;
    if shape.smem_bytes > 0 {
        let wide = shape.block == WIDE_BLOCK;
        let tile = if wide { WIDE_TILE } else { TILE } as u64;
        let pitch = shape.smem_bytes as u64 / 4 / tile;
        // Lane (tx, ty) of a 16 x 16 block reads row 4 tx, column ty; of a 32 x 8 block row tx.
        let request = if wide {
            WarpRequest::from_words(&(0..32u64).map(|l| 4 * (l % 16) * pitch + l / 16).collect::<Vec<_>>())
        } else {
            WarpRequest::column_of_tile(pitch)
        };
        text += &format!(", column read {}-way", request.analyze().wavefronts);
    }
    text
}

/// Host bytes the demo holds at once for a `rows x cols` matrix: two pinned staging chunks.
pub fn host_bytes((rows, cols): (usize, usize)) -> usize {
    2 * f32_bytes(&[rows * cols]).min(crate::gpu::staging::CHUNK_BYTES)
}

/// Runs copy and the transposes on `lab.sizes.transpose`, then the sweep over
/// `lab.sizes.sweep` when there is one.
pub fn run(lab: &Lab, inputs: &Inputs) -> Result<Section> {
    let (rows, cols) = lab.sizes.transpose;
    let kernels = measure_at(lab, (rows, cols))?;
    let mut section = Section {
        name: "transpose".into(),
        title: format!("Shared memory and bank conflicts: transpose {rows}x{cols} f32"),
        lesson: "Staging a tile in shared memory makes both global sides coalesced; padding the tile by one word removes the bank conflict of its column read.".into(),
        kernels,
        ..Section::default()
    };
    if !lab.sizes.sweep.is_empty() {
        sweep(lab, inputs, &mut section)?;
    }
    Ok(section)
}

/// Every kernel of [`KERNELS`] on one `rows x cols` matrix, each checked element by element and
/// timed.
fn measure_at(lab: &Lab, (rows, cols): (usize, usize)) -> Result<Vec<KernelRow>> {
    let n = rows * cols;
    check_u32_elements("the transpose demo", &[n])?;
    ensure_free("the transpose demo", f32_bytes(&[n, n]))?;
    let staging = RefCell::new(Staging::<f32>::new(n)?);
    let input = poisoned::<f32>(n)?;
    lab.phases.time(Kind::Inputs, || {
        staging.borrow_mut().upload(&lab.gpu, &input, |offset, chunk| reference::fill_input(SEED, offset, chunk))
    })?;
    let mut output = poisoned::<f32>(n)?;
    let bytes = 2.0 * 4.0 * n as f64;
    let mut kernels = Vec::new();
    for (launch, lesson) in KERNELS {
        let launch = launch(&input, &mut output, rows as u32, cols as u32);
        let copy = launch.kernel == "copy";
        let run = KernelRun {
            prediction: prediction(&launch, rows),
            launch,
            lesson,
            work: Work::global_bytes(bytes),
            size: format!("{rows}x{cols}"),
            reset: &|| poison(&output),
        };
        // Output element i holds input element i (copy) or its transposed source.
        let source = |i: usize| if copy { i } else { reference::transposed_from(i, rows, cols) };
        let check = || {
            let mut check = Streamed::new();
            staging.borrow_mut().download(&lab.gpu, &output, |_, chunk| {
                check.chunk_f32(chunk, |i| reference::input_f32(SEED, source(i)))
            })?;
            Ok((check.finish(), "exact"))
        };
        kernels.push(measure(lab, run, check)?);
    }
    Ok(kernels)
}

/// Short kernel names for the sweep's columns and chart (`transpose_` dropped).
fn short(kernel: &str) -> &str {
    kernel.strip_prefix("transpose_").unwrap_or(kernel)
}

/// The nearest size whose rows and columns are whole 16-byte vectors of f32 (multiples of 4):
/// the aligned size an unaligned one is compared with.
pub fn nearest_aligned((rows, cols): (usize, usize)) -> (usize, usize) {
    let round = |v: usize| ((v + 2) / 4 * 4).max(4);
    (round(rows), round(cols))
}

/// The sweep over `lab.sizes.sweep`: a table of GB/s and % of memcpy at each size, the checks,
/// one chart series per kernel (and memcpy), and a note per unaligned size whose aligned
/// neighbour was swept.
fn sweep(lab: &Lab, inputs: &Inputs, section: &mut Section) -> Result<()> {
    let mut measured = Vec::new();
    for &size in &lab.sizes.sweep {
        measured.push((size, measure_at(lab, size)?));
    }
    let kernel_names: Vec<&str> = measured[0].1.iter().map(|k| k.kernel.as_str()).collect();
    let mut header = vec!["size".to_string(), "memcpy GB/s".to_string()];
    header.extend(kernel_names.iter().map(|k| short(k).to_string()));
    let mut series: Vec<Series> = std::iter::once(names::SIZES_MEMCPY)
        .chain(kernel_names.iter().copied())
        .map(|name| Series::labelled(&format!("{}{name}", names::SIZES), "matrix (rows x cols f32)", "GB/s", []))
        .collect();
    let mut rows = Vec::new();
    for (i, ((r, c), kernels)) in measured.iter().enumerate() {
        let label = format!("{r}x{c}");
        let memcpy = inputs.memcpy_sweep.get(i);
        let memcpy_gbs = memcpy.and_then(|m| m.gbs());
        section.checks.extend(memcpy.map(|m| m.check.clone()));
        let mut row = vec![label.clone(), memcpy_gbs.map_or("-".into(), |g| format!("{g:.0}"))];
        let rates = std::iter::once(memcpy_gbs).chain(kernels.iter().map(|k| k.check.passed().then(|| k.rate.value())));
        for (s, gbs) in series.iter_mut().zip(rates) {
            s.points.extend(gbs.map(|y| Point { x: i as f64, y, label: Some(label.clone()) }));
        }
        for kernel in kernels {
            let gbs = kernel.rate.value();
            let share = memcpy_gbs.map_or(String::new(), |m| format!(" ({:.0}%)", 100.0 * gbs / m));
            let wrong = if kernel.check.passed() { "" } else { " WRONG" };
            row.push(format!("{gbs:.0}{share}{wrong}"));
            section.checks.push(kernel.check.clone());
        }
        rows.push(row);
    }
    for (size, kernels) in &measured {
        let aligned = nearest_aligned(*size);
        let Some((_, base)) = measured.iter().find(|(s, _)| *s == aligned && aligned != *size) else { continue };
        let ratios: Vec<String> = kernels
            .iter()
            .zip(base)
            .map(|(k, b)| format!("{} {:.2}x", short(&k.kernel), k.rate.value() / b.rate.value()))
            .collect();
        section.notes.push(format!(
            "{}x{} against the aligned {}x{}: {}",
            size.0,
            size.1,
            aligned.0,
            aligned.1,
            ratios.join(", ")
        ));
    }
    section.sweep = Some((header, rows));
    section.series.extend(series);
    Ok(())
}
