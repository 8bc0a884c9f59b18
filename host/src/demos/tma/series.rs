//! The charts' series: the bulk-copy curve, the swizzle modes and each sweep's points.

use memlab_contracts::tma::{BULK_BLOCKS_PER_SM, Blocks, PIPELINE_STAGES};

use super::plan::config_label;
use super::points::{Point, SweptKernels, in_flight_kib};
use super::swizzle::{SwizzleRow, swizzle_series};
use crate::series::Series;

/// Name of the bulk-copy curve's series for `k` blocks per SM.
fn curve_series_name(k: u32) -> String {
    format!("{k} block{} per SM", if k == 1 { "" } else { "s" })
}

/// The charts' series: the bulk-copy curve (one per blocks per SM), the swizzle modes
/// ([`swizzle_series`]), then each sweep's own points ([`pipeline_series`]).
pub(super) fn series(curve: &[Point], swizzles: &[SwizzleRow], swept: &SweptKernels) -> Vec<Series> {
    let mut series: Vec<Series> = BULK_BLOCKS_PER_SM
        .iter()
        .map(|&k| {
            let points = curve
                .iter()
                .filter(|p| p.config.blocks == Blocks::PerSm(k))
                .map(|p| (p.config.box_bytes() as f64, p.gbs, format!("{} KiB", p.config.box_bytes() / 1024)));
            Series::labelled(&curve_series_name(k), "bytes per copy", "GB/s (read + written)", points)
        })
        .collect();
    series.extend(swizzle_series(swizzles));
    for (kernel, points) in swept.plain() {
        series.extend(pipeline_series(kernel, points));
    }
    series
}

/// Name of the pipeline chart's series of `kernel`: its fastest checked configuration at each
/// stage count of [`PIPELINE_STAGES`].
fn pipeline_series_name(kernel: &str) -> String {
    format!("{kernel}, fastest per stage count")
}

/// Name of the series holding every point of `kernel`'s sweep (the `--json` record's data).
fn sweep_series_name(kernel: &str) -> String {
    format!("{kernel} sweep")
}

/// A kernel's sweep as chart data: the fastest checked GB/s at each stage count (labelled by
/// the count), and every point against its KiB in flight per SM (labelled by its
/// configuration).
fn pipeline_series(kernel: &str, points: &[Point]) -> [Series; 2] {
    let per_stage = PIPELINE_STAGES.iter().filter_map(|&stages| {
        let best =
            points.iter().filter(|p| p.passed && p.config.stages == stages).max_by(|a, b| a.gbs.total_cmp(&b.gbs))?;
        Some((stages as f64, best.gbs, format!("{stages}")))
    });
    [
        Series::labelled(
            &pipeline_series_name(kernel),
            "stages (buffers in the ring)",
            "GB/s (read + written)",
            per_stage,
        ),
        Series::labelled(
            &sweep_series_name(kernel),
            "KiB in flight per SM (stages x box x resident blocks per SM)",
            "GB/s (read + written)",
            points.iter().map(|p| (in_flight_kib(p), p.gbs, config_label(&p.config))),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlab_contracts::tma::Pipeline;

    #[test]
    fn a_sweep_charts_its_fastest_checked_point_per_stage_count_and_every_point() {
        // 16x256 boxes, 2 blocks/SM, at 1 to 3 stages; the 2-stage point failed its check.
        let at = |stages, gbs, passed| Point { config: Pipeline::new(16, 256, stages, 2), resident: 2, gbs, passed };
        let points = [at(1, 3000.0, true), at(2, 3900.0, false), at(3, 3800.0, true)];
        let [per_stage, all] = pipeline_series("tma_copy", &points);
        assert_eq!(per_stage.points.iter().map(|p| (p.x, p.y)).collect::<Vec<_>>(), [(1.0, 3000.0), (3.0, 3800.0)]);
        assert_eq!(all.points.len(), 3);
    }
}
