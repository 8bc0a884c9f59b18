//! Thread-block cluster launches and cluster occupancy through the driver's CUDA 12 API, which
//! `cust` does not wrap: `cuLaunchKernelEx` with a cluster-dimension launch attribute,
//! `cuOccupancyMaxActiveClusters`, `cuOccupancyMaxPotentialClusterSize`, and the function
//! attribute that allows non-portable cluster sizes (above 8 blocks).
//!
//! The types are CUDA 12's (`CUlaunchConfig` and its attributes, [`super::cuda_h`]); the
//! forwarders are in [`super::driver::raw`].

use std::ffi::{c_int, c_uint, c_void};

use anyhow::Result;
use cust::function::Function;
use cust::sys::{CUfunction, CUresult, CUstream};

use super::context::Gpu;
use super::cuda_h::{CUlaunchAttribute, CUlaunchAttributeValue, CUlaunchConfig};
use super::driver::raw;
use super::result::{DriverError, check};
use super::shape::LaunchShape;
use crate::refuse;

/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` (`CUlaunchAttributeID`, cuda.h).
const CLUSTER_DIMENSION: c_uint = 4;
/// `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED` (`CUfunction_attribute`, cuda.h).
const NON_PORTABLE_CLUSTER_SIZE_ALLOWED: c_int = 14;
/// Compute capability of the first GPUs with thread-block clusters (CUDA C++ Programming Guide,
/// "Thread Block Clusters": compute capability 9.0).
pub const CLUSTER_CC: (u32, u32) = (9, 0);
/// The largest cluster CUDA allows on any GPU so far, non-portable (CUDA C++ Programming Guide,
/// "Thread Block Clusters": 16 on cc 9.0 with the non-portable attribute).
pub const MAX_CLUSTER_SIZE: u32 = 16;
pub use memlab_contracts::clusters::PORTABLE_CLUSTER_SIZE;

/// The cluster attribute of a `cx x cy` cluster.
fn cluster_attribute((cx, cy): (u32, u32)) -> CUlaunchAttribute {
    let mut words = [0; 16];
    words[..3].copy_from_slice(&[cx, cy, 1]);
    CUlaunchAttribute::new(CLUSTER_DIMENSION, CUlaunchAttributeValue { words })
}

/// Refuses a cluster shape the lab cannot ask for: an empty one, one above
/// [`MAX_CLUSTER_SIZE`] blocks or above `limit` (the device's, from the driver), and a grid
/// that is not a whole number of clusters (CUDA C++ Programming Guide, "Thread Block
/// Clusters": the grid must be a multiple of the cluster).
///
/// # Errors
/// One line naming the cluster and the limit it breaks.
pub fn check_cluster(shape: &LaunchShape, (cx, cy): (u32, u32), limit: u32) -> Result<()> {
    let size = cx.saturating_mul(cy);
    if size == 0 {
        refuse!("cluster {cx}x{cy} is empty: a cluster has 1 to {MAX_CLUSTER_SIZE} blocks");
    }
    if size > limit.min(MAX_CLUSTER_SIZE) {
        refuse!(
            "cluster {cx}x{cy} ({size} blocks) exceeds this device's limit of {} blocks per cluster (portable {PORTABLE_CLUSTER_SIZE})",
            limit.min(MAX_CLUSTER_SIZE)
        );
    }
    if !shape.grid.0.is_multiple_of(cx) || !shape.grid.1.is_multiple_of(cy) {
        refuse!("grid {}x{} is not a whole number of {cx}x{cy} clusters", shape.grid.0, shape.grid.1);
    }
    Ok(())
}

/// The launch configuration of `shape` in clusters of `cluster` on `stream`; `attr` must
/// outlive its use.
fn config(shape: &LaunchShape, attr: &mut CUlaunchAttribute, stream: CUstream) -> CUlaunchConfig {
    CUlaunchConfig {
        grid: [shape.grid.0, shape.grid.1, 1],
        block: [shape.block.0, shape.block.1, 1],
        shared_mem_bytes: shape.smem_bytes,
        stream,
        attrs: attr,
        num_attrs: 1,
    }
}

/// Allows (`true`) or forbids clusters above [`PORTABLE_CLUSTER_SIZE`] blocks for a function.
fn allow_non_portable(f: &Function<'_>, allow: bool) -> Result<(), DriverError> {
    // SAFETY: a valid function handle and a plain integer attribute.
    check("cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)", unsafe {
        raw::cuFuncSetAttribute(f.to_raw(), NON_PORTABLE_CLUSTER_SIZE_ALLOWED, allow as c_int)
    })
}

/// A driver occupancy query of a launch configuration (one int out): its name and the function.
type ClusterQuery = (&'static str, unsafe fn(*mut c_int, CUfunction, *const CUlaunchConfig) -> CUresult);

/// The driver's occupancy query `query` for `f` at `shape`, in clusters of `cluster` (`None`:
/// no cluster attribute, the function as it is), the non-portable attribute set when
/// `non_portable`; `what` names the query in an error.
fn occupancy_query(
    gpu: &Gpu,
    f: &Function<'_>,
    shape: &LaunchShape,
    cluster: Option<(u32, u32)>,
    non_portable: bool,
    what: &str,
    (call, query): ClusterQuery,
) -> Result<u32> {
    allow_non_portable(f, non_portable).map_err(|e| e.during(what))?;
    let mut attr = cluster_attribute(cluster.unwrap_or((1, 1)));
    let cfg =
        CUlaunchConfig { num_attrs: u32::from(cluster.is_some()), ..config(shape, &mut attr, gpu.stream.as_inner()) };
    let mut value: c_int = 0;
    // SAFETY: `cfg` and `attr` live through the call; `value` is one int.
    check(call, unsafe { query(&mut value, f.to_raw(), &cfg) }).map_err(|e| e.during(what))?;
    Ok(value.max(0) as u32)
}

/// The largest cluster the device can run `f` with at `shape` (the non-portable attribute
/// set): `cuOccupancyMaxPotentialClusterSize`; 1 below cc 9.0.
///
/// # Errors
/// A refusal with the driver's error.
pub fn max_cluster_size(gpu: &Gpu, f: &Function<'_>, name: &str, shape: &LaunchShape) -> Result<u32> {
    if gpu.info.cc < CLUSTER_CC {
        return Ok(1);
    }
    let what = format!("the cluster-size query for `{name}`");
    let query: ClusterQuery = ("cuOccupancyMaxPotentialClusterSize", raw::cuOccupancyMaxPotentialClusterSize);
    occupancy_query(gpu, f, shape, None, true, &what, query)
}

/// Clusters of `cluster` the device can hold at once for `f` at `shape`:
/// `cuOccupancyMaxActiveClusters`.
///
/// # Errors
/// A refusal with the driver's error.
pub fn max_active_clusters(
    gpu: &Gpu,
    f: &Function<'_>,
    name: &str,
    shape: &LaunchShape,
    cluster: (u32, u32),
) -> Result<u32> {
    let what = format!("the active-cluster query for `{name}` in {}x{} clusters", cluster.0, cluster.1);
    let non_portable = cluster.0 * cluster.1 > PORTABLE_CLUSTER_SIZE;
    let query: ClusterQuery = ("cuOccupancyMaxActiveClusters", raw::cuOccupancyMaxActiveClusters);
    occupancy_query(gpu, f, shape, Some(cluster), non_portable, &what, query)
}

/// Launches `f` with `shape` in clusters of `cluster` on the lab's stream
/// (`cuLaunchKernelEx`), `params` pointing at each argument's value. Sizes above
/// [`PORTABLE_CLUSTER_SIZE`] set the non-portable attribute first; when the driver refuses the
/// launch, `cuOccupancyMaxPotentialClusterSize` gives the limit the refusal names.
///
/// # Errors
/// A refusal for a device without clusters, a cluster the device refuses (naming its limit),
/// or a launch the driver rejects.
pub fn launch(
    gpu: &Gpu,
    f: &Function<'_>,
    name: &str,
    shape: &LaunchShape,
    cluster: (u32, u32),
    params: &mut [*mut c_void],
) -> Result<()> {
    if gpu.info.cc < CLUSTER_CC {
        refuse!(
            "kernel `{name}` needs thread-block clusters, compute capability {}.{} or newer; this device is {}.{}",
            CLUSTER_CC.0,
            CLUSTER_CC.1,
            gpu.info.cc.0,
            gpu.info.cc.1
        );
    }
    check_cluster(shape, cluster, MAX_CLUSTER_SIZE)?;
    // Set on every launch of a large cluster (a host-side attribute write, no query, so the
    // timed window holds no driver round trip); the device's limit is asked only on failure.
    let size = cluster.0 * cluster.1;
    if size > PORTABLE_CLUSTER_SIZE {
        allow_non_portable(f, true).map_err(|e| {
            e.during(format!("kernel `{name}`: the driver refused non-portable cluster sizes ({size} blocks)"))
        })?;
    }
    let mut attr = cluster_attribute(cluster);
    let cfg = config(shape, &mut attr, gpu.stream.as_inner());
    // SAFETY: `params` matches the entry's parameters (the typed launch's contract); `cfg` and
    // `attr` live through the call.
    let r = unsafe { raw::cuLaunchKernelEx(&cfg, f.to_raw(), params.as_mut_ptr(), std::ptr::null_mut()) };
    if let Err(e) = check("cuLaunchKernelEx", r) {
        // A cluster the device cannot hold: name its limit.
        check_cluster(shape, cluster, max_cluster_size(gpu, f, name, shape)?)?;
        let (grid, block, smem) = (shape.grid, shape.block, shape.smem_bytes);
        let what = format!(
            "launching `{name}` with grid {grid:?}, block {block:?}, {smem} B shared in {}x{} clusters",
            cluster.0, cluster.1
        );
        return Err(e.during(what).into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attribute_has_cuda_h_layout() {
        assert_eq!(std::mem::size_of::<CUlaunchAttribute>(), 72);
        assert_eq!(std::mem::offset_of!(CUlaunchAttribute, value), 8);
        assert_eq!(std::mem::size_of::<CUlaunchConfig>(), 56);
        assert_eq!(std::mem::offset_of!(CUlaunchConfig, stream), 32);
        assert_eq!(std::mem::offset_of!(CUlaunchConfig, attrs), 40);
        assert_eq!(cluster_attribute((4, 2)).value.words[..4], [4, 2, 1, 0]);
    }

    fn refusal(grid: (u32, u32), cluster: (u32, u32), limit: u32) -> String {
        let shape = LaunchShape { grid, block: (256, 1), smem_bytes: 0 };
        check_cluster(&shape, cluster, limit).unwrap_err().to_string()
    }

    #[test]
    fn clusters_the_device_refuses_are_named_with_the_limit() {
        let ok = LaunchShape { grid: (32, 4), block: (256, 1), smem_bytes: 0 };
        for cluster in [(2, 1), (4, 1), (8, 1), (16, 1), (4, 4), (2, 2)] {
            assert!(check_cluster(&ok, cluster, 16).is_ok(), "{cluster:?}");
        }
        assert_eq!(
            refusal((32, 1), (32, 1), 16),
            "cluster 32x1 (32 blocks) exceeds this device's limit of 16 blocks per cluster (portable 8)"
        );
        assert_eq!(
            refusal((32, 1), (16, 1), 8),
            "cluster 16x1 (16 blocks) exceeds this device's limit of 8 blocks per cluster (portable 8)"
        );
        // A driver that reports more than CUDA allows is held to CUDA's limit.
        assert!(refusal((64, 1), (32, 1), 64).contains("limit of 16 blocks"));
        assert_eq!(refusal((6, 1), (4, 1), 16), "grid 6x1 is not a whole number of 4x1 clusters");
        assert_eq!(refusal((4, 3), (2, 2), 16), "grid 4x3 is not a whole number of 2x2 clusters");
        assert_eq!(refusal((4, 1), (0, 1), 16), "cluster 0x1 is empty: a cluster has 1 to 16 blocks");
    }
}
