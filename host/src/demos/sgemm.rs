//! The SGEMM ladder (kernels-gpu `sgemm`): each rung's TFLOP/s next to cuBLAS SGEMM (FP32, no
//! TF32) measured in the same run, after a full check of every rung on sizes that are not
//! multiples of any tile.

use anyhow::Result;
use cust::memory::DeviceBuffer;

use super::{
    KernelRow, KernelRun, Lab, Level, Section, Work, check_u32_elements, download, ensure_free, f32_bytes, measure,
    poison, poisoned, upload,
};
use crate::gpu::cublas::Cublas;
use crate::gpu::launch::{Arg, LaunchShape, launch};
use crate::gpu::timing::{Timing, time};
use crate::model::tiling::{MatmulShape, tiled_global_loads};
use crate::ptx::Ptx;
use crate::series::{Series, names};
use crate::verify::{self, Check};
use crate::{reference, refuse};

/// One rung: kernel, threads per block (one-dimensional except rung 1), `C` tile edge per
/// block, dynamic shared bytes, lesson.
#[derive(Debug, Clone, Copy)]
pub struct Rung {
    /// Entry point.
    pub kernel: &'static str,
    /// Threads per block `(x, y)`.
    pub block: (u32, u32),
    /// Each block computes a `tile x tile` tile of `C`.
    pub tile: usize,
    /// Dynamic shared memory per block, bytes (the kernel's doc comment).
    pub smem: u32,
    /// What the rung adds.
    pub lesson: &'static str,
}

impl Rung {
    /// The launch shape for an `m x n` result.
    pub fn shape(&self, m: usize, n: usize) -> LaunchShape {
        LaunchShape::covering(m, n, (self.tile, self.tile), self.block, self.smem)
    }
}

/// The rungs the loaded PTX has (a rung compiled only for newer targets, like rung 7's
/// `cp.async`, is missing from older PTX), and a note naming those it lacks (`None` when none).
pub fn available(ptx: &Ptx) -> (Vec<Rung>, Option<String>) {
    let names = crate::ptx::kernel_names(ptx.text);
    let (have, lack): (Vec<Rung>, Vec<Rung>) = RUNGS.iter().partition(|r| names.contains(&r.kernel));
    let note = (!lack.is_empty()).then(|| {
        let lack: Vec<&str> = lack.iter().map(|r| r.kernel).collect();
        format!("skipped {}: not compiled into the {} PTX this device runs", lack.join(", "), ptx.arch)
    });
    (have, note)
}

/// The ladder, bottom first. Rung 1 is the tiled matmul of the `matmul` demo.
pub const RUNGS: [Rung; 7] = [
    Rung {
        kernel: "matmul_tiled_32",
        block: (32, 32),
        tile: 32,
        smem: 8192,
        lesson: "1: block tiling in shared memory, one result per thread",
    },
    Rung {
        kernel: "sgemm_2_register_1d",
        block: (512, 1),
        tile: 64,
        smem: 4096,
        lesson: "2: 8 results per thread down a column (1D register blocking)",
    },
    Rung {
        kernel: "sgemm_3_register_2d",
        block: (256, 1),
        tile: 128,
        smem: 8192,
        lesson: "3: 8x8 results per thread (2D register blocking)",
    },
    Rung {
        kernel: "sgemm_4_vectorized",
        block: (256, 1),
        tile: 128,
        smem: 8192,
        lesson: "4: 128-bit global and shared loads, A transposed in shared memory",
    },
    Rung {
        kernel: "sgemm_5_conflict_free",
        block: (256, 1),
        tile: 128,
        smem: 8320,
        lesson: "5: conflict-free shared layout (split 4x4 groups, padded A tile)",
    },
    Rung {
        kernel: "sgemm_6_double_buffered",
        block: (256, 1),
        tile: 128,
        smem: 16640,
        lesson: "6: two shared stages (next loads overlap FMAs), warp tiling",
    },
    Rung {
        kernel: "sgemm_7_async_copy",
        block: (256, 1),
        tile: 128,
        smem: 16640,
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

    /// The kernel parameters `(a, b, c, m, n, k)`.
    pub fn args(&self) -> [Arg; 6] {
        let (m, n, k) = self.size;
        [
            Arg::from(&self.a),
            Arg::from(&self.b),
            Arg::from(&self.c),
            Arg::U32(m as u32),
            Arg::U32(n as u32),
            Arg::U32(k as u32),
        ]
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

/// Times cuBLAS SGEMM on `ops` after checking its result; `None` without cuBLAS.
///
/// # Errors
/// A cuBLAS failure or a wrong cuBLAS result.
pub fn time_cublas(lab: &Lab, cublas: Option<&Cublas>, ops: &mut Operands) -> Result<Option<Timing>> {
    let Some(cublas) = cublas else { return Ok(None) };
    poison(&mut ops.c)?;
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
pub fn run(lab: &mut Lab) -> Result<Section> {
    let cublas = Cublas::open(&lab.gpu)?;
    let (rungs, skipped) = available(lab.gpu.ptx);
    let mut checks = Vec::new();
    for size in ODD_SIZES {
        let mut ops = Operands::new(size)?;
        for rung in &rungs {
            poison(&mut ops.c)?;
            let (m, n, _) = size;
            launch(&lab.gpu, rung.kernel, &rung.shape(m, n), &ops.args())?;
            checks.push(ops.check()?.0);
        }
    }
    let peak = super::roofline::peak_fp32(&lab.gpu.info).map(|p| p / 1e12);
    let mut kernels: Vec<KernelRow> = Vec::new();
    let mut table: Vec<Vec<String>> = rungs.iter().map(|r| vec![r.kernel.to_string()]).collect();
    table.push(vec!["cuBLAS SGEMM (FP32)".into()]);
    let mut header = vec!["kernel".to_string()];
    // cuBLAS's rate per size, drawn across the ladder chart.
    let mut references = Vec::new();
    for &size in &lab.sizes.sgemm.clone() {
        let (m, n, k) = size;
        header.extend([format!("TFLOP/s {m}x{n}x{k}"), "% of cuBLAS".into()]);
        let mut ops = Operands::new(size)?;
        let cublas_tflops = time_cublas(lab, cublas.as_ref(), &mut ops)?.map(|t| t.tflops(ops.flop()));
        for (rung, row) in rungs.iter().zip(&mut table) {
            poison(&mut ops.c)?;
            let loads = tiled_global_loads(MatmulShape::new(m as u64, n as u64, k as u64), rung.tile as u64);
            let prediction = format!("{m}x{n}x{k}: {loads:.3e} global loads");
            let args = ops.args();
            // Bytes as the tiling model counts them: every global load plus the writes of C.
            let work = Work { flop: ops.flop(), bytes: 4.0 * (loads + (m * n) as u64) as f64, level: Level::Global };
            let run = KernelRun {
                kernel: rung.kernel,
                lesson: rung.lesson,
                prediction,
                shape: rung.shape(m, n),
                args: &args,
                work,
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
        name: "sgemm",
        title: "An SGEMM ladder up to cuBLAS: C = A * B, f32".into(),
        lesson: "Each rung keeps more of the product close to the FMA units: shared-memory tiles, then results blocked in registers, then wider loads, a conflict-free layout, and loads overlapped with arithmetic.".into(),
        kernels,
        sweep: Some((header, table)),
        checks,
        notes,
        series: vec![Series::labelled(names::REFERENCE, "", "TFLOP/s", references)],
    })
}
