//! The bandwidth ceiling: device-to-device `cuMemcpyDtoDAsync` of the transpose's matrix,
//! counted as bytes read plus bytes written. Every other kernel is shown as a share of it.
//!
//! This module owns the measurement ([`measure`]); the runner takes it once per run and passes
//! it to every demo that reads it ([`Inputs`]).

use anyhow::Result;

use crate::gpu::describe;
use crate::gpu::memory::copy_on_device;
use crate::gpu::staging::Staging;
use crate::gpu::timing::time;
use crate::lab::{Ceiling, Inputs, Lab, Section, ensure_free, f32_bytes, poisoned};
use crate::lab::{Lesson, Sizes};
use crate::reference;

/// Seed of the copied matrix ([`reference::input_f32`]).
pub const SEED: u64 = 11;

/// Copies the `lab.sizes.transpose` matrix once (checked), then times the copies.
///
/// # Errors
/// Not enough device memory, or a driver failure.
pub fn measure(lab: &Lab) -> Result<Ceiling> {
    measure_at(lab, lab.sizes.transpose)
}

/// [`measure`] for a `rows x cols` f32 matrix. The source is generated and uploaded chunk by
/// chunk, and the copy checked chunk by chunk against the generator, so host memory holds two
/// staging chunks, not the matrix.
///
/// # Errors
/// Not enough device memory, or a driver failure.
pub fn measure_at(lab: &Lab, (rows, cols): (usize, usize)) -> Result<Ceiling> {
    let n = rows * cols;
    ensure_free("the memcpy ceiling", f32_bytes(&[n, n]))?;
    let mut staging = Staging::<f32>::new(n)?;
    let src = poisoned::<f32>(n)?;
    staging.upload(&lab.gpu, &src, |offset, chunk| reference::fill_input(SEED, offset, chunk))?;
    let dst = poisoned::<f32>(n)?;
    let copy = || copy_on_device(&lab.gpu, &dst, &src);
    copy()?;
    lab.gpu.stream.synchronize().map_err(|e| anyhow::anyhow!(describe(e)))?;
    let check = crate::lab::check_staged(&lab.gpu, &mut staging, &dst, dst.len(), |i| reference::input_f32(SEED, i))?;
    let timing = time(&lab.gpu, lab.sizes.repeats, copy)?;
    Ok(Ceiling { matrix: (rows, cols), timing, check })
}

/// This lesson's entry in the registry of `run-demos`.
pub const LESSON: Lesson =
    Lesson::new("memcpy", run).with_memcpy().with_host_bytes(Sizes::matrix_staging_bytes, &["--transpose", "--sizes"]);

/// The ceiling's section, from the run's measurement (measured here when the run has none).
pub fn run(lab: &Lab, inputs: &Inputs) -> Result<Section> {
    let measured = match &inputs.memcpy {
        Some(m) => m.clone(),
        None => measure(lab)?,
    };
    let Ceiling { matrix: (rows, cols), timing, check } = &measured;
    let bytes = measured.bytes();
    let gbs = timing.gbs(bytes);
    let theory = lab.gpu.info.theoretical_bandwidth_gbs();
    let header = ["what", "bytes moved", "median ms", "min ms", "GB/s", "% of clock x bus", "check"];
    let row = vec![
        format!("memcpy D2D {rows}x{cols} f32"),
        format!("{bytes:.3e}"),
        format!("{:.3}", timing.median_ms),
        format!("{:.3}", timing.min_ms),
        format!("{gbs:.0}"),
        format!("{:.0}% of {theory:.0}", 100.0 * gbs / theory),
        check.summary("exact"),
    ];
    Ok(Section {
        name: "memcpy".into(),
        title: "Global memory ceiling: device-to-device memcpy".into(),
        lesson: "The fastest any kernel can stream DRAM: every other bandwidth is read against this.".into(),
        sweep: Some((header.iter().map(|s| s.to_string()).collect(), vec![row])),
        checks: vec![check.clone()],
        ..Section::default()
    })
}
