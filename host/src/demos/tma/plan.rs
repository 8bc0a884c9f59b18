//! What the lesson sweeps: each pipelined kernel's configurations, the bulk-copy curve's, the
//! smaller plan of a sanitizer run, and a configuration's label and resident blocks.

use memlab_contracts::tma::{
    BULK_BLOCKS_PER_SM, BULK_CHUNKS, BULK_DEFAULT, BULK_PER_BLOCK, BULK_PIPELINE_CHUNKS, Blocks, COPY_BLOCKS_PER_SM,
    COPY_BOXES, COPY_DEFAULT, PER_BLOCK_ITEMS, PIPELINE_STAGES, Pipeline, TILE, TRANSPOSE_BLOCKS_PER_SM,
    TRANSPOSE_DEFAULT, hint,
};

use crate::gpu::tensor_map::L2Promotion;

/// A configuration in a few words: `4 x 32x256 box, 2 blocks/SM`, `4 x 2 KiB, a block per 4
/// chunks`.
pub(crate) fn config_label(p: &Pipeline) -> String {
    let (what, unit) = if p.box_rows == 1 {
        (format!("{} KiB", p.box_bytes() / 1024), "chunk")
    } else {
        (format!("{}x{} box", p.box_rows, p.box_cols), "box")
    };
    let blocks = match p.blocks {
        Blocks::PerSm(1) => "1 block/SM".to_string(),
        Blocks::PerSm(k) => format!("{k} blocks/SM"),
        Blocks::PerItems(1) => format!("a block per {unit}"),
        Blocks::PerItems(n) => format!("a block per {n} {unit}{}", if unit == "box" { "es" } else { "s" }),
    };
    let hinted = if p.hint == hint::EVICT_FIRST { ", evict_first" } else { "" };
    format!("{} x {what}, {blocks}{hinted}", p.stages)
}

/// Blocks of `p` resident per SM: its persistent count, or, one block per so many items, what
/// the driver's occupancy (`driver`) holds.
pub(super) fn resident(p: &Pipeline, driver: u32) -> u32 {
    match p.blocks {
        Blocks::PerSm(k) => k,
        Blocks::PerItems(_) => driver,
    }
}

/// The `tma_bulk_copy` sweep: persistent, chunks x stages x blocks per SM; then one block per
/// so many chunks ([`BULK_PER_BLOCK`]).
fn bulk_configs() -> Vec<Pipeline> {
    let mut out = Vec::new();
    for chunk in BULK_PIPELINE_CHUNKS {
        for stages in PIPELINE_STAGES {
            for blocks_per_sm in COPY_BLOCKS_PER_SM {
                out.push(Pipeline::new(1, chunk / 4, stages, blocks_per_sm));
            }
        }
    }
    out.extend(BULK_PER_BLOCK.map(|(chunk, n)| Pipeline::per_items(1, chunk / 4, n)));
    out
}

/// The `tma_copy` sweep: persistent, boxes x stages x blocks per SM; then, for each box, one
/// block per so many boxes ([`PER_BLOCK_ITEMS`]).
fn copy_configs() -> Vec<Pipeline> {
    let mut out = Vec::new();
    for (box_rows, box_cols) in COPY_BOXES {
        for stages in PIPELINE_STAGES {
            for blocks_per_sm in COPY_BLOCKS_PER_SM {
                out.push(Pipeline::new(box_rows, box_cols, stages, blocks_per_sm));
            }
        }
        out.extend(PER_BLOCK_ITEMS.map(|n| Pipeline::per_items(box_rows, box_cols, n)));
    }
    out
}

/// The `tma_transpose` sweep (128-byte swizzle), `64 x 64` tiles: persistent, stages x blocks
/// per SM; then one block per so many tiles ([`PER_BLOCK_ITEMS`]).
fn transpose_configs() -> Vec<Pipeline> {
    let mut out = Vec::new();
    for stages in PIPELINE_STAGES {
        for blocks_per_sm in TRANSPOSE_BLOCKS_PER_SM {
            out.push(Pipeline::new(TILE, TILE, stages, blocks_per_sm));
        }
    }
    out.extend(PER_BLOCK_ITEMS.map(|n| Pipeline::per_items(TILE, TILE, n)));
    out
}

/// The bulk-copy curve: one stage (load, wait, store, wait), each chunk of [`BULK_CHUNKS`] at
/// each of [`BULK_BLOCKS_PER_SM`].
fn curve_configs() -> Vec<Pipeline> {
    BULK_BLOCKS_PER_SM.iter().flat_map(|&k| BULK_CHUNKS.map(|chunk| Pipeline::new(1, chunk / 4, 1, k))).collect()
}

/// Points of each sweep at which the L2 hint is tried: its fastest checked ones.
pub(super) const HINTED_POINTS: usize = 2;

/// The persistent rings of a sanitizer run's sweeps (`tma_bulk_copy`, `tma_copy`,
/// `tma_transpose`): 2 stages (the loads run ahead, the ring wraps once a block has more items
/// than stages) in 2 blocks per SM (a grid-stride loop whose last block is not the first), the
/// smallest box or chunk, so that the small sizes give each block several items.
const SANITIZER_RINGS: [Pipeline; 3] =
    [Pipeline::new(1, 256, 2, 2), Pipeline::new(8, 256, 2, 2), Pipeline::new(TILE, TILE, 2, 2)];

/// What the lesson launches beyond its rows: each pipelined kernel's sweep, the evict_first
/// re-runs of each sweep's fastest points, the L2 promotions tried at each map kernel's fastest
/// configuration, and the bulk-copy curve.
#[derive(Debug, PartialEq)]
pub(super) struct Plan {
    pub(super) bulk: Vec<Pipeline>,
    pub(super) copy: Vec<Pipeline>,
    pub(super) transpose: Vec<Pipeline>,
    /// Points of each sweep re-run with the evict_first hint.
    pub(super) hinted: usize,
    pub(super) promotions: Vec<L2Promotion>,
    pub(super) curve: Vec<Pipeline>,
}

impl Plan {
    /// The full sweeps; under compute-sanitizer (`sanitizer`) each distinct path once instead:
    /// every launch there is slow (racecheck of the full sweeps at 28x44 ran past 280 s on the
    /// H200: some 240 checked and timed points, persistent grids of up to 4 blocks on every SM),
    /// and the figures mean nothing. Then each sweep is its kernel's default (one block per few
    /// items) and its ring of [`SANITIZER_RINGS`] (persistent, loads ahead); one point per
    /// sweep hinted; one L2 promotion (256B, the maps of the sweeps have none); the curve's first
    /// point (one stage: the ring of one buffer).
    pub(super) fn new(sanitizer: bool) -> Plan {
        if !sanitizer {
            return Plan {
                bulk: bulk_configs(),
                copy: copy_configs(),
                transpose: transpose_configs(),
                hinted: HINTED_POINTS,
                promotions: L2Promotion::ALL.to_vec(),
                curve: curve_configs(),
            };
        }
        let [bulk, copy, transpose] = SANITIZER_RINGS;
        Plan {
            bulk: vec![BULK_DEFAULT, bulk],
            copy: vec![COPY_DEFAULT, copy],
            transpose: vec![TRANSPOSE_DEFAULT, transpose],
            hinted: 1,
            promotions: vec![L2Promotion::B256],
            curve: curve_configs()[..1].to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlab_contracts::tma::{COPY_THREADS, TILE_BYTES, TRANSPOSE_BLOCK, smem_bytes, transpose_buffers};

    #[test]
    fn under_the_sanitizer_each_kernel_path_runs_once() {
        let full = Plan::new(false);
        assert_eq!(
            (
                full.bulk.len(),
                full.copy.len(),
                full.transpose.len(),
                full.hinted,
                full.promotions.len(),
                full.curve.len()
            ),
            (67, 110, 17, 2, 4, 28)
        );
        let small = Plan::new(true);
        assert_eq!(small.bulk, [BULK_DEFAULT, Pipeline::new(1, 256, 2, 2)]);
        assert_eq!(small.copy, [COPY_DEFAULT, Pipeline::new(8, 256, 2, 2)]);
        assert_eq!(small.transpose, [TRANSPOSE_DEFAULT, Pipeline::new(TILE, TILE, 2, 2)]);
        assert_eq!((small.hinted, small.promotions.as_slice()), (1, &[L2Promotion::B256][..]));
        assert_eq!(small.curve, [Pipeline::new(1, 256, 1, 1)]);
        // Each sweep: one grid of each kind, one point with loads ahead of the stores; the ring
        // of one buffer runs in the copy's and transpose's defaults and the bulk-copy curve.
        for sweep in [&small.bulk, &small.copy, &small.transpose] {
            assert_eq!(sweep.iter().filter(|p| matches!(p.blocks, Blocks::PerSm(_))).count(), 1);
            assert!(sweep.iter().any(|p| p.stages > 1));
        }
        assert!(small.copy[0].stages == 1 && small.transpose[0].stages == 1 && small.curve[0].stages == 1);
        // Points checked per kernel: its sweep, one hinted, one promotion (the map kernels) or
        // the curve (the bulk copy), against some 240 in the full plan.
        let points = |p: &Plan| {
            let (sweeps, curve) = (p.bulk.len() + p.copy.len() + p.transpose.len(), p.curve.len());
            sweeps + 3 * p.hinted + 2 * p.promotions.len() + curve
        };
        assert_eq!((points(&full), points(&small)), (236, 12));
        // Every configuration fits an H200 SM, so none is left out.
        let fits = |p: &Pipeline, threads, buffers| {
            model_blocks(threads, smem_bytes(p.box_bytes(), buffers)) >= p.blocks.min_resident()
        };
        for p in small.bulk.iter().chain(&small.copy).chain(&small.curve) {
            assert!(fits(p, COPY_THREADS, p.stages), "{p:?}");
        }
        for p in &small.transpose {
            assert!(fits(p, TRANSPOSE_BLOCK.0 * TRANSPOSE_BLOCK.1, transpose_buffers(p.stages)), "{p:?}");
        }
    }

    /// Blocks per SM the occupancy model (cc 9.0, the driver's rules) gives a launch of
    /// `threads` threads and `smem` dynamic shared bytes; registers are not the limit here.
    fn model_blocks(threads: u32, smem: u32) -> u32 {
        use crate::model::occupancy::{ArchLimits, KernelResources, Mode, occupancy};
        let arch = ArchLimits::for_cc(9, 0).unwrap();
        let res = KernelResources {
            dynamic_smem_bytes: smem,
            smem_opt_in: smem > 48 * 1024,
            ..KernelResources::new(threads, 32)
        };
        occupancy(arch, &res, Mode::Hardware).map_or(0, |o| o.active_blocks)
    }

    /// The configurations of a sweep the occupancy model says an H200 SM cannot hold.
    fn left_out(configs: &[Pipeline], threads: u32, buffers: impl Fn(&Pipeline) -> u32) -> Vec<String> {
        configs
            .iter()
            .filter(|p| model_blocks(threads, smem_bytes(p.box_bytes(), buffers(p))) < p.blocks.min_resident())
            .map(config_label)
            .collect()
    }

    #[test]
    fn the_sweeps_cover_stages_boxes_and_blocks_and_the_model_names_what_cannot_fit() {
        let (bulk, copy, transpose) = (bulk_configs(), copy_configs(), transpose_configs());
        assert_eq!((bulk.len(), copy.len(), transpose.len()), (67, 110, 17));
        // One block per item: 1 and 2 boxes of each of the 5 boxes, 7 chunkings, 2 of tiles.
        let per_items = |c: &[Pipeline]| c.iter().filter(|p| matches!(p.blocks, Blocks::PerItems(_))).count();
        assert_eq!((per_items(&bulk), per_items(&copy), per_items(&transpose)), (7, 10, 2));
        assert!(bulk.contains(&BULK_DEFAULT) && copy.contains(&COPY_DEFAULT) && transpose.contains(&TRANSPOSE_DEFAULT));
        // Shared bytes: 1024 to align, then each buffer and its 8-byte mbarrier.
        assert_eq!(smem_bytes(16384, 4), 1024 + 4 * 16392);
        assert_eq!(smem_bytes(TILE_BYTES, transpose_buffers(3)), 1024 + 5 * 16392);
        // 228 KiB per SM and 1 KiB reserved per block: the rings too large for their blocks.
        let stages = |p: &Pipeline| p.stages;
        let labels = |b: &str, at: &[(u32, u32)]| {
            at.iter().map(|(s, k)| format!("{s} x {b}, {k} blocks/SM")).collect::<Vec<String>>()
        };
        // 16 KiB rings of 4 stages fit 3 times; of 6 stages, twice.
        let mid = |b: &str| labels(b, &[(4, 4), (6, 3), (6, 4)]);
        // 32 KiB boxes: 2 stages fit 3 times, 3 stages twice, 4 and 6 stages once.
        let big = |b: &str| labels(b, &[(2, 4), (3, 3), (3, 4), (4, 2), (4, 3), (4, 4), (6, 2), (6, 3), (6, 4)]);
        let want_bulk: Vec<String> = [mid("16 KiB"), big("32 KiB")].concat();
        assert_eq!(left_out(&bulk, COPY_THREADS, stages), want_bulk);
        let want_copy: Vec<String> =
            [mid("64x64 box"), mid("32x128 box"), mid("16x256 box"), big("32x256 box")].concat();
        assert_eq!(left_out(&copy, COPY_THREADS, stages), want_copy);
        let t = left_out(&transpose, TRANSPOSE_BLOCK.0 * TRANSPOSE_BLOCK.1, |p| transpose_buffers(p.stages));
        assert_eq!(
            t,
            [
                "3 x 64x64 box, 3 blocks/SM",
                "4 x 64x64 box, 3 blocks/SM",
                "6 x 64x64 box, 2 blocks/SM",
                "6 x 64x64 box, 3 blocks/SM"
            ]
        );
        // The defaults fit, and so every stage count keeps a configuration of every kernel.
        for (p, threads, buffers) in [
            (BULK_DEFAULT, COPY_THREADS, BULK_DEFAULT.stages),
            (COPY_DEFAULT, COPY_THREADS, COPY_DEFAULT.stages),
            (TRANSPOSE_DEFAULT, TRANSPOSE_BLOCK.0 * TRANSPOSE_BLOCK.1, transpose_buffers(TRANSPOSE_DEFAULT.stages)),
        ] {
            assert!(model_blocks(threads, smem_bytes(p.box_bytes(), buffers)) >= p.blocks.min_resident(), "{p:?}");
        }
    }
}
