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

/// Carveout sizes (bytes) on cc 7.0 (Volta): 0, 8, 16, 32, 64, 96 KiB. Source:
/// `cudaOccAlignUpShmemSizeVoltaPlus` in `cuda_occupancy.h`.
const CARVEOUTS_CC70: &[u32] = &[0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 96 * KIB];
/// Carveout sizes (bytes) that the driver may configure on cc 7.5 (Turing):
/// 32 or 64 KiB of the unified L1/shared storage. Source:
/// `cudaOccAlignUpShmemSizeVoltaPlus` in `cuda_occupancy.h`.
const CARVEOUTS_CC75: &[u32] = &[32 * KIB, 64 * KIB];
/// Carveout sizes (bytes) on cc 8.0 (A100) and 8.7 (Orin): 0, 8, 16, 32, 64, 100, 132,
/// 164 KiB. Source: `cudaOccAlignUpShmemSizeVoltaPlus`.
const CARVEOUTS_CC80: &[u32] = &[0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 100 * KIB, 132 * KIB, 164 * KIB];
/// Carveout sizes (bytes) on cc 8.6 and 8.9: 0, 8, 16, 32, 64, 100 KiB.
/// Source: `cudaOccAlignUpShmemSizeVoltaPlus`; CUDA 13.0 lists the same
/// sizes for cc 12.0 and 12.1.
const CARVEOUTS_CC86: &[u32] = &[0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 100 * KIB];
/// Carveout sizes (bytes) on cc 9.0 (H100/H200): 0, 8, 16, 32, 64, 100,
/// 132, 164, 196, 228 KiB. Source: `cudaOccAlignUpShmemSizeVoltaPlus`
/// (CUDA 12.6); CUDA 13.0 lists the same sizes for cc 10.0, 10.3 and 11.0.
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

/// One table row: only what differs between architectures; the rest is common to every
/// compute capability from 7.0 to 12.1 (32-thread warps, 1024 threads and 64 Ki registers per
/// block, 64 Ki registers per SM, 255 registers per thread, 256-register allocation unit, 4
/// sub-partitions, 48 KiB per block without opt-in).
#[allow(clippy::too_many_arguments)]
const fn arch(
    (major, minor): (u32, u32),
    name: &'static str,
    max_threads_per_sm: u32,
    max_blocks_per_sm: u32,
    max_smem_per_sm: u32,
    smem_per_block_optin: u32,
    (smem_alloc_granularity, reserved_smem_per_block): (u32, u32),
    smem_carveouts: &'static [u32],
) -> ArchLimits {
    ArchLimits {
        major,
        minor,
        name,
        warp_size: 32,
        max_threads_per_block: 1024,
        max_threads_per_sm,
        max_warps_per_sm: max_threads_per_sm / 32,
        max_blocks_per_sm,
        regs_per_sm: 65536,
        regs_per_block: 65536,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        warp_alloc_granularity: 4,
        max_smem_per_sm,
        smem_per_block_default: 48 * KIB,
        smem_per_block_optin,
        smem_alloc_granularity,
        reserved_smem_per_block,
        smem_carveouts,
    }
}

/// Shared-memory allocation granularity and reserved bytes per block: 256 B and none on cc
/// 7.x, 128 B and 1 KiB from cc 8.0 (`cudaOccSMemAllocationGranularity`,
/// `reservedSharedMemPerBlock`).
const SMEM_CC7: (u32, u32) = (256, 0);
/// See [`SMEM_CC7`].
const SMEM_CC8_PLUS: (u32, u32) = (128, KIB);

/// The architectures this lab knows, as data, in the order of their compute capability.
/// Threads, blocks and shared memory per SM and the opt-in per block come from the CUDA C++
/// Programming Guide, "Compute Capabilities" (CUDA 13: tables 30-32, columns 7.5 to 12.x; cc 7.0,
/// which CUDA 13 no longer compiles for, from the CUDA 12 guide's table); block caps,
/// granularities and carveouts from `cuda_occupancy.h` (CUDA 13.0, which covers up to cc 12.1,
/// Volta included), whose carveouts equal the guide's "SMEM Capacity Sizes".
pub const ARCHS: [ArchLimits; 12] = [
    // Volta (V100): 2048 threads, 32 blocks, 96 KiB shared, all of it per block with opt-in.
    arch((7, 0), "Volta", 2048, 32, 96 * KIB, 96 * KIB, SMEM_CC7, CARVEOUTS_CC70),
    // Turing (T4, RTX 20xx): 1024 threads, 16 blocks, 64 KiB shared.
    arch((7, 5), "Turing", 1024, 16, 64 * KIB, 64 * KIB, SMEM_CC7, CARVEOUTS_CC75),
    // Ampere A100: 2048 threads, 32 blocks, 164 KiB shared (163 opt-in).
    arch((8, 0), "Ampere (A100)", 2048, 32, 164 * KIB, 163 * KIB, SMEM_CC8_PLUS, CARVEOUTS_CC80),
    // Ampere GA10x: 1536 threads, 16 blocks, 100 KiB shared (99 opt-in).
    arch((8, 6), "Ampere (GA10x)", 1536, 16, 100 * KIB, 99 * KIB, SMEM_CC8_PLUS, CARVEOUTS_CC86),
    // Jetson Orin: 1536 threads, 16 blocks, 164 KiB shared (163 opt-in), A100's carveouts.
    arch((8, 7), "Ampere (Orin)", 1536, 16, 164 * KIB, 163 * KIB, SMEM_CC8_PLUS, CARVEOUTS_CC80),
    // Ada Lovelace: 1536 threads, 24 blocks, 100 KiB shared (99 opt-in).
    arch((8, 9), "Ada Lovelace", 1536, 24, 100 * KIB, 99 * KIB, SMEM_CC8_PLUS, CARVEOUTS_CC86),
    // Hopper (H100/H200): 2048 threads, 32 blocks, 228 KiB shared (227 opt-in).
    arch((9, 0), "Hopper", 2048, 32, 228 * KIB, 227 * KIB, SMEM_CC8_PLUS, CARVEOUTS_CC90),
    // Blackwell data centre (B200): same SM limits as Hopper.
    arch((10, 0), "Blackwell (B200)", 2048, 32, 228 * KIB, 227 * KIB, SMEM_CC8_PLUS, CARVEOUTS_CC90),
    // Blackwell Ultra (B300): the B200's SM limits.
    arch((10, 3), "Blackwell Ultra (B300)", 2048, 32, 228 * KIB, 227 * KIB, SMEM_CC8_PLUS, CARVEOUTS_CC90),
    // Jetson Thor: 1536 threads, 24 blocks, 228 KiB shared (227 opt-in).
    arch((11, 0), "Blackwell (Thor)", 1536, 24, 228 * KIB, 227 * KIB, SMEM_CC8_PLUS, CARVEOUTS_CC90),
    // Blackwell consumer (RTX 50xx): 1536 threads, 24 blocks, 100 KiB (99 opt-in).
    arch((12, 0), "Blackwell (RTX 50xx)", 1536, 24, 100 * KIB, 99 * KIB, SMEM_CC8_PLUS, CARVEOUTS_CC86),
    // DGX Spark (GB10): the RTX 50xx's SM limits.
    arch((12, 1), "Blackwell (GB10)", 1536, 24, 100 * KIB, 99 * KIB, SMEM_CC8_PLUS, CARVEOUTS_CC86),
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
    /// Whether the kernel has opted in to more than 48 KiB of shared memory per block
    /// (`cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)` with
    /// bytes at least this launch's dynamic shared memory; Programming Guide, "Shared Memory"
    /// for cc 7.x and later). Without it a block may use 48 KiB, static and dynamic together.
    pub smem_opt_in: bool,
}

impl KernelResources {
    /// A block of `threads_per_block` threads using `regs_per_thread`
    /// registers each and no shared memory.
    pub const fn new(threads_per_block: u32, regs_per_thread: u32) -> Self {
        KernelResources {
            threads_per_block,
            regs_per_thread,
            static_smem_bytes: 0,
            dynamic_smem_bytes: 0,
            smem_opt_in: false,
        }
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

    /// The same kernel after it opted in (`opt_in`) or not to more than 48 KiB of shared
    /// memory per block.
    pub const fn with_opt_in(mut self, opt_in: bool) -> Self {
        self.smem_opt_in = opt_in;
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
    /// Why the launch fails, when not even one block fits.
    pub failure: Option<LaunchFailure>,
}

/// Why a launch of the kernel fails: one block asks for more than an SM may give one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchFailure {
    /// The block's registers exceed the per-block limit (the launch fails with
    /// `cudaErrorLaunchOutOfResources`, "too many resources requested for launch").
    Registers {
        /// Registers allocated to the block: per warp, rounded to the allocation unit.
        allocated: u32,
        /// What the hardware's check assumes: the warp count rounded up to the sub-partitions.
        assumed: u32,
        /// Registers one block may have.
        limit: u32,
    },
    /// Static plus dynamic shared memory exceeds what one block may have (the launch fails
    /// with `cudaErrorInvalidValue`; above 48 KiB the kernel must opt in first).
    SharedMemory {
        /// Static + dynamic bytes asked for.
        requested: u64,
        /// The per-block limit that applies: 48 KiB, or the opt-in maximum.
        limit: u32,
        /// Whether the kernel opted in.
        opted_in: bool,
        /// Whether opting in raises the limit (not on a textbook SM, whose one limit is both).
        opt_in_raises: bool,
    },
}

impl fmt::Display for LaunchFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LaunchFailure::Registers { allocated, assumed, limit } if allocated == assumed => write!(
                f,
                "too many resources requested for launch: the block needs {allocated} registers, more than the \
                 {limit} one block may have"
            ),
            LaunchFailure::Registers { allocated, assumed, limit } => write!(
                f,
                "too many resources requested for launch: the block needs {allocated} registers ({assumed} as the \
                 hardware checks it, warps rounded up to the 4 sub-partitions), more than the {limit} one block may \
                 have"
            ),
            LaunchFailure::SharedMemory { requested, limit, opted_in: true, .. } => write!(
                f,
                "invalid argument: {requested} B of static + dynamic shared memory per block exceeds the opt-in \
                 limit of {limit} B (the limit applies to the sum)"
            ),
            LaunchFailure::SharedMemory { requested, limit, opted_in: false, opt_in_raises: false } => write!(
                f,
                "invalid argument: {requested} B of static + dynamic shared memory per block exceeds the {limit} B one \
                 block may have"
            ),
            LaunchFailure::SharedMemory { requested, limit, opted_in: false, opt_in_raises: true } => write!(
                f,
                "invalid argument: {requested} B of static + dynamic shared memory per block exceeds the {limit} B a \
                 kernel may use without opting in (cudaFuncSetAttribute with \
                 cudaFuncAttributeMaxDynamicSharedMemorySize)"
            ),
        }
    }
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
    /// More static shared memory (`__shared__` arrays) than a kernel may declare: 48 KiB;
    /// larger buffers must be dynamic (Programming Guide, "Shared Memory" for cc 7.x and later).
    TooMuchStaticSharedMemory {
        /// Static bytes asked for.
        bytes: u32,
        /// The static limit, bytes.
        max: u32,
    },
    /// More registers per thread than the architecture allows.
    TooManyRegisters {
        /// Registers per thread requested.
        regs: u32,
        /// The architecture's maximum registers per thread.
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
            OccupancyError::TooMuchStaticSharedMemory { bytes, max } => write!(
                f,
                "static shared memory {bytes} B exceeds the {max} B a kernel may declare in __shared__ arrays \
                 (larger buffers must be dynamic shared memory)"
            ),
            OccupancyError::TooManyRegisters { regs, max } => {
                write!(f, "registers per thread {regs} exceeds the limit of {max}")
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
    if res.static_smem_bytes > arch.smem_per_block_default {
        return Err(OccupancyError::TooMuchStaticSharedMemory {
            bytes: res.static_smem_bytes,
            max: arch.smem_per_block_default,
        });
    }
    Ok(())
}

/// What one resource allows: blocks per SM, what one block is charged, and why a launch fails
/// when not one block fits.
struct ResourceLimit {
    blocks: u32,
    per_block: u32,
    failure: Option<LaunchFailure>,
}

/// Blocks allowed by registers (`cudaOccMaxBlocksPerSMRegsLimit` in hardware mode).
fn regs_limit(arch: &ArchLimits, res: &KernelResources, mode: Mode) -> ResourceLimit {
    let threads = u64::from(res.threads_per_block);
    let regs = u64::from(res.regs_per_thread);
    if regs == 0 {
        return ResourceLimit { blocks: UNLIMITED, per_block: 0, failure: None };
    }
    let cap = u64::from(arch.regs_per_block);
    let fail = |allocated: u64, assumed: u64| {
        Some(LaunchFailure::Registers {
            allocated: clamp_u32(allocated),
            assumed: clamp_u32(assumed),
            limit: arch.regs_per_block,
        })
    };
    match mode {
        Mode::Simple => {
            let per_block = threads * regs;
            let blocks = clamp_u32(u64::from(arch.regs_per_sm) / per_block);
            let failure = if per_block > cap || blocks == 0 { fail(per_block, per_block) } else { None };
            ResourceLimit {
                blocks: if failure.is_some() { 0 } else { blocks },
                per_block: clamp_u32(per_block),
                failure,
            }
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
            if assumed > cap || per_block > cap {
                return ResourceLimit { blocks: 0, per_block: clamp_u32(per_block), failure: fail(per_block, assumed) };
            }
            // A warp's registers live in one sub-partition's slice of the
            // register file, so leftovers in different slices cannot pool.
            let warps_per_part = (u64::from(arch.regs_per_sm) / parts) / per_warp;
            ResourceLimit {
                blocks: clamp_u32(warps_per_part * parts / warps),
                per_block: clamp_u32(per_block),
                failure: None,
            }
        }
    }
}

/// Blocks allowed by shared memory (`cudaOccMaxBlocksPerSMSmemLimit` in hardware mode). The
/// per-block limit is 48 KiB, or the opt-in maximum after opting in, and applies to static
/// plus dynamic bytes (`cudaOccSMemPerBlock`); the driver's reserve is added to both sides.
fn smem_limit(arch: &ArchLimits, res: &KernelResources, mode: Mode) -> ResourceLimit {
    let limit = if res.smem_opt_in { arch.smem_per_block_optin } else { arch.smem_per_block_default };
    let failure = (res.smem_bytes() > u64::from(limit)).then_some(LaunchFailure::SharedMemory {
        requested: res.smem_bytes(),
        limit,
        opted_in: res.smem_opt_in,
        opt_in_raises: arch.smem_per_block_optin > arch.smem_per_block_default,
    });
    let (per_block, per_sm) = match mode {
        Mode::Simple => (res.smem_bytes(), u64::from(arch.max_smem_per_sm)),
        Mode::Hardware => {
            let used = res.smem_bytes() + u64::from(arch.reserved_smem_per_block);
            let per_block = round_up(used, u64::from(arch.smem_alloc_granularity));
            // No carveout preference: the SM offers its full capacity,
            // aligned to a supported carveout; if one block needed more the
            // driver would align up to that block's size instead.
            let mut per_sm = arch.align_up_carveout(arch.max_smem_per_sm);
            if u64::from(per_sm) < per_block {
                per_sm = arch.align_up_carveout(clamp_u32(per_block));
            }
            (per_block, u64::from(per_sm))
        }
    };
    let blocks = match (failure, per_block) {
        (Some(_), _) => 0,
        (None, 0) => UNLIMITED,
        (None, b) => clamp_u32(per_sm / b),
    };
    ResourceLimit { blocks, per_block: clamp_u32(per_block), failure }
}

/// Computes resident blocks per SM and occupancy for `res` on `arch`.
///
/// # Errors
/// Returns an [`OccupancyError`] for a block no compiler or launch could ask for: zero or more
/// than 1024 threads, more than 255 registers per thread, more than 48 KiB of static shared
/// memory. A block that asks for more registers
/// or shared memory than one block may have gets 0 blocks and a [`LaunchFailure`].
pub fn occupancy(arch: &ArchLimits, res: &KernelResources, mode: Mode) -> Result<Occupancy, OccupancyError> {
    validate(arch, res)?;
    let threads = res.threads_per_block;
    let warps_per_block = threads.div_ceil(arch.warp_size);
    let blocks_by_warps = match mode {
        Mode::Simple => arch.max_threads_per_sm / threads,
        Mode::Hardware => arch.max_warps_per_sm / warps_per_block,
    };
    let regs = regs_limit(arch, res, mode);
    let smem = smem_limit(arch, res, mode);
    let (blocks_by_regs, regs_per_block) = (regs.blocks, regs.per_block);
    let (blocks_by_smem, smem_per_block) = (smem.blocks, smem.per_block);
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
        failure: regs.failure.or(smem.failure),
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

/// The inverse question (what `__launch_bounds__(threads, blocks)` or `-maxrregcount` asks of
/// the compiler): the largest registers per thread (1..=255) at which `blocks` blocks of
/// `res` are still resident, everything else unchanged; `None` if even 1 register per thread
/// does not reach it (another limit caps the blocks below `blocks`).
pub fn max_regs_for_blocks(arch: &ArchLimits, res: &KernelResources, blocks: u32, mode: Mode) -> Option<u32> {
    largest_satisfying(1, arch.max_regs_per_thread, |r| {
        occupancy(arch, &KernelResources { regs_per_thread: r, ..*res }, mode).is_ok_and(|o| o.active_blocks >= blocks)
    })
}

/// The block size `cudaOccupancyMaxPotentialBlockSize` picks, and what it gives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockSizeSuggestion {
    /// Threads per block.
    pub threads: u32,
    /// Resident blocks per SM at that size.
    pub blocks: u32,
    /// Occupancy at that size.
    pub occupancy: f64,
}

/// The block size the CUDA occupancy API would suggest for a kernel with `res`'s registers and
/// shared memory (its `threads_per_block` is ignored): from the largest multiple of the warp
/// size down, the first size with the most resident threads, stopping early at a full SM
/// (`cudaOccMaxPotentialOccupancyBlockSize` in `cuda_occupancy.h`). `None` if no size fits.
pub fn suggest_block_size(arch: &ArchLimits, res: &KernelResources, mode: Mode) -> Option<BlockSizeSuggestion> {
    let mut best: Option<BlockSizeSuggestion> = None;
    let mut best_threads = 0;
    for threads in (1..=arch.max_threads_per_block / arch.warp_size).rev().map(|w| w * arch.warp_size) {
        let Ok(o) = occupancy(arch, &KernelResources { threads_per_block: threads, ..*res }, mode) else { continue };
        if o.active_threads > best_threads {
            best_threads = o.active_threads;
            best = Some(BlockSizeSuggestion { threads, blocks: o.active_blocks, occupancy: o.occupancy });
        }
        if best_threads == arch.max_threads_per_sm {
            break;
        }
    }
    best
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
    let best = occupancy(arch, &KernelResources { regs_per_thread: 1, ..*res }, mode)?;
    // Both searches start at 1 register, where blocks >= both targets.
    let keep_current = max_regs_for_blocks(arch, res, current.active_blocks, mode).unwrap_or(1);
    let for_best = max_regs_for_blocks(arch, res, best.active_blocks, mode).unwrap_or(1);
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
    let limit = if res.smem_opt_in { arch.smem_per_block_optin } else { arch.smem_per_block_default };
    let max_dynamic = limit.saturating_sub(res.static_smem_bytes);
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

    /// Hardware mode on cc 9.0, the kernel opted in to the full shared memory per block.
    fn h200(res: KernelResources) -> Occupancy {
        let arch = ArchLimits::for_cc(9, 0).unwrap();
        occupancy(arch, &res.with_opt_in(true), Mode::Hardware).unwrap()
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
        assert_eq!(max_regs_for_blocks(&SM, &KernelResources::new(128, 255), 16, Mode::Simple), Some(32));
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
        assert_eq!(max_regs_for_blocks(arch, &KernelResources::new(128, 255), 16, Mode::Hardware), Some(32));
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
        let res = KernelResources::new(256, 32).with_dynamic_smem(100 * 1024).with_opt_in(true);
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
        // Shared memory beyond the per-block limit is a launch that fails: 0 blocks, and why.
        let res = KernelResources::new(128, 32).with_static_smem(1024).with_dynamic_smem(227 * 1024);
        let o = h200(res);
        assert_eq!((o.active_blocks, o.blocks_by_smem), (0, 0));
        assert_eq!(
            o.failure,
            Some(LaunchFailure::SharedMemory {
                requested: 233_472,
                limit: 232_448,
                opted_in: true,
                opt_in_raises: true
            })
        );
        // Exactly at the opt-in limit is fine: one block.
        let res = KernelResources::new(128, 32).with_dynamic_smem(227 * 1024);
        assert_eq!(h200(res).active_blocks, 1);
        assert_eq!(h200(res).failure, None);
        // Without opting in, 48 KiB is the limit for static and dynamic together.
        let o =
            occupancy(arch, &KernelResources::new(128, 32).with_dynamic_smem(48 * 1024 + 1), Mode::Hardware).unwrap();
        assert_eq!(o.active_blocks, 0);
        assert!(
            o.failure
                .unwrap()
                .to_string()
                .contains("49153 B of static + dynamic shared memory per block exceeds the 49152 B")
        );
    }

    #[test]
    fn cc86_opt_in_limit_applies_to_static_plus_dynamic() {
        // 101120 < 101376 (99 KiB), but with 512 B static the sum is over.
        let ga10x = ArchLimits::for_cc(8, 6).unwrap();
        let res = KernelResources::new(256, 32).with_static_smem(512).with_dynamic_smem(101_120).with_opt_in(true);
        let o = occupancy(ga10x, &res, Mode::Hardware).unwrap();
        assert_eq!(o.active_blocks, 0);
        assert_eq!(
            o.failure,
            Some(LaunchFailure::SharedMemory {
                requested: 101_632,
                limit: 101_376,
                opted_in: true,
                opt_in_raises: true
            })
        );
        let fits = occupancy(ga10x, &res.with_static_smem(256), Mode::Hardware).unwrap();
        assert_eq!((fits.active_blocks, fits.smem_per_block), (1, 102_400));
        // The same launch without the opt-in fails at 48 KiB.
        let o = occupancy(ga10x, &res.with_opt_in(false).with_static_smem(0), Mode::Hardware).unwrap();
        assert_eq!(
            o.failure,
            Some(LaunchFailure::SharedMemory {
                requested: 101_120,
                limit: 49_152,
                opted_in: false,
                opt_in_raises: true
            })
        );
    }

    #[test]
    fn too_many_registers_per_block_is_a_failed_launch() {
        // 1024 threads x 65 registers: 2080 per warp -> 2304, x 32 warps = 73728 > 65536.
        let o = h200(KernelResources::new(1024, 65));
        assert_eq!(o.active_blocks, 0);
        assert_eq!(o.failure, Some(LaunchFailure::Registers { allocated: 73_728, assumed: 73_728, limit: 65_536 }));
        assert!(o.failure.unwrap().to_string().starts_with("too many resources requested for launch"));
        // 992 threads (31 warps) x 64: 63488 allocated, but the check assumes 32 warps: 65536 fits.
        assert_eq!(h200(KernelResources::new(992, 64)).active_blocks, 1);
        // 992 x 65: 71424 allocated, 73728 assumed.
        let o = h200(KernelResources::new(992, 65));
        assert_eq!(o.failure, Some(LaunchFailure::Registers { allocated: 71_424, assumed: 73_728, limit: 65_536 }));
    }

    #[test]
    fn cc89_reserved_kib_costs_a_block_against_the_textbook() {
        // 256 threads, 40 registers, 20 KiB: the textbook divides 100 KiB by 20 KiB = 5; the
        // driver charges 20 KiB + 1 KiB reserved = 21504 B, 102400 / 21504 = 4.
        let ada = ArchLimits::for_cc(8, 9).unwrap();
        let res = KernelResources::new(256, 40).with_dynamic_smem(20 * 1024);
        let textbook = occupancy(ada, &res, Mode::Simple).unwrap();
        let driver = occupancy(ada, &res, Mode::Hardware).unwrap();
        assert_eq!((textbook.active_blocks, textbook.blocks_by_smem), (5, 5));
        assert_eq!((driver.active_blocks, driver.blocks_by_smem, driver.smem_per_block), (4, 4, 21_504));
        assert_eq!(driver.limiting, Limit::SharedMemory);
    }

    #[test]
    fn suggest_picks_what_the_occupancy_api_picks() {
        let h = ArchLimits::for_cc(9, 0).unwrap();
        // Light kernel: 1024 threads already fill the SM (2 blocks x 1024).
        let s = suggest_block_size(h, &KernelResources::new(1, 32), Mode::Hardware).unwrap();
        assert_eq!((s.threads, s.blocks, s.occupancy), (1024, 2, 1.0));
        // 64 registers: 32 warps per SM at most; 1024 threads x 1 block reaches it first.
        let s = suggest_block_size(h, &KernelResources::new(1, 64), Mode::Hardware).unwrap();
        assert_eq!((s.threads, s.blocks, s.occupancy), (1024, 1, 0.5));
        // 65 registers: 2304 per warp, 7 warps per sub-partition, 28 per SM. 1024 threads fail
        // the per-block check; 896 (28 warps, one block) is the first size to reach 28 warps,
        // and 448 x 2 later only ties it.
        let s = suggest_block_size(h, &KernelResources::new(1, 65), Mode::Hardware).unwrap();
        assert_eq!((s.threads, s.blocks), (896, 1));
        // Nothing fits: over 48 KiB without opting in.
        assert_eq!(
            suggest_block_size(h, &KernelResources::new(1, 32).with_dynamic_smem(64 * 1024), Mode::Hardware),
            None
        );
    }

    #[test]
    fn inverse_registers_for_n_blocks() {
        let h = ArchLimits::for_cc(9, 0).unwrap();
        // 256 threads, 3 blocks: 24 warps, 6 per sub-partition: 16384 / 6 = 2730 -> 2560 per
        // warp -> 80 registers.
        let res = KernelResources::new(256, 128);
        assert_eq!(max_regs_for_blocks(h, &res, 3, Mode::Hardware), Some(80));
        // At 128 registers: 4096 per warp, 16 warps per SM, 2 blocks.
        assert_eq!(occupancy(h, &res, Mode::Hardware).unwrap().active_blocks, 2);
        assert_eq!(h200(KernelResources::new(256, 80)).active_blocks, 3);
        assert_eq!(h200(KernelResources::new(256, 81)).active_blocks, 2);
        // 9 blocks of 256 threads never fit (64 warps): no register count reaches it.
        assert_eq!(max_regs_for_blocks(h, &res, 9, Mode::Hardware), None);
    }

    #[test]
    fn new_capabilities_are_in_the_table() {
        for (cc, threads, blocks, smem) in [
            ((7, 0), 2048, 32, 96 * 1024),
            ((8, 7), 1536, 16, 164 * 1024),
            ((10, 3), 2048, 32, 228 * 1024),
            ((11, 0), 1536, 24, 228 * 1024),
            ((12, 1), 1536, 24, 100 * 1024),
        ] {
            let a = ArchLimits::for_cc(cc.0, cc.1).unwrap();
            assert_eq!(
                (a.max_threads_per_sm, a.max_blocks_per_sm, a.max_smem_per_sm),
                (threads, blocks, smem),
                "{cc:?}"
            );
        }
        // Volta: 256-byte granularity, nothing reserved, 96 KiB per block after opting in.
        let v100 = ArchLimits::for_cc(7, 0).unwrap();
        let o = occupancy(
            v100,
            &KernelResources::new(128, 32).with_dynamic_smem(96 * 1024).with_opt_in(true),
            Mode::Hardware,
        )
        .unwrap();
        assert_eq!((o.active_blocks, o.smem_per_block), (1, 98_304));
    }

    #[test]
    fn zero_registers_and_smem_are_unlimited() {
        let o = simple(64, 0);
        assert_eq!(o.blocks_by_regs, UNLIMITED);
        assert_eq!(o.blocks_by_smem, UNLIMITED);
        assert_eq!(o.active_blocks, 32);
    }
}
