//! The "TMA path" row of the hierarchy table (cc 9.0): DRAM to shared memory and back by the
//! copy engine, `tma_bulk_copy` at the TMA lesson's default configuration
//! (`memlab_contracts::tma::BULK_DEFAULT`: 4 copies of 2 KiB per block), over half the
//! hierarchy's DRAM buffer each way. Absent below cc 9.0.

use std::cell::RefCell;

use anyhow::Result;

use crate::demos::tma::{NEEDS_CC, config_label};
use crate::gpu::staging::Staging;
use crate::lab::{KernelRun, Lab, Work, check_staged, ensure_free, f32_bytes, measure, poison, poisoned};
use crate::launches;
use crate::reference;
use crate::verify::Check;
use memlab_contracts::tma::BULK_DEFAULT as P;

/// Seed of the copied input ([`reference::input_f32`]).
const SEED: u64 = 17;

/// The row in the table's six columns and its check, `None` below cc 9.0.
pub fn row(lab: &Lab, dram_bytes: usize, memcpy_gbs: Option<f64>) -> Result<Option<(Vec<String>, Check)>> {
    if lab.gpu.info.cc < NEEDS_CC {
        return Ok(None);
    }
    // Half the buffer read, half written, a whole number of 16-byte granules; the kernel counts
    // floats in 32 bits (`--dram-bytes` goes to 64 GiB, twice what that reaches).
    let n = (dram_bytes / 8).min(u32::MAX as usize) / 4 * 4;
    ensure_free("the TMA path", f32_bytes(&[n, n]))?;
    // The input generated into pinned staging and the output checked as it comes back through
    // it, against the generator: no host copy of either (512 MiB each at the default 1 GiB).
    let mut staging = Staging::new(n)?;
    let input = poisoned::<f32>(n)?;
    staging.upload(&lab.gpu, &input, |offset, chunk| reference::fill_input(SEED, offset, chunk))?;
    let staging = RefCell::new(staging);
    let mut output = poisoned::<f32>(n)?;
    let launch = launches::tma_bulk_copy(
        crate::demos::tma::shapes::tma_bulk_copy(P.grid(lab.gpu.info.sms, 1, n as u32), P.box_bytes(), P.stages),
        &input,
        &mut output,
        n as u32,
        P.box_bytes(),
        P.stages,
        P.hint,
    );
    let run = KernelRun {
        launch,
        lesson: "the TMA path: DRAM -> shared -> DRAM by 1-D bulk copies",
        prediction: String::new(),
        work: Work::global_bytes(8.0 * n as f64),
        size: format!("{n} f32"),
        reset: &|| poison(&output),
    };
    let want = |i| reference::input_f32(SEED, i);
    let k = measure(lab, run, || {
        Ok((check_staged(&lab.gpu, &mut staging.borrow_mut(), &output, output.len(), want)?, "exact"))
    })?;
    let share = memcpy_gbs.map_or(String::new(), |m| format!(", {:.0}% of memcpy", 100.0 * k.rate.value() / m));
    let row = vec![
        "TMA path (global -> shared -> global)".into(),
        "-".into(),
        "-".into(),
        "-".into(),
        format!("{:.0} GB/s (read + written{share})", k.rate.value()),
        format!("tma_bulk_copy, {}, {} MiB each way", config_label(&P), (4 * n) >> 20),
    ];
    Ok(Some((row, k.check)))
}
