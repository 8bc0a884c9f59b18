//! Occupancy calculator: how many blocks of a kernel can be resident on one
//! SM at once, which resource stops the next block, and how far a register
//! or shared-memory budget can move before occupancy changes.
//!
//! Two modes answer the same question with different fidelity:
//!
//! - [`Mode::Simple`] is the textbook arithmetic: each resource is divided
//!   by the block's exact demand and the smallest quotient wins. No
//!   allocation granularity, no reserved memory.
//! - [`Mode::Hardware`] follows the logic of NVIDIA's `cuda_occupancy.h`
//!   (shipped with the CUDA toolkit; read at the CUDA 11.x and 12.6
//!   versions), which is the calculation behind
//!   `cuOccupancyMaxActiveBlocksPerMultiprocessor` /
//!   `cudaOccupancyMaxActiveBlocksPerMultiprocessor`, for the default cache
//!   configuration (no carveout preference) and no flags. The hardware
//!   tests below were also checked against the CUDA 13.0 copy of the header
//!   (which covers up to cc 12.1), fed with the H200's
//!   `cudaGetDeviceProperties`, and agree on every limit:
//!   1. **Warps**: a block occupies `ceil(threads / 32)` warp slots; blocks
//!      by warps = `max_warps_per_sm / warps_per_block`
//!      (`cudaOccMaxBlocksPerSMWarpsLimit`).
//!   2. **Registers**: registers are allocated per warp, `regs * 32`
//!      rounded up to the allocation unit (256). The register file is split
//!      evenly over the SM's 4 sub-partitions (warp schedulers) and a warp's
//!      registers must come from one of them, so warps that fit =
//!      `4 * floor((65536 / 4) / regs_per_warp)`; blocks = that /
//!      `warps_per_block`. A launch is refused outright when the per-block
//!      register check fails, which assumes the warp count rounded up to a
//!      multiple of 4 (`cudaOccMaxBlocksPerSMRegsLimit`).
//!   3. **Shared memory**: per block the driver allocates `static + dynamic
//!      + reserved` (1 KiB reserved on cc >= 8.0) rounded up to the
//!      allocation granularity (128 B on cc >= 8.0, 256 B on cc 7.x). With
//!      no carveout preference the SM offers its full shared capacity,
//!      aligned up to a supported carveout size; blocks = that / allocation
//!      (`cudaOccMaxBlocksPerSMSmemLimit`, `cudaOccSMemPerMultiprocessor`).
//!   4. **Block cap**: the architecture's resident-block limit
//!      (`cudaOccMaxBlocksPerMultiprocessor`).
//!
//!   The header also has a barrier limit (`cudaOccMaxBlocksPerSMBlockBarrierLimit`):
//!   it offers one or two barriers per block slot, so a kernel using at
//!   most one block barrier (`__syncthreads` uses barrier 0) is never
//!   limited by it. CUDA 13.0 adds a "virtual resources" limit that only
//!   applies to kernels declaring such resources (default 0). This model
//!   assumes neither binds and omits both.

use std::fmt;

/// Marker for a limit that does not bind at all (a kernel with no
/// registers or no shared memory, or the textbook SM's block cap). Mirrors
/// the `INT_MAX` that `cuda_occupancy.h` reports in the same situation.
pub const UNLIMITED: u32 = u32::MAX;

const KIB: u32 = 1024;

/// Carveout sizes (bytes) that the driver may configure on cc 7.5 (Turing):
/// 32 or 64 KiB of the unified L1/shared storage. Source:
/// `cudaOccAlignUpShmemSizeVoltaPlus` in `cuda_occupancy.h`.
const CARVEOUTS_CC75: &[u32] = &[32 * KIB, 64 * KIB];
/// Carveout sizes (bytes) on cc 8.0 (A100): 0, 8, 16, 32, 64, 100, 132,
/// 164 KiB. Source: `cudaOccAlignUpShmemSizeVoltaPlus`.
const CARVEOUTS_CC80: &[u32] = &[0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 100 * KIB, 132 * KIB, 164 * KIB];
/// Carveout sizes (bytes) on cc 8.6 and 8.9: 0, 8, 16, 32, 64, 100 KiB.
/// Source: `cudaOccAlignUpShmemSizeVoltaPlus`; CUDA 13.0 lists the same
/// sizes for cc 12.0.
const CARVEOUTS_CC86: &[u32] = &[0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 100 * KIB];
/// Carveout sizes (bytes) on cc 9.0 (H100/H200): 0, 8, 16, 32, 64, 100,
/// 132, 164, 196, 228 KiB. Source: `cudaOccAlignUpShmemSizeVoltaPlus`
/// (CUDA 12.6); CUDA 13.0 lists the same sizes for cc 10.0.
const CARVEOUTS_CC90: &[u32] =
    &[0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 100 * KIB, 132 * KIB, 164 * KIB, 196 * KIB, 228 * KIB];

/// Per-SM resource limits of one architecture (compute capability).
///
/// Sources, per field: the CUDA C++ Programming Guide, table "Technical
/// Specifications per Compute Capability" (thread, warp, block, register
/// and shared-memory capacities), and NVIDIA's `cuda_occupancy.h`
/// (allocation units, granularities, sub-partitions, carveouts), which is
/// what `cuOccupancyMaxActiveBlocksPerMultiprocessor` implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchLimits {
    /// Compute capability, major part (e.g. 9 for H200).
    pub major: u32,
    /// Compute capability, minor part (e.g. 0 for H200).
    pub minor: u32,
    /// A product family name, for reports only.
    pub name: &'static str,
    /// Threads per warp (32 on every NVIDIA architecture; Programming Guide).
    pub warp_size: u32,
    /// Maximum threads per block (1024; Programming Guide).
    pub max_threads_per_block: u32,
    /// Maximum resident threads per SM (Programming Guide).
    pub max_threads_per_sm: u32,
    /// Maximum resident warps per SM, `max_threads_per_sm / 32`
    /// (Programming Guide).
    pub max_warps_per_sm: u32,
    /// Maximum resident blocks per SM (Programming Guide;
    /// `cudaOccMaxBlocksPerMultiprocessor`).
    pub max_blocks_per_sm: u32,
    /// 32-bit registers per SM (65536 on all listed archs; Programming Guide).
    pub regs_per_sm: u32,
    /// 32-bit registers one block may use (65536; Programming Guide,
    /// `regsPerBlock` in `cudaDeviceProp`).
    pub regs_per_block: u32,
    /// Maximum registers per thread (255; Programming Guide). The header's
    /// own check uses 256 on cc >= 7, but no compiler emits more than 255.
    pub max_regs_per_thread: u32,
    /// Register allocation unit, in registers per warp (256;
    /// `cudaOccRegAllocationGranularity`).
    pub reg_alloc_unit: u32,
    /// Warp allocation granularity for registers: the number of SM
    /// sub-partitions (warp schedulers) the register file is split over (4;
    /// `cudaOccSubPartitionsPerMultiprocessor`).
    pub warp_alloc_granularity: u32,
    /// Maximum shared memory per SM, bytes (Programming Guide;
    /// `sharedMemPerMultiprocessor`).
    pub max_smem_per_sm: u32,
    /// Shared memory per block without opt-in, bytes (48 KiB; Programming
    /// Guide).
    pub smem_per_block_default: u32,
    /// Shared memory per block with opt-in
    /// (`cudaFuncAttributeMaxDynamicSharedSizeBytes`), bytes (Programming
    /// Guide; `sharedMemPerBlockOptin`).
    pub smem_per_block_optin: u32,
    /// Shared-memory allocation granularity, bytes
    /// (`cudaOccSMemAllocationGranularity`: 256 on cc 7.x, 128 on cc 8.x/9.x).
    pub smem_alloc_granularity: u32,
    /// Shared memory the driver reserves per block, bytes
    /// (`reservedSharedMemPerBlock`: 1 KiB from cc 8.0, 0 before).
    pub reserved_smem_per_block: u32,
    /// Shared-memory carveout sizes the SM supports, bytes, ascending
    /// (`cudaOccAlignUpShmemSizeVoltaPlus`). Empty means "no carveout
    /// rounding" (used by the textbook SM).
    pub smem_carveouts: &'static [u32],
}

/// The architectures this lab knows, as data. Capacities come from the CUDA
/// C++ Programming Guide, "Technical Specifications per Compute Capability";
/// block caps, granularities and carveouts from `cuda_occupancy.h` (the
/// CUDA 13.0 copy for cc 10.0 and 12.0: 32 and 24 blocks, 128-byte
/// granularity, carveouts up to 228 and 100 KiB).
pub const ARCHS: [ArchLimits; 7] = [
    // Turing (T4, RTX 20xx): 1024 threads, 16 blocks, 64 KiB shared.
    ArchLimits {
        major: 7,
        minor: 5,
        name: "Turing",
        warp_size: 32,
        max_threads_per_block: 1024,
        max_threads_per_sm: 1024,
        max_warps_per_sm: 32,
        max_blocks_per_sm: 16,
        regs_per_sm: 65536,
        regs_per_block: 65536,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        warp_alloc_granularity: 4,
        max_smem_per_sm: 64 * KIB,
        smem_per_block_default: 48 * KIB,
        smem_per_block_optin: 64 * KIB,
        smem_alloc_granularity: 256,
        reserved_smem_per_block: 0,
        smem_carveouts: CARVEOUTS_CC75,
    },
    // Ampere A100: 2048 threads, 32 blocks, 164 KiB shared (163 opt-in).
    ArchLimits {
        major: 8,
        minor: 0,
        name: "Ampere (A100)",
        warp_size: 32,
        max_threads_per_block: 1024,
        max_threads_per_sm: 2048,
        max_warps_per_sm: 64,
        max_blocks_per_sm: 32,
        regs_per_sm: 65536,
        regs_per_block: 65536,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        warp_alloc_granularity: 4,
        max_smem_per_sm: 164 * KIB,
        smem_per_block_default: 48 * KIB,
        smem_per_block_optin: 163 * KIB,
        smem_alloc_granularity: 128,
        reserved_smem_per_block: KIB,
        smem_carveouts: CARVEOUTS_CC80,
    },
    // Ampere GA10x: 1536 threads, 16 blocks, 100 KiB shared (99 opt-in).
    ArchLimits {
        major: 8,
        minor: 6,
        name: "Ampere (GA10x)",
        warp_size: 32,
        max_threads_per_block: 1024,
        max_threads_per_sm: 1536,
        max_warps_per_sm: 48,
        max_blocks_per_sm: 16,
        regs_per_sm: 65536,
        regs_per_block: 65536,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        warp_alloc_granularity: 4,
        max_smem_per_sm: 100 * KIB,
        smem_per_block_default: 48 * KIB,
        smem_per_block_optin: 99 * KIB,
        smem_alloc_granularity: 128,
        reserved_smem_per_block: KIB,
        smem_carveouts: CARVEOUTS_CC86,
    },
    // Ada Lovelace: 1536 threads, 24 blocks, 100 KiB shared (99 opt-in).
    ArchLimits {
        major: 8,
        minor: 9,
        name: "Ada Lovelace",
        warp_size: 32,
        max_threads_per_block: 1024,
        max_threads_per_sm: 1536,
        max_warps_per_sm: 48,
        max_blocks_per_sm: 24,
        regs_per_sm: 65536,
        regs_per_block: 65536,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        warp_alloc_granularity: 4,
        max_smem_per_sm: 100 * KIB,
        smem_per_block_default: 48 * KIB,
        smem_per_block_optin: 99 * KIB,
        smem_alloc_granularity: 128,
        reserved_smem_per_block: KIB,
        smem_carveouts: CARVEOUTS_CC86,
    },
    // Hopper (H100/H200): 2048 threads, 32 blocks, 228 KiB shared (227 opt-in).
    ArchLimits {
        major: 9,
        minor: 0,
        name: "Hopper",
        warp_size: 32,
        max_threads_per_block: 1024,
        max_threads_per_sm: 2048,
        max_warps_per_sm: 64,
        max_blocks_per_sm: 32,
        regs_per_sm: 65536,
        regs_per_block: 65536,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        warp_alloc_granularity: 4,
        max_smem_per_sm: 228 * KIB,
        smem_per_block_default: 48 * KIB,
        smem_per_block_optin: 227 * KIB,
        smem_alloc_granularity: 128,
        reserved_smem_per_block: KIB,
        smem_carveouts: CARVEOUTS_CC90,
    },
    // Blackwell data centre (B200): same SM limits as Hopper.
    ArchLimits {
        major: 10,
        minor: 0,
        name: "Blackwell (B200)",
        warp_size: 32,
        max_threads_per_block: 1024,
        max_threads_per_sm: 2048,
        max_warps_per_sm: 64,
        max_blocks_per_sm: 32,
        regs_per_sm: 65536,
        regs_per_block: 65536,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        warp_alloc_granularity: 4,
        max_smem_per_sm: 228 * KIB,
        smem_per_block_default: 48 * KIB,
        smem_per_block_optin: 227 * KIB,
        smem_alloc_granularity: 128,
        reserved_smem_per_block: KIB,
        smem_carveouts: CARVEOUTS_CC90,
    },
    // Blackwell consumer (RTX 50xx): 1536 threads, 24 blocks, 100 KiB (99 opt-in).
    ArchLimits {
        major: 12,
        minor: 0,
        name: "Blackwell (RTX 50xx)",
        warp_size: 32,
        max_threads_per_block: 1024,
        max_threads_per_sm: 1536,
        max_warps_per_sm: 48,
        max_blocks_per_sm: 24,
        regs_per_sm: 65536,
        regs_per_block: 65536,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        warp_alloc_granularity: 4,
        max_smem_per_sm: 100 * KIB,
        smem_per_block_default: 48 * KIB,
        smem_per_block_optin: 99 * KIB,
        smem_alloc_granularity: 128,
        reserved_smem_per_block: KIB,
        smem_carveouts: CARVEOUTS_CC86,
    },
];

impl ArchLimits {
    /// The limits for compute capability `major.minor`, or `None` if this
    /// lab has no table entry for it (an unknown SM is never guessed).
    pub fn for_cc(major: u32, minor: u32) -> Option<&'static ArchLimits> {
        ARCHS.iter().find(|a| a.major == major && a.minor == minor)
    }

    /// A generic "textbook" SM for hand calculations: `regs_per_sm`
    /// registers, `max_threads_per_sm` threads, `smem_per_sm` bytes of
    /// shared memory, 32-thread warps, 1024 threads and 255 registers per
    /// thread at most, no block cap ([`UNLIMITED`]), and no allocation
    /// granularity or reserved memory (units of 1). A block may use all of
    /// the SM's shared memory.
    pub const fn textbook(regs_per_sm: u32, max_threads_per_sm: u32, smem_per_sm: u32) -> Self {
        ArchLimits {
            major: 0,
            minor: 0,
            name: "textbook SM",
            warp_size: 32,
            max_threads_per_block: 1024,
            max_threads_per_sm,
            max_warps_per_sm: max_threads_per_sm / 32,
            max_blocks_per_sm: UNLIMITED,
            regs_per_sm,
            regs_per_block: regs_per_sm,
            max_regs_per_thread: 255,
            reg_alloc_unit: 1,
            warp_alloc_granularity: 1,
            max_smem_per_sm: smem_per_sm,
            smem_per_block_default: smem_per_sm,
            smem_per_block_optin: smem_per_sm,
            smem_alloc_granularity: 1,
            reserved_smem_per_block: 0,
            smem_carveouts: &[],
        }
    }

    /// Rounds `bytes` up to the smallest supported carveout (bytes), as the
    /// driver does when it configures the unified L1/shared storage. With
    /// no carveout list, or none large enough, `bytes` is returned as is.
    pub fn align_up_carveout(&self, bytes: u32) -> u32 {
        self.smem_carveouts.iter().copied().find(|&c| c >= bytes).unwrap_or(bytes)
    }
}

/// What one block of a kernel asks of an SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelResources {
    /// Threads per block.
    pub threads_per_block: u32,
    /// Registers per thread, as reported by `ptxas -v` or
    /// `CU_FUNC_ATTRIBUTE_NUM_REGS`.
    pub regs_per_thread: u32,
    /// Static shared memory per block, bytes (`__shared__` arrays).
    pub static_smem_bytes: u32,
    /// Dynamic shared memory per block, bytes (the launch parameter).
    pub dynamic_smem_bytes: u32,
}

impl KernelResources {
    /// A block of `threads_per_block` threads using `regs_per_thread`
    /// registers each and no shared memory.
    pub const fn new(threads_per_block: u32, regs_per_thread: u32) -> Self {
        KernelResources { threads_per_block, regs_per_thread, static_smem_bytes: 0, dynamic_smem_bytes: 0 }
    }

    /// The same kernel with `bytes` of static shared memory per block.
    pub const fn with_static_smem(mut self, bytes: u32) -> Self {
        self.static_smem_bytes = bytes;
        self
    }

    /// The same kernel launched with `bytes` of dynamic shared memory per
    /// block.
    pub const fn with_dynamic_smem(mut self, bytes: u32) -> Self {
        self.dynamic_smem_bytes = bytes;
        self
    }

    /// Static plus dynamic shared memory per block, bytes (widened so that
    /// the sum cannot overflow).
    pub const fn smem_bytes(&self) -> u64 {
        self.static_smem_bytes as u64 + self.dynamic_smem_bytes as u64
    }
}

/// Which rules the calculator applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Textbook arithmetic: exact division of each resource, no
    /// granularity. Blocks = min(floor(regs_per_sm / (threads * regs)),
    /// floor(max_threads_per_sm / threads), floor(smem_per_sm /
    /// smem_per_block), block cap). Occupancy = active threads / max
    /// threads per SM.
    Simple,
    /// The driver's rules from `cuda_occupancy.h` (see the module docs):
    /// warp rounding, per-warp register allocation split over the SM's
    /// sub-partitions, shared memory rounded to its granularity plus the
    /// reserved per-block bytes. Occupancy = active warps / max warps per SM.
    Hardware,
}

/// The resource that caps the number of resident blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Warp (thread) slots of the SM.
    Warps,
    /// The register file.
    Registers,
    /// Shared memory.
    SharedMemory,
    /// The architecture's maximum resident blocks per SM.
    BlockCap,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::Warps => "warps (threads per SM)",
            Limit::Registers => "registers",
            Limit::SharedMemory => "shared memory",
            Limit::BlockCap => "blocks per SM",
        })
    }
}

/// The result of an occupancy calculation for one SM.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Occupancy {
    /// The rules used.
    pub mode: Mode,
    /// Blocks allowed by warp (thread) slots.
    pub blocks_by_warps: u32,
    /// Blocks allowed by the register file ([`UNLIMITED`] if the kernel
    /// uses no registers).
    pub blocks_by_regs: u32,
    /// Blocks allowed by shared memory ([`UNLIMITED`] if a block uses none).
    pub blocks_by_smem: u32,
    /// Blocks allowed by the per-SM block cap.
    pub blocks_by_block_cap: u32,
    /// Resident blocks: the minimum of the four limits.
    pub active_blocks: u32,
    /// The limit that set `active_blocks`. On a tie the first of
    /// Warps, Registers, SharedMemory, BlockCap is reported (the order of
    /// the `cudaOccLimitingFactor` bits); [`Occupancy::limiting_factors`]
    /// lists every limit that ties.
    pub limiting: Limit,
    /// Registers one block is charged for (exact in Simple mode; rounded
    /// per warp in Hardware mode).
    pub regs_per_block: u32,
    /// Shared memory one block is charged for, bytes (static + dynamic in
    /// Simple mode; plus reserved, rounded to the granularity, in Hardware
    /// mode).
    pub smem_per_block: u32,
    /// Resident warps: `active_blocks * ceil(threads / 32)`.
    pub active_warps: u32,
    /// Resident threads: `active_blocks * threads_per_block`.
    pub active_threads: u32,
    /// Occupancy as a fraction in 0..=1: active threads / max threads per
    /// SM in Simple mode, active warps / max warps per SM in Hardware mode
    /// (the definition Nsight Compute and the CUDA docs use).
    pub occupancy: f64,
}

impl Occupancy {
    /// Every limit equal to `active_blocks`, in the order Warps, Registers,
    /// SharedMemory, BlockCap (as `cuda_occupancy.h` sets several
    /// `limitingFactors` bits on a tie).
    pub fn limiting_factors(&self) -> Vec<Limit> {
        [
            (Limit::Warps, self.blocks_by_warps),
            (Limit::Registers, self.blocks_by_regs),
            (Limit::SharedMemory, self.blocks_by_smem),
            (Limit::BlockCap, self.blocks_by_block_cap),
        ]
        .into_iter()
        .filter(|&(_, b)| b == self.active_blocks)
        .map(|(l, _)| l)
        .collect()
    }
}

/// Why a kernel configuration cannot be evaluated (it could not launch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OccupancyError {
    /// A block needs at least one thread.
    ZeroThreads,
    /// More threads per block than the architecture allows.
    TooManyThreads {
        /// Threads per block requested.
        threads: u32,
        /// The architecture's maximum threads per block.
        max: u32,
    },
    /// More registers per thread than the architecture allows.
    TooManyRegisters {
        /// Registers per thread requested.
        regs: u32,
        /// The architecture's maximum registers per thread.
        max: u32,
    },
    /// More shared memory per block than the opt-in limit.
    TooMuchSharedMemory {
        /// Static + dynamic shared memory per block requested, bytes.
        bytes: u64,
        /// The opt-in maximum per block, bytes.
        max: u32,
    },
}

impl fmt::Display for OccupancyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OccupancyError::ZeroThreads => {
                write!(f, "threads per block is 0; a block needs at least 1 thread")
            }
            OccupancyError::TooManyThreads { threads, max } => {
                write!(f, "threads per block {threads} exceeds the limit of {max}")
            }
            OccupancyError::TooManyRegisters { regs, max } => {
                write!(f, "registers per thread {regs} exceeds the limit of {max}")
            }
            OccupancyError::TooMuchSharedMemory { bytes, max } => {
                write!(f, "shared memory per block {bytes} bytes exceeds the opt-in limit of {max} bytes")
            }
        }
    }
}

impl std::error::Error for OccupancyError {}

fn div_ceil(x: u64, y: u64) -> u64 {
    x.div_ceil(y)
}

fn round_up(x: u64, unit: u64) -> u64 {
    div_ceil(x, unit) * unit
}

/// Clamps a count to `u32`, saturating at [`UNLIMITED`].
fn clamp_u32(x: u64) -> u32 {
    u32::try_from(x).unwrap_or(UNLIMITED)
}

fn validate(arch: &ArchLimits, res: &KernelResources) -> Result<(), OccupancyError> {
    if res.threads_per_block == 0 {
        return Err(OccupancyError::ZeroThreads);
    }
    if res.threads_per_block > arch.max_threads_per_block {
        return Err(OccupancyError::TooManyThreads { threads: res.threads_per_block, max: arch.max_threads_per_block });
    }
    if res.regs_per_thread > arch.max_regs_per_thread {
        return Err(OccupancyError::TooManyRegisters { regs: res.regs_per_thread, max: arch.max_regs_per_thread });
    }
    // A launch above 48 KiB must have opted in; the opt-in maximum is the
    // hard ceiling either way (`cudaOccSMemPerBlock`).
    if res.smem_bytes() > u64::from(arch.smem_per_block_optin) {
        return Err(OccupancyError::TooMuchSharedMemory { bytes: res.smem_bytes(), max: arch.smem_per_block_optin });
    }
    Ok(())
}

/// Blocks allowed by registers, and the registers charged per block.
fn regs_limit(arch: &ArchLimits, res: &KernelResources, mode: Mode) -> (u32, u32) {
    let threads = u64::from(res.threads_per_block);
    let regs = u64::from(res.regs_per_thread);
    if regs == 0 {
        return (UNLIMITED, 0);
    }
    match mode {
        Mode::Simple => {
            let per_block = threads * regs;
            (clamp_u32(u64::from(arch.regs_per_sm) / per_block), clamp_u32(per_block))
        }
        Mode::Hardware => {
            let warp = u64::from(arch.warp_size);
            let warps = div_ceil(threads, warp);
            // Registers are handed out per warp, in allocation units.
            let per_warp = round_up(regs * warp, u64::from(arch.reg_alloc_unit));
            let per_block = per_warp * warps;
            let parts = u64::from(arch.warp_alloc_granularity);
            // The hardware's per-block check pretends every sub-partition
            // gets a share, so the warp count is rounded up to `parts`.
            let assumed = per_warp * round_up(warps, parts);
            let cap = u64::from(arch.regs_per_block);
            if assumed > cap || per_block > cap {
                return (0, clamp_u32(per_block));
            }
            // A warp's registers live in one sub-partition's slice of the
            // register file, so leftovers in different slices cannot pool.
            let warps_per_part = (u64::from(arch.regs_per_sm) / parts) / per_warp;
            (clamp_u32(warps_per_part * parts / warps), clamp_u32(per_block))
        }
    }
}

/// Blocks allowed by shared memory, and the bytes charged per block.
fn smem_limit(arch: &ArchLimits, res: &KernelResources, mode: Mode) -> (u32, u32) {
    match mode {
        Mode::Simple => {
            let per_block = res.smem_bytes();
            if per_block == 0 {
                return (UNLIMITED, 0);
            }
            (clamp_u32(u64::from(arch.max_smem_per_sm) / per_block), clamp_u32(per_block))
        }
        Mode::Hardware => {
            let used = res.smem_bytes() + u64::from(arch.reserved_smem_per_block);
            let per_block = round_up(used, u64::from(arch.smem_alloc_granularity));
            if per_block == 0 {
                return (UNLIMITED, 0);
            }
            let per_block32 = clamp_u32(per_block);
            // No carveout preference: the SM offers its full capacity,
            // aligned to a supported carveout; if one block needed more the
            // driver would align up to that block's size instead.
            let mut per_sm = arch.align_up_carveout(arch.max_smem_per_sm);
            if u64::from(per_sm) < per_block {
                per_sm = arch.align_up_carveout(per_block32);
            }
            (clamp_u32(u64::from(per_sm) / per_block), per_block32)
        }
    }
}

/// Computes resident blocks per SM and occupancy for `res` on `arch`.
///
/// # Errors
/// Returns an [`OccupancyError`] when the block could not launch at all:
/// zero or too many threads, too many registers per thread, or more shared
/// memory than the opt-in limit.
pub fn occupancy(arch: &ArchLimits, res: &KernelResources, mode: Mode) -> Result<Occupancy, OccupancyError> {
    validate(arch, res)?;
    let threads = res.threads_per_block;
    let warps_per_block = threads.div_ceil(arch.warp_size);
    let blocks_by_warps = match mode {
        Mode::Simple => arch.max_threads_per_sm / threads,
        Mode::Hardware => arch.max_warps_per_sm / warps_per_block,
    };
    let (blocks_by_regs, regs_per_block) = regs_limit(arch, res, mode);
    let (blocks_by_smem, smem_per_block) = smem_limit(arch, res, mode);
    let blocks_by_block_cap = arch.max_blocks_per_sm;
    let active_blocks = blocks_by_warps.min(blocks_by_regs).min(blocks_by_smem).min(blocks_by_block_cap);
    let limiting = if active_blocks == blocks_by_warps {
        Limit::Warps
    } else if active_blocks == blocks_by_regs {
        Limit::Registers
    } else if active_blocks == blocks_by_smem {
        Limit::SharedMemory
    } else {
        Limit::BlockCap
    };
    let active_warps = active_blocks * warps_per_block;
    let active_threads = active_blocks * threads;
    let occupancy = match mode {
        Mode::Simple => f64::from(active_threads) / f64::from(arch.max_threads_per_sm),
        Mode::Hardware => f64::from(active_warps) / f64::from(arch.max_warps_per_sm),
    };
    Ok(Occupancy {
        mode,
        blocks_by_warps,
        blocks_by_regs,
        blocks_by_smem,
        blocks_by_block_cap,
        active_blocks,
        limiting,
        regs_per_block,
        smem_per_block,
        active_warps,
        active_threads,
        occupancy,
    })
}

/// Largest `x` in `lo..=hi` for which `pred` holds, given that `pred` is
/// true up to some point and false after it; `None` if it fails at `lo`.
fn largest_satisfying(lo: u32, hi: u32, pred: impl Fn(u32) -> bool) -> Option<u32> {
    if lo > hi || !pred(lo) {
        return None;
    }
    let (mut good, mut bad) = (lo, u64::from(hi) + 1);
    while u64::from(good) + 1 < bad {
        // `mid` < `bad` <= hi + 1, so it fits in u32.
        let mid = clamp_u32((u64::from(good) + bad) / 2);
        if pred(mid) {
            good = mid;
        } else {
            bad = u64::from(mid);
        }
    }
    Some(good)
}

/// The largest registers per thread (1..=255) for which the register file
/// alone still admits `blocks` blocks of `threads_per_block` threads, or
/// `None` if even 1 register per thread does not.
pub fn max_regs_per_thread_for(arch: &ArchLimits, threads_per_block: u32, blocks: u32, mode: Mode) -> Option<u32> {
    largest_satisfying(1, arch.max_regs_per_thread, |r| {
        let res = KernelResources::new(threads_per_block, r);
        regs_limit(arch, &res, mode).0 >= blocks
    })
}

/// Register budgets around a kernel's current occupancy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegisterTargets {
    /// Largest registers per thread that keeps the current resident
    /// blocks, everything else unchanged.
    pub keep_current: u32,
    /// The most resident blocks any register count can give (registers
    /// reduced to 1 per thread; other limits unchanged).
    pub best_blocks: u32,
    /// Occupancy fraction at `best_blocks` (1.0 when 100% is reachable).
    pub best_occupancy: f64,
    /// Largest registers per thread that still reaches `best_blocks`.
    pub for_best: u32,
}

/// How far registers per thread can rise without losing occupancy, and how
/// far they must fall to reach the best occupancy the other limits allow.
///
/// # Errors
/// As [`occupancy`], for the kernel as given.
pub fn register_targets(
    arch: &ArchLimits,
    res: &KernelResources,
    mode: Mode,
) -> Result<RegisterTargets, OccupancyError> {
    let current = occupancy(arch, res, mode)?;
    let blocks_with = |r: u32| {
        let mut k = *res;
        k.regs_per_thread = r;
        occupancy(arch, &k, mode).map_or(0, |o| o.active_blocks)
    };
    let best = occupancy(arch, &KernelResources { regs_per_thread: 1, ..*res }, mode)?;
    // Both searches start at 1 register, where blocks >= both targets.
    let keep_current =
        largest_satisfying(1, arch.max_regs_per_thread, |r| blocks_with(r) >= current.active_blocks).unwrap_or(1);
    let for_best =
        largest_satisfying(1, arch.max_regs_per_thread, |r| blocks_with(r) >= best.active_blocks).unwrap_or(1);
    Ok(RegisterTargets { keep_current, best_blocks: best.active_blocks, best_occupancy: best.occupancy, for_best })
}

/// Dynamic shared-memory budgets around a kernel's current occupancy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SharedMemoryTargets {
    /// Largest dynamic shared memory per block, bytes, that keeps the
    /// current resident blocks (static shared memory unchanged).
    pub keep_current: u32,
    /// Resident blocks one step up (current + 1), if shrinking dynamic
    /// shared memory can reach it, with the largest dynamic bytes per block
    /// that do.
    pub next_step: Option<(u32, u32)>,
}

/// How much dynamic shared memory per block keeps the current occupancy,
/// and how little is needed for one more resident block.
///
/// # Errors
/// As [`occupancy`], for the kernel as given.
pub fn shared_memory_targets(
    arch: &ArchLimits,
    res: &KernelResources,
    mode: Mode,
) -> Result<SharedMemoryTargets, OccupancyError> {
    let current = occupancy(arch, res, mode)?;
    let blocks_with = |d: u32| {
        let mut k = *res;
        k.dynamic_smem_bytes = d;
        occupancy(arch, &k, mode).map_or(0, |o| o.active_blocks)
    };
    // validate() guarantees static <= opt-in.
    let max_dynamic = arch.smem_per_block_optin - res.static_smem_bytes;
    let keep_current = largest_satisfying(0, max_dynamic, |d| blocks_with(d) >= current.active_blocks).unwrap_or(0);
    let target = current.active_blocks.saturating_add(1);
    let next_step = largest_satisfying(0, max_dynamic, |d| blocks_with(d) >= target).map(|d| (target, d));
    Ok(SharedMemoryTargets { keep_current, next_step })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed's generic SM: 65536 registers, 2048 threads, and (for Ex4)
    /// 48 KiB of shared memory.
    const SM: ArchLimits = ArchLimits::textbook(65536, 2048, 48 * 1024);

    fn simple(threads: u32, regs: u32) -> Occupancy {
        occupancy(&SM, &KernelResources::new(threads, regs), Mode::Simple).unwrap()
    }

    fn h200(res: KernelResources) -> Occupancy {
        let arch = ArchLimits::for_cc(9, 0).unwrap();
        occupancy(arch, &res, Mode::Hardware).unwrap()
    }

    #[test]
    fn ex1_registers_cap_at_three_blocks() {
        let o = simple(512, 40);
        assert_eq!(o.blocks_by_regs, 3);
        assert_eq!(o.blocks_by_warps, 4);
        assert_eq!(o.active_blocks, 3);
        assert_eq!(o.active_threads, 1536);
        assert_eq!(o.occupancy, 0.75);
        assert_eq!(o.limiting, Limit::Registers);
        // 4096 registers are stranded.
        assert_eq!(SM.regs_per_sm - 3 * o.regs_per_block, 4096);
    }

    #[test]
    fn ex2_exact_division_no_waste() {
        let o = simple(256, 32);
        assert_eq!(o.blocks_by_regs, 8);
        assert_eq!(o.active_blocks, 8);
        assert_eq!(o.active_threads, 2048);
        assert_eq!(o.occupancy, 1.0);
        assert_eq!(SM.regs_per_sm - o.active_blocks * o.regs_per_block, 0);
        // Both limits saturate; the tie rule reports warps first.
        assert_eq!(o.limiting, Limit::Warps);
        assert_eq!(o.limiting_factors(), vec![Limit::Warps, Limit::Registers]);
    }

    #[test]
    fn ex3_thread_cap_wins() {
        let o = simple(256, 16);
        assert_eq!(o.blocks_by_regs, 16);
        assert_eq!(o.blocks_by_warps, 8);
        assert_eq!(o.active_blocks, 8);
        assert_eq!(o.occupancy, 1.0);
        assert_eq!(o.limiting, Limit::Warps);
        assert_eq!(o.limiting_factors(), vec![Limit::Warps]);
    }

    #[test]
    fn ex4_shared_memory_limits() {
        let res = KernelResources::new(256, 32).with_dynamic_smem(20 * 1024);
        let o = occupancy(&SM, &res, Mode::Simple).unwrap();
        assert_eq!(o.blocks_by_regs, 8);
        assert_eq!(o.blocks_by_warps, 8);
        assert_eq!(o.blocks_by_smem, 2);
        assert_eq!(o.active_blocks, 2);
        assert_eq!(o.active_threads, 512);
        assert_eq!(o.occupancy, 0.25);
        assert_eq!(o.limiting, Limit::SharedMemory);
        // 24 KiB per block still fits two; 16 KiB fits three.
        let t = shared_memory_targets(&SM, &res, Mode::Simple).unwrap();
        assert_eq!(t.keep_current, 24 * 1024);
        assert_eq!(t.next_step, Some((3, 16 * 1024)));
    }

    #[test]
    fn ex9_register_extreme_and_reverse() {
        let o = simple(128, 255);
        assert_eq!(o.blocks_by_regs, 2);
        assert_eq!(o.active_blocks, 2);
        assert_eq!(o.active_threads, 256);
        assert_eq!(o.occupancy, 0.125);
        assert_eq!(o.limiting, Limit::Registers);
        assert_eq!(max_regs_per_thread_for(&SM, 128, 16, Mode::Simple), Some(32));
        let t = register_targets(&SM, &KernelResources::new(128, 255), Mode::Simple).unwrap();
        assert_eq!(t.best_blocks, 16);
        assert_eq!(t.best_occupancy, 1.0);
        assert_eq!(t.for_best, 32);
        // 2 blocks survive up to floor(65536 / (2 * 128)) = 256 -> capped at 255.
        assert_eq!(t.keep_current, 255);
    }

    #[test]
    fn ex1_register_targets() {
        let t = register_targets(&SM, &KernelResources::new(512, 40), Mode::Simple).unwrap();
        // 3 blocks of 512 keep up to floor(65536 / 1536) = 42 registers.
        assert_eq!(t.keep_current, 42);
        // 4 blocks (100%) need <= 65536 / 2048 = 32.
        assert_eq!(t.best_blocks, 4);
        assert_eq!(t.for_best, 32);
    }

    // Hardware mode on cc 9.0: 65536 regs in 4 slices of 16384, 256-register
    // units per warp, 64 warps, 32 blocks, 228 KiB shared, 1 KiB reserved
    // per block, 128-byte shared granularity.

    #[test]
    fn h200_256x32_is_eight_blocks() {
        // 32 * 32 = 1024 regs/warp; 16384 / 1024 = 16 warps per slice,
        // 64 per SM; 64 / 8 warps = 8 blocks. Warps also allow 64 / 8 = 8.
        let o = h200(KernelResources::new(256, 32));
        assert_eq!(o.blocks_by_regs, 8);
        assert_eq!(o.blocks_by_warps, 8);
        assert_eq!(o.active_blocks, 8);
        assert_eq!(o.occupancy, 1.0);
        // 1 KiB reserved: 233472 / 1024 = 228 blocks by shared memory.
        assert_eq!(o.smem_per_block, 1024);
        assert_eq!(o.blocks_by_smem, 228);
    }

    #[test]
    fn h200_1024x64_is_one_block() {
        // 2048 regs/warp; 8 warps per slice, 32 per SM; one 32-warp block.
        let o = h200(KernelResources::new(1024, 64));
        assert_eq!(o.blocks_by_regs, 1);
        assert_eq!(o.blocks_by_warps, 2);
        assert_eq!(o.active_blocks, 1);
        assert_eq!(o.limiting, Limit::Registers);
        assert_eq!(o.occupancy, 0.5);
    }

    #[test]
    fn h200_128x255_rounds_per_warp() {
        // 255 * 32 = 8160 -> 8192 per warp; 2 warps per slice, 8 per SM;
        // 8 / 4 warps = 2 blocks (the Simple answer too, by luck).
        let o = h200(KernelResources::new(128, 255));
        assert_eq!(o.regs_per_block, 4 * 8192);
        assert_eq!(o.active_blocks, 2);
        assert_eq!(o.occupancy, 8.0 / 64.0);
        let arch = ArchLimits::for_cc(9, 0).unwrap();
        assert_eq!(max_regs_per_thread_for(arch, 128, 16, Mode::Hardware), Some(32));
    }

    #[test]
    fn h200_rounding_costs_a_block() {
        // 33 regs: Simple gives floor(65536 / 8448) = 7. Hardware rounds
        // 33 * 32 = 1056 up to 1280 per warp: 12 warps per slice, 48 per
        // SM, 6 blocks of 8 warps.
        let res = KernelResources::new(256, 33);
        let arch = ArchLimits::for_cc(9, 0).unwrap();
        assert_eq!(occupancy(arch, &res, Mode::Simple).unwrap().active_blocks, 7);
        assert_eq!(h200(res).active_blocks, 6);
    }

    #[test]
    fn h200_subpartition_split_costs_a_block() {
        // 96 threads (3 warps) x 40 regs = 1280 per warp. Pooled, 65536 /
        // 1280 = 51 warps = 17 blocks; split per slice, 4 * 12 = 48 warps =
        // 16 blocks.
        let res = KernelResources::new(96, 40);
        let arch = ArchLimits::for_cc(9, 0).unwrap();
        assert_eq!(occupancy(arch, &res, Mode::Simple).unwrap().blocks_by_regs, 17);
        let o = h200(res);
        assert_eq!(o.blocks_by_regs, 16);
        assert_eq!(o.blocks_by_warps, 21);
        assert_eq!(o.active_blocks, 16);
    }

    #[test]
    fn h200_100_kib_dynamic_is_two_blocks() {
        // 102400 + 1024 reserved = 103424 (a multiple of 128);
        // 233472 / 103424 = 2.26 -> 2 blocks.
        let o = h200(KernelResources::new(256, 32).with_dynamic_smem(100 * 1024));
        assert_eq!(o.smem_per_block, 103_424);
        assert_eq!(o.blocks_by_smem, 2);
        assert_eq!(o.active_blocks, 2);
        assert_eq!(o.limiting, Limit::SharedMemory);
        assert_eq!(o.occupancy, 16.0 / 64.0);
    }

    #[test]
    fn h200_smem_rounding_and_targets() {
        // 1000 + 1024 = 2024 -> 2048 per block; 233472 / 2048 = 114.
        let o = h200(KernelResources::new(32, 16).with_static_smem(1000));
        assert_eq!(o.smem_per_block, 2048);
        assert_eq!(o.blocks_by_smem, 114);
        assert_eq!(o.active_blocks, 32);
        assert_eq!(o.limiting, Limit::BlockCap);
        // 100 KiB dynamic keeps 2 blocks up to floor(233472 / 2 / 128) * 128
        // - 1024 = 115712 bytes; 3 blocks need <= 233472 / 3 - 1024 = 76800.
        let arch = ArchLimits::for_cc(9, 0).unwrap();
        let res = KernelResources::new(256, 32).with_dynamic_smem(100 * 1024);
        let t = shared_memory_targets(arch, &res, Mode::Hardware).unwrap();
        assert_eq!(t.keep_current, 115_712);
        assert_eq!(t.next_step, Some((3, 76_800)));
    }

    #[test]
    fn matches_cuda_occupancy_h_on_h200() {
        // (threads, regs, static, dynamic) -> (blocks, by warps, by regs,
        // by smem, smem charged), as printed by the CUDA 13.0
        // cudaOccMaxActiveBlocksPerMultiprocessor with the H200's
        // cudaGetDeviceProperties (opt-in shared memory allowed).
        let cases: [([u32; 4], [u32; 5]); 10] = [
            ([512, 40, 0, 0], [3, 4, 3, 228, 1024]),
            ([128, 32, 0, 0], [16, 16, 16, 228, 1024]),
            ([128, 33, 0, 0], [12, 16, 12, 228, 1024]),
            ([1024, 65, 0, 0], [0, 2, 0, 228, 1024]),
            ([256, 32, 0, 115_712], [2, 8, 8, 2, 116_736]),
            ([256, 32, 0, 115_713], [1, 8, 8, 1, 116_864]),
            ([256, 32, 0, 76_800], [3, 8, 8, 3, 77_824]),
            ([256, 32, 0, 76_801], [2, 8, 8, 2, 77_952]),
            ([128, 32, 0, 232_448], [1, 16, 16, 1, 233_472]),
            ([32, 16, 1000, 0], [32, 64, 128, 114, 2048]),
        ];
        for ([t, r, s, d], [blocks, w, regs, smem, charged]) in cases {
            let o = h200(KernelResources::new(t, r).with_static_smem(s).with_dynamic_smem(d));
            let got = [o.active_blocks, o.blocks_by_warps, o.blocks_by_regs, o.blocks_by_smem, o.smem_per_block];
            assert_eq!(got, [blocks, w, regs, smem, charged], "{t} {r} {s} {d}");
            assert_eq!(o.blocks_by_block_cap, 32);
        }
    }

    #[test]
    fn block_cap_binds_for_small_blocks() {
        // 32-thread blocks: warps allow 64, cap is 32 on cc 9.0, 16 on 8.6.
        let o = h200(KernelResources::new(32, 16));
        assert_eq!(o.active_blocks, 32);
        assert_eq!(o.limiting, Limit::BlockCap);
        assert_eq!(o.occupancy, 0.5);
        let ga10x = ArchLimits::for_cc(8, 6).unwrap();
        let o = occupancy(ga10x, &KernelResources::new(32, 16), Mode::Hardware).unwrap();
        assert_eq!(o.active_blocks, 16);
        assert_eq!(o.occupancy, 16.0 / 48.0);
    }

    #[test]
    fn turing_has_no_reserved_smem_and_256_byte_granularity() {
        let t4 = ArchLimits::for_cc(7, 5).unwrap();
        let res = KernelResources::new(128, 32).with_static_smem(100);
        let o = occupancy(t4, &res, Mode::Hardware).unwrap();
        assert_eq!(o.smem_per_block, 256);
        assert_eq!(o.blocks_by_smem, 65536 / 256);
        // 1024 threads per SM: 8 blocks of 4 warps.
        assert_eq!(o.active_blocks, 8);
    }

    #[test]
    fn table_is_consistent() {
        for a in &ARCHS {
            assert_eq!(a.max_warps_per_sm * a.warp_size, a.max_threads_per_sm);
            assert!(a.smem_per_block_optin <= a.max_smem_per_sm);
            assert_eq!(a.align_up_carveout(a.max_smem_per_sm), a.max_smem_per_sm);
            assert_eq!(ArchLimits::for_cc(a.major, a.minor), Some(a));
        }
        assert_eq!(ArchLimits::for_cc(9, 0).unwrap().max_smem_per_sm, 233_472);
        assert_eq!(ArchLimits::for_cc(9, 0).unwrap().smem_per_block_optin, 232_448);
        assert!(ArchLimits::for_cc(6, 1).is_none());
    }

    #[test]
    fn errors_name_the_limit() {
        let arch = ArchLimits::for_cc(9, 0).unwrap();
        let e = occupancy(arch, &KernelResources::new(0, 32), Mode::Hardware).unwrap_err();
        assert_eq!(e, OccupancyError::ZeroThreads);
        let e = occupancy(arch, &KernelResources::new(1025, 32), Mode::Simple).unwrap_err();
        assert_eq!(e.to_string(), "threads per block 1025 exceeds the limit of 1024");
        let e = occupancy(arch, &KernelResources::new(128, 256), Mode::Hardware).unwrap_err();
        assert_eq!(e.to_string(), "registers per thread 256 exceeds the limit of 255");
        let res = KernelResources::new(128, 32).with_static_smem(1024).with_dynamic_smem(227 * 1024);
        let e = occupancy(arch, &res, Mode::Hardware).unwrap_err();
        assert_eq!(e.to_string(), "shared memory per block 233472 bytes exceeds the opt-in limit of 232448 bytes");
        // Exactly at the opt-in limit is fine: one block.
        let res = KernelResources::new(128, 32).with_dynamic_smem(227 * 1024);
        assert_eq!(occupancy(arch, &res, Mode::Hardware).unwrap().active_blocks, 1);
    }

    #[test]
    fn zero_registers_and_smem_are_unlimited() {
        let o = simple(64, 0);
        assert_eq!(o.blocks_by_regs, UNLIMITED);
        assert_eq!(o.blocks_by_smem, UNLIMITED);
        assert_eq!(o.active_blocks, 32);
    }
}
