//! Arithmetic intensity and the roofline model.
//!
//! Arithmetic intensity (AI) is floating-point operations per byte of DRAM
//! traffic. A kernel cannot run faster than either the compute peak or
//! `AI x DRAM bandwidth`; the lower of the two is its roofline. The
//! balance point `peak / bandwidth` (FLOP/byte) separates memory-bound
//! kernels (AI below it) from compute-bound ones.

/// FP32 results per clock per SM (one FMA lane each) for one compute
/// capability. Source: CUDA C++ Programming Guide, "Arithmetic
/// Instructions", throughput table, row "32-bit floating-point add,
/// multiply, multiply-add".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fp32Lanes {
    /// Compute capability, major part.
    pub major: u32,
    /// Compute capability, minor part.
    pub minor: u32,
    /// FP32 FMA results per clock cycle per SM.
    pub lanes_per_sm: u32,
}

/// FP32 lanes per SM by compute capability (Programming Guide, "Arithmetic
/// Instructions"): 64 on cc 7.0, 7.5 and 8.0, 128 on 8.6, 8.9, 9.0, 10.0, 12.0.
pub const FP32_LANES: [Fp32Lanes; 8] = [
    Fp32Lanes { major: 7, minor: 0, lanes_per_sm: 64 },
    Fp32Lanes { major: 7, minor: 5, lanes_per_sm: 64 },
    Fp32Lanes { major: 8, minor: 0, lanes_per_sm: 64 },
    Fp32Lanes { major: 8, minor: 6, lanes_per_sm: 128 },
    Fp32Lanes { major: 8, minor: 9, lanes_per_sm: 128 },
    Fp32Lanes { major: 9, minor: 0, lanes_per_sm: 128 },
    Fp32Lanes { major: 10, minor: 0, lanes_per_sm: 128 },
    Fp32Lanes { major: 12, minor: 0, lanes_per_sm: 128 },
];

/// FP32 lanes per SM for compute capability `major.minor`, or `None` if
/// not in [`FP32_LANES`].
pub fn fp32_lanes_per_sm(major: u32, minor: u32) -> Option<u32> {
    FP32_LANES.iter().find(|l| l.major == major && l.minor == minor).map(|l| l.lanes_per_sm)
}

/// Dense TF32 tensor-core FLOP per clock per SM (an FMA counts 2) by compute capability, from
/// NVIDIA's whitepapers: A100 (cc 8.0) 156 TFLOP/s = 108 SMs x 1024 x 1.41 GHz; GA102 (cc 8.6)
/// and AD102 (cc 8.9) 256 per SM ("NVIDIA Ampere GA102 GPU Architecture", "NVIDIA Ada GPU
/// Architecture": TF32 at a quarter of A100's per-SM rate); H100 SXM5 (cc 9.0) 494.7 TFLOP/s =
/// 132 SMs x 2048 x 1.83 GHz, a rate Hopper reaches with `wgmma`, not with the `mma.sync` of
/// rung 9. Below cc 8.0 there is no TF32.
pub const TF32_TENSOR_FLOP_PER_CLOCK: [(u32, u32, u32); 4] = [(8, 0, 1024), (8, 6, 256), (8, 9, 256), (9, 0, 2048)];

/// Dense TF32 tensor-core FLOP per clock per SM for cc `major.minor`, or `None` (no TF32, or
/// not in [`TF32_TENSOR_FLOP_PER_CLOCK`]).
pub fn tf32_flop_per_clock(major: u32, minor: u32) -> Option<u32> {
    TF32_TENSOR_FLOP_PER_CLOCK.iter().find(|t| (t.0, t.1) == (major, minor)).map(|t| t.2)
}

/// Dense BF16 tensor-core FLOP per clock per SM (FP32 accumulation; an FMA counts 2) by compute
/// capability, from NVIDIA's whitepapers: A100 (cc 8.0) 312 TFLOP/s = 108 SMs x 2048 x 1.41 GHz;
/// GA102 (cc 8.6) and AD102 (cc 8.9) 512 per SM, twice their TF32 rate; H100 SXM5 (cc 9.0)
/// 989.4 TFLOP/s = 132 SMs x 4096 x 1.83 GHz, through `wgmma` ("NVIDIA H100 Tensor Core GPU
/// Architecture"). Below cc 8.0 there is no BF16 tensor core.
pub const BF16_TENSOR_FLOP_PER_CLOCK: [(u32, u32, u32); 4] = [(8, 0, 2048), (8, 6, 512), (8, 9, 512), (9, 0, 4096)];

/// Dense BF16 tensor-core FLOP per clock per SM for cc `major.minor`, or `None` (not in
/// [`BF16_TENSOR_FLOP_PER_CLOCK`]).
pub fn bf16_flop_per_clock(major: u32, minor: u32) -> Option<u32> {
    BF16_TENSOR_FLOP_PER_CLOCK.iter().find(|t| (t.0, t.1) == (major, minor)).map(|t| t.2)
}

/// Dense FP8 (e4m3 or e5m2) tensor-core FLOP per clock per SM (FP32 accumulation) by compute
/// capability, from NVIDIA's whitepaper: H100 SXM5 (cc 9.0) 1978.9 TFLOP/s = 132 SMs x 8192 x
/// 1.83 GHz, twice its BF16 rate, through `wgmma` ("NVIDIA H100 Tensor Core GPU
/// Architecture"). Only cc 9.0 is listed: the lab's FP8 kernel is sm_90a PTX.
pub const FP8_TENSOR_FLOP_PER_CLOCK: [(u32, u32, u32); 1] = [(9, 0, 8192)];

/// Dense FP8 tensor-core FLOP per clock per SM for cc `major.minor`, or `None` (not in
/// [`FP8_TENSOR_FLOP_PER_CLOCK`]).
pub fn fp8_flop_per_clock(major: u32, minor: u32) -> Option<u32> {
    FP8_TENSOR_FLOP_PER_CLOCK.iter().find(|t| (t.0, t.1) == (major, minor)).map(|t| t.2)
}

/// Bytes one SM's load/store path moves per clock at most: 32 banks of 4 bytes for shared memory
/// (CUDA C++ Programming Guide, "Shared Memory": each bank delivers 32 bits per clock), the
/// width of the unified L1/shared data path global accesses take too. The H200's shared-memory
/// probe reaches 98% of it (132 SMs x 128 B x 1.98 GHz = 33.4 TB/s; measured 32.8 TB/s).
pub const SM_BYTES_PER_CLOCK: u32 = 128;

/// The most FLOP one SM does per clock on any unit, for a bound no measured rate passes: the
/// dense FP8 tensor-core rate ([`FP8_TENSOR_FLOP_PER_CLOCK`]), else the BF16 one
/// ([`BF16_TENSOR_FLOP_PER_CLOCK`]), else FP32's FMA lanes x 2. An architecture in no table gets
/// the largest figure known.
pub fn max_flop_per_clock(major: u32, minor: u32) -> u32 {
    let largest = FP8_TENSOR_FLOP_PER_CLOCK.iter().chain(&BF16_TENSOR_FLOP_PER_CLOCK).map(|t| t.2).max().unwrap_or(0);
    fp8_flop_per_clock(major, minor)
        .or_else(|| bf16_flop_per_clock(major, minor))
        .or_else(|| fp32_lanes_per_sm(major, minor).map(|l| 2 * l))
        .unwrap_or(largest)
}

/// Peak FP32 throughput, FLOP/s: `sms x lanes x 2 x clock_hz` (an FMA
/// counts as two FLOP).
pub fn peak_fp32_flops(sms: u32, fp32_lanes_per_sm: u32, clock_hz: f64) -> f64 {
    f64::from(sms) * f64::from(fp32_lanes_per_sm) * 2.0 * clock_hz
}

/// Arithmetic intensity, FLOP/byte: `flops / bytes` of DRAM traffic.
pub fn arithmetic_intensity(flops: f64, bytes: f64) -> f64 {
    flops / bytes
}

/// Balance point (ridge), FLOP/byte: `peak_flops / bandwidth` with peak in
/// FLOP/s and bandwidth in bytes/s.
pub fn balance_point(peak_flops: f64, bandwidth_bytes_per_s: f64) -> f64 {
    peak_flops / bandwidth_bytes_per_s
}

/// Attainable throughput, FLOP/s: `min(peak, ai x bandwidth)`.
pub fn attainable(ai: f64, peak_flops: f64, bandwidth_bytes_per_s: f64) -> f64 {
    peak_flops.min(ai * bandwidth_bytes_per_s)
}

/// Which roof caps a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// AI below the balance point: DRAM bandwidth caps it.
    Memory,
    /// AI at or above the balance point: the compute peak caps it.
    Compute,
}

/// Classifies a kernel of intensity `ai` (FLOP/byte); exactly at the
/// balance point it counts as [`Bound::Compute`] (both roofs meet there).
pub fn bound(ai: f64, peak_flops: f64, bandwidth_bytes_per_s: f64) -> Bound {
    if ai < balance_point(peak_flops, bandwidth_bytes_per_s) { Bound::Memory } else { Bound::Compute }
}

/// Why a kernel's point lies above its roof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AboveRoof {
    /// Below the balance point, above the memory roof: L1 and L2 served part of the bytes the
    /// model counts as DRAM traffic.
    CacheReuse,
    /// At or above the balance point, above the FP32 roof at the driver's clock, and the SM
    /// clock measured under load was above the driver's figure: the GPU boosted.
    Clock,
    /// Above the FP32 roof with no faster clock measured: FP32 pipes cannot do this, so the
    /// kernel's FLOP count or timing is wrong (or it used other units, such as tensor cores).
    Unexplained,
}

/// Why a kernel of intensity `ai` achieving `achieved` FLOP/s lies above its roof, or `None`
/// when it does not: below the balance point against `ai x bandwidth`, at or above it against
/// the FP32 peak at the driver's clock (`driver_peak`) and at the clock measured under load
/// (`measured_peak`), both FLOP/s. The balance point is the measured clock's.
pub fn above_roof(ai: f64, achieved: f64, driver_peak: f64, measured_peak: f64, bandwidth: f64) -> Option<AboveRoof> {
    if bound(ai, measured_peak, bandwidth) == Bound::Memory {
        return (achieved > ai * bandwidth).then_some(AboveRoof::CacheReuse);
    }
    if achieved <= driver_peak.min(measured_peak) {
        None
    } else if measured_peak > driver_peak {
        Some(AboveRoof::Clock)
    } else {
        Some(AboveRoof::Unexplained)
    }
}

/// Measured throughput as a fraction of the roofline at intensity `ai`:
/// `achieved_flops / attainable(ai, peak, bandwidth)` (1.0 = on the roof).
pub fn fraction_of_roofline(achieved_flops: f64, ai: f64, peak_flops: f64, bandwidth_bytes_per_s: f64) -> f64 {
    achieved_flops / attainable(ai, peak_flops, bandwidth_bytes_per_s)
}

/// Intensity of `c[i] = a[i] + b[i]` on `f32`: 1 FLOP per 12 bytes (two
/// 4-byte reads, one 4-byte write).
pub const VECTOR_ADD_AI: f64 = 1.0 / 12.0;

/// Intensity of `y[i] = a * x[i] + y[i]` on `f32`: 2 FLOP per 12 bytes.
pub const SAXPY_AI: f64 = 2.0 / 12.0;

/// Intensity of the naive `f32` matmul inner loop with no reuse: one
/// multiply-add (2 FLOP) per two 4-byte loads (8 bytes).
pub const NAIVE_MATMUL_AI: f64 = 2.0 / 8.0;

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        ((a - b) / b).abs() < rel
    }

    #[test]
    fn a100_balance_point_is_about_12_5() {
        let b = balance_point(19_500e9, 1_555e9);
        assert!(close(b, 12.54, 1e-3), "{b}");
        assert_eq!(bound(NAIVE_MATMUL_AI, 19_500e9, 1_555e9), Bound::Memory);
        assert_eq!(bound(50.0, 19_500e9, 1_555e9), Bound::Compute);
        assert_eq!(bound(b, 19_500e9, 1_555e9), Bound::Compute);
    }

    #[test]
    fn kernel_intensities() {
        assert_eq!(arithmetic_intensity(1.0, 12.0), VECTOR_ADD_AI);
        assert!(close(VECTOR_ADD_AI, 0.0833, 1e-3));
        assert!(close(SAXPY_AI, 0.1667, 1e-3));
        assert_eq!(NAIVE_MATMUL_AI, 0.25);
    }

    #[test]
    fn h200_peak_is_about_66_9_tflops() {
        let lanes = fp32_lanes_per_sm(9, 0).unwrap();
        assert_eq!(lanes, 128);
        let peak = peak_fp32_flops(132, lanes, 1.98e9);
        assert!(close(peak, 66.908_16e12, 1e-9), "{peak}");
    }

    #[test]
    fn lanes_table() {
        assert_eq!(fp32_lanes_per_sm(7, 0), Some(64));
        // The whitepapers' dense TF32 figures at their clocks.
        let tf32 =
            |cc: (u32, u32), sms: f64, ghz: f64| f64::from(tf32_flop_per_clock(cc.0, cc.1).unwrap()) * sms * ghz / 1e3;
        assert!(close(tf32((9, 0), 132.0, 1.83), 494.7, 1e-3));
        assert!(close(tf32((8, 0), 108.0, 1.41), 155.9, 1e-3));
        assert_eq!(tf32_flop_per_clock(7, 5), None);
        let bf16 =
            |cc: (u32, u32), sms: f64, ghz: f64| f64::from(bf16_flop_per_clock(cc.0, cc.1).unwrap()) * sms * ghz / 1e3;
        assert!(close(bf16((9, 0), 132.0, 1.83), 989.4, 1e-3));
        assert!(close(bf16((8, 0), 108.0, 1.41), 311.9, 1e-3));
        assert_eq!(bf16_flop_per_clock(7, 0), None);
        assert_eq!(fp32_lanes_per_sm(7, 5), Some(64));
        assert_eq!(fp32_lanes_per_sm(8, 0), Some(64));
        assert_eq!(fp32_lanes_per_sm(8, 6), Some(128));
        assert_eq!(fp32_lanes_per_sm(12, 0), Some(128));
        assert_eq!(fp32_lanes_per_sm(6, 0), None);
    }

    #[test]
    fn attainable_and_fraction() {
        let (peak, bw) = (19_500e9, 1_555e9);
        // Vector add on A100: 1555e9 / 12 FLOP/s at most.
        let roof = attainable(VECTOR_ADD_AI, peak, bw);
        assert!(close(roof, 129.58e9, 1e-3), "{roof}");
        assert_eq!(attainable(100.0, peak, bw), peak);
        assert!(close(fraction_of_roofline(roof / 2.0, VECTOR_ADD_AI, peak, bw), 0.5, 1e-12));
    }

    #[test]
    fn points_above_a_roof_are_attributed_by_their_side_of_the_ridge() {
        // H200-like: 132 SMs x 128 lanes; driver 1.98 GHz, measured under load 2.1 GHz.
        let (driver, boosted, bw) = (peak_fp32_flops(132, 128, 1.98e9), peak_fp32_flops(132, 128, 2.1e9), 4.0e12);
        // Compute side (ridge about 17 FLOP/byte): past the driver's peak, within the boost.
        assert_eq!(above_roof(64.0, driver * 1.03, driver, boosted, bw), Some(AboveRoof::Clock));
        assert_eq!(above_roof(64.0, driver * 0.9, driver, boosted, bw), None);
        // No boost measured: FP32 cannot pass its peak.
        assert_eq!(above_roof(64.0, driver * 1.03, driver, driver * 0.98, bw), Some(AboveRoof::Unexplained));
        // Memory side: past AI x bandwidth is cache reuse, whatever the clock.
        assert_eq!(above_roof(0.25, 0.25 * bw * 3.0, driver, boosted, bw), Some(AboveRoof::CacheReuse));
        assert_eq!(above_roof(0.25, 0.25 * bw * 0.5, driver, boosted, bw), None);
    }
}
