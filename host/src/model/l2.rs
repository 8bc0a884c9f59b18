//! Models of the L2: which re-reads of a hot buffer hit with and without persisting lines, and
//! which working sets one SM finds in its near partition, in the far one, or in DRAM.
//!
//! Hardware facts used: cc 8.0 and later let a context set aside part of the L2 for persisting
//! lines, and a stream's access-policy window marks a fraction (`hitRatio`) of the accesses to
//! an address range persisting, the rest streaming (CUDA C++ Programming Guide, "L2 Cache
//! Set-Aside for Persisting Accesses", "L2 Policy for Persisting Accesses"); persisting lines
//! are evicted only by other persisting lines. The L2 is split in two partitions, each caching
//! the lines its own SMs access (NVIDIA A100 and H100 whitepapers: "each L2 partition localizes
//! and caches data for memory accesses from SMs in the GPCs directly connected to the
//! partition").

/// The hot/stream read of `hot_stream_read`: a stream read once, and a hot buffer re-read amid
/// it, one hot byte per streamed byte.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HotStream {
    /// L2 bytes (the driver's figure).
    pub l2_bytes: f64,
    /// Bytes of the hot buffer.
    pub hot_bytes: f64,
    /// Bytes of the stream (read once; the hot buffer is read as many bytes in all).
    pub stream_bytes: f64,
}

/// The `hitRatio` that fits a window of `window_bytes` into a carve-out of `carve_out` bytes:
/// 1 when it fits, else `carve_out / window_bytes` (the Programming Guide's advice: a larger
/// ratio makes persisting lines evict each other).
pub fn hit_ratio(window_bytes: f64, carve_out: f64) -> f64 {
    if window_bytes <= 0.0 { 0.0 } else { (carve_out / window_bytes).min(1.0) }
}

impl HotStream {
    /// Bytes read from DRAM when a fraction `hot_hit` of the hot buffer's re-reads hit: the
    /// stream, the hot buffer's first read, the re-reads that miss.
    pub fn dram_bytes(&self, hot_hit: f64) -> f64 {
        let rereads = (self.stream_bytes - self.hot_bytes).max(0.0);
        self.stream_bytes + self.hot_bytes + rereads * (1.0 - hot_hit)
    }

    /// The speed-up of a hit fraction `to` over `from` when the kernel is bound by DRAM: DRAM
    /// bytes at `from` over DRAM bytes at `to`.
    pub fn speedup(&self, from: f64, to: f64) -> f64 {
        self.dram_bytes(from) / self.dram_bytes(to)
    }
}

/// How the L2 treats the lines of `hot_stream_read` in one variant of the persisting lesson.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum L2Policy {
    /// No policy: hot and streamed lines are alike to the L2.
    Plain,
    /// An access-policy window over the hot buffer with a carve-out of these bytes. Measured on
    /// the H200 (driver 580, `bench/l2_experiments.cu`): the hot re-reads hit no more with any
    /// window (hitRatio 1 or half, missProp normal, lines reset each run) than with the
    /// carve-out alone, and less than with neither; so the model takes the carve-out's lines
    /// from the L2 the stream and the hot buffer share and gives the window nothing back.
    Window {
        /// Bytes set aside for persisting lines.
        carve_out: f64,
    },
    /// The streamed loads carry an L2 `evict_first` policy (`createpolicy`, PTX ISA): a
    /// streamed line is the first to go, so hot lines are evicted only by hot lines.
    StreamEvictFirst,
}

/// The fraction `h` of `hot_stream_read`'s hot re-reads that hit in L2 under `policy`.
///
/// - Plain and window: the L2 replaces lines regardless of their reuse, which the model takes
///   as random replacement among `capacity` bytes (the L2, less the carve-out): a hot line
///   survives until its next read when none of the lines that enter meanwhile evicts it,
///   `h = exp(-entering / capacity)`; between two reads of a hot line the stream brings in as
///   many bytes as the hot buffer and the hot buffer its misses, `entering = hot x (2 - h)`
///   (solved by fixed-point iteration; a contraction, since `h' = h x hot / capacity <= 1/e`).
///   Measured on the H200: 0.88 of the hit ceiling at 4 MiB hot, 0.73 at 16, 0.37 at 32, 0.09
///   at 64 (model 0.93, 0.71, 0.43, 0.14); with the 37.5 MiB carve-out 0.78 at 8 and 0.57 at
///   16 (model 0.61 and 0.30: the driver lends normal lines part of an unused carve-out, CUDA
///   C++ Programming Guide, "L2 Cache Set-Aside for Persisting Accesses", which the model
///   does not count; it predicts the direction, a window that slows the hot re-reads down).
/// - `evict_first` on the stream: only hot lines evict hot lines, and each of the two L2
///   partitions keeps its own copy of a line the SMs of both read (measured on the H200: a line
///   read by an SM of the other half is copied near on first touch, `memlab run-demos --only
///   l2`), so the hot buffer has half the L2: all re-reads hit up to `l2 / 2`; past it the
///   cyclic re-reads keep `l2 - hot` bytes, `h = (l2 - hot) / hot`. Measured: 1.0 of the
///   ceiling up to 24 MiB hot, 0.86 at 32, 0.51 at 40 (model 1, 1, 0.88, 0.50); past 40 MiB the
///   model's 0.25 at 48 and 0 at 64 fall below the measured 0.49 and 0.23.
pub fn hot_hit(policy: L2Policy, l2_bytes: f64, hot_bytes: f64) -> f64 {
    if hot_bytes <= 0.0 {
        return 1.0;
    }
    let random_replacement = |capacity: f64| {
        if capacity <= 0.0 {
            return 0.0;
        }
        let a = hot_bytes / capacity;
        (0..200).fold(1.0f64, |h, _| (-a * (2.0 - h)).exp())
    };
    match policy {
        L2Policy::Plain => random_replacement(l2_bytes),
        L2Policy::Window { carve_out } => random_replacement(l2_bytes - carve_out),
        L2Policy::StreamEvictFirst => {
            if hot_bytes <= l2_bytes / 2.0 {
                1.0
            } else {
                ((l2_bytes - hot_bytes) / hot_bytes).clamp(0.0, 1.0)
            }
        }
    }
}

/// The hit fraction of the hot re-reads from a time `t`, between the time with every re-read
/// a hit (`all_hit`) and every re-read a miss (`all_miss`): `h = (all_miss - t) / (all_miss -
/// all_hit)`, the kernel bound by DRAM so that time is proportional to the bytes it fetches.
/// `None` when the two bounds are not apart.
pub fn hit_from_time(t: f64, all_hit: f64, all_miss: f64) -> Option<f64> {
    (all_miss > all_hit).then(|| (all_miss - t) / (all_miss - all_hit))
}

/// The latency band of one L2 hop timed from one SM, cycles (measured on the H200, `bench/
/// l2_experiments.cu`: near hits 255-330 cycles, hits in the other partition 420-580, DRAM
/// from 580 up; nothing lands between 340 and 420).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Band {
    /// Below 340 cycles: the SM's own partition.
    Near,
    /// 340-420 cycles: between the two (rare).
    Between,
    /// 420-580 cycles: the other partition, across the link.
    Far,
    /// 580 cycles and up: DRAM.
    Dram,
}

/// The bands' lower edges after `Near`, cycles.
pub const BAND_EDGES: [f64; 3] = [340.0, 420.0, 580.0];

/// Every band, in order.
pub const BANDS: [Band; 4] = [Band::Near, Band::Between, Band::Far, Band::Dram];

/// The band of a hop of `cycles`.
pub fn band(cycles: f64) -> Band {
    match BAND_EDGES.iter().filter(|&&e| cycles >= e).count() {
        0 => Band::Near,
        1 => Band::Between,
        2 => Band::Far,
        _ => Band::Dram,
    }
}

/// Each band's share of `hops`, in the order of [`BANDS`] (all 0 for none).
pub fn band_shares(hops: &[f64]) -> [f64; 4] {
    let mut n = [0usize; 4];
    for &c in hops {
        n[band(c) as usize] += 1;
    }
    n.map(|k| k as f64 / hops.len().max(1) as f64)
}

/// Where one SM finds a line of a working set it chases through L2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L2Level {
    /// The SM's own partition (half the L2).
    Near,
    /// The other partition, across the link between them.
    Far,
    /// Not in L2.
    Dram,
}

/// The level that holds a working set of `bytes` chased by one SM on a GPU with `l2_bytes` of
/// L2 in two partitions: its near partition holds half the L2; what falls out of it is still
/// cached in the other half up to the whole L2; beyond that, DRAM.
pub fn one_sm_level(bytes: f64, l2_bytes: f64) -> L2Level {
    if bytes <= l2_bytes / 2.0 {
        L2Level::Near
    } else if bytes <= l2_bytes {
        L2Level::Far
    } else {
        L2Level::Dram
    }
}

/// Splits latency samples into two groups by one-dimensional two-means (Lloyd's iteration from
/// the smallest and largest sample): `(low centre, high centre, threshold)`, the threshold
/// halfway between the centres. `None` for fewer than two distinct values.
pub fn two_means(samples: &[f64]) -> Option<(f64, f64, f64)> {
    let lo = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if samples.is_empty() || lo >= hi {
        return None;
    }
    let (mut a, mut b) = (lo, hi);
    for _ in 0..64 {
        let cut = (a + b) / 2.0;
        let mean = |keep: &dyn Fn(f64) -> bool| {
            let (sum, n) = samples.iter().filter(|&&x| keep(x)).fold((0.0, 0usize), |(s, n), &x| (s + x, n + 1));
            sum / n as f64
        };
        let (na, nb) = (mean(&|x| x <= cut), mean(&|x| x > cut));
        if na == a && nb == b {
            break;
        }
        (a, b) = (na, nb);
    }
    Some((a, b, (a + b) / 2.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = (1 << 20) as f64;

    fn h200(hot: f64) -> HotStream {
        HotStream { l2_bytes: 60.0 * MIB, hot_bytes: hot * MIB, stream_bytes: 1024.0 * MIB }
    }

    #[test]
    fn dram_bytes_count_the_stream_the_first_hot_read_and_the_missed_re_reads() {
        let s = h200(32.0);
        assert_eq!(s.dram_bytes(1.0), (1024.0 + 32.0) * MIB);
        assert_eq!(s.dram_bytes(0.0), 2048.0 * MIB);
        assert!((s.speedup(0.0, 1.0) - 2048.0 / 1056.0).abs() < 1e-12);
        assert_eq!(hit_ratio(64.0 * MIB, 48.0 * MIB), 0.75);
        assert_eq!(hit_ratio(32.0 * MIB, 48.0 * MIB), 1.0);
        assert_eq!(hit_ratio(0.0, 1.0), 0.0);
    }

    #[test]
    fn one_sm_sees_half_the_l2_near_the_rest_far() {
        let l2 = 60.0 * MIB;
        assert_eq!(one_sm_level(24.0 * MIB, l2), L2Level::Near);
        assert_eq!(one_sm_level(30.0 * MIB, l2), L2Level::Near);
        assert_eq!(one_sm_level(32.0 * MIB, l2), L2Level::Far);
        assert_eq!(one_sm_level(48.0 * MIB, l2), L2Level::Far);
        assert_eq!(one_sm_level(64.0 * MIB, l2), L2Level::Dram);
    }

    #[test]
    fn two_means_separates_near_and_far_hits() {
        let mut samples = vec![270.0, 281.0, 275.0, 290.0, 268.0];
        samples.extend([470.0, 500.0, 488.0]);
        let (near, far, cut) = two_means(&samples).unwrap();
        assert!((near - 276.8).abs() < 1e-9, "{near}");
        assert!((far - 486.0).abs() < 1e-9, "{far}");
        assert!((cut - 381.4).abs() < 1e-9);
        assert_eq!(two_means(&[5.0, 5.0]), None);
        assert_eq!(two_means(&[]), None);
    }

    #[test]
    fn the_stream_evict_first_policy_keeps_the_hot_buffer_to_half_the_l2() {
        let l2 = 60.0 * MIB;
        let h = |hot: f64| hot_hit(L2Policy::StreamEvictFirst, l2, hot * MIB);
        assert_eq!(h(8.0), 1.0);
        assert_eq!(h(30.0), 1.0);
        assert_eq!(h(32.0), 28.0 / 32.0);
        assert_eq!(h(40.0), 0.5);
        assert_eq!(h(64.0), 0.0);
        // The H200's measured hit fractions over the ceiling (0.94) at 32 and 40 MiB hot.
        assert!((h(32.0) - 0.81 / 0.94).abs() < 0.05);
        assert!((h(40.0) - 0.48 / 0.94).abs() < 0.05);
    }

    #[test]
    fn plain_lines_survive_as_under_random_replacement_and_a_window_only_takes_l2_away() {
        let l2 = 60.0 * MIB;
        let plain = |hot: f64| hot_hit(L2Policy::Plain, l2, hot * MIB);
        // The fixed point holds: h = exp(-hot (2 - h) / l2).
        for hot in [4.0, 16.0, 32.0, 64.0] {
            let h = plain(hot);
            assert!((h - (-(hot / 60.0) * (2.0 - h)).exp()).abs() < 1e-12, "{hot}: {h}");
        }
        // Measured on the H200 over the ceiling (0.94): 16 MiB 0.69, 32 MiB 0.35, 64 MiB 0.08.
        for (hot, measured) in [(16.0, 0.69), (32.0, 0.35), (64.0, 0.08)] {
            assert!((plain(hot) - measured / 0.94).abs() < 0.1, "{hot}: {} vs {measured}", plain(hot));
        }
        // Falls with the hot buffer; a window (its carve-out) never raises it.
        assert!(plain(8.0) > plain(16.0) && plain(16.0) > plain(32.0));
        let window = |hot: f64| hot_hit(L2Policy::Window { carve_out: 37.5 * MIB }, l2, hot * MIB);
        for hot in [4.0, 8.0, 16.0, 32.0, 40.0, 64.0] {
            assert!(window(hot) < plain(hot), "{hot}");
        }
        // evict_first keeps more than either up to 40 MiB (past it the model's floor, 0).
        for hot in [4.0, 8.0, 16.0, 32.0, 40.0] {
            assert!(plain(hot) < hot_hit(L2Policy::StreamEvictFirst, l2, hot * MIB), "{hot}");
        }
        assert_eq!(hot_hit(L2Policy::Window { carve_out: l2 }, l2, MIB), 0.0);
        assert_eq!(hot_hit(L2Policy::Plain, l2, 0.0), 1.0);
    }

    #[test]
    fn the_hit_fraction_is_read_off_the_time_between_all_hit_and_all_miss() {
        // The H200's baselines: 0.251 ms every re-read a hit, 0.483 ms every one a miss.
        let h = hit_from_time(0.296, 0.251, 0.483).unwrap();
        assert!((h - 0.806).abs() < 0.001, "{h}");
        assert_eq!(hit_from_time(0.251, 0.251, 0.483), Some(1.0));
        assert_eq!(hit_from_time(0.483, 0.251, 0.483), Some(0.0));
        assert_eq!(hit_from_time(0.3, 0.5, 0.5), None);
    }

    #[test]
    fn hops_fall_into_near_far_and_dram_bands() {
        assert_eq!(band(262.0), Band::Near);
        assert_eq!(band(339.9), Band::Near);
        assert_eq!(band(340.0), Band::Between);
        assert_eq!(band(471.0), Band::Far);
        assert_eq!(band(580.0), Band::Dram);
        assert_eq!(band_shares(&[270.0, 280.0, 470.0, 700.0]), [0.5, 0.0, 0.25, 0.25]);
        assert_eq!(band_shares(&[]), [0.0; 4]);
    }
}
