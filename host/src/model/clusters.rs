//! How many thread-block clusters a GPU holds at once.
//!
//! The blocks of a cluster are co-scheduled on the SMs of one GPC, the GPU processing cluster
//! (CUDA C++ Programming Guide, "Thread Block Clusters"). Measured on the H200, the driver adds
//! a second rule: the `C` blocks of a cluster run on `C` different SMs. With `b` blocks per SM
//! (the occupancy model's figure), a unit of `g` SMs therefore holds `floor(g * b / C)`
//! clusters when `g >= C` and none when `g < C`, and the GPU the sum over its units. Slots left
//! over in each unit (`g * b mod C`) stay empty, however many other units have free ones.
//!
//! The driver does not report the layout, but it gives it away: at 1 block per SM its
//! `cuOccupancyMaxActiveClusters` for clusters of 1 to 16 blocks is `n(C) = sum over g >= C of
//! floor(g / C)`, and [`layout_from_single_block_counts`] solves those 16 figures for the SMs
//! per unit. On the H200 they give units of 18, 18, 16, 16, 16, 16, 16 and 8 SMs and four of
//! 2 (one TPC each, which take clusters of 2 only): 132 SMs. A probe that records where
//! co-resident clusters land (`%smid`) merges the SMs into the same units. With that layout
//! and the two rules, the model equals all 128 driver figures for clusters of 1-16 blocks at
//! 1-8 blocks per SM (256 threads, the shared memory setting the blocks per SM; measured on the
//! H200, `docs/measurements/clusters.md`).
//!
//! Hopper's full GH100 has 8 GPCs of 9 TPCs of 2 SMs (144 SMs); the H100 SXM5 and the H200
//! enable 132 SMs, 66 TPCs (NVIDIA H100 Tensor Core GPU Architecture whitepaper). Which TPCs
//! are disabled differs from chip to chip, so where the driver's figures fit no layout the
//! model spreads the TPCs as evenly as possible ([`even_layout`]).

/// SMs per TPC on Hopper (NVIDIA H100 whitepaper).
pub const SMS_PER_TPC: u32 = 2;
/// TPCs per GPC of the full GH100 (NVIDIA H100 whitepaper): at most 18 SMs per GPC.
pub const MAX_TPCS_PER_GPC: u32 = 9;

/// SMs per GPC for a GPU of `sms` SMs in GPCs of at most [`MAX_TPCS_PER_GPC`] TPCs: the fewest
/// GPCs that hold them, with the TPCs spread as evenly as possible (larger GPCs first).
pub fn even_layout(sms: u32) -> Vec<u32> {
    let tpcs = sms.div_ceil(SMS_PER_TPC);
    let gpcs = tpcs.div_ceil(MAX_TPCS_PER_GPC).max(1);
    (0..gpcs).map(|g| SMS_PER_TPC * (tpcs / gpcs + u32::from(g < tpcs % gpcs))).collect()
}

/// Clusters of `cluster` blocks that fit at once in units of `unit_sms` SMs with
/// `blocks_per_sm` resident blocks per SM: `sum over g >= C of floor(g * b / C)` (one block
/// of a cluster per SM, the cluster inside one unit); 0 for an empty cluster.
pub fn max_active_clusters(unit_sms: &[u32], blocks_per_sm: u32, cluster: u32) -> u32 {
    if cluster == 0 {
        return 0;
    }
    unit_sms.iter().filter(|&&g| g >= cluster).map(|&g| g * blocks_per_sm / cluster).sum()
}

/// The units (SMs each, largest first) that the driver's clusters at once at 1 block per SM
/// imply: `counts[i]` is `cuOccupancyMaxActiveClusters` for clusters of `i + 1` blocks, and
/// units are whole TPCs of at most [`MAX_TPCS_PER_GPC`]. `None` when no layout of `sms` SMs
/// gives exactly those counts, or more than one does.
pub fn layout_from_single_block_counts(counts: &[u32], sms: u32) -> Option<Vec<u32>> {
    let largest = SMS_PER_TPC * MAX_TPCS_PER_GPC;
    let probed = counts.len() as u32;
    // Units larger than the largest probed cluster all count once or more in its figure, so
    // their counts are searched; the rest follow from the figures, largest size first.
    let above: Vec<u32> = (probed + 1..=largest).filter(|g| g % SMS_PER_TPC == 0).collect();
    let below: Vec<u32> = (1..=probed.min(largest)).rev().filter(|g| g % SMS_PER_TPC == 0).collect();
    let n = |c: u32| counts[c as usize - 1];
    let most = counts.last().copied().unwrap_or(0);
    let mut found = Vec::new();
    let try_above = |units: Vec<u32>| {
        let mut units = units;
        for &g in &below {
            let implied = max_active_clusters(&units, 1, g);
            let own = n(g).checked_sub(implied)?;
            units.extend(std::iter::repeat_n(g, own as usize));
        }
        let fits = (1..=probed).all(|c| max_active_clusters(&units, 1, c) == n(c));
        (fits && units.iter().sum::<u32>() == sms).then_some(units)
    };
    // Every multiset of `above` sizes of at most `most` units (each counts once or more there).
    fn multisets(sizes: &[u32], left: u32, now: &mut Vec<u32>, out: &mut dyn FnMut(Vec<u32>)) {
        out(now.clone());
        if left == 0 {
            return;
        }
        for (i, &g) in sizes.iter().enumerate() {
            if now.last().is_none_or(|&l| g <= l) {
                now.push(g);
                multisets(&sizes[i..], left - 1, now, out);
                now.pop();
            }
        }
    }
    let sizes: Vec<u32> = above.iter().rev().copied().collect();
    multisets(&sizes, most, &mut Vec::new(), &mut |units| found.extend(try_above(units)));
    found.dedup();
    match found.len() {
        1 => found.pop(),
        _ => None,
    }
}

/// SM cycles one block spends per step of a tiled kernel, from a timed run of `ms`: `slots`
/// blocks (SMs x resident blocks per SM) advance at once, so each slot runs `blocks * steps /
/// slots` block-steps in the run (many waves: the tail is ignored).
pub fn cycles_per_block_step(ms: f64, clock_hz: f64, slots: f64, blocks: f64, steps: f64) -> f64 {
    ms * 1e-3 * clock_hz * slots / (blocks * steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hopper_132_sms_are_two_full_gpcs_and_six_of_16() {
        assert_eq!(even_layout(132), [18, 18, 16, 16, 16, 16, 16, 16]);
        assert_eq!(even_layout(144), [18; 8]);
        assert_eq!(even_layout(114), [18, 16, 16, 16, 16, 16, 16]);
        for sms in [1, 2, 17, 66, 114, 132, 144] {
            let layout = even_layout(sms);
            assert_eq!(layout.iter().sum::<u32>(), sms.next_multiple_of(2), "{sms}");
            assert!(layout.iter().all(|&g| g <= 18), "{sms}: {layout:?}");
        }
    }

    #[test]
    fn a_cluster_fits_inside_one_unit_one_block_per_sm() {
        let h200 = even_layout(132);
        // One block per SM: 16 blocks per cluster fit once in every GPC, the two spare SMs of
        // the 18-SM GPCs stay idle.
        assert_eq!(max_active_clusters(&h200, 1, 16), 8);
        assert_eq!(max_active_clusters(&h200, 1, 8), 2 * 2 + 6 * 2);
        assert_eq!(max_active_clusters(&h200, 1, 2), 66);
        // Seven blocks per SM: 126 or 112 slots per GPC.
        assert_eq!(max_active_clusters(&h200, 7, 16), 2 * 7 + 6 * 7);
        // A unit smaller than the cluster holds none, however many slots it has: its blocks
        // would share SMs.
        assert_eq!(max_active_clusters(&[8], 8, 16), 0);
        assert_eq!(max_active_clusters(&[16], 8, 16), 8);
        assert_eq!(max_active_clusters(&h200, 1, 0), 0);
    }

    /// `cuOccupancyMaxActiveClusters` on the H200 (driver 580), 256 threads, clusters of 1-16
    /// blocks (columns) at 1-8 blocks per SM (rows, set by the dynamic shared memory):
    /// `docs/measurements/records/clusters/gpc-probe.txt`.
    const H200_DRIVER: [[u32; 16]; 8] = [
        [132, 66, 39, 30, 22, 17, 15, 15, 9, 7, 7, 7, 7, 7, 7, 7],
        [264, 132, 79, 62, 47, 39, 32, 30, 23, 21, 16, 16, 14, 14, 14, 14],
        [396, 198, 124, 92, 69, 62, 47, 45, 37, 30, 28, 28, 23, 21, 21, 21],
        [528, 264, 163, 124, 94, 79, 69, 62, 51, 44, 37, 37, 30, 30, 28, 28],
        [660, 330, 203, 154, 124, 101, 84, 77, 60, 58, 51, 44, 42, 37, 37, 35],
        [792, 396, 248, 186, 146, 124, 101, 92, 74, 65, 58, 58, 51, 44, 44, 42],
        [924, 462, 287, 216, 171, 141, 124, 107, 88, 79, 72, 65, 58, 58, 51, 49],
        [1056, 528, 327, 248, 193, 163, 139, 124, 102, 88, 81, 74, 67, 65, 58, 58],
    ];

    #[test]
    fn the_h200s_units_from_its_single_block_figures_give_every_driver_figure() {
        let units = layout_from_single_block_counts(&H200_DRIVER[0], 132).expect("one layout");
        // The SMs a placement probe merged into units (`%smid` of co-resident clusters).
        assert_eq!(units, [18, 18, 16, 16, 16, 16, 16, 8, 2, 2, 2, 2]);
        for (row, b) in H200_DRIVER.iter().zip(1..) {
            let model: Vec<u32> = (1..=16).map(|c| max_active_clusters(&units, b, c)).collect();
            assert_eq!(model, row, "{b} blocks per SM");
        }
        // The GPC rule alone (small units taking large clusters) and the even layout are off.
        let gpc_only: u32 = units.iter().map(|g| g * 6 / 4).sum();
        assert_eq!((gpc_only, max_active_clusters(&even_layout(132), 6, 4)), (198, 198));
        assert_ne!(max_active_clusters(&even_layout(132), 6, 4), H200_DRIVER[5][3]);
    }

    #[test]
    fn a_layout_is_recovered_only_from_figures_that_fit_one() {
        let counts =
            |units: &[u32], most: u32| (1..=most).map(|c| max_active_clusters(units, 1, c)).collect::<Vec<_>>();
        for units in [vec![18; 8], even_layout(132), vec![18, 16, 10, 6, 2], vec![4]] {
            let sms = units.iter().sum();
            assert_eq!(layout_from_single_block_counts(&counts(&units, 16), sms), Some(units.clone()));
        }
        // Clusters of at most 8 blocks (the portable limit) tell these apart ...
        assert_eq!(layout_from_single_block_counts(&counts(&even_layout(132), 8), 132), Some(even_layout(132)));
        // ... but not these: 18, 12, 10, 10, 2 and 18, 10, 10, 8, 6 give the same 8 figures.
        assert_eq!(layout_from_single_block_counts(&counts(&[18, 16, 10, 6, 2], 8), 52), None);
        let mut wrong = counts(&[18, 16], 16);
        assert_eq!(layout_from_single_block_counts(&wrong, 33), None, "the SMs do not add up");
        wrong[3] += 1;
        assert_eq!(layout_from_single_block_counts(&wrong, 34), None, "no layout gives these");
    }

    #[test]
    fn a_block_step_of_matmul_tiled_32_on_the_h200() {
        // 4096^3 in 32-wide steps: 16384 blocks of 128 steps, 2 blocks on each of 132 SMs,
        // 16.164 ms at 1.98 GHz (measured on the H200): about 4029 cycles per block-step.
        let cycles = cycles_per_block_step(16.164, 1.98e9, 264.0, 16384.0, 128.0);
        assert!((cycles - 4028.9).abs() < 0.5, "{cycles}");
        // matmul_dsmem_32 in clusters of 2x1: 22.048 ms, 1467 cycles more per step.
        let dsmem = cycles_per_block_step(22.048, 1.98e9, 264.0, 16384.0, 128.0);
        assert!((dsmem - cycles - 1466.6).abs() < 0.5, "{}", dsmem - cycles);
    }
}
