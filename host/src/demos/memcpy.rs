//! The bandwidth ceiling: device-to-device `cuMemcpyDtoDAsync` of the transpose's matrix,
//! counted as bytes read plus bytes written. Every other kernel is shown as a share of it.

use anyhow::Result;

use super::{Lab, Section, download, ensure_free, f32_bytes, poisoned, upload};
use crate::gpu::describe;
use crate::gpu::timing::time;
use crate::{reference, refuse, verify};

/// Measures the memcpy bandwidth and stores it in `lab.memcpy_gbs`.
pub fn run(lab: &mut Lab) -> Result<Section> {
    let (rows, cols) = lab.sizes.transpose;
    let n = rows * cols;
    ensure_free("the memcpy ceiling", f32_bytes(&[n, n]))?;
    let src = upload(&reference::random_f32(n, 11))?;
    let dst = poisoned::<f32>(n)?;
    let copy = || -> Result<()> {
        // SAFETY: both buffers hold n floats and live until the stream is synchronised.
        let r = unsafe {
            cust::sys::cuMemcpyDtoDAsync_v2(
                dst.as_device_ptr().as_raw(),
                src.as_device_ptr().as_raw(),
                4 * n,
                lab.gpu.stream.as_inner(),
            )
        };
        if r != cust::sys::cudaError_enum::CUDA_SUCCESS {
            refuse!("cuMemcpyDtoDAsync of {} bytes failed: {r:?}", 4 * n);
        }
        Ok(())
    };
    copy()?;
    lab.gpu.stream.synchronize().map_err(|e| anyhow::anyhow!(describe(e)))?;
    let check = verify::exact_f32(&download(&dst)?, &download(&src)?);
    let timing = time(&lab.gpu, lab.sizes.repeats, copy)?;
    let bytes = 2.0 * 4.0 * n as f64;
    let gbs = timing.gbs(bytes);
    let theory = lab.gpu.info.theoretical_bandwidth_gbs();
    // A wrong copy is a wrong result (exit 1), and no ceiling for the other demos.
    lab.memcpy_gbs = check.passed().then_some(gbs);
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
        name: "memcpy",
        title: "Global memory ceiling: device-to-device memcpy".into(),
        lesson: "The fastest any kernel can stream DRAM: every other bandwidth is read against this.".into(),
        sweep: Some((header.iter().map(|s| s.to_string()).collect(), vec![row])),
        checks: vec![check],
        ..Section::default()
    })
}
