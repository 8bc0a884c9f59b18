//! TMA, the tensor memory accelerator (cc 9.0): copies and a transpose whose tiles move between
//! global and shared memory by `cp.async.bulk(.tensor)`, timed against the LSU `copy`,
//! `transpose_vectorized` and the memcpy ceiling; the bandwidth curve of 1-D bulk copies
//! against bytes per copy and blocks per SM; the tensor map's swizzle modes against the bank
//! model. Skipped, in one line, below cc 9.0.
//!
//! Tensor maps come from `cuTensorMapEncodeTiled` ([`crate::gpu::tensor_map`]); what a map
//! cannot describe is refused before any work ([`check_matrix`]).

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::tma::{
    BULK_BLOCKS, BULK_BLOCKS_PER_SM, BULK_CHUNK, BULK_CHUNKS, COPY_SMEM, COPY_THREADS, TILE, TILE_BYTES,
    TRANSPOSE_BLOCK, TRANSPOSE_SMEM, box_cols, smem_bytes,
};

use super::transpose::kernels as lsu;
use super::{
    Inputs, KernelRow, KernelRun, Lab, Section, Work, check_u32_elements, download, ensure_free, f32_bytes, measure,
    poison, poisoned, upload,
};
use crate::gpu::kernel;
use crate::gpu::launch::{Launch, LaunchShape};
use crate::gpu::tensor_map::{Swizzle, TensorMap, TiledSpec};
use crate::gpu::timing::time;
use crate::model::banks::WarpRequest;
use crate::series::{Series, names};
use crate::verify::{self, Check};
use crate::{reference, refuse};

/// The compute capability TMA needs (`cp.async.bulk.tensor`: `sm_90`, PTX ISA 8.0).
pub const NEEDS_CC: (u32, u32) = (9, 0);

/// The shape of a kernel that moves one `64 x 64` tile per block of a `rows x cols` input.
fn tiles(rows: u32, cols: u32, block: (u32, u32), smem: u32) -> LaunchShape {
    LaunchShape::covering(rows as usize, cols as usize, (TILE as usize, TILE as usize), block, smem)
}

crate::kernels! {
    /// `tma_bulk_copy`: `n` f32 from `src` to `dst` (16-byte aligned, `n` a multiple of 4) in
    /// 1-D bulk copies of `chunk` bytes (a multiple of 16); `blocks` blocks of 32 threads,
    /// `1024 + chunk + 8` B of shared memory each.
    fn tma_bulk_copy(blocks: u32; src: &DeviceBuffer<f32>, dst: &mut DeviceBuffer<f32>, n: u32, chunk: u32)
        => LaunchShape { grid: (blocks, 1), block: (COPY_THREADS, 1), smem_bytes: smem_bytes(chunk) };
    /// `tma_copy`: a `rows x cols` f32 matrix through `64 x 64` tensor copies; maps (in global
    /// memory) of the input and the output, box `64 x 64`, no swizzle; 32 threads and 17416 B
    /// of shared memory per tile.
    fn tma_copy(rows: u32, cols: u32; map_in: &DeviceBuffer<TensorMap>, map_out: &DeviceBuffer<TensorMap>)
        => tiles(rows, cols, (COPY_THREADS, 1), COPY_SMEM);
    /// `tma_transpose`: `rows x cols` into `cols x rows`; `map_in` box `64 x box_cols(swizzle)`
    /// with that swizzle, `map_out` box `64 x 64`; block `32 x 8`, 33800 B shared per tile.
    fn tma_transpose(rows: u32, cols: u32; map_in: &DeviceBuffer<TensorMap>, map_out: &DeviceBuffer<TensorMap>, swizzle: u32)
        => tiles(rows, cols, TRANSPOSE_BLOCK, TRANSPOSE_SMEM);
}

/// The tensor map of a `rows x cols` f32 matrix at `address`, box `64 x box_cols`.
fn spec(address: u64, rows: usize, cols: usize, box_cols: u32, swizzle: Swizzle) -> TiledSpec {
    TiledSpec { address, rows: rows as u64, cols: cols as u64, box_rows: TILE, box_cols, swizzle }
}

/// Refuses a matrix the lesson's tensor maps cannot describe (input `rows x cols`, transposed
/// output `cols x rows`, every swizzle's box) or its 1-D bulk copy cannot move (a multiple of
/// 16 bytes), in one line, before any work.
///
/// # Errors
/// The refusal.
pub fn check_matrix(rows: usize, cols: usize) -> Result<()> {
    check_u32_elements("the TMA demo", &[rows.saturating_mul(cols)])?;
    spec(0, rows, cols, TILE, Swizzle::None).check()?;
    spec(0, cols, rows, TILE, Swizzle::None).check()?;
    for sw in Swizzle::ALL {
        spec(0, rows, cols, box_cols(sw.mode()), sw).check()?;
    }
    if !(rows * cols).is_multiple_of(4) {
        refuse!("the 1-D bulk copy moves multiples of 16 bytes: {rows}x{cols} f32 is {} bytes", 4 * rows * cols);
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

/// Runs the lesson on `lab.sizes.transpose`; skipped in one line below cc 9.0 and for a matrix
/// its tensor maps cannot describe (`run-demos --only tma` refuses that matrix before any work).
pub fn run(lab: &Lab, inputs: &Inputs) -> Result<Section> {
    let section = |kernels, sweep, checks, notes, series| {
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
    };
    let info = &lab.gpu.info;
    if info.cc < NEEDS_CC {
        return Ok(section(vec![], None, vec![], vec![skip_line(info.cc)], vec![]));
    }
    let (rows, cols) = lab.sizes.transpose;
    if let Err(why) = check_matrix(rows, cols) {
        return Ok(section(vec![], None, vec![], vec![format!("skipped: {why}")], vec![]));
    }
    let n = rows * cols;
    ensure_free("the TMA demo", f32_bytes(&[n, n]))?;
    let input_host = reference::random_f32(n, 13);
    let transposed = reference::transpose(&input_host, rows, cols);
    let input = upload(&input_host)?;
    let mut output = poisoned::<f32>(n)?;
    let (in_addr, out_addr) = (input.as_device_ptr().as_raw(), output.as_device_ptr().as_raw());
    let map_in = spec(in_addr, rows, cols, TILE, Swizzle::None).upload()?;
    let map_out = spec(out_addr, rows, cols, TILE, Swizzle::None).upload()?;
    let map_out_t = spec(out_addr, cols, rows, TILE, Swizzle::None).upload()?;
    let (r, c) = (rows as u32, cols as u32);
    let bytes = 2.0 * 4.0 * n as f64;
    let size = format!("{rows}x{cols}");
    // Launches hold device addresses, not borrows: built before `reset` borrows the output.
    let copies = [
        (lsu::copy(&input, &mut output, r, c), Path::Lsu(4 * 4), "LSU copy: 4 floats per thread through registers"),
        (
            kernels::tma_bulk_copy(info.sms * BULK_BLOCKS, &input, &mut output, r * c, BULK_CHUNK),
            Path::Bulk(BULK_CHUNK, BULK_BLOCKS),
            "1-D cp.async.bulk: 16 KiB chunks through shared memory, 4 blocks per SM",
        ),
        (
            kernels::tma_copy(r, c, &map_in, &map_out),
            Path::Tma(TILE_BYTES),
            "2-D tensor copy: one 64x64 tile per block",
        ),
    ];
    let lsu_transpose = lsu::transpose_vectorized(&input, &mut output, r, c);
    let reset = || poison(&output);
    let timed = |launch: Launch, path: Path, lesson: &'static str, extra: &str, size: String, want: &[f32]| {
        let run = KernelRun {
            launch,
            lesson,
            prediction: String::new(),
            work: Work::global_bytes(bytes),
            size,
            reset: &reset,
        };
        let row = measure(lab, run, || Ok((verify::exact_f32(&download(&output)?, want), "exact")))?;
        Ok::<_, anyhow::Error>(KernelRow { prediction: path.in_flight(&row) + extra, ..row })
    };
    let mut kernels = Vec::new();
    for (launch, path, lesson) in copies {
        kernels.push(timed(launch, path, lesson, "", size.clone(), &input_host)?);
    }
    kernels.push(timed(
        lsu_transpose,
        Path::Lsu(16 * 4),
        "LSU transpose: 64x65 tile, 128-bit loads and stores",
        "; shared column read 2-way",
        size.clone(),
        &transposed,
    )?);
    let mut swizzle_rows = Vec::new();
    for sw in Swizzle::ALL {
        let mode = sw.mode();
        let map = spec(in_addr, rows, cols, box_cols(mode), sw).upload()?;
        let (plain, swizzled, ideal) = column_read_wavefronts(mode);
        let row = timed(
            kernels::tma_transpose(r, c, &map, &map_out_t, mode),
            Path::Tma(TILE_BYTES),
            "tensor-copy transpose: tiles in and out by TMA, transposed in shared memory",
            &format!("; float4 column read {}-way", swizzled / ideal),
            format!("{size} swizzle {}", sw.name()),
            &transposed,
        )?;
        swizzle_rows.push((
            sw,
            plain,
            swizzled,
            ideal,
            row.timing.median_ms,
            row.rate.value(),
            row.check.summary("exact"),
        ));
        kernels.push(row);
    }
    drop(output);
    kernels.extend(async_rungs(lab)?);
    let mut output = poisoned::<f32>(n)?;
    let (curve, curve_checks, curve_notes) = bulk_curve(lab, &input, &mut output, &input_host)?;
    let header = [
        "swizzle",
        "box (rows x f32)",
        "column read unswizzled",
        "with the map's swizzle",
        "tma_transpose ms",
        "GB/s",
        "check",
    ];
    let sweep_rows = swizzle_rows
        .iter()
        .map(|(sw, plain, swizzled, ideal, ms, gbs, check)| {
            vec![
                sw.name(),
                format!("64 x {}", box_cols(sw.mode())),
                format!("{}-way ({plain} wavefronts)", plain / ideal),
                format!("{}-way ({swizzled} wavefronts)", swizzled / ideal),
                format!("{ms:.3}"),
                format!("{gbs:.0}"),
                check.clone(),
            ]
        })
        .collect();
    let fastest = swizzle_rows.iter().map(|r| r.4).fold(f64::INFINITY, f64::min);
    let mut series = curve;
    series.push(Series::labelled(
        names::MEASURED,
        "swizzle mode",
        "tma_transpose time / fastest mode",
        swizzle_rows.iter().map(|r| (r.0.mode() as f64, r.4 / fastest, r.0.name())),
    ));
    series.push(Series::labelled(
        names::BANK_MODEL,
        "swizzle mode",
        "column read: wavefronts / ideal",
        swizzle_rows.iter().map(|r| (r.0.mode() as f64, (r.2 / r.3) as f64, r.0.name())),
    ));
    series.push(Series::labelled(
        UNSWIZZLED_MODEL,
        "swizzle mode",
        "column read: wavefronts / ideal",
        swizzle_rows.iter().map(|r| (r.0.mode() as f64, (r.1 / r.3) as f64, r.0.name())),
    ));
    let mut notes = goal_notes(&kernels, inputs.memcpy_gbs());
    notes.extend(curve_notes);
    Ok(section(
        kernels,
        Some((header.iter().map(|s| s.to_string()).collect(), sweep_rows)),
        curve_checks,
        notes,
        series,
    ))
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
    /// TMA tensor copies, bytes per block.
    Tma(u32),
    /// 1-D bulk copies: bytes per copy, blocks per SM set by the grid.
    Bulk(u32, u32),
}

impl Path {
    /// The table's cell: path, bytes per block, bytes in flight per SM at the row's blocks/SM.
    fn in_flight(self, row: &KernelRow) -> String {
        let driver = row.occupancy.active_blocks;
        let threads = row.shape.threads_per_block();
        let (what, per_block, blocks) = match self {
            Path::Lsu(per_thread) => ("plain loads to registers", per_thread * threads, driver),
            Path::SharedLoads(b) => ("plain loads to shared", b, driver),
            Path::CpAsync(b) => ("cp.async (B) + plain loads (A) to shared", b, driver),
            Path::Tma(b) => ("TMA tensor copies", b, driver),
            Path::Bulk(b, k) => ("TMA 1-D bulk copies", b, k),
        };
        format!(
            "{what}: {} KiB per block, {} KiB in flight per SM",
            per_block as f64 / 1024.0,
            (per_block * blocks) as f64 / 1024.0
        )
    }
}

/// SGEMM rungs 6 (plain loads into shared memory) and 7 (`cp.async`), at the run's first SGEMM
/// size, for the table of paths into shared memory; each step a block moves its `A` and `B`
/// tiles (`2 x 128 x 8` floats, 8 KiB) while it computes on the other stage.
fn async_rungs(lab: &Lab) -> Result<Vec<KernelRow>> {
    use super::sgemm::{self, Operands};
    use memlab_contracts::sgemm::{BK, TILE as GEMM_TILE};
    let Some(&size) = lab.sizes.sgemm.first() else { return Ok(vec![]) };
    let mut ops = Operands::new(size)?;
    let step = 2 * GEMM_TILE * BK * 4;
    let rungs = [
        (
            sgemm::kernels::sgemm_6_double_buffered as super::matmul::MatmulLaunch,
            Path::SharedLoads(step),
            "SGEMM rung 6: A and B tiles by plain loads into shared memory",
        ),
        (
            sgemm::kernels::sgemm_7_async_copy,
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
            work: sgemm::work(&ops, GEMM_TILE),
            size: ops.label(),
            reset: &|| poison(&ops.c),
        };
        let row = measure(lab, run, || ops.check())?;
        rows.push(KernelRow { prediction: path.in_flight(&row), ..row });
    }
    Ok(rows)
}

/// The swizzle chart's series of the bank model for the same boxes without swizzle.
pub const UNSWIZZLED_MODEL: &str = "bank model, same box unswizzled";

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

/// The 1-D bulk copy's bandwidth against bytes per copy, one series per blocks-per-SM count,
/// every point checked exactly; points the SM cannot hold (the driver's occupancy below the
/// blocks asked for) are left out and named in a note.
fn bulk_curve(
    lab: &Lab,
    input: &DeviceBuffer<f32>,
    output: &mut DeviceBuffer<f32>,
    want: &[f32],
) -> Result<(Vec<Series>, Vec<Check>, Vec<String>)> {
    let gpu = &lab.gpu;
    let n = input.len() as u32;
    let bytes = 2.0 * 4.0 * n as f64;
    let (mut series, mut checks, mut left_out) = (Vec::new(), Vec::new(), Vec::new());
    let mut best = (0.0f64, 0, 0);
    for k in BULK_BLOCKS_PER_SM {
        let mut points = Vec::new();
        for chunk in BULK_CHUNKS {
            let launch = kernels::tma_bulk_copy(gpu.info.sms * k, input, output, n, chunk);
            let smem = launch.shape.smem_bytes;
            if smem > gpu.info.smem_per_block {
                kernel::allow_dynamic_smem(gpu, launch.kernel, smem)?;
            }
            let fits = kernel::occupancy(gpu, launch.kernel, COPY_THREADS, smem)?.active_blocks;
            if fits < k {
                left_out.push(format!("{} KiB x {k}", chunk / 1024));
                continue;
            }
            poison(output)?;
            launch.enqueue(gpu)?;
            gpu.stream.synchronize().map_err(|e| anyhow::anyhow!("tma_bulk_copy: {}", crate::gpu::describe(e)))?;
            checks.push(verify::exact_f32(&download(output)?, want));
            let gbs = time(gpu, lab.sizes.repeats, || launch.enqueue(gpu))?.gbs(bytes);
            if gbs > best.0 {
                best = (gbs, chunk, k);
            }
            points.push((chunk as f64, gbs, format!("{} KiB", chunk / 1024)));
        }
        series.push(Series::labelled(&curve_series_name(k), "bytes per copy", "GB/s (read + written)", points));
    }
    let mut notes = vec![format!(
        "bulk-copy curve: best {:.0} GB/s at {} KiB per copy and {} blocks per SM ({} KiB in flight per SM); published (H800/H100): 95-96% of HBM peak only from 8-12 KiB per copy and 2-3 blocks per SM",
        best.0,
        best.1 / 1024,
        best.2,
        best.1 * best.2 / 1024
    )];
    if !left_out.is_empty() {
        notes.push(format!(
            "bulk-copy curve: left out (shared memory per SM cannot hold them): {}",
            left_out.join(", ")
        ));
    }
    Ok((series, checks, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_a_tensor_map_cannot_describe_are_refused_in_one_line() {
        assert!(check_matrix(8192, 8192).is_ok());
        assert!(check_matrix(4100, 4).is_ok());
        assert_eq!(
            check_matrix(8192, 1001).unwrap_err().to_string(),
            "a tensor map cannot describe 1001 columns of f32: the row pitch of 4004 bytes is not a multiple of 16 bytes (columns must be a multiple of 4)"
        );
        // The transposed output's rows are the input's columns: 1001 rows fail there.
        assert!(
            check_matrix(1001, 8192).unwrap_err().to_string().starts_with("a tensor map cannot describe 1001 columns")
        );
        assert_eq!(
            check_matrix(1, 1).unwrap_err().to_string(),
            "the 1-D bulk copy moves multiples of 16 bytes: 1x1 f32 is 4 bytes"
        );
        assert!(check_matrix(1 << 17, 1 << 16).unwrap_err().to_string().contains("32 bits"));
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
