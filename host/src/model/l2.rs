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

/// What the model predicts for one configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HotPrediction {
    /// Fraction of the hot buffer's re-reads that hit in L2 (its first read always misses).
    pub hot_hit: f64,
    /// Bytes read from DRAM: the stream, the hot buffer's first read, the re-reads that miss.
    pub dram_bytes: f64,
}

/// The `hitRatio` that fits a window of `window_bytes` into a carve-out of `carve_out` bytes:
/// 1 when it fits, else `carve_out / window_bytes` (the Programming Guide's advice: a larger
/// ratio makes persisting lines evict each other).
pub fn hit_ratio(window_bytes: f64, carve_out: f64) -> f64 {
    if window_bytes <= 0.0 { 0.0 } else { (carve_out / window_bytes).min(1.0) }
}

impl HotStream {
    /// Bytes the kernel reads between two reads of one hot line: the whole hot buffer and as
    /// many streamed bytes.
    pub fn reuse_bytes(&self) -> f64 {
        2.0 * self.hot_bytes
    }

    /// Without a window: least-recently-used replacement keeps a hot line until its next read
    /// only when the reuse distance fits the L2, so the re-reads all hit or all miss.
    pub fn without_window(&self) -> HotPrediction {
        let hit = if self.reuse_bytes() <= self.l2_bytes { 1.0 } else { 0.0 };
        self.predict(hit)
    }

    /// With a window over the hot buffer at `hit_ratio` and a carve-out of `carve_out` bytes:
    /// the persisting share of the hot lines stays as long as it fits the carve-out (streamed
    /// lines cannot evict it); the streaming share behaves as without a window, and so does the
    /// whole buffer when it already fitted.
    pub fn with_window(&self, carve_out: f64, hit_ratio: f64) -> HotPrediction {
        let persisting = hit_ratio * self.hot_bytes;
        let kept = if persisting <= carve_out { hit_ratio } else { carve_out / self.hot_bytes };
        let hit = kept.max(self.without_window().hot_hit);
        self.predict(hit)
    }

    fn predict(&self, hot_hit: f64) -> HotPrediction {
        let rereads = (self.stream_bytes - self.hot_bytes).max(0.0);
        HotPrediction { hot_hit, dram_bytes: self.stream_bytes + self.hot_bytes + rereads * (1.0 - hot_hit) }
    }

    /// The predicted speed-up of the window when the kernel is bound by DRAM: DRAM bytes without
    /// over DRAM bytes with.
    pub fn speedup(&self, carve_out: f64, hit_ratio: f64) -> f64 {
        self.without_window().dram_bytes / self.with_window(carve_out, hit_ratio).dram_bytes
    }
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
    fn a_hot_buffer_whose_reuse_fits_l2_hits_without_a_window() {
        let p = h200(16.0).without_window();
        assert_eq!(p.hot_hit, 1.0);
        assert_eq!(p.dram_bytes, (1024.0 + 16.0) * MIB);
        assert_eq!(h200(16.0).speedup(45.0 * MIB, 1.0), 1.0);
    }

    #[test]
    fn a_window_keeps_a_hot_buffer_the_stream_would_evict() {
        // 32 MiB hot: 64 MiB between two reads of a line, more than the 60 MiB L2.
        let s = h200(32.0);
        assert_eq!(s.without_window().hot_hit, 0.0);
        assert_eq!(s.without_window().dram_bytes, 2048.0 * MIB);
        let with = s.with_window(45.0 * MIB, hit_ratio(32.0 * MIB, 45.0 * MIB));
        assert_eq!(with.hot_hit, 1.0);
        assert_eq!(with.dram_bytes, (1024.0 + 32.0) * MIB);
        assert!((s.speedup(45.0 * MIB, 1.0) - 2048.0 / 1056.0).abs() < 1e-12);
    }

    #[test]
    fn a_window_larger_than_the_carve_out_keeps_only_the_carve_out() {
        let s = h200(64.0);
        let ratio = hit_ratio(64.0 * MIB, 48.0 * MIB);
        assert_eq!(ratio, 0.75);
        assert_eq!(s.with_window(48.0 * MIB, ratio).hot_hit, 0.75);
        // Too large a ratio: persisting lines evict each other, still only the carve-out stays.
        assert_eq!(s.with_window(48.0 * MIB, 1.0).hot_hit, 0.75);
        assert_eq!(s.with_window(0.0, 1.0).hot_hit, 0.0);
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
}
