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

use super::dram::DRAM_FETCH_BYTES;

/// Size of one DRAM/L2 sector, bytes (cc >= 6.0; Best Practices Guide).
pub const SECTOR_BYTES: u64 = 32;

/// Size of one cache line / memory segment in the 128-byte model, bytes.
pub const SEGMENT_BYTES: u64 = 128;

/// Bits of a GPU virtual address: 49 since Pascal, enough for a 48-bit CPU address space plus
/// the GPU's own memory (NVIDIA Tesla P100 whitepaper, "Unified Memory").
pub const VIRTUAL_ADDRESS_BITS: u32 = 49;

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
/// sectors, L2 moves each sector once however many instructions touch it (the sector stays in
/// L1/L2 between them; measured on the H200 for a 16-byte struct read as four 4-byte fields),
/// and DRAM, on L2 misses, each 64-byte sector pair once ([`super::dram::DRAM_FETCH_BYTES`],
/// measured on the H200).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WarpTraffic {
    /// Per instruction: (sectors, segments, useful bytes).
    pub instructions: Vec<(u64, u64, u64)>,
    /// Requests: one per warp instruction with an active lane (Nsight's `l1tex__t_requests`).
    pub requests: u64,
    /// L1 sectors: the sum of every instruction's sectors (`l1tex__t_sectors`).
    pub l1_sectors: u64,
    /// Distinct 32-byte sectors over all instructions: what L2 moves.
    pub l2_sectors: u64,
    /// Distinct aligned 64-byte sector pairs over all instructions: what DRAM moves when they
    /// miss in L2 (an L2 miss reads the pair; measured on the H200).
    pub dram_fetches: u64,
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
            l2_sectors: units(&all, SECTOR_BYTES).len() as u64,
            dram_fetches: units(&all, DRAM_FETCH_BYTES).len() as u64,
            segments: units(&all, SEGMENT_BYTES).len() as u64,
            useful_bytes: union_len(all),
        }
    }

    /// L2 bytes: distinct sectors x 32.
    pub fn l2_bytes(&self) -> u64 {
        self.l2_sectors * SECTOR_BYTES
    }

    /// DRAM bytes when every sector misses in L2: distinct 64-byte pairs x 64.
    pub fn dram_bytes(&self) -> u64 {
        self.dram_fetches * DRAM_FETCH_BYTES
    }

    /// Sectors per request (0 with no request).
    pub fn sectors_per_request(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.l1_sectors as f64 / self.requests as f64 }
    }

    /// Useful bytes / L2 bytes under the sector model (1 when nothing moves).
    pub fn sector_efficiency(&self) -> f64 {
        ratio(self.useful_bytes, self.l2_bytes())
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

/// A kernel's global stores (or loads) over a whole row-major `rows x cols` matrix, in row
/// segments: each warp request covers `segment` consecutive elements of each of
/// `rows_per_request` rows, segments starting at columns `0, segment, 2 segment, ...` (the last
/// one shorter), and each segment is covered by `passes` requests (1 for whole-vector or
/// whole-warp accesses; 4 for a 16-byte-per-lane pattern done as 4 scalar accesses, each of
/// which touches every sector of the segment: an upper bound). Row `r` starts at byte
/// `r * cols * elem_bytes`, so when a row is not a whole number of sectors most segments start
/// inside a sector: they touch one more sector, and the sectors at their ends are shared with
/// the neighbouring segment, written partly by each (partial-sector writes). With `shifted`,
/// each row's segments start that row's misalignment before column 0 (at the sector boundary
/// below the row's start, as `copy` and `transpose_aligned_stores` place their warps): every segment
/// then covers whole sectors but the row's first and last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowSweep {
    /// Rows of the matrix.
    pub rows: u64,
    /// Columns (elements per row, the row pitch: rows are dense).
    pub cols: u64,
    /// Bytes per element.
    pub elem_bytes: u64,
    /// Elements of one row a request covers.
    pub segment: u64,
    /// Rows one request covers (2 for a half-warp per row).
    pub rows_per_request: u64,
    /// Requests per segment.
    pub passes: u64,
    /// Segments start at the sector boundary at or below the row's start.
    pub shifted: bool,
}

/// What a [`RowSweep`] costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowSweepTraffic {
    /// Warp requests (Nsight's `l1tex__t_requests`).
    pub requests: u64,
    /// Sectors summed over requests (`l1tex__t_sectors`).
    pub sectors: u64,
    /// Sectors summed over segments that the segment covers only in part: each is shared with
    /// the neighbouring segment (or row), so two requests write parts of it.
    pub partial_sectors: u64,
    /// Bytes of the matrix.
    pub useful_bytes: u64,
}

impl RowSweepTraffic {
    /// Sectors per request.
    pub fn sectors_per_request(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.sectors as f64 / self.requests as f64 }
    }

    /// Partial sectors per request.
    pub fn partial_per_request(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.partial_sectors as f64 / self.requests as f64 }
    }
}

impl RowSweep {
    /// The sweep of a whole-warp pass: one request per `segment` elements of one row.
    pub const fn new(rows: u64, cols: u64, elem_bytes: u64, segment: u64) -> Self {
        RowSweep { rows, cols, elem_bytes, segment, rows_per_request: 1, passes: 1, shifted: false }
    }

    /// Counts requests, sectors and partial sectors over the matrix. A row's misalignment,
    /// `r * cols * elem_bytes mod 32`, repeats every `32 / gcd(cols * elem_bytes, 32)` rows, so
    /// one period of rows is counted and weighted.
    pub fn traffic(&self) -> RowSweepTraffic {
        let row_bytes = self.cols * self.elem_bytes;
        let period = SECTOR_BYTES / gcd(row_bytes % SECTOR_BYTES, SECTOR_BYTES);
        let (mut sectors, mut partial, mut segments) = (0u64, 0u64, 0u64);
        for r in 0..self.rows.min(period) {
            let weight = (self.rows - r).div_ceil(period);
            let base = r * row_bytes;
            let shift = if self.shifted { (base % SECTOR_BYTES / self.elem_bytes) as i64 } else { 0 };
            for c in (-shift..self.cols as i64).step_by(self.segment.max(1) as usize) {
                let (c0, c1) = (c.max(0) as u64, (c + self.segment as i64).min(self.cols as i64) as u64);
                let (start, end) = (base + c0 * self.elem_bytes, base + c1 * self.elem_bytes);
                let (first, last) = (start / SECTOR_BYTES, (end - 1) / SECTOR_BYTES);
                let ragged =
                    u64::from(!start.is_multiple_of(SECTOR_BYTES)) + u64::from(!end.is_multiple_of(SECTOR_BYTES));
                sectors += weight * (last - first + 1);
                partial += weight * ragged.min(last - first + 1);
                segments += weight;
            }
        }
        let requests_per_pass = segments.div_ceil(self.rows_per_request.max(1));
        RowSweepTraffic {
            requests: requests_per_pass * self.passes,
            sectors: sectors * self.passes,
            partial_sectors: partial,
            useful_bytes: self.rows * row_bytes,
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
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
    fn dram_moves_sector_pairs_as_the_dram_model_says() {
        // Stride 32 floats: 32 sectors through L2, each miss a 64-byte pair from DRAM.
        let t = WarpTraffic::of(&[WarpAccess::new(4, 32).instruction()]);
        assert_eq!((t.l2_sectors, t.l2_bytes(), t.dram_fetches, t.dram_bytes()), (32, 1024, 32, 2048));
        // Dense: the sectors pair up, so DRAM moves what L2 does.
        let t = WarpTraffic::of(&[WarpAccess::new(4, 1).instruction()]);
        assert_eq!((t.l2_bytes(), t.dram_bytes()), (128, 128));
        // A warp's DRAM bytes are 32 lanes times the strided-read model's bytes per element.
        for elem in [4, 8, 16] {
            for stride in 1..=64 {
                let t = WarpTraffic::of(&[WarpAccess::new(elem, stride).instruction()]);
                assert_eq!(t.dram_bytes(), 32 * super::super::dram::bytes_per_element(elem, stride), "{elem} {stride}");
                assert!(t.dram_bytes() >= t.l2_bytes() && t.dram_bytes() <= 2 * t.l2_bytes(), "{elem} {stride}");
            }
        }
    }

    #[test]
    fn aligned_rows_store_whole_sectors() {
        // 8192 floats per row: every 32-float warp segment is 4 whole sectors.
        let t = RowSweep::new(8192, 8192, 4, 32).traffic();
        assert_eq!((t.requests, t.sectors, t.partial_sectors), (8192 * 256, 8192 * 256 * 4, 0));
        assert_eq!(t.sectors_per_request(), 4.0);
        // 128-bit accesses, a half-warp per row: 16 sectors per request, half the requests.
        let v = RowSweep { rows_per_request: 2, ..RowSweep::new(8192, 8192, 4, 64) }.traffic();
        assert_eq!((v.requests, v.sectors_per_request(), v.partial_sectors), (8192 * 64, 16.0, 0));
    }

    #[test]
    fn odd_rows_make_most_segments_straddle_a_sector() {
        // 8191 floats per row: row r starts 4 r bytes before a sector boundary (mod 32), so 7
        // rows in 8 are misaligned; their 255 whole segments touch 5 sectors with 2 partial,
        // and the last segment (31 floats) 4 or 5.
        let t = RowSweep::new(8, 8191, 4, 32).traffic();
        let misaligned: u64 = 7 * 255;
        assert_eq!(t.requests, 8 * 256);
        // Row 0: 255 x 4 + 4 sectors (last segment 124 bytes from 0 mod 32: 1 partial).
        // Rows 1..8: 255 x 5, and the last segment touches 4 or 5 sectors.
        let last: u64 = (1..8u64)
            .map(|r| {
                let start = (r * 8191 + 8160) * 4;
                let end = (r * 8191 + 8191) * 4;
                (end - 1) / 32 - start / 32 + 1
            })
            .sum();
        assert_eq!(t.sectors, 255 * 4 + 4 + misaligned * 5 + last);
        // Partial: row 0's last end; 2 per whole segment of rows 1..8; their last segments'
        // starts, and ends but for row 7's (row 8 starts on a sector).
        assert_eq!(t.partial_sectors, 1 + misaligned * 2 + 7 + 6);
        assert!(t.sectors_per_request() > 4.85 && t.sectors_per_request() < 4.9, "{}", t.sectors_per_request());
        assert!(t.partial_per_request() > 1.7, "{}", t.partial_per_request());
        // A period of 8 rows: 8000 rows cost 1000 times 8.
        let many = RowSweep::new(8000, 8191, 4, 32).traffic();
        assert_eq!((many.requests, many.sectors), (1000 * t.requests, 1000 * t.sectors));
        // Padding the pitch to 8192 (what a pitched layout does) removes every partial sector.
        assert_eq!(RowSweep::new(8000, 8192, 4, 32).traffic().partial_sectors, 0);
    }

    #[test]
    fn shifted_segments_leave_one_partial_sector_where_two_rows_meet() {
        // Row r of 8191 floats starts e = 7 r mod 8 floats into a sector; its segments start e
        // floats before it: ceil((8191 + e) / 32) requests, 257 for e >= 2.
        let t = RowSweep { shifted: true, ..RowSweep::new(8, 8191, 4, 32) }.traffic();
        assert_eq!(t.requests, 6 * 257 + 2 * 256);
        // The 8191 sectors of the 8 rows, the 7 where two rows meet counted once per row; those
        // are the only partial ones, each in two rows.
        assert_eq!((t.sectors, t.partial_sectors), (8191 + 7, 14));
        // Whole-sector rows are not shifted at all.
        let aligned = RowSweep { shifted: true, ..RowSweep::new(8, 8192, 4, 32) }.traffic();
        assert_eq!(aligned, RowSweep::new(8, 8192, 4, 32).traffic());
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
