//! The split-K model: how many splits of `k` the split-K rung (`kernels-gpu/src/sgemm/split_k.rs`)
//! takes for a product, from blocks against the SMs' block slots, the waves they make, and the
//! partial sums the splits cost.
//!
//! A launch of `b` blocks on `S` SMs that each hold `r` blocks at once runs in `w =
//! ceil(b / (S r))` waves; when every block takes the same time, a fraction `1 - b / (w S r)`
//! of the slots sits idle. Splitting `k` `s` ways makes `s` times the blocks, each `s` times
//! shorter, so a thin product (`4096 x 128` is 32 tiles of `128 x 128` for 264 slots: 88%
//! idle) fills the GPU; the price is `s m n` partial sums written and read back (`2 s m n 4`
//! bytes) and one more launch, the reduce. The model prices a wave at its blocks' depth steps
//! times the time of one step of one block on a full SM, and the partial sums at the DRAM
//! bandwidth (a bound: a workspace smaller than L2 mostly stays there), and takes the split of
//! least time, only when it beats one split by [`MIN_GAIN`] (the model's waves are all or
//! nothing; a last partial wave runs faster than that, measured on the H200: rung 6 at 3000^3
//! ran 35.2 TFLOP/s where the model prices 30).

/// Below this share of time saved the model keeps one split.
pub const MIN_GAIN: f64 = 0.1;

/// The GPU as the model sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// SMs (the driver's `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`, read at run time).
    pub sms: u32,
    /// FLOP/s the tile's kernel reaches on a full GPU.
    pub flops: f64,
    /// Bytes/s the partial sums move at.
    pub bytes_per_s: f64,
    /// Seconds one more launch on the stream costs (the reduce's).
    pub launch_s: f64,
}

/// The block tile of the split kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    /// Rows and columns of `C` per block.
    pub bm: u32,
    /// Columns of `C` per block.
    pub bn: u32,
    /// Depth of one step.
    pub bk: u32,
    /// Blocks one SM holds at once.
    pub blocks_per_sm: u32,
}

/// The model's figures for one split count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    /// Splits with work (`memlab_contracts::sgemm::splits_used`).
    pub splits: u32,
    /// Blocks of the launch: tiles times splits.
    pub blocks: u64,
    /// Waves of `sms x blocks_per_sm` blocks.
    pub waves: u64,
    /// Share of the block slots idle over the launch, `1 - blocks / (waves slots)`.
    pub idle: f64,
    /// Partial-sum bytes: `splits m n 4` written and read back (0 for one split, which writes
    /// `C` directly).
    pub partial_bytes: f64,
    /// Predicted seconds: the waves' steps plus the partial sums and the reduce's launch.
    pub seconds: f64,
}

/// The model's choice for one product: the split taken and the unsplit launch beside it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// One split.
    pub unsplit: Split,
    /// The split taken (equal to `unsplit` when none pays).
    pub chosen: Split,
}

impl Plan {
    /// The share of block slots the chosen split fills that one split leaves idle.
    pub fn idle_removed(&self) -> f64 {
        self.unsplit.idle - self.chosen.idle
    }
}

/// The figures of `asked` splits for an `m x n x k` product.
pub fn split(machine: &Machine, tile: &Tile, (m, n, k): (u32, u32, u32), asked: u32) -> Split {
    let splits = memlab_contracts::sgemm::splits_used(k, tile.bk, asked);
    let steps = u64::from(memlab_contracts::sgemm::split_steps(k, tile.bk, asked));
    let tiles = u64::from(m.div_ceil(tile.bm)) * u64::from(n.div_ceil(tile.bn));
    let blocks = tiles * u64::from(splits);
    let slots = u64::from(machine.sms.max(1)) * u64::from(tile.blocks_per_sm.max(1));
    let waves = blocks.div_ceil(slots);
    // One step of one block while the SM runs `blocks_per_sm` of them at its share of `flops`.
    let step_flop = 2.0 * f64::from(tile.bm) * f64::from(tile.bn) * f64::from(tile.bk);
    let step_s = step_flop * f64::from(tile.blocks_per_sm.max(1)) * f64::from(machine.sms.max(1)) / machine.flops;
    let partial_bytes = if splits > 1 { 4.0 * f64::from(splits) * f64::from(m) * f64::from(n) } else { 0.0 };
    let reduce_s = if splits > 1 { 2.0 * partial_bytes / machine.bytes_per_s + machine.launch_s } else { 0.0 };
    Split {
        splits,
        blocks,
        waves,
        idle: 1.0 - blocks as f64 / (waves * slots) as f64,
        partial_bytes,
        seconds: (waves * steps) as f64 * step_s + reduce_s,
    }
}

/// The model's split for an `m x n x k` product: the count in `1 ..= max_splits` of least
/// predicted time, kept at one unless it saves [`MIN_GAIN`] of the time.
pub fn plan(machine: &Machine, tile: &Tile, size: (u32, u32, u32), max_splits: u32) -> Plan {
    let unsplit = split(machine, tile, size, 1);
    let best = (2..=max_splits)
        .map(|s| split(machine, tile, size, s))
        .min_by(|a, b| a.seconds.total_cmp(&b.seconds).then(a.splits.cmp(&b.splits)))
        .filter(|s| s.seconds < (1.0 - MIN_GAIN) * unsplit.seconds);
    Plan { unsplit, chosen: best.unwrap_or(unsplit) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The H200: 132 SMs, rung 6's 43.7 TFLOP/s at 4096^3 (measured), its 4.8 TB/s DRAM
    /// (memory clock and bus width), 3 us a launch.
    const H200: Machine = Machine { sms: 132, flops: 43.7e12, bytes_per_s: 4.8e12, launch_s: 3e-6 };
    /// Rung 6's tile, two blocks per SM.
    const TILE: Tile = Tile { bm: 128, bn: 128, bk: 8, blocks_per_sm: 2 };

    fn chosen(size: (u32, u32, u32)) -> Plan {
        plan(&H200, &TILE, size, 16)
    }

    #[test]
    fn thin_products_split_until_the_blocks_fill_one_wave() {
        for size in [(4096, 128, 4096), (128, 4096, 4096)] {
            let p = chosen(size);
            // 32 tiles for 264 slots: 88% idle unsplit; 8 splits make 256 blocks, one wave.
            assert_eq!((p.unsplit.blocks, p.unsplit.waves), (32, 1));
            assert!((p.unsplit.idle - (1.0 - 32.0 / 264.0)).abs() < 1e-12);
            assert_eq!((p.chosen.splits, p.chosen.blocks, p.chosen.waves), (8, 256, 1), "{size:?}");
            assert_eq!(p.chosen.partial_bytes, 8.0 * 4096.0 * 128.0 * 4.0);
            assert!((p.idle_removed() - (256.0 - 32.0) / 264.0).abs() < 1e-12);
        }
    }

    #[test]
    fn full_waves_and_short_k_stay_unsplit() {
        // 1024 tiles, 4 waves of 264 at 97% use: nothing to fill.
        for size in [(4096, 4096, 4096), (4096, 4096, 64)] {
            let p = chosen(size);
            assert_eq!(p.chosen, p.unsplit, "{size:?}");
            assert_eq!((p.chosen.splits, p.chosen.partial_bytes), (1, 0.0));
        }
    }

    #[test]
    fn odd_and_small_products_split_where_the_last_wave_is_mostly_idle() {
        // 1000^3: 64 tiles (76% idle); 4 splits make 256 blocks in one wave.
        let p = chosen((1000, 1000, 1000));
        assert_eq!((p.unsplit.blocks, p.chosen.splits, p.chosen.waves), (64, 4, 1));
        // 3000^3: 576 tiles in 3 waves (27% idle); 5 splits make 2880 blocks in 11 waves.
        let p = chosen((3000, 3000, 3000));
        assert_eq!((p.unsplit.waves, p.chosen.splits, p.chosen.waves), (3, 5, 11));
        assert!(p.chosen.idle < 0.01 && p.unsplit.idle > 0.27);
        // 517x389x263: 20 tiles, 33 steps; 11 splits of 3 steps, 220 blocks in one wave.
        let p = chosen((517, 389, 263));
        assert_eq!((p.unsplit.blocks, p.chosen.splits, p.chosen.blocks, p.chosen.waves), (20, 11, 220, 1));
    }

    #[test]
    fn partial_sums_that_cost_more_than_they_save_are_refused() {
        // With partial sums a thousand times dearer, no split pays at 1000^3.
        let slow = Machine { bytes_per_s: 4.8e9, ..H200 };
        let p = plan(&slow, &TILE, (1000, 1000, 1000), 16);
        assert_eq!(p.chosen.splits, 1);
        // A bigger GPU needs more splits for the same product.
        let big = Machine { sms: 264, ..H200 };
        assert_eq!(plan(&big, &TILE, (4096, 128, 4096), 16).chosen.splits, 16);
        // One split asked is one split, at any size.
        assert_eq!(split(&H200, &TILE, (1, 1, 1), 1).splits, 1);
        assert_eq!(split(&H200, &TILE, (1, 1, 1), 16).splits, 1);
    }
}
