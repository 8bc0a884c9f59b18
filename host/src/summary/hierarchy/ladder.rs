//! The latency ladder: which working-set sizes to chase, where its plateaus are, and an ASCII
//! chart of it. Plain functions of the measured points, no GPU.

use crate::lab::sizes::bytes;

/// Working-set sizes from `min` to `max` bytes, both powers of two: every power of two and the
/// point halfway between two of them on a log scale rounded to `1.5 * 2^k`, ascending.
///
/// # Panics
/// When `min` or `max` is not a power of two, or `min > max`.
pub fn sizes(min: usize, max: usize) -> Vec<usize> {
    assert!(min.is_power_of_two() && max.is_power_of_two() && min <= max, "sizes({min}, {max})");
    let mut out = Vec::new();
    let mut s = min;
    while s < max {
        out.extend([s, s + s / 2]);
        s *= 2;
    }
    out.push(max);
    out
}

/// A run of ladder points at one latency: the working sets one level of the hierarchy holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Plateau {
    /// Smallest working set on the plateau, bytes.
    pub first_bytes: usize,
    /// Largest working set on the plateau, bytes: the level holds at least this much.
    pub last_bytes: usize,
    /// The next working set measured, off the plateau: the level holds less than this much
    /// (`None` for the last plateau).
    pub next_bytes: Option<usize>,
    /// Median latency of the plateau's points.
    pub latency: f64,
    /// Number of points on it.
    pub points: usize,
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// Finds the plateaus of a ladder of `(bytes, latency)` points sorted by size: maximal runs of
/// at least `min_points` consecutive points that each lie within `tolerance` (relative, e.g.
/// 0.2) of the run's median so far. Points in no run are the transitions between levels.
pub fn plateaus(points: &[(usize, f64)], tolerance: f64, min_points: usize) -> Vec<Plateau> {
    let mut found: Vec<Plateau> = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let mut run = vec![points[i].1];
        let mut j = i + 1;
        while j < points.len() && (points[j].1 / median(&run) - 1.0).abs() <= tolerance {
            run.push(points[j].1);
            j += 1;
        }
        if run.len() >= min_points.max(1) {
            found.push(Plateau {
                first_bytes: points[i].0,
                last_bytes: points[j - 1].0,
                next_bytes: points.get(j).map(|p| p.0),
                latency: median(&run),
                points: run.len(),
            });
            i = j;
        } else {
            i += 1;
        }
    }
    found
}

/// The L2 partition step of an L2-only ladder on a GPU with `l2_bytes` of L2: the end of the
/// first plateau whose next size still fits the L2 (a step inside the L2, where one SM's lines
/// leave its near partition: half the L2, NVIDIA's A100 and H100 whitepapers), as `(last size
/// on the plateau, next size)`; `None` when no plateau ends inside the L2.
pub fn partition_step(plateaus: &[Plateau], l2_bytes: usize) -> Option<(usize, usize)> {
    plateaus.iter().find_map(|p| p.next_bytes.filter(|&next| next <= l2_bytes).map(|next| (p.last_bytes, next)))
}

/// An ASCII chart of two ladders over the same sizes, one line per size: a bar of `#` for the
/// first series and an `o` where the second one lies, on a linear scale of `width` columns
/// from 0 to the largest latency, with both numbers at the end of the line.
pub fn chart(sizes: &[usize], first: &[f64], second: &[f64], width: usize) -> Vec<String> {
    let top = first.iter().chain(second).copied().fold(f64::MIN_POSITIVE, f64::max);
    let column = |v: f64| ((v / top * width as f64).round() as usize).clamp(1, width);
    sizes
        .iter()
        .zip(first.iter().zip(second))
        .map(|(&size, (&a, &b))| {
            let mut bar: Vec<char> =
                std::iter::repeat_n('#', column(a)).chain(std::iter::repeat(' ')).take(width).collect();
            bar[column(b) - 1] = 'o';
            format!("{:>9} |{}| {a:>6.0} {b:>6.0}", bytes(size), bar.into_iter().collect::<String>())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_step_by_powers_of_two_and_halves() {
        assert_eq!(sizes(4096, 32768), [4096, 6144, 8192, 12288, 16384, 24576, 32768]);
        assert_eq!(sizes(4096, 4096), [4096]);
        let s = sizes(4 << 10, 256 << 20);
        assert_eq!(s.len(), 2 * 16 + 1);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
    }

    /// A three-level ladder: L1-like up to 192 KiB, L2-like up to 32 MiB, DRAM-like beyond,
    /// with a few percent of noise and one point in each transition.
    fn three_levels() -> Vec<(usize, f64)> {
        let noise = [1.00, 1.03, 0.98, 1.02, 0.97, 1.01];
        sizes(4 << 10, 256 << 20)
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                let level = match s {
                    s if s <= 192 << 10 => 35.0,
                    s if s == 256 << 10 => 120.0,
                    s if s <= 32 << 20 => 260.0,
                    s if s == 48 << 20 => 420.0,
                    _ => 650.0,
                };
                (s, level * noise[i % noise.len()])
            })
            .collect()
    }

    #[test]
    fn finds_three_plateaus_and_the_capacities_between_them() {
        let p = plateaus(&three_levels(), 0.2, 2);
        assert_eq!(p.len(), 3, "{p:?}");
        assert_eq!((p[0].first_bytes, p[0].last_bytes, p[0].next_bytes), (4 << 10, 192 << 10, Some(256 << 10)));
        assert_eq!((p[1].first_bytes, p[1].last_bytes, p[1].next_bytes), (384 << 10, 32 << 20, Some(48 << 20)));
        assert_eq!((p[2].first_bytes, p[2].last_bytes, p[2].next_bytes), (64 << 20, 256 << 20, None));
        for (plateau, level) in p.iter().zip([35.0, 260.0, 650.0]) {
            assert!((plateau.latency / level - 1.0).abs() < 0.03, "{plateau:?}");
        }
    }

    #[test]
    fn a_flat_ladder_is_one_plateau_and_a_steep_ramp_none() {
        let flat: Vec<_> = (0..10).map(|i| (4096 << i, 100.0)).collect();
        let p = plateaus(&flat, 0.1, 2);
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].points, p[0].next_bytes, p[0].latency), (10, None, 100.0));
        // Every point 50% above the last: no two points agree within 20%.
        let ramp: Vec<_> = (0..10).map(|i| (4096 << i, 100.0 * 1.5f64.powi(i))).collect();
        assert!(plateaus(&ramp, 0.2, 2).is_empty());
        assert!(plateaus(&[], 0.2, 2).is_empty());
    }

    #[test]
    fn a_slow_ramp_is_cut_once_it_leaves_the_tolerance() {
        // 10% per point: the run's median trails, so the run ends after a few points.
        let ramp: Vec<_> = (0..8).map(|i| (4096 << i, 100.0 * 1.1f64.powi(i))).collect();
        let p = plateaus(&ramp, 0.2, 2);
        assert!(p.len() >= 2, "{p:?}");
        assert!(p.iter().all(|q| q.points <= 4), "{p:?}");
    }

    #[test]
    fn the_partition_step_is_the_step_inside_the_l2() {
        let plateau = |first, last, next| Plateau {
            first_bytes: first,
            last_bytes: last,
            next_bytes: next,
            latency: 1.0,
            points: 2,
        };
        const MIB: usize = 1 << 20;
        // The H200's L2-only ladder: near to 24 MiB, far 32-48 MiB, DRAM from 64 MiB.
        let h200 = [
            plateau(4 << 10, 24 * MIB, Some(32 * MIB)),
            plateau(32 * MIB, 48 * MIB, Some(64 * MIB)),
            plateau(64 * MIB, 2048 * MIB, None),
        ];
        assert_eq!(partition_step(&h200, 60 * MIB), Some((24 * MIB, 32 * MIB)));
        // One L2 level, then DRAM: the only step leaves the L2.
        let flat = [plateau(4 << 10, 4 * MIB, Some(8 * MIB)), plateau(8 * MIB, 64 * MIB, None)];
        assert_eq!(partition_step(&flat, 6 * MIB), None);
        assert_eq!(partition_step(&[], 6 * MIB), None);
    }

    #[test]
    fn chart_bars_scale_to_the_largest_value() {
        let lines = chart(&[4096, 8192], &[50.0, 100.0], &[25.0, 100.0], 20);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], "    4 KiB |####o#####          |     50     25");
        assert_eq!(lines[1], "    8 KiB |###################o|    100    100");
    }
}
