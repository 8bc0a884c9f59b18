//! Chart data a demo attaches to its report section, typed so that the charts never re-parse
//! the text of the tables.

use serde::{Deserialize, Serialize};

/// Series names the charts look for (see `charts`).
pub mod names {
    /// Measured points of a sweep (coalescing: useful bandwidth / stride 1; banks: time / stride 1).
    pub const MEASURED: &str = "measured";
    /// Coalescing: the 32-byte-sector model's bandwidth fraction.
    pub const SECTOR_MODEL: &str = "32-byte sector model";
    /// Coalescing: the 128-byte-segment model's bandwidth fraction.
    pub const SEGMENT_MODEL: &str = "128-byte segment model";
    /// Coalescing: the DRAM-granularity model's bandwidth fraction (`model::dram`).
    pub const DRAM_MODEL: &str = "DRAM model (64-B fetches, H200)";
    /// Banks: the bank model's serialization factor.
    pub const BANK_MODEL: &str = "bank model";
    /// TMA swizzle: the bank model's conflict factor for the same boxes without swizzle.
    pub const UNSWIZZLED_MODEL: &str = "bank model, same box unswizzled";
    /// Roofline placement: x = arithmetic intensity (FLOP/byte), y = measured TFLOP/s, one
    /// labelled point per kernel.
    pub const ROOFLINE: &str = "roofline";
    /// Hierarchy: cycles per dependent load against working-set bytes, plain `ld.global`.
    pub const LADDER_DEFAULT: &str = "ld.global (L1 and L2)";
    /// Hierarchy: the same with `ld.global.cg` (L2 only).
    pub const LADDER_L2: &str = "ld.global.cg (L2 only)";
    /// Clusters: cycles per dependent `ld.shared::cluster` load in another block, per cluster size.
    pub const DSMEM_LATENCY: &str = "remote shared load (chase_dsmem)";
    /// Clusters: the published remote-load latency (Luo et al. 2024), per cluster size.
    pub const DSMEM_LATENCY_PUBLISHED: &str = "published remote load (Luo et al.)";
    /// Clusters: GB/s of 16-byte reads of the next block's shared memory, per cluster size.
    pub const DSMEM_READ: &str = "remote shared reads (cluster_shared_read)";
    /// Clusters: the published DSMEM throughput, per cluster size.
    pub const DSMEM_READ_PUBLISHED: &str = "published DSMEM throughput (Luo et al.)";
    /// Clusters: cycles per cluster-wide barrier, per cluster size.
    pub const CLUSTER_BARRIER: &str = "cluster barrier (cluster_barrier)";
    /// Clusters: the published cluster-barrier cost, per cluster size.
    pub const CLUSTER_BARRIER_PUBLISHED: &str = "published cluster barrier (Luo et al.)";
    /// L2: `read_cg_unrolled`'s GB/s against blocks per SM.
    pub const L2_READ_UNROLLED: &str = "read_cg_unrolled (4 loads in flight per thread)";
    /// L2: `read_cg`'s GB/s against blocks per SM.
    pub const L2_READ_PLAIN: &str = "read_cg (1 load in flight per thread)";
    /// L2: the measured hit fraction of the hot re-reads with `evict_first` streamed loads,
    /// against the hot buffer's size.
    pub const PERSISTING_MEASURED: &str = "evict_first streamed loads, measured h";
    /// L2: the model's hit fraction with `evict_first` streamed loads (`model::l2::hot_hit`).
    pub const PERSISTING_MODEL: &str = "evict_first streamed loads, model h";
    /// L2: the measured hit fraction with no policy.
    pub const PERSISTING_PLAIN: &str = "no policy, measured h";
    /// L2: the measured hit fraction with the access-policy window.
    pub const PERSISTING_WINDOW: &str = "access-policy window, measured h";
    /// L2: each SM's median cycles per L2 hit on lines another SM brought in.
    pub const PARTITION_MEDIAN: &str = "median hop per SM";
    /// L2: the near or far centre (two-means) each SM's median falls in.
    pub const PARTITION_MODEL: &str = "near / far level (two-means)";
    /// Hierarchy: steps of the latency ladder worth naming (x = the size after the step).
    pub const LADDER_STEPS: &str = "ladder steps";
    /// Reference rates drawn across a ladder chart (e.g. cuBLAS): y = TFLOP/s, label = what.
    pub const REFERENCE: &str = "reference";
    /// Transpose size sweep: the prefix of one series per kernel (`sizes: copy`), x = the
    /// size's place in the sweep, y = GB/s, label = the size (`8191x8192`).
    pub const SIZES: &str = "sizes: ";
    /// Transpose size sweep: the memcpy ceiling's series (after the [`SIZES`] prefix).
    pub const SIZES_MEMCPY: &str = "memcpy";
    /// Transpose size sweep: the suffix of a kernel's series on the pitched layout
    /// (`sizes: copy pitched`), points only at the sizes padding changes.
    pub const SIZES_PITCHED: &str = " pitched";
}

/// One point; `label` names it where the x value alone does not (a kernel, "broadcast").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// x, in the series' `x` unit.
    pub x: f64,
    /// y, in the series' `y` unit.
    pub y: f64,
    /// Optional name of the point.
    pub label: Option<String>,
}

/// A named list of points with the meaning and unit of each axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// What the points are; one of [`names`].
    pub name: String,
    /// Meaning and unit of x, e.g. "stride (4-byte elements)".
    pub x: String,
    /// Meaning and unit of y, e.g. "time / stride-1 time".
    pub y: String,
    /// The points, in sweep order.
    pub points: Vec<Point>,
}

impl Series {
    /// A series of unlabelled points.
    pub fn new(name: &str, x: &str, y: &str, points: impl IntoIterator<Item = (f64, f64)>) -> Self {
        Series {
            name: name.into(),
            x: x.into(),
            y: y.into(),
            points: points.into_iter().map(|(x, y)| Point { x, y, label: None }).collect(),
        }
    }

    /// A series of labelled points.
    pub fn labelled(name: &str, x: &str, y: &str, points: impl IntoIterator<Item = (f64, f64, String)>) -> Self {
        Series {
            name: name.into(),
            x: x.into(),
            y: y.into(),
            points: points.into_iter().map(|(x, y, label)| Point { x, y, label: Some(label) }).collect(),
        }
    }
}
