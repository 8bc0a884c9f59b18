//! `memlab devices`: the device report for every visible GPU.

use anyhow::Result;

use crate::gpu::{Gpu, context};
use crate::report;

/// Prints the report of every device; always `Ok(true)` once the driver answers.
pub fn run() -> Result<bool> {
    for ordinal in 0..context::device_count()? {
        let gpu = Gpu::open(ordinal, None)?;
        println!("{}\n", report::device(ordinal, &gpu.info, gpu.ptx.arch));
    }
    Ok(true)
}
