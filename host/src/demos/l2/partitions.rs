//! The L2's two partitions seen from every SM: the L2 is flushed, one SM (the first) walks a
//! 256 KiB chain so its lines are in L2, then one SM at a time times every hop of the same
//! chain (`chase_l2_on_sm`, one block per SM). Hops split into near hits and far hits (two-means
//! over all samples); each SM's share of far hops and each line's share over the far SMs say
//! whether near and far go by SM, by address, or both.

use anyhow::Result;
use cust::memory::{CopyDestination, DeviceBuffer};
use memlab_contracts::hierarchy::READ_CG_VECTOR_BYTES;
use memlab_contracts::l2::{CHASE_SM_HEADER_WORDS, CHASE_SM_SCRATCH_BYTES, CHASE_SM_THREADS};
use memlab_contracts::probes::BLOCK;

use crate::gpu::describe;
use crate::gpu::launch::LaunchShape;
use crate::lab::sizes::bytes;
use crate::lab::{Lab, download, ensure_free, poisoned, sanitizer, upload};
use crate::launches;
use crate::model::l2::{BANDS, Band, L2Level, band_shares, one_sm_level, two_means};
use crate::probes::chain::{self, LINE_BYTES};
use crate::refuse;
use crate::verify::{self, Check};

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `chase_l2_on_sm`: `blocks` blocks of one warp, each with `smem` dynamic shared bytes
    /// (more than half an SM's, so one block per SM); the block on SM `sm` chases.
    pub fn chase_l2_on_sm(blocks: u32, smem: u32) -> LaunchShape {
        LaunchShape { grid: (blocks, 1), block: (CHASE_SM_THREADS, 1), smem_bytes: smem }
    }
}

/// Lines of the chain every SM times (256 KiB: far inside either partition).
pub const CHAIN_LINES: usize = 2048;

/// Per-hop latencies of the same lines from every SM.
#[derive(Debug, Clone)]
pub struct Partitions {
    /// The SM that brought the lines into L2.
    pub warm_sm: u32,
    /// Per SM reached (`%smid`, ascending), the cycles of each hop, in chain order.
    pub hops: Vec<(u32, Vec<f64>)>,
    /// SM numbers below the SM count that no block ran on (`%smid` may have gaps).
    pub missed: Vec<u32>,
    /// Near centre, far centre and the threshold between them, cycles (`None`: one level only).
    pub split: Option<(f64, f64, f64)>,
    /// Chain ends and SM numbers, checked.
    pub check: Check,
    /// One SM's chase over growing footprints: the near/far bands of the second pass.
    pub footprints: Vec<Footprint>,
}

/// One footprint chased by one SM (a random cycle over its 128-byte lines, walked once to
/// bring them in, then once more with every hop timed).
#[derive(Debug, Clone)]
pub struct Footprint {
    /// Bytes of the chain.
    pub bytes: usize,
    /// Each band's share of the timed hops, in the order of `model::l2::BANDS`.
    pub shares: [f64; 4],
    /// The median hop, cycles.
    pub median: f64,
}

/// The footprints of the one-SM sweep, in sixtieths of the L2 (the H200's MiB): from well
/// inside one partition, through the step where a chase leaves the SM's near half (24-32
/// sixtieths), to past the whole L2; whole 128-byte lines.
pub fn sweep_footprints(l2_bytes: usize) -> Vec<usize> {
    [8, 16, 24, 26, 28, 30, 32, 36, 40, 48, 64].map(|k| (l2_bytes / 60 * k / LINE_BYTES).max(1) * LINE_BYTES).to_vec()
}

/// Dynamic shared bytes that keep a second block off an SM: more than half of what an SM has.
pub fn one_block_per_sm_smem(smem_per_sm: u32, reserved_per_block: u32) -> u32 {
    (smem_per_sm / 2 + 1).saturating_sub(reserved_per_block).max(CHASE_SM_SCRATCH_BYTES).next_multiple_of(8)
}

/// Measures the chain from each of the first `timed_sms` SM numbers (every SM when `None` or
/// more) after SM `warm_sm` brought it into L2.
pub fn measure(lab: &Lab, warm_sm: u32, timed_sms: Option<u32>) -> Result<Partitions> {
    let sms = lab.gpu.info.sms;
    let mut probe = Probe::new(lab, warm_sm)?;
    let next = chain::random_cycle(CHAIN_LINES, 0x12);
    let chain = upload_chain(&next, CHAIN_LINES * LINE_BYTES)?;
    let (hops, missed) = probe.every_sm(&chain, &next, timed_sms.map_or(sms, |n| n.min(sms)))?;
    // One SM over growing footprints: one launch walks the chain once untimed, once timed.
    let footprints = sanitizer::sweep(lab, sweep_footprints(lab.gpu.info.l2_bytes as usize))
        .into_iter()
        .enumerate()
        .map(|(k, fp)| probe.footprint(k, fp))
        .collect::<Result<Vec<_>>>()?;
    let all: Vec<f64> = hops.iter().flat_map(|h| &h.1).copied().collect();
    let check = verify::exact_u32(&probe.got, |i| probe.want[i]);
    Ok(Partitions { warm_sm, split: two_means(&all), hops, missed, check, footprints })
}

/// A chain of `bytes` in device memory, its slots holding `next` as global addresses.
fn upload_chain(next: &[u32], bytes: usize) -> Result<DeviceBuffer<u64>> {
    // SAFETY: written whole by the image copy below before any read.
    let mut buffer = unsafe { DeviceBuffer::<u64>::uninitialized(bytes / 8) }
        .map_err(|e| anyhow::anyhow!("alloc: {}", describe(e)))?;
    let base = buffer.as_device_ptr().as_raw();
    buffer.copy_from(&chain::global_image(next, base)[..]).map_err(|e| anyhow::anyhow!("upload: {}", describe(e)))?;
    Ok(buffer)
}

/// Per SM reached, the cycles of each hop, in chain order (as in [`Partitions::hops`]).
type SmHops = Vec<(u32, Vec<f64>)>;

/// What every chase of the probe shares: the one-block-per-SM launch, the L2 flush before it,
/// and the SM numbers and chain ends seen beside those wanted (checked together at the end).
struct Probe<'a> {
    lab: &'a Lab,
    warm_sm: u32,
    smem: u32,
    flush_bytes: usize,
    flush_blocks: u32,
    // Before `flush`: fields drop in order, so the last allocated is freed first.
    flush_out: DeviceBuffer<u32>,
    flush: DeviceBuffer<u32>,
    got: Vec<u32>,
    want: Vec<u32>,
}

impl<'a> Probe<'a> {
    /// Refuses a GPU where one block cannot hold an SM, then allocates the flush buffers.
    fn new(lab: &'a Lab, warm_sm: u32) -> Result<Self> {
        let gpu = &lab.gpu;
        let info = &gpu.info;
        let smem = one_block_per_sm_smem(info.smem_per_sm, info.smem_reserved_per_block);
        if smem > info.smem_per_block_optin {
            refuse!(
                "the L2 partition probe needs {smem} bytes of shared memory per block to keep one block per SM (limit {})",
                info.smem_per_block_optin
            );
        }
        crate::gpu::kernel::allow_dynamic_smem(gpu, "chase_l2_on_sm", smem)?;
        let flush_bytes = sanitizer::bytes(lab, (2 * info.l2_bytes as usize).next_multiple_of(READ_CG_VECTOR_BYTES));
        let chain_bytes = CHAIN_LINES * LINE_BYTES;
        let (flush_blocks, flush_threads) = sanitizer::grid(lab, BLOCK);
        ensure_free("the L2 partition probe", flush_bytes + chain_bytes + 4 * flush_threads)?;
        let flush = poisoned::<u32>(flush_bytes / 4)?;
        let flush_out = poisoned::<u32>(flush_threads)?;
        Ok(Probe { lab, warm_sm, smem, flush_bytes, flush_blocks, flush_out, flush, got: Vec::new(), want: Vec::new() })
    }

    /// Enqueues a read of twice the L2, so no line of a chain is left in it.
    fn flush(&mut self) -> Result<()> {
        launches::read_cg(
            crate::probes::bandwidth::read_shape(self.flush_blocks),
            &self.flush,
            (self.flush_bytes / READ_CG_VECTOR_BYTES) as u32,
            1,
            &mut self.flush_out,
        )
        .enqueue(&self.lab.gpu)
    }

    /// Enqueues a chase of the chain at `base` by the block on SM `sm`: `warm` hops untimed,
    /// then `timed` hops timed.
    fn chase(&self, base: u64, sm: u32, warm: u32, timed: u32, out: &mut DeviceBuffer<u64>) -> Result<()> {
        let shape = shapes::chase_l2_on_sm(self.lab.gpu.info.sms, self.smem);
        launches::chase_l2_on_sm(shape, base, sm, warm, timed, out).enqueue(&self.lab.gpu)
    }

    /// Waits for the enqueued chases, refusing on a failed one.
    fn synchronize(&self) -> Result<()> {
        if let Err(e) = self.lab.gpu.stream.synchronize() {
            refuse!("kernel `chase_l2_on_sm` failed: {}", describe(e));
        }
        Ok(())
    }

    /// Notes a chase's record for the check (it should name SM `sm` and end at byte `end` of
    /// the chain at `base`) and returns its timed hops, cycles.
    fn timed_hops(&mut self, record: &[u64], base: u64, sm: u32, end: u32) -> Vec<f64> {
        // The SM that chased, and where its walk ended.
        let got_end = u32::try_from(record[2].wrapping_sub(base)).unwrap_or(u32::MAX);
        self.got.extend([u32::try_from(record[0]).unwrap_or(u32::MAX), got_end]);
        self.want.extend([sm, end]);
        record[CHASE_SM_HEADER_WORDS..].iter().map(|&c| c as f64).collect()
    }

    /// Times every hop of `chain` (the cycle `next`) from each SM number below `timed_sms`,
    /// each after a flush and `warm_sm`'s walk: the hops per SM reached, the SM numbers missed.
    fn every_sm(&mut self, chain: &DeviceBuffer<u64>, next: &[u32], timed_sms: u32) -> Result<(SmHops, Vec<u32>)> {
        let base = chain.as_device_ptr().as_raw();
        let steps = CHAIN_LINES as u32;
        let record_words = CHASE_SM_HEADER_WORDS + CHAIN_LINES;
        // The chase starts at slot 0; where it ends, as a byte offset from the chain's base.
        let want_end = chain::walk(next, 0, steps as u64) * LINE_BYTES as u32;
        let mut hops = Vec::with_capacity(self.lab.gpu.info.sms as usize);
        let mut missed = Vec::new();
        for sm in 0..timed_sms {
            self.flush()?;
            let mut warm_out = upload(&vec![u64::MAX; record_words])?;
            self.chase(base, self.warm_sm, steps, 0, &mut warm_out)?;
            let mut out = upload(&vec![u64::MAX; record_words])?;
            self.chase(base, sm, 0, steps, &mut out)?;
            self.synchronize()?;
            let (warm_record, record) = (download(&warm_out)?, download(&out)?);
            if warm_record[0] != self.warm_sm as u64 {
                refuse!("the L2 partition probe found no block on SM {} to bring the lines into L2", self.warm_sm);
            }
            // A record left poisoned: no block ran on this SM number.
            if record.iter().all(|&w| w == u64::MAX) {
                missed.push(sm);
                continue;
            }
            hops.push((sm, self.timed_hops(&record, base, sm, want_end)));
        }
        Ok((hops, missed))
    }

    /// The `k`th footprint of the sweep, `fp` bytes: a fresh chain, flushed, walked by
    /// `warm_sm` once to bring it in and once more timed.
    fn footprint(&mut self, k: usize, fp: usize) -> Result<Footprint> {
        let lines = fp / LINE_BYTES;
        ensure_free("the L2 partition sweep", fp + 8 * (CHASE_SM_HEADER_WORDS + lines))?;
        let next = chain::random_cycle(lines, 0x13 + k as u64);
        let chain_buffer = upload_chain(&next, fp)?;
        let start = chain_buffer.as_device_ptr().as_raw();
        self.flush()?;
        let mut out = upload(&vec![u64::MAX; CHASE_SM_HEADER_WORDS + lines])?;
        self.chase(start, self.warm_sm, lines as u32, lines as u32, &mut out)?;
        self.synchronize()?;
        let record = download(&out)?;
        let end = chain::walk(&next, 0, 2 * lines as u64) * LINE_BYTES as u32;
        let timed = self.timed_hops(&record, start, self.warm_sm, end);
        Ok(Footprint { bytes: fp, shares: band_shares(&timed), median: median(&timed) })
    }
}

/// The median of `v` (0 for none).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

impl Partitions {
    /// Each SM's median hop, cycles: `(SM, median)`.
    pub fn medians(&self) -> Vec<(u32, f64)> {
        self.hops.iter().map(|(sm, h)| (*sm, median(h))).collect()
    }

    /// Each SM's share of far hops (0 when the hops form one level).
    fn far_share(&self, hops: &[f64]) -> f64 {
        let Some((_, _, cut)) = self.split else { return 0.0 };
        hops.iter().filter(|&&c| c > cut).count() as f64 / hops.len().max(1) as f64
    }

    /// The hops of the SMs that find a quarter or more of the lines far: the other partition
    /// from the SM that brought them (measured on the H200: half the lines, the half homed in
    /// the other partition, on first touch).
    fn far(&self) -> Vec<&(u32, Vec<f64>)> {
        self.hops.iter().filter(|(_, h)| self.far_share(h) >= 0.25).collect()
    }

    /// SMs that find a quarter or more of the hops far.
    pub fn far_sms(&self) -> Vec<u32> {
        self.far().iter().map(|(sm, _)| *sm).collect()
    }

    /// Over the far SMs, each line's share of far hops (by position on the chain).
    pub fn line_far_share(&self) -> Vec<f64> {
        let Some((_, _, cut)) = self.split else { return Vec::new() };
        let far = self.far();
        (0..CHAIN_LINES)
            .map(|i| {
                far.iter().filter(|(_, h)| h.get(i).is_some_and(|&c| c > cut)).count() as f64 / far.len().max(1) as f64
            })
            .collect()
    }

    /// The one-SM sweep: each footprint's band shares beside the model's level, and where the
    /// chase leaves the near partition (the latency ladder's plateau and step).
    pub fn footprint_notes(&self, l2_bytes: usize) -> Vec<String> {
        let Some(first) = self.footprints.first() else { return Vec::new() };
        let level = |l: L2Level| match l {
            L2Level::Near => "near",
            L2Level::Far => "far",
            L2Level::Dram => "DRAM",
        };
        let points: Vec<String> = self
            .footprints
            .iter()
            .map(|f| {
                let [near, between, far, dram] = f.shares.map(|x| 100.0 * x);
                format!(
                    "{} {near:.0}/{between:.0}/{far:.0}/{dram:.0} (median {:.0}, model {})",
                    bytes(f.bytes),
                    f.median,
                    level(one_sm_level(f.bytes as f64, l2_bytes as f64))
                )
            })
            .collect();
        let share = |f: &Footprint, b: Band| f.shares[BANDS.iter().position(|&x| x == b).unwrap_or(0)];
        let near_last = self.footprints.iter().take_while(|f| share(f, Band::Near) >= 0.99).last().unwrap_or(first);
        let far_first = self.footprints.iter().find(|f| share(f, Band::Far) >= 0.5);
        let dram_first = self.footprints.iter().find(|f| share(f, Band::Dram) >= 0.5);
        let mut notes = vec![format!(
            "L2 partitions, one SM (SM {}) chasing growing footprints, second pass, % of hops near (<340 cycles) / 340-420 / far (420-580) / DRAM (>=580): {}",
            self.warm_sm,
            points.join("; ")
        )];
        notes.push(format!(
            "the latency ladder's plateau: up to {} every hop is near, the SM's own partition (half the {} L2, less what it holds for the other half); past it the chase no longer fits there and the far band takes over{}{}: the ladder's step at 24-32 MiB is the partition step, not the end of the L2",
            bytes(near_last.bytes),
            bytes(l2_bytes),
            far_first.map_or(String::new(), |f| format!(", half the hops far from about {} ({:.0}%)", bytes(f.bytes), 100.0 * share(f, Band::Far))),
            dram_first.map_or(String::new(), |f| format!(", DRAM from about {} ({:.0}%)", bytes(f.bytes), 100.0 * share(f, Band::Dram))),
        ));
        notes
    }

    /// What the measurement shows.
    pub fn notes(&self) -> Vec<String> {
        let medians = self.medians();
        let far = self.far_sms();
        let missed = match self.missed.len() {
            0 => String::new(),
            n => format!(" ({n} SM numbers had no block: {:?})", self.missed),
        };
        let Some((near_c, far_c, cut)) = self.split else {
            let all: Vec<f64> = medians.iter().map(|m| m.1).collect();
            return vec![format!(
                "L2 partitions: every SM's hops are one level (median {:.0} cycles): no near/far split seen{missed}",
                median(&all)
            )];
        };
        let pick = |far_side: bool| -> Vec<f64> {
            medians.iter().filter(|(sm, _)| far.contains(sm) == far_side).map(|m| m.1).collect()
        };
        let (far_meds, near_sms) = (pick(true), pick(false));
        let lines = self.line_far_share();
        let all_far = lines.iter().filter(|&&s| s > 0.9).count();
        let none_far = lines.iter().filter(|&&s| s < 0.1).count();
        vec![
            format!(
                "L2 partitions: {} lines ({}) brought into L2 by SM {}, then every hop timed from each of {} SMs{missed}; hops split at {cut:.0} cycles into near ({near_c:.0}) and far ({far_c:.0})",
                CHAIN_LINES,
                bytes(CHAIN_LINES * LINE_BYTES),
                self.warm_sm,
                self.hops.len()
            ),
            format!(
                "{} SMs find the lines near (median {:.0} cycles); {} SMs find {:.0}% of them far (median hop {:.0} cycles, {:.2}x): the SMs of the other partition, whose first touch of a line homed across the link crosses it (and leaves a near copy)",
                near_sms.len(),
                median(&near_sms),
                far.len(),
                100.0 * median(&self.far().iter().map(|(_, h)| self.far_share(h)).collect::<Vec<_>>()),
                median(&far_meds),
                median(&far_meds) / median(&near_sms).max(1.0)
            ),
            format!(
                "by address, over the far SMs: {all_far} of {} lines are far from every far SM, {none_far} near from all of them",
                lines.len()
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_takes_more_than_half_an_sm_of_shared_memory() {
        // H200: 228 KiB per SM, 1 KiB reserved per block.
        let smem = one_block_per_sm_smem(233472, 1024);
        assert_eq!(smem, 115720);
        assert!(2 * (smem + 1024) > 233472);
        assert!(smem + 1024 <= 233472);
        assert_eq!(one_block_per_sm_smem(0, 0), 8);
    }

    fn partitions(hops: Vec<Vec<f64>>) -> Partitions {
        let hops: Vec<(u32, Vec<f64>)> = hops.into_iter().enumerate().map(|(sm, h)| (sm as u32, h)).collect();
        let all: Vec<f64> = hops.iter().flat_map(|h| &h.1).copied().collect();
        Partitions {
            warm_sm: 0,
            split: two_means(&all),
            hops,
            missed: vec![],
            check: verify::exact_u32(&[1], |_| 1),
            footprints: vec![],
        }
    }

    #[test]
    fn far_sms_and_far_lines_are_found() {
        let near = vec![280.0; CHAIN_LINES];
        let mut far = vec![480.0; CHAIN_LINES];
        far[0] = 285.0;
        let p = partitions(vec![near.clone(), far.clone(), near, far]);
        assert_eq!(p.far_sms(), [1, 3]);
        let lines = p.line_far_share();
        assert_eq!((lines[0], lines[1]), (0.0, 1.0));
        let notes = p.notes();
        assert!(
            notes[1].starts_with(
                "2 SMs find the lines near (median 280 cycles); 2 SMs find 100% of them far (median hop 480"
            ),
            "{}",
            notes[1]
        );
        assert!(
            notes[2].contains(&format!("{} of {CHAIN_LINES} lines are far from every far SM, 1 near", CHAIN_LINES - 1))
        );
    }

    #[test]
    fn one_level_says_so() {
        let p = partitions(vec![vec![280.0; CHAIN_LINES]; 3]);
        assert_eq!(p.split, None);
        assert!(p.far_sms().is_empty());
        assert!(p.notes()[0].contains("no near/far split seen"));
    }

    #[test]
    fn the_one_sm_sweep_names_the_partition_step() {
        assert_eq!(sweep_footprints(60 << 20)[0], 8 << 20);
        assert_eq!(sweep_footprints(60 << 20)[10], 64 << 20);
        assert_eq!(sweep_footprints(0), vec![LINE_BYTES; 11]);
        let mut p = partitions(vec![vec![280.0; CHAIN_LINES]]);
        let f = |mib: usize, shares: [f64; 4]| Footprint { bytes: mib << 20, shares, median: 0.0 };
        p.footprints = vec![
            f(24, [1.0, 0.0, 0.0, 0.0]),
            f(28, [0.93, 0.0, 0.07, 0.0]),
            f(32, [0.24, 0.0, 0.71, 0.05]),
            f(64, [0.0, 0.0, 0.44, 0.56]),
        ];
        let notes = p.footprint_notes(60 << 20);
        assert!(notes[0].contains("24 MiB 100/0/0/0 (median 0, model near)"), "{}", notes[0]);
        assert!(notes[0].contains("32 MiB 24/0/71/5 (median 0, model far)"), "{}", notes[0]);
        assert!(notes[0].contains("64 MiB 0/0/44/56 (median 0, model DRAM)"), "{}", notes[0]);
        assert!(notes[1].starts_with("the latency ladder's plateau: up to 24 MiB every hop is near"), "{}", notes[1]);
        assert!(notes[1].contains("far band takes over, half the hops far from about 32 MiB (71%), DRAM from about 64 MiB (56%): the ladder's"), "{}", notes[1]);
        assert!(partitions(vec![]).footprint_notes(60 << 20).is_empty());
    }
}
