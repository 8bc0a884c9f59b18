//! What the lab's models expect Nsight Compute to count for one lesson kernel at its sizes.
//! A kernel or counter whose model the lab cannot state gets none (the table then shows the
//! measurement alone). Metric names are Nsight Compute's (Kernel Profiling Guide, "Metrics
//! Reference"; the bank and DRAM figures were checked against them on the H200 in
//! `docs/measurements/banks.md` and `dram.md`).

use std::collections::BTreeMap;

use memlab_contracts::probes::STRIDED_READS_PER_THREAD;
use memlab_contracts::transpose::{PADDED_PITCH, TILED_PITCH};

use crate::demos::banks::WIDE_CASES;
use crate::demos::tensor;
use crate::lab::MeasuredLaunch;
use crate::model::banks::{BankReport, WarpRequest, Width};
use crate::model::coalescing::{SECTOR_BYTES, WarpAccess};
use crate::model::{dram, gemm_tiles};

/// Every metric a profiled launch is asked for.
pub const METRICS: [&str; 18] = [
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "lts__t_sector_hit_rate.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld_dest_multicast.sum",
];

/// One line of the table: a counter, or a ratio of two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Counter {
    /// Global-load sectors per request (L1: `l1tex__t_sectors` / `l1tex__t_requests`, `op_ld`).
    LdSectorsPerRequest,
    /// Global-store sectors per request (`op_st`).
    StSectorsPerRequest,
    /// Sectors L2 read for L1 (`lts__t_sectors_srcunit_tex_op_read.sum`).
    L2SectorsRead,
    /// Sectors L2 wrote for L1 (`lts__t_sectors_srcunit_tex_op_write.sum`).
    L2SectorsWritten,
    /// Bytes read from DRAM (`dram__bytes_read.sum`).
    DramRead,
    /// Bytes written to DRAM (`dram__bytes_write.sum`).
    DramWritten,
    /// Shared-load wavefronts per shared-load instruction.
    SharedLdWavefrontsPerRequest,
    /// Shared-store wavefronts per shared-store instruction.
    SharedStWavefrontsPerRequest,
    /// Shared-load bank conflicts per shared-load instruction.
    SharedLdConflictsPerRequest,
    /// Shared-store bank conflicts per shared-store instruction.
    SharedStConflictsPerRequest,
    /// Shared-load wavefronts of the whole launch.
    SharedLdWavefronts,
    /// Shared-load bank conflicts of the whole launch.
    SharedLdConflicts,
    /// L2 sector hit rate, percent (`lts__t_sector_hit_rate.pct`).
    L2HitRate,
    /// Achieved occupancy, percent of the SM's warps (`sm__warps_active.avg.pct_of_peak_sustained_active`).
    AchievedOccupancy,
    /// Bytes TMA loads brought from L2 into the SMs
    /// (`l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum`).
    TmaBytesIn,
    /// Of those, the bytes that arrived by cluster multicast
    /// (`l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld_dest_multicast.sum`).
    TmaMulticastBytesIn,
}

/// A counter's name, numerator and denominator (`None`: the counter itself).
type Source = (&'static str, &'static str, Option<&'static str>);

impl Counter {
    /// Every counter, in the table's order.
    pub const ALL: [Counter; 16] = [
        Counter::LdSectorsPerRequest,
        Counter::StSectorsPerRequest,
        Counter::L2SectorsRead,
        Counter::L2SectorsWritten,
        Counter::DramRead,
        Counter::DramWritten,
        Counter::SharedLdWavefrontsPerRequest,
        Counter::SharedStWavefrontsPerRequest,
        Counter::SharedLdConflictsPerRequest,
        Counter::SharedStConflictsPerRequest,
        Counter::SharedLdWavefronts,
        Counter::SharedLdConflicts,
        Counter::L2HitRate,
        Counter::AchievedOccupancy,
        Counter::TmaBytesIn,
        Counter::TmaMulticastBytesIn,
    ];

    fn source(self) -> Source {
        let [
            ld_req,
            ld_sect,
            st_req,
            st_sect,
            l2_read,
            l2_write,
            dram_read,
            dram_write,
            sh_ld,
            sh_st,
            wf_ld,
            wf_st,
            cf_ld,
            cf_st,
            hit,
            warps,
            tma_in,
            tma_multicast,
        ] = METRICS;
        match self {
            Counter::LdSectorsPerRequest => ("global ld sectors/request", ld_sect, Some(ld_req)),
            Counter::StSectorsPerRequest => ("global st sectors/request", st_sect, Some(st_req)),
            Counter::L2SectorsRead => ("L2 sectors read", l2_read, None),
            Counter::L2SectorsWritten => ("L2 sectors written", l2_write, None),
            Counter::DramRead => ("DRAM bytes read", dram_read, None),
            Counter::DramWritten => ("DRAM bytes written", dram_write, None),
            Counter::SharedLdWavefrontsPerRequest => ("shared ld wavefronts/request", wf_ld, Some(sh_ld)),
            Counter::SharedStWavefrontsPerRequest => ("shared st wavefronts/request", wf_st, Some(sh_st)),
            Counter::SharedLdConflictsPerRequest => ("shared ld conflicts/request", cf_ld, Some(sh_ld)),
            Counter::SharedStConflictsPerRequest => ("shared st conflicts/request", cf_st, Some(sh_st)),
            Counter::SharedLdWavefronts => ("shared ld wavefronts", wf_ld, None),
            Counter::SharedLdConflicts => ("shared ld conflicts", cf_ld, None),
            Counter::L2HitRate => ("L2 hit rate %", hit, None),
            Counter::AchievedOccupancy => ("achieved occupancy %", warps, None),
            Counter::TmaBytesIn => ("TMA bytes into shared", tma_in, None),
            Counter::TmaMulticastBytesIn => ("TMA bytes multicast in", tma_multicast, None),
        }
    }

    /// The table's name for it.
    pub fn label(self) -> &'static str {
        self.source().0
    }

    /// Its value among a launch's metrics; `None` when a metric is missing or a ratio's
    /// denominator is 0 (no such request).
    pub fn measured(self, metrics: &BTreeMap<String, f64>) -> Option<f64> {
        let (_, num, den) = self.source();
        let num = *metrics.get(num)?;
        match den {
            None => Some(num),
            Some(den) => metrics.get(den).filter(|&&d| d > 0.0).map(|d| num / d),
        }
    }
}

/// The models' figures for `launch` (a launch `measure` checked) on a lab whose strided-read
/// buffer is `strided_bytes`: each counter the lab can predict for that kernel, and the
/// achieved occupancy against the driver's theoretical figure.
pub fn model(launch: &MeasuredLaunch, strided_bytes: usize) -> BTreeMap<Counter, f64> {
    let mut expect = match launch.kernel.as_str() {
        "copy"
        | "transpose_naive"
        | "transpose_tiled"
        | "transpose_padded"
        | "transpose_vectorized"
        | "transpose_aligned_stores" => transpose(&launch.kernel, &launch.size),
        "strided_read" => after("stride ", &launch.size).map(|s| strided_read(s, strided_bytes)).unwrap_or_default(),
        "misaligned_read" => after("offset ", &launch.size)
            .map(|o| {
                [(Counter::LdSectorsPerRequest, WarpAccess::new(4, 1).with_offset(4 * o).analyze().sectors as f64)]
                    .into()
            })
            .unwrap_or_default(),
        "shared_bank_probe" => {
            after("stride ", &launch.size).map(|s| shared_loads(&WarpRequest::strided(s).analyze())).unwrap_or_default()
        }
        "shared_bank_probe_8" | "shared_bank_probe_16" => WIDE_CASES
            .iter()
            .find(|c| c.name == launch.size)
            .and_then(|c| WarpRequest::new(Width::from_bytes(c.width).ok()?, c.offsets().map(Some)).ok())
            .map(|r| shared_loads(&r.analyze()))
            .unwrap_or_default(),
        "sgemm_9_tensor_tf32" => rung_9(&launch.size, gemm_tiles::Layout::AsBuilt),
        "sgemm_9_tensor_tf32_unswizzled" => rung_9(&launch.size, gemm_tiles::Layout::Plain),
        kernel => dims::<3>(&launch.size)
            .and_then(|[m, n, k]| tensor::kernel_tile_loads(kernel, (m as usize, n as usize, k as usize)))
            .map(tile_loads)
            .unwrap_or_default(),
    };
    // The driver's theoretical occupancy is the ceiling the achieved figure approaches.
    expect.insert(Counter::AchievedOccupancy, 100.0 * launch.occupancy.occupancy);
    expect
}

/// The number after `prefix` in a size label (`"stride 8"`).
fn after(prefix: &str, label: &str) -> Option<u64> {
    label.strip_prefix(prefix)?.parse().ok()
}

/// `"MxN..."` as its dimensions, when it has `N` of them (a padded layout's label has more
/// words and gets none).
fn dims<const N: usize>(label: &str) -> Option<[u64; N]> {
    crate::cli::dims::<N>(label).ok().map(|d| d.map(|v| v as u64))
}

/// Shared loads of one warp request: wavefronts and conflicts per request.
fn shared_loads(r: &BankReport) -> BTreeMap<Counter, f64> {
    [
        (Counter::SharedLdWavefrontsPerRequest, r.wavefronts as f64),
        (Counter::SharedLdConflictsPerRequest, r.conflicts as f64),
    ]
    .into()
}

/// A transpose (or copy) of a `rows x cols` f32 matrix of whole 32 x 32 tiles: the input read
/// once and the output written once, 4 bytes an element; loads of a row's 32 floats per warp;
/// the naive transpose's stores a column (one sector per lane, each its own L2 write), the
/// others' a row; the tiled kernels' tile written by rows and read by columns (the bank
/// model of their pitch). Edge tiles and padded layouts are not modelled.
fn transpose(kernel: &str, size: &str) -> BTreeMap<Counter, f64> {
    let Some([rows, cols]) = dims::<2>(size).filter(|[r, c]| r % 32 == 0 && c % 32 == 0) else {
        return BTreeMap::new();
    };
    let bytes = (4 * rows * cols) as f64;
    let sectors = bytes / SECTOR_BYTES as f64;
    let row = WarpAccess::new(4, 1).analyze().sectors as f64;
    let column = WarpAccess::new(4, rows).analyze().sectors as f64;
    let mut expect = BTreeMap::from([
        (Counter::DramRead, bytes),
        (Counter::DramWritten, bytes),
        (Counter::L2SectorsRead, sectors),
        (Counter::L2SectorsWritten, if kernel == "transpose_naive" { sectors * column / row } else { sectors }),
    ]);
    if matches!(kernel, "copy" | "transpose_naive" | "transpose_tiled" | "transpose_padded") {
        expect.insert(Counter::LdSectorsPerRequest, row);
        expect.insert(Counter::StSectorsPerRequest, if kernel == "transpose_naive" { column } else { row });
    }
    let pitch = match kernel {
        "transpose_tiled" => TILED_PITCH,
        "transpose_padded" => PADDED_PITCH,
        _ => return expect,
    };
    let (store, load) = (WarpRequest::strided(1).analyze(), WarpRequest::column_of_tile(pitch as u64).analyze());
    expect.extend(shared_loads(&load));
    expect.insert(Counter::SharedStWavefrontsPerRequest, store.wavefronts as f64);
    expect.insert(Counter::SharedStConflictsPerRequest, store.conflicts as f64);
    expect
}

/// `strided_read` at `stride` words over `bytes`: `threads = words / (8 stride)` threads each
/// load 8 words, one warp request per 32 loads; the sectors of a request by the coalescing
/// model, each read once from L2, and the DRAM bytes per element by the DRAM model (a 64-byte
/// fetch per sector past 32 bytes apart; measured on the H200, `docs/measurements/dram.md`).
fn strided_read(stride: u64, bytes: usize) -> BTreeMap<Counter, f64> {
    if stride == 0 {
        return BTreeMap::new();
    }
    let per_thread = STRIDED_READS_PER_THREAD as u64;
    let threads = bytes as u64 / 4 / (per_thread * stride);
    let per_request = WarpAccess::new(4, stride).analyze().sectors;
    let mut expect = BTreeMap::from([(Counter::LdSectorsPerRequest, per_request as f64)]);
    // Whole warps only: a last, partial warp's requests touch fewer sectors.
    if threads.is_multiple_of(32) {
        let loads = threads * per_thread;
        expect.insert(Counter::L2SectorsRead, (loads / 32 * per_request) as f64);
        expect.insert(Counter::DramRead, (loads * dram::bytes_per_element(4, stride)) as f64);
    }
    expect
}

/// A tensor rung's TMA loads by the tiling model: the bytes that land in shared memory, and
/// those of them that arrive by multicast (what the cluster saves L2: a block asks L2 for its
/// own share of a multicast tile only).
fn tile_loads(loads: tensor::TileLoads) -> BTreeMap<Counter, f64> {
    [(Counter::TmaBytesIn, loads.into_shared), (Counter::TmaMulticastBytesIn, loads.multicast_in)].into()
}

/// Rung 9 at `MxNxK`: its shared-load wavefronts and conflicts, per warp step by the bank model
/// of its tiles in `layout`, times the warp steps.
fn rung_9(size: &str, layout: gemm_tiles::Layout) -> BTreeMap<Counter, f64> {
    let Some([m, n, k]) = dims::<3>(size) else { return BTreeMap::new() };
    let steps = gemm_tiles::tf32_warp_steps(m, n, k) as f64;
    let (wavefronts, conflicts) = gemm_tiles::tf32_step(layout);
    [(Counter::SharedLdWavefronts, wavefronts as f64 * steps), (Counter::SharedLdConflicts, conflicts as f64 * steps)]
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::kernel::DriverOccupancy;
    use crate::gpu::launch::LaunchShape;

    fn launch(kernel: &str, size: &str) -> MeasuredLaunch {
        MeasuredLaunch {
            kernel: kernel.into(),
            size: size.into(),
            shape: LaunchShape { grid: (1, 1), block: (256, 1), smem_bytes: 0 },
            occupancy: DriverOccupancy { active_blocks: 8, active_warps: 64, occupancy: 1.0 },
        }
    }

    #[test]
    fn a_transpose_of_8192_squared_reads_and_writes_256_mib() {
        // 8192 x 8192 f32 = 2^26 elements x 4 B = 2^28 B read and written; 2^28 / 32 = 2^23
        // sectors each way. The naive kernel's stores are a column: 32 lanes 32 KiB apart, 32
        // sectors a request and one L2 sector write per element (2^26); its loads a row of
        // 32 floats, 128 B = 4 sectors.
        let naive = model(&launch("transpose_naive", "8192x8192"), 0);
        assert_eq!(naive[&Counter::DramRead], (1u64 << 28) as f64);
        assert_eq!(naive[&Counter::DramWritten], (1u64 << 28) as f64);
        assert_eq!(naive[&Counter::L2SectorsRead], (1u64 << 23) as f64);
        assert_eq!(naive[&Counter::L2SectorsWritten], (1u64 << 26) as f64);
        assert_eq!((naive[&Counter::LdSectorsPerRequest], naive[&Counter::StSectorsPerRequest]), (4.0, 32.0));
        assert!(!naive.contains_key(&Counter::SharedLdWavefrontsPerRequest));
        // The 32 x 32 tile's column read: pitch 32 puts every lane in bank 0, 32 wavefronts
        // (31 conflicts); the pad word of 32 x 33 spreads it over the 32 banks, 1 wavefront.
        let tiled = model(&launch("transpose_tiled", "8192x8192"), 0);
        assert_eq!(
            (tiled[&Counter::SharedLdWavefrontsPerRequest], tiled[&Counter::SharedLdConflictsPerRequest]),
            (32.0, 31.0)
        );
        assert_eq!(tiled[&Counter::L2SectorsWritten], (1u64 << 23) as f64);
        let padded = model(&launch("transpose_padded", "8192x8192"), 0);
        assert_eq!(
            (padded[&Counter::SharedLdWavefrontsPerRequest], padded[&Counter::SharedStWavefrontsPerRequest]),
            (1.0, 1.0)
        );
        // Edge tiles and padded layouts get no model but the occupancy line.
        assert_eq!(model(&launch("transpose_padded", "1000x999"), 0).len(), 1);
        assert_eq!(model(&launch("copy", "1000x999 in 1000x1000"), 0).len(), 1);
    }

    #[test]
    fn the_strided_read_of_1_gib_matches_the_counters_of_dram_md() {
        // 1 GiB = 2^28 words; at stride 16, 2^28 / (8 x 16) = 2^21 threads load 2^24 words in
        // 2^19 warp requests of 32 sectors (lanes 64 B apart): 2^24 L2 sectors (16.78 M), and
        // a 64-byte DRAM fetch per word, 2^30 B (1073.7 MB): dram.md's stride-16 row.
        let s16 = model(&launch("strided_read", "stride 16"), 1 << 30);
        assert_eq!(s16[&Counter::LdSectorsPerRequest], 32.0);
        assert_eq!(s16[&Counter::L2SectorsRead], (1u64 << 24) as f64);
        assert_eq!(s16[&Counter::DramRead], (1u64 << 30) as f64);
        // Stride 2: 2^24 threads load 2^27 words, lanes 8 B apart, 256 B = 8 sectors a request:
        // 2^22 requests, 2^25 sectors, every sector of the buffer; 8 DRAM bytes a word, 2^30 B.
        let s2 = model(&launch("strided_read", "stride 2"), 1 << 30);
        assert_eq!(s2[&Counter::LdSectorsPerRequest], 8.0);
        assert_eq!(s2[&Counter::L2SectorsRead], (1u64 << 25) as f64);
        assert_eq!(s2[&Counter::DramRead], (1u64 << 30) as f64);
    }

    #[test]
    fn the_bank_probes_and_rung_9_carry_the_bank_models_figures() {
        // Stride 8 words: lanes 0, 4, 8, 12 (and so on) share banks 0, 8, 16, 24: 8 words a bank.
        let s8 = model(&launch("shared_bank_probe", "stride 8"), 0);
        assert_eq!((s8[&Counter::SharedLdWavefrontsPerRequest], s8[&Counter::SharedLdConflictsPerRequest]), (8.0, 7.0));
        // 16-byte contiguous loads: 4 phases of 8 lanes, no conflict beyond them.
        let wide = model(&launch("shared_bank_probe_16", "16 B, --index t (contiguous)"), 0);
        assert_eq!(
            (wide[&Counter::SharedLdWavefrontsPerRequest], wide[&Counter::SharedLdConflictsPerRequest]),
            (4.0, 0.0)
        );
        // 517x389x263: ceil(389/128) ceil(517/128) = 4 x 5 blocks, 8 warps, ceil(263/16) = 17
        // steps: 2720 warp steps of 8 ldmatrix.x4 (4 wavefronts) + 16 B loads (1): 48 a step,
        // 130560 (sgemm.md's row); unswizzled 16 and 4: 192 a step, 522240, 144 conflicts.
        let swizzled = model(&launch("sgemm_9_tensor_tf32", "517x389x263"), 0);
        assert_eq!((swizzled[&Counter::SharedLdWavefronts], swizzled[&Counter::SharedLdConflicts]), (130560.0, 0.0));
        let plain = model(&launch("sgemm_9_tensor_tf32_unswizzled", "517x389x263"), 0);
        assert_eq!((plain[&Counter::SharedLdWavefronts], plain[&Counter::SharedLdConflicts]), (522240.0, 391680.0));
        // Every kernel gets the driver's occupancy; an unmodelled one that alone.
        assert_eq!(
            model(&launch("matmul_naive", "4096x4096x4096"), 0),
            BTreeMap::from([(Counter::AchievedOccupancy, 100.0)])
        );
    }

    #[test]
    fn the_tensor_rungs_tma_loads_follow_the_tiling_model() {
        // Rung 1 at 1024^3: 8 x 16 blocks of 64 x 128, 1024 / 64 = 16 stage rows of 128 bytes
        // each for the 64 rows of A and the 128 of B: 128 x 16 x 192 x 128 B = 50331648 B, none
        // by multicast (no cluster).
        let one = model(&launch("tensor_1_wgmma", "1024x1024x1024"), 0);
        assert_eq!((one[&Counter::TmaBytesIn], one[&Counter::TmaMulticastBytesIn]), (50331648.0, 0.0));
        // Rung 5: 4 x 8 blocks of 128 x 256 in clusters of 2; each block receives 128 + 256 rows
        // a step, the 256 of B by multicast (half of them loaded by its cluster peer).
        let multicast = model(&launch("tensor_5_multicast", "1024x1024x1024"), 0);
        assert_eq!(multicast[&Counter::TmaBytesIn], (32 * 16 * 384 * 128) as f64);
        assert_eq!(multicast[&Counter::TmaMulticastBytesIn], (32 * 16 * 256 * 128) as f64);
        // FP8: 128 elements a row, so half the stage rows of BF16 at the same k.
        let fp8 = model(&launch("tensor_9_fp8", "1024x1024x1024"), 0);
        assert_eq!(fp8[&Counter::TmaBytesIn], (32 * 8 * 384 * 128) as f64);
        let tf32 = model(&launch("tensor_7_tf32", "1024x1024x1024"), 0);
        assert_eq!(tf32[&Counter::TmaBytesIn], (32 * 32 * 384 * 128) as f64);
    }

    #[test]
    fn ratios_need_their_requests() {
        let metrics = BTreeMap::from([
            (METRICS[0].to_string(), 0.0),
            (METRICS[1].to_string(), 0.0),
            (METRICS[2].to_string(), 1000.0),
            (METRICS[3].to_string(), 32000.0),
        ]);
        assert_eq!(Counter::LdSectorsPerRequest.measured(&metrics), None);
        assert_eq!(Counter::StSectorsPerRequest.measured(&metrics), Some(32.0));
        assert_eq!(Counter::DramRead.measured(&metrics), None);
    }
}
