//! Shared memory and bank conflicts: copy, naive, tiled and padded transposes of one matrix.

use anyhow::Result;

use super::{
    KernelRun, Lab, Section, Work, check_u32_elements, download, ensure_free, f32_bytes, measure, poison, poisoned,
    upload,
};
use crate::gpu::launch::{Arg, LaunchShape};
use crate::model::banks::WarpRequest;
use crate::model::coalescing::WarpAccess;
use crate::{reference, verify};

/// Tile edge of the 32x32 transpose kernels (kernels-gpu `transpose`).
pub const TILE: usize = 32;
/// Threads per block: `32 x 8`.
pub const BLOCK: (u32, u32) = (32, 8);

/// One kernel of the lesson: name, `C`-tile edge, block, dynamic shared bytes, lesson.
#[derive(Debug, Clone, Copy)]
pub struct Kernel {
    /// Entry point.
    pub name: &'static str,
    /// Each block moves one `tile x tile` tile.
    pub tile: usize,
    /// Threads per block `(x, y)`.
    pub block: (u32, u32),
    /// Dynamic shared bytes (the tile's row pitch in words times its rows, times 4).
    pub smem: u32,
    /// What it teaches.
    pub lesson: &'static str,
}

impl Kernel {
    /// The launch shape for a `rows x cols` input.
    pub fn shape(&self, rows: usize, cols: usize) -> LaunchShape {
        LaunchShape::covering(rows, cols, (self.tile, self.tile), self.block, self.smem)
    }
}

/// The kernels, the copy ceiling first.
pub const KERNELS: [Kernel; 5] = [
    Kernel {
        name: "copy",
        tile: TILE,
        block: BLOCK,
        smem: 0,
        lesson: "coalesced reads and writes: the ceiling for this launch shape",
    },
    Kernel {
        name: "transpose_naive",
        tile: TILE,
        block: BLOCK,
        smem: 0,
        lesson: "reads coalesced, writes strided by a whole row: a sector per lane",
    },
    Kernel {
        name: "transpose_tiled",
        tile: TILE,
        block: BLOCK,
        smem: (TILE * TILE * 4) as u32,
        lesson: "32x32 shared tile: global traffic coalesced, but the tile's column read is a bank conflict",
    },
    Kernel {
        name: "transpose_padded",
        tile: TILE,
        block: BLOCK,
        smem: (TILE * (TILE + 1) * 4) as u32,
        lesson: "32x33 shared tile: one pad word per row spreads a column over all 32 banks",
    },
    Kernel {
        name: "transpose_vectorized",
        tile: 64,
        block: (16, 16),
        smem: 64 * 65 * 4,
        lesson: "64x65 shared tile, 128-bit loads and stores: 16 floats per thread in flight",
    },
];

/// The models' prediction for one kernel on a `rows x cols` input: the global store efficiency
/// (sector model) and, for the tiled kernels, the bank factor of the tile's column read.
fn prediction(kernel: &Kernel, rows: usize) -> String {
    let store_stride = if kernel.name == "transpose_naive" { rows as u64 } else { 1 };
    let stores = WarpAccess::new(4, store_stride).analyze().sector_efficiency();
    let mut text = format!("stores {:.1}% sector-efficient", 100.0 * stores);
    if kernel.smem > 0 {
        let pitch = kernel.smem as u64 / 4 / kernel.tile as u64;
        // Lane (tx, ty) of a 16 x 16 block reads row 4 tx, column ty; of a 32 x 8 block row tx.
        let request = if kernel.block.0 == 16 {
            WarpRequest::from_words(&(0..32u64).map(|l| 4 * (l % 16) * pitch + l / 16).collect::<Vec<_>>())
        } else {
            WarpRequest::column_of_tile(pitch)
        };
        text += &format!(", column read {}-way", request.analyze().wavefronts);
    }
    text
}

/// Runs copy and the transposes on `lab.sizes.transpose`.
pub fn run(lab: &mut Lab) -> Result<Section> {
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
    for kernel in &KERNELS {
        poison(&mut output)?;
        let shape = kernel.shape(rows, cols);
        let args = [Arg::from(&input), Arg::from(&output), Arg::U32(rows as u32), Arg::U32(cols as u32)];
        let want = if kernel.name == "copy" { &input_host } else { &transposed };
        let run = KernelRun {
            kernel: kernel.name,
            lesson: kernel.lesson,
            prediction: prediction(kernel, rows),
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
