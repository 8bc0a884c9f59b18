//! The tensor-core ladder (kernels-gpu `tensor`, the sm_90a PTX): `C = A * B^T` in BF16 with
//! FP32 accumulation, each rung checked against the f64 reference and timed beside cuBLAS BF16
//! (`cublasGemmEx`, `CUBLAS_COMPUTE_32F`) in the same run. Operands and tiles:
//! `memlab_contracts::tensor`. On a device that is not cc 9.0 the lesson is skipped with one
//! line: sm_90a PTX loads nowhere else.

use std::cell::RefCell;

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::tensor::{
    BK, ELEMENT_BYTES, MULTICAST, PERSISTENT, PIPELINED, Rung, SPECIALIZED, STAGE_SWEEP, WGMMA, WIDE, default_stages,
    tiles,
};

use super::{Inputs, KernelRow, KernelRun, Lab, Level, Section, Work, check_u32_elements, ensure_free, measure};
use crate::gpu::cublas::Cublas;
use crate::gpu::launch::{Launch, LaunchShape};
use crate::gpu::staging::Staging;
use crate::gpu::tensor_map::{Element, L2Promotion, MapSlot, Swizzle, TiledSpec};
use crate::gpu::timing::{Timing, time};
use crate::series::{Series, names};
use crate::verify::{self, Check, MatmulStreamed, Precision};
use crate::{ptx, reference, refuse};

/// The launch shape of `rung` over an `m x n` product with `stages` stages.
fn rung_shape(rung: &Rung, m: u32, n: u32, stages: u32) -> LaunchShape {
    LaunchShape { grid: rung.grid(m, n), block: (rung.threads(), 1), smem_bytes: rung.smem_bytes(stages) }
}

crate::kernels! {
    /// Rung 1, `tensor_1_wgmma`: `C = A * B^T` (`a`, `b` the slots of BF16 maps of `A`, `m x k`,
    /// and `B`, `n x k`; `c` `m x n` BF16); 128 threads per `64 x 128` tile, one stage.
    fn tensor_1_wgmma(; a: MapSlot, b: MapSlot, c: &mut DeviceBuffer<u16>, m: u32, n: u32, k: u32)
        => rung_shape(&WGMMA, m, n, 1);
    /// Rung 2, `tensor_2_pipelined`: 256 threads per `64 x 128` tile, `stages` stages.
    fn tensor_2_pipelined(; a: MapSlot, b: MapSlot, c: &mut DeviceBuffer<u16>, m: u32, n: u32, k: u32, stages: u32)
        => rung_shape(&PIPELINED, m, n, stages);
    /// Rung 3, `tensor_3_specialized`: 384 threads per `128 x 128` tile.
    fn tensor_3_specialized(; a: MapSlot, b: MapSlot, c: &mut DeviceBuffer<u16>, m: u32, n: u32, k: u32, stages: u32)
        => rung_shape(&SPECIALIZED, m, n, stages);
    /// Rung 4, `tensor_4_wide`: 384 threads per `128 x 256` tile.
    fn tensor_4_wide(; a: MapSlot, b: MapSlot, c: &mut DeviceBuffer<u16>, m: u32, n: u32, k: u32, stages: u32)
        => rung_shape(&WIDE, m, n, stages);
    /// Rung 5, `tensor_5_multicast`: as rung 4, in clusters of `1 x 2`.
    fn tensor_5_multicast(; a: MapSlot, b: MapSlot, c: &mut DeviceBuffer<u16>, m: u32, n: u32, k: u32, stages: u32)
        => rung_shape(&MULTICAST, m, n, stages), in clusters (1, MULTICAST.cluster);
    /// Rung 6, `tensor_6_persistent`: as rung 4 on `min(sms, tiles)` persistent blocks.
    fn tensor_6_persistent(sms: u32; a: MapSlot, b: MapSlot, c: &mut DeviceBuffer<u16>, m: u32, n: u32, k: u32, stages: u32)
        => persistent_shape(sms, m, n, stages);
}

/// Rung 6's shape: one block per SM, or per tile when there are fewer tiles.
fn persistent_shape(sms: u32, m: u32, n: u32, stages: u32) -> LaunchShape {
    let (rows, cols) = tiles(&PERSISTENT, m, n);
    let blocks = sms.min(rows.saturating_mul(cols)).max(1);
    LaunchShape { grid: (blocks, 1), ..rung_shape(&PERSISTENT, m, n, stages) }
}

/// A rung's typed launch on a device of `sms` SMs with its stages (rung 1 has one stage by
/// design, and only rung 6 sizes its grid by the SMs).
type TensorLaunch = fn(u32, MapSlot, MapSlot, &mut DeviceBuffer<u16>, u32, u32, u32, u32) -> Launch;

/// One step of the ladder: its contract, launch and lesson.
struct Step {
    rung: &'static Rung,
    launch: TensorLaunch,
    lesson: &'static str,
}

/// The ladder's steps, in the order of `memlab_contracts::tensor::LADDER`.
const STEPS: [Step; 6] = [
    Step {
        rung: &WGMMA,
        launch: |_, a, b, c, m, n, k, _| kernels::tensor_1_wgmma(a, b, c, m, n, k),
        lesson: "1: wgmma from TMA-filled, 128B-swizzled shared memory; one stage: copy and math take turns",
    },
    Step {
        rung: &PIPELINED,
        launch: |_, a, b, c, m, n, k, stages| kernels::tensor_2_pipelined(a, b, c, m, n, k, stages),
        lesson: "2: a producer warpgroup and an mbarrier ring (full: TMA bytes, empty: released): loads in flight behind the math",
    },
    Step {
        rung: &SPECIALIZED,
        launch: |_, a, b, c, m, n, k, stages| kernels::tensor_3_specialized(a, b, c, m, n, k, stages),
        lesson: "3: two consumer warpgroups share each B tile; setmaxnreg moves the producer's registers to them (40 / 232)",
    },
    Step {
        rung: &WIDE,
        launch: |_, a, b, c, m, n, k, stages| kernels::tensor_4_wide(a, b, c, m, n, k, stages),
        lesson: "4: 128x256 tiles (m64n256k16): fewer bytes loaded per FLOP than 128x128",
    },
    Step {
        rung: &MULTICAST,
        launch: |_, a, b, c, m, n, k, stages| kernels::tensor_5_multicast(a, b, c, m, n, k, stages),
        lesson: "5: clusters of 2 along m: each block loads half of the shared B tile and multicasts it to both",
    },
    Step {
        rung: &PERSISTENT,
        launch: kernels::tensor_6_persistent,
        lesson: "6: one block per SM walks the tiles in bands of 8 rows: the next tile's loads overlap this one's stores",
    },
];

/// Seeds of the ladder's `A` and `B` ([`reference::input_bf16`]).
const SEEDS: (u64, u64) = (31, 32);

/// Random BF16 operands of one product on the device, each row padded to the pitch a tensor map
/// can describe (zeros past `k`), and a poisoned result. The host holds no copy of them: the
/// checks draw their rows and columns from the same generator.
pub struct Operands {
    /// `A`, `m x pitch`.
    a: DeviceBuffer<u16>,
    /// `B`, `n x pitch`.
    b: DeviceBuffer<u16>,
    /// `C`, `m x n`, poisoned (NaN).
    c: DeviceBuffer<u16>,
    /// `(m, n, k)`.
    size: (usize, usize, usize),
    /// Elements per row of `A` and `B`: `k` rounded up to 16 bytes.
    pitch: usize,
    staging: RefCell<Staging<u16>>,
}

impl Operands {
    /// Allocates, fills and uploads the operands of an `m x n x k` product.
    ///
    /// # Errors
    /// Not enough device memory, more than `u32::MAX` elements, or an upload failure.
    pub fn new(lab: &Lab, (m, n, k): (usize, usize, usize)) -> Result<Operands> {
        let pitch = Element::Bf16.padded_pitch(k as u64) as usize;
        check_u32_elements("the tensor ladder's operands", &[m * pitch, n * pitch, m * n])?;
        ensure_free("the tensor ladder's operands", ELEMENT_BYTES as usize * (m * pitch + n * pitch + m * n))?;
        let mut staging = Staging::new((m * pitch).max(n * pitch).max(m * n))?;
        let mut buffers = Vec::new();
        for (rows, seed) in [(m, SEEDS.0), (n, SEEDS.1)] {
            let buf = super::poisoned::<u16>(rows * pitch)?;
            staging.upload_pitched(&lab.gpu, &buf, (k, pitch), 0, |i| reference::input_bf16(seed, i))?;
            buffers.push(buf);
        }
        let b = buffers.pop().expect("two buffers");
        let a = buffers.pop().expect("two buffers");
        Ok(Operands { a, b, c: super::poisoned(m * n)?, size: (m, n, k), pitch, staging: RefCell::new(staging) })
    }

    /// The tensor map of `A` (`rows = m`) or `B` (`rows = n`) with a box of `box_rows x 64`.
    fn map(&self, lab: &Lab, buf: &DeviceBuffer<u16>, rows: usize, box_rows: u32) -> Result<MapSlot> {
        lab.place_map(&TiledSpec {
            address: buf.as_device_ptr().as_raw(),
            element: Element::Bf16,
            rows: rows as u64,
            cols: self.size.2 as u64,
            pitch: self.pitch as u64,
            box_rows,
            box_cols: BK,
            swizzle: Swizzle::B128,
            l2_promotion: L2Promotion::B256,
        })
    }

    /// The launch of `step` on these operands with `stages` stages.
    fn launch(&mut self, lab: &Lab, step: &Step, stages: u32) -> Result<Launch> {
        let (m, n, k) = self.size;
        let a = self.map(lab, &self.a, m, step.rung.bm())?;
        let b = self.map(lab, &self.b, n, step.rung.b_box_rows())?;
        Ok((step.launch)(lab.gpu.info.sms, a, b, &mut self.c, m as u32, n as u32, k as u32, stages))
    }

    /// Checks `C` against the f64 reference with the BF16 tolerance ([`verify::matmul_samples`]'s
    /// rule for how much). Returns the check and what it compared.
    fn check(&self, lab: &Lab) -> Result<(Check, &'static str)> {
        let (m, n, k) = self.size;
        let (samples, what) = verify::matmul_samples(self.size);
        let a = |i: usize| reference::bf16_value(reference::input_bf16(SEEDS.0, i));
        // The reference reads `B` as `k x n`: element `p n + j` is row `j`, column `p` of `B`.
        let b = |i: usize| reference::bf16_value(reference::input_bf16(SEEDS.1, (i % n) * k + i / n));
        let mut check = MatmulStreamed::new(Precision::Bf16, (m, n, k), (samples, verify::SAMPLE_SEED), a, b);
        self.staging.borrow_mut().download(&lab.gpu, &self.c, |_, chunk| {
            let values: Vec<f32> = chunk.iter().map(|&v| reference::bf16_value(v)).collect();
            check.chunk(&values);
        })?;
        Ok((check.finish(), what))
    }

    /// `2 m n k`.
    fn flop(&self) -> f64 {
        let (m, n, k) = self.size;
        2.0 * (m * n * k) as f64
    }

    /// `MxNxK`.
    fn label(&self) -> String {
        let (m, n, k) = self.size;
        format!("{m}x{n}x{k}")
    }
}

/// Host bytes [`Operands`] of an `m x n x k` product hold at once: the pinned staging and the
/// rows and columns a check compares, as f32.
pub fn host_bytes((m, n, k): (usize, usize, usize)) -> usize {
    let pitch = Element::Bf16.padded_pitch(k as u64) as usize;
    let staging = 2 * (m * pitch).max(n * pitch).max(m * n).min(Staging::<u16>::chunk_len());
    let (rows, cols) = verify::sample_grid((m, n), verify::matmul_samples((m, n, k)).0);
    staging + 4 * (rows + cols) * k + 4 * Staging::<u16>::chunk_len()
}

/// Bytes the SMs read from L2 for `rung` over an `m x n x k` product, as the tiling model
/// counts them: every block reads its `bm x k` slice of `A` and, per cluster, the `bn x k` slice
/// of `B` once (multicast), plus the writes of `C`.
pub fn l2_bytes(rung: &Rung, (m, n, k): (usize, usize, usize)) -> f64 {
    let (gx, gy) = rung.grid(m as u32, n as u32);
    let steps = k.div_ceil(BK as usize) as f64;
    let per_block = (rung.bm() + rung.bn / rung.cluster) as f64 * BK as f64 * ELEMENT_BYTES as f64;
    f64::from(gx) * f64::from(gy) * steps * per_block + (m * n) as f64 * ELEMENT_BYTES as f64
}

/// Checks and times `step` on `ops` with `stages` stages through [`measure`] (and so against its
/// twin in `bench`).
fn measure_step(lab: &Lab, step: &Step, ops: &mut Operands, stages: u32) -> Result<KernelRow> {
    let bytes = l2_bytes(step.rung, ops.size);
    let prediction = format!("{:.3} B/FLOP from L2 ({stages} stages)", bytes / ops.flop());
    let work = Work { flop: ops.flop(), bytes, level: Level::Global };
    let launch = ops.launch(lab, step, stages)?;
    let c = &ops.c;
    let run =
        KernelRun { launch, lesson: step.lesson, prediction, work, size: ops.label(), reset: &|| super::poison(c) };
    measure(lab, run, || ops.check(lab))
}

/// Times cuBLAS BF16 on `ops` after checking its result; `None` without cuBLAS.
fn time_cublas(lab: &Lab, cublas: Option<&Cublas>, ops: &Operands) -> Result<Option<Timing>> {
    let Some(cublas) = cublas else { return Ok(None) };
    super::poison(&ops.c)?;
    cublas.gemm_bf16(&ops.a, &ops.b, &ops.c, ops.size, ops.pitch)?;
    lab.gpu.stream.synchronize().map_err(|e| anyhow::anyhow!(crate::gpu::describe(e)))?;
    let (check, kind) = ops.check(lab)?;
    if !check.passed() {
        refuse!("cuBLAS GemmEx (BF16) returned a wrong result: {}", check.summary(kind));
    }
    Ok(Some(time(&lab.gpu, lab.sizes.repeats, || cublas.gemm_bf16(&ops.a, &ops.b, &ops.c, ops.size, ops.pitch))?))
}

/// The lesson's note for a device without sm_90a.
fn skipped(cc: (u32, u32)) -> String {
    format!(
        "tensor ladder skipped: its kernels are sm_90a PTX (wgmma, setmaxnreg), which loads on cc 9.0 only; this device is cc {}.{}",
        cc.0, cc.1
    )
}

/// Checks every rung at the odd sizes (every element), then times each at each of
/// `lab.sizes.tensor` beside cuBLAS BF16, and rung 2 over [`STAGE_SWEEP`] at the first size.
pub fn run(lab: &Lab, _: &Inputs) -> Result<Section> {
    let mut section = Section {
        name: "tensor".into(),
        title: "Tensor cores and the Hopper pipeline: C = A * B^T, BF16 in, FP32 accumulation".into(),
        lesson: "TMA copies tiles into swizzled shared memory, wgmma reads them from there, and mbarriers pace the stages: each rung hides a wait or removes bytes the SMs read from L2.".into(),
        ..Section::default()
    };
    if !ptx::runs_tensor(lab.gpu.info.cc) {
        section.notes.push(skipped(lab.gpu.info.cc));
        return Ok(section);
    }
    // Load the module first, so that every map placed below lands in it.
    lab.gpu.tensor_module(WGMMA.name)?;
    let cublas = lab.phases.step("open cuBLAS", || Cublas::open(&lab.gpu))?;
    for size in super::sanitizer::odd_sizes(lab) {
        let mut ops = Operands::new(lab, size)?;
        for step in &STEPS {
            super::poison(&ops.c)?;
            ops.launch(lab, step, default_stages(step.rung))?.enqueue(&lab.gpu)?;
            section.checks.push(ops.check(lab)?.0);
        }
    }
    let mut header = vec!["kernel".to_string()];
    let mut table: Vec<Vec<String>> = STEPS.iter().map(|s| vec![s.rung.name.to_string()]).collect();
    table.push(vec!["cuBLAS GemmEx (BF16)".into()]);
    let mut references = Vec::new();
    for (i, &size) in lab.sizes.tensor.iter().enumerate() {
        let mut ops = lab.phases.step("operands", || Operands::new(lab, size))?;
        header.extend([format!("TFLOP/s {}", ops.label()), "x cuBLAS".into()]);
        let reference = lab.phases.step("cuBLAS", || time_cublas(lab, cublas.as_ref(), &ops))?;
        let reference = reference.map(|t| t.tflops(ops.flop()));
        let share = |t: f64| reference.map_or("-".into(), |c| format!("{:.2}", t / c));
        for (step, row) in STEPS.iter().zip(&mut table) {
            let kernel = measure_step(lab, step, &mut ops, default_stages(step.rung))?;
            row.extend([format!("{:.1}", kernel.rate.value()), share(kernel.rate.value())]);
            section.kernels.push(kernel);
        }
        let last = table.len() - 1;
        table[last].extend([reference.map_or("skipped".into(), |c| format!("{c:.1}")), "1.00".into()]);
        if let Some(c) = reference {
            references.push((0.0, c, format!("cuBLAS BF16 {}", ops.label())));
        }
        if i == 0 {
            section.notes.push(stage_sweep(lab, &mut ops, reference)?);
        }
    }
    section.notes.push(format!(
        "every rung also checked element by element at {}; tolerance per element 2k 2^-23 sum|a b| for the FP32 sums plus 2^-8 of the result for its rounding to BF16 (the BF16 products are exact)",
        super::sanitizer::odd_sizes(lab).map(|(m, n, k)| format!("{m}x{n}x{k}")).join(" and ")
    ));
    section.notes.push(match &cublas {
        Some(c) => format!("cuBLAS from {}: cublasGemmEx, BF16 in and out, CUBLAS_COMPUTE_32F", c.path.display()),
        None => super::sgemm::NO_CUBLAS.into(),
    });
    section.sweep = Some((header, table));
    section.series = vec![Series::labelled(names::REFERENCE, "", "TFLOP/s", references)];
    Ok(section)
}

/// Rung 2 at each stage count of [`STAGE_SWEEP`] on `ops` (checked, timed): where the copies
/// start to hide behind the math.
fn stage_sweep(lab: &Lab, ops: &mut Operands, reference: Option<f64>) -> Result<String> {
    let step = &STEPS[1];
    let mut points = Vec::new();
    for stages in STAGE_SWEEP {
        if step.rung.smem_bytes(stages) > lab.gpu.info.smem_per_block_optin {
            continue;
        }
        let launch = ops.launch(lab, step, stages)?;
        super::poison(&ops.c)?;
        launch.enqueue(&lab.gpu)?;
        let (check, kind) = ops.check(lab)?;
        if !check.passed() {
            refuse!("{} with {stages} stages: {}", step.rung.name, check.summary(kind));
        }
        let timing = time(&lab.gpu, lab.sizes.repeats, || launch.enqueue(&lab.gpu))?;
        points.push(format!("{stages}: {:.1}", timing.tflops(ops.flop())));
    }
    let cublas = reference.map_or(String::new(), |c| format!(" (cuBLAS {c:.1})"));
    Ok(format!("{} at {} by stages, TFLOP/s: {}{cublas}", step.rung.name, ops.label(), points.join(", ")))
}
