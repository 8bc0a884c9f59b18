//! Shared-memory bank model for one warp request of 4-byte words.
//!
//! On compute capability 5.x and later, shared memory is divided into 32
//! banks, each 4 bytes (one 32-bit word) wide, and successive words go to
//! successive banks: word `w` lives in bank `w mod 32` (CUDA C++ Best
//! Practices Guide, "Shared Memory and Memory Banks"; CUDA C++ Programming
//! Guide, "Shared Memory" for cc 5.x and later). A bank serves one distinct
//! word per request cycle, so a warp request whose lanes need `n` different
//! words from the same bank is split into `n` conflict-free passes (an
//! `n`-way bank conflict). Lanes reading the *same* word are served by one
//! broadcast and count once.
//!
//! The model covers plain 32-bit loads and stores; wider (64/128-bit)
//! accesses are split into phases by the hardware and are not modelled.

/// Number of shared-memory banks (cc >= 5.x; Programming Guide).
pub const NUM_BANKS: u32 = 32;

/// Width of one bank, bytes (4 bytes = one 32-bit word; Programming Guide).
pub const BANK_WIDTH_BYTES: u64 = 4;

/// Threads (lanes) in one warp.
pub const WARP_SIZE: usize = 32;

/// The bank that holds 32-bit word number `word` (word index = byte
/// address / 4).
pub fn bank_of_word(word: u64) -> u32 {
    // The remainder is < 32, so the narrowing cast is exact.
    (word % u64::from(NUM_BANKS)) as u32
}

/// The bank that holds byte address `addr` of shared memory.
pub fn bank_of_byte(addr: u64) -> u32 {
    bank_of_word(addr / BANK_WIDTH_BYTES)
}

/// One warp's shared-memory request: for each of the 32 lanes, the 32-bit
/// word index it reads, or `None` if the lane is inactive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarpRequest {
    lanes: [Option<u64>; WARP_SIZE],
}

impl WarpRequest {
    /// A request with an explicit word index (or `None`) per lane.
    pub fn from_lanes(lanes: [Option<u64>; WARP_SIZE]) -> Self {
        WarpRequest { lanes }
    }

    /// Lanes `0..words.len()` read the given word indices; the rest are
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
        WarpRequest { lanes }
    }

    /// Lanes `0..addrs.len()` read the word containing each byte address;
    /// two lanes reading different bytes of one word share that word.
    ///
    /// # Panics
    /// If more than 32 addresses are given.
    pub fn from_byte_addresses(addrs: &[u64]) -> Self {
        let words: Vec<u64> = addrs.iter().map(|a| a / BANK_WIDTH_BYTES).collect();
        Self::from_words(&words)
    }

    /// All 32 lanes active, lane `t` reading word `t * stride_words`.
    pub fn strided(stride_words: u64) -> Self {
        let mut lanes = [None; WARP_SIZE];
        for (t, slot) in (0u64..).zip(lanes.iter_mut()) {
            *slot = Some(t * stride_words);
        }
        WarpRequest { lanes }
    }

    /// Lane `t` reads `tile[t][0]` of a row-major tile of 32-bit elements
    /// whose rows are `row_pitch_words` words apart (a column read, as in a
    /// transpose). Same as [`WarpRequest::strided`] with that stride.
    pub fn column_of_tile(row_pitch_words: u64) -> Self {
        Self::strided(row_pitch_words)
    }

    /// Every lane reads word 0: one broadcast.
    pub fn broadcast() -> Self {
        WarpRequest { lanes: [Some(0); WARP_SIZE] }
    }

    /// The word index each lane reads (`None` for inactive lanes).
    pub fn lanes(&self) -> &[Option<u64>; WARP_SIZE] {
        &self.lanes
    }

    /// Maps the request onto the banks.
    pub fn analyze(&self) -> BankReport {
        let mut lane_banks = [None; WARP_SIZE];
        let mut words_in_bank: Vec<Vec<u64>> = vec![Vec::new(); NUM_BANKS as usize];
        for (slot, word) in lane_banks.iter_mut().zip(self.lanes) {
            if let Some(w) = word {
                let b = bank_of_word(w);
                *slot = Some(b);
                let list = &mut words_in_bank[b as usize];
                // Same word twice is a broadcast: count it once.
                if !list.contains(&w) {
                    list.push(w);
                }
            }
        }
        let mut distinct_words_per_bank = [0u32; NUM_BANKS as usize];
        for (count, list) in distinct_words_per_bank.iter_mut().zip(&words_in_bank) {
            // At most 32 lanes, so at most 32 words per bank.
            *count = list.len() as u32;
        }
        BankReport {
            active_lanes: self.lanes.iter().filter(|l| l.is_some()).count() as u32,
            lane_banks,
            distinct_words: distinct_words_per_bank.iter().sum(),
            serialization: distinct_words_per_bank.iter().copied().max().unwrap_or(0),
            banks_used: distinct_words_per_bank.iter().filter(|&&c| c > 0).count() as u32,
            distinct_words_per_bank,
        }
    }
}

/// How one warp request maps onto the 32 banks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankReport {
    /// Lanes that take part in the request.
    pub active_lanes: u32,
    /// The bank each lane hits (`None` for inactive lanes).
    pub lane_banks: [Option<u32>; WARP_SIZE],
    /// Distinct 32-bit words requested from each bank (broadcast words
    /// count once).
    pub distinct_words_per_bank: [u32; NUM_BANKS as usize],
    /// Distinct words in the whole request.
    pub distinct_words: u32,
    /// Serialization factor: the most distinct words any one bank must
    /// supply, i.e. the number of conflict-free passes the request needs.
    /// 1 = conflict-free (or pure broadcast); `n` = `n`-way bank conflict;
    /// 0 = no active lanes.
    pub serialization: u32,
    /// Banks that supply at least one word.
    pub banks_used: u32,
}

/// Serialization factor of a full-warp request where lane `t` reads word
/// `t * stride_words`. Equals `gcd(stride, 32)` for a non-zero stride (the
/// lanes fall on `32 / gcd` banks, `gcd` distinct words each) and 1 for
/// stride 0 (a broadcast).
pub fn conflict_degree_for_stride(stride_words: u64) -> u32 {
    WarpRequest::strided(stride_words).analyze().serialization
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 { a } else { gcd(b, a % b) }
    }

    #[test]
    fn ex5_column_of_32_wide_tile_is_32_way() {
        let r = WarpRequest::column_of_tile(32).analyze();
        assert!(r.lane_banks.iter().all(|b| *b == Some(0)));
        assert_eq!(r.serialization, 32);
        assert_eq!(r.banks_used, 1);
        assert_eq!(r.distinct_words_per_bank[0], 32);
    }

    #[test]
    fn ex6_padding_to_33_is_conflict_free() {
        let r = WarpRequest::column_of_tile(33).analyze();
        for (t, b) in r.lane_banks.iter().enumerate() {
            assert_eq!(*b, Some(t as u32));
        }
        assert_eq!(r.serialization, 1);
        assert_eq!(r.banks_used, 32);
    }

    #[test]
    fn cm306_word_t_one_word_per_bank() {
        let r = WarpRequest::strided(1).analyze();
        assert_eq!(r.serialization, 1);
        assert_eq!(r.banks_used, 32);
        assert_eq!(r.distinct_words, 32);
        assert!(r.distinct_words_per_bank.iter().all(|&c| c == 1));
    }

    #[test]
    fn cm306_word_2t_two_way_over_16_banks() {
        let r = WarpRequest::strided(2).analyze();
        assert_eq!(r.serialization, 2);
        assert_eq!(r.banks_used, 16);
        assert_eq!(r.distinct_words, 32);
        // Lanes 0 and 16 both use bank 0 but need words 0 and 32.
        assert_eq!(r.lane_banks[0], Some(0));
        assert_eq!(r.lane_banks[16], Some(0));
        assert_eq!(r.distinct_words_per_bank[1], 0);
    }

    #[test]
    fn cm306_word_0_everywhere_is_a_broadcast() {
        let r = WarpRequest::broadcast().analyze();
        assert_eq!(r.serialization, 1);
        assert_eq!(r.banks_used, 1);
        assert_eq!(r.distinct_words, 1);
        assert_eq!(r.active_lanes, 32);
    }

    #[test]
    fn strides_give_gcd_with_32() {
        let expect = [(1, 1), (2, 2), (4, 4), (8, 8), (16, 16), (32, 32), (33, 1)];
        for (stride, degree) in expect {
            assert_eq!(conflict_degree_for_stride(stride), degree, "stride {stride}");
        }
        for s in 1..=130u64 {
            assert_eq!(u64::from(conflict_degree_for_stride(s)), gcd(s, 32));
        }
        assert_eq!(conflict_degree_for_stride(0), 1);
    }

    #[test]
    fn byte_addresses_and_partial_warps() {
        // Four lanes read bytes 0..4 of word 0: one word, broadcast.
        let r = WarpRequest::from_byte_addresses(&[0, 1, 2, 3]).analyze();
        assert_eq!(r.active_lanes, 4);
        assert_eq!(r.serialization, 1);
        assert_eq!(r.lane_banks[4], None);
        // Byte 128 is word 32: bank 0 again, a second word there.
        let r = WarpRequest::from_byte_addresses(&[0, 128, 256, 4]).analyze();
        assert_eq!(r.serialization, 3);
        assert_eq!(r.banks_used, 2);
        // Broadcast and conflict mixed: words 0, 0, 32 -> 2 passes.
        let r = WarpRequest::from_words(&[0, 0, 32]).analyze();
        assert_eq!(r.serialization, 2);
        // No active lanes: nothing to serialize.
        let r = WarpRequest::from_words(&[]).analyze();
        assert_eq!((r.serialization, r.banks_used), (0, 0));
    }

    #[test]
    fn bank_of_byte_uses_4_byte_words() {
        assert_eq!(bank_of_byte(0), 0);
        assert_eq!(bank_of_byte(3), 0);
        assert_eq!(bank_of_byte(4), 1);
        assert_eq!(bank_of_byte(124), 31);
        assert_eq!(bank_of_byte(128), 0);
        assert_eq!(bank_of_byte(132), 1);
    }
}
