//! Global-memory coalescing for one warp request, under two accounting
//! models.
//!
//! - **Sector model** (cc >= 6.0): the memory system moves aligned 32-byte
//!   sectors. For devices of compute capability 6.0 and higher, a warp's
//!   concurrent accesses combine into one transaction per 32-byte sector
//!   needed to serve all its lanes (CUDA C++ Best Practices Guide,
//!   "Coalesced Access to Global Memory").
//! - **Segment model** (the classic textbook / L1-cached picture): the
//!   request is served in aligned 128-byte segments (cache lines), one
//!   transaction per distinct segment touched. This is the accounting the
//!   seed's Ex7 uses: stride 1 f32 -> 1 transaction; a 256-byte stride ->
//!   32 transactions, 1/32 efficiency.
//!
//! Efficiency = useful bytes / bytes moved. Which model the DRAM traffic
//! follows is an empirical question the demos measure.

use std::collections::BTreeSet;

/// Size of one DRAM/L2 sector, bytes (cc >= 6.0; Best Practices Guide).
pub const SECTOR_BYTES: u64 = 32;

/// Size of one cache line / memory segment in the 128-byte model, bytes.
pub const SEGMENT_BYTES: u64 = 128;

/// The transaction unit a model counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionModel {
    /// 32-byte sectors (cc >= 6.0).
    Sector32,
    /// 128-byte segments (classic model).
    Segment128,
}

impl TransactionModel {
    /// Bytes moved per transaction.
    pub const fn bytes(self) -> u64 {
        match self {
            TransactionModel::Sector32 => SECTOR_BYTES,
            TransactionModel::Segment128 => SEGMENT_BYTES,
        }
    }
}

/// One warp's global-memory request: lane `t` (for `t` in
/// `0..active_lanes`) accesses the element at byte address
/// `offset_bytes + t * stride_elems * elem_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarpAccess {
    /// Bytes per element (4 for `f32`).
    pub elem_bytes: u64,
    /// Distance between consecutive lanes' elements, in elements.
    pub stride_elems: u64,
    /// Byte address of lane 0's element (its misalignment matters).
    pub offset_bytes: u64,
    /// Lanes taking part (0..=32).
    pub active_lanes: u32,
}

impl WarpAccess {
    /// A full-warp (32 lanes) access with lane 0 at byte 0.
    pub const fn new(elem_bytes: u64, stride_elems: u64) -> Self {
        WarpAccess { elem_bytes, stride_elems, offset_bytes: 0, active_lanes: 32 }
    }

    /// The same access with lane 0 at `offset_bytes`.
    pub const fn with_offset(mut self, offset_bytes: u64) -> Self {
        self.offset_bytes = offset_bytes;
        self
    }

    /// The same access with only lanes `0..lanes` active.
    pub const fn with_lanes(mut self, lanes: u32) -> Self {
        self.active_lanes = lanes;
        self
    }

    /// Byte range `start..end` that lane `lane` touches.
    pub const fn lane_bytes(&self, lane: u32) -> (u64, u64) {
        let start = self.offset_bytes + lane as u64 * self.stride_elems * self.elem_bytes;
        (start, start + self.elem_bytes)
    }

    /// The same access as an [`Instruction`]: each active lane's start address.
    pub fn instruction(&self) -> Instruction {
        Instruction {
            elem_bytes: self.elem_bytes,
            lanes: std::array::from_fn(|l| (l < self.active_lanes as usize).then(|| self.lane_bytes(l as u32).0)),
        }
    }

    /// Counts the sectors and segments the request touches.
    pub fn analyze(&self) -> CoalescingReport {
        self.instruction().analyze()
    }
}

/// One warp instruction of a global load or store: each lane accesses `elem_bytes` bytes
/// from its start address (`None`: inactive lane).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instruction {
    /// Bytes per lane (1..=16).
    pub elem_bytes: u64,
    /// Start byte address per lane.
    pub lanes: [Option<u64>; 32],
}

impl Instruction {
    /// The byte ranges `start..end` of the active lanes.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.lanes.iter().flatten().map(|&s| (s, s + self.elem_bytes)).filter(|(s, e)| e > s)
    }

    /// Counts the sectors and segments the instruction touches.
    pub fn analyze(&self) -> CoalescingReport {
        let ranges: Vec<(u64, u64)> = self.ranges().collect();
        CoalescingReport {
            sectors: units(&ranges, SECTOR_BYTES).len() as u64,
            segments: units(&ranges, SEGMENT_BYTES).len() as u64,
            useful_bytes: union_len(ranges),
        }
    }
}

/// The aligned `unit`-byte blocks the byte ranges touch (an element may straddle a boundary;
/// every block it touches counts).
fn units(ranges: &[(u64, u64)], unit: u64) -> BTreeSet<u64> {
    ranges.iter().flat_map(|&(start, end)| start / unit..=(end - 1) / unit).collect()
}

/// What several instructions of one warp cost together: L1 counts every instruction's
/// sectors, L2 and DRAM move each sector once however many instructions touch it (the
/// sector stays in L1/L2 between them; measured on the H200 for a 16-byte struct read as four
/// 4-byte fields, issue 13).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WarpTraffic {
    /// Per instruction: (sectors, segments, useful bytes).
    pub instructions: Vec<(u64, u64, u64)>,
    /// Requests: one per warp instruction with an active lane (Nsight's `l1tex__t_requests`).
    pub requests: u64,
    /// L1 sectors: the sum of every instruction's sectors (`l1tex__t_sectors`).
    pub l1_sectors: u64,
    /// Distinct 32-byte sectors over all instructions: what L2 and DRAM move.
    pub dram_sectors: u64,
    /// Distinct 128-byte segments over all instructions (the segment model).
    pub segments: u64,
    /// Distinct bytes the lanes asked for, over all instructions.
    pub useful_bytes: u64,
}

impl WarpTraffic {
    /// Counts `instructions` of one warp.
    pub fn of(instructions: &[Instruction]) -> Self {
        let reports: Vec<CoalescingReport> = instructions.iter().map(Instruction::analyze).collect();
        let all: Vec<(u64, u64)> = instructions.iter().flat_map(Instruction::ranges).collect();
        WarpTraffic {
            instructions: reports.iter().map(|r| (r.sectors, r.segments, r.useful_bytes)).collect(),
            requests: reports.iter().filter(|r| r.sectors > 0).count() as u64,
            l1_sectors: reports.iter().map(|r| r.sectors).sum(),
            dram_sectors: units(&all, SECTOR_BYTES).len() as u64,
            segments: units(&all, SEGMENT_BYTES).len() as u64,
            useful_bytes: union_len(all),
        }
    }

    /// L2/DRAM bytes: distinct sectors x 32.
    pub fn dram_bytes(&self) -> u64 {
        self.dram_sectors * SECTOR_BYTES
    }

    /// Sectors per request (0 with no request).
    pub fn sectors_per_request(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.l1_sectors as f64 / self.requests as f64 }
    }

    /// Useful bytes / DRAM bytes under the sector model (1 when nothing moves).
    pub fn sector_efficiency(&self) -> f64 {
        ratio(self.useful_bytes, self.dram_bytes())
    }

    /// Useful bytes / bytes moved in 128-byte segments (1 when nothing moves).
    pub fn segment_efficiency(&self) -> f64 {
        ratio(self.useful_bytes, self.segments * SEGMENT_BYTES)
    }
}

fn ratio(useful: u64, moved: u64) -> f64 {
    if moved == 0 { 1.0 } else { useful as f64 / moved as f64 }
}

/// Total length of the union of byte ranges (lanes reading the same bytes
/// count them once).
fn union_len(mut ranges: Vec<(u64, u64)>) -> u64 {
    ranges.sort_unstable();
    let mut total = 0;
    let mut covered_to = 0;
    for (start, end) in ranges {
        let s = start.max(covered_to);
        if end > s {
            total += end - s;
        }
        covered_to = covered_to.max(end);
    }
    total
}

/// What one warp request costs under each model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoalescingReport {
    /// Distinct aligned 32-byte sectors touched (sector transactions).
    pub sectors: u64,
    /// Distinct aligned 128-byte segments touched (segment transactions).
    pub segments: u64,
    /// Distinct bytes the lanes asked for.
    pub useful_bytes: u64,
}

impl CoalescingReport {
    /// Transactions under `model`.
    pub const fn transactions(&self, model: TransactionModel) -> u64 {
        match model {
            TransactionModel::Sector32 => self.sectors,
            TransactionModel::Segment128 => self.segments,
        }
    }

    /// Bytes moved under `model`: transactions x transaction size.
    pub const fn bytes_moved(&self, model: TransactionModel) -> u64 {
        self.transactions(model) * model.bytes()
    }

    /// Useful bytes / bytes moved under `model`, in 0..=1 (1 for an empty
    /// request, which moves nothing and wastes nothing).
    pub fn efficiency(&self, model: TransactionModel) -> f64 {
        ratio(self.useful_bytes, self.bytes_moved(model))
    }

    /// Efficiency under the 32-byte sector model.
    pub fn sector_efficiency(&self) -> f64 {
        self.efficiency(TransactionModel::Sector32)
    }

    /// Efficiency under the 128-byte segment model.
    pub fn segment_efficiency(&self) -> f64 {
        self.efficiency(TransactionModel::Segment128)
    }
}

/// Predicted useful bandwidth of a full-warp, aligned access with
/// `stride_elems`, as a fraction of the stride-1 access, under `model`.
/// This assumes bandwidth in bytes moved is fixed, so useful bandwidth
/// scales with efficiency: for 4-byte elements the sector model predicts
/// `1 / min(stride, 8)`, the segment model `1 / min(stride, 32)`.
pub fn bandwidth_fraction_vs_unit_stride(elem_bytes: u64, stride_elems: u64, model: TransactionModel) -> f64 {
    let this = WarpAccess::new(elem_bytes, stride_elems).analyze();
    let unit = WarpAccess::new(elem_bytes, 1).analyze();
    this.efficiency(model) / unit.efficiency(model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use TransactionModel::{Sector32, Segment128};

    #[test]
    fn ex7_coalesced_is_one_segment() {
        let r = WarpAccess::new(4, 1).analyze();
        assert_eq!(r.segments, 1);
        assert_eq!(r.sectors, 4);
        assert_eq!(r.useful_bytes, 128);
        assert_eq!(r.sector_efficiency(), 1.0);
        assert_eq!(r.segment_efficiency(), 1.0);
    }

    #[test]
    fn ex7_256_byte_stride_is_32_segments() {
        let r = WarpAccess::new(4, 64).analyze();
        assert_eq!(r.segments, 32);
        assert_eq!(r.bytes_moved(Segment128), 4096);
        assert_eq!(r.useful_bytes, 128);
        assert_eq!(r.segment_efficiency(), 1.0 / 32.0);
        assert_eq!(r.sectors, 32);
        assert_eq!(r.sector_efficiency(), 0.125);
    }

    #[test]
    fn sector_counts_for_f32_strides() {
        let r = WarpAccess::new(4, 2).analyze();
        assert_eq!((r.sectors, r.segments), (8, 2));
        assert_eq!(r.sector_efficiency(), 0.5);
        let r = WarpAccess::new(4, 8).analyze();
        assert_eq!((r.sectors, r.segments), (32, 8));
        assert_eq!(r.sector_efficiency(), 0.125);
        let r = WarpAccess::new(4, 32).analyze();
        assert_eq!((r.sectors, r.segments), (32, 32));
        assert_eq!(r.sector_efficiency(), 0.125);
        assert_eq!(r.segment_efficiency(), 0.031_25);
    }

    #[test]
    fn misaligned_by_4_bytes_spills_into_a_fifth_sector() {
        let r = WarpAccess::new(4, 1).with_offset(4).analyze();
        assert_eq!(r.sectors, 5);
        assert_eq!(r.segments, 2);
        assert_eq!(r.sector_efficiency(), 0.8);
        assert_eq!(r.segment_efficiency(), 0.5);
    }

    #[test]
    fn partial_warps_and_straddling_elements() {
        // 8 lanes of f32 at stride 1: 32 bytes, one sector.
        let r = WarpAccess::new(4, 1).with_lanes(8).analyze();
        assert_eq!((r.sectors, r.segments, r.useful_bytes), (1, 1, 32));
        // An 8-byte element at byte 28 straddles sectors 0 and 1.
        let r = WarpAccess::new(8, 1).with_offset(28).with_lanes(1).analyze();
        assert_eq!(r.sectors, 2);
        // All lanes on one element: 4 useful bytes, one sector.
        let r = WarpAccess::new(4, 0).analyze();
        assert_eq!((r.sectors, r.useful_bytes), (1, 4));
        // No lanes: nothing moved.
        let r = WarpAccess::new(4, 1).with_lanes(0).analyze();
        assert_eq!((r.sectors, r.segments, r.useful_bytes), (0, 0, 0));
        assert_eq!(r.sector_efficiency(), 1.0);
    }

    #[test]
    fn h200_struct_of_four_floats_read_by_field_costs_4x_requests_same_dram_bytes() {
        // One float4 load per lane against four 4-byte loads of its fields (struct of 16 B).
        let whole = WarpTraffic::of(&[WarpAccess::new(16, 1).instruction()]);
        let fields: Vec<Instruction> = (0..4).map(|f| WarpAccess::new(4, 4).with_offset(4 * f).instruction()).collect();
        let by_field = WarpTraffic::of(&fields);
        assert_eq!((whole.requests, whole.l1_sectors, whole.dram_bytes()), (1, 16, 512));
        assert_eq!((by_field.requests, by_field.l1_sectors, by_field.dram_bytes()), (4, 64, 512));
        assert_eq!(by_field.instructions, vec![(16, 4, 128); 4]);
        assert_eq!(by_field.sectors_per_request(), 16.0);
        assert_eq!((by_field.useful_bytes, by_field.sector_efficiency()), (512, 1.0));
        // Reading two of the four fields: half the useful bytes for the same DRAM sectors.
        let two = WarpTraffic::of(&fields[..2]);
        assert_eq!((two.requests, two.dram_bytes(), two.sector_efficiency()), (2, 512, 0.5));
    }

    #[test]
    fn bandwidth_fractions_differ_between_models() {
        let sector: Vec<f64> =
            [1, 2, 4, 8, 16, 32].iter().map(|&s| bandwidth_fraction_vs_unit_stride(4, s, Sector32)).collect();
        assert_eq!(sector, [1.0, 0.5, 0.25, 0.125, 0.125, 0.125]);
        let segment: Vec<f64> =
            [1, 2, 4, 8, 16, 32, 64].iter().map(|&s| bandwidth_fraction_vs_unit_stride(4, s, Segment128)).collect();
        assert_eq!(segment, [1.0, 0.5, 0.25, 0.125, 0.0625, 0.031_25, 0.031_25]);
    }
}
