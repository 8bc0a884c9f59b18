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
    BLOCK, PADDED_PITCH, TILE, TILED_PITCH, WIDE_BLOCK, WIDE_PITCH, padded_smem_bytes, smem_bytes, wide_aligned,
};
use memlab_contracts::transpose_any as any;
use memlab_contracts::transpose_thin as thin;

use crate::charts::{OccupancyChart, SizesChart};
use crate::gpu::launch::{Launch, LaunchShape};
use crate::gpu::staging::Staging;
use crate::lab::Inputs;
use crate::lab::check_staged;
use crate::lab::{
    KernelRow, KernelRun, Lab, Section, Work, check_u32_elements, ensure_free, f32_bytes, measure, poison, poisoned,
};
use crate::lab::{Figure, Lesson, Needs, Run, Shared};
use crate::launches;
use crate::model::banks::WarpRequest;
use crate::model::coalescing::{RowSweep, WarpAccess};
use crate::phases::Kind;
use crate::probes::baselines::{tiles, with_shift};
use crate::reference;
use crate::series::{Point, Series, names};

/// Seed of the transposed matrix ([`reference::input_f32`]).
pub const SEED: u64 = 7;

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// The baselines other lessons time too, shaped below the lessons ([`crate::probes::baselines`]).
    pub use crate::probes::baselines::shapes::{copy, transpose_vectorized};

    /// `transpose_aligned_stores`: as [`transpose_padded`], each output row's tiles shifted to
    /// start on a sector boundary; block `32 x 8`, grid `(ceil(cols / 32), ceil((rows +
    /// max_shift(rows)) / 32))`, a `40 x 33` shared tile (5280 B).
    pub fn transpose_aligned_stores(rows: u32, cols: u32) -> LaunchShape {
        tiles(with_shift(rows), cols, any::TILE, any::BLOCK, any::smem_bytes())
    }

    /// `transpose_thin`: a matrix with a side of at most 16 ([`thin::thin`]); block `256 x 1`,
    /// one band of [`thin::band`] long-side elements per block, `short * band` floats of shared
    /// memory (at most 16 KiB); buffers 16-byte aligned. On a matrix that is not thin its grid
    /// has 0 blocks, which the launch refuses.
    pub fn transpose_thin(rows: u32, cols: u32) -> LaunchShape {
        LaunchShape {
            grid: (thin::blocks(rows, cols), 1),
            block: (thin::BLOCK_THREADS, 1),
            smem_bytes: thin::smem_bytes(rows, cols),
        }
    }

    /// `transpose_naive`: `input` `rows x cols`, `output` `cols x rows`; block `32 x 8`, one
    /// block per `32 x 32` tile, no shared memory.
    pub fn transpose_naive(rows: u32, cols: u32) -> LaunchShape {
        tiles(rows, cols, TILE, BLOCK, 0)
    }

    /// `transpose_tiled`: as [`transpose_naive`], through a `32 x 32` shared tile (4096 B).
    pub fn transpose_tiled(rows: u32, cols: u32) -> LaunchShape {
        tiles(rows, cols, TILE, BLOCK, smem_bytes(TILE, TILED_PITCH))
    }

    /// `transpose_padded`: as [`transpose_naive`], through a `32 x 33` shared tile (4224 B); on
    /// rows that are not whole sectors `transpose_aligned_stores`' shape (its shifted path).
    pub fn transpose_padded(rows: u32, cols: u32) -> LaunchShape {
        tiles(with_shift(rows), cols, TILE, BLOCK, padded_smem_bytes(rows))
    }
}

/// A typed launch of one of this lesson's kernels with its shape: `(input, output, rows, cols)`.
pub type TransposeLaunch = fn(&DeviceBuffer<f32>, &mut DeviceBuffer<f32>, u32, u32) -> Launch;

/// The [`TransposeLaunch`] of kernel `$name`: its generated launch at `shapes::$name(rows, cols)`.
macro_rules! transpose_launch {
    ($name:ident) => {
        |input, output, rows, cols| launches::$name(shapes::$name(rows, cols), input, output, rows, cols)
    };
}

/// The kernels with what each teaches, the copy ceiling first.
pub const KERNELS: [(TransposeLaunch, &str); 5] = [
    (transpose_launch!(copy), "coalesced reads and writes, each row's tiles from a sector boundary: the ceiling"),
    (transpose_launch!(transpose_naive), "reads coalesced, writes strided by a whole row: a sector per lane"),
    (
        transpose_launch!(transpose_tiled),
        "32x32 shared tile: global traffic coalesced, but the tile's column read is a bank conflict",
    ),
    (transpose_launch!(transpose_padded), "32x33 shared tile: one pad word per row spreads a column over all 32 banks"),
    (
        transpose_launch!(transpose_vectorized),
        "64x65 shared tile, 128-bit loads and stores: 16 floats per thread in flight",
    ),
];

/// The kernels for dense matrices whose rows are not whole sectors, run by the `--sizes`
/// sweep next to [`KERNELS`].
pub const ANY_SIZE_KERNELS: [(TransposeLaunch, &str); 1] = [(
    transpose_launch!(transpose_aligned_stores),
    "32x33 tile, each output row's tiles shifted to a sector boundary: whole-sector stores",
)];

/// The models' prediction for one launch on a stored `rows x cols` input: the global stores'
/// sectors per request and partial sectors per request over the whole output
/// ([`RowSweep`]; the naive transpose's strided stores by [`WarpAccess`]) and, for the tiled
/// kernels, the bank factor of the tile's column read.
fn prediction(launch: &Launch, (rows, cols): (usize, usize)) -> String {
    let (rows, cols) = (rows as u64, cols as u64);
    // Copy writes rows of `cols` elements; the transposes write the `cols x rows` output.
    let out = if launch.kernel == "copy" { (rows, cols) } else { (cols, rows) };
    let mut text = match launch.kernel {
        "transpose_naive" => format!("stores {} sectors/req", WarpAccess::new(4, rows).analyze().sectors),
        kernel => {
            // Half a warp per output row of transpose_vectorized, 16 bytes per lane.
            let thin_run = is_thin((rows as usize, cols as usize));
            let sweep = match kernel {
                // One run of float4s: a warp stores 128 floats of it (copy on a thin matrix,
                // the thin transpose of a wide one, whose output is one run).
                "copy" | "transpose_thin" if thin_run && (kernel == "copy" || rows <= cols) => {
                    RowSweep::new(1, rows * cols, 4, 128)
                }
                "transpose_vectorized" => RowSweep {
                    rows_per_request: 2,
                    shifted: !wide_aligned(rows as u32, cols as u32),
                    ..RowSweep::new(out.0, out.1, 4, 64)
                },
                // Each row's tiles start at the sector boundary at or below the row's start
                // (transpose_padded's shifted path on rows that are not whole sectors; on whole
                // sectors the shift is 0).
                "copy" | "transpose_aligned_stores" | "transpose_padded" => {
                    RowSweep { shifted: true, ..RowSweep::new(out.0, out.1, 4, 32) }
                }
                _ => RowSweep::new(out.0, out.1, 4, 32),
            };
            let t = sweep.traffic();
            format!("stores {:.2} sectors/req, {:.2} partial", t.sectors_per_request(), t.partial_per_request())
        }
    };
    let pitch = match launch.kernel {
        "transpose_tiled" => TILED_PITCH,
        "transpose_padded" => PADDED_PITCH,
        "transpose_aligned_stores" => any::PITCH,
        "transpose_vectorized" => WIDE_PITCH,
        _ => return text,
    } as u64;
    // Lane (tx, ty) of a 16 x 16 block reads row 4 tx, column ty; of a 32 x 8 block row tx.
    let request = if launch.shape.block == WIDE_BLOCK {
        WarpRequest::from_words(&(0..32u64).map(|l| 4 * (l % 16) * pitch + l / 16).collect::<Vec<_>>())
    } else {
        WarpRequest::column_of_tile(pitch)
    };
    text += &format!(", column read {}-way", request.analyze().wavefronts);
    text
}

/// Every kernel of the demo: [`KERNELS`], then [`ANY_SIZE_KERNELS`].
fn all_kernels() -> Vec<(TransposeLaunch, &'static str)> {
    KERNELS.iter().chain(&ANY_SIZE_KERNELS).copied().collect()
}

/// The transpose lesson's options.
#[derive(clap::Args, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
pub struct Options {
    /// Transpose and copy matrix, ROWSxCOLS (the memcpy ceiling and the TMA lesson measure at
    /// it too).
    #[arg(id = "transpose", long = "transpose", value_name = "TRANSPOSE", default_value = "8192x8192", value_parser = crate::cli::matrix)]
    pub matrix: (usize, usize),
    /// Also sweep copy and the transposes over these matrices, ROWSxCOLS,... (with memcpy at
    /// each; a table, a chart in --report, and --json), e.g. 1000x999,8191x8192,8192x8192.
    #[arg(id = "sizes", long = "sizes", value_name = "SIZES", value_parser = crate::cli::size_list)]
    pub sizes: Option<crate::cli::SizeList>,
}

impl Options {
    /// The sweep's matrices, in order (empty: no sweep).
    pub fn sweep(&self) -> &[(usize, usize)] {
        self.sizes.as_deref().unwrap_or_default()
    }
}

/// The lesson: copy and the transposes through shared memory.
pub struct Transpose;

impl Lesson for Transpose {
    const NAME: &'static str = "transpose";
    const NEEDS: Needs = Needs { memcpy_sweep: true, ..Needs::TWINS };
    const HOST_FLAGS: &'static [&'static str] = &["--transpose", "--sizes"];
    type Options = Options;

    fn run(lab: &Lab, inputs: &Inputs, options: &Options) -> Result<Section> {
        run(lab, inputs, options)
    }

    fn host_bytes(_: &Options, shared: &Shared) -> usize {
        shared.matrix_staging_bytes()
    }

    fn figures(run: &Run) -> Vec<Figure> {
        let mut figures = vec![OccupancyChart::figure(run, launches::entry::transpose_padded.name)];
        figures.extend(Figure::when_drawn(
            SizesChart::from_sections(run.sections),
            "Copy and the transposes at each size of the `--sizes` sweep, as a share of memcpy at the same size: a dip at an unaligned size is the alignment cliff.",
        ));
        figures
    }
}

/// Runs copy and the transposes on the matrix; at a size whose rows are not whole sectors, each
/// again at the nearest aligned size, its row right below, with a note of the ratios and of the
/// cause. Then the sweep over `--sizes` when there is one.
fn run(lab: &Lab, inputs: &Inputs, options: &Options) -> Result<Section> {
    let size = options.matrix;
    let (rows, cols) = size;
    let aligned = nearest_aligned(size);
    let kernels = kernels_at(size, aligned);
    let here = measure_at(lab, Stored::dense(size), &kernels)?;
    let mut notes = Vec::new();
    notes.extend(is_thin(size).then(|| thin_cause(size)));
    let kernels = if aligned == size {
        here
    } else if let Some(skip) = over_the_limit(&Stored::dense(aligned), "the aligned comparison") {
        notes.push(skip);
        here
    } else {
        let base = measure_at(lab, Stored::dense(aligned), &kernels)?;
        notes.push(against_aligned(&Stored::dense(size), &here, &base));
        notes.push(odd_size_goal(&here, &base));
        notes.push(unaligned_cause(size));
        here.into_iter().zip(base).flat_map(|(h, b)| [h, b]).collect()
    };
    let mut section = Section {
        name: "transpose".into(),
        title: format!("Shared memory and bank conflicts: transpose {rows}x{cols} f32"),
        lesson: "Staging a tile in shared memory makes both global sides coalesced; padding the tile by one word removes the bank conflict of its column read.".into(),
        kernels,
        notes,
        ..Section::default()
    };
    if !options.sweep().is_empty() {
        sweep(lab, inputs, options.sweep(), &mut section)?;
    }
    Ok(section)
}

/// Whether a `rows x cols` matrix is thin ([`thin::thin`]: a side of at most 16).
fn is_thin((rows, cols): (usize, usize)) -> bool {
    matches!((u32::try_from(rows), u32::try_from(cols)), (Ok(r), Ok(c)) if thin::thin(r, c))
}

/// The transpose of thin matrices, run next to [`KERNELS`] where the matrix is thin.
pub const THIN_KERNELS: [(TransposeLaunch, &str); 1] = [(
    transpose_launch!(transpose_thin),
    "a band of the long side per block: coalesced 128-byte scalar rows one side, float4 runs the other",
)];

/// The kernels run at `size` and at its aligned neighbour `aligned`: [`all_kernels`], and
/// [`THIN_KERNELS`] where both are thin (the lesson picks the thin path by shape).
fn kernels_at(size: (usize, usize), aligned: (usize, usize)) -> Vec<(TransposeLaunch, &'static str)> {
    let mut kernels = all_kernels();
    if is_thin(size) && is_thin(aligned) {
        kernels.extend(THIN_KERNELS);
    }
    kernels
}

/// Why the tile does not pay on a thin `rows x cols` matrix: the share of a `32 x 32` tile that
/// holds data, and what the thin path moves per block instead.
fn thin_cause((rows, cols): (usize, usize)) -> String {
    let (r, c) = (rows as u32, cols as u32);
    let short = thin::short_side(r, c);
    let band = thin::band(short);
    let used = f64::from(short.min(TILE)) / f64::from(TILE);
    format!(
        "Thin matrix: a side of {short} (at most {}). A {TILE}x{TILE} tile holds {short} of its {TILE} rows or \
         columns ({:.0}% of its threads move data) and its transposed writes are {short}-float pieces of rows, so \
         the tile kernels cannot keep enough bytes in flight. copy moves the matrix as one run of float4s ({} \
         floats per block), and transpose_thin one band of {band} long-side elements of all {short} short rows per \
         block ({} floats through a {}-byte shared tile): 16 coalesced scalars per thread on the side of {short} \
         long rows, 4 float4s on the contiguous side.",
        thin::MAX_SHORT,
        100.0 * used,
        thin::COPY_CHUNK,
        short * band,
        thin::smem_bytes(r, c),
    )
}

/// The one-line note when `layout` is larger than the kernels' 32-bit indices allow (`u32::MAX`
/// elements): `what` is skipped, naming the size the user gave and the size it would take.
fn over_the_limit(layout: &Stored, what: &str) -> Option<String> {
    let (rows, cols) = layout.matrix;
    (layout.len() > u32::MAX as usize).then(|| {
        let (sr, sc) = layout.stored;
        format!(
            "{rows}x{cols}: {what} skipped: it needs {sr}x{sc} = {} elements, past the kernels' 32-bit limit of {}",
            layout.len(),
            u32::MAX
        )
    })
}

/// One line: each kernel's rate at `size` next to its rate at the aligned size `base` was
/// measured at, and the ratio.
fn against_aligned(size: &Stored, kernels: &[KernelRow], base: &[KernelRow]) -> String {
    let each = kernels.iter().zip(base).map(|(k, b)| {
        let (r, a) = (k.rate.value(), b.rate.value());
        format!("{} {r:.0}/{a:.0} GB/s {:.2}x", short(&k.kernel), r / a)
    });
    let aligned = base.first().map_or(String::new(), |b| b.size.clone());
    format!("{} against the aligned {aligned}: {}", size.label(), each.collect::<Vec<_>>().join(", "))
}

/// The odd-size goal: every kernel within 10% of its rate at the nearest aligned size.
pub const ODD_SIZE_GOAL: f64 = 0.9;

/// The kernel that does `kernel`'s job at any size: `copy` itself (its tiles are shifted), the
/// transposes' `transpose_aligned_stores` (`transpose_any.rs`).
fn any_size_kernel(kernel: &str) -> &'static str {
    if kernel == "copy" { "copy" } else { "transpose_aligned_stores" }
}

/// One line judging [`ODD_SIZE_GOAL`] for each kernel of `kernels` (at an unaligned size)
/// against the same kernel in `base` (at the aligned one); for each that misses it, what the
/// any-size kernel doing its job moves at this size, against the missing kernel's aligned rate.
fn odd_size_goal(kernels: &[KernelRow], base: &[KernelRow]) -> String {
    let rate = |name: &str| kernels.iter().find(|k| k.kernel == name).map(|k| k.rate.value());
    let (mut met, mut missed) = (Vec::new(), Vec::new());
    for (k, b) in kernels.iter().zip(base) {
        let (r, a) = (k.rate.value(), b.rate.value());
        if r >= ODD_SIZE_GOAL * a {
            met.push(short(&k.kernel).to_string());
            continue;
        }
        let keeper = any_size_kernel(&k.kernel);
        let instead = match rate(keeper) {
            Some(x) if keeper != k.kernel => {
                format!(" ({keeper} here {x:.0} GB/s, {:.2}x of {}'s aligned {a:.0})", x / a, short(&k.kernel))
            }
            _ => String::new(),
        };
        missed.push(format!("{} {:.2}x{instead}", short(&k.kernel), r / a));
    }
    let list = |v: Vec<String>| if v.is_empty() { "none".to_string() } else { v.join(", ") };
    format!(
        "goal (each kernel >= {ODD_SIZE_GOAL:.2}x its aligned rate): met by {}; missed by {}",
        list(met),
        list(missed)
    )
}

/// Why a `rows x cols` matrix whose rows are not whole 32-byte sectors is slower, with the
/// store model's figures ([`RowSweep`], 32 floats per warp request) for rows of `cols` floats
/// (a copy's) and of `rows` (the transposes'), tiles from column 0 (unshifted) and shifted.
fn unaligned_cause((rows, cols): (usize, usize)) -> String {
    let stores = |rows: usize, cols: usize, shifted: bool| {
        let t = RowSweep { shifted, ..RowSweep::new(rows as u64, cols as u64, 4, 32) }.traffic();
        format!("{:.2} sectors/req, {:.2} partial", t.sectors_per_request(), t.partial_per_request())
    };
    format!(
        "Why: a row that is not a whole number of 32-byte sectors ({PITCH_ELEMENTS} floats) starts inside a \
         sector, so a warp's 128-byte row segment spans 5 sectors instead of 4 and its first and last are written \
         in part, the rest of each by another warp at another time (partial-sector writes). The store model: \
         unshifted, rows of {cols} floats (a copy's) {}, of {rows} floats (the transposes') {} (4.00 and \
         0.00 on whole-sector rows). copy and transpose_aligned_stores shift each row's tiles back to a sector \
         boundary, leaving one partial sector where two rows meet: {} and {}. transpose_padded and \
         transpose_vectorized take such a shifted path on rows that are not whole sectors (the vectorized one \
         with scalar loads, its 16-byte stores aligned by the shift).",
        stores(rows, cols, false),
        stores(cols, rows, false),
        stores(rows, cols, true),
        stores(cols, rows, true),
    )
}

/// Rows and columns of a pitched matrix are padded to a multiple of this many f32 (32 bytes, one
/// sector: CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"), so every row
/// starts on a sector boundary and, being a multiple of 4, every 128-bit access of
/// `transpose_vectorized` is aligned.
pub const PITCH_ELEMENTS: usize = 8;

/// How a `rows x cols` matrix is stored on the device: dense (`stored == (rows, cols)`), or
/// padded to `stored` rows and columns with zeros (a pitched layout, as `cuMemAllocPitch`
/// gives). The kernels run on the stored matrix; rates count the matrix's own bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// The matrix, `(rows, cols)`.
    pub matrix: (usize, usize),
    /// The stored matrix, `(rows, cols)`, at least as large.
    pub stored: (usize, usize),
}

impl Stored {
    /// Dense storage.
    pub fn dense(matrix: (usize, usize)) -> Stored {
        Stored { matrix, stored: matrix }
    }

    /// Rows and columns padded to multiples of [`PITCH_ELEMENTS`].
    pub fn pitched((rows, cols): (usize, usize)) -> Stored {
        Stored {
            matrix: (rows, cols),
            stored: (rows.next_multiple_of(PITCH_ELEMENTS), cols.next_multiple_of(PITCH_ELEMENTS)),
        }
    }

    /// Element `i` of the stored input: the generator's inside the matrix, 0 in the padding.
    pub fn input(&self, i: usize) -> f32 {
        let ((rows, cols), pitch) = (self.matrix, self.stored.1);
        let (r, c) = reference::div_rem(i, pitch);
        if r < rows && c < cols { reference::input_f32(SEED, r * cols + c) } else { 0.0 }
    }

    /// Elements stored.
    pub fn len(&self) -> usize {
        self.stored.0 * self.stored.1
    }

    /// Whether nothing is stored (never: sizes are at least 1).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The size as tables name it: `8191x8192`, or `8191x8192 in 8192x8192` when padded.
    pub fn label(&self) -> String {
        let (((r, c), (sr, sc)), pad) = ((self.matrix, self.stored), self.stored != self.matrix);
        if pad { format!("{r}x{c} in {sr}x{sc}") } else { format!("{r}x{c}") }
    }
}

/// Each of `kernels` on one matrix stored as `layout`, each checked element by element
/// (padding included) and timed.
fn measure_at(lab: &Lab, layout: Stored, kernels: &[(TransposeLaunch, &'static str)]) -> Result<Vec<KernelRow>> {
    let ((rows, cols), n) = (layout.stored, layout.len());
    check_u32_elements(&format!("the transpose demo at {}", layout.label()), &[n])?;
    ensure_free("the transpose demo", f32_bytes(&[n, n]))?;
    let staging = RefCell::new(Staging::<f32>::new(n)?);
    let input = poisoned::<f32>(n)?;
    lab.phases.time(Kind::Inputs, || {
        staging
            .borrow_mut()
            .upload(&lab.gpu, &input, |offset, chunk| reference::fill(offset, chunk, |i| layout.input(i)))
    })?;
    let mut output = poisoned::<f32>(n)?;
    let bytes = 2.0 * 4.0 * (layout.matrix.0 * layout.matrix.1) as f64;
    let mut rows_measured = Vec::new();
    for &(launch, lesson) in kernels {
        let launch = launch(&input, &mut output, rows as u32, cols as u32);
        let copy = launch.kernel == "copy";
        let run = KernelRun {
            prediction: prediction(&launch, (rows, cols)),
            launch,
            lesson,
            work: Work::global_bytes(bytes),
            size: layout.label(),
            reset: &|| poison(&output),
        };
        // Output element i holds stored element i (copy) or its transposed source.
        let source = |i: usize| if copy { i } else { reference::transposed_from(i, rows, cols) };
        let check = || {
            let check =
                check_staged(&lab.gpu, &mut staging.borrow_mut(), &output, output.len(), |i| layout.input(source(i)))?;
            Ok((check, "exact"))
        };
        rows_measured.push(measure(lab, run, check)?);
    }
    Ok(rows_measured)
}

/// Short kernel names for the sweep's columns and chart (`transpose_` dropped).
fn short(kernel: &str) -> &str {
    kernel.strip_prefix("transpose_").unwrap_or(kernel)
}

/// The nearest size whose rows and columns are multiples of [`PITCH_ELEMENTS`] (whole sectors):
/// the aligned size an unaligned one is compared with.
pub fn nearest_aligned((rows, cols): (usize, usize)) -> (usize, usize) {
    let round = |v: usize| ((v + PITCH_ELEMENTS / 2) / PITCH_ELEMENTS * PITCH_ELEMENTS).max(PITCH_ELEMENTS);
    (round(rows), round(cols))
}

/// The sweep over `sizes`: a table of GB/s and % of memcpy at each size, dense and,
/// for a size that is not a whole number of sectors per row, pitched ([`Stored::pitched`]); the
/// checks; one chart series per kernel and layout (and memcpy); and a note per unaligned size
/// whose aligned neighbour was swept.
fn sweep(lab: &Lab, inputs: &Inputs, sizes: &[(usize, usize)], section: &mut Section) -> Result<()> {
    // Per size: the dense run, and the pitched one where padding changes anything.
    let mut measured: Vec<(Stored, Vec<KernelRow>, Option<Vec<KernelRow>>)> = Vec::new();
    for &size in sizes {
        let (dense, pitched) = (Stored::dense(size), Stored::pitched(size));
        let skip = over_the_limit(&pitched, "the pitched layout");
        let pitched_rows =
            if pitched == dense || skip.is_some() { None } else { Some(measure_at(lab, pitched, &KERNELS)?) };
        section.notes.extend(skip);
        measured.push((dense, measure_at(lab, dense, &all_kernels())?, pitched_rows));
    }
    let kernel_names: Vec<String> = measured[0].1.iter().map(|k| k.kernel.clone()).collect();
    let mut header = vec!["size".to_string(), "memcpy GB/s".to_string()];
    header.extend(kernel_names.iter().map(|k| short(k).to_string()));
    let series_names: Vec<String> = std::iter::once(names::SIZES_MEMCPY.to_string())
        .chain(kernel_names.iter().cloned())
        .chain(kernel_names[..KERNELS.len()].iter().map(|k| format!("{k}{}", names::SIZES_PITCHED)))
        .collect();
    let mut series: Vec<Series> = series_names
        .iter()
        .map(|name| Series::labelled(&format!("{}{name}", names::SIZES), "matrix (rows x cols f32)", "GB/s", []))
        .collect();
    let mut rows = Vec::new();
    for (i, (dense, kernels, pitched)) in measured.iter().enumerate() {
        let label = dense.label();
        let memcpy = inputs.memcpy_sweep.get(i);
        let memcpy_gbs = memcpy.and_then(|m| m.gbs());
        section.checks.extend(memcpy.map(|m| m.check.clone()));
        let passed = |k: &KernelRow| k.check.passed().then(|| k.rate.value());
        let none = vec![None; KERNELS.len()];
        let pitched_rates: Vec<Option<f64>> = pitched.as_ref().map_or(none, |p| p.iter().map(passed).collect());
        let rates = std::iter::once(memcpy_gbs).chain(kernels.iter().map(passed)).chain(pitched_rates);
        for (s, gbs) in series.iter_mut().zip(rates) {
            s.points.extend(gbs.map(|y| Point { x: i as f64, y, label: Some(label.clone()) }));
        }
        let layouts = std::iter::once((label.clone(), kernels))
            .chain(pitched.iter().map(|p| (Stored::pitched(dense.matrix).label(), p)));
        for (name, kernels) in layouts {
            let mut row = vec![name, memcpy_gbs.map_or("-".into(), |g| format!("{g:.0}"))];
            for kernel in kernels {
                let gbs = kernel.rate.value();
                let share = memcpy_gbs.map_or(String::new(), |m| format!(" ({:.0}%)", 100.0 * gbs / m));
                let wrong = if kernel.check.passed() { "" } else { " WRONG" };
                row.push(format!("{gbs:.0}{share}{wrong}"));
                section.checks.push(kernel.check.clone());
            }
            // The any-size kernels run on the dense layout only.
            row.resize(header.len(), "-".into());
            rows.push(row);
        }
    }
    for (dense, kernels, pitched) in &measured {
        let aligned = nearest_aligned(dense.matrix);
        let Some((_, base, _)) = measured.iter().find(|(s, ..)| s.matrix == aligned && aligned != dense.matrix) else {
            continue;
        };
        section.notes.push(against_aligned(dense, kernels, base));
        if let Some(p) = pitched {
            section.notes.push(against_aligned(&Stored::pitched(dense.matrix), p, base));
        }
    }
    section.sweep = Some((header, rows));
    section.series.extend(series);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::device::DeviceInfo;
    use crate::ptx::{self, count_ops, entry_body};
    use cust::memory::DevicePointer;
    use memlab_contracts::transpose::max_shift;
    use std::mem::ManuallyDrop;

    /// A buffer naming device address `addr`, never dereferenced nor freed (no driver involved).
    fn fake(addr: u64) -> ManuallyDrop<DeviceBuffer<f32>> {
        // SAFETY: only its address is read; ManuallyDrop keeps Drop from freeing it.
        ManuallyDrop::new(unsafe { DeviceBuffer::from_raw_parts(DevicePointer::from_raw(addr), 4) })
    }

    #[test]
    fn tall_and_thin_matrices_fit_the_device_grid_and_every_tile_is_covered() {
        let (input, mut output) = (fake(0x1000), fake(0x2000));
        let h200 = DeviceInfo::h200();
        let sizes = [(4_000_000, 2), (2_097_152, 32), (2_097_119, 32), (1, u32::MAX), (u32::MAX, 1), (65535, 65536)];
        for (rows, cols) in sizes {
            for (launch, _) in kernels_at((rows as usize, cols as usize), (rows as usize, cols as usize)) {
                let l = launch(&input, &mut output, rows, cols);
                l.shape.check(&h200).unwrap_or_else(|e| panic!("{} at {rows}x{cols}: {e}", l.kernel));
                assert_eq!(l.shape.grid.1, 1, "{}", l.kernel);
            }
            // The tile kernels' one-dimensional grid holds every tile, tile rows after tile rows.
            let blocks =
                launches::transpose_padded(shapes::transpose_padded(rows, cols), &input, &mut output, rows, cols)
                    .shape
                    .grid
                    .0;
            let (across, down) = (cols.div_ceil(TILE), (u64::from(rows) + u64::from(max_shift(rows))).div_ceil(32));
            assert_eq!(u64::from(blocks), u64::from(across) * down, "{rows}x{cols}");
        }
        // 4000000 x 2: 125000 rows of tiles, more than grid y's 65535, in one grid x of 125000.
        let l = launches::transpose_naive(shapes::transpose_naive(4_000_000, 2), &input, &mut output, 4_000_000, 2);
        assert_eq!(l.shape.grid, (125_000, 1));
        assert!(h200.max_grid.1 < 125_000);
        // Thin ones take the band: 1000000 / 1280 blocks of 256 threads at 3 rows.
        let l = launches::transpose_thin(shapes::transpose_thin(3, 1_000_000), &input, &mut output, 3, 1_000_000);
        assert_eq!((l.shape.grid, l.shape.block, l.shape.smem_bytes), ((782, 1), (256, 1), 16384));
        assert_eq!(launches::copy(shapes::copy(1_000_000, 3), &input, &mut output, 1_000_000, 3).shape.grid, (733, 1));
        assert_eq!(launches::copy(shapes::copy(17, 4096), &input, &mut output, 17, 4096).shape.grid, (128, 1));
        // Not thin: the thin kernel's grid is empty, which the launch refuses.
        let refusal = launches::transpose_thin(shapes::transpose_thin(17, 17), &input, &mut output, 17, 17)
            .shape
            .check(&h200)
            .unwrap_err();
        assert!(refusal.to_string().starts_with("empty launch"), "{refusal}");
    }

    #[test]
    fn the_thin_path_is_picked_by_shape() {
        let has_thin = |size, aligned| kernels_at(size, aligned).iter().any(|&(_, lesson)| lesson == THIN_KERNELS[0].1);
        for size in [(3, 1_000_000), (1_000_000, 3), (7, 2_000_000), (2_000_000, 7)] {
            assert!(has_thin(size, nearest_aligned(size)), "{size:?}");
        }
        // 17 is not thin, and at 15 its aligned neighbour 16 is: both must be thin.
        assert!(!has_thin((17, 100_000), nearest_aligned((17, 100_000))));
        assert!(has_thin((15, 100_000), nearest_aligned((15, 100_000))));
        assert!(!has_thin((8192, 8192), (8192, 8192)));
        let note = thin_cause((3, 1_000_000));
        assert!(note.starts_with("Thin matrix: a side of 3 (at most 16). A 32x32 tile holds 3 of its 32 rows or columns (9% of its threads"), "{note}");
        assert!(
            note.contains(
                "one band of 1280 long-side elements of all 3 short rows per block (3840 floats through a 16384-byte shared tile"
            ),
            "{note}"
        );
    }

    #[test]
    fn sizes_past_the_limit_once_padded_are_skipped_with_the_users_size() {
        let aligned = Stored::dense(nearest_aligned((65535, 65536)));
        let note = over_the_limit(&Stored { matrix: (65535, 65536), ..aligned }, "the aligned comparison").unwrap();
        assert_eq!(
            note,
            "65535x65536: the aligned comparison skipped: it needs 65536x65536 = 4294967296 elements, past the \
             kernels' 32-bit limit of 4294967295"
        );
        let pitched = Stored::pitched((65535, 65535));
        assert!(
            over_the_limit(&pitched, "the pitched layout")
                .unwrap()
                .starts_with("65535x65535: the pitched layout skipped")
        );
        assert_eq!(over_the_limit(&Stored::pitched((65528, 65535)), "the pitched layout"), None);
        assert_eq!(over_the_limit(&Stored::dense((65535, 65537)), "x"), None);
    }

    #[test]
    fn the_thin_kernel_moves_float4s_on_one_side_and_scalars_on_the_other() {
        for p in ptx::ALL {
            let body = entry_body(p.text, "transpose_thin").unwrap_or_else(|| panic!("{}: no transpose_thin", p.arch));
            // Wide: 4 float4 stores, tall: 4 float4 loads (and copy's run the same); the strided
            // side's 16 scalars each way; one barrier per path; nothing in local memory.
            assert_eq!(count_ops(body, "st.global.v4"), 4, "{}", p.arch);
            assert_eq!(count_ops(body, "ld.global.v4"), 4, "{}", p.arch);
            assert_eq!(count_ops(body, "ld.shared.v4"), 4, "{}", p.arch);
            assert_eq!(count_ops(body, "st.shared.v4"), 4, "{}", p.arch);
            assert!(count_ops(body, "ld.global") >= 4 + 16 && count_ops(body, "st.global") >= 4 + 16, "{}", p.arch);
            assert_eq!(count_ops(body, "bar.sync") + count_ops(body, "barrier.sync"), 2, "{}", p.arch);
            assert_eq!(count_ops(body, "ld.local") + count_ops(body, "st.local"), 0, "{}", p.arch);
            let copy = entry_body(p.text, "copy").unwrap();
            assert_eq!((count_ops(copy, "ld.global.v4"), count_ops(copy, "st.global.v4")), (4, 4), "{}", p.arch);
        }
    }

    #[test]
    fn each_rate_is_noted_next_to_its_aligned_rate() {
        let sections: Vec<Section> = super::super::recorded("sections");
        let base = &sections.iter().find(|s| s.name == "transpose").unwrap().kernels[..2];
        // The same kernels at 8191x8192 at 0.9 and 0.5 of the recorded rates.
        let mut slower = base.to_vec();
        for (k, f) in slower.iter_mut().zip([0.9, 0.5]) {
            k.timing.median_ms /= f;
            k.rate = crate::lab::Rate::Gbs(k.rate.value() * f);
        }
        let note = against_aligned(&Stored::dense((8191, 8192)), &slower, base);
        let (copy, naive) = (base[0].rate.value(), base[1].rate.value());
        let want = format!(
            "8191x8192 against the aligned {}: copy {:.0}/{copy:.0} GB/s 0.90x, naive {:.0}/{naive:.0} GB/s 0.50x",
            base[0].size,
            0.9 * copy,
            0.5 * naive
        );
        assert_eq!(note, want);
    }

    #[test]
    fn the_goal_note_names_the_any_size_kernel_for_each_that_misses() {
        let row = |kernel: &str, gbs: f64| {
            let sections: Vec<Section> = super::super::recorded("sections");
            let mut k = sections.iter().find(|s| s.name == "transpose").unwrap().kernels[0].clone();
            k.kernel = kernel.to_string();
            k.rate = crate::lab::Rate::Gbs(gbs);
            k
        };
        // H200 figures at 8191x8192 and 8192x8192, before the vectorized transpose's shifted path.
        let odd = [row("copy", 3959.0), row("transpose_vectorized", 1377.0), row("transpose_aligned_stores", 2882.0)];
        let base = [row("copy", 3980.0), row("transpose_vectorized", 3842.0), row("transpose_aligned_stores", 2900.0)];
        let note = odd_size_goal(&odd, &base);
        assert_eq!(
            note,
            "goal (each kernel >= 0.90x its aligned rate): met by copy, aligned_stores; missed by vectorized 0.36x \
             (transpose_aligned_stores here 2882 GB/s, 0.75x of vectorized's aligned 3842)"
        );
        // A copy that misses is its own any-size kernel; none missing says so.
        let note = odd_size_goal(&[row("copy", 2000.0)], &[row("copy", 4000.0)]);
        assert!(note.ends_with("met by none; missed by copy 0.50x"), "{note}");
        assert!(odd_size_goal(&base, &base).ends_with("missed by none"));
    }

    #[test]
    fn the_cause_note_gives_the_store_models_figures() {
        // Rows of 8191 floats: 7 rows in 8 start inside a sector (5 sectors per request, 2 of them
        // partial), and the last request of a row has 31 floats.
        let note = unaligned_cause((8192, 8191));
        assert!(note.contains("rows of 8191 floats (a copy's) 4.87 sectors/req, 1.75 partial"), "{note}");
        assert!(note.contains("of 8192 floats (the transposes') 4.00 sectors/req, 0.00 partial"), "{note}");
        // Shifted, a row of 8191 floats takes ceil((8191 + e) / 32) requests of whole sectors
        // but its first and last.
        assert!(
            note.contains(
                "sector where two rows meet: 3.99 sectors/req, 0.01 partial and 4.00 sectors/req, 0.00 partial. \
                 transpose_padded and transpose_vectorized take such a shifted path"
            ),
            "{note}"
        );
        let note = unaligned_cause((8191, 8192));
        assert!(note.contains("rows of 8192 floats (a copy's) 4.00 sectors/req, 0.00 partial"), "{note}");
        assert!(note.contains("of 8191 floats (the transposes') 4.87"), "{note}");
    }
}
