//! Registers against shared memory: one wrapping sum of `n` words, two ways. `sum_shared`
//! moves every element through a shared-memory tree (about 3 shared accesses and 0.07 barriers
//! per element in blocks of 256); `sum_registers` keeps a running sum per thread in a register
//! and goes through shared memory once per thread. Each block's partial sum is checked against
//! the CPU's, exactly (a wrapping sum does not depend on its order), before the kernel is timed.

use std::cell::RefCell;

use anyhow::Result;

use crate::gpu::launch::LaunchShape;
use crate::gpu::staging::Staging;
use crate::lab::{Inputs, KernelRow, KernelRun, Lab, Section, Work, check_staged, ensure_free, f32_bytes, measure};
use crate::lab::{Lesson, Needs, NoOptions, Shared, poison, poisoned, sanitizer, staging_bytes};
use crate::launches;
use crate::reference::{fill_strided_words, strided_word};

/// Threads per block of both kernels: a power of two, as their tree needs.
pub const THREADS: u32 = 256;
/// Words summed, 256 MiB: past every L2, so the input streams from DRAM.
pub const WORDS: usize = 1 << 26;

/// The launch shapes of this lesson's kernels, one function per kernel entry (its typed
/// launch, in [`crate::launches`], takes the shape first).
pub mod shapes {
    #[allow(unused_imports)]
    use super::*;

    /// `sum_shared`: one element per thread of `n`, blocks of [`THREADS`] (`ceil(n / 256)` of
    /// them), one word of dynamic shared memory per thread (1024 B).
    pub fn sum_shared(n: u32) -> LaunchShape {
        LaunchShape::linear(n, THREADS, 4 * THREADS)
    }

    /// `sum_registers`: `blocks` blocks of [`THREADS`], each thread striding over the input,
    /// one word of dynamic shared memory per thread (1024 B).
    pub fn sum_registers(blocks: u32) -> LaunchShape {
        LaunchShape { grid: (blocks, 1), block: (THREADS, 1), smem_bytes: 4 * THREADS }
    }
}

/// Shared-memory accesses and barriers per element of a block's tree over `threads` values
/// (a power of two) when the block sums `elements` elements: the leaves' `threads` stores, each
/// round's loads and stores (`threads - 1` of each over the `log2(threads)` rounds), and two
/// barriers a round after the leaves' one.
pub fn tree_per_element(threads: u32, elements: f64) -> (f64, f64) {
    let accesses = f64::from(threads + 2 * (threads - 1));
    let barriers = f64::from(2 * threads.ilog2() + 1);
    (accesses / elements, barriers / elements)
}

/// The wrapping sum of input words `range` (clipped to `n`).
fn words_sum(range: std::ops::Range<usize>, n: usize) -> u32 {
    (range.start..range.end.min(n)).fold(0, |s, i| s.wrapping_add(strided_word(i)))
}

/// `sum_shared`'s partial of block `b` over `n` words: its `THREADS` consecutive words.
pub fn shared_partial(b: usize, n: usize) -> u32 {
    let t = THREADS as usize;
    words_sum(b * t..(b + 1) * t, n)
}

/// `sum_registers`' partial of block `b` of `blocks` over `n` words: every word whose place
/// in its stride of `blocks * THREADS` falls in the block's threads.
pub fn registers_partial(b: usize, blocks: usize, n: usize) -> u32 {
    let (t, stride) = (THREADS as usize, blocks * THREADS as usize);
    (b * t..n).step_by(stride).fold(0, |s, start| s.wrapping_add(words_sum(start..start + t, n)))
}

/// The lesson: where a reduction keeps its running sum.
pub struct Reduction;

impl Lesson for Reduction {
    const NAME: &'static str = "reduction";
    const NEEDS: Needs = Needs { memcpy: true, memcpy_sweep: false, twins: false };
    type Options = NoOptions;

    fn run(lab: &Lab, inputs: &Inputs, _: &NoOptions) -> Result<Section> {
        run(lab, inputs)
    }

    /// The staging of the input's upload.
    fn host_bytes(_: &NoOptions, _: &Shared) -> usize {
        staging_bytes((WORDS, 1))
    }
}

/// Both kernels over [`WORDS`] words (a few blocks' worth and a partial block under
/// `--sanitizer`), checked and timed.
fn run(lab: &Lab, inputs: &Inputs) -> Result<Section> {
    let n = sanitizer::bytes(lab, 4 * WORDS) / 4;
    let (shared_blocks, register_blocks) = (n.div_ceil(THREADS as usize), sanitizer::grid(lab, THREADS).0);
    ensure_free("the reduction demo", f32_bytes(&[n, shared_blocks, register_blocks as usize]))?;
    let input = poisoned::<u32>(n)?;
    Staging::new(n)?.upload(&lab.gpu, &input, fill_strided_words)?;
    let mut partial = poisoned::<u32>(shared_blocks.max(register_blocks as usize))?;
    let staging = RefCell::new(Staging::new(partial.len())?);
    let (n32, bytes) = (n as u32, Work::global_bytes(4.0 * n as f64));
    let (shared_access, shared_bars) = tree_per_element(THREADS, f64::from(THREADS));
    let (register_access, _) = tree_per_element(THREADS, n as f64 / f64::from(register_blocks));
    let mut kernels = Vec::new();
    let run = KernelRun {
        launch: launches::sum_shared(shapes::sum_shared(n32), &input, &mut partial, n32),
        lesson: "every element through a shared-memory tree: stores, loads and two barriers a round",
        prediction: format!(
            "{shared_access:.2} shared accesses, {shared_bars:.3} barriers per element: shared memory, not DRAM, sets the rate"
        ),
        work: bytes,
        size: format!("{n} words"),
        reset: &|| poison(&partial),
    };
    let want = |b| shared_partial(b, n);
    let check = || Ok((check_staged(&lab.gpu, &mut staging.borrow_mut(), &partial, shared_blocks, want)?, "exact"));
    kernels.push(measure(lab, run, check)?);
    let blocks = register_blocks as usize;
    let run = KernelRun {
        launch: launches::sum_registers(shapes::sum_registers(register_blocks), &input, &mut partial, n32),
        lesson: "a running sum per thread in a register, one shared-memory tree per block at the end",
        prediction: format!("{register_access:.5} shared accesses per element: DRAM sets the rate"),
        work: bytes,
        size: format!("{n} words"),
        reset: &|| poison(&partial),
    };
    let want = |b| registers_partial(b, blocks, n);
    let check = || Ok((check_staged(&lab.gpu, &mut staging.borrow_mut(), &partial, blocks, want)?, "exact"));
    kernels.push(measure(lab, run, check)?);
    Ok(Section {
        name: "reduction".into(),
        title: format!("Registers against shared memory: a sum of {n} words"),
        lesson: "Registers are the only memory a thread reaches without an instruction of its own: a running sum kept there costs one add per element, one moved through shared memory a store, a load and a barrier.".into(),
        notes: vec![notes(&kernels, inputs)],
        kernels,
        ..Section::default()
    })
}

/// The note: `sum_registers`' rate as a multiple of `sum_shared`'s, and as a share of the memcpy
/// ceiling (which counts its reads and its writes).
fn notes(kernels: &[KernelRow], inputs: &Inputs) -> String {
    let [shared, registers] = [&kernels[0], &kernels[1]].map(|k| k.rate.value());
    let ceiling = inputs.memcpy.as_ref().and_then(|c| c.gbs());
    let share = ceiling.map_or(String::new(), |c| format!(", {:.0}% of the memcpy ceiling's {c:.0} GB/s", 100.0 * registers / c));
    format!("sum_registers reads {registers:.0} GB/s, {:.1}x sum_shared's {shared:.0} GB/s{share}", registers / shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_tree_costs_three_accesses_an_element_and_a_strided_sum_almost_none() {
        let (access, barriers) = tree_per_element(256, 256.0);
        assert_eq!((access, barriers), (766.0 / 256.0, 17.0 / 256.0));
        // 132 SMs of 8 blocks over the default input: 63 550 elements per block.
        let (access, _) = tree_per_element(256, WORDS as f64 / 1056.0);
        assert!((access - 766.0 / 63_550.06).abs() < 1e-6, "{access}");
    }

    #[test]
    fn the_partials_of_either_layout_add_up_to_the_whole_sum() {
        let n = 5 * THREADS as usize + 12;
        let whole = words_sum(0..n, n);
        let shared = (0..n.div_ceil(THREADS as usize)).fold(0u32, |s, b| s.wrapping_add(shared_partial(b, n)));
        let registers = (0..3).fold(0u32, |s, b| s.wrapping_add(registers_partial(b, 3, n)));
        assert_eq!((shared, registers), (whole, whole));
        // Block 1 of 3 (a stride of 768 words) holds words 256..512 and 1024..1280.
        let by_hand = words_sum(256..512, n).wrapping_add(words_sum(1024..1280, n));
        assert_eq!(registers_partial(1, 3, n), by_hand);
        assert_eq!(shared_partial(5, n), words_sum(1280..1292, n));
    }
}
