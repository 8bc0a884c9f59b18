//! The hierarchy table's "distributed shared memory" row (cc 9.0 and newer): measured by the
//! clusters lesson's probes (`demos::clusters::hierarchy_row`), so both print the same figure.

use anyhow::Result;

use crate::lab::Lab;
use crate::verify::Check;

/// The table's row and its checks, each named.
pub type Row = (Vec<String>, Vec<(&'static str, Check)>);

/// The row (six columns) and its checks, the chase timing `steps` loads; `None` on a device
/// without thread-block clusters.
pub fn row(lab: &Lab, steps: u32, reads: crate::demos::clusters::Reads) -> Result<Option<Row>> {
    Ok(crate::demos::clusters::hierarchy_row(lab, steps, reads)?
        .map(|(row, checks)| (row, checks.into_iter().map(|c| ("distributed shared memory", c)).collect())))
}
