//! A cluster of one block (rank 0 of 1, cluster 0), whose `.shared::cluster` addresses are
//! byte offsets into the host's stand-in for shared memory.

use crate::arch::dynamic_shared;

/// Rank 0.
pub fn cluster_ctarank() -> u32 {
    0
}
/// One block.
pub fn cluster_nctarank() -> u32 {
    1
}
/// x 0.
pub fn cluster_ctaid_x() -> u32 {
    0
}
/// y 0.
pub fn cluster_ctaid_y() -> u32 {
    0
}
/// One block along x.
pub fn cluster_nctaid_x() -> u32 {
    1
}
/// One block along y.
pub fn cluster_nctaid_y() -> u32 {
    1
}
/// Cluster 0.
pub fn cluster_id_x() -> u32 {
    0
}

/// The byte offset of `p` in the stand-in buffer.
pub fn shared_address<T>(p: *const T) -> u32 {
    (p as usize).wrapping_sub(dynamic_shared::<u8>() as usize) as u32
}

/// The same offset: the only block is rank 0.
pub fn map_shared_rank(address: u32, rank: u32) -> u32 {
    assert_eq!(rank, 0, "a host cluster has one block");
    address
}

fn at<T>(address: u32) -> *mut T {
    dynamic_shared::<u8>().wrapping_add(address as usize).cast()
}

/// A plain read at the offset.
///
/// # Safety
/// The offset is inside the stand-in buffer, aligned.
pub unsafe fn load_remote(address: u32) -> u32 {
    unsafe { *at(address) }
}

/// As [`load_remote`].
///
/// # Safety
/// As for [`load_remote`].
pub unsafe fn load_remote_f32(address: u32) -> f32 {
    unsafe { *at(address) }
}

/// As [`load_remote`], 16 bytes.
///
/// # Safety
/// As for [`load_remote`].
pub unsafe fn load_remote4(address: u32) -> [u32; 4] {
    unsafe { *at(address) }
}

/// As [`load_remote4`].
///
/// # Safety
/// As for [`load_remote`].
pub unsafe fn load_local4(address: u32) -> [u32; 4] {
    unsafe { *at(address) }
}

/// A plain write at the offset.
///
/// # Safety
/// As for [`load_remote`].
pub unsafe fn store_remote(address: u32, value: u32) {
    unsafe { *at(address) = value }
}

/// One block: nothing to wait for.
pub fn cluster_sync() {}
