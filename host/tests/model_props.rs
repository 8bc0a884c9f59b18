//! Property tests of the models (no GPU): the bank model's wavefronts against brute force and
//! the ideal for each width, sector counts against the ideal and the most a request can touch,
//! occupancy monotone in every resource, the suggested block size and the inverse question.

use proptest::prelude::*;

use memlab::model::banks::{NUM_BANKS, WARP_SIZE, WarpRequest, Width};
use memlab::model::coalescing::{SECTOR_BYTES, SEGMENT_BYTES, WarpAccess, WarpTraffic};
use memlab::model::occupancy::{
    ARCHS, ArchLimits, KernelResources, Mode, max_regs_for_blocks, occupancy, suggest_block_size,
};

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

fn width() -> impl Strategy<Value = Width> {
    prop_oneof![Just(Width::B4), Just(Width::B8), Just(Width::B16)]
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
            prop_assert_eq!(report.wavefronts, 0);
        } else {
            prop_assert!((1..=32).contains(&report.wavefronts));
            prop_assert!(report.wavefronts as usize <= active);
        }
        prop_assert_eq!(report.wavefronts, brute_factor(&lanes));
        prop_assert_eq!(report.active_lanes as usize, active);
    }

    #[test]
    fn a_broadcast_is_one_pass(word in 0u64..1 << 30, active in proptest::array::uniform32(any::<bool>())) {
        prop_assume!(active.contains(&true));
        let lanes = active.map(|on| on.then_some(word));
        prop_assert_eq!(WarpRequest::from_lanes(lanes).analyze().wavefronts, 1);
    }

    #[test]
    fn lanes_on_distinct_banks_are_one_pass(
        banks in Just((0..32u64).collect::<Vec<_>>()).prop_shuffle(),
        rows in proptest::array::uniform32(0u64..1 << 16),
    ) {
        // Lane t reads some row of bank banks[t]: a permutation of the banks, any rows.
        let words: Vec<u64> = banks.iter().zip(rows).map(|(b, r)| r * 32 + b).collect();
        let report = WarpRequest::from_words(&words).analyze();
        prop_assert_eq!(report.wavefronts, 1);
        prop_assert_eq!(report.banks_used, 32);
    }

    #[test]
    fn wavefronts_never_fall_below_the_ideal_for_the_width(
        width in width(),
        lanes in proptest::array::uniform32(proptest::option::of(0u64..4096)),
    ) {
        let request = WarpRequest::from_elements(width, lanes);
        let r = request.analyze();
        let active = lanes.iter().flatten().count() as u32;
        // Phases: at most 32 x width / 128 (4 for 16 bytes), one per group of lanes with an active one.
        prop_assert!(r.ideal_wavefronts <= (width.bytes() / 4) as u32);
        prop_assert_eq!(r.ideal_wavefronts == 0, active == 0);
        prop_assert!(r.wavefronts >= r.ideal_wavefronts);
        prop_assert_eq!(r.conflicts, r.wavefronts - r.ideal_wavefronts);
        // A lane adds at most one word to any bank: a phase takes at most its lanes' count.
        for p in &r.phases {
            prop_assert!(p.wavefronts <= p.lanes.1 - p.lanes.0);
        }
        prop_assert!(r.wavefronts <= active.max(1) * 32);
        // Bytes: every wavefront moves at most 128, so the distinct bytes need at least this many.
        let mut words: Vec<u64> = lanes.iter().flatten().flat_map(|e| {
            let w0 = e * width.bytes() / 4;
            w0..w0 + width.bytes() / 4
        }).collect();
        words.sort_unstable();
        words.dedup();
        prop_assert!(u64::from(r.wavefronts) * 32 >= words.len() as u64);
    }

    #[test]
    fn a_warp_of_distinct_consecutive_elements_takes_exactly_the_ideal(width in width(), start in 0u64..1024) {
        // Lane t at element start + t: 32 x width contiguous bytes, no bank twice in a phase.
        let r = WarpRequest::from_elements(width, std::array::from_fn(|t| Some(start + t as u64))).analyze();
        prop_assert_eq!(r.wavefronts, (width.bytes() / 4) as u32);
        prop_assert_eq!(r.conflicts, 0);
    }

    #[test]
    fn warp_traffic_counts_a_sector_once_in_dram_and_every_time_in_l1(
        elem in prop_oneof![Just(1u64), Just(2), Just(4), Just(8), Just(16)],
        stride in 0u64..64,
        offsets in proptest::collection::vec(0u64..64, 1..5),
        lanes in 1u32..=32,
    ) {
        let instrs: Vec<_> = offsets
            .iter()
            .map(|o| WarpAccess::new(elem, stride).with_offset(o * elem).with_lanes(lanes).instruction())
            .collect();
        let t = WarpTraffic::of(&instrs);
        prop_assert_eq!(t.requests, instrs.len() as u64);
        prop_assert!(t.l2_sectors <= t.l1_sectors);
        prop_assert!(t.l2_sectors >= t.useful_bytes.div_ceil(SECTOR_BYTES));
        for &(sectors, _, useful) in &t.instructions {
            // Aligned accesses of at most 16 bytes: one sector per lane at most, and at least
            // the sectors the bytes fill.
            prop_assert!(sectors >= useful.div_ceil(SECTOR_BYTES));
            prop_assert!(sectors <= u64::from(lanes).min(32 * elem));
        }
        prop_assert!(t.sector_efficiency() <= 1.0 && t.segment_efficiency() <= t.sector_efficiency() + 1e-12);
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
    fn opting_in_never_loses_blocks(
        arch in arch(), threads in 1u32..=1024, regs in 0u32..=255, stat in 0u32..=48 * 1024, dynamic in 0u32..=1 << 18,
    ) {
        let res = KernelResources::new(threads, regs).with_static_smem(stat).with_dynamic_smem(dynamic);
        let without = occupancy(arch, &res, Mode::Hardware).unwrap();
        let with = occupancy(arch, &res.with_opt_in(true), Mode::Hardware).unwrap();
        prop_assert!(with.active_blocks >= without.active_blocks);
        prop_assert_eq!(with.active_blocks == 0, with.failure.is_some());
        prop_assert_eq!(without.active_blocks == 0, without.failure.is_some());
    }

    #[test]
    fn the_suggested_block_size_is_never_beaten(
        arch in arch(), regs in 0u32..=255, dynamic in 0u32..=48 * 1024, threads in 1u32..=1024,
    ) {
        let res = KernelResources::new(threads, regs).with_dynamic_smem(dynamic);
        let other = occupancy(arch, &res, Mode::Hardware).unwrap();
        match suggest_block_size(arch, &res, Mode::Hardware) {
            Some(s) => prop_assert!(s.threads * s.blocks >= other.active_threads),
            None => prop_assert_eq!(other.active_blocks, 0),
        }
    }

    #[test]
    fn the_inverse_register_count_is_the_last_that_keeps_n_blocks(
        arch in arch(), mode in mode(), threads in 1u32..=1024, blocks in 1u32..=32, dynamic in 0u32..=16 * 1024,
    ) {
        let res = KernelResources::new(threads, 32).with_dynamic_smem(dynamic);
        let at = |r| occupancy(arch, &KernelResources { regs_per_thread: r, ..res }, mode).unwrap().active_blocks;
        match max_regs_for_blocks(arch, &res, blocks, mode) {
            Some(r) => {
                prop_assert!(at(r) >= blocks);
                prop_assert!(r == arch.max_regs_per_thread || at(r + 1) < blocks);
            }
            None => prop_assert!(at(1) < blocks),
        }
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
