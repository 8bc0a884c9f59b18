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
use crate::lab::{Lesson, Needs, NoOptions, Shared};
use crate::reference;

/// Seed of the copied matrix ([`reference::input_f32`]).
pub const SEED: u64 = 11;

/// Copies a `rows x cols` f32 matrix once (checked), then times the copies. The source is generated and uploaded chunk by
/// chunk, and the copy checked chunk by chunk against the generator, so host memory holds two
/// staging chunks, not the matrix.
///
/// # Errors
/// Not enough device memory, or a driver failure.
pub fn measure(lab: &Lab, (rows, cols): (usize, usize)) -> Result<Ceiling> {
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
    let timing = time(&lab.gpu, lab.settings.repeats, copy)?;
    Ok(Ceiling { matrix: (rows, cols), timing, check })
}

/// The lesson: the ceiling every other rate is a share of, at the transposes' matrix.
pub struct Memcpy;

impl Lesson for Memcpy {
    const NAME: &'static str = "memcpy";
    const NEEDS: Needs = Needs { memcpy: true, ..Needs::TWINS };
    const HOST_FLAGS: &'static [&'static str] = &["--transpose", "--sizes"];
    type Options = NoOptions;

    fn run(lab: &Lab, inputs: &Inputs, _: &NoOptions) -> Result<Section> {
        run(lab, inputs)
    }

    fn host_bytes(_: &NoOptions, shared: &Shared) -> usize {
        shared.matrix_staging_bytes()
    }
}

/// The ceiling's section, from the run's measurement (measured here when the run has none).
fn run(lab: &Lab, inputs: &Inputs) -> Result<Section> {
    let measured = match &inputs.memcpy {
        Some(m) => m.clone(),
        None => measure(lab, inputs.shared.matrix)?,
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
