//! `memlab devices`: the device report for every visible GPU, then, on a machine with two or
//! more, the peer topology: which ordered pairs can access each other's memory, over which
//! link, and each link's speed as NVML reports it.

use anyhow::Result;

use crate::demos::peer::topology::Topology;
use crate::gpu::{Gpu, context};
use crate::present::report;

/// Prints the report of every device and the topology; always `Ok(true)` once the driver
/// answers.
pub fn run() -> Result<bool> {
    let count = context::device_count()?;
    for ordinal in 0..count {
        let gpu = Gpu::open(ordinal, None)?;
        println!("{}\n", report::device(ordinal, &gpu.info, gpu.ptx.arch));
    }
    if count >= 2 {
        let ordinals: Vec<u32> = (0..count).collect();
        let topology = Topology::query(&ordinals)?;
        let (header, rows) = topology.table();
        println!("## Peer topology\n\n{}\n\n{}\n", report::table(header, rows), topology.bus_ids_text());
        if !topology.nvml {
            println!("NVML (libnvidia-ml.so.1) was not loaded: links and speeds unknown.\n");
        }
    }
    Ok(true)
}
