//! Checking device results against the CPU references, on every core: a check runs over blocks
//! of [`DIGEST_BLOCK`] words in parallel, and a large output is checked chunk by chunk as it
//! arrives from the device ([`Streamed`]), so no copy of the whole output or of the whole
//! reference is ever held.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rayon::prelude::*;

use crate::reference;
use serde::{Deserialize, Serialize};

/// Outcome of one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Elements compared.
    pub checked: usize,
    /// Elements that did not match.
    pub mismatches: usize,
    /// The first mismatch: index, device value, expected value (as text).
    pub first_bad: Option<(usize, String, String)>,
    /// [`digest`] of the whole device output, so that two runs can be compared at a glance.
    #[serde(default)]
    pub digest: u64,
}

impl Check {
    /// Whether every compared element matched (and at least one was compared).
    pub fn passed(&self) -> bool {
        self.mismatches == 0 && self.checked > 0
    }

    /// One-line summary with the output's digest, e.g. `"ok (67108864 exact), output
    /// 1f2e3d4c5b6a7988"` or `"FAIL 3/100 (first at 7: 1 vs 2), output ..."`.
    pub fn summary(&self, what: &str) -> String {
        let verdict = match &self.first_bad {
            None if self.checked > 0 => format!("ok ({} {what})", self.checked),
            None => "FAIL (nothing checked)".into(),
            Some((i, got, want)) => {
                format!("FAIL {}/{} (first at {i}: {got} vs {want})", self.mismatches, self.checked)
            }
        };
        format!("{verdict}, output {:016x}", self.digest)
    }

    fn new(digest: u64) -> Check {
        Check { checked: 0, mismatches: 0, first_bad: None, digest }
    }

    fn from_pairs<T: PartialEq + std::fmt::Display>(digest: u64, pairs: impl Iterator<Item = (usize, T, T)>) -> Check {
        let mut check = Check::new(digest);
        for (i, got, want) in pairs {
            check.checked += 1;
            if got != want {
                check.mismatches += 1;
                check.first_bad.get_or_insert_with(|| (i, got.to_string(), want.to_string()));
            }
        }
        check
    }
}

/// FNV-1a 64-bit offset basis and prime.
const FNV_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(FNV_PRIME)
}

/// Words per digest block (256 KiB): [`digest`] hashes each block on its own, so blocks hash in
/// parallel, and a chunked check ([`Streamed`]) whose chunks are whole blocks gets the same
/// digest as a check of the whole buffer.
pub const DIGEST_BLOCK: usize = 1 << 16;

/// A fingerprint of a device buffer, equal for equal contents, that changes with any bit or any
/// reordering: FNV-1a (64-bit) over 32-bit words within each block of [`DIGEST_BLOCK`] words,
/// then FNV-1a over the blocks' hashes. Not cryptographic; it only has to tell two runs'
/// outputs apart.
pub fn digest(words: impl IntoIterator<Item = u32>) -> u64 {
    let (mut outer, mut block, mut n) = (FNV_BASIS, FNV_BASIS, 0usize);
    for w in words {
        block = fnv(block, u64::from(w));
        n += 1;
        if n == DIGEST_BLOCK {
            (outer, block, n) = (fnv(outer, block), FNV_BASIS, 0);
        }
    }
    if n > 0 { fnv(outer, block) } else { outer }
}

/// [`digest`] of `f32` values by their bits, on every core.
pub fn digest_f32(values: &[f32]) -> u64 {
    digest_blocks(FNV_BASIS, values)
}

/// `outer` (a digest's running hash over blocks) after the blocks of `values`, each hashed on a
/// core of its own: [`digest_f32`] of a buffer fed in chunks of whole blocks.
fn digest_blocks(outer: u64, values: &[f32]) -> u64 {
    let blocks: Vec<u64> = bytemuck::cast_slice::<f32, u32>(values)
        .par_chunks(DIGEST_BLOCK)
        .map(|b| b.iter().fold(FNV_BASIS, |h, &w| fnv(h, u64::from(w))))
        .collect();
    blocks.into_iter().fold(outer, fnv)
}

/// An exact check of a large output fed chunk by chunk in order (as it is copied back from the
/// device), each chunk checked on every core against `want(i)` at the output index `i`. Every
/// chunk but the last must be a whole number of [`DIGEST_BLOCK`] words, so the digest is the
/// whole output's.
#[derive(Debug, Clone)]
pub struct Streamed {
    check: Check,
    /// Words fed so far.
    offset: usize,
    /// A chunk shorter than a whole number of blocks was fed: it must be the last.
    ended: bool,
}

/// What one block of a chunk found: its hash, mismatches, and its first mismatch.
type BlockResult = (u64, usize, Option<(usize, u32, u32)>);

impl Streamed {
    /// An empty check (fails until a chunk is fed: nothing checked).
    pub fn new() -> Streamed {
        Streamed { check: Check::new(FNV_BASIS), offset: 0, ended: false }
    }

    /// Compares `got`, output words `offset..offset + got.len()`, with `want(i)`.
    ///
    /// # Panics
    /// When a chunk follows one that was not a whole number of blocks (a bug in the caller).
    pub fn chunk(&mut self, got: &[u32], want: impl Fn(usize) -> u32 + Sync) {
        assert!(!self.ended, "only the last chunk may end inside a digest block");
        let base = self.offset;
        let blocks: Vec<BlockResult> = got
            .par_chunks(DIGEST_BLOCK)
            .enumerate()
            .map(|(b, block)| {
                let start = base + b * DIGEST_BLOCK;
                let (mut h, mut bad, mut first) = (FNV_BASIS, 0, None);
                for (j, &g) in block.iter().enumerate() {
                    h = fnv(h, u64::from(g));
                    let w = want(start + j);
                    if g != w {
                        bad += 1;
                        first.get_or_insert((start + j, g, w));
                    }
                }
                (h, bad, first)
            })
            .collect();
        for (h, bad, first) in blocks {
            self.check.digest = fnv(self.check.digest, h);
            self.check.mismatches += bad;
            if let (None, Some((i, g, w))) = (&self.check.first_bad, first) {
                self.check.first_bad = Some((i, g.to_string(), w.to_string()));
            }
        }
        self.check.checked += got.len();
        self.offset += got.len();
        self.ended = !got.len().is_multiple_of(DIGEST_BLOCK);
    }

    /// [`Streamed::chunk`] for `f32` values, compared by their bits (bit-exact: `-0` is not
    /// `+0`, a NaN matches only the same NaN).
    pub fn chunk_f32(&mut self, got: &[f32], want: impl Fn(usize) -> f32 + Sync) {
        self.chunk(bytemuck::cast_slice(got), |i| want(i).to_bits());
    }

    /// The check of everything fed.
    pub fn finish(self) -> Check {
        self.check
    }
}

impl Default for Streamed {
    fn default() -> Self {
        Streamed::new()
    }
}

/// Elements of `got`, output elements `offset..offset + got.len()`, whose bits differ from
/// `want(i)`, on every core: [`Streamed::chunk_f32`]'s comparison without its digest, for an
/// output that must equal one already checked in full (`lab::recheck_exact_staged`).
pub fn mismatches_f32(got: &[f32], offset: usize, want: impl Fn(usize) -> f32 + Sync) -> usize {
    got.par_chunks(DIGEST_BLOCK)
        .enumerate()
        .map(|(b, block)| {
            let start = offset + b * DIGEST_BLOCK;
            block.iter().enumerate().filter(|&(j, g)| g.to_bits() != want(start + j).to_bits()).count()
        })
        .sum()
}

/// Bit-exact comparison (a transpose or copy moves values, it never rounds).
pub fn exact_f32(got: &[f32], want: &[f32]) -> Check {
    if got.len() != want.len() {
        return length_mismatch(digest_f32(got), got.len(), want.len());
    }
    let mut check = Streamed::new();
    check.chunk_f32(got, |i| want[i]);
    check.finish()
}

/// Exact comparison of 32-bit words against `want(i)`, on every core.
pub fn exact_u32(got: &[u32], want: impl Fn(usize) -> u32 + Sync) -> Check {
    let mut check = Streamed::new();
    check.chunk(got, want);
    check.finish()
}

/// Bit-exact comparison of `got[g]` with `want(g)` at `samples` threads spread evenly over
/// `got` (every thread when there are fewer): for outputs whose reference is costly per element.
pub fn sampled_f32(got: &[f32], samples: usize, want: impl Fn(usize) -> f32) -> Check {
    let step = got.len().div_ceil(samples.max(1)).max(1);
    let picked: Vec<usize> = (0..got.len()).step_by(step).collect();
    let bits: Vec<u32> = picked.iter().map(|&g| got[g].to_bits()).collect();
    let wanted: Vec<u32> = picked.iter().map(|&g| want(g).to_bits()).collect();
    let mut check = exact_u32(&bits, |i| wanted[i]);
    check.digest = digest_f32(got);
    check
}

/// Exact comparison of one value (a count, a checksum); the digest is the value's hash.
pub fn exact_one<T: PartialEq + std::fmt::Display>(got: T, want: T) -> Check {
    let digest = digest(got.to_string().bytes().map(u32::from));
    Check::from_pairs(digest, std::iter::once((0, got, want)))
}

fn length_mismatch(digest: u64, got: usize, want: usize) -> Check {
    Check {
        checked: want,
        mismatches: want,
        first_bad: Some((0, format!("{got} elements"), format!("{want} elements"))),
        digest,
    }
}

/// Largest error accepted for one f32 dot product of length `k`: `k * eps * sum |a_i b_i|`
/// (`eps = 2^-23`, twice the unit roundoff; a standard forward bound for recursive summation,
/// Higham, "Accuracy and Stability of Numerical Algorithms", section 3.1), plus a floor for
/// exact zeros.
pub fn matmul_tolerance(k: usize, abs_sum: f64) -> f64 {
    k as f64 * f32::EPSILON as f64 * abs_sum + f64::from(f32::MIN_POSITIVE)
}

/// Largest error accepted for one dot product of length `k` computed on tensor cores in TF32
/// with FP32 accumulation (rung 9): `(2^-9 + 2^-20 + 2 k 2^-23) * sum |a_i b_i|`, plus the same
/// floor. TF32 keeps 10 of f32's 23 mantissa bits, and `mma.sync` drops the rest of each
/// operand (truncation, PTX ISA "Matrix multiply-accumulate operation using mma": the tensor
/// core reads only the TF32 bits), so each operand is off by a factor `1 + d`, `|d| < 2^-10`,
/// and each product by less than `2^-9 + 2^-20` of itself; the FP32 accumulation adds at most
/// twice [`matmul_tolerance`]'s bound, as the PTX ISA leaves the order and rounding of the
/// tensor core's internal additions to the implementation. At the odd check sizes (`k` of 204
/// and 263) the bound is below one `|a_i b_i|` on average, so a single misplaced term fails.
pub fn matmul_tf32_tolerance(k: usize, abs_sum: f64) -> f64 {
    let products = (-9f64).exp2() + (-20f64).exp2();
    (products + 2.0 * k as f64 * f64::from(f32::EPSILON)) * abs_sum + f64::from(f32::MIN_POSITIVE)
}

/// Largest error accepted for one dot product of length `k` computed on tensor cores from BF16
/// inputs with FP32 accumulation and rounded to BF16 (the tensor ladder), whose exact value is
/// `want`: `e + 2^-8 (|want| + e)`, `e = 2 k 2^-23 sum |a_i b_i|`, plus the floor. A product of
/// two BF16 values (8 significant bits each) is exact in FP32, so only the sums err: at most
/// twice [`matmul_tolerance`]'s bound, as for TF32 (the PTX ISA leaves the order of the tensor
/// core's additions to the implementation); the final rounding to BF16 adds at most its unit
/// roundoff, `2^-8`, of the FP32 sum.
pub fn matmul_bf16_tolerance(k: usize, abs_sum: f64, want: f64) -> f64 {
    let sums = 2.0 * k as f64 * f64::from(f32::EPSILON) * abs_sum;
    sums + (-8f64).exp2() * (want.abs() + sums) + f64::from(f32::MIN_POSITIVE)
}

/// The tolerance of an FP32 product split `splits` ways along `k` (the split-K SGEMM): each
/// split accumulates at most `per_split` of the `k` products by FMA, one rounding each, and the
/// `splits` partial sums are then added in split order, `splits - 1` roundings more. With `u =
/// 2^-24` the unit roundoff, the forward bound for recursive summation (Higham, "Accuracy and
/// Stability of Numerical Algorithms", section 3.1) gives for each output `|err| <= (p + s - 1)
/// u sum |a_i b_i| + O(u^2)`, `p = min(k, per_split)`, `s = splits`: every product passes
/// through at most `p` roundings in its split and `s - 1` in the reduce. As
/// [`matmul_tolerance`], the lab allows twice that (`eps = 2^-23` per rounding), plus the floor.
/// Never looser than [`matmul_tolerance`]: every split has at least one of the products, so
/// `s <= k` and `p + s - 1 <= 2k - 1`; at `4096 x 128 x 4096` in 8 splits of 512 it is
/// `519 / 4096` of it.
pub fn split_k_tolerance(k: usize, (per_split, splits): (usize, usize), abs_sum: f64) -> f64 {
    let roundings = k.min(per_split) + splits.saturating_sub(1);
    roundings as f64 * f64::from(f32::EPSILON) * abs_sum + f64::from(f32::MIN_POSITIVE)
}

/// The precision a product was computed in, which sets the tolerance of its check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// FP32 FMAs: [`matmul_tolerance`].
    F32,
    /// TF32 tensor-core products, FP32 accumulation: [`matmul_tf32_tolerance`].
    Tf32,
    /// FP32 FMAs over `k` split into `splits` ranges of at most `per_split` products, the
    /// partial sums added in split order: [`split_k_tolerance`].
    SplitK {
        /// Products each split accumulates, at most.
        per_split: u32,
        /// Splits.
        splits: u32,
    },
    /// BF16 tensor-core products, FP32 accumulation, a BF16 result: [`matmul_bf16_tolerance`].
    Bf16,
}

impl Precision {
    /// The tolerance of one dot product of length `k` with `sum |a_i b_i| = abs_sum` and exact
    /// value `want`.
    pub fn tolerance(self, k: usize, abs_sum: f64, want: f64) -> f64 {
        match self {
            Precision::F32 => matmul_tolerance(k, abs_sum),
            Precision::Tf32 => matmul_tf32_tolerance(k, abs_sum),
            Precision::SplitK { per_split, splits } => {
                split_k_tolerance(k, (per_split as usize, splits as usize), abs_sum)
            }
            Precision::Bf16 => matmul_bf16_tolerance(k, abs_sum, want),
        }
    }
}

/// Elements [`matmul_auto`] samples when the full check would cost more than
/// [`FULL_CHECK_MACS`] multiply-adds: a grid of 128 rows x 128 columns.
pub const SAMPLES: usize = 1 << 14;
/// Largest `m * n * k` [`matmul_auto`] checks element by element.
pub const FULL_CHECK_MACS: usize = 1 << 28;

/// The lab's one rule for how much of a product to check: every element up to
/// [`FULL_CHECK_MACS`] multiply-adds of reference work, else [`SAMPLES`] dot products. Returns
/// the samples for [`matmul`] and what the check compares.
pub fn matmul_samples((m, n, k): (usize, usize, usize)) -> (usize, &'static str) {
    if m.saturating_mul(n).saturating_mul(k) <= FULL_CHECK_MACS {
        (usize::MAX, "every element")
    } else {
        (SAMPLES, "sampled dot products")
    }
}

/// Seed of the rows and columns [`matmul_samples`]' sampled checks draw.
pub const SAMPLE_SEED: u64 = 5;

/// How many rows and columns of an `m x n` result a check of `samples` dot products compares
/// ([`matmul`]): all of both when `m n <= samples`, else `r = min(m, isqrt(samples))` rows and
/// `min(n, samples / r)` columns (at least one of each).
pub fn sample_grid((m, n): (usize, usize), samples: usize) -> (usize, usize) {
    if m.saturating_mul(n) <= samples {
        return (m, n);
    }
    let r = m.min(samples.isqrt()).max(1);
    (r, n.min((samples / r).max(1)))
}

/// [`matmul`] with the lab's one rule for how much to check ([`matmul_samples`]; the grid of
/// rows and columns drawn with [`SAMPLE_SEED`]). Returns the check and what it compared.
pub fn matmul_auto(a: &[f32], b: &[f32], c: &[f32], (m, n, k): (usize, usize, usize)) -> (Check, &'static str) {
    matmul_auto_in(Precision::F32, a, b, c, (m, n, k))
}

/// [`matmul_auto`] with the tolerance of `precision`.
pub fn matmul_auto_in(
    precision: Precision,
    a: &[f32],
    b: &[f32],
    c: &[f32],
    size: (usize, usize, usize),
) -> (Check, &'static str) {
    let (samples, what) = matmul_samples(size);
    (matmul_in(precision, a, b, c, size, samples, SAMPLE_SEED), what)
}

/// Checks `C = A * B` (row-major, `m x n` from `m x k` and `k x n`) against the f64 reference:
/// every element when `m * n <= samples`, otherwise the elements where `r = min(m, isqrt(samples))`
/// rows and `samples / r` columns drawn with `seed` cross, each a full dot product. A wrong tile
/// of `T x T` elements is met with probability about `(1 - (1 - T/m)^r) (1 - (1 - T/n)^c)` (0.75
/// for 128-wide tiles of an 8192^2 result, against 0.63 for as many elements drawn one by one).
/// NaN never passes.
pub fn matmul(a: &[f32], b: &[f32], c: &[f32], (m, n, k): (usize, usize, usize), samples: usize, seed: u64) -> Check {
    matmul_in(Precision::F32, a, b, c, (m, n, k), samples, seed)
}

/// [`matmul`] with the tolerance of `precision`.
pub fn matmul_in(
    precision: Precision,
    a: &[f32],
    b: &[f32],
    c: &[f32],
    size: (usize, usize, usize),
    samples: usize,
    seed: u64,
) -> Check {
    let mut check = MatmulStreamed::new(precision, size, (samples, seed), |i| a[i], |i| b[i]);
    check.chunk(c);
    check.finish()
}

/// [`matmul`]'s check of a `C` fed chunk by chunk in order (as it comes back through pinned
/// staging), with the elements of `A` and `B` from functions of their row-major index (a seeded
/// generator's, so no host copy of either is held): only the chosen rows of `A` and columns of
/// `B` are kept, `k` floats each (8 MiB for the 128 + 128 of a sampled 8192^3 check; all of
/// both for a full check). Every chunk but the last must be a whole number of [`DIGEST_BLOCK`]
/// words, so the digest is the whole output's.
pub struct MatmulStreamed {
    precision: Precision,
    /// `(n, k)`.
    nk: (usize, usize),
    /// The rows checked, ascending, and theirs of `A`, `k` floats each.
    rows: Vec<usize>,
    a_rows: Vec<f32>,
    /// The columns checked, ascending, and theirs of `B`, `k` floats each.
    cols: Vec<usize>,
    b_cols: Vec<f32>,
    check: Check,
    /// Elements of `C` fed so far.
    offset: usize,
    /// A chunk shorter than a whole number of blocks was fed: it must be the last.
    ended: bool,
}

impl MatmulStreamed {
    /// The check of an `m x n x k` product at `(samples, seed)` ([`matmul`]), `a(i)` and `b(i)`
    /// element `i` of `A` and of `B`.
    pub fn new(
        precision: Precision,
        (m, n, k): (usize, usize, usize),
        (samples, seed): (usize, u64),
        a: impl Fn(usize) -> f32 + Sync,
        b: impl Fn(usize) -> f32 + Sync,
    ) -> MatmulStreamed {
        let (r, c) = sample_grid((m, n), samples);
        let (rows, cols): (Vec<usize>, Vec<usize>) = if (r, c) == (m, n) {
            ((0..m).collect(), (0..n).collect())
        } else {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut pick = |len: usize, count: usize| {
                let mut picked = rand::seq::index::sample(&mut rng, len, count).into_vec();
                picked.sort_unstable();
                picked
            };
            let rows = pick(m, r);
            (rows, pick(n, c))
        };
        // Each chosen column of `B` gathered once (`k` strided elements), so every dot product
        // then reads contiguous memory.
        let a_rows = rows.par_iter().flat_map_iter(|&i| (0..k).map(|p| a(i * k + p)).collect::<Vec<_>>()).collect();
        let b_cols = cols.par_iter().flat_map_iter(|&j| (0..k).map(|p| b(p * n + j)).collect::<Vec<_>>()).collect();
        MatmulStreamed {
            precision,
            nk: (n, k),
            rows,
            a_rows,
            cols,
            b_cols,
            check: Check::new(FNV_BASIS),
            offset: 0,
            ended: false,
        }
    }

    /// Compares the chosen elements among `got`, elements `offset..offset + got.len()` of `C`
    /// (rows on every core), and adds `got` to the digest.
    ///
    /// # Panics
    /// When a chunk follows one that was not a whole number of blocks (a bug in the caller).
    pub fn chunk(&mut self, got: &[f32]) {
        assert!(!self.ended, "only the last chunk may end inside a digest block");
        let ((n, k), (start, end)) = (self.nk, (self.offset, self.offset + got.len()));
        // The chosen rows with an element in this chunk.
        let first = self.rows.partition_point(|&i| (i + 1) * n <= start);
        let last = self.rows.partition_point(|&i| i * n < end);
        let (cols, b_cols, precision) = (&self.cols, &self.b_cols, self.precision);
        // Verdicts in row-major order, so the first mismatch is the one of lowest index.
        let verdicts: Vec<(usize, f64, f64, bool)> = (first..last)
            .into_par_iter()
            .flat_map_iter(|r| {
                let (i, row) = (self.rows[r], &self.a_rows[r * k..(r + 1) * k]);
                let inside = cols.iter().enumerate().filter(move |&(_, &j)| (start..end).contains(&(i * n + j)));
                inside
                    .map(move |(c, &j)| {
                        let column = &b_cols[c * k..(c + 1) * k];
                        let (want, abs) = reference::dot(row.iter().copied(), column.iter().copied());
                        let got = got[i * n + j - start] as f64;
                        // NaN fails: every comparison with NaN is false.
                        (i * n + j, got, want, (got - want).abs() <= precision.tolerance(k, abs, want))
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        for (e, got, want, within) in verdicts {
            self.check.checked += 1;
            if !within {
                self.check.mismatches += 1;
                self.check.first_bad.get_or_insert_with(|| (e, got.to_string(), want.to_string()));
            }
        }
        self.check.digest = digest_blocks(self.check.digest, got);
        self.offset = end;
        self.ended = !got.len().is_multiple_of(DIGEST_BLOCK);
    }

    /// The check of everything fed.
    pub fn finish(self) -> Check {
        self.check
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One output of a split-K product as the kernels compute it: FMAs in `k` order within each
    /// split of `per` products, then the partial sums added in split order.
    fn split_k_dot(a: &[f32], b: &[f32], per: usize) -> f32 {
        let partials =
            a.chunks(per).zip(b.chunks(per)).map(|(a, b)| a.iter().zip(b).fold(0.0f32, |s, (x, y)| x.mul_add(*y, s)));
        partials.reduce(|s, p| s + p).unwrap_or(0.0)
    }

    #[test]
    fn the_split_k_bound_holds_for_the_kernels_order_and_is_tighter_than_the_fp32_one() {
        let k = 4096;
        let a: Vec<f32> = (0..k).map(|i| crate::reference::input_f32(21, i)).collect();
        let b: Vec<f32> = (0..k).map(|i| crate::reference::input_f32(22, i)).collect();
        let exact: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
        let abs_sum: f64 = a.iter().zip(&b).map(|(x, y)| (f64::from(*x) * f64::from(*y)).abs()).sum();
        for (per, splits) in [(4096, 1), (512, 8), (64, 64), (1, 4096)] {
            let got = f64::from(split_k_dot(&a, &b, per));
            let tol = split_k_tolerance(k, (per, splits), abs_sum);
            assert!((got - exact).abs() <= tol, "{per} x {splits}: {got} vs {exact}, tolerance {tol}");
            assert!(tol <= matmul_tolerance(k, abs_sum), "{per} x {splits}");
            let tolerance =
                Precision::SplitK { per_split: per as u32, splits: splits as u32 }.tolerance(k, abs_sum, exact);
            assert_eq!(tolerance, tol);
        }
        // 8 splits of 512: 519 roundings where the FP32 rule allows 4096.
        let ratio = (split_k_tolerance(k, (512, 8), 1.0) - f64::from(f32::MIN_POSITIVE))
            / (matmul_tolerance(k, 1.0) - f64::from(f32::MIN_POSITIVE));
        assert!((ratio - 519.0 / 4096.0).abs() < 1e-12, "{ratio}");
        // A split lost (its partial sum never added) is far outside the bound.
        let lost: f64 = f64::from(split_k_dot(&a[512..], &b[512..], 512));
        assert!((lost - exact).abs() > split_k_tolerance(k, (512, 8), abs_sum));
    }

    #[test]
    fn exact_checks_count_and_locate_mismatches() {
        let c = exact_f32(&[1.0, 2.0, 3.0], &[1.0, 2.5, 4.0]);
        assert_eq!((c.checked, c.mismatches), (3, 2));
        assert_eq!(c.first_bad, Some((1, "1073741824".into(), "1075838976".into())));
        assert!(!c.passed());
        assert!(exact_f32(&[f32::NAN], &[f32::NAN]).passed(), "same bits pass");
        assert!(!exact_f32(&[0.0], &[-0.0]).passed(), "bit-exact: -0 is not +0");
        assert!(!exact_f32(&[1.0], &[1.0, 2.0]).passed());
        assert!(exact_u32(&[0, 2, 4], |i| 2 * i as u32).passed());
        assert!(exact_one(7u64, 7).passed());
        let got = [1.0f32, 2.0, 3.0, 4.0];
        assert!(sampled_f32(&got, 2, |g| got[g]).passed());
        assert_eq!(sampled_f32(&got, 2, |g| got[g]).checked, 2);
        assert!(!sampled_f32(&got, 4, |g| if g == 3 { 5.0 } else { got[g] }).passed());
        assert_eq!(exact_one(6u64, 7).first_bad, Some((0, "6".into(), "7".into())));
        assert!(!Check::new(0).passed());
    }

    #[test]
    fn summaries_carry_the_output_digest() {
        let c = exact_u32(&[0, 2, 4], |i| 2 * i as u32);
        assert_eq!(c.digest, digest([0, 2, 4]));
        assert_eq!(c.summary("exact"), format!("ok (3 exact), output {:016x}", digest([0, 2, 4])));
        let bad = exact_f32(&[1.0, 2.0], &[1.0, 3.0]);
        assert!(bad.summary("exact").starts_with("FAIL 1/2 (first at 1: 1073741824 vs 1077936128), output "));
        assert_eq!(Check::new(0).summary("x"), "FAIL (nothing checked), output 0000000000000000");
    }

    #[test]
    fn a_chunked_check_finds_a_wrong_element_anywhere_with_its_index() {
        // Three blocks and a bit, fed in chunks of two blocks then the rest.
        let n = 3 * DIGEST_BLOCK + 123;
        let want = |i: usize| (i as u32).wrapping_mul(2_654_435_761);
        let good: Vec<u32> = (0..n).map(want).collect();
        let chunked = |got: &[u32]| {
            let mut check = Streamed::new();
            for part in got.chunks(2 * DIGEST_BLOCK) {
                check.chunk(part, want);
            }
            check.finish()
        };
        let ok = chunked(&good);
        assert!(ok.passed());
        assert_eq!(ok.checked, n);
        assert_eq!(ok.digest, digest(good.iter().copied()), "chunked digest is the whole buffer's");
        assert_eq!(ok, exact_u32(&good, want));
        for bad_at in [0, 1, DIGEST_BLOCK - 1, DIGEST_BLOCK, 2 * DIGEST_BLOCK + 7, n - 1] {
            let mut got = good.clone();
            got[bad_at] ^= 1 << 31;
            let c = chunked(&got);
            assert_eq!((c.checked, c.mismatches), (n, 1), "wrong element at {bad_at}");
            assert_eq!(c.first_bad, Some((bad_at, got[bad_at].to_string(), want(bad_at).to_string())));
            assert_ne!(c.digest, ok.digest);
        }
        // Two wrong elements in different chunks: both counted, the first one reported.
        let mut got = good.clone();
        got[3 * DIGEST_BLOCK + 5] = 0;
        got[DIGEST_BLOCK + 9] = 0;
        let c = chunked(&got);
        assert_eq!((c.mismatches, c.first_bad.unwrap().0), (2, DIGEST_BLOCK + 9));
        assert!(!Streamed::new().finish().passed(), "nothing fed, nothing checked");
    }

    #[test]
    fn mismatches_compare_bits_from_the_offset() {
        let n = 2 * DIGEST_BLOCK + 5;
        let want = |i: usize| i as f32;
        let mut got: Vec<f32> = (10..10 + n).map(|i| i as f32).collect();
        assert_eq!(mismatches_f32(&got, 10, want), 0);
        assert_eq!(mismatches_f32(&got, 0, want), n, "every element is off by the offset");
        got[DIGEST_BLOCK + 3] = -got[DIGEST_BLOCK + 3];
        got[n - 1] = f32::NAN;
        assert_eq!(mismatches_f32(&got, 10, want), 2);
        assert_eq!(mismatches_f32(&[-0.0], 0, want), 1, "bit-exact: -0 is not +0");
    }

    #[test]
    #[should_panic(expected = "only the last chunk")]
    fn a_partial_block_must_be_the_last_chunk() {
        let mut check = Streamed::new();
        check.chunk(&[1, 2, 3], |_| 0);
        check.chunk(&[4], |_| 0);
    }

    #[test]
    fn f32_chunks_compare_bits() {
        let mut check = Streamed::new();
        check.chunk_f32(&[1.0, -0.0, f32::NAN], |i| [1.0, 0.0, f32::NAN][i]);
        let c = check.finish();
        assert_eq!((c.mismatches, c.first_bad.map(|b| b.0)), (1, Some(1)));
        assert_eq!(c.digest, digest_f32(&[1.0, -0.0, f32::NAN]));
    }

    #[test]
    fn digests_tell_outputs_apart() {
        // FNV-1a of the empty input is the offset basis.
        assert_eq!(digest([]), 0xcbf2_9ce4_8422_2325);
        let a = [1.0f32, 2.0, 3.0];
        assert_eq!(digest_f32(&a), digest_f32(&[1.0, 2.0, 3.0]));
        assert_ne!(digest_f32(&a), digest_f32(&[1.0, 3.0, 2.0]), "order matters");
        assert_ne!(digest_f32(&a), digest_f32(&[1.0, 2.0, f32::from_bits(3.0f32.to_bits() ^ 1)]), "one bit");
        assert_ne!(digest_f32(&[0.0]), digest_f32(&[-0.0]));
        assert_ne!(digest([0]), digest([0, 0]), "length matters");
        let long: Vec<f32> = (0..2 * DIGEST_BLOCK + 3).map(|i| i as f32).collect();
        assert_eq!(digest_f32(&long), digest(long.iter().map(|v| v.to_bits())), "parallel and serial agree");
    }

    #[test]
    fn matmul_check_accepts_f32_rounding_and_rejects_real_errors() {
        let (m, n, k) = (33, 31, 1000);
        let a = reference::random_f32(m * k, 3);
        let b = reference::random_f32(k * n, 4);
        // An f32 accumulation, as the GPU does it.
        let mut c: Vec<f32> =
            (0..m * n).map(|e| (0..k).fold(0.0f32, |s, i| a[(e / n) * k + i].mul_add(b[i * n + e % n], s))).collect();
        assert!(matmul(&a, &b, &c, (m, n, k), usize::MAX, 0).passed());
        c[17] += 0.5;
        let bad = matmul(&a, &b, &c, (m, n, k), usize::MAX, 0);
        assert_eq!((bad.mismatches, bad.first_bad.as_ref().unwrap().0), (1, 17));
        c[17] = f32::NAN;
        assert!(!matmul(&a, &b, &c, (m, n, k), usize::MAX, 0).passed());
        // Sampling checks a grid of exactly `samples` elements: 10 rows x 10 columns.
        assert_eq!(matmul(&a, &b, &c, (m, n, k), 100, 9).checked, 100);
        // 132 samples: 11 distinct rows x 12 distinct columns, in row-major order.
        let good: Vec<f32> =
            (0..m * n).map(|e| (0..k).fold(0.0f32, |s, i| a[(e / n) * k + i].mul_add(b[i * n + e % n], s))).collect();
        assert!(matmul(&a, &b, &good, (m, n, k), 132, 9).passed());
        let shifted: Vec<f32> = good.iter().map(|v| v + 0.5).collect();
        let grid = matmul(&a, &b, &shifted, (m, n, k), 132, 9);
        assert_eq!((grid.checked, grid.mismatches), (132, 132));
        let first = grid.first_bad.unwrap().0;
        assert_eq!(first, matmul(&a, &b, &shifted, (m, n, k), 132, 9).first_bad.unwrap().0, "same seed, same grid");
        assert!(first < n * (m - 10), "the lowest of 11 distinct rows");
    }

    #[test]
    fn a_matmul_check_fed_in_chunks_from_generators_is_the_whole_ones() {
        // C of 300 x 700 (three digest blocks and a bit) fed in chunks of one block, A and B
        // from the seeded generator: the same check as over whole host arrays, full and sampled.
        let (m, n, k) = (300, 700, 64);
        let (a, b) = (reference::random_f32(m * k, 3), reference::random_f32(k * n, 4));
        let mut c: Vec<f32> =
            (0..m * n).map(|e| (0..k).fold(0.0f32, |s, i| a[(e / n) * k + i].mul_add(b[i * n + e % n], s))).collect();
        c[DIGEST_BLOCK + 5] = f32::NAN;
        c[3 * DIGEST_BLOCK + 1] += 1.0;
        let chunked = |samples: usize| {
            let gen_a = |i| reference::input_f32(3, i);
            let mut check =
                MatmulStreamed::new(Precision::F32, (m, n, k), (samples, 9), gen_a, |i| reference::input_f32(4, i));
            c.chunks(DIGEST_BLOCK).for_each(|chunk| check.chunk(chunk));
            check.finish()
        };
        let whole = matmul(&a, &b, &c, (m, n, k), usize::MAX, 9);
        assert_eq!(
            (whole.checked, whole.mismatches, whole.first_bad.as_ref().unwrap().0),
            (m * n, 2, DIGEST_BLOCK + 5)
        );
        assert_eq!(chunked(usize::MAX), whole);
        assert_eq!(whole.digest, digest_f32(&c));
        let sampled = matmul(&a, &b, &c, (m, n, k), 4096, 9);
        assert_eq!(sampled.checked, 64 * 64);
        assert_eq!(chunked(4096), sampled);
    }
}
