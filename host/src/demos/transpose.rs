//! Shared memory and bank conflicts: copy, naive, tiled and padded transposes of one matrix.

use anyhow::Result;

use super::{KernelRun, Lab, Section, Work, download, ensure_free, f32_bytes, measure, poison, poisoned, upload};
use crate::gpu::launch::{Arg, LaunchShape};
use crate::model::banks::WarpRequest;
use crate::model::coalescing::WarpAccess;
use crate::{reference, verify};

/// Tile edge and thread rows per block of every transpose kernel (kernels-gpu `transpose`).
pub const TILE: usize = 32;
/// Threads per block: `32 x 8`.
pub const BLOCK: (u32, u32) = (32, 8);

/// The four kernels: name, dynamic shared bytes (the tile's row pitch in words times 32 rows),
/// lesson.
const KERNELS: [(&str, u32, &str); 4] = [
    ("copy", 0, "coalesced reads and writes: the ceiling for this launch shape"),
    ("transpose_naive", 0, "reads coalesced, writes strided by a whole row: a sector per lane"),
    (
        "transpose_tiled",
        (TILE * TILE * 4) as u32,
        "32x32 shared tile: global traffic coalesced, but the tile's column read is a bank conflict",
    ),
    (
        "transpose_padded",
        (TILE * (TILE + 1) * 4) as u32,
        "32x33 shared tile: one pad word per row spreads a column over all 32 banks",
    ),
];

/// The models' prediction for one kernel on a `rows x cols` input: the global store efficiency
/// (sector model) and, for the tiled kernels, the bank factor of the tile's column read.
fn prediction(kernel: &str, smem: u32, rows: usize) -> String {
    let store_stride = if kernel == "transpose_naive" { rows as u64 } else { 1 };
    let stores = WarpAccess::new(4, store_stride).analyze().sector_efficiency();
    let mut text = format!("stores {:.1}% sector-efficient", 100.0 * stores);
    if smem > 0 {
        let pitch = smem as u64 / 4 / TILE as u64;
        let factor = WarpRequest::column_of_tile(pitch).analyze().serialization;
        text += &format!(", column read {factor}-way");
    }
    text
}

/// Runs copy and the three transposes on `lab.sizes.transpose`.
pub fn run(lab: &mut Lab) -> Result<Section> {
    let (rows, cols) = lab.sizes.transpose;
    let n = rows * cols;
    ensure_free("the transpose demo", f32_bytes(&[n, n]))?;
    let input_host = reference::random_f32(n, 7);
    let transposed = reference::transpose(&input_host, rows, cols);
    let input = upload(&input_host)?;
    let mut output = poisoned::<f32>(n)?;
    let bytes = 2.0 * 4.0 * n as f64;
    let mut kernels = Vec::new();
    for (kernel, smem, lesson) in KERNELS {
        poison(&mut output)?;
        let shape = LaunchShape::covering(rows, cols, (TILE, TILE), BLOCK, smem);
        let args = [Arg::from(&input), Arg::from(&output), Arg::U32(rows as u32), Arg::U32(cols as u32)];
        let want = if kernel == "copy" { &input_host } else { &transposed };
        let run = KernelRun {
            kernel,
            lesson,
            prediction: prediction(kernel, smem, rows),
            shape,
            args: &args,
            work: Work::global_bytes(bytes),
        };
        let check = || Ok((verify::exact_f32(&download(&output)?, want), "exact"));
        kernels.push(measure(lab, run, check)?);
    }
    Ok(Section {
        name: "transpose",
        title: format!("Shared memory and bank conflicts: transpose {rows}x{cols} f32"),
        lesson: "Staging a tile in shared memory makes both global sides coalesced; padding the tile by one word removes the bank conflict of its column read.".into(),
        kernels,
        ..Section::default()
    })
}
