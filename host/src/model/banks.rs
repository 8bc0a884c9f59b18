//! Shared-memory bank model for one warp request of 4-, 8- or 16-byte accesses: the
//! wavefronts it takes, the conflicts Nsight Compute would count, and which lane hits which
//! bank.
//!
//! Banks (CUDA C++ Programming Guide, "Shared Memory" for cc 5.x and later; Best Practices
//! Guide, "Shared Memory and Memory Banks"): 32 banks, each 4 bytes (one 32-bit word) wide,
//! word `w` in bank `w mod 32`. A bank delivers one distinct word per wavefront; lanes that
//! read the same word get it by broadcast and count once.
//!
//! Width (measured on the H200 with the 8- and 16-byte probes, `docs/measurements/banks.md`; the guide
//! says nothing about wider accesses): one wavefront moves at most 128 bytes, so a warp's
//! request is served in *phases* of `128 / width` lanes (32 lanes of 4 bytes, 16 of 8, 8 of
//! 16), each phase taking as many wavefronts as its busiest bank holds distinct words. Broadcast
//! merges lanes inside a phase only. One exception halves the phase count: when every pair of
//! lanes `2k, 2k + 1` reads one address (or has one active lane), a pair takes one slot of a
//! phase, so a phase covers `256 / width` lanes. These rules give every H200 figure:
//! 8-byte element `t % 4` -> 2 wavefronts, all lanes one element -> 1, element `t >> 1` -> 1,
//! element `2t` -> 4; 16-byte element `t % 4` -> 4, `(t >> 1) % 4` -> 2, contiguous -> 4, all
//! lanes one element -> 2. (For partial warps the pair rule is this model's extrapolation: the
//! H200 figures are full warps.)
//!
//! Conflicts, as Nsight Compute counts them (`l1tex__data_bank_conflicts_pipe_lsu_mem_shared`):
//! the wavefronts beyond the request's ideal, which is its number of phases (1 for 4 bytes, 2
//! for 8, 4 for 16 on a full warp). Over several warps both add up.

use std::fmt;

/// Number of shared-memory banks (cc >= 5.x; Programming Guide).
pub const NUM_BANKS: u32 = 32;

/// Width of one bank, bytes (4 bytes = one 32-bit word; Programming Guide).
pub const BANK_WIDTH_BYTES: u64 = 4;

/// Threads (lanes) in one warp.
pub const WARP_SIZE: usize = 32;

/// Bytes one wavefront delivers: 32 banks x 4 bytes.
pub const WAVEFRONT_BYTES: u64 = NUM_BANKS as u64 * BANK_WIDTH_BYTES;

/// The bank that holds 32-bit word number `word` (word index = byte address / 4).
pub fn bank_of_word(word: u64) -> u32 {
    // The remainder is < 32, so the narrowing cast is exact.
    (word % u64::from(NUM_BANKS)) as u32
}

/// The bank that holds byte address `addr` of shared memory.
pub fn bank_of_byte(addr: u64) -> u32 {
    bank_of_word(addr / BANK_WIDTH_BYTES)
}

/// Bytes after which swizzle `mode`'s pattern repeats (its atom: 8 128-byte lines for 128B, 4
/// for 64B, 2 for 32B, so 1024, 512 or 256 bytes; 128, one line, for no swizzle): the pattern
/// XORs the chunk with `mode` bits of the line index (`memlab_contracts::tma::swizzle`), so a
/// tile laid out by the pattern starts on a multiple of this.
pub const fn swizzle_atom(mode: u32) -> u64 {
    WAVEFRONT_BYTES << mode
}

/// Bytes each lane accesses in one instruction: a 32-bit (`float`, `int`), 64-bit (`double`,
/// `float2`) or 128-bit (`float4`) load or store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Width {
    /// 4 bytes.
    B4,
    /// 8 bytes.
    B8,
    /// 16 bytes.
    B16,
}

impl Width {
    /// Every width, narrowest first.
    pub const ALL: [Width; 3] = [Width::B4, Width::B8, Width::B16];

    /// The width in bytes.
    pub const fn bytes(self) -> u64 {
        match self {
            Width::B4 => 4,
            Width::B8 => 8,
            Width::B16 => 16,
        }
    }

    /// The width of `bytes` bytes.
    ///
    /// # Errors
    /// Any size other than 4, 8 or 16, with the allowed ones named.
    pub fn from_bytes(bytes: u64) -> Result<Self, BankError> {
        Width::ALL.into_iter().find(|w| w.bytes() == bytes).ok_or(BankError::Width(bytes))
    }

    /// Lanes one phase serves when lanes do not pair up: `128 / width`.
    pub const fn lanes_per_phase(self) -> usize {
        (WAVEFRONT_BYTES / self.bytes()) as usize
    }
}

/// Why a request cannot be modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BankError {
    /// The access width is not 4, 8 or 16 bytes.
    Width(u64),
    /// A lane's byte address is not a multiple of the width (the hardware requires natural
    /// alignment; Programming Guide, "Device Memory Accesses").
    Misaligned {
        /// The lane.
        lane: usize,
        /// Its byte address.
        addr: u64,
        /// The width, bytes.
        width: u64,
    },
}

impl fmt::Display for BankError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            BankError::Width(w) => write!(f, "access width {w} bytes is not modelled: allowed 4, 8 or 16"),
            BankError::Misaligned { lane, addr, width } => write!(
                f,
                "lane {lane} accesses byte {addr}, not a multiple of the {width}-byte width (accesses must be \
                 naturally aligned)"
            ),
        }
    }
}

impl std::error::Error for BankError {}

/// One warp's shared-memory request: the access width and, for each of the 32 lanes, the byte
/// address it accesses (`None` for an inactive lane).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarpRequest {
    width: Width,
    lanes: [Option<u64>; WARP_SIZE],
}

impl WarpRequest {
    /// A request of `width`-byte accesses at the given byte addresses.
    ///
    /// # Errors
    /// [`BankError::Misaligned`] for an address that is not a multiple of the width.
    pub fn new(width: Width, byte_addrs: [Option<u64>; WARP_SIZE]) -> Result<Self, BankError> {
        for (lane, addr) in byte_addrs.iter().enumerate() {
            if let Some(addr) = *addr
                && addr % width.bytes() != 0
            {
                return Err(BankError::Misaligned { lane, addr, width: width.bytes() });
            }
        }
        Ok(WarpRequest { width, lanes: byte_addrs })
    }

    /// A request of `width`-byte accesses where each lane accesses element `index` of an array
    /// of `width`-byte elements starting at byte 0 (always aligned).
    pub fn from_elements(width: Width, elements: [Option<u64>; WARP_SIZE]) -> Self {
        WarpRequest { width, lanes: elements.map(|e| e.map(|i| i * width.bytes())) }
    }

    /// 4-byte accesses: an explicit word index (or `None`) per lane.
    pub fn from_lanes(words: [Option<u64>; WARP_SIZE]) -> Self {
        Self::from_elements(Width::B4, words)
    }

    /// 4-byte accesses: lanes `0..words.len()` read the given word indices; the rest are
    /// inactive.
    ///
    /// # Panics
    /// If more than 32 words are given (a warp has 32 lanes).
    pub fn from_words(words: &[u64]) -> Self {
        assert!(words.len() <= WARP_SIZE, "a warp has {WARP_SIZE} lanes, got {} words", words.len());
        let mut lanes = [None; WARP_SIZE];
        for (slot, &w) in lanes.iter_mut().zip(words) {
            *slot = Some(w);
        }
        Self::from_lanes(lanes)
    }

    /// 4-byte accesses: lanes `0..addrs.len()` read the word containing each byte address;
    /// two lanes reading different bytes of one word share that word.
    ///
    /// # Panics
    /// If more than 32 addresses are given.
    pub fn from_byte_addresses(addrs: &[u64]) -> Self {
        let words: Vec<u64> = addrs.iter().map(|a| a / BANK_WIDTH_BYTES).collect();
        Self::from_words(&words)
    }

    /// 4-byte accesses, all 32 lanes active, lane `t` reading word `t * stride_words`.
    pub fn strided(stride_words: u64) -> Self {
        Self::from_lanes(std::array::from_fn(|t| Some(t as u64 * stride_words)))
    }

    /// Lane `t` reads `tile[t][0]` of a row-major tile of 32-bit elements whose rows are
    /// `row_pitch_words` words apart (a column read, as in a transpose). Same as
    /// [`WarpRequest::strided`] with that stride.
    pub fn column_of_tile(row_pitch_words: u64) -> Self {
        Self::strided(row_pitch_words)
    }

    /// Every lane reads word 0: one broadcast.
    pub fn broadcast() -> Self {
        Self::from_lanes([Some(0); WARP_SIZE])
    }

    /// The same request with every lane's byte address put through a TMA tensor map's swizzle
    /// `mode` (0 none, 1 32-byte, 2 64-byte, 3 128-byte; `memlab_contracts::tma::swizzle`: the
    /// 16-byte chunk bits XORed with the 128-byte line bits above them, PTX ISA "Tensors:
    /// tensor swizzling modes"), addresses taken from the start of a tile aligned to the mode's
    /// [`swizzle_atom`]. A swizzle moves whole 16-byte chunks, so accesses of up to 16 bytes stay
    /// aligned.
    pub fn swizzled(&self, mode: u32) -> Self {
        let atom = swizzle_atom(mode);
        let swizzle = |a: u64| {
            let low = (a % atom) as u32;
            a - low as u64 + memlab_contracts::tma::swizzle(mode, low) as u64
        };
        WarpRequest { width: self.width, lanes: self.lanes.map(|a| a.map(swizzle)) }
    }

    /// The float4 column read of `tma_transpose`'s input tile under swizzle `mode`: lane `t`
    /// reads the 16 bytes at row `t`, columns `0..4` of a box `box_cols` floats wide (a box
    /// that mode allows), unswizzled when `swizzled` is false (the same box as a plain tensor
    /// map would lay it out).
    pub fn tma_tile_column(mode: u32, box_cols: u32, swizzled: bool) -> Self {
        let dense = std::array::from_fn(|t| Some(t as u64 * box_cols as u64 * BANK_WIDTH_BYTES));
        let plain = WarpRequest { width: Width::B16, lanes: dense };
        if swizzled { plain.swizzled(mode) } else { plain }
    }

    /// The access width.
    pub fn width(&self) -> Width {
        self.width
    }

    /// The byte address each lane accesses (`None` for inactive lanes).
    pub fn lanes(&self) -> &[Option<u64>; WARP_SIZE] {
        &self.lanes
    }

    /// Whether every lane pair `2k, 2k + 1` accesses one address (or has at most one active
    /// lane), so that a pair takes one slot of a phase (measured on the H200, see the module
    /// docs).
    fn pairs_merge(&self) -> bool {
        self.lanes.chunks(2).all(|p| match (p[0], p[1]) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        })
    }

    /// Lanes per phase for this request.
    pub fn lanes_per_phase(&self) -> usize {
        let lanes = self.width.lanes_per_phase();
        if self.width != Width::B4 && self.pairs_merge() { 2 * lanes } else { lanes }
    }

    /// Maps the request onto the banks, phase by phase.
    pub fn analyze(&self) -> BankReport {
        let per_phase = self.lanes_per_phase();
        let words_per_lane = self.width.bytes() / BANK_WIDTH_BYTES;
        let mut lane_banks = [None; WARP_SIZE];
        let mut phases = Vec::new();
        for (p, chunk) in self.lanes.chunks(per_phase).enumerate() {
            let first = p * per_phase;
            // For each bank, the distinct words asked of it and the lanes asking for each.
            let mut banks: Vec<Vec<BankWord>> = vec![Vec::new(); NUM_BANKS as usize];
            for (i, addr) in chunk.iter().enumerate() {
                let Some(addr) = *addr else { continue };
                let lane = first + i;
                let word0 = addr / BANK_WIDTH_BYTES;
                lane_banks[lane] = Some(bank_of_word(word0));
                for word in word0..word0 + words_per_lane {
                    let list = &mut banks[bank_of_word(word) as usize];
                    match list.iter_mut().find(|bw| bw.word == word) {
                        Some(bw) => bw.lanes.push(lane as u32),
                        None => list.push(BankWord { word, lanes: vec![lane as u32] }),
                    }
                }
            }
            let wavefronts = banks.iter().map(Vec::len).max().unwrap_or(0) as u32;
            if wavefronts > 0 {
                phases.push(Phase { lanes: (first as u32, (first + chunk.len()) as u32), wavefronts, banks });
            }
        }
        let wavefronts: u32 = phases.iter().map(|p| p.wavefronts).sum();
        let ideal = phases.len() as u32;
        let banks_used = (0..NUM_BANKS as usize).filter(|&b| phases.iter().any(|p| !p.banks[b].is_empty())).count();
        BankReport {
            width: self.width,
            active_lanes: self.lanes.iter().flatten().count() as u32,
            lane_banks,
            wavefronts,
            ideal_wavefronts: ideal,
            conflicts: wavefronts - ideal,
            banks_used: banks_used as u32,
            phases,
        }
    }
}

/// One word a bank must deliver in a phase, and the lanes that asked for it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BankWord {
    /// The 32-bit word index (byte address / 4).
    pub word: u64,
    /// The lanes that access it (more than one: a broadcast).
    pub lanes: Vec<u32>,
}

/// One phase of a request: a group of lanes served together.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Phase {
    /// Lanes `start..end` of the warp.
    pub lanes: (u32, u32),
    /// Wavefronts this phase takes: the most distinct words any bank must deliver.
    pub wavefronts: u32,
    /// Per bank, the distinct words asked of it in this phase.
    pub banks: Vec<Vec<BankWord>>,
}

/// How one warp request maps onto the 32 banks.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BankReport {
    /// The access width.
    pub width: Width,
    /// Lanes that take part in the request.
    pub active_lanes: u32,
    /// The bank of each lane's first word (`None` for inactive lanes).
    pub lane_banks: [Option<u32>; WARP_SIZE],
    /// Wavefronts the request takes: the sum over its phases. 0 = no active lanes.
    pub wavefronts: u32,
    /// Wavefronts with no bank conflict: one per phase.
    pub ideal_wavefronts: u32,
    /// Bank conflicts as Nsight Compute counts them: `wavefronts - ideal_wavefronts`.
    pub conflicts: u32,
    /// Banks that deliver at least one word.
    pub banks_used: u32,
    /// The phases with at least one active lane.
    pub phases: Vec<Phase>,
}

/// Wavefronts of a full-warp 4-byte request where lane `t` reads word `t * stride_words`.
/// Equals `gcd(stride, 32)` for a non-zero stride (the lanes fall on `32 / gcd` banks, `gcd`
/// distinct words each) and 1 for stride 0 (a broadcast).
pub fn conflict_degree_for_stride(stride_words: u64) -> u32 {
    WarpRequest::strided(stride_words).analyze().wavefronts
}

/// A row-major 2-D tile of elements in shared memory, `pitch` elements per row, accessed by a
/// block of `block.0 x block.1` threads (`threadIdx.x` fastest), one element per thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    /// Elements from one row's start to the next (the column count plus any padding).
    pub pitch: u64,
    /// Block shape `(x, y)`.
    pub block: (u32, u32),
}

/// Which element of the tile thread `(x, y)` accesses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum TileAccess {
    /// `tile[y][x]`: a warp walks along a row.
    Row,
    /// `tile[x][y]`: a warp walks down a column (a transpose's read or write).
    Column,
}

impl Tile {
    /// Threads in the block.
    pub fn threads(&self) -> u32 {
        self.block.0 * self.block.1
    }

    /// Warps in the block: 32 consecutive threads each, the last partial when the threads are
    /// not a multiple of 32 (CUDA C++ Programming Guide, "SIMT Architecture").
    pub fn warps(&self) -> u32 {
        self.threads().div_ceil(WARP_SIZE as u32)
    }

    /// The element index each lane of warp `warp` accesses (lanes past the block inactive).
    pub fn warp_elements(&self, warp: u32, access: TileAccess) -> [Option<u64>; WARP_SIZE] {
        let threads = self.threads();
        std::array::from_fn(|lane| {
            let t = warp * WARP_SIZE as u32 + lane as u32;
            (t < threads).then(|| {
                let (x, y) = (u64::from(t % self.block.0), u64::from(t / self.block.0));
                match access {
                    TileAccess::Row => y * self.pitch + x,
                    TileAccess::Column => x * self.pitch + y,
                }
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swizzle_spreads_the_tma_tiles_float4_column_over_the_banks() {
        use memlab_contracts::tma::box_cols;
        // (mode, wavefronts unswizzled, swizzled): rows 128, 32, 64 and 128 bytes apart put 8,
        // 2, 4 and 8 lanes of a 16-byte phase on one 4-bank group; every swizzle spreads a
        // phase's 8 rows over 8 chunks, one wavefront per phase.
        for (mode, plain, swizzled) in [(0, 32, 32), (1, 8, 4), (2, 16, 4), (3, 32, 4)] {
            let w = box_cols(mode);
            let a = WarpRequest::tma_tile_column(mode, w, false).analyze();
            let b = WarpRequest::tma_tile_column(mode, w, true).analyze();
            assert_eq!((a.wavefronts, b.wavefronts), (plain, swizzled), "mode {mode}");
            assert_eq!(b.ideal_wavefronts, 4);
        }
        // The model's addresses are the kernel's: the contract's offsets for row t, column 0.
        for mode in 0..4 {
            let r = WarpRequest::tma_tile_column(mode, box_cols(mode), true);
            let want: Vec<Option<u64>> =
                (0..32).map(|t| Some(memlab_contracts::tma::transpose_read_offset(mode, t, 0) as u64)).collect();
            assert_eq!(r.lanes().to_vec(), want);
        }
    }

    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 { a } else { gcd(b, a % b) }
    }

    /// Lane `t`'s element.
    type Lane = fn(u64) -> u64;

    /// Wavefronts of a full warp of `width` accesses, lane `t` at element `f(t)`.
    fn elements(width: Width, f: impl Fn(u64) -> u64) -> BankReport {
        WarpRequest::from_elements(width, std::array::from_fn(|t| Some(f(t as u64)))).analyze()
    }

    /// Total (wavefronts, conflicts) over every warp of a tile access.
    fn tile(width: Width, tile: Tile, access: TileAccess) -> Vec<(u32, u32)> {
        (0..tile.warps())
            .map(|w| {
                let r = WarpRequest::from_elements(width, tile.warp_elements(w, access)).analyze();
                (r.wavefronts, r.conflicts)
            })
            .collect()
    }

    // The H200 figures of `docs/measurements/banks.md`, each measured with a bank probe.

    #[test]
    fn h200_double_tile_32x32_column_is_32_wavefronts_row_is_2() {
        let t = Tile { pitch: 32, block: (32, 32) };
        assert!(tile(Width::B8, t, TileAccess::Column).iter().all(|&wc| wc == (32, 30)));
        assert!(tile(Width::B8, t, TileAccess::Row).iter().all(|&wc| wc == (2, 0)));
    }

    #[test]
    fn h200_8_byte_loads() {
        let cases: [(Lane, u32); 4] = [(|t| t % 4, 2), (|_| 0, 1), (|t| t >> 1, 1), (|t| 2 * t, 4)];
        for (i, (f, wavefronts)) in cases.into_iter().enumerate() {
            assert_eq!(elements(Width::B8, f).wavefronts, wavefronts, "case {i}");
        }
        // Element 2t: 2 phases of 16 lanes, 2 wavefronts each: 2 conflicts.
        let r = elements(Width::B8, |t| 2 * t);
        assert_eq!((r.ideal_wavefronts, r.conflicts), (2, 2));
    }

    #[test]
    fn h200_16_byte_loads() {
        let cases: [(Lane, u32); 4] = [(|t| t % 4, 4), (|t| (t >> 1) % 4, 2), (|t| t, 4), (|_| 0, 2)];
        for (i, (f, wavefronts)) in cases.into_iter().enumerate() {
            assert_eq!(elements(Width::B16, f).wavefronts, wavefronts, "case {i}");
        }
        // One float4 per lane: 4 phases of 8 lanes, no conflict.
        let r = elements(Width::B16, |t| t);
        assert_eq!((r.ideal_wavefronts, r.conflicts, r.phases.len()), (4, 0, 4));
    }

    #[test]
    fn h200_padded_tile_16x16_block_is_2_wavefronts_32x32_is_1() {
        // Pitch = block width + 1; one warp of a 16-wide block covers two tile rows.
        let t = Tile { pitch: 17, block: (16, 16) };
        for access in [TileAccess::Column, TileAccess::Row] {
            assert!(tile(Width::B4, t, access).iter().all(|&wc| wc == (2, 1)), "{access:?}");
        }
        let t = Tile { pitch: 33, block: (32, 32) };
        for access in [TileAccess::Column, TileAccess::Row] {
            assert!(tile(Width::B4, t, access).iter().all(|&wc| wc == (1, 0)), "{access:?}");
        }
    }

    #[test]
    fn h200_two_warps_of_word_4t_add_up_to_6_conflicts() {
        let warps: Vec<BankReport> = (0..2u64)
            .map(|w| WarpRequest::from_lanes(std::array::from_fn(|l| Some(4 * (32 * w + l as u64)))).analyze())
            .collect();
        assert!(warps.iter().all(|r| (r.wavefronts, r.conflicts) == (4, 3)));
        assert_eq!(warps.iter().map(|r| r.conflicts).sum::<u32>(), 6);
    }

    // The seed's worked examples (4-byte words).

    #[test]
    fn ex5_column_of_32_wide_tile_is_32_way() {
        let r = WarpRequest::column_of_tile(32).analyze();
        assert!(r.lane_banks.iter().all(|b| *b == Some(0)));
        assert_eq!((r.wavefronts, r.conflicts, r.banks_used), (32, 31, 1));
        assert_eq!(r.phases[0].banks[0].len(), 32);
    }

    #[test]
    fn ex6_padding_to_33_is_conflict_free() {
        let r = WarpRequest::column_of_tile(33).analyze();
        for (t, b) in r.lane_banks.iter().enumerate() {
            assert_eq!(*b, Some(t as u32));
        }
        assert_eq!((r.wavefronts, r.banks_used), (1, 32));
    }

    #[test]
    fn cm306_word_2t_two_way_over_16_banks() {
        let r = WarpRequest::strided(2).analyze();
        assert_eq!((r.wavefronts, r.banks_used), (2, 16));
        // Lanes 0 and 16 both use bank 0 but need words 0 and 32.
        assert_eq!(r.lane_banks[0], Some(0));
        assert_eq!(r.lane_banks[16], Some(0));
        assert!(r.phases[0].banks[1].is_empty());
    }

    #[test]
    fn cm306_word_0_everywhere_is_a_broadcast() {
        let r = WarpRequest::broadcast().analyze();
        assert_eq!((r.wavefronts, r.banks_used, r.active_lanes), (1, 1, 32));
        assert_eq!(r.phases[0].banks[0][0].lanes.len(), 32);
    }

    #[test]
    fn strides_give_gcd_with_32() {
        for s in 1..=130u64 {
            assert_eq!(u64::from(conflict_degree_for_stride(s)), gcd(s, 32));
        }
        assert_eq!(conflict_degree_for_stride(0), 1);
    }

    #[test]
    fn byte_addresses_and_partial_warps() {
        // Four lanes read bytes 0..4 of word 0: one word, broadcast.
        let r = WarpRequest::from_byte_addresses(&[0, 1, 2, 3]).analyze();
        assert_eq!((r.active_lanes, r.wavefronts), (4, 1));
        assert_eq!(r.lane_banks[4], None);
        // Byte 128 is word 32: bank 0 again, a second word there.
        let r = WarpRequest::from_byte_addresses(&[0, 128, 256, 4]).analyze();
        assert_eq!((r.wavefronts, r.banks_used), (3, 2));
        // No active lanes: nothing to serve.
        let r = WarpRequest::from_words(&[]).analyze();
        assert_eq!((r.wavefronts, r.ideal_wavefronts, r.banks_used), (0, 0, 0));
        // 8-byte accesses from lanes 0..8 only: one phase.
        let mut lanes = [None; WARP_SIZE];
        for (t, l) in lanes.iter_mut().enumerate().take(8) {
            *l = Some(t as u64);
        }
        assert_eq!(WarpRequest::from_elements(Width::B8, lanes).analyze().ideal_wavefronts, 1);
    }

    #[test]
    fn widths_and_alignment_are_checked() {
        assert_eq!(
            Width::from_bytes(3).unwrap_err().to_string(),
            "access width 3 bytes is not modelled: allowed 4, 8 or 16"
        );
        assert_eq!(Width::from_bytes(16), Ok(Width::B16));
        let mut lanes = [None; WARP_SIZE];
        lanes[3] = Some(4);
        let e = WarpRequest::new(Width::B8, lanes).unwrap_err();
        assert_eq!(e, BankError::Misaligned { lane: 3, addr: 4, width: 8 });
    }

    #[test]
    fn bank_of_byte_uses_4_byte_words() {
        let expect = [(0, 0), (3, 0), (4, 1), (124, 31), (128, 0), (132, 1)];
        for (addr, bank) in expect {
            assert_eq!(bank_of_byte(addr), bank);
        }
    }
}
