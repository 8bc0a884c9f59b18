//! TMA, the tensor memory accelerator (cc 9.0): copies and a transpose whose tiles move between
//! global and shared memory by `cp.async.bulk(.tensor)`, timed against the LSU `copy`,
//! `transpose_vectorized` and the memcpy ceiling; the bandwidth curve of 1-D bulk copies
//! against bytes per copy and blocks per SM; the tensor map's swizzle modes against the bank
//! model. Skipped, in one line, below cc 9.0.
//!
//! Tensor maps come from `cuTensorMapEncodeTiled` ([`crate::gpu::tensor_map`]), which needs
//! every row pitch a multiple of 16 bytes: the matrices are stored with their rows padded to
//! that ([`Stored::padded`]), so any `rows x cols` runs, and every check compares the matrix's
//! elements, the padding excluded. Under `--sanitizer` the sweeps shrink to each kernel's
//! distinct paths once ([`Plan`]).

use std::cell::RefCell;

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::tma::{
    BULK_BLOCKS_PER_SM, BULK_CHUNKS, BULK_DEFAULT, BULK_PER_BLOCK, BULK_PIPELINE_CHUNKS, Blocks, COPY_BLOCKS_PER_SM,
    COPY_BOXES, COPY_DEFAULT, COPY_THREADS, PER_BLOCK_ITEMS, PIPELINE_STAGES, Pipeline, TILE, TILE_BYTES,
    TRANSPOSE_BLOCK, TRANSPOSE_BLOCKS_PER_SM, TRANSPOSE_DEFAULT, box_cols, hint, smem_bytes, transpose_buffers,
};

use crate::charts::SweepChart;
use crate::gpu::Gpu;
use crate::gpu::kernel;
use crate::gpu::launch::{Launch, LaunchShape};
use crate::gpu::staging::Staging;
use crate::gpu::tensor_map::{Element, L2Promotion, MapSlot, Swizzle, TiledSpec};
use crate::gpu::timing::time;
use crate::lab::Inputs;
use crate::lab::{
    KernelRow, KernelRun, Lab, Section, Work, ensure_free, f32_bytes, measure, poison, poisoned, recheck_exact_staged,
};
use crate::lab::{Figure, Lesson, Needs, NoOptions, Run, Shared};
use crate::launches;
use crate::model::banks::WarpRequest;
use crate::phases::Kind;
use crate::probes::baselines::shapes as baselines;
use crate::series::{Series, names};
use crate::verify::{Check, Streamed};
use crate::{reference, refuse};

/// Seed of the copied and transposed matrix ([`reference::input_f32`]).
const SEED: u64 = 13;

/// The compute capability TMA needs (`cp.async.bulk.tensor`: `sm_90`, PTX ISA 8.0).
pub const NEEDS_CC: (u32, u32) = (9, 0);

/// What each output element must be.
#[derive(Clone, Copy)]
enum Want<'a> {
    /// The input itself (a copy's output), held on the host.
    Input(&'a [f32]),
    /// The transpose of the `rows x cols` input of seed `seed`, from the generator.
    Transposed { seed: u64, rows: usize, cols: usize },
}

/// A matrix as the lesson stores it: `rows x cols` f32, row-major, rows `pitch` elements apart
/// (`pitch >= cols`; the `pitch - cols` elements after each row are padding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stored {
    pub rows: usize,
    pub cols: usize,
    pub pitch: usize,
}

impl Stored {
    /// A `rows x cols` matrix with its rows padded to the smallest pitch a tensor map can
    /// describe ([`Element::padded_pitch`]: a multiple of 16 bytes, CUDA Driver API,
    /// `cuTensorMapEncodeTiled`).
    pub fn padded(rows: usize, cols: usize) -> Stored {
        Stored { rows, cols, pitch: Element::F32.padded_pitch(cols as u64) as usize }
    }

    /// Elements of its buffer, `rows x pitch` (saturating).
    pub fn elements(&self) -> usize {
        self.rows.saturating_mul(self.pitch)
    }

    /// `(rows, cols, pitch)`.
    fn dims(&self) -> (usize, usize, usize) {
        (self.rows, self.cols, self.pitch)
    }
}

/// The lesson's two layouts for a `rows x cols` input: the input (and every copy's output) and
/// the transposed `cols x rows` output, each with its rows padded ([`Stored::padded`]).
pub fn layouts(rows: usize, cols: usize) -> (Stored, Stored) {
    (Stored::padded(rows, cols), Stored::padded(cols, rows))
}

/// The note on the padded rows of `input` and of the transposed `output`; none when neither
/// needs padding.
pub fn padding_note(input: Stored, output: Stored) -> Option<String> {
    let rows = |s: Stored| format!("from {} to {} f32 ({} bytes)", s.cols, s.pitch, 4 * s.pitch);
    let out = |s: Stored| format!("the transposed {}x{} output's rows", s.rows, s.cols);
    let padded = match (input.pitch != input.cols, output.pitch != output.cols) {
        (false, false) => return None,
        (true, false) => format!("rows padded {}", rows(input)),
        (false, true) => format!("{} padded {}", out(output), rows(output)),
        (true, true) => format!("rows padded {}, {} {}", rows(input), out(output), rows(output)),
    };
    let (r, c, p) = input.dims();
    let moved = if input.pitch != input.cols {
        format!(
            ". The 1-D bulk copy moves whole 16-byte chunks, so it copies the padded {r}x{p} matrix, as the LSU copy does and the LSU transpose transposes it (their GB/s count those bytes); the tensor maps move the {r}x{c} elements"
        )
    } else {
        String::new()
    };
    Some(format!(
        "{padded} for the tensor map's 16-byte stride{moved}. Every check compares the {r}x{c} elements, the padding excluded"
    ))
}

/// What each output element must be, where the output holds it, and the first output that
/// passed its full check against it: every later dense output is only compared
/// ([`recheck_exact_staged`]), its check that one's when every element matches.
struct Expected<'a> {
    want: Want<'a>,
    stored: Stored,
    passed: RefCell<Option<Check>>,
}

impl<'a> Expected<'a> {
    fn new(want: Want<'a>, stored: Stored) -> Expected<'a> {
        Expected { want, stored, passed: RefCell::new(None) }
    }

    /// `output` checked exactly against this expectation through `staging`: the elements of its
    /// matrix, the padding after each row excluded, in the order of the unpadded matrix. Each
    /// kind of expectation is its own closure, so the per-element comparison inlines and the
    /// copies' can be vectorized (a `dyn Fn` call per element cannot).
    fn check(&self, gpu: &Gpu, staging: &mut Staging<f32>, output: &DeviceBuffer<f32>) -> Result<Check> {
        let passed = self.passed.borrow().clone();
        fn run(
            gpu: &Gpu,
            staging: &mut Staging<f32>,
            (output, stored): (&DeviceBuffer<f32>, Stored),
            passed: Option<Check>,
            want: impl Fn(usize) -> f32 + Sync,
        ) -> Result<Check> {
            match passed {
                Some(passed) if stored.pitch == stored.cols && stored.elements() == output.len() => {
                    recheck_exact_staged(gpu, staging, output, want, &passed)
                }
                _ => {
                    let mut check = Streamed::new();
                    staging.download_pitched(gpu, output, stored.dims(), |_, run| check.chunk_f32(run, &want))?;
                    Ok(check.finish())
                }
            }
        }
        let out = (output, self.stored);
        let check = match self.want {
            Want::Input(input) => run(gpu, staging, out, passed, |i| input[i])?,
            Want::Transposed { seed, rows, cols } => run(gpu, staging, out, passed, |i| {
                reference::input_f32(seed, reference::transposed_from(i, rows, cols))
            })?,
        };
        if check.passed() {
            self.passed.borrow_mut().get_or_insert_with(|| check.clone());
        }
        Ok(check)
    }
}

/// The shape of a pipelined kernel: `blocks` blocks of `block` threads with `buffers` buffers
/// of `buffer_bytes` each.
fn pipelined(blocks: u32, block: (u32, u32), buffer_bytes: u32, buffers: u32) -> LaunchShape {
    LaunchShape { grid: (blocks, 1), block, smem_bytes: smem_bytes(buffer_bytes, buffers) }
}

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `tma_bulk_copy`: `n` f32 from `src` to `dst` (16-byte aligned, `n` a multiple of 4) in
    /// 1-D bulk copies of `chunk` bytes (a multiple of 16) through `stages` shared buffers;
    /// `blocks` blocks of 32 threads (`memlab_contracts::tma::Blocks`: persistent, or one per so
    /// many chunks), `1024 + stages (chunk + 8)` B shared each; L2 `hint` of
    /// `memlab_contracts::tma::hint` on every copy.
    pub fn tma_bulk_copy(blocks: u32, chunk: u32, stages: u32) -> LaunchShape {
        pipelined(blocks, (COPY_THREADS, 1), chunk, stages)
    }

    /// `tma_copy`: a `rows x cols` f32 matrix through `box_rows x box_cols` tensor copies and
    /// `stages` shared buffers; the slots of maps (`Lab::place_map`) of the input and the output with that
    /// box, no swizzle; `blocks` blocks of 32 threads; L2 `hint`.
    pub fn tma_copy(blocks: u32, box_rows: u32, box_cols: u32, stages: u32) -> LaunchShape {
        pipelined(blocks, (COPY_THREADS, 1), box_rows * box_cols * 4, stages)
    }

    /// `tma_transpose`: `rows x cols` into `cols x rows`; `map_in` box `64 x box_cols(swizzle)`
    /// with that swizzle, `map_out` box `64 x 64`; `blocks` blocks of `32 x 16`,
    /// `stages` input tiles and 2 output tiles of 16 KiB in shared memory; L2 `hint`.
    pub fn tma_transpose(blocks: u32, stages: u32) -> LaunchShape {
        pipelined(blocks, TRANSPOSE_BLOCK, TILE_BYTES, transpose_buffers(stages))
    }
}

/// The tensor map of `matrix` at `address`, box `64 x box_cols`.
fn spec(address: u64, matrix: Stored, box_cols: u32, swizzle: Swizzle) -> TiledSpec {
    boxed(address, matrix, (TILE, box_cols), swizzle)
}

/// The tensor map of `matrix` at `address` (its rows `matrix.pitch` apart), box `rows x cols`
/// of `boxed`, no L2 promotion.
fn boxed(address: u64, matrix: Stored, (box_rows, box_cols): (u32, u32), swizzle: Swizzle) -> TiledSpec {
    TiledSpec {
        address,
        element: Element::F32,
        rows: matrix.rows as u64,
        cols: matrix.cols as u64,
        pitch: matrix.pitch as u64,
        box_rows,
        box_cols,
        swizzle,
        l2_promotion: L2Promotion::None,
    }
}

/// The slot of `spec` with the L2 promotion `l2`.
fn promoted(lab: &Lab, spec: TiledSpec, l2: L2Promotion) -> Result<MapSlot> {
    lab.place_map(&TiledSpec { l2_promotion: l2, ..spec })
}

/// Refuses, in one line before any work, a `rows x cols` matrix whose padded input or
/// transposed output ([`layouts`]) holds more than `u32::MAX` elements: the kernels count
/// elements in 32 bits. Every other shape runs: the padded pitches are ones a tensor map
/// describes, and a padded buffer is a whole number of the 1-D bulk copy's 16-byte granules.
///
/// # Errors
/// The refusal.
pub fn check_matrix(rows: usize, cols: usize) -> Result<()> {
    let (input, output) = layouts(rows, cols);
    for (what, m) in [("input", input), ("transposed output", output)] {
        if m.elements() > u32::MAX as usize {
            let padded = if m.pitch == m.cols {
                String::new()
            } else {
                format!(", its rows padded to {} f32 (16-byte strides),", m.pitch)
            };
            refuse!(
                "the TMA demo: the {what} {}x{}{padded} holds {} elements; the kernels count elements in 32 bits (at most {})",
                m.rows,
                m.cols,
                m.elements(),
                u32::MAX
            );
        }
    }
    Ok(())
}

/// The line of a GPU below cc 9.0 (the lesson is skipped, not an error).
pub fn skip_line(cc: (u32, u32)) -> String {
    format!(
        "skipped: TMA (cp.async.bulk.tensor, mbarrier transaction counts) needs cc {}.{} or newer, this GPU is cc {}.{}",
        NEEDS_CC.0, NEEDS_CC.1, cc.0, cc.1
    )
}

/// Bank wavefronts of one warp's float4 column read of the transpose's input tile under swizzle
/// `mode`: `(unswizzled, swizzled, ideal)`, from the bank model.
pub fn column_read_wavefronts(mode: u32) -> (u32, u32, u32) {
    let w = box_cols(mode);
    let plain = WarpRequest::tma_tile_column(mode, w, false).analyze();
    let swizzled = WarpRequest::tma_tile_column(mode, w, true).analyze();
    (plain.wavefronts, swizzled.wavefronts, swizzled.ideal_wavefronts)
}

/// Name of the bulk-copy curve's series for `k` blocks per SM.
pub fn curve_series_name(k: u32) -> String {
    format!("{k} block{} per SM", if k == 1 { "" } else { "s" })
}

/// The lesson: the Tensor Memory Accelerator, at the transposes' matrix.
pub struct Tma;

impl Lesson for Tma {
    const NAME: &'static str = "tma";
    const NEEDS: Needs = Needs { memcpy: true, ..Needs::TWINS };
    const HOST_FLAGS: &'static [&'static str] = &["--transpose", "--sgemm"];
    type Options = NoOptions;

    fn run(lab: &Lab, inputs: &Inputs, _: &NoOptions) -> Result<Section> {
        run(lab, inputs)
    }

    /// The input (the copies' expected output), the staging of every checked output, and SGEMM
    /// rungs 6 and 7's operands (at the first SGEMM size) beside it.
    fn host_bytes(_: &NoOptions, shared: &Shared) -> usize {
        crate::lab::f32_bytes(&[shared.matrix.0 * shared.matrix.1])
            + crate::lab::staging_bytes(shared.matrix)
            + shared.gemm.map_or(0, crate::probes::gemm::host_bytes)
    }

    /// Asked for by name, a matrix the lesson cannot describe is refused before the driver is
    /// asked anything; among all the lessons, it is skipped with a note instead.
    fn check(_: &NoOptions, shared: &Shared, named: bool) -> Result<()> {
        match named {
            true => check_matrix(shared.matrix.0, shared.matrix.1),
            false => Ok(()),
        }
    }

    fn figures(run: &Run) -> Vec<Figure> {
        let s = run.sections;
        vec![
            Figure::or_missing(
                SweepChart::tma_curve(s),
                "1-D TMA bulk copies (`tma_bulk_copy`, a 256 MiB copy through shared memory): GB/s against bytes per copy, one line per blocks per SM (log scale). Bytes in flight per SM = bytes per copy x blocks per SM; published for H800/H100: 95-96% of HBM peak only from 8-12 KiB per copy and 2-3 blocks per SM.",
                "TMA bulk-copy curve (run the `tma` demo on cc 9.0)",
            ),
            Figure::or_missing(
                SweepChart::tma_pipeline(s),
                "The pipelined TMA kernels (`tma_bulk_copy`, `tma_copy`, `tma_transpose`; a ring of shared buffers with an mbarrier each, in persistent blocks or one block per few tiles): the fastest checked GB/s at each stage count, over the swept boxes and grids. One stage loads, waits and stores one box at a time; more stages keep the next boxes' loads in flight while one is stored.",
                "TMA pipeline chart (run the `tma` demo on cc 9.0)",
            ),
            Figure::or_missing(
                SweepChart::tma_swizzle(s),
                "`tma_transpose` per swizzle mode of its input tensor map: time relative to the fastest mode, against the bank model's conflict factor of the tile's float4 column read with the map's swizzle and with the same box unswizzled.",
                "TMA swizzle chart (run the `tma` demo on cc 9.0)",
            ),
        ]
    }
}

/// Runs the lesson on the transposes' matrix, stored with padded rows ([`layouts`]); skipped in
/// one line below cc 9.0 and for a matrix [`check_matrix`] refuses (`run-demos --only tma`
/// refuses it before any work).
fn run(lab: &Lab, inputs: &Inputs) -> Result<Section> {
    let info = &lab.gpu.info;
    if info.cc < NEEDS_CC {
        return Ok(section(vec![], None, vec![], vec![skip_line(info.cc)], vec![]));
    }
    let (rows, cols) = inputs.shared.matrix;
    if let Err(why) = check_matrix(rows, cols) {
        return Ok(section(vec![], None, vec![], vec![format!("skipped: {why}")], vec![]));
    }
    let (stored_in, stored_out) = layouts(rows, cols);
    // One output buffer for every kernel: the copies' padded matrix, the TMA transposes' padded
    // transpose, and the LSU transpose's transpose of the padded input (`pitch x rows`, dense).
    let (n_in, n_out) = (stored_in.elements(), stored_in.elements().max(stored_out.elements()));
    ensure_free("the TMA demo", f32_bytes(&[n_in, n_out]))?;
    // One host copy of the input (the demo's host memory: it and the staging): the
    // copies' checks, most of the sweeps' points, read it in order, 3-5x faster than the
    // generator (0.5-1.1 against 2.7-3.0 ns per element, measured on one x86-64 core). The transposes'
    // checks use the generator at the source index: a gather down the input's columns would
    // miss the cache.
    let input_host = lab.phases.time(Kind::Inputs, || reference::random_f32(rows * cols, SEED));
    let staging = RefCell::new(Staging::<f32>::new(n_out)?);
    let input = poisoned::<f32>(n_in)?;
    let pitched = (cols, stored_in.pitch);
    staging.borrow_mut().upload_pitched(&lab.gpu, &input, pitched, 0.0, |i| input_host[i])?;
    let mut output = poisoned::<f32>(n_out)?;
    let lesson = LessonRun::new(lab, (rows, cols), &input_host, &input, output.as_device_ptr().as_raw(), &staging)?;
    let mut sweeps = Sweeps { staging: &staging, checks: Vec::new(), left_out: Vec::new() };
    let swept = lab.phases.step("pipeline sweeps", || lesson.pipeline_sweeps(&mut sweeps, &mut output))?;
    let best = swept.fastest();
    let l2 = lab.phases.step("L2 promotion", || lesson.promotions(&mut sweeps, &mut output, best))?;
    let (mut kernels, swizzles) = lesson.kernel_rows(&mut output, best, &l2)?;
    drop(output);
    kernels.extend(lab.phases.step("SGEMM rungs 6 and 7", || async_rungs(lab, inputs.shared.gemm))?);
    let mut output = poisoned::<f32>(n_out)?;
    let curve =
        lab.phases.step("bulk-copy curve", || lesson.sweep_bulk(&mut sweeps, &mut output, &lesson.plan.curve))?;
    let series = series(&curve, &swizzles, &swept);
    let mut notes = lesson.notes(&kernels, inputs.memcpy_gbs(), &swept, &l2);
    notes.push(curve_note(&curve));
    notes.extend(sweeps.left_out_note());
    Ok(section(kernels, Some(swizzle_table(&swizzles)), sweeps.checks, notes, series))
}

/// The lesson's section: its kernel rows, the swizzle table, the sweeps' checks, notes and
/// chart series.
fn section(
    kernels: Vec<KernelRow>,
    sweep: Option<(Vec<String>, Vec<Vec<String>>)>,
    checks: Vec<Check>,
    notes: Vec<String>,
    series: Vec<Series>,
) -> Section {
    Section {
        name: "tma".into(),
        title: "TMA: tiles moved by the tensor memory accelerator".into(),
        lesson: "One thread starts a bulk copy that a copy engine carries out, global to shared and back, without registers; an mbarrier counts the bytes in. It reaches HBM speed only with enough bytes in flight per SM, and its swizzle lays a tile out so that column reads avoid bank conflicts.".into(),
        kernels,
        sweep,
        checks,
        notes,
        series,
    }
}

/// A kernel's tensor maps: its input's and its output's.
type Maps = (MapSlot, MapSlot);

/// A kernel row to measure: its launch, its path into shared memory, its one-line lesson.
type Row = (Launch, Path, &'static str);

/// What the lesson's steps share: the matrix's layouts and buffers, the sweeps' tensor maps,
/// the plan, and what each output must be. It borrows the buffers [`run`] allocates.
struct LessonRun<'a> {
    lab: &'a Lab,
    stored_in: Stored,
    stored_out: Stored,
    input: &'a DeviceBuffer<f32>,
    /// Pinned chunks every row's output is checked through.
    staging: &'a RefCell<Staging<f32>>,
    copied: Expected<'a>,
    transposed: Expected<'a>,
    lsu_transposed: Expected<'a>,
    /// Device addresses of the input and of the output.
    addrs: (u64, u64),
    /// Rows, columns and the input's pitch, as the kernels take them.
    r: u32,
    c: u32,
    pitch: u32,
    /// Bytes one launch reads and writes: the matrix's, and its padded rows'.
    bytes: f64,
    padded_bytes: f64,
    /// The rows' size label, `rows x cols`.
    size: String,
    sms: u32,
    plan: Plan,
    /// The `tma_copy` sweep's maps of each box it uses.
    copy_maps: Vec<((u32, u32), Maps)>,
    /// `tma_transpose`'s map specs (input 128-byte swizzled, output), and the sweep's slots.
    t_specs: (TiledSpec, TiledSpec),
    t_maps: Maps,
}

/// The two tensor maps of a copy of the matrix `stored` between `addrs` (input, output), box
/// `b`, no swizzle.
fn copy_specs(stored: Stored, (in_addr, out_addr): (u64, u64), b: (u32, u32)) -> (TiledSpec, TiledSpec) {
    (boxed(in_addr, stored, b, Swizzle::None), boxed(out_addr, stored, b, Swizzle::None))
}

/// Places the maps ([`copy_specs`]) of each box of [`COPY_BOXES`] that `plan`'s `tma_copy`
/// sweep uses, input then output.
fn place_copy_maps(lab: &Lab, plan: &Plan, stored: Stored, addrs: (u64, u64)) -> Result<Vec<((u32, u32), Maps)>> {
    COPY_BOXES
        .iter()
        .filter(|&&(box_rows, box_cols)| plan.copy.iter().any(|p| (p.box_rows, p.box_cols) == (box_rows, box_cols)))
        .map(|&b| {
            let (map_in, map_out) = copy_specs(stored, addrs, b);
            Ok((b, (lab.place_map(&map_in)?, lab.place_map(&map_out)?)))
        })
        .collect()
}

/// The three pipelined kernels' sweeps.
struct SweptKernels {
    bulk: Swept,
    copy: Swept,
    transpose: Swept,
}

/// Each pipelined kernel's configuration for the rows.
#[derive(Clone, Copy)]
struct Fastest {
    bulk: Pipeline,
    copy: Pipeline,
    transpose: Pipeline,
}

impl SweptKernels {
    /// Each kernel's fastest checked configuration, hinted or not, or its default.
    fn fastest(&self) -> Fastest {
        Fastest {
            bulk: self.bulk.fastest(BULK_DEFAULT),
            copy: self.copy.fastest(COPY_DEFAULT),
            transpose: self.transpose.fastest(TRANSPOSE_DEFAULT),
        }
    }

    /// Each sweep, by its kernel's name.
    fn by_kernel(&self) -> [(&'static str, &Swept); 3] {
        [("tma_bulk_copy", &self.bulk), ("tma_copy", &self.copy), ("tma_transpose", &self.transpose)]
    }

    /// The sweeps' own points for their charts and notes: the hinted re-runs of the fastest
    /// points have a note of their own.
    fn plain(&self) -> [(&'static str, &[Point]); 3] {
        self.by_kernel().map(|(kernel, swept)| (kernel, swept.plain.as_slice()))
    }
}

/// The L2 promotions tried at each map kernel's fastest configuration: a point per setting.
struct Promotions {
    copy: Vec<(L2Promotion, Point)>,
    transpose: Vec<(L2Promotion, Point)>,
}

/// One swizzle mode's row of the table: the bank model's wavefronts of the column read, and
/// `tma_transpose`'s median ms, GB/s and check.
struct SwizzleRow {
    swizzle: Swizzle,
    plain: u32,
    swizzled: u32,
    ideal: u32,
    ms: f64,
    gbs: f64,
    check: String,
}

impl<'a> LessonRun<'a> {
    /// The lesson on a `rows x cols` matrix: `input` holds `input_host` in padded rows, the
    /// output is at `out_addr`; places the sweeps' maps, the copy's then the transpose's.
    fn new(
        lab: &'a Lab,
        (rows, cols): (usize, usize),
        input_host: &'a [f32],
        input: &'a DeviceBuffer<f32>,
        out_addr: u64,
        staging: &'a RefCell<Staging<f32>>,
    ) -> Result<LessonRun<'a>> {
        let (stored_in, stored_out) = layouts(rows, cols);
        let in_addr = input.as_device_ptr().as_raw();
        let plan = Plan::new(crate::lab::sanitizer::on(lab));
        let copy_maps = place_copy_maps(lab, &plan, stored_in, (in_addr, out_addr))?;
        let t_specs = (
            spec(in_addr, stored_in, box_cols(Swizzle::B128.mode()), Swizzle::B128),
            spec(out_addr, stored_out, TILE, Swizzle::None),
        );
        let t_maps = (lab.place_map(&t_specs.0)?, lab.place_map(&t_specs.1)?);
        let want_transposed = Want::Transposed { seed: SEED, rows, cols };
        Ok(LessonRun {
            lab,
            stored_in,
            stored_out,
            input,
            staging,
            copied: Expected::new(Want::Input(input_host), stored_in),
            transposed: Expected::new(want_transposed, stored_out),
            // The LSU transpose of the padded `rows x pitch` input: its first `cols` rows, `rows`
            // apart.
            lsu_transposed: Expected::new(want_transposed, Stored { rows: cols, cols: rows, pitch: rows }),
            addrs: (in_addr, out_addr),
            r: rows as u32,
            c: cols as u32,
            pitch: stored_in.pitch as u32,
            // Bytes read and written: the tensor maps move the matrix, the 1-D and LSU kernels its
            // padded rows.
            bytes: 2.0 * 4.0 * (rows * cols) as f64,
            padded_bytes: 2.0 * 4.0 * stored_in.elements() as f64,
            size: format!("{rows}x{cols}"),
            sms: crate::lab::sanitizer::sms(lab),
            plan,
            copy_maps,
            t_specs,
            t_maps,
        })
    }

    /// `tma_bulk_copy` of the padded input into `out` at `p`.
    fn bulk(&self, p: &Pipeline, out: &mut DeviceBuffer<f32>) -> Launch {
        let n = self.stored_in.elements() as u32;
        let shape = shapes::tma_bulk_copy(p.grid(self.sms, 1, n), p.box_bytes(), p.stages);
        launches::tma_bulk_copy(shape, self.input, out, n, p.box_bytes(), p.stages, p.hint)
    }

    /// `tma_copy` of the matrix at `p` through `maps`.
    fn copy(&self, p: &Pipeline, (map_in, map_out): Maps) -> Launch {
        let (r, c) = (self.r, self.c);
        let shape = shapes::tma_copy(p.grid(self.sms, r, c), p.box_rows, p.box_cols, p.stages);
        launches::tma_copy(shape, map_in, map_out, r, c, p.box_rows, p.box_cols, p.stages, p.hint)
    }

    /// `tma_transpose` of the matrix at `p` through `maps`, the input's swizzled by `mode`.
    fn transpose(&self, p: &Pipeline, (map_in, map_out): Maps, mode: u32) -> Launch {
        let (r, c) = (self.r, self.c);
        let shape = shapes::tma_transpose(p.grid(self.sms, r, c), p.stages);
        launches::tma_transpose(shape, map_in, map_out, r, c, mode, p.stages, p.hint)
    }

    /// The `tma_copy` sweep's maps of `p`'s box.
    fn swept_copy_maps(&self, p: &Pipeline) -> Maps {
        self.copy_maps.iter().find(|m| m.0 == (p.box_rows, p.box_cols)).expect("a swept box").1
    }

    /// `tma_bulk_copy` checked and timed at `configs` ([`Sweeps::run`]).
    fn sweep_bulk(
        &self,
        sweeps: &mut Sweeps,
        output: &mut DeviceBuffer<f32>,
        configs: &[Pipeline],
    ) -> Result<Vec<Point>> {
        let launch = |p: &Pipeline, out: &mut DeviceBuffer<f32>| self.bulk(p, out);
        sweeps.run(self.lab, "tma_bulk_copy", output, &self.copied, self.padded_bytes, configs, launch)
    }

    /// `tma_copy` checked and timed at `configs`, each through the maps `maps` gives it.
    fn sweep_copy(
        &self,
        sweeps: &mut Sweeps,
        output: &mut DeviceBuffer<f32>,
        configs: &[Pipeline],
        maps: impl Fn(&Pipeline) -> Maps,
    ) -> Result<Vec<Point>> {
        let launch = |p: &Pipeline, _: &mut DeviceBuffer<f32>| self.copy(p, maps(p));
        sweeps.run(self.lab, "tma_copy", output, &self.copied, self.bytes, configs, launch)
    }

    /// `tma_transpose` (128-byte swizzle) checked and timed at `configs` through `maps`.
    fn sweep_transpose(
        &self,
        sweeps: &mut Sweeps,
        output: &mut DeviceBuffer<f32>,
        configs: &[Pipeline],
        maps: Maps,
    ) -> Result<Vec<Point>> {
        let launch = |p: &Pipeline, _: &mut DeviceBuffer<f32>| self.transpose(p, maps, Swizzle::B128.mode());
        sweeps.run(self.lab, "tma_transpose", output, &self.transposed, self.bytes, configs, launch)
    }

    /// The pipeline sweeps: every configuration checked exactly, then timed; the kernel rows
    /// run each kernel's fastest.
    fn pipeline_sweeps(&self, sweeps: &mut Sweeps, output: &mut DeviceBuffer<f32>) -> Result<SweptKernels> {
        let (plan, swept_maps) = (&self.plan, |p: &Pipeline| self.swept_copy_maps(p));
        let mut bulk = Swept::of(self.sweep_bulk(sweeps, output, &plan.bulk)?);
        let mut copy = Swept::of(self.sweep_copy(sweeps, output, &plan.copy, swept_maps)?);
        let mut transpose = Swept::of(self.sweep_transpose(sweeps, output, &plan.transpose, self.t_maps)?);
        // The L2 hint at each kernel's fastest points only (the demo's time): the rows run the
        // fastest point of all, hinted or not.
        bulk.hinted = self.sweep_bulk(sweeps, output, &hinted_configs(&bulk.plain, plan.hinted))?;
        copy.hinted = self.sweep_copy(sweeps, output, &hinted_configs(&copy.plain, plan.hinted), swept_maps)?;
        let hinted = hinted_configs(&transpose.plain, plan.hinted);
        transpose.hinted = self.sweep_transpose(sweeps, output, &hinted, self.t_maps)?;
        Ok(SweptKernels { bulk, copy, transpose })
    }

    /// The slots of `specs` (input, then output) with the L2 promotion `l2`.
    fn promoted_maps(&self, (map_in, map_out): (TiledSpec, TiledSpec), l2: L2Promotion) -> Result<Maps> {
        Ok((promoted(self.lab, map_in, l2)?, promoted(self.lab, map_out, l2)?))
    }

    /// The tensor maps' L2 promotion at each kernel's fastest configuration (`best`), every
    /// setting checked, then timed; the rows use the fastest (maps of both matrices promoted
    /// alike).
    fn promotions(&self, sweeps: &mut Sweeps, output: &mut DeviceBuffer<f32>, best: Fastest) -> Result<Promotions> {
        let copy_specs = copy_specs(self.stored_in, self.addrs, (best.copy.box_rows, best.copy.box_cols));
        let mut l2s = Promotions { copy: Vec::new(), transpose: Vec::new() };
        for &l2 in &self.plan.promotions {
            let maps = self.promoted_maps(copy_specs, l2)?;
            let points = self.sweep_copy(sweeps, output, &[best.copy], |_| maps)?;
            l2s.copy.extend(points.into_iter().map(|p| (l2, p)));
            let maps = self.promoted_maps(self.t_specs, l2)?;
            let points = self.sweep_transpose(sweeps, output, &[best.transpose], maps)?;
            l2s.transpose.extend(points.into_iter().map(|p| (l2, p)));
        }
        Ok(l2s)
    }

    /// The kernel rows, each pipelined kernel at its fastest configuration (`best`) and L2
    /// promotion (of `l2`); and the swizzle table's rows.
    fn kernel_rows(
        &self,
        output: &mut DeviceBuffer<f32>,
        best: Fastest,
        l2: &Promotions,
    ) -> Result<(Vec<KernelRow>, Vec<SwizzleRow>)> {
        let (copy_l2, transpose_l2) = (fastest_promotion(&l2.copy), fastest_promotion(&l2.transpose));
        let copy_specs = copy_specs(self.stored_in, self.addrs, (best.copy.box_rows, best.copy.box_cols));
        let copy_maps = self.promoted_maps(copy_specs, copy_l2)?;
        let map_out_t = promoted(self.lab, self.t_specs.1, transpose_l2)?;
        let mut kernels = self.copy_rows(output, best, copy_maps, copy_l2)?;
        let (transposes, swizzles) = self.swizzle_rows(output, best.transpose, map_out_t, transpose_l2)?;
        kernels.extend(transposes);
        Ok((kernels, swizzles))
    }

    /// The rows of the LSU copy, the 1-D bulk and the tensor copy at their fastest
    /// configurations (`best`; the tensor copy through `maps`, promoted by `l2`), then the LSU
    /// transpose.
    fn copy_rows(
        &self,
        output: &mut DeviceBuffer<f32>,
        best: Fastest,
        maps: Maps,
        l2: L2Promotion,
    ) -> Result<Vec<KernelRow>> {
        let (r, pitch) = (self.r, self.pitch);
        // Launches hold device addresses, not borrows: built before `reset` borrows the output.
        let copies: [Row; 3] = [
            (
                launches::copy(baselines::copy(r, pitch), self.input, output, r, pitch),
                Path::Lsu(4 * 4),
                "LSU copy: 4 floats per thread through registers",
            ),
            (
                self.bulk(&best.bulk, output),
                Path::Ring(best.bulk),
                "1-D cp.async.bulk through shared buffers (the sweep's fastest configuration)",
            ),
            (
                self.copy(&best.copy, maps),
                Path::Ring(best.copy),
                "2-D tensor copies through shared buffers (the sweep's fastest configuration)",
            ),
        ];
        let shape = baselines::transpose_vectorized(r, pitch);
        let lsu_transpose = launches::transpose_vectorized(shape, self.input, output, r, pitch);
        let mut kernels = Vec::new();
        for row in copies {
            let extra = match row.1 {
                Path::Ring(p) if p.box_rows > 1 => format!("; L2 promotion {}", l2.name()),
                _ => String::new(),
            };
            kernels.push(self.timed(output, row, &extra, self.size.clone(), &self.copied)?);
        }
        let row = (lsu_transpose, Path::Lsu(16 * 4), "LSU transpose: 64x65 tile, 128-bit loads and stores");
        kernels.push(self.timed(output, row, "; shared column read 2-way", self.size.clone(), &self.lsu_transposed)?);
        Ok(kernels)
    }

    /// `tma_transpose`'s rows at `best` under every swizzle mode, the input's map promoted by
    /// `l2` beside the output's `map_out`; each with the bank model's column reads.
    fn swizzle_rows(
        &self,
        output: &DeviceBuffer<f32>,
        best: Pipeline,
        map_out: MapSlot,
        l2: L2Promotion,
    ) -> Result<(Vec<KernelRow>, Vec<SwizzleRow>)> {
        let (mut kernels, mut rows) = (Vec::new(), Vec::new());
        for swizzle in Swizzle::ALL {
            let mode = swizzle.mode();
            let map = promoted(self.lab, spec(self.addrs.0, self.stored_in, box_cols(mode), swizzle), l2)?;
            let (plain, swizzled, ideal) = column_read_wavefronts(mode);
            let row = (
                self.transpose(&best, (map, map_out), mode),
                Path::Ring(best),
                "tensor-copy transpose: tiles in and out by TMA, transposed in shared memory (the sweep's fastest configuration)",
            );
            let extra = format!("; float4 column read {}-way; L2 promotion {}", swizzled / ideal, l2.name());
            let size = format!("{} swizzle {}", self.size, swizzle.name());
            let row = self.timed(output, row, &extra, size, &self.transposed)?;
            let (ms, gbs, check) = (row.timing.median_ms, row.rate.value(), row.check.summary("exact"));
            rows.push(SwizzleRow { swizzle, plain, swizzled, ideal, ms, gbs, check });
            kernels.push(row);
        }
        Ok((kernels, rows))
    }

    /// `row` measured, its output checked exactly against `want`; its prediction the bytes in
    /// flight of its path, then `extra`.
    fn timed(
        &self,
        output: &DeviceBuffer<f32>,
        (launch, path, lesson): Row,
        extra: &str,
        size: String,
        want: &Expected,
    ) -> Result<KernelRow> {
        // The LSU kernels and the 1-D bulk copy (boxes of one row) move the padded rows; the
        // tensor maps the matrix.
        let moved = match path {
            Path::Lsu(_) => self.padded_bytes,
            Path::Ring(p) if p.box_rows == 1 => self.padded_bytes,
            _ => self.bytes,
        };
        let work = Work::global_bytes(moved);
        let run = KernelRun { launch, lesson, prediction: String::new(), work, size, reset: &|| poison(output) };
        let check = || want.check(&self.lab.gpu, &mut self.staging.borrow_mut(), output);
        let row = measure(self.lab, run, || Ok((check()?, "exact")))?;
        Ok(KernelRow { prediction: path.in_flight(&row) + extra, ..row })
    }

    /// The notes up to the curve's: the padding, the goals, each sweep, bytes in flight, the L2
    /// hint and the L2 promotions.
    fn notes(&self, kernels: &[KernelRow], memcpy: Option<f64>, swept: &SweptKernels, l2: &Promotions) -> Vec<String> {
        let mut notes: Vec<String> = padding_note(self.stored_in, self.stored_out).into_iter().collect();
        notes.extend(goal_notes(kernels, memcpy));
        for (kernel, points) in swept.plain() {
            notes.extend(sweep_note(kernel, points, memcpy));
        }
        let lsu_copy = &kernels[0];
        let lsu_kib = f64::from(16 * lsu_copy.shape.threads_per_block() * lsu_copy.occupancy.active_blocks) / 1024.0;
        notes.extend(in_flight_note((lsu_kib, lsu_copy.rate.value()), &swept.copy.plain, memcpy));
        notes.push(HINT_NOTE.into());
        for (kernel, swept) in swept.by_kernel() {
            notes.extend(hint_note(kernel, swept));
        }
        notes.push(promotion_note("tma_copy", &l2.copy));
        notes.push(promotion_note("tma_transpose", &l2.transpose));
        notes
    }
}

/// The charts' series: the bulk-copy curve (one per blocks per SM), the swizzle modes
/// ([`swizzle_series`]), then each sweep's own points ([`pipeline_series`]).
fn series(curve: &[Point], swizzles: &[SwizzleRow], swept: &SweptKernels) -> Vec<Series> {
    let mut series: Vec<Series> = BULK_BLOCKS_PER_SM
        .iter()
        .map(|&k| {
            let points = curve
                .iter()
                .filter(|p| p.config.blocks == Blocks::PerSm(k))
                .map(|p| (p.config.box_bytes() as f64, p.gbs, format!("{} KiB", p.config.box_bytes() / 1024)));
            Series::labelled(&curve_series_name(k), "bytes per copy", "GB/s (read + written)", points)
        })
        .collect();
    series.extend(swizzle_series(swizzles));
    for (kernel, points) in swept.plain() {
        series.extend(pipeline_series(kernel, points));
    }
    series
}

/// The swizzle chart: `tma_transpose`'s time per mode against the fastest mode's, and the bank
/// model's column-read wavefronts per ideal with the map's swizzle and without.
fn swizzle_series(rows: &[SwizzleRow]) -> [Series; 3] {
    let fastest = rows.iter().map(|r| r.ms).fold(f64::INFINITY, f64::min);
    let by_mode = |name: &str, y: &str, value: &dyn Fn(&SwizzleRow) -> f64| {
        let points = rows.iter().map(|r| (r.swizzle.mode() as f64, value(r), r.swizzle.name()));
        Series::labelled(name, "swizzle mode", y, points)
    };
    [
        by_mode(names::MEASURED, "tma_transpose time / fastest mode", &|r| r.ms / fastest),
        by_mode(names::BANK_MODEL, "column read: wavefronts / ideal", &|r| (r.swizzled / r.ideal) as f64),
        by_mode(names::UNSWIZZLED_MODEL, "column read: wavefronts / ideal", &|r| (r.plain / r.ideal) as f64),
    ]
}

/// The swizzle table: header and a row per mode.
fn swizzle_table(rows: &[SwizzleRow]) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "swizzle",
        "box (rows x f32)",
        "column read unswizzled",
        "with the map's swizzle",
        "tma_transpose ms",
        "GB/s",
        "check",
    ];
    let cells = rows
        .iter()
        .map(|r| {
            vec![
                r.swizzle.name(),
                format!("64 x {}", box_cols(r.swizzle.mode())),
                format!("{}-way ({} wavefronts)", r.plain / r.ideal, r.plain),
                format!("{}-way ({} wavefronts)", r.swizzled / r.ideal, r.swizzled),
                format!("{:.3}", r.ms),
                format!("{:.0}", r.gbs),
                r.check.clone(),
            ]
        })
        .collect();
    (header.iter().map(|s| s.to_string()).collect(), cells)
}

/// How a kernel gets its data into shared memory (or registers), and the bytes one block keeps
/// in flight there: the table's "bytes in flight per SM" is that times the blocks per SM.
#[derive(Debug, Clone, Copy)]
enum Path {
    /// Plain loads through registers, this many bytes per thread.
    Lsu(u32),
    /// `cp.async` and plain loads, this many bytes per block per stage.
    CpAsync(u32),
    /// Plain loads into shared memory through registers, bytes per block per stage.
    SharedLoads(u32),
    /// TMA copies through shared buffers: the configuration.
    Ring(Pipeline),
}

impl Path {
    /// The table's cell: path, bytes per block, bytes in flight per SM at the row's blocks/SM.
    fn in_flight(self, row: &KernelRow) -> String {
        let driver = row.occupancy.active_blocks;
        let threads = row.shape.threads_per_block();
        let (what, per_block, blocks) = match self {
            Path::Lsu(per_thread) => ("plain loads to registers".to_string(), per_thread * threads, driver),
            Path::SharedLoads(b) => ("plain loads to shared".into(), b, driver),
            Path::CpAsync(b) => ("cp.async (B) + plain loads (A) to shared".into(), b, driver),
            Path::Ring(p) => (format!("TMA, {}", config_label(&p)), p.stages * p.box_bytes(), resident(&p, driver)),
        };
        format!(
            "{what}: {} KiB per block, {} KiB in flight per SM",
            per_block as f64 / 1024.0,
            (per_block * blocks) as f64 / 1024.0
        )
    }
}

/// A configuration in a few words: `4 x 32x256 box, 2 blocks/SM`, `4 x 2 KiB, a block per 4
/// chunks`.
pub(crate) fn config_label(p: &Pipeline) -> String {
    let (what, unit) = if p.box_rows == 1 {
        (format!("{} KiB", p.box_bytes() / 1024), "chunk")
    } else {
        (format!("{}x{} box", p.box_rows, p.box_cols), "box")
    };
    let blocks = match p.blocks {
        Blocks::PerSm(1) => "1 block/SM".to_string(),
        Blocks::PerSm(k) => format!("{k} blocks/SM"),
        Blocks::PerItems(1) => format!("a block per {unit}"),
        Blocks::PerItems(n) => format!("a block per {n} {unit}{}", if unit == "box" { "es" } else { "s" }),
    };
    let hinted = if p.hint == hint::EVICT_FIRST { ", evict_first" } else { "" };
    format!("{} x {what}, {blocks}{hinted}", p.stages)
}

/// Blocks of `p` resident per SM: its persistent count, or, one block per so many items, what
/// the driver's occupancy (`driver`) holds.
fn resident(p: &Pipeline, driver: u32) -> u32 {
    match p.blocks {
        Blocks::PerSm(k) => k,
        Blocks::PerItems(_) => driver,
    }
}

/// KiB in flight per SM of a measured configuration, at most: every buffer of every resident
/// block.
fn in_flight_kib(p: &Point) -> f64 {
    (p.config.stages * p.config.box_bytes() * p.resident) as f64 / 1024.0
}

/// The `tma_bulk_copy` sweep: persistent, chunks x stages x blocks per SM; then one block per
/// so many chunks ([`BULK_PER_BLOCK`]).
pub fn bulk_configs() -> Vec<Pipeline> {
    let mut out = Vec::new();
    for chunk in BULK_PIPELINE_CHUNKS {
        for stages in PIPELINE_STAGES {
            for blocks_per_sm in COPY_BLOCKS_PER_SM {
                out.push(Pipeline::new(1, chunk / 4, stages, blocks_per_sm));
            }
        }
    }
    out.extend(BULK_PER_BLOCK.map(|(chunk, n)| Pipeline::per_items(1, chunk / 4, n)));
    out
}

/// The `tma_copy` sweep: persistent, boxes x stages x blocks per SM; then, for each box, one
/// block per so many boxes ([`PER_BLOCK_ITEMS`]).
pub fn copy_configs() -> Vec<Pipeline> {
    let mut out = Vec::new();
    for (box_rows, box_cols) in COPY_BOXES {
        for stages in PIPELINE_STAGES {
            for blocks_per_sm in COPY_BLOCKS_PER_SM {
                out.push(Pipeline::new(box_rows, box_cols, stages, blocks_per_sm));
            }
        }
        out.extend(PER_BLOCK_ITEMS.map(|n| Pipeline::per_items(box_rows, box_cols, n)));
    }
    out
}

/// The `tma_transpose` sweep (128-byte swizzle), `64 x 64` tiles: persistent, stages x blocks
/// per SM; then one block per so many tiles ([`PER_BLOCK_ITEMS`]).
pub fn transpose_configs() -> Vec<Pipeline> {
    let mut out = Vec::new();
    for stages in PIPELINE_STAGES {
        for blocks_per_sm in TRANSPOSE_BLOCKS_PER_SM {
            out.push(Pipeline::new(TILE, TILE, stages, blocks_per_sm));
        }
    }
    out.extend(PER_BLOCK_ITEMS.map(|n| Pipeline::per_items(TILE, TILE, n)));
    out
}

/// The bulk-copy curve: one stage (load, wait, store, wait), each chunk of [`BULK_CHUNKS`] at
/// each of [`BULK_BLOCKS_PER_SM`].
pub fn curve_configs() -> Vec<Pipeline> {
    BULK_BLOCKS_PER_SM.iter().flat_map(|&k| BULK_CHUNKS.map(|chunk| Pipeline::new(1, chunk / 4, 1, k))).collect()
}

/// Points of each sweep at which the L2 hint is tried: its fastest checked ones.
const HINTED_POINTS: usize = 2;

/// The persistent rings of a sanitizer run's sweeps (`tma_bulk_copy`, `tma_copy`,
/// `tma_transpose`): 2 stages (the loads run ahead, the ring wraps once a block has more items
/// than stages) in 2 blocks per SM (a grid-stride loop whose last block is not the first), the
/// smallest box or chunk, so that the small sizes give each block several items.
pub const SANITIZER_RINGS: [Pipeline; 3] =
    [Pipeline::new(1, 256, 2, 2), Pipeline::new(8, 256, 2, 2), Pipeline::new(TILE, TILE, 2, 2)];

/// What the lesson launches beyond its rows: each pipelined kernel's sweep, the evict_first
/// re-runs of each sweep's fastest points, the L2 promotions tried at each map kernel's fastest
/// configuration, and the bulk-copy curve.
#[derive(Debug, PartialEq)]
pub struct Plan {
    pub bulk: Vec<Pipeline>,
    pub copy: Vec<Pipeline>,
    pub transpose: Vec<Pipeline>,
    /// Points of each sweep re-run with the evict_first hint.
    pub hinted: usize,
    pub promotions: Vec<L2Promotion>,
    pub curve: Vec<Pipeline>,
}

impl Plan {
    /// The full sweeps; under compute-sanitizer (`sanitizer`) each distinct path once instead:
    /// every launch there is slow (racecheck of the full sweeps at 28x44 ran past 280 s on the
    /// H200: some 240 checked and timed points, persistent grids of up to 4 blocks on every SM),
    /// and the figures mean nothing. Then each sweep is its kernel's default (one block per few
    /// items) and its ring of [`SANITIZER_RINGS`] (persistent, loads ahead); one point per
    /// sweep hinted; one L2 promotion (256B, the maps of the sweeps have none); the curve's first
    /// point (one stage: the ring of one buffer).
    pub fn new(sanitizer: bool) -> Plan {
        if !sanitizer {
            return Plan {
                bulk: bulk_configs(),
                copy: copy_configs(),
                transpose: transpose_configs(),
                hinted: HINTED_POINTS,
                promotions: L2Promotion::ALL.to_vec(),
                curve: curve_configs(),
            };
        }
        let [bulk, copy, transpose] = SANITIZER_RINGS;
        Plan {
            bulk: vec![BULK_DEFAULT, bulk],
            copy: vec![COPY_DEFAULT, copy],
            transpose: vec![TRANSPOSE_DEFAULT, transpose],
            hinted: 1,
            promotions: vec![L2Promotion::B256],
            curve: curve_configs()[..1].to_vec(),
        }
    }
}

/// The evict_first configurations of a sweep's `count` fastest checked points.
fn hinted_configs(points: &[Point], count: usize) -> Vec<Pipeline> {
    let mut passed: Vec<&Point> = points.iter().filter(|p| p.passed).collect();
    passed.sort_by(|a, b| b.gbs.total_cmp(&a.gbs));
    passed.iter().take(count).map(|p| Pipeline { hint: hint::EVICT_FIRST, ..p.config }).collect()
}

/// What the L2 hint does and why it may help, and that it is measured: one line.
const HINT_NOTE: &str = "L2 evict_first hint: the copies' `.L2::cache_hint` with a `createpolicy` evict_first policy makes the lines they touch the first the L2 evicts (PTX ISA, \"createpolicy\"; CUDA C++ Programming Guide, \"L2 Access Management\"), so a stream read or written once need not displace other lines of L2; whether that is faster is measured per kernel, at its 2 fastest points";

/// The hint's points of `kernel` in one line: GB/s without and with it at each hinted
/// configuration; none when the sweep hinted nothing.
fn hint_note(kernel: &str, swept: &Swept) -> Option<String> {
    let cells: Vec<String> = swept
        .hinted
        .iter()
        .filter_map(|h| {
            let plain = swept.plain.iter().find(|p| p.config == Pipeline { hint: hint::NONE, ..h.config })?;
            let failed = if h.passed { "" } else { " (FAILED its check)" };
            Some(format!(
                "{}: {:.0} -> {:.0}{failed} ({:+.1}%)",
                config_label(&plain.config),
                plain.gbs,
                h.gbs,
                100.0 * (h.gbs / plain.gbs - 1.0)
            ))
        })
        .collect();
    (!cells.is_empty())
        .then(|| format!("evict_first at `{kernel}`'s fastest points, GB/s without -> with: {}", cells.join("; ")))
}

/// One measured configuration of a sweep, checked exactly before it was timed.
#[derive(Clone, Copy)]
struct Point {
    config: Pipeline,
    /// Its blocks resident per SM ([`resident`]).
    resident: u32,
    gbs: f64,
    passed: bool,
}

/// A kernel's sweep: its own points, and the evict_first re-runs of its fastest ones.
struct Swept {
    plain: Vec<Point>,
    hinted: Vec<Point>,
}

impl Swept {
    /// A sweep with no hinted points yet.
    fn of(plain: Vec<Point>) -> Swept {
        Swept { plain, hinted: Vec::new() }
    }

    /// The fastest configuration whose check passed, hinted or not, or `default` when none did.
    fn fastest(&self, default: Pipeline) -> Pipeline {
        fastest(self.plain.iter().chain(&self.hinted), default)
    }
}

/// The fastest configuration whose check passed, or `default` when none did.
fn fastest<'a>(points: impl IntoIterator<Item = &'a Point>, default: Pipeline) -> Pipeline {
    points.into_iter().filter(|p| p.passed).max_by(|a, b| a.gbs.total_cmp(&b.gbs)).map_or(default, |p| p.config)
}

/// The sweeps' checks and the configurations the SM cannot hold.
struct Sweeps<'a> {
    /// Pinned chunks each point's output is checked through, on every core: a pageable copy
    /// of the whole output per point would take most of the demo's time.
    staging: &'a RefCell<Staging<f32>>,
    checks: Vec<Check>,
    left_out: Vec<String>,
}

impl Sweeps<'_> {
    /// Checks and times `kernel` at each configuration (`launch` builds it over `output`);
    /// configurations whose blocks per SM the driver's occupancy cannot hold are left out.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        lab: &Lab,
        kernel: &str,
        output: &mut DeviceBuffer<f32>,
        want: &Expected,
        bytes: f64,
        configs: &[Pipeline],
        launch: impl Fn(&Pipeline, &mut DeviceBuffer<f32>) -> Launch,
    ) -> Result<Vec<Point>> {
        let gpu = &lab.gpu;
        let mut points = Vec::new();
        for p in configs {
            let launch = launch(p, output);
            let (smem, threads) = (launch.shape.smem_bytes, launch.shape.threads_per_block());
            let driver = if smem <= gpu.info.smem_per_block_optin {
                if smem > gpu.info.smem_per_block {
                    kernel::allow_dynamic_smem(gpu, launch.kernel, smem)?;
                }
                kernel::occupancy(gpu, launch.kernel, threads, smem)?.active_blocks
            } else {
                0
            };
            if driver < p.blocks.min_resident() {
                self.left_out.push(format!("{kernel} {}", config_label(p)));
                continue;
            }
            let check = lab.phases.time(Kind::Checks, || {
                poison(output)?;
                launch.enqueue(gpu)?;
                gpu.stream.synchronize().map_err(|e| anyhow::anyhow!("{kernel}: {}", crate::gpu::describe(e)))?;
                want.check(gpu, &mut self.staging.borrow_mut(), output)
            })?;
            let passed = check.passed();
            self.checks.push(check);
            let gbs = lab.phases.time(Kind::Timed, || time(gpu, lab.settings.repeats, || launch.enqueue(gpu)))?.gbs(bytes);
            points.push(Point { config: *p, resident: resident(p, driver), gbs, passed });
        }
        Ok(points)
    }

    /// The note naming the configurations left out, if any.
    fn left_out_note(&self) -> Option<String> {
        (!self.left_out.is_empty())
            .then(|| format!("left out (shared memory per SM cannot hold them): {}", self.left_out.join("; ")))
    }
}

/// Name of the pipeline chart's series of `kernel`: its fastest checked configuration at each
/// stage count of [`PIPELINE_STAGES`].
pub fn pipeline_series_name(kernel: &str) -> String {
    format!("{kernel}, fastest per stage count")
}

/// Name of the series holding every point of `kernel`'s sweep (the `--json` record's data).
pub fn sweep_series_name(kernel: &str) -> String {
    format!("{kernel} sweep")
}

/// A kernel's sweep as chart data: the fastest checked GB/s at each stage count (labelled by
/// the count), and every point against its KiB in flight per SM (labelled by its
/// configuration).
fn pipeline_series(kernel: &str, points: &[Point]) -> [Series; 2] {
    let per_stage = PIPELINE_STAGES.iter().filter_map(|&stages| {
        let best =
            points.iter().filter(|p| p.passed && p.config.stages == stages).max_by(|a, b| a.gbs.total_cmp(&b.gbs))?;
        Some((stages as f64, best.gbs, format!("{stages}")))
    });
    [
        Series::labelled(
            &pipeline_series_name(kernel),
            "stages (buffers in the ring)",
            "GB/s (read + written)",
            per_stage,
        ),
        Series::labelled(
            &sweep_series_name(kernel),
            "KiB in flight per SM (stages x box x resident blocks per SM)",
            "GB/s (read + written)",
            points.iter().map(|p| (in_flight_kib(p), p.gbs, config_label(&p.config))),
        ),
    ]
}

/// The sweep of `kernel` in one line: configurations, checks, the fastest, and the fastest
/// with one block per SM and with the fewest stages.
fn sweep_note(kernel: &str, points: &[Point], memcpy: Option<f64>) -> Option<String> {
    let best = points.iter().filter(|p| p.passed).max_by(|a, b| a.gbs.total_cmp(&b.gbs))?;
    let ratio = |gbs: f64| memcpy.map_or(String::new(), |m| format!(" ({:.3}x memcpy)", gbs / m));
    let min_stages = points.iter().map(|p| p.config.stages).min().unwrap_or(1);
    let fewest =
        points.iter().filter(|p| p.passed && p.config.stages == min_stages).max_by(|a, b| a.gbs.total_cmp(&b.gbs));
    let failed = points.iter().filter(|p| !p.passed).count();
    Some(format!(
        "pipeline sweep `{kernel}`: {} configurations, {}; fastest {:.0} GB/s{} at {} ({:.0} KiB in flight per SM){}",
        points.len(),
        if failed == 0 { "every one checked exact".to_string() } else { format!("{failed} FAILED their check") },
        best.gbs,
        ratio(best.gbs),
        config_label(&best.config),
        in_flight_kib(best),
        fewest.map_or(String::new(), |f| format!(
            "; with {min_stages} stage{}: {:.0} GB/s at {}",
            if min_stages == 1 { "" } else { "s" },
            f.gbs,
            config_label(&f.config)
        )),
    ))
}

/// Share of the fastest point's GB/s within which a sweep's points count as its plateau.
const PLATEAU: f64 = 0.02;

/// What bytes in flight explain, in one line: the LSU copy's KiB in flight per SM and GB/s
/// (`lsu`) against the tensor-copy sweep's fastest point, and the span of KiB in flight per SM
/// whose points come within [`PLATEAU`] of it.
fn in_flight_note(lsu: (f64, f64), points: &[Point], memcpy: Option<f64>) -> Option<String> {
    let passed: Vec<&Point> = points.iter().filter(|p| p.passed).collect();
    let best = passed.iter().max_by(|a, b| a.gbs.total_cmp(&b.gbs))?;
    let plateau: Vec<f64> =
        passed.iter().filter(|p| p.gbs >= best.gbs * (1.0 - PLATEAU)).map(|p| in_flight_kib(p)).collect();
    let (lo, hi) = plateau.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &k| (lo.min(k), hi.max(k)));
    let ratio = |gbs: f64| memcpy.map_or(String::new(), |m| format!(" ({:.3}x memcpy)", gbs / m));
    let kib = in_flight_kib(best);
    let verdict = match (lsu.1 > best.gbs, lsu.0 < kib) {
        (true, true) => "DRAM serves the LSU copy faster with fewer bytes in flight, so bytes in flight are not what the TMA copies lack".to_string(),
        (true, false) => "The LSU copy is faster, with as many bytes in flight or more".to_string(),
        (false, true) => format!("The tensor copy reaches the LSU copy's rate with {:.1}x its bytes in flight", kib / lsu.0),
        (false, false) => "The tensor copy reaches the LSU copy's rate with no more bytes in flight".to_string(),
    };
    Some(format!(
        "bytes in flight: the LSU copy reaches {:.0} GB/s{} with {:.0} KiB in flight per SM; the tensor copy's fastest point {:.0} GB/s{} with {:.0} KiB; {} of its {} checked points come within {:.0}% of that, from {lo:.0} to {hi:.0} KiB in flight per SM. {verdict}",
        lsu.1,
        ratio(lsu.1),
        lsu.0,
        best.gbs,
        ratio(best.gbs),
        in_flight_kib(best),
        plateau.len(),
        passed.len(),
        PLATEAU * 100.0
    ))
}

/// The L2 promotion whose point passed its check fastest; none when no point passed.
fn fastest_promotion(points: &[(L2Promotion, Point)]) -> L2Promotion {
    let passed = points.iter().filter(|(_, p)| p.passed);
    passed.max_by(|a, b| a.1.gbs.total_cmp(&b.1.gbs)).map_or(L2Promotion::None, |(l2, _)| *l2)
}

/// The L2-promotion sweep of `kernel` in one line: GB/s per setting at its configuration, and
/// the setting the rows use.
fn promotion_note(kernel: &str, points: &[(L2Promotion, Point)]) -> String {
    let cells: Vec<String> = points
        .iter()
        .map(|(l2, p)| format!("{} {:.0}{}", l2.name(), p.gbs, if p.passed { "" } else { " (FAILED its check)" }))
        .collect();
    let at = points.first().map_or(String::new(), |(_, p)| format!(" at {}", config_label(&p.config)));
    format!(
        "L2 promotion of `{kernel}`'s tensor maps{at}, GB/s: {}; the rows use {}",
        cells.join(", "),
        fastest_promotion(points).name()
    )
}

/// The bulk-copy curve's note: its fastest point, beside the published figure.
fn curve_note(points: &[Point]) -> String {
    let best = points.iter().filter(|p| p.passed).max_by(|a, b| a.gbs.total_cmp(&b.gbs));
    let best = best.map_or("no point passed its check".into(), |p| {
        format!(
            "best {:.0} GB/s at {} KiB per copy and {} blocks per SM ({} KiB in flight per SM)",
            p.gbs,
            p.config.box_bytes() / 1024,
            p.resident,
            p.config.box_bytes() * p.resident / 1024
        )
    });
    format!(
        "bulk-copy curve (one stage: load, wait, store, wait): {best}; published (H800/H100): 95-96% of HBM peak only from 8-12 KiB per copy and 2-3 blocks per SM"
    )
}

/// SGEMM rungs 6 (plain loads into shared memory) and 7 (`cp.async`), at the run's first SGEMM
/// size, for the table of paths into shared memory; each step a block moves its `A` and `B`
/// tiles (`2 x 128 x 8` floats, 8 KiB) while it computes on the other stage.
fn async_rungs(lab: &Lab, size: Option<(usize, usize, usize)>) -> Result<Vec<KernelRow>> {
    use crate::probes::gemm::{MatmulLaunch, Operands, block_work, matmul_launch, shapes};
    use memlab_contracts::sgemm::{BK, TILE as GEMM_TILE};
    let Some(size) = size else { return Ok(vec![]) };
    let mut ops = Operands::new(&lab.gpu, size)?;
    let step = 2 * GEMM_TILE * BK * 4;
    let rungs: [(MatmulLaunch, Path, &str); 2] = [
        (
            matmul_launch!(sgemm_6_double_buffered, shapes::sgemm_6_double_buffered),
            Path::SharedLoads(step),
            "SGEMM rung 6: A and B tiles by plain loads into shared memory",
        ),
        (
            matmul_launch!(sgemm_7_async_copy, shapes::sgemm_7_async_copy),
            Path::CpAsync(step),
            "SGEMM rung 7: the B tile by cp.async, A by plain loads",
        ),
    ];
    let mut rows = Vec::new();
    for (kernel, path, lesson) in rungs {
        let launch = ops.launch(kernel);
        let run = KernelRun {
            launch,
            lesson,
            prediction: String::new(),
            work: block_work(&ops, (GEMM_TILE, GEMM_TILE)),
            size: ops.label(),
            reset: &|| poison(&ops.c),
        };
        let row = measure(lab, run, || ops.check(&lab.gpu))?;
        rows.push(KernelRow { prediction: path.in_flight(&row), ..row });
    }
    Ok(rows)
}

/// The goals (TMA copy >= 0.97x memcpy, TMA transpose >= 0.95x memcpy) against this run.
fn goal_notes(kernels: &[KernelRow], memcpy_gbs: Option<f64>) -> Vec<String> {
    let Some(memcpy) = memcpy_gbs else {
        return vec![
            "no memcpy ceiling in this run: the goals (TMA copy >= 0.97x, transpose >= 0.95x memcpy) are not judged"
                .into(),
        ];
    };
    let best = |name: &str| {
        kernels.iter().filter(|k| k.kernel == name && k.check.passed()).map(|k| k.rate.value()).fold(0.0, f64::max)
    };
    [("tma_copy", 0.97), ("tma_bulk_copy", 0.97), ("tma_transpose", 0.95)]
        .iter()
        .map(|&(name, goal)| {
            let ratio = best(name) / memcpy;
            let verdict = if ratio >= goal { "met" } else { "MISSED" };
            format!(
                "goal `{name}` >= {goal:.2}x memcpy: {ratio:.3}x ({:.0} of {memcpy:.0} GB/s), {verdict}",
                best(name)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_widths_are_stored_with_padded_rows_and_said_so() {
        // 31x33: input rows of 33 f32 in 36 (144 bytes), the transposed 33x31's rows of 31 in 32.
        let (input, output) = layouts(31, 33);
        assert_eq!(
            (input, output),
            (Stored { rows: 31, cols: 33, pitch: 36 }, Stored { rows: 33, cols: 31, pitch: 32 })
        );
        assert_eq!((input.elements(), output.elements()), (31 * 36, 33 * 32));
        // Every pitch is one a tensor map describes, for every box and swizzle the lesson uses.
        for (rows, cols) in [(31, 33), (28, 44), (1, 1), (3, 1000), (1000, 7), (70000, 2), (8192, 1001)] {
            let (input, output) = layouts(rows, cols);
            for b in COPY_BOXES {
                boxed(0, input, b, Swizzle::None).check().unwrap();
            }
            for sw in Swizzle::ALL {
                spec(0, input, box_cols(sw.mode()), sw).check().unwrap();
            }
            spec(0, output, TILE, Swizzle::None).check().unwrap();
            // The 1-D bulk copy moves the padded input: whole 16-byte granules.
            assert!(input.elements().is_multiple_of(4), "{rows}x{cols}");
            assert!(check_matrix(rows, cols).is_ok(), "{rows}x{cols}");
        }
        assert_eq!(
            padding_note(input, output).unwrap(),
            "rows padded from 33 to 36 f32 (144 bytes), the transposed 33x31 output's rows from 31 to 32 f32 (128 bytes) for the tensor map's 16-byte stride. The 1-D bulk copy moves whole 16-byte chunks, so it copies the padded 31x36 matrix, as the LSU copy does and the LSU transpose transposes it (their GB/s count those bytes); the tensor maps move the 31x33 elements. Every check compares the 31x33 elements, the padding excluded"
        );
        // 28x44: only the transposed output (rows of 28 f32 = 112 bytes) is already aligned.
        let (input, output) = layouts(28, 44);
        assert_eq!((input.pitch, output.pitch), (44, 28));
        assert_eq!(padding_note(input, output), None);
        let (input, output) = layouts(31, 36);
        assert_eq!(
            padding_note(input, output).unwrap(),
            "the transposed 36x31 output's rows padded from 31 to 32 f32 (128 bytes) for the tensor map's 16-byte stride. Every check compares the 31x36 elements, the padding excluded"
        );
        assert!(
            padding_note(layouts(1000, 7).0, layouts(1000, 7).1)
                .unwrap()
                .starts_with("rows padded from 7 to 8 f32 (32 bytes) for")
        );
        assert_eq!(layouts(8192, 8192).0.pitch, 8192);
        // What stays refused: more elements than the kernels count in 32 bits, padded.
        assert_eq!(
            check_matrix(1 << 16, (1 << 16) - 1).unwrap_err().to_string(),
            "the TMA demo: the input 65536x65535, its rows padded to 65536 f32 (16-byte strides), holds 4294967296 elements; the kernels count elements in 32 bits (at most 4294967295)"
        );
        assert_eq!(
            check_matrix((1 << 16) - 1, 1 << 16).unwrap_err().to_string(),
            "the TMA demo: the transposed output 65536x65535, its rows padded to 65536 f32 (16-byte strides), holds 4294967296 elements; the kernels count elements in 32 bits (at most 4294967295)"
        );
        assert!(
            check_matrix(1 << 17, 1 << 16)
                .unwrap_err()
                .to_string()
                .contains("the input 131072x65536 holds 8589934592 elements")
        );
        assert!(check_matrix(65535, 65535).is_ok(), "65535 x 65536 elements fit");
    }

    #[test]
    fn under_the_sanitizer_each_kernel_path_runs_once() {
        let full = Plan::new(false);
        assert_eq!(
            (
                full.bulk.len(),
                full.copy.len(),
                full.transpose.len(),
                full.hinted,
                full.promotions.len(),
                full.curve.len()
            ),
            (67, 110, 17, 2, 4, 28)
        );
        let small = Plan::new(true);
        assert_eq!(small.bulk, [BULK_DEFAULT, Pipeline::new(1, 256, 2, 2)]);
        assert_eq!(small.copy, [COPY_DEFAULT, Pipeline::new(8, 256, 2, 2)]);
        assert_eq!(small.transpose, [TRANSPOSE_DEFAULT, Pipeline::new(TILE, TILE, 2, 2)]);
        assert_eq!((small.hinted, small.promotions.as_slice()), (1, &[L2Promotion::B256][..]));
        assert_eq!(small.curve, [Pipeline::new(1, 256, 1, 1)]);
        // Each sweep: one grid of each kind, one point with loads ahead of the stores; the ring
        // of one buffer runs in the copy's and transpose's defaults and the bulk-copy curve.
        for sweep in [&small.bulk, &small.copy, &small.transpose] {
            assert_eq!(sweep.iter().filter(|p| matches!(p.blocks, Blocks::PerSm(_))).count(), 1);
            assert!(sweep.iter().any(|p| p.stages > 1));
        }
        assert!(small.copy[0].stages == 1 && small.transpose[0].stages == 1 && small.curve[0].stages == 1);
        // Points checked per kernel: its sweep, one hinted, one promotion (the map kernels) or
        // the curve (the bulk copy), against some 240 in the full plan.
        let points = |p: &Plan| {
            let (sweeps, curve) = (p.bulk.len() + p.copy.len() + p.transpose.len(), p.curve.len());
            sweeps + 3 * p.hinted + 2 * p.promotions.len() + curve
        };
        assert_eq!((points(&full), points(&small)), (236, 12));
        // Every configuration fits an H200 SM, so none is left out.
        let fits = |p: &Pipeline, threads, buffers| {
            model_blocks(threads, smem_bytes(p.box_bytes(), buffers)) >= p.blocks.min_resident()
        };
        for p in small.bulk.iter().chain(&small.copy).chain(&small.curve) {
            assert!(fits(p, COPY_THREADS, p.stages), "{p:?}");
        }
        for p in &small.transpose {
            assert!(fits(p, TRANSPOSE_BLOCK.0 * TRANSPOSE_BLOCK.1, transpose_buffers(p.stages)), "{p:?}");
        }
    }

    /// Blocks per SM the occupancy model (cc 9.0, the driver's rules) gives a launch of
    /// `threads` threads and `smem` dynamic shared bytes; registers are not the limit here.
    fn model_blocks(threads: u32, smem: u32) -> u32 {
        use crate::model::occupancy::{ArchLimits, KernelResources, Mode, occupancy};
        let arch = ArchLimits::for_cc(9, 0).unwrap();
        let res = KernelResources {
            dynamic_smem_bytes: smem,
            smem_opt_in: smem > 48 * 1024,
            ..KernelResources::new(threads, 32)
        };
        occupancy(arch, &res, Mode::Hardware).map_or(0, |o| o.active_blocks)
    }

    /// The configurations of a sweep the occupancy model says an H200 SM cannot hold.
    fn left_out(configs: &[Pipeline], threads: u32, buffers: impl Fn(&Pipeline) -> u32) -> Vec<String> {
        configs
            .iter()
            .filter(|p| model_blocks(threads, smem_bytes(p.box_bytes(), buffers(p))) < p.blocks.min_resident())
            .map(config_label)
            .collect()
    }

    #[test]
    fn the_sweeps_cover_stages_boxes_and_blocks_and_the_model_names_what_cannot_fit() {
        let (bulk, copy, transpose) = (bulk_configs(), copy_configs(), transpose_configs());
        assert_eq!((bulk.len(), copy.len(), transpose.len()), (67, 110, 17));
        // One block per item: 1 and 2 boxes of each of the 5 boxes, 7 chunkings, 2 of tiles.
        let per_items = |c: &[Pipeline]| c.iter().filter(|p| matches!(p.blocks, Blocks::PerItems(_))).count();
        assert_eq!((per_items(&bulk), per_items(&copy), per_items(&transpose)), (7, 10, 2));
        assert!(bulk.contains(&BULK_DEFAULT) && copy.contains(&COPY_DEFAULT) && transpose.contains(&TRANSPOSE_DEFAULT));
        // Shared bytes: 1024 to align, then each buffer and its 8-byte mbarrier.
        assert_eq!(smem_bytes(16384, 4), 1024 + 4 * 16392);
        assert_eq!(smem_bytes(TILE_BYTES, transpose_buffers(3)), 1024 + 5 * 16392);
        // 228 KiB per SM and 1 KiB reserved per block: the rings too large for their blocks.
        let stages = |p: &Pipeline| p.stages;
        let labels = |b: &str, at: &[(u32, u32)]| {
            at.iter().map(|(s, k)| format!("{s} x {b}, {k} blocks/SM")).collect::<Vec<String>>()
        };
        // 16 KiB rings of 4 stages fit 3 times; of 6 stages, twice.
        let mid = |b: &str| labels(b, &[(4, 4), (6, 3), (6, 4)]);
        // 32 KiB boxes: 2 stages fit 3 times, 3 stages twice, 4 and 6 stages once.
        let big = |b: &str| labels(b, &[(2, 4), (3, 3), (3, 4), (4, 2), (4, 3), (4, 4), (6, 2), (6, 3), (6, 4)]);
        let want_bulk: Vec<String> = [mid("16 KiB"), big("32 KiB")].concat();
        assert_eq!(left_out(&bulk, COPY_THREADS, stages), want_bulk);
        let want_copy: Vec<String> =
            [mid("64x64 box"), mid("32x128 box"), mid("16x256 box"), big("32x256 box")].concat();
        assert_eq!(left_out(&copy, COPY_THREADS, stages), want_copy);
        let t = left_out(&transpose, TRANSPOSE_BLOCK.0 * TRANSPOSE_BLOCK.1, |p| transpose_buffers(p.stages));
        assert_eq!(
            t,
            [
                "3 x 64x64 box, 3 blocks/SM",
                "4 x 64x64 box, 3 blocks/SM",
                "6 x 64x64 box, 2 blocks/SM",
                "6 x 64x64 box, 3 blocks/SM"
            ]
        );
        // The defaults fit, and so every stage count keeps a configuration of every kernel.
        for (p, threads, buffers) in [
            (BULK_DEFAULT, COPY_THREADS, BULK_DEFAULT.stages),
            (COPY_DEFAULT, COPY_THREADS, COPY_DEFAULT.stages),
            (TRANSPOSE_DEFAULT, TRANSPOSE_BLOCK.0 * TRANSPOSE_BLOCK.1, transpose_buffers(TRANSPOSE_DEFAULT.stages)),
        ] {
            assert!(model_blocks(threads, smem_bytes(p.box_bytes(), buffers)) >= p.blocks.min_resident(), "{p:?}");
        }
    }

    /// A persistent configuration the tests vary: 16x256 boxes (16 KiB), 4 stages, 2 blocks/SM.
    const RING: Pipeline = Pipeline::new(16, 256, 4, 2);

    #[test]
    fn the_fastest_checked_configuration_runs_the_rows() {
        let at = |stages, gbs, passed| Point { config: Pipeline { stages, ..RING }, resident: 2, gbs, passed };
        let points = [at(1, 3000.0, true), at(2, 3900.0, false), at(3, 3800.0, true)];
        assert_eq!(fastest(&points, BULK_DEFAULT).stages, 3, "a failed check is never chosen");
        assert_eq!(fastest(&[at(2, 3900.0, false)], BULK_DEFAULT), BULK_DEFAULT);
        assert_eq!(config_label(&RING), "4 x 16x256 box, 2 blocks/SM");
        assert_eq!(config_label(&Pipeline::new(1, 4096, 4, 2)), "4 x 16 KiB, 2 blocks/SM");
        assert_eq!(config_label(&COPY_DEFAULT), "1 x 32x256 box, a block per box");
        assert_eq!(config_label(&TRANSPOSE_DEFAULT), "1 x 64x64 box, a block per box");
        assert_eq!(config_label(&BULK_DEFAULT), "4 x 2 KiB, a block per 4 chunks");
        assert_eq!(config_label(&Pipeline::per_items(TILE, TILE, 2)), "2 x 64x64 box, a block per 2 boxes");
        assert_eq!(in_flight_kib(&at(4, 0.0, true)), 128.0);
        // One block per box: the driver's resident blocks, 6 of 32 KiB.
        let one_shot = Point { config: COPY_DEFAULT, resident: resident(&COPY_DEFAULT, 6), gbs: 0.0, passed: true };
        assert_eq!(in_flight_kib(&one_shot), 192.0);
        assert_eq!(resident(&RING, 12), 2, "persistent: the grid's blocks per SM, not the driver's");
        assert_eq!(COPY_DEFAULT.blocks.grid(132, 4096), 4096);
        assert_eq!(BULK_DEFAULT.blocks.grid(132, 4098), 1025);
        assert_eq!(RING.blocks.grid(132, 4096), 264);
        let [per_stage, all] = pipeline_series("tma_copy", &points);
        assert_eq!(per_stage.points.iter().map(|p| (p.x, p.y)).collect::<Vec<_>>(), [(1.0, 3000.0), (3.0, 3800.0)]);
        assert_eq!(all.points.len(), 3);
        let note = sweep_note("tma_copy", &points, Some(4000.0)).unwrap();
        assert!(note.contains("1 FAILED their check") && note.contains("fastest 3800 GB/s (0.950x memcpy)"), "{note}");
        let l2 = |l2, gbs, passed| (l2, at(4, gbs, passed));
        let promoted = [
            l2(L2Promotion::None, 3800.0, true),
            l2(L2Promotion::B128, 3900.0, true),
            l2(L2Promotion::B256, 3990.0, false),
        ];
        assert_eq!(fastest_promotion(&promoted), L2Promotion::B128, "a failed check never wins");
        assert_eq!(
            promotion_note("tma_copy", &promoted),
            "L2 promotion of `tma_copy`'s tensor maps at 4 x 16x256 box, 2 blocks/SM, GB/s: none 3800, 128B 3900, 256B 3990 (FAILED its check); the rows use 128B"
        );
        assert_eq!(fastest_promotion(&promoted[2..]), L2Promotion::None);
        let sized = |stages, blocks_per_sm, gbs| Point {
            config: Pipeline { stages, blocks: Blocks::PerSm(blocks_per_sm), ..RING },
            resident: blocks_per_sm,
            gbs,
            passed: true,
        };
        // 32 KiB boxes (16x256 f32 is 16 KiB): 1 x 1 = 16 KiB, 2 x 2 = 64 KiB, 4 x 2 = 128 KiB.
        let sweep = [sized(1, 1, 3000.0), sized(2, 2, 3880.0), sized(4, 2, 3900.0)];
        assert_eq!(
            in_flight_note((32.0, 3957.0), &sweep, Some(4079.0)).unwrap(),
            "bytes in flight: the LSU copy reaches 3957 GB/s (0.970x memcpy) with 32 KiB in flight per SM; the tensor copy's fastest point 3900 GB/s (0.956x memcpy) with 128 KiB; 2 of its 3 checked points come within 2% of that, from 64 to 128 KiB in flight per SM. DRAM serves the LSU copy faster with fewer bytes in flight, so bytes in flight are not what the TMA copies lack"
        );
        assert_eq!(in_flight_note((32.0, 3957.0), &[], None), None);
        assert!(
            in_flight_note((32.0, 3850.0), &sweep, None)
                .unwrap()
                .ends_with(". The tensor copy reaches the LSU copy's rate with 4.0x its bytes in flight")
        );
    }

    #[test]
    fn the_hint_is_tried_at_the_fastest_points_and_labelled() {
        let at =
            |stages, hint, gbs, passed| Point { config: Pipeline { stages, hint, ..RING }, resident: 2, gbs, passed };
        let sweep = || {
            vec![
                at(1, hint::NONE, 3000.0, true),
                at(2, hint::NONE, 3950.0, false),
                at(3, hint::NONE, 3800.0, true),
                at(4, hint::NONE, 3900.0, true),
            ]
        };
        let hinted = hinted_configs(&sweep(), HINTED_POINTS);
        let evict = |stages| Pipeline { stages, hint: hint::EVICT_FIRST, ..RING };
        assert_eq!(hinted, [evict(4), evict(3)], "the 2 fastest checked points, a failed one never");
        assert_eq!(config_label(&evict(6)), "6 x 16x256 box, 2 blocks/SM, evict_first");
        let mut swept = Swept::of(sweep());
        swept.hinted = vec![at(4, hint::EVICT_FIRST, 3960.0, true), at(3, hint::EVICT_FIRST, 3700.0, false)];
        assert_eq!(swept.fastest(BULK_DEFAULT), evict(4), "the rows run the fastest point, hinted or not");
        assert_eq!(
            hint_note("tma_copy", &swept).unwrap(),
            "evict_first at `tma_copy`'s fastest points, GB/s without -> with: 4 x 16x256 box, 2 blocks/SM: 3900 -> 3960 (+1.5%); 3 x 16x256 box, 2 blocks/SM: 3800 -> 3700 (FAILED its check) (-2.6%)"
        );
        assert_eq!(hint_note("tma_copy", &Swept::of(sweep())), None);
        assert!(!HINT_NOTE.contains('\n') && HINT_NOTE.contains("\"createpolicy\""));
    }

    #[test]
    fn below_cc_9_the_lesson_is_skipped_in_one_line() {
        let line = skip_line((8, 9));
        assert_eq!(
            line,
            "skipped: TMA (cp.async.bulk.tensor, mbarrier transaction counts) needs cc 9.0 or newer, this GPU is cc 8.9"
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn the_bank_model_predicts_the_swizzles() {
        assert_eq!(column_read_wavefronts(0), (32, 32, 4));
        assert_eq!(column_read_wavefronts(1), (8, 4, 4));
        assert_eq!(column_read_wavefronts(2), (16, 4, 4));
        assert_eq!(column_read_wavefronts(3), (32, 4, 4));
        assert_eq!(memlab_contracts::tma::SWIZZLE_MODES as usize, Swizzle::ALL.len());
    }
}
