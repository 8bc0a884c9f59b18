//! The SGEMM ladder (kernels-gpu `sgemm`): each rung's TFLOP/s next to cuBLAS SGEMM (FP32, no
//! TF32) measured in the same run, after a full check of every rung on sizes that are not
//! multiples of any tile.

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::matmul::TILE_32;
use memlab_contracts::sgemm::{A_PITCH, A_PITCH_PADDED, RUNG2_THREADS, RUNG2_TILE, STAGES, THREADS, TILE, smem_bytes};

use super::matmul::{self, MatmulLaunch};
use super::{
    Inputs, KernelRow, KernelRun, Lab, Level, Section, Work, check_u32_elements, download, ensure_free, f32_bytes,
    measure, poison, poisoned, upload,
};
use crate::gpu::cublas::Cublas;
use crate::gpu::launch::{Entry, Launch, LaunchShape};
use crate::gpu::timing::{Timing, time};
use crate::model::tiling::{MatmulShape, tiled_global_loads};
use crate::ptx::Ptx;
use crate::series::{Series, names};
use crate::verify::{self, Check};
use crate::{reference, refuse};

/// The shape of a rung: one-dimensional blocks of `threads`, one per `tile x tile` tile of the
/// `m x n` result.
fn rung_shape(m: u32, n: u32, tile: u32, threads: u32, smem: u32) -> LaunchShape {
    LaunchShape::covering(m as usize, n as usize, (tile as usize, tile as usize), (threads, 1), smem)
}

crate::kernels! {
    /// Rung 2, `sgemm_2_register_1d`: `C = A * B` (`a` `m x k`, `b` `k x n`, `c` `m x n`,
    /// row-major f32); 512 threads per `64 x 64` tile, 4096 B of shared memory.
    fn sgemm_2_register_1d(; a: &DeviceBuffer<f32>, b: &DeviceBuffer<f32>, c: &mut DeviceBuffer<f32>, m: u32, n: u32, k: u32)
        => rung_shape(m, n, RUNG2_TILE, RUNG2_THREADS, smem_bytes(RUNG2_TILE, RUNG2_TILE, 1));
    /// Rung 3, `sgemm_3_register_2d`: 256 threads per `128 x 128` tile, 8192 B shared.
    fn sgemm_3_register_2d(; a: &DeviceBuffer<f32>, b: &DeviceBuffer<f32>, c: &mut DeviceBuffer<f32>, m: u32, n: u32, k: u32)
        => rung_shape(m, n, TILE, THREADS, smem_bytes(TILE, TILE, 1));
    /// Rung 4, `sgemm_4_vectorized`: as rung 3, `A` transposed in shared memory (8192 B).
    fn sgemm_4_vectorized(; a: &DeviceBuffer<f32>, b: &DeviceBuffer<f32>, c: &mut DeviceBuffer<f32>, m: u32, n: u32, k: u32)
        => rung_shape(m, n, TILE, THREADS, smem_bytes(A_PITCH, TILE, 1));
    /// Rung 5, `sgemm_5_conflict_free`: as rung 4, `A` tile pitch 132 (8320 B).
    fn sgemm_5_conflict_free(; a: &DeviceBuffer<f32>, b: &DeviceBuffer<f32>, c: &mut DeviceBuffer<f32>, m: u32, n: u32, k: u32)
        => rung_shape(m, n, TILE, THREADS, smem_bytes(A_PITCH_PADDED, TILE, 1));
    /// Rung 6, `sgemm_6_double_buffered`: as rung 5, two stages (16640 B).
    fn sgemm_6_double_buffered(; a: &DeviceBuffer<f32>, b: &DeviceBuffer<f32>, c: &mut DeviceBuffer<f32>, m: u32, n: u32, k: u32)
        => rung_shape(m, n, TILE, THREADS, smem_bytes(A_PITCH_PADDED, TILE, STAGES));
    /// Rung 7, `sgemm_7_async_copy`: as rung 6 (16640 B), `B` by `cp.async`; in the sm_80 and
    /// sm_90 PTX only. Buffers 16-byte aligned (every device allocation is).
    fn sgemm_7_async_copy(; a: &DeviceBuffer<f32>, b: &DeviceBuffer<f32>, c: &mut DeviceBuffer<f32>, m: u32, n: u32, k: u32)
        => rung_shape(m, n, TILE, THREADS, smem_bytes(A_PITCH_PADDED, TILE, STAGES));
}

/// One rung: its entry and typed launch, the `C` tile edge per block (for the tiling model),
/// and what it adds.
#[derive(Debug, Clone, Copy)]
pub struct Rung {
    /// The kernel's entry.
    pub entry: Entry,
    /// Its typed launch.
    pub launch: MatmulLaunch,
    /// Each block computes a `tile x tile` tile of `C`.
    pub tile: u32,
    /// What the rung adds.
    pub lesson: &'static str,
}

/// The rungs the loaded PTX has (a rung compiled only for newer targets, like rung 7's
/// `cp.async`, is missing from older PTX), and a note naming those it lacks (`None` when none).
pub fn available(ptx: &Ptx) -> (Vec<Rung>, Option<String>) {
    let names = crate::ptx::kernel_names(ptx.text);
    let (have, lack): (Vec<Rung>, Vec<Rung>) = RUNGS.iter().partition(|r| names.contains(&r.entry.name));
    let note = (!lack.is_empty()).then(|| {
        let lack: Vec<&str> = lack.iter().map(|r| r.entry.name).collect();
        format!("skipped {}: not compiled into the {} PTX this device runs", lack.join(", "), ptx.arch)
    });
    (have, note)
}

/// The ladder, bottom first. Rung 1 is the tiled matmul of the `matmul` demo.
pub const RUNGS: [Rung; 7] = [
    Rung {
        entry: matmul::entry::matmul_tiled_32,
        launch: matmul::kernels::matmul_tiled_32,
        tile: TILE_32,
        lesson: "1: block tiling in shared memory, one result per thread",
    },
    Rung {
        entry: entry::sgemm_2_register_1d,
        launch: kernels::sgemm_2_register_1d,
        tile: RUNG2_TILE,
        lesson: "2: 8 results per thread down a column (1D register blocking)",
    },
    Rung {
        entry: entry::sgemm_3_register_2d,
        launch: kernels::sgemm_3_register_2d,
        tile: TILE,
        lesson: "3: 8x8 results per thread (2D register blocking)",
    },
    Rung {
        entry: entry::sgemm_4_vectorized,
        launch: kernels::sgemm_4_vectorized,
        tile: TILE,
        lesson: "4: 128-bit global and shared loads, A transposed in shared memory",
    },
    Rung {
        entry: entry::sgemm_5_conflict_free,
        launch: kernels::sgemm_5_conflict_free,
        tile: TILE,
        lesson: "5: conflict-free shared layout (split 4x4 groups, padded A tile)",
    },
    Rung {
        entry: entry::sgemm_6_double_buffered,
        launch: kernels::sgemm_6_double_buffered,
        tile: TILE,
        lesson: "6: two shared stages (next loads overlap FMAs), warp tiling",
    },
    Rung {
        entry: entry::sgemm_7_async_copy,
        launch: kernels::sgemm_7_async_copy,
        tile: TILE,
        lesson: "7: rung 6 with B copied global-to-shared by cp.async (sm_80+ PTX)",
    },
];

/// Sizes every rung is checked on, element by element: not multiples of 4 (scalar paths), and
/// multiples of 4 that are not multiples of the tiles (128-bit interior, guarded edges), with
/// `k` not a multiple of the depth step 8 (a last step that is partial inside full tiles).
pub const ODD_SIZES: [(usize, usize, usize); 2] = [(517, 389, 263), (388, 260, 204)];

/// Random operands of one product, on the host and the device, and a poisoned result.
pub struct Operands {
    /// `A`, `m x k`, on the host.
    pub a_host: Vec<f32>,
    /// `B`, `k x n`, on the host.
    pub b_host: Vec<f32>,
    /// `A` on the device.
    pub a: DeviceBuffer<f32>,
    /// `B` on the device.
    pub b: DeviceBuffer<f32>,
    /// `C`, `m x n`, poisoned.
    pub c: DeviceBuffer<f32>,
    /// `(m, n, k)`.
    pub size: (usize, usize, usize),
}

impl Operands {
    /// Allocates and fills the operands of an `m x n x k` product.
    ///
    /// # Errors
    /// Not enough device memory, or an upload failure.
    pub fn new((m, n, k): (usize, usize, usize)) -> Result<Operands> {
        check_u32_elements("the sgemm operands", &[m * k, k * n, m * n])?;
        ensure_free("the sgemm operands", f32_bytes(&[m * k, k * n, m * n]))?;
        let (a_host, b_host) = (reference::random_f32(m * k, 21), reference::random_f32(k * n, 22));
        Ok(Operands { a: upload(&a_host)?, b: upload(&b_host)?, c: poisoned(m * n)?, a_host, b_host, size: (m, n, k) })
    }

    /// The launch of `kernel` on these operands.
    pub fn launch(&mut self, kernel: MatmulLaunch) -> Launch {
        let (m, n, k) = self.size;
        kernel(&self.a, &self.b, &mut self.c, m as u32, n as u32, k as u32)
    }

    /// The problem size as tables name it, `MxNxK`.
    pub fn label(&self) -> String {
        let (m, n, k) = self.size;
        format!("{m}x{n}x{k}")
    }

    /// Checks `C` against the f64 reference ([`verify::matmul_auto`]'s rule). Returns the check
    /// and what it compared.
    ///
    /// # Errors
    /// A failed download.
    pub fn check(&self) -> Result<(Check, &'static str)> {
        Ok(verify::matmul_auto(&self.a_host, &self.b_host, &download(&self.c)?, self.size))
    }

    /// `2 m n k`.
    pub fn flop(&self) -> f64 {
        let (m, n, k) = self.size;
        2.0 * (m * n * k) as f64
    }
}

/// The work of a rung of `tile x tile` blocks on `ops`: its FLOP, and bytes as the tiling model
/// counts them (every global load plus the writes of C).
pub fn work(ops: &Operands, tile: u32) -> Work {
    let (m, n, k) = ops.size;
    let loads = tiled_global_loads(MatmulShape::new(m as u64, n as u64, k as u64), tile as u64);
    Work { flop: ops.flop(), bytes: 4.0 * (loads + (m * n) as u64) as f64, level: Level::Global }
}

/// Times cuBLAS SGEMM on `ops` after checking its result; `None` without cuBLAS.
///
/// # Errors
/// A cuBLAS failure or a wrong cuBLAS result.
pub fn time_cublas(lab: &Lab, cublas: Option<&Cublas>, ops: &Operands) -> Result<Option<Timing>> {
    let Some(cublas) = cublas else { return Ok(None) };
    poison(&ops.c)?;
    cublas.sgemm(&ops.a, &ops.b, &ops.c, ops.size)?;
    lab.gpu.stream.synchronize().map_err(|e| anyhow::anyhow!(crate::gpu::describe(e)))?;
    let (check, kind) = ops.check()?;
    if !check.passed() {
        refuse!("cuBLAS SGEMM returned a wrong result: {}", check.summary(kind));
    }
    Ok(Some(time(&lab.gpu, lab.sizes.repeats, || cublas.sgemm(&ops.a, &ops.b, &ops.c, ops.size))?))
}

/// The note for a run without cuBLAS.
pub const NO_CUBLAS: &str = "cuBLAS not found: skipped (set MEMLAB_CUBLAS=/path/to/libcublas.so to point at one)";

/// Runs every rung on [`ODD_SIZES`] (checked, untimed) and on each of `lab.sizes.sgemm`
/// (checked, timed, next to cuBLAS).
pub fn run(lab: &Lab, _: &Inputs) -> Result<Section> {
    let cublas = Cublas::open(&lab.gpu)?;
    let (rungs, skipped) = available(lab.gpu.ptx);
    let mut checks = Vec::new();
    for size in ODD_SIZES {
        let mut ops = Operands::new(size)?;
        for rung in &rungs {
            poison(&ops.c)?;
            ops.launch(rung.launch).enqueue(&lab.gpu)?;
            checks.push(ops.check()?.0);
        }
    }
    let peak = super::roofline::peak_fp32(&lab.gpu.info, None).map(|p| p / 1e12);
    let mut kernels: Vec<KernelRow> = Vec::new();
    let mut table: Vec<Vec<String>> = rungs.iter().map(|r| vec![r.entry.name.to_string()]).collect();
    table.push(vec!["cuBLAS SGEMM (FP32)".into()]);
    let mut header = vec!["kernel".to_string()];
    // cuBLAS's rate per size, drawn across the ladder chart.
    let mut references = Vec::new();
    for &size in &lab.sizes.sgemm {
        let (m, n, k) = size;
        header.extend([format!("TFLOP/s {m}x{n}x{k}"), "% of cuBLAS".into()]);
        let mut ops = Operands::new(size)?;
        let cublas_tflops = time_cublas(lab, cublas.as_ref(), &ops)?.map(|t| t.tflops(ops.flop()));
        for (rung, row) in rungs.iter().zip(&mut table) {
            let loads = tiled_global_loads(MatmulShape::new(m as u64, n as u64, k as u64), rung.tile as u64);
            let prediction = format!("{m}x{n}x{k}: {loads:.3e} global loads");
            let work = work(&ops, rung.tile);
            let launch = ops.launch(rung.launch);
            let run = KernelRun {
                launch,
                lesson: rung.lesson,
                prediction,
                work,
                size: ops.label(),
                reset: &|| poison(&ops.c),
            };
            let kernel_row = measure(lab, run, || ops.check())?;
            let tflops = kernel_row.rate.value();
            row.extend([
                format!("{tflops:.2}"),
                cublas_tflops.map_or("-".into(), |c| format!("{:.0}%", 100.0 * tflops / c)),
            ]);
            kernels.push(kernel_row);
        }
        if let Some(c) = cublas_tflops {
            references.push((0.0, c, format!("cuBLAS {m}x{n}x{k}")));
        }
        let cublas_row = table.last_mut().unwrap();
        cublas_row.extend([cublas_tflops.map_or("skipped".into(), |c| format!("{c:.2}")), "100%".into()]);
    }
    let mut notes = vec![format!(
        "every rung also checked element by element on {}",
        ODD_SIZES.map(|(m, n, k)| format!("{m}x{n}x{k}")).join(" and ")
    )];
    notes.extend(skipped);
    notes.push(match &cublas {
        Some(c) => format!("cuBLAS from {}, CUBLAS_DEFAULT_MATH (no TF32)", c.path.display()),
        None => NO_CUBLAS.into(),
    });
    if let Some(peak) = peak {
        notes.push(format!("FP32 peak at the driver's clock: {peak:.1} TFLOP/s (SMs x FP32 lanes x 2 x clock)"));
    }
    Ok(Section {
        name: "sgemm".into(),
        title: "An SGEMM ladder up to cuBLAS: C = A * B, f32".into(),
        lesson: "Each rung keeps more of the product close to the FMA units: shared-memory tiles, then results blocked in registers, then wider loads, a conflict-free layout, and loads overlapped with arithmetic.".into(),
        kernels,
        sweep: Some((header, table)),
        checks,
        notes,
        series: vec![Series::labelled(names::REFERENCE, "", "TFLOP/s", references)],
    })
}
