//! How many thread-block clusters a GPU holds at once.
//!
//! The blocks of a cluster are co-scheduled on the SMs of one GPC, the GPU processing cluster
//! (CUDA C++ Programming Guide, "Thread Block Clusters"), so a cluster must find its `C` block
//! slots inside one GPC: with `b` blocks per SM (the occupancy model's figure), a GPC of `g`
//! SMs holds `floor(g * b / C)` clusters, and the GPU the sum over its GPCs. The limit this
//! names is the GPC: slots left over in each GPC (`g * b mod C`) stay empty, however many
//! other GPCs have free ones.
//!
//! The driver does not report the GPC layout. Hopper's full GH100 has 8 GPCs of 9 TPCs of 2 SMs
//! (144 SMs); the H100 SXM5 and the H200 enable 132 SMs, 66 TPCs (NVIDIA H100 Tensor Core GPU
//! Architecture whitepaper). Which TPCs are disabled differs from chip to chip; this model
//! spreads the enabled TPCs over the GPCs as evenly as possible ([`even_layout`]: 132 SMs ->
//! two GPCs of 18 SMs and six of 16). A chip with a less even layout holds fewer large
//! clusters, which is where the driver's `cuOccupancyMaxActiveClusters` and this model part.
//!
//! The GPC is not the whole story (measured on the H200, `cluster_shared_read`, 6 blocks per
//! SM): the driver's 396 / 186 / 92 / 42 clusters of 2 / 4 / 8 / 16 match this model at 2 only.
//! No layout of the 66 TPCs in 8 GPCs gives them: a TPC's 12 block slots hold exactly 3
//! clusters of 4, so every layout holds 198 of them, and every layout holds at least 95 of 8
//! and 44 of 16 ([`gpc_rule_range`]). The driver places fewer clusters than any GPC layout
//! allows, so it applies a limit finer than "the cluster fits in one GPC" that it does not
//! document; the model keeps the GPC rule, the figure it does explain, and the lesson prints
//! both.

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

/// Clusters of `cluster` blocks that fit at once in GPCs of `gpc_sms` SMs with
/// `blocks_per_sm` resident blocks per SM: `sum floor(g * b / C)`; 0 for an empty cluster.
pub fn max_active_clusters(gpc_sms: &[u32], blocks_per_sm: u32, cluster: u32) -> u32 {
    if cluster == 0 {
        return 0;
    }
    gpc_sms.iter().map(|&g| g * blocks_per_sm / cluster).sum()
}

/// The fewest and the most clusters of `cluster` blocks the GPC rule allows over every layout
/// of `tpcs` TPCs in `gpcs` GPCs of at most [`MAX_TPCS_PER_GPC`] TPCs, at `blocks_per_sm`: the
/// range a driver figure explained by the GPC alone falls in; `None` when the TPCs do not fit.
pub fn gpc_rule_range(tpcs: u32, gpcs: u32, blocks_per_sm: u32, cluster: u32) -> Option<(u32, u32)> {
    // Every way to give the GPCs `tpcs` TPCs, each at most MAX_TPCS_PER_GPC (the order of GPCs
    // does not matter, so non-increasing sizes only).
    fn layouts(left: u32, gpcs: u32, most: u32, out: &mut Vec<Vec<u32>>, now: &mut Vec<u32>) {
        if gpcs == 0 {
            if left == 0 {
                out.push(now.clone());
            }
            return;
        }
        for t in (0..=most.min(left)).rev() {
            if t * gpcs < left {
                break;
            }
            now.push(SMS_PER_TPC * t);
            layouts(left - t, gpcs - 1, t, out, now);
            now.pop();
        }
    }
    let mut all = Vec::new();
    layouts(tpcs, gpcs, MAX_TPCS_PER_GPC, &mut all, &mut Vec::new());
    let counts = || all.iter().map(|l| max_active_clusters(l, blocks_per_sm, cluster));
    Some((counts().min()?, counts().max()?))
}

/// SM cycles one block spends per step of a tiled kernel, from a timed run of `ms`: `slots`
/// blocks (SMs x resident blocks per SM) advance at once, so each slot runs `blocks * steps /
/// slots` block-steps in the run (many waves: the tail is ignored).
pub fn cycles_per_block_step(ms: f64, clock_hz: f64, slots: f64, blocks: f64, steps: f64) -> f64 {
    ms * 1e-3 * clock_hz * slots / (blocks * steps)
}

/// Block slots [`max_active_clusters`] leaves empty: the GPU's `SMs x b` minus the clusters'
/// blocks.
pub fn idle_slots(gpc_sms: &[u32], blocks_per_sm: u32, cluster: u32) -> u32 {
    let slots: u32 = gpc_sms.iter().sum::<u32>() * blocks_per_sm;
    slots - max_active_clusters(gpc_sms, blocks_per_sm, cluster) * cluster
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
    fn a_cluster_fits_only_inside_one_gpc() {
        let h200 = even_layout(132);
        // One block per SM: 16 blocks per cluster fit once in every GPC, the two spare SMs of
        // the 18-SM GPCs stay idle.
        assert_eq!(max_active_clusters(&h200, 1, 16), 8);
        assert_eq!(idle_slots(&h200, 1, 16), 4);
        assert_eq!(max_active_clusters(&h200, 1, 8), 2 * 2 + 6 * 2);
        assert_eq!(max_active_clusters(&h200, 1, 2), 66);
        // Two blocks per SM (matmul_dsmem_32's 1024 threads): 36 or 32 slots per GPC.
        assert_eq!(max_active_clusters(&h200, 2, 16), 2 * 2 + 6 * 2);
        assert_eq!(max_active_clusters(&h200, 7, 16), 2 * 7 + 6 * 7);
        // The 18-SM GPCs leave 126 - 112 slots each, the 16-SM ones none.
        assert_eq!(idle_slots(&h200, 7, 16), 2 * (126 - 112));
        // Without the GPC limit the 132 SMs would hold floor(132 / 16) = 8 too, but
        // floor(132 * 7 / 16) = 57 against the model's 56.
        assert_eq!(132 * 7 / 16, 57);
        assert_eq!(max_active_clusters(&h200, 1, 0), 0);
    }

    #[test]
    fn no_gpc_layout_gives_the_h200_drivers_clusters_at_once() {
        // cluster_shared_read, 6 blocks per SM, 66 TPCs in 8 GPCs: the driver's figures
        // (measured on the H200) against the GPC rule over every layout.
        assert_eq!(gpc_rule_range(66, 8, 6, 2), Some((396, 396)));
        assert_eq!(gpc_rule_range(66, 8, 6, 4), Some((198, 198)));
        assert_eq!(gpc_rule_range(66, 8, 6, 8), Some((95, 98)));
        assert_eq!(gpc_rule_range(66, 8, 6, 16), Some((44, 48)));
        let driver = [(2, 396), (4, 186), (8, 92), (16, 42)];
        let explained: Vec<u32> = driver
            .iter()
            .filter(|&&(c, n)| {
                let (lo, hi) = gpc_rule_range(66, 8, 6, c).unwrap();
                (lo..=hi).contains(&n)
            })
            .map(|d| d.0)
            .collect();
        assert_eq!(explained, [2]);
        // The even layout is one of them, at the top of the range.
        assert_eq!(max_active_clusters(&even_layout(132), 6, 16), 48);
        // A GPC of 18 SMs with nothing else is the only layout of 9 TPCs in one GPC.
        assert_eq!(gpc_rule_range(9, 1, 1, 16), Some((1, 1)));
        assert_eq!(gpc_rule_range(10, 1, 1, 16), None, "10 TPCs do not fit in one GPC");
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
