//! Property tests of the models (no GPU): the bank factor's range and its two conflict-free
//! cases, sector counts against the ideal, occupancy monotone in every resource.

use proptest::prelude::*;

use memlab::model::banks::{NUM_BANKS, WARP_SIZE, WarpRequest};
use memlab::model::coalescing::{SECTOR_BYTES, SEGMENT_BYTES, WarpAccess};
use memlab::model::occupancy::{ARCHS, ArchLimits, KernelResources, Mode, occupancy};

/// One warp request: each lane inactive or reading a word below 2^20.
fn any_request() -> impl Strategy<Value = [Option<u64>; WARP_SIZE]> {
    proptest::array::uniform32(proptest::option::of(0u64..1 << 20))
}

/// The bank factor by brute force: for each bank, the distinct words lanes ask of it.
fn brute_factor(lanes: &[Option<u64>; WARP_SIZE]) -> u32 {
    (0..u64::from(NUM_BANKS))
        .map(|bank| {
            let mut words: Vec<u64> = lanes.iter().flatten().copied().filter(|w| w % 32 == bank).collect();
            words.sort_unstable();
            words.dedup();
            words.len() as u32
        })
        .max()
        .unwrap()
}

fn arch() -> impl Strategy<Value = &'static ArchLimits> {
    (0..ARCHS.len()).prop_map(|i| &ARCHS[i])
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Simple), Just(Mode::Hardware)]
}

proptest! {
    #[test]
    fn bank_factor_is_between_1_and_32_and_matches_brute_force(lanes in any_request()) {
        let report = WarpRequest::from_lanes(lanes).analyze();
        let active = lanes.iter().flatten().count();
        if active == 0 {
            prop_assert_eq!(report.serialization, 0);
        } else {
            prop_assert!((1..=32).contains(&report.serialization));
            prop_assert!(report.serialization as usize <= active);
        }
        prop_assert_eq!(report.serialization, brute_factor(&lanes));
        prop_assert_eq!(report.active_lanes as usize, active);
    }

    #[test]
    fn a_broadcast_is_one_pass(word in 0u64..1 << 30, active in proptest::array::uniform32(any::<bool>())) {
        prop_assume!(active.contains(&true));
        let lanes = active.map(|on| on.then_some(word));
        prop_assert_eq!(WarpRequest::from_lanes(lanes).analyze().serialization, 1);
    }

    #[test]
    fn lanes_on_distinct_banks_are_one_pass(
        banks in Just((0..32u64).collect::<Vec<_>>()).prop_shuffle(),
        rows in proptest::array::uniform32(0u64..1 << 16),
    ) {
        // Lane t reads some row of bank banks[t]: a permutation of the banks, any rows.
        let words: Vec<u64> = banks.iter().zip(rows).map(|(b, r)| r * 32 + b).collect();
        let report = WarpRequest::from_words(&words).analyze();
        prop_assert_eq!(report.serialization, 1);
        prop_assert_eq!(report.banks_used, 32);
    }

    #[test]
    fn sectors_and_segments_never_fall_below_the_ideal(
        elem in prop_oneof![Just(1u64), Just(2), Just(4), Just(8), Just(16)],
        stride in 0u64..100,
        offset in 0u64..4096,
        lanes in 0u32..=32,
    ) {
        let access = WarpAccess::new(elem, stride).with_offset(offset).with_lanes(lanes);
        let r = access.analyze();
        prop_assert!(r.sectors >= r.useful_bytes.div_ceil(SECTOR_BYTES));
        prop_assert!(r.segments >= r.useful_bytes.div_ceil(SEGMENT_BYTES));
        prop_assert!(r.sectors >= r.segments, "a segment holds whole sectors");
        prop_assert!(r.sector_efficiency() <= 1.0 && r.segment_efficiency() <= 1.0);
        // At most what every lane touching its own units would cost.
        prop_assert!(r.sectors <= u64::from(lanes) * (elem.div_ceil(SECTOR_BYTES) + 1));
        if stride == 0 && lanes > 0 {
            prop_assert_eq!(r.useful_bytes, elem);
        }
    }

    #[test]
    fn more_registers_never_add_blocks(
        arch in arch(), mode in mode(), threads in 1u32..=1024, r1 in 0u32..=255, r2 in 0u32..=255, smem in 0u32..=48 * 1024,
    ) {
        let (lo, hi) = (r1.min(r2).min(arch.max_regs_per_thread), r1.max(r2).min(arch.max_regs_per_thread));
        let at = |regs| occupancy(arch, &KernelResources::new(threads, regs).with_dynamic_smem(smem), mode).unwrap();
        let (a, b) = (at(lo), at(hi));
        prop_assert!(a.active_blocks >= b.active_blocks, "{} regs: {} blocks, {} regs: {}", lo, a.active_blocks, hi, b.active_blocks);
        prop_assert!(a.occupancy >= b.occupancy);
    }

    #[test]
    fn more_shared_memory_never_adds_blocks(
        arch in arch(), mode in mode(), threads in 1u32..=1024, regs in 0u32..=64, s1 in 0u32..=1 << 18, s2 in 0u32..=1 << 18,
    ) {
        let (lo, hi) = (s1.min(s2).min(arch.smem_per_block_optin), s1.max(s2).min(arch.smem_per_block_optin));
        let at = |smem| occupancy(arch, &KernelResources::new(threads, regs).with_dynamic_smem(smem), mode).unwrap();
        let (a, b) = (at(lo), at(hi));
        prop_assert!(a.active_blocks >= b.active_blocks, "{} B: {} blocks, {} B: {}", lo, a.active_blocks, hi, b.active_blocks);
        prop_assert!(a.occupancy >= b.occupancy);
    }

    #[test]
    fn bigger_blocks_never_add_blocks(
        arch in arch(), mode in mode(), t1 in 1u32..=1024, t2 in 1u32..=1024, regs in 0u32..=128, smem in 0u32..=48 * 1024,
    ) {
        let at = |threads| occupancy(arch, &KernelResources::new(threads, regs).with_dynamic_smem(smem), mode).unwrap();
        let (a, b) = (at(t1.min(t2)), at(t1.max(t2)));
        prop_assert!(a.active_blocks >= b.active_blocks);
        prop_assert!(a.occupancy <= 1.0 && b.occupancy <= 1.0);
    }
}
