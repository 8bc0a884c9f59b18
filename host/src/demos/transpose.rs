//! Shared memory and bank conflicts: copy, naive, tiled and padded transposes of one matrix.

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::transpose::{
    BLOCK, PADDED_PITCH, TILE, TILED_PITCH, WIDE_BLOCK, WIDE_PITCH, WIDE_TILE, smem_bytes,
};

use super::{
    Inputs, KernelRun, Lab, Section, Work, check_u32_elements, download, ensure_free, f32_bytes, measure, poison,
    poisoned, upload,
};
use crate::gpu::launch::{Launch, LaunchShape};
use crate::model::banks::WarpRequest;
use crate::model::coalescing::WarpAccess;
use crate::{reference, verify};

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

/// Runs copy and the transposes on `lab.sizes.transpose`.
pub fn run(lab: &Lab, _: &Inputs) -> Result<Section> {
    let (rows, cols) = lab.sizes.transpose;
    let n = rows * cols;
    check_u32_elements("the transpose demo", &[n])?;
    ensure_free("the transpose demo", f32_bytes(&[n, n]))?;
    let input_host = reference::random_f32(n, 7);
    let transposed = reference::transpose(&input_host, rows, cols);
    let input = upload(&input_host)?;
    let mut output = poisoned::<f32>(n)?;
    let bytes = 2.0 * 4.0 * n as f64;
    let mut kernels = Vec::new();
    for (launch, lesson) in KERNELS {
        let launch = launch(&input, &mut output, rows as u32, cols as u32);
        let want = if launch.kernel == "copy" { &input_host } else { &transposed };
        let run = KernelRun {
            prediction: prediction(&launch, rows),
            launch,
            lesson,
            work: Work::global_bytes(bytes),
            size: format!("{rows}x{cols}"),
            reset: &|| poison(&output),
        };
        let check = || Ok((verify::exact_f32(&download(&output)?, want), "exact"));
        kernels.push(measure(lab, run, check)?);
    }
    Ok(Section {
        name: "transpose".into(),
        title: format!("Shared memory and bank conflicts: transpose {rows}x{cols} f32"),
        lesson: "Staging a tile in shared memory makes both global sides coalesced; padding the tile by one word removes the bank conflict of its column read.".into(),
        kernels,
        ..Section::default()
    })
}
