//! A sweep's run: each configuration checked exactly, then timed, or left out when the SM
//! cannot hold its blocks.

use std::cell::RefCell;

use anyhow::Result;
use cust::memory::DeviceBuffer;
use memlab_contracts::tma::Pipeline;

use super::expected::Expected;
use super::plan::{config_label, resident};
use super::points::Point;
use crate::gpu::kernel;
use crate::gpu::launch::Launch;
use crate::gpu::staging::Staging;
use crate::gpu::timing::time;
use crate::lab::{Lab, poison};
use crate::phases::Kind;
use crate::verify::Check;

/// The sweeps' checks and the configurations the SM cannot hold.
pub(super) struct Sweeps<'a> {
    /// Pinned chunks each point's output is checked through, on every core: a pageable copy
    /// of the whole output per point would take most of the demo's time.
    pub(super) staging: &'a RefCell<Staging<f32>>,
    pub(super) checks: Vec<Check>,
    pub(super) left_out: Vec<String>,
}

impl Sweeps<'_> {
    /// Checks and times `kernel` at each configuration (`launch` builds it over `output`);
    /// configurations whose blocks per SM the driver's occupancy cannot hold are left out.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run(
        &mut self,
        lab: &Lab,
        kernel: &str,
        output: &mut DeviceBuffer<f32>,
        want: &Expected,
        bytes: f64,
        configs: &[Pipeline],
        launch: impl Fn(&Pipeline, &mut DeviceBuffer<f32>) -> Launch,
    ) -> Result<Vec<Point>> {
        let gpu = &lab.gpu;
        let mut points = Vec::new();
        for p in configs {
            let launch = launch(p, output);
            let (smem, threads) = (launch.shape.smem_bytes, launch.shape.threads_per_block());
            let driver = if smem <= gpu.info.smem_per_block_optin {
                if smem > gpu.info.smem_per_block {
                    kernel::allow_dynamic_smem(gpu, launch.kernel, smem)?;
                }
                kernel::occupancy(gpu, launch.kernel, threads, smem)?.active_blocks
            } else {
                0
            };
            if driver < p.blocks.min_resident() {
                self.left_out.push(format!("{kernel} {}", config_label(p)));
                continue;
            }
            let check = lab.phases.time(Kind::Checks, || {
                poison(output)?;
                launch.enqueue(gpu)?;
                gpu.stream.synchronize().map_err(|e| anyhow::anyhow!("{kernel}: {}", crate::gpu::describe(e)))?;
                want.check(gpu, &mut self.staging.borrow_mut(), output)
            })?;
            let passed = check.passed();
            self.checks.push(check);
            let gbs = lab.phases.time(Kind::Timed, || time(gpu, lab.settings.repeats, || launch.enqueue(gpu)))?.gbs(bytes);
            points.push(Point { config: *p, resident: resident(p, driver), gbs, passed });
        }
        Ok(points)
    }

    /// The note naming the configurations left out, if any.
    pub(super) fn left_out_note(&self) -> Option<String> {
        (!self.left_out.is_empty())
            .then(|| format!("left out (shared memory per SM cannot hold them): {}", self.left_out.join("; ")))
    }
}
