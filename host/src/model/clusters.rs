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
}
