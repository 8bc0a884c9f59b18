//! The sweeps' measured points: the configuration each kernel's rows run, the L2 hint's and
//! promotions' points, and the lesson's one-line notes on them.

use memlab_contracts::tma::{BULK_DEFAULT, COPY_DEFAULT, Pipeline, TRANSPOSE_DEFAULT, hint};

use super::plan::config_label;
use super::rows::goal_notes;
use crate::gpu::tensor_map::L2Promotion;
use crate::lab::KernelRow;

/// One measured configuration of a sweep, checked exactly before it was timed.
#[derive(Clone, Copy)]
pub(super) struct Point {
    pub(super) config: Pipeline,
    /// Its blocks resident per SM ([`resident`](super::plan::resident)).
    pub(super) resident: u32,
    pub(super) gbs: f64,
    pub(super) passed: bool,
}

/// A kernel's sweep: its own points, and the evict_first re-runs of its fastest ones.
pub(super) struct Swept {
    pub(super) plain: Vec<Point>,
    pub(super) hinted: Vec<Point>,
}

impl Swept {
    /// A sweep with no hinted points yet.
    pub(super) fn of(plain: Vec<Point>) -> Swept {
        Swept { plain, hinted: Vec::new() }
    }

    /// The fastest configuration whose check passed, hinted or not, or `default` when none did.
    pub(super) fn fastest(&self, default: Pipeline) -> Pipeline {
        fastest(self.plain.iter().chain(&self.hinted), default)
    }
}

/// The fastest configuration whose check passed, or `default` when none did.
fn fastest<'a>(points: impl IntoIterator<Item = &'a Point>, default: Pipeline) -> Pipeline {
    points.into_iter().filter(|p| p.passed).max_by(|a, b| a.gbs.total_cmp(&b.gbs)).map_or(default, |p| p.config)
}

/// The three pipelined kernels' sweeps.
pub(super) struct SweptKernels {
    pub(super) bulk: Swept,
    pub(super) copy: Swept,
    pub(super) transpose: Swept,
}

/// Each pipelined kernel's configuration for the rows.
#[derive(Clone, Copy)]
pub(super) struct Fastest {
    pub(super) bulk: Pipeline,
    pub(super) copy: Pipeline,
    pub(super) transpose: Pipeline,
}

impl SweptKernels {
    /// Each kernel's fastest checked configuration, hinted or not, or its default.
    pub(super) fn fastest(&self) -> Fastest {
        Fastest {
            bulk: self.bulk.fastest(BULK_DEFAULT),
            copy: self.copy.fastest(COPY_DEFAULT),
            transpose: self.transpose.fastest(TRANSPOSE_DEFAULT),
        }
    }

    /// Each sweep, by its kernel's name.
    pub(super) fn by_kernel(&self) -> [(&'static str, &Swept); 3] {
        [("tma_bulk_copy", &self.bulk), ("tma_copy", &self.copy), ("tma_transpose", &self.transpose)]
    }

    /// The sweeps' own points for their charts and notes: the hinted re-runs of the fastest
    /// points have a note of their own.
    pub(super) fn plain(&self) -> [(&'static str, &[Point]); 3] {
        self.by_kernel().map(|(kernel, swept)| (kernel, swept.plain.as_slice()))
    }
}

/// The L2 promotions tried at each map kernel's fastest configuration: a point per setting.
pub(super) struct Promotions {
    pub(super) copy: Vec<(L2Promotion, Point)>,
    pub(super) transpose: Vec<(L2Promotion, Point)>,
}

/// The L2 promotion whose point passed its check fastest; none when no point passed.
pub(super) fn fastest_promotion(points: &[(L2Promotion, Point)]) -> L2Promotion {
    let passed = points.iter().filter(|(_, p)| p.passed);
    passed.max_by(|a, b| a.1.gbs.total_cmp(&b.1.gbs)).map_or(L2Promotion::None, |(l2, _)| *l2)
}

/// KiB in flight per SM of a measured configuration, at most: every buffer of every resident
/// block.
pub(super) fn in_flight_kib(p: &Point) -> f64 {
    (p.config.stages * p.config.box_bytes() * p.resident) as f64 / 1024.0
}

/// The evict_first configurations of a sweep's `count` fastest checked points.
pub(super) fn hinted_configs(points: &[Point], count: usize) -> Vec<Pipeline> {
    let mut passed: Vec<&Point> = points.iter().filter(|p| p.passed).collect();
    passed.sort_by(|a, b| b.gbs.total_cmp(&a.gbs));
    passed.iter().take(count).map(|p| Pipeline { hint: hint::EVICT_FIRST, ..p.config }).collect()
}

/// What the L2 hint does and why it may help, and that it is measured: one line.
const HINT_NOTE: &str = "L2 evict_first hint: the copies' `.L2::cache_hint` with a `createpolicy` evict_first policy makes the lines they touch the first the L2 evicts (PTX ISA, \"createpolicy\"; CUDA C++ Programming Guide, \"L2 Access Management\"), so a stream read or written once need not displace other lines of L2; whether that is faster is measured per kernel, at its 2 fastest points";

/// The hint's points of `kernel` in one line: GB/s without and with it at each hinted
/// configuration; none when the sweep hinted nothing.
fn hint_note(kernel: &str, swept: &Swept) -> Option<String> {
    let cells: Vec<String> = swept
        .hinted
        .iter()
        .filter_map(|h| {
            let plain = swept.plain.iter().find(|p| p.config == Pipeline { hint: hint::NONE, ..h.config })?;
            let failed = if h.passed { "" } else { " (FAILED its check)" };
            Some(format!(
                "{}: {:.0} -> {:.0}{failed} ({:+.1}%)",
                config_label(&plain.config),
                plain.gbs,
                h.gbs,
                100.0 * (h.gbs / plain.gbs - 1.0)
            ))
        })
        .collect();
    (!cells.is_empty())
        .then(|| format!("evict_first at `{kernel}`'s fastest points, GB/s without -> with: {}", cells.join("; ")))
}

/// The sweep of `kernel` in one line: configurations, checks, the fastest, and the fastest
/// with one block per SM and with the fewest stages.
fn sweep_note(kernel: &str, points: &[Point], memcpy: Option<f64>) -> Option<String> {
    let best = points.iter().filter(|p| p.passed).max_by(|a, b| a.gbs.total_cmp(&b.gbs))?;
    let ratio = |gbs: f64| memcpy.map_or(String::new(), |m| format!(" ({:.3}x memcpy)", gbs / m));
    let min_stages = points.iter().map(|p| p.config.stages).min().unwrap_or(1);
    let fewest =
        points.iter().filter(|p| p.passed && p.config.stages == min_stages).max_by(|a, b| a.gbs.total_cmp(&b.gbs));
    let failed = points.iter().filter(|p| !p.passed).count();
    Some(format!(
        "pipeline sweep `{kernel}`: {} configurations, {}; fastest {:.0} GB/s{} at {} ({:.0} KiB in flight per SM){}",
        points.len(),
        if failed == 0 { "every one checked exact".to_string() } else { format!("{failed} FAILED their check") },
        best.gbs,
        ratio(best.gbs),
        config_label(&best.config),
        in_flight_kib(best),
        fewest.map_or(String::new(), |f| format!(
            "; with {min_stages} stage{}: {:.0} GB/s at {}",
            if min_stages == 1 { "" } else { "s" },
            f.gbs,
            config_label(&f.config)
        )),
    ))
}

/// Share of the fastest point's GB/s within which a sweep's points count as its plateau.
const PLATEAU: f64 = 0.02;

/// What bytes in flight explain, in one line: the LSU copy's KiB in flight per SM and GB/s
/// (`lsu`) against the tensor-copy sweep's fastest point, and the span of KiB in flight per SM
/// whose points come within [`PLATEAU`] of it.
fn in_flight_note(lsu: (f64, f64), points: &[Point], memcpy: Option<f64>) -> Option<String> {
    let passed: Vec<&Point> = points.iter().filter(|p| p.passed).collect();
    let best = passed.iter().max_by(|a, b| a.gbs.total_cmp(&b.gbs))?;
    let plateau: Vec<f64> =
        passed.iter().filter(|p| p.gbs >= best.gbs * (1.0 - PLATEAU)).map(|p| in_flight_kib(p)).collect();
    let (lo, hi) = plateau.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &k| (lo.min(k), hi.max(k)));
    let ratio = |gbs: f64| memcpy.map_or(String::new(), |m| format!(" ({:.3}x memcpy)", gbs / m));
    let kib = in_flight_kib(best);
    let verdict = match (lsu.1 > best.gbs, lsu.0 < kib) {
        (true, true) => "DRAM serves the LSU copy faster with fewer bytes in flight, so bytes in flight are not what the TMA copies lack".to_string(),
        (true, false) => "The LSU copy is faster, with as many bytes in flight or more".to_string(),
        (false, true) => format!("The tensor copy reaches the LSU copy's rate with {:.1}x its bytes in flight", kib / lsu.0),
        (false, false) => "The tensor copy reaches the LSU copy's rate with no more bytes in flight".to_string(),
    };
    Some(format!(
        "bytes in flight: the LSU copy reaches {:.0} GB/s{} with {:.0} KiB in flight per SM; the tensor copy's fastest point {:.0} GB/s{} with {:.0} KiB; {} of its {} checked points come within {:.0}% of that, from {lo:.0} to {hi:.0} KiB in flight per SM. {verdict}",
        lsu.1,
        ratio(lsu.1),
        lsu.0,
        best.gbs,
        ratio(best.gbs),
        in_flight_kib(best),
        plateau.len(),
        passed.len(),
        PLATEAU * 100.0
    ))
}

/// The L2-promotion sweep of `kernel` in one line: GB/s per setting at its configuration, and
/// the setting the rows use.
fn promotion_note(kernel: &str, points: &[(L2Promotion, Point)]) -> String {
    let cells: Vec<String> = points
        .iter()
        .map(|(l2, p)| format!("{} {:.0}{}", l2.name(), p.gbs, if p.passed { "" } else { " (FAILED its check)" }))
        .collect();
    let at = points.first().map_or(String::new(), |(_, p)| format!(" at {}", config_label(&p.config)));
    format!(
        "L2 promotion of `{kernel}`'s tensor maps{at}, GB/s: {}; the rows use {}",
        cells.join(", "),
        fastest_promotion(points).name()
    )
}

/// The bulk-copy curve's note: its fastest point, beside the published figure.
pub(super) fn curve_note(points: &[Point]) -> String {
    let best = points.iter().filter(|p| p.passed).max_by(|a, b| a.gbs.total_cmp(&b.gbs));
    let best = best.map_or("no point passed its check".into(), |p| {
        format!(
            "best {:.0} GB/s at {} KiB per copy and {} blocks per SM ({} KiB in flight per SM)",
            p.gbs,
            p.config.box_bytes() / 1024,
            p.resident,
            p.config.box_bytes() * p.resident / 1024
        )
    });
    format!(
        "bulk-copy curve (one stage: load, wait, store, wait): {best}; published (H800/H100): 95-96% of HBM peak only from 8-12 KiB per copy and 2-3 blocks per SM"
    )
}

/// The notes up to the curve's: the padding's (`padding`), the goals, each sweep, bytes in
/// flight, the L2 hint and the L2 promotions.
pub(super) fn notes(
    padding: Option<String>,
    kernels: &[KernelRow],
    memcpy: Option<f64>,
    swept: &SweptKernels,
    l2: &Promotions,
) -> Vec<String> {
    let mut notes: Vec<String> = padding.into_iter().collect();
    notes.extend(goal_notes(kernels, memcpy));
    for (kernel, points) in swept.plain() {
        notes.extend(sweep_note(kernel, points, memcpy));
    }
    let lsu_copy = &kernels[0];
    let lsu_kib = f64::from(16 * lsu_copy.shape.threads_per_block() * lsu_copy.occupancy.active_blocks) / 1024.0;
    notes.extend(in_flight_note((lsu_kib, lsu_copy.rate.value()), &swept.copy.plain, memcpy));
    notes.push(HINT_NOTE.into());
    for (kernel, swept) in swept.by_kernel() {
        notes.extend(hint_note(kernel, swept));
    }
    notes.push(promotion_note("tma_copy", &l2.copy));
    notes.push(promotion_note("tma_transpose", &l2.transpose));
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::plan::{HINTED_POINTS, resident};
    use memlab_contracts::tma::{Blocks, TILE};

    /// A persistent configuration the tests vary: 16x256 boxes (16 KiB), 4 stages, 2 blocks/SM.
    const RING: Pipeline = Pipeline::new(16, 256, 4, 2);

    #[test]
    fn the_fastest_checked_configuration_runs_the_rows() {
        let at = |stages, gbs, passed| Point { config: Pipeline { stages, ..RING }, resident: 2, gbs, passed };
        let points = [at(1, 3000.0, true), at(2, 3900.0, false), at(3, 3800.0, true)];
        assert_eq!(fastest(&points, BULK_DEFAULT).stages, 3, "a failed check is never chosen");
        assert_eq!(fastest(&[at(2, 3900.0, false)], BULK_DEFAULT), BULK_DEFAULT);
        assert_eq!(config_label(&RING), "4 x 16x256 box, 2 blocks/SM");
        assert_eq!(config_label(&Pipeline::new(1, 4096, 4, 2)), "4 x 16 KiB, 2 blocks/SM");
        assert_eq!(config_label(&COPY_DEFAULT), "1 x 32x256 box, a block per box");
        assert_eq!(config_label(&TRANSPOSE_DEFAULT), "1 x 64x64 box, a block per box");
        assert_eq!(config_label(&BULK_DEFAULT), "4 x 2 KiB, a block per 4 chunks");
        assert_eq!(config_label(&Pipeline::per_items(TILE, TILE, 2)), "2 x 64x64 box, a block per 2 boxes");
        assert_eq!(in_flight_kib(&at(4, 0.0, true)), 128.0);
        // One block per box: the driver's resident blocks, 6 of 32 KiB.
        let one_shot = Point { config: COPY_DEFAULT, resident: resident(&COPY_DEFAULT, 6), gbs: 0.0, passed: true };
        assert_eq!(in_flight_kib(&one_shot), 192.0);
        assert_eq!(resident(&RING, 12), 2, "persistent: the grid's blocks per SM, not the driver's");
        assert_eq!(COPY_DEFAULT.blocks.grid(132, 4096), 4096);
        assert_eq!(BULK_DEFAULT.blocks.grid(132, 4098), 1025);
        assert_eq!(RING.blocks.grid(132, 4096), 264);
        let note = sweep_note("tma_copy", &points, Some(4000.0)).unwrap();
        assert!(note.contains("1 FAILED their check") && note.contains("fastest 3800 GB/s (0.950x memcpy)"), "{note}");
        let l2 = |l2, gbs, passed| (l2, at(4, gbs, passed));
        let promoted = [
            l2(L2Promotion::None, 3800.0, true),
            l2(L2Promotion::B128, 3900.0, true),
            l2(L2Promotion::B256, 3990.0, false),
        ];
        assert_eq!(fastest_promotion(&promoted), L2Promotion::B128, "a failed check never wins");
        assert_eq!(
            promotion_note("tma_copy", &promoted),
            "L2 promotion of `tma_copy`'s tensor maps at 4 x 16x256 box, 2 blocks/SM, GB/s: none 3800, 128B 3900, 256B 3990 (FAILED its check); the rows use 128B"
        );
        assert_eq!(fastest_promotion(&promoted[2..]), L2Promotion::None);
        let sized = |stages, blocks_per_sm, gbs| Point {
            config: Pipeline { stages, blocks: Blocks::PerSm(blocks_per_sm), ..RING },
            resident: blocks_per_sm,
            gbs,
            passed: true,
        };
        // 32 KiB boxes (16x256 f32 is 16 KiB): 1 x 1 = 16 KiB, 2 x 2 = 64 KiB, 4 x 2 = 128 KiB.
        let sweep = [sized(1, 1, 3000.0), sized(2, 2, 3880.0), sized(4, 2, 3900.0)];
        assert_eq!(
            in_flight_note((32.0, 3957.0), &sweep, Some(4079.0)).unwrap(),
            "bytes in flight: the LSU copy reaches 3957 GB/s (0.970x memcpy) with 32 KiB in flight per SM; the tensor copy's fastest point 3900 GB/s (0.956x memcpy) with 128 KiB; 2 of its 3 checked points come within 2% of that, from 64 to 128 KiB in flight per SM. DRAM serves the LSU copy faster with fewer bytes in flight, so bytes in flight are not what the TMA copies lack"
        );
        assert_eq!(in_flight_note((32.0, 3957.0), &[], None), None);
        assert!(
            in_flight_note((32.0, 3850.0), &sweep, None)
                .unwrap()
                .ends_with(". The tensor copy reaches the LSU copy's rate with 4.0x its bytes in flight")
        );
    }

    #[test]
    fn the_hint_is_tried_at_the_fastest_points_and_labelled() {
        let at =
            |stages, hint, gbs, passed| Point { config: Pipeline { stages, hint, ..RING }, resident: 2, gbs, passed };
        let sweep = || {
            vec![
                at(1, hint::NONE, 3000.0, true),
                at(2, hint::NONE, 3950.0, false),
                at(3, hint::NONE, 3800.0, true),
                at(4, hint::NONE, 3900.0, true),
            ]
        };
        let hinted = hinted_configs(&sweep(), HINTED_POINTS);
        let evict = |stages| Pipeline { stages, hint: hint::EVICT_FIRST, ..RING };
        assert_eq!(hinted, [evict(4), evict(3)], "the 2 fastest checked points, a failed one never");
        assert_eq!(config_label(&evict(6)), "6 x 16x256 box, 2 blocks/SM, evict_first");
        let mut swept = Swept::of(sweep());
        swept.hinted = vec![at(4, hint::EVICT_FIRST, 3960.0, true), at(3, hint::EVICT_FIRST, 3700.0, false)];
        assert_eq!(swept.fastest(BULK_DEFAULT), evict(4), "the rows run the fastest point, hinted or not");
        assert_eq!(
            hint_note("tma_copy", &swept).unwrap(),
            "evict_first at `tma_copy`'s fastest points, GB/s without -> with: 4 x 16x256 box, 2 blocks/SM: 3900 -> 3960 (+1.5%); 3 x 16x256 box, 2 blocks/SM: 3800 -> 3700 (FAILED its check) (-2.6%)"
        );
        assert_eq!(hint_note("tma_copy", &Swept::of(sweep())), None);
        assert!(!HINT_NOTE.contains('\n') && HINT_NOTE.contains("\"createpolicy\""));
    }
}
