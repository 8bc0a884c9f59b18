//! The tensor-core ladder (kernels-gpu `tensor`, the sm_90a PTX): `C = A * B^T` in BF16 with
//! FP32 accumulation, each rung checked against the f64 reference and timed beside cuBLAS BF16
//! (`cublasGemmEx`, `CUBLAS_COMPUTE_32F`) in the same run, then the TF32 rung on FP32 operands
//! beside cuBLAS TF32 (`CUBLAS_COMPUTE_32F_FAST_TF32`), and the FP8 rung beside cuBLASLt's FP8
//! `cublasLtMatmul` (`crate::gpu::cublas_lt`; `cublasGemmEx` has no FP8). Operands and tiles:
//! `memlab_contracts::tensor`. On a device that is not cc 9.0 the lesson is skipped with one
//! line: sm_90a PTX loads nowhere else.

use std::cell::RefCell;

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::tensor::{
    BK, BK_FP8, BK_TF32, FP8, FP8_SCALE, MULTICAST, PERSISTENT, PIPELINED, Rung, SPECIALIZED, STAGE_SWEEP, STORE_BOX, TF32, TMA_STORE, WGMMA,
    WIDE, default_stages, tiles,
};

use crate::gpu::cublas::{Cublas, GemmKind};
use crate::gpu::cublas_lt::CublasLt;
use crate::gpu::launch::{Launch, LaunchShape};
use crate::gpu::staging::Staging;
use crate::gpu::tensor_map::{Element, L2Promotion, MapSlot, Swizzle, TiledSpec};
use crate::gpu::timing::{Timing, time};
use crate::lab::Inputs;
use crate::lab::{KernelRow, KernelRun, Lab, Level, Section, Work, check_u32_elements, ensure_free, measure};
use crate::lab::{Lesson, Shared};
use crate::launches;
use crate::series::{Series, names};
use crate::verify::{self, Check, MatmulStreamed, Precision};
use crate::{ptx, reference, refuse};

/// The launch shape of `rung` over an `m x n` product with `stages` stages.
fn rung_shape(rung: &Rung, m: u32, n: u32, stages: u32) -> LaunchShape {
    LaunchShape { grid: rung.grid(m, n), block: (rung.threads(), 1), smem_bytes: rung.smem_bytes(stages) }
}

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// Rung 1, `tensor_1_wgmma`: `C = A * B^T` (`a`, `b` the slots of BF16 maps of `A`, `m x k`,
    /// and `B`, `n x k`; `c` `m x n` BF16); 128 threads per `64 x 128` tile, one stage.
    pub fn tensor_1_wgmma(m: u32, n: u32) -> LaunchShape {
        rung_shape(&WGMMA, m, n, 1)
    }

    /// Rung 2, `tensor_2_pipelined`: 256 threads per `64 x 128` tile, `stages` stages.
    pub fn tensor_2_pipelined(m: u32, n: u32, stages: u32) -> LaunchShape {
        rung_shape(&PIPELINED, m, n, stages)
    }

    /// Rung 3, `tensor_3_specialized`: 384 threads per `128 x 128` tile.
    pub fn tensor_3_specialized(m: u32, n: u32, stages: u32) -> LaunchShape {
        rung_shape(&SPECIALIZED, m, n, stages)
    }

    /// Rung 4, `tensor_4_wide`: 384 threads per `128 x 256` tile.
    pub fn tensor_4_wide(m: u32, n: u32, stages: u32) -> LaunchShape {
        rung_shape(&WIDE, m, n, stages)
    }

    /// Rung 5, `tensor_5_multicast`: as rung 4, in clusters of `1 x 2`.
    pub fn tensor_5_multicast(m: u32, n: u32, stages: u32) -> LaunchShape {
        rung_shape(&MULTICAST, m, n, stages)
    }

    /// Rung 6, `tensor_6_persistent`: as rung 4 on `min(sms, tiles)` persistent blocks.
    pub fn tensor_6_persistent(sms: u32, m: u32, n: u32, stages: u32) -> LaunchShape {
        persistent_shape(&PERSISTENT, sms, m, n, stages)
    }

    /// Rung 7, `tensor_7_tf32`: rung 6 on FP32 maps of `A` and `B`, `c` `m x n` FP32.
    pub fn tensor_7_tf32(sms: u32, m: u32, n: u32, stages: u32) -> LaunchShape {
        persistent_shape(&TF32, sms, m, n, stages)
    }

    /// Rung 8, `tensor_8_tma_store`: rung 6's grid, `c` the slot of a BF16 map of `C` with
    /// rows padded to 16 bytes; the staging of `C` after the ring.
    pub fn tensor_8_tma_store(sms: u32, m: u32, n: u32, stages: u32) -> LaunchShape {
        persistent_shape(&TMA_STORE, sms, m, n, stages)
    }

    /// Rung 9, `tensor_9_fp8`: rung 8 on e4m3 maps of `A` and `B`, `scale` FP32.
    pub fn tensor_9_fp8(sms: u32, m: u32, n: u32, stages: u32) -> LaunchShape {
        persistent_shape(&FP8, sms, m, n, stages)
    }
}

/// The library product a rung is timed beside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference {
    /// cuBLAS's `cublasGemmEx` of these input types.
    GemmEx(GemmKind),
    /// cuBLASLt's FP8 `cublasLtMatmul` (e4m3 in, BF16 out), `alpha` the operand's scale.
    LtFp8,
}

/// The libraries the rungs are timed beside, each `None` where it was not found.
struct Libraries<'g> {
    cublas: Option<Cublas>,
    lt: Option<CublasLt<'g>>,
}

/// An element type of the ladder's operands on the host: BF16 bit patterns (rungs 1-6 and 8),
/// FP32 multiplied in TF32 (rung 7), or FP8 e4m3 bit patterns (rung 9).
pub trait Operand: cust::memory::DeviceCopy + bytemuck::Pod + Default {
    /// The element of `C`: BF16 for BF16 and FP8 inputs, FP32 for TF32.
    type Out: Operand;
    /// The tensor map's element type.
    const ELEMENT: Element;
    /// The check's tolerance.
    const PRECISION: Precision;
    /// The library product of the same inputs the rung is timed beside.
    const REFERENCE: Reference;
    /// Elements of one 128-byte stage row (the box's inner dimension).
    const BK: u32;
    /// The per-tensor scale the kernel applies to the sums: 1 but for FP8.
    const SCALE: f32 = 1.0;
    /// Element `i` of the input stream `seed`.
    fn input(seed: u64, i: usize) -> Self;
    /// The value the element holds.
    fn value(self) -> f32;
}

impl Operand for u16 {
    type Out = u16;
    const ELEMENT: Element = Element::Bf16;
    const PRECISION: Precision = Precision::Bf16;
    const REFERENCE: Reference = Reference::GemmEx(GemmKind::Bf16);
    const BK: u32 = BK;
    fn input(seed: u64, i: usize) -> u16 {
        reference::input_bf16(seed, i)
    }
    fn value(self) -> f32 {
        reference::bf16_value(self)
    }
}

impl Operand for f32 {
    type Out = f32;
    const ELEMENT: Element = Element::F32;
    const PRECISION: Precision = Precision::Tf32;
    const REFERENCE: Reference = Reference::GemmEx(GemmKind::Tf32);
    const BK: u32 = BK_TF32;
    fn input(seed: u64, i: usize) -> f32 {
        reference::input_f32(seed, i)
    }
    fn value(self) -> f32 {
        self
    }
}

/// FP8 e4m3 bit patterns. Their products are exact in FP32 and [`FP8_SCALE`] is a power of two,
/// so the check's tolerance is the BF16 rungs'.
impl Operand for u8 {
    type Out = u16;
    const ELEMENT: Element = Element::E4m3;
    const PRECISION: Precision = Precision::Bf16;
    const REFERENCE: Reference = Reference::LtFp8;
    const BK: u32 = BK_FP8;
    const SCALE: f32 = FP8_SCALE;
    fn input(seed: u64, i: usize) -> u8 {
        reference::input_e4m3(seed, i)
    }
    fn value(self) -> f32 {
        reference::e4m3_value(self)
    }
}

/// A persistent rung's shape (6 to 9): one block per SM, or per tile when there are fewer
/// tiles.
fn persistent_shape(rung: &Rung, sms: u32, m: u32, n: u32, stages: u32) -> LaunchShape {
    let (rows, cols) = tiles(rung, m, n);
    let blocks = sms.min(rows.saturating_mul(cols)).max(1);
    LaunchShape { grid: (blocks, 1), ..rung_shape(rung, m, n, stages) }
}

/// A rung's typed launch on a device of `sms` SMs (`sms, a, b, c, m, n, k, stages`; rung 1 has
/// one stage by design, and only the persistent rungs size their grid by the SMs), storing
/// from registers into `C`.
type StoresLaunch<C> = fn(u32, MapSlot, MapSlot, &mut DeviceBuffer<C>, u32, u32, u32, u32) -> Launch;

/// As [`StoresLaunch`], with the slot of a map of `C` for TMA stores.
type TmaStoresLaunch = fn(u32, MapSlot, MapSlot, MapSlot, u32, u32, u32, u32) -> Launch;

/// A rung's typed launch, by how it writes `C`.
enum TensorLaunch<T: Operand> {
    /// Stores from registers into `C`, `m x n` dense.
    Stores(StoresLaunch<T::Out>),
    /// TMA stores through the slot of a map of `C`, rows padded to 16 bytes.
    TmaStores(TmaStoresLaunch),
}

/// One step of the ladder: its contract, launch and lesson.
struct Step<T: Operand> {
    rung: &'static Rung,
    launch: TensorLaunch<T>,
    lesson: &'static str,
}

/// The TF32 rung: the pipeline of rung 6 for FP32 inputs.
const TF32_STEP: Step<f32> = Step {
    rung: &TF32,
    launch: TensorLaunch::Stores(|sms, a, b, c, m, n, k, stages| {
        launches::tensor_7_tf32(shapes::tensor_7_tf32(sms, m, n, stages), a, b, c, m, n, k, stages)
    }),
    lesson: "7: rung 6 on FP32 inputs multiplied in TF32 (m64n256k8): the same 128-byte rows, 32 floats each",
};

/// The FP8 rung: rung 8 on e4m3 operands, scaled by [`FP8_SCALE`].
const FP8_STEP: Step<u8> = Step {
    rung: &FP8,
    launch: TensorLaunch::TmaStores(|sms, a, b, c, m, n, k, stages| {
        launches::tensor_9_fp8(shapes::tensor_9_fp8(sms, m, n, stages), a, b, c, FP8_SCALE, m, n, k, stages)
    }),
    lesson: "9: rung 8 on FP8 e4m3 inputs (m64n256k32) with a per-tensor scale: 128 elements in the same 128-byte rows",
};

/// The BF16 ladder's steps, in the order of `memlab_contracts::tensor::LADDER`.
const STEPS: [Step<u16>; 7] = [
    Step {
        rung: &WGMMA,
        launch: TensorLaunch::Stores(|_, a, b, c, m, n, k, _| {
            launches::tensor_1_wgmma(shapes::tensor_1_wgmma(m, n), a, b, c, m, n, k)
        }),
        lesson: "1: wgmma from TMA-filled, 128B-swizzled shared memory; one stage: copy and math take turns",
    },
    Step {
        rung: &PIPELINED,
        launch: TensorLaunch::Stores(|_, a, b, c, m, n, k, stages| {
            launches::tensor_2_pipelined(shapes::tensor_2_pipelined(m, n, stages), a, b, c, m, n, k, stages)
        }),
        lesson: "2: a producer warpgroup and an mbarrier ring (full: TMA bytes, empty: released): loads in flight behind the math",
    },
    Step {
        rung: &SPECIALIZED,
        launch: TensorLaunch::Stores(|_, a, b, c, m, n, k, stages| {
            launches::tensor_3_specialized(shapes::tensor_3_specialized(m, n, stages), a, b, c, m, n, k, stages)
        }),
        lesson: "3: two consumer warpgroups share each B tile; setmaxnreg moves the producer's registers to them (40 / 232)",
    },
    Step {
        rung: &WIDE,
        launch: TensorLaunch::Stores(|_, a, b, c, m, n, k, stages| {
            launches::tensor_4_wide(shapes::tensor_4_wide(m, n, stages), a, b, c, m, n, k, stages)
        }),
        lesson: "4: 128x256 tiles (m64n256k16): fewer bytes loaded per FLOP than 128x128",
    },
    Step {
        rung: &MULTICAST,
        launch: TensorLaunch::Stores(|_, a, b, c, m, n, k, stages| {
            launches::tensor_5_multicast(shapes::tensor_5_multicast(m, n, stages), a, b, c, m, n, k, stages)
                .in_clusters((1, MULTICAST.cluster))
        }),
        lesson: "5: clusters of 2 along m: each block loads half of the shared B tile and multicasts it to both",
    },
    Step {
        rung: &PERSISTENT,
        launch: TensorLaunch::Stores(|sms, a, b, c, m, n, k, stages| {
            launches::tensor_6_persistent(shapes::tensor_6_persistent(sms, m, n, stages), a, b, c, m, n, k, stages)
        }),
        lesson: "6: one block per SM walks the tiles in bands of 8 rows: the next tile's loads overlap this one's stores",
    },
    Step {
        rung: &TMA_STORE,
        launch: TensorLaunch::TmaStores(|sms, a, b, c, m, n, k, stages| {
            launches::tensor_8_tma_store(shapes::tensor_8_tma_store(sms, m, n, stages), a, b, c, m, n, k, stages)
        }),
        lesson: "8: rung 6 storing C through swizzled shared memory and TMA: the consumers start the next tile while the copy engine writes",
    },
];

/// Seeds of the ladder's `A` and `B` ([`reference::input_bf16`]).
const SEEDS: (u64, u64) = (31, 32);

/// Random operands of one product on the device, each row padded to the pitch a tensor map can
/// describe (zeros past `k`), and a poisoned result. The host holds no copy of them: the checks
/// draw their rows and columns from the same generator.
pub struct Operands<T: Operand> {
    /// `A`, `m x pitch`.
    a: DeviceBuffer<T>,
    /// `B`, `n x pitch`.
    b: DeviceBuffer<T>,
    /// `C`, `m x n` with rows [`Operands::c_pitch`] apart, poisoned (NaN); room for rows
    /// padded to 16 bytes, which a TMA store's map needs.
    c: DeviceBuffer<T::Out>,
    /// Elements between rows of `C` as the last launch wrote it: `n`, or `n` rounded up to 16
    /// bytes for a TMA store.
    c_pitch: std::cell::Cell<usize>,
    /// `(m, n, k)`.
    size: (usize, usize, usize),
    /// Elements per row of `A` and `B`: `k` rounded up to 16 bytes.
    pitch: usize,
    /// The pinned staging of `C`'s downloads.
    staging: RefCell<Staging<T::Out>>,
}

impl<T: Operand> Operands<T> {
    /// Allocates, fills and uploads the operands of an `m x n x k` product.
    ///
    /// # Errors
    /// Not enough device memory, more than `u32::MAX` elements, or an upload failure.
    pub fn new(lab: &Lab, (m, n, k): (usize, usize, usize)) -> Result<Operands<T>> {
        let pitch = T::ELEMENT.padded_pitch(k as u64) as usize;
        let c_len = m * T::Out::ELEMENT.padded_pitch(n as u64) as usize;
        check_u32_elements("the tensor ladder's operands", &[m * pitch, n * pitch, c_len])?;
        let bytes = size_of::<T>() * (m * pitch + n * pitch) + size_of::<T::Out>() * c_len;
        ensure_free("the tensor ladder's operands", bytes)?;
        let mut staging = Staging::<T>::new((m * pitch).max(n * pitch))?;
        let mut buffers = Vec::new();
        for (rows, seed) in [(m, SEEDS.0), (n, SEEDS.1)] {
            let buf = crate::lab::poisoned::<T>(rows * pitch)?;
            staging.upload_pitched(&lab.gpu, &buf, (k, pitch), T::default(), |i| T::input(seed, i))?;
            buffers.push(buf);
        }
        let b = buffers.pop().expect("two buffers");
        let a = buffers.pop().expect("two buffers");
        drop(staging);
        let (c, staging) = (crate::lab::poisoned(c_len)?, RefCell::new(Staging::new(c_len)?));
        Ok(Operands { a, b, c, c_pitch: n.into(), size: (m, n, k), pitch, staging })
    }

    /// The tensor map of `A` (`rows = m`) or `B` (`rows = n`) with a box of `box_rows` rows of
    /// 128 bytes.
    fn map(&self, lab: &Lab, buf: &DeviceBuffer<T>, rows: usize, box_rows: u32) -> Result<MapSlot> {
        let spec = Self::spec(buf, (rows, self.size.2, self.pitch), (box_rows, T::BK));
        lab.place_map(&TiledSpec { l2_promotion: L2Promotion::B256, ..spec })
    }

    /// A map of the `rows x cols` matrix of `E` at `buf` (rows `pitch` apart) with `(rows,
    /// cols)` boxes, 128-byte swizzled.
    fn spec<E: Operand>(
        buf: &DeviceBuffer<E>,
        (rows, cols, pitch): (usize, usize, usize),
        (box_rows, box_cols): (u32, u32),
    ) -> TiledSpec {
        TiledSpec {
            address: buf.as_device_ptr().as_raw(),
            element: E::ELEMENT,
            rows: rows as u64,
            cols: cols as u64,
            pitch: pitch as u64,
            box_rows,
            box_cols,
            swizzle: Swizzle::B128,
            l2_promotion: L2Promotion::None,
        }
    }

    /// The launch of `step` on these operands with `stages` stages.
    fn launch(&mut self, lab: &Lab, step: &Step<T>, stages: u32) -> Result<Launch> {
        let (m, n, k) = self.size;
        let a = self.map(lab, &self.a, m, step.rung.bm())?;
        let b = self.map(lab, &self.b, n, step.rung.b_box_rows())?;
        let (sms, (m32, n32, k32)) = (lab.gpu.info.sms, (m as u32, n as u32, k as u32));
        Ok(match &step.launch {
            TensorLaunch::Stores(launch) => {
                self.c_pitch.set(n);
                launch(sms, a, b, &mut self.c, m32, n32, k32, stages)
            }
            TensorLaunch::TmaStores(launch) => {
                let pitch = T::Out::ELEMENT.padded_pitch(n as u64) as usize;
                self.c_pitch.set(pitch);
                let c = lab.place_map(&Self::spec(&self.c, (m, n, pitch), STORE_BOX))?;
                launch(sms, a, b, c, m32, n32, k32, stages)
            }
        })
    }

    /// Checks `C` against the f64 reference with `T`'s tolerance ([`verify::matmul_samples`]'s
    /// rule for how much). Returns the check and what it compared.
    fn check(&self, lab: &Lab) -> Result<(Check, &'static str)> {
        let (m, n, k) = self.size;
        let (samples, what) = verify::matmul_samples(self.size);
        // The kernel scales the sums; a power of two scales `A` exactly.
        let a = |i: usize| T::input(SEEDS.0, i).value() * T::SCALE;
        // The reference reads `B` as `k x n`: element `p n + j` is row `j`, column `p` of `B`.
        let b = |i: usize| T::input(SEEDS.1, (i % n) * k + i / n).value();
        let mut check = MatmulStreamed::new(T::PRECISION, (m, n, k), (samples, verify::SAMPLE_SEED), a, b);
        let layout = (m, n, self.c_pitch.get());
        self.staging.borrow_mut().download_pitched(&lab.gpu, &self.c, layout, |_, chunk| {
            let values: Vec<f32> = chunk.iter().map(|&v| v.value()).collect();
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

/// Host bytes the [`Operands`] of an `m x n x k` product hold at once, of the larger (FP32)
/// element: the pinned staging, the rows and columns a check compares, as f32, and the runs a
/// check of a pitched `C` gathers.
pub fn host_bytes((m, n, k): (usize, usize, usize)) -> usize {
    let pitch = Element::F32.padded_pitch(k as u64) as usize;
    let c_len = m * Element::F32.padded_pitch(n as u64) as usize;
    let staging = 4 * (m * pitch).max(n * pitch).max(c_len).min(Staging::<f32>::chunk_len());
    let (rows, cols) = verify::sample_grid((m, n), verify::matmul_samples((m, n, k)).0);
    staging + 4 * (rows + cols) * k + 2 * 4 * Staging::<f32>::chunk_len()
}

/// The tile loads of one rung over one product, as the tiling model counts them: every block
/// loads its `bm x k` slice of `A` and its `bn x k` slice of `B` in whole 128-byte stage rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TileLoads {
    /// Bytes the copy engine writes into the blocks' shared memory: each block's whole tiles,
    /// a multicast tile once for every block it lands in.
    pub into_shared: f64,
    /// Bytes the blocks ask L2 for: the shared `B` tile once per cluster (each block of a
    /// cluster loads its `1 / cluster` share and multicasts it).
    pub from_l2: f64,
    /// Of [`TileLoads::into_shared`], the bytes that arrive by multicast: every block's whole
    /// `B` tiles in a cluster of more than one block, else none.
    pub multicast_in: f64,
}

/// [`TileLoads`] of `rung` over an `m x n x k` product of `row_elements` elements per 128-byte
/// stage row (the operand's [`Operand::BK`]).
pub fn tile_loads(rung: &Rung, (m, n, k): (usize, usize, usize), row_elements: u32) -> TileLoads {
    let (gx, gy) = rung.grid(m as u32, n as u32);
    let rows = f64::from(gx) * f64::from(gy) * k.div_ceil(row_elements as usize) as f64;
    let row_bytes = f64::from(BK * memlab_contracts::tensor::ELEMENT_BYTES);
    let per_block = |b_rows: u32| f64::from(rung.bm() + b_rows) * row_bytes * rows;
    let multicast_in = if rung.cluster > 1 { per_block(rung.bn) - per_block(0) } else { 0.0 };
    TileLoads { into_shared: per_block(rung.bn), from_l2: per_block(rung.b_box_rows()), multicast_in }
}

/// [`tile_loads`] of the kernel named `kernel` (a rung of [`memlab_contracts::tensor::RUNGS`])
/// at `size`, with its operand's row of elements; `None` for another kernel.
pub fn kernel_tile_loads(kernel: &str, size: (usize, usize, usize)) -> Option<TileLoads> {
    let bk = if kernel == TF32.name {
        f32::BK
    } else if kernel == FP8.name {
        u8::BK
    } else if STEPS.iter().any(|s| s.rung.name == kernel) {
        u16::BK
    } else {
        return None;
    };
    let rung = memlab_contracts::tensor::RUNGS.iter().find(|r| r.name == kernel)?;
    Some(tile_loads(rung, size, bk))
}

/// Bytes the SMs read from L2 for `rung` over an `m x n x k` product of `T`, as the tiling model
/// counts them ([`TileLoads::from_l2`]), plus the writes of `C`.
pub fn l2_bytes<T: Operand>(rung: &Rung, (m, n, k): (usize, usize, usize)) -> f64 {
    tile_loads(rung, (m, n, k), T::BK).from_l2 + (m * n * size_of::<T::Out>()) as f64
}

/// Checks and times `step` on `ops` with `stages` stages through [`measure`] (and so against its
/// twin in `bench`).
fn measure_step<T: Operand>(lab: &Lab, step: &Step<T>, ops: &mut Operands<T>, stages: u32) -> Result<KernelRow> {
    let bytes = l2_bytes::<T>(step.rung, ops.size);
    let plural = if stages == 1 { "" } else { "s" };
    let prediction = format!("{:.3} B/FLOP from L2 ({stages} stage{plural})", bytes / ops.flop());
    let work = Work { flop: ops.flop(), bytes, level: Level::Global };
    let launch = ops.launch(lab, step, stages)?;
    let c = &ops.c;
    let run = KernelRun {
        launch,
        lesson: step.lesson,
        prediction,
        work,
        size: ops.label(),
        reset: &|| crate::lab::poison(c),
    };
    measure(lab, run, || ops.check(lab))
}

/// Times the library product of `T`'s inputs ([`Operand::REFERENCE`]) on `ops` after checking
/// its result; `None` without that library, or where cuBLASLt has no plan for the shape (then
/// `notes` gets a line saying why: its FP8 kernels need, among others, rows of `C` 16-byte
/// aligned).
fn time_reference<T: Operand>(
    lab: &Lab,
    libs: &Libraries,
    ops: &Operands<T>,
    notes: &mut Vec<String>,
) -> Result<Option<Timing>> {
    let operands = (&ops.a, &ops.b, &ops.c);
    match T::REFERENCE {
        Reference::GemmEx(kind) => {
            let Some(cublas) = &libs.cublas else { return Ok(None) };
            let name = format!("cuBLAS GemmEx ({kind:?})");
            checked_timing(lab, ops, &name, || cublas.gemm_nt(kind, operands, ops.size, ops.pitch)).map(Some)
        }
        Reference::LtFp8 => {
            let Some(lt) = &libs.lt else { return Ok(None) };
            let plan = match lt.plan_fp8(ops.size, ops.pitch, T::SCALE) {
                Ok(plan) => plan,
                Err(e) => {
                    notes.push(format!("rung 9 has no reference at {}: {e:#}", ops.label()));
                    return Ok(None);
                }
            };
            checked_timing(lab, ops, "cuBLASLt FP8", || plan.enqueue(operands)).map(Some)
        }
    }
}

/// Runs `gemm`, a library's product of `ops` into `C` (rows `n` apart), once, checks `C` as a
/// rung's is checked, then times it.
///
/// # Errors
/// A failed call, or a wrong result (refused, naming `name`).
fn checked_timing<T: Operand>(
    lab: &Lab,
    ops: &Operands<T>,
    name: &str,
    mut gemm: impl FnMut() -> Result<()>,
) -> Result<Timing> {
    ops.c_pitch.set(ops.size.1);
    crate::lab::poison(&ops.c)?;
    gemm()?;
    lab.gpu.stream.synchronize().map_err(|e| anyhow::anyhow!(crate::gpu::describe(e)))?;
    let (check, what) = ops.check(lab)?;
    if !check.passed() {
        refuse!("{name} returned a wrong result: {}", check.summary(what));
    }
    time(&lab.gpu, lab.settings.repeats, gemm)
}

/// The lesson's note for a device without sm_90a.
fn skipped(cc: (u32, u32)) -> String {
    format!(
        "tensor ladder skipped: its kernels are sm_90a PTX (wgmma, setmaxnreg), which loads on cc 9.0 only; this device is cc {}.{}",
        cc.0, cc.1
    )
}

/// The tensor lesson's options.
#[derive(clap::Args, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
pub struct Options {
    /// Tensor-core ladder shapes (BF16), MxNxK each.
    #[arg(id = "tensor", long = "tensor", value_name = "TENSOR", num_args = 1.., default_values = ["4096x4096x4096", "8192x8192x8192"], value_parser = crate::cli::gemm)]
    pub shapes: Vec<(usize, usize, usize)>,
}

/// The lesson: the wgmma ladder.
pub struct Tensor;

impl Lesson for Tensor {
    const NAME: &'static str = "tensor";
    const HOST_FLAGS: &'static [&'static str] = &["--tensor"];
    type Options = Options;

    fn run(lab: &Lab, _: &Inputs, options: &Options) -> Result<Section> {
        run(lab, &options.shapes)
    }

    /// The largest shape's [`host_bytes`].
    fn host_bytes(options: &Options, _: &Shared) -> usize {
        options.shapes.iter().map(|&s| host_bytes(s)).max().unwrap_or(0)
    }
}

/// Checks every rung at the odd sizes (every element), then times each at each of `shapes`
/// beside its library product (cuBLAS BF16 or TF32, cuBLASLt FP8), and rung 2 over
/// [`STAGE_SWEEP`] at the first size.
fn run(lab: &Lab, shapes: &[(usize, usize, usize)]) -> Result<Section> {
    let mut section = Section {
        name: "tensor".into(),
        title: "Tensor cores and the Hopper pipeline: C = A * B^T, BF16, TF32 or FP8 in, FP32 accumulation".into(),
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
    let lt = lab.phases.step("open cuBLASLt", || CublasLt::open(&lab.gpu))?;
    let libs = Libraries { cublas, lt };
    check_odd_sizes(lab, &mut section.checks)?;
    let mut header = vec!["kernel".to_string()];
    let mut table: Vec<Vec<String>> = STEPS.iter().map(|s| vec![s.rung.name.to_string()]).collect();
    for row in ["cuBLAS GemmEx (BF16)", TF32.name, "cuBLAS GemmEx (TF32)", FP8.name, "cuBLASLt (FP8)"] {
        table.push(vec![row.into()]);
    }
    let mut references = Vec::new();
    for (i, &size) in shapes.iter().enumerate() {
        let mut ops = lab.phases.step("operands", || Operands::<u16>::new(lab, size))?;
        header.extend([format!("TFLOP/s {}", ops.label()), "x cuBLAS".into()]);
        let mut rows = table.iter_mut();
        let reference = timed(lab, &libs, &mut ops, &STEPS, &mut rows, &mut section)?;
        if let Some(c) = reference {
            references.push((0.0, c, format!("cuBLAS BF16 {}", ops.label())));
        }
        if i == 0 {
            section.notes.push(stage_sweep(lab, &mut ops, reference)?);
        }
        drop(ops);
        let mut ops = lab.phases.step("operands", || Operands::<f32>::new(lab, size))?;
        let reference = timed(lab, &libs, &mut ops, &[TF32_STEP], &mut rows, &mut section)?;
        if let Some(c) = reference {
            references.push((0.0, c, format!("cuBLAS GemmEx TF32 {}", ops.label())));
        }
        drop(ops);
        let mut ops = lab.phases.step("operands", || Operands::<u8>::new(lab, size))?;
        let reference = timed(lab, &libs, &mut ops, &[FP8_STEP], &mut rows, &mut section)?;
        if let Some(c) = reference {
            references.push((0.0, c, format!("cuBLAS FP8 {}", ops.label())));
        }
    }
    section.notes.push(format!(
        "every rung also checked element by element at {}; tolerance per element 2k 2^-23 sum|a b| for the FP32 sums plus 2^-8 of the result for its rounding to BF16 (the BF16 products are exact); rung 7 (2^-9 + 2^-20 + 2k 2^-23) sum|a b|, TF32's 10-bit mantissas making each product off by less than 2^-9; rung 9 as the BF16 rungs, its e4m3 inputs multiples of 1/8 in [-1, 1), whose products are exact, scaled by 1/8 (its tensor cores keep about 14 bits of the running sums, DeepSeek-V3 report 3.3.2: these sums of multiples of 1/64 stay exact while under 256)",
        crate::lab::sanitizer::odd_sizes(lab).map(|(m, n, k)| format!("{m}x{n}x{k}")).join(" and ")
    ));
    section.notes.extend(library_notes(&libs));
    section.sweep = Some((header, table));
    section.series = vec![Series::labelled(names::REFERENCE, "", "TFLOP/s", references)];
    Ok(section)
}

/// The lines that say which libraries the rungs were timed beside, and how they were called.
fn library_notes(libs: &Libraries) -> [String; 2] {
    let cublas = match &libs.cublas {
        Some(c) => format!(
            "cuBLAS from {}: cublasGemmEx, BF16 in and out with CUBLAS_COMPUTE_32F; FP32 in and out with CUBLAS_COMPUTE_32F_FAST_TF32 for rung 7",
            c.path().display()
        ),
        None => crate::gpu::cublas::NO_CUBLAS.into(),
    };
    let lt = match &libs.lt {
        Some(lt) => format!(
            "cuBLASLt from {}: cublasLtMatmul is rung 9's reference (cublasGemmEx has no FP8): e4m3 in, BF16 out, CUBLAS_COMPUTE_32F with fast accumulation (the sums stay in the tensor cores, as rung 9 keeps them), alpha = the per-tensor scale {FP8_SCALE}, beta = 0",
            lt.path().display()
        ),
        None => crate::gpu::cublas_lt::NO_CUBLASLT.into(),
    };
    [cublas, lt]
}

/// Checks every rung once at each of the odd sizes, every element.
fn check_odd_sizes(lab: &Lab, checks: &mut Vec<Check>) -> Result<()> {
    for size in crate::lab::sanitizer::odd_sizes(lab) {
        let mut ops = Operands::<u16>::new(lab, size)?;
        for step in &STEPS {
            checks.push(check_once(lab, &mut ops, step)?);
        }
        drop(ops);
        checks.push(check_once(lab, &mut Operands::<f32>::new(lab, size)?, &TF32_STEP)?);
        checks.push(check_once(lab, &mut Operands::<u8>::new(lab, size)?, &FP8_STEP)?);
    }
    Ok(())
}

/// Runs `step` once on `ops` at its default stages and checks every element it wrote.
fn check_once<T: Operand>(lab: &Lab, ops: &mut Operands<T>, step: &Step<T>) -> Result<Check> {
    crate::lab::poison(&ops.c)?;
    ops.launch(lab, step, default_stages(step.rung))?.enqueue(&lab.gpu)?;
    Ok(ops.check(lab)?.0)
}

/// Times the library product of `T` and each of `steps` on `ops`, filling the next table rows
/// (one per step, then the library's) with the rate and the share of the library's, and
/// `section`'s kernels (and its notes, where the library was not timed); returns the library's
/// TFLOP/s.
fn timed<'a, T: Operand>(
    lab: &Lab,
    libs: &Libraries,
    ops: &mut Operands<T>,
    steps: &[Step<T>],
    rows: &mut impl Iterator<Item = &'a mut Vec<String>>,
    section: &mut Section,
) -> Result<Option<f64>> {
    let reference = lab.phases.step("cuBLAS", || time_reference(lab, libs, ops, &mut section.notes))?;
    let reference = reference.map(|t| t.tflops(ops.flop()));
    let share = |t: f64| reference.map_or("-".into(), |c| format!("{:.2}", t / c));
    for step in steps {
        let kernel = measure_step(lab, step, ops, default_stages(step.rung))?;
        let row = rows.next().expect("a row per step");
        row.extend([format!("{:.1}", kernel.rate.value()), share(kernel.rate.value())]);
        section.kernels.push(kernel);
    }
    let row = rows.next().expect("a row for the library");
    row.extend(match reference {
        Some(c) => [format!("{c:.1}"), "1.00".into()],
        None => ["skipped".into(), "-".into()],
    });
    Ok(reference)
}

/// Rung 2 at each stage count of [`STAGE_SWEEP`] on `ops` (checked, timed): where the copies
/// start to hide behind the math.
fn stage_sweep(lab: &Lab, ops: &mut Operands<u16>, reference: Option<f64>) -> Result<String> {
    let step = &STEPS[1];
    let mut points = Vec::new();
    for stages in STAGE_SWEEP {
        if step.rung.smem_bytes(stages) > lab.gpu.info.smem_per_block_optin {
            continue;
        }
        let launch = ops.launch(lab, step, stages)?;
        crate::lab::poison(&ops.c)?;
        launch.enqueue(&lab.gpu)?;
        let (check, kind) = ops.check(lab)?;
        if !check.passed() {
            refuse!("{} with {stages} stages: {}", step.rung.name, check.summary(kind));
        }
        let timing = time(&lab.gpu, lab.settings.repeats, || launch.enqueue(&lab.gpu))?;
        points.push(format!("{stages}: {:.1}", timing.tflops(ops.flop())));
    }
    let cublas = reference.map_or(String::new(), |c| format!(" (cuBLAS {c:.1})"));
    Ok(format!("{} at {} by stages, TFLOP/s: {}{cublas}", step.rung.name, ops.label(), points.join(", ")))
}
