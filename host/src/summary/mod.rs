//! The summaries: tables across every memory level, built from the lessons' own measurements.
//! [`hierarchy`] measures one row per level (latency and bandwidth) with each level's lesson
//! probe; [`roofline`] places every measured kernel of a run under the device's roofs, and
//! [`figures`] draws it, with the bandwidth of the kernels that only move data. They sit above
//! the lessons, so a lesson never depends on them.

pub mod figures;
pub mod hierarchy;
pub mod roofline;
