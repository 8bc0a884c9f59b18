//! Latency probes on the GPU: the global-memory ladder (default caching and L2 only), shared,
//! local and constant memory, and a register FMA chain. Each launch is one thread (one warp for
//! constant memory) that times its own dependent loads with the SM clock; each result is
//! checked by walking the same chain on the CPU.

use std::ffi::CStr;

use anyhow::Result;
use cust::memory::{CopyDestination, DeviceBuffer};
use memlab_contracts::hierarchy::{
    CONST_CHAIN_WORDS, CONST_CHASE_THREADS, LOCAL_CHAIN_WORDS, RECORD_WORDS, SHARED_CHASE_THREADS,
};

use super::chain::{self, LINE_BYTES};
use crate::gpu::describe;
use crate::gpu::launch::{Launch, LaunchShape};
use crate::gpu::staging::Staging;
use crate::lab::{Lab, download, upload};
use crate::launches;
use crate::reference;
use crate::refuse;
use crate::verify::{self, Check};

/// One block of `threads` threads with `smem` dynamic shared bytes: every latency probe.
fn one_block(threads: u32, smem: u32) -> LaunchShape {
    LaunchShape { grid: (1, 1), block: (threads, 1), smem_bytes: smem }
}

/// Untimed links of a latency chain before the timed ones (enough to load the TLBs' working
/// set, few enough that a chain over the link or the bus is walked in milliseconds).
pub const CHAIN_WARM: u32 = 1024;

/// The launch shapes of the latency probes (their kernels' docs in `kernels-gpu/src/hierarchy.rs`
/// give what each does; its typed launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    use super::*;

    /// One thread alone: `chase_global`, `chase_global_cg`, `chase_local`, `register_chain`.
    pub fn one_thread() -> LaunchShape {
        one_block(1, 0)
    }

    /// `chase_shared` and `chase_shared_index`: one block of 256 threads copies the
    /// `words`-word chain into `4 * words` bytes of dynamic shared memory; one thread follows it.
    pub fn chase_shared(words: u32) -> LaunchShape {
        one_block(SHARED_CHASE_THREADS, 4 * words)
    }

    /// `const_chase`: one warp follows the `.const` chain from lane offsets `lane * lane_stride`.
    pub fn const_chase() -> LaunchShape {
        one_block(CONST_CHASE_THREADS, 0)
    }
}

/// One probe's timed loads, per load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    /// SM clock cycles per load (`%clock64`).
    pub cycles: f64,
    /// Nanoseconds per load (`%globaltimer`).
    pub ns: f64,
}

impl Latency {
    /// The SM clock during the probe, GHz: cycles over nanoseconds.
    pub fn clock_ghz(&self) -> f64 {
        self.cycles / self.ns
    }
}

/// The record every probe kernel writes: `[cycles, ns, end]`, plus per-lane ends for the
/// constant-memory probe.
struct Record {
    latency: Latency,
    words: Vec<u64>,
}

/// Launches a probe once with a fresh record buffer (`make` builds the launch on it) and reads
/// the record back.
fn probe(lab: &Lab, steps: u32, make: impl FnOnce(&mut DeviceBuffer<u64>) -> Launch) -> Result<Record> {
    let gpu = &lab.gpu;
    let mut out = upload(&[u64::MAX; RECORD_WORDS])?;
    let launch = make(&mut out);
    launch.enqueue(gpu)?;
    if let Err(e) = gpu.stream.synchronize() {
        refuse!("probe `{}` failed: {}", launch.kernel, describe(e));
    }
    let words = download(&out)?;
    let per = |total: u64| total as f64 / steps as f64;
    Ok(Record { latency: Latency { cycles: per(words[0]), ns: per(words[1]) }, words })
}

/// The typed launch of a global-memory chase: `(start, warm, steps, out)`.
type ChaseLaunch = fn(LaunchShape, u64, u32, u32, &mut DeviceBuffer<u64>) -> Launch;

/// One working-set size of the ladder: the chase with default caching and with L2 only.
#[derive(Debug, Clone, PartialEq)]
pub struct LadderPoint {
    /// Bytes spanned by the chain (slots x 128).
    pub bytes: usize,
    /// `chase_global`: plain `ld.global`, cached in L1 and L2.
    pub default: Latency,
    /// `chase_global_cg`: `ld.global.cg`, cached in L2 only.
    pub l2_only: Latency,
}

/// The chain's slot that a global probe's last address names (`u32::MAX` when it is not one).
fn slot_of(address: u64, base: u64) -> u32 {
    let offset = address.wrapping_sub(base);
    if !offset.is_multiple_of(LINE_BYTES as u64) {
        return u32::MAX;
    }
    u32::try_from(offset / LINE_BYTES as u64).unwrap_or(u32::MAX)
}

/// Measures the ladder over `sizes` (bytes, multiples of 128), `steps` timed loads each: the
/// default-caching probe after a warm-up walk of the whole chain or of `warm_cap` links,
/// whichever is fewer, then the L2-only probe straight on from where it stopped. Returns the
/// points and one check of every chain's end.
///
/// Host work is kept off the GPU's path: each chain's image is built chunk by chunk on every
/// core and uploaded through pinned staging (no whole image on the host: 2 GiB at the top), and
/// while the GPU walks one chain a second thread walks it on the CPU (once for both probes) and
/// shuffles the next size's chain. The probes see the same chains, warm-ups and steps as before.
pub fn ladder(lab: &Lab, sizes: &[usize], steps: u32, warm_cap: usize) -> Result<(Vec<LadderPoint>, Check)> {
    let largest = sizes.iter().copied().max().unwrap_or(0);
    crate::lab::ensure_free("the latency ladder", largest)?;
    // SAFETY: every word the probes read is written by the copy of the size's image first.
    let buffer = unsafe { DeviceBuffer::<u64>::uninitialized(largest / 8) }
        .map_err(|e| anyhow::anyhow!("alloc: {}", describe(e)))?;
    let base = buffer.as_device_ptr().as_raw();
    let mut staging = Staging::<u64>::new(largest / 8)?;
    let cycle = |bytes: usize| chain::random_cycle(bytes / LINE_BYTES, bytes as u64);
    let (mut points, mut got, mut want) = (Vec::new(), Vec::new(), Vec::new());
    let mut next = sizes.first().map(|&bytes| cycle(bytes)).unwrap_or_default();
    for (k, &bytes) in sizes.iter().enumerate() {
        let slots = bytes / LINE_BYTES;
        staging.upload_first(&lab.gpu, &buffer, slots * (LINE_BYTES / 8), |offset, words| {
            chain::fill_global_image(&next, base, offset, words)
        })?;
        let warm = slots.min(warm_cap) as u32;
        let (probes, (expected, following)) = std::thread::scope(|scope| {
            let host = scope.spawn(|| {
                let default_end = chain::walk(&next, 0, warm as u64 + steps as u64);
                ([default_end, chain::walk(&next, default_end, steps as u64)], sizes.get(k + 1).map(|&b| cycle(b)))
            });
            let probes = (|| {
                let default = chase(lab, launches::chase_global, base, 0, warm, steps)?;
                // The L2-only probe goes on from the slot where the default one stopped, on the
                // chain that walk just warmed (its warm-up and its timed loads, in the same
                // order): a warm-up of its own would only walk the same lines again (past twice
                // the L2, 2 x L2 / 128 links at ~680 cycles: ~0.35 s a size on the H200). A
                // wrong end sends it off the chain and fails both checks.
                let start = if (default.1 as usize) < slots { default.1 } else { 0 };
                let l2_only = chase(lab, launches::chase_global_cg, base, start, 0, steps)?;
                Ok::<_, anyhow::Error>((default, l2_only))
            })();
            (probes, host.join().expect("the host's chain walk does not panic"))
        });
        let (default, l2_only) = probes?;
        for (end, expected) in [default.1, l2_only.1].into_iter().zip(expected) {
            got.push(end);
            want.push(expected);
        }
        points.push(LadderPoint { bytes, default: default.0, l2_only: l2_only.0 });
        next = following.unwrap_or_default();
    }
    Ok((points, verify::exact_u32(&got, |i| want[i])))
}

/// One walk of `kernel` over a chain laid out at device address `base` from slot `start`,
/// `warm` links untimed and `steps` timed: its latency and the slot it ended on.
fn chase(lab: &Lab, kernel: ChaseLaunch, base: u64, start: u32, warm: u32, steps: u32) -> Result<(Latency, u32)> {
    let at = base + u64::from(start) * LINE_BYTES as u64;
    let record = probe(lab, steps, |out| kernel(shapes::one_thread(), at, warm, steps, out))?;
    Ok((record.latency, slot_of(record.words[2], base)))
}

/// Latency of `chase_global` (plain loads) over a random chain of `bytes` (a multiple of 128)
/// at device address `base`: any memory the lab's device can load (its own, a peer GPU's over
/// the link, mapped host memory over the bus). `write` puts the chain's image
/// ([`chain::global_image`]) there; `warm` links are walked untimed, then `steps` timed.
pub fn chain_at(
    lab: &Lab,
    base: u64,
    bytes: usize,
    warm: u32,
    steps: u32,
    write: impl FnOnce(&[u64]) -> Result<()>,
) -> Result<(Latency, Check)> {
    let next = chain::random_cycle(bytes / LINE_BYTES, bytes as u64 ^ 0x5eed);
    write(&chain::global_image(&next, base))?;
    let warm = warm.min(next.len() as u32);
    let (latency, end) = chase(lab, launches::chase_global, base, 0, warm, steps)?;
    let want = chain::walk(&next, 0, warm as u64 + steps as u64);
    Ok((latency, verify::exact_u32(&[end], |_| want)))
}

/// Shared-memory latency over a chain of `bytes` (a multiple of 128) in dynamic shared memory,
/// timed twice on the same chain: the address chase (`chase_shared`, the loaded value is the
/// next address) and the index chase (`chase_shared_index`, `j = s[j]`). Returns
/// `(address chase, index chase, check of both ends)`.
pub fn shared(lab: &Lab, bytes: usize, steps: u32) -> Result<(Latency, Latency, Check)> {
    let next = chain::random_cycle(bytes / LINE_BYTES, 3);
    let image = upload(&chain::shared_image(&next))?;
    let warm = next.len() as u32;
    let words = (bytes / 4) as u32;
    let address =
        probe(lab, steps, |out| launches::chase_shared(shapes::chase_shared(words), &image, words, warm, steps, out))?;
    let index = probe(lab, steps, |out| {
        launches::chase_shared_index(shapes::chase_shared(words), &image, words, warm, steps, out)
    })?;
    let end = chain::walk(&next, 0, warm as u64 + steps as u64) * LINE_BYTES as u32;
    // The address chase ends on a byte offset, the index chase on a word index.
    let got = [address.words[2] as u32, (index.words[2] as u32).wrapping_mul(4)];
    Ok((address.latency, index.latency, verify::exact_u32(&got, |_| end)))
}

/// Local-memory latency: a 32-word chain in one thread's local memory.
pub fn local(lab: &Lab, steps: u32) -> Result<(Latency, Check)> {
    let next = chain::random_cycle(LOCAL_CHAIN_WORDS, 5);
    let chain = upload(&next)?;
    let warm = next.len() as u32;
    let record = probe(lab, steps, |out| launches::chase_local(shapes::one_thread(), &chain, warm, steps, out))?;
    let end = chain::walk(&next, 0, warm as u64 + steps as u64);
    Ok((record.latency, verify::exact_u32(&[record.words[2] as u32], |_| end)))
}

/// The constant-memory chain's symbol in the module (kernels-gpu `hierarchy.rs`).
const CONST_CHAIN: &CStr = c"memlab_const_chain";

/// Constant-memory latency per warp-wide load: broadcast (every lane on one address) and
/// serialized (32 lanes on 32 addresses). Returns `(broadcast, serialized, check)`.
pub fn constant(lab: &Lab, steps: u32) -> Result<(Latency, Latency, Check)> {
    let next = chain::stepping_cycle(CONST_CHAIN_WORDS, 32);
    let offsets: [u32; CONST_CHAIN_WORDS] = std::array::from_fn(|w| 4 * next[w]);
    let mut symbol = lab
        .gpu
        .module
        .get_global::<[u32; CONST_CHAIN_WORDS]>(CONST_CHAIN)
        .map_err(|e| anyhow::anyhow!("constant chain symbol: {}", describe(e)))?;
    symbol.copy_from(&offsets).map_err(|e| anyhow::anyhow!("constant chain upload: {}", describe(e)))?;
    let warm = CONST_CHAIN_WORDS as u32;
    let (mut got, mut want) = (Vec::new(), Vec::new());
    let mut run = |lane_stride: u32| -> Result<Latency> {
        let record =
            probe(lab, steps, |out| launches::const_chase(shapes::const_chase(), lane_stride, warm, steps, out))?;
        for lane in 0..CONST_CHASE_THREADS {
            got.push(record.words[3 + lane as usize] as u32);
            want.push(4 * chain::walk(&next, lane * lane_stride, warm as u64 + steps as u64));
        }
        Ok(record.latency)
    };
    let broadcast = run(0)?;
    let serialized = run(1)?;
    Ok((broadcast, serialized, verify::exact_u32(&got, |i| want[i])))
}

/// Register latency: `steps` dependent FMAs in one thread.
pub fn register(lab: &Lab, steps: u32) -> Result<(Latency, Check)> {
    let (x, a, b) = (0.25f32, 0.5f32, 1.0f32);
    let record = probe(lab, steps, |out| launches::register_chain(shapes::one_thread(), x, a, b, steps, out))?;
    let want = reference::fma_chain(x, a, b, steps).to_bits();
    Ok((record.latency, verify::exact_u32(&[record.words[2] as u32], |_| want)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_of_names_only_line_starts_inside_the_chain() {
        let base = 0x7000_0000u64;
        assert_eq!(slot_of(base, base), 0);
        assert_eq!(slot_of(base + 5 * 128, base), 5);
        assert_eq!(slot_of(base + 8, base), u32::MAX);
        assert_eq!(slot_of(base - 128, base), u32::MAX);
        assert_eq!(slot_of(u64::MAX, base), u32::MAX);
    }
}
