//! TMA, the tensor memory accelerator (cc 9.0): copies and a transpose whose tiles move between
//! global and shared memory by `cp.async.bulk(.tensor)`, timed against the LSU `copy`,
//! `transpose_vectorized` and the memcpy ceiling; the bandwidth curve of 1-D bulk copies
//! against bytes per copy and blocks per SM; the tensor map's swizzle modes against the bank
//! model. Skipped, in one line, below cc 9.0.
//!
//! Tensor maps come from `cuTensorMapEncodeTiled` ([`crate::gpu::tensor_map`]), which needs
//! every row pitch a multiple of 16 bytes: the matrices are stored with their rows padded to
//! that (`layout::Stored::padded`), so any `rows x cols` runs, and every check compares the
//! matrix's elements, the padding excluded. Under `--sanitizer` the sweeps shrink to each
//! kernel's distinct paths once (`plan::Plan`).

mod expected;
mod layout;
mod plan;
mod points;
mod rows;
mod series;
pub mod shapes;
mod sweeps;
mod swizzle;

use std::cell::RefCell;

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::tma::{Pipeline, TILE, box_cols};

use crate::charts::SweepChart;
use crate::gpu::launch::Launch;
use crate::gpu::staging::Staging;
use crate::gpu::tensor_map::{L2Promotion, MapSlot, Swizzle, TiledSpec};
use crate::lab::{Figure, Inputs, Lesson, Needs, NoOptions, Run, Shared};
use crate::lab::{KernelRow, KernelRun, Lab, Section, Work, ensure_free, f32_bytes, measure, poison, poisoned};
use crate::launches;
use crate::phases::Kind;
use crate::probes::baselines::shapes as baselines;
use crate::reference;
use crate::series::Series;
use crate::verify::Check;
use expected::{Expected, Want};
use layout::{Maps, Stored, check_matrix, copy_specs, layouts, padding_note, place_copy_maps, promoted, spec};
pub(crate) use plan::config_label;
use plan::Plan;
use points::{Fastest, Point, Promotions, Swept, SweptKernels, curve_note, fastest_promotion, hinted_configs};
use rows::{Path, Row, async_rungs};
use series::series;
use sweeps::Sweeps;
use swizzle::{SwizzleRow, column_read_wavefronts, swizzle_table};

/// Seed of the copied and transposed matrix ([`reference::input_f32`]).
const SEED: u64 = 13;

/// The compute capability TMA needs (`cp.async.bulk.tensor`: `sm_90`, PTX ISA 8.0).
pub const NEEDS_CC: (u32, u32) = (9, 0);

/// The line of a GPU below cc 9.0 (the lesson is skipped, not an error).
pub fn skip_line(cc: (u32, u32)) -> String {
    format!(
        "skipped: TMA (cp.async.bulk.tensor, mbarrier transaction counts) needs cc {}.{} or newer, this GPU is cc {}.{}",
        NEEDS_CC.0, NEEDS_CC.1, cc.0, cc.1
    )
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
    let padding = padding_note(lesson.stored_in, lesson.stored_out);
    let mut notes = points::notes(padding, &kernels, inputs.memcpy_gbs(), &swept, &l2);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_cc_9_the_lesson_is_skipped_in_one_line() {
        let line = skip_line((8, 9));
        assert_eq!(
            line,
            "skipped: TMA (cp.async.bulk.tensor, mbarrier transaction counts) needs cc 9.0 or newer, this GPU is cc 8.9"
        );
        assert!(!line.contains('\n'));
    }
}
