//! Checking device results against the CPU references.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

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

/// FNV-1a (64-bit offset basis and prime) over 32-bit words instead of bytes: a fingerprint of
/// a device buffer, equal for equal contents, that changes with any bit or any reordering.
/// Not cryptographic; it only has to tell two runs' outputs apart.
pub fn digest(words: impl IntoIterator<Item = u32>) -> u64 {
    words.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, w| (h ^ u64::from(w)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// [`digest`] of `f32` values by their bits.
pub fn digest_f32(values: &[f32]) -> u64 {
    digest(values.iter().map(|v| v.to_bits()))
}

/// Bit-exact comparison (a transpose or copy moves values, it never rounds).
pub fn exact_f32(got: &[f32], want: &[f32]) -> Check {
    let digest = digest_f32(got);
    if got.len() != want.len() {
        return length_mismatch(digest, got.len(), want.len());
    }
    Check::from_pairs(digest, got.iter().zip(want).enumerate().map(|(i, (g, w))| (i, g.to_bits(), w.to_bits())))
}

/// Exact comparison of 32-bit words against `want(i)`.
pub fn exact_u32(got: &[u32], want: impl Fn(usize) -> u32) -> Check {
    Check::from_pairs(digest(got.iter().copied()), got.iter().enumerate().map(|(i, &g)| (i, g, want(i))))
}

/// Bit-exact comparison of `got[g]` with `want(g)` at `samples` threads spread evenly over
/// `got` (every thread when there are fewer): for outputs whose reference is costly per element.
pub fn sampled_f32(got: &[f32], samples: usize, want: impl Fn(usize) -> f32) -> Check {
    let step = got.len().div_ceil(samples.max(1)).max(1);
    let picked: Vec<usize> = (0..got.len()).step_by(step).collect();
    let bits: Vec<u32> = picked.iter().map(|&g| got[g].to_bits()).collect();
    let mut check = exact_u32(&bits, |i| want(picked[i]).to_bits());
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

/// The precision a product was computed in, which sets the tolerance of its check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// FP32 FMAs: [`matmul_tolerance`].
    F32,
    /// TF32 tensor-core products, FP32 accumulation: [`matmul_tf32_tolerance`].
    Tf32,
}

impl Precision {
    /// The tolerance of one dot product of length `k` with `sum |a_i b_i| = abs_sum`.
    pub fn tolerance(self, k: usize, abs_sum: f64) -> f64 {
        match self {
            Precision::F32 => matmul_tolerance(k, abs_sum),
            Precision::Tf32 => matmul_tf32_tolerance(k, abs_sum),
        }
    }
}

/// Elements [`matmul_auto`] samples when the full check would cost more than
/// [`FULL_CHECK_MACS`] multiply-adds.
pub const SAMPLES: usize = 4096;
/// Largest `m * n * k` [`matmul_auto`] checks element by element.
pub const FULL_CHECK_MACS: usize = 1 << 28;

/// [`matmul`] with the lab's one rule for how much to check: every element up to
/// [`FULL_CHECK_MACS`] multiply-adds of reference work, else [`SAMPLES`] random dot products
/// (seed 5). Returns the check and what it compared.
pub fn matmul_auto(a: &[f32], b: &[f32], c: &[f32], (m, n, k): (usize, usize, usize)) -> (Check, &'static str) {
    matmul_auto_in(Precision::F32, a, b, c, (m, n, k))
}

/// [`matmul_auto`] with the tolerance of `precision`.
pub fn matmul_auto_in(
    precision: Precision,
    a: &[f32],
    b: &[f32],
    c: &[f32],
    (m, n, k): (usize, usize, usize),
) -> (Check, &'static str) {
    if m.saturating_mul(n).saturating_mul(k) <= FULL_CHECK_MACS {
        (matmul_in(precision, a, b, c, (m, n, k), usize::MAX, 5), "every element")
    } else {
        (matmul_in(precision, a, b, c, (m, n, k), SAMPLES, 5), "sampled dot products")
    }
}

/// Checks `C = A * B` (row-major, `m x n` from `m x k` and `k x n`) against the f64 reference:
/// every element when `m * n <= samples`, otherwise `samples` elements drawn with `seed`, each a
/// full dot product. NaN never passes.
pub fn matmul(a: &[f32], b: &[f32], c: &[f32], (m, n, k): (usize, usize, usize), samples: usize, seed: u64) -> Check {
    matmul_in(Precision::F32, a, b, c, (m, n, k), samples, seed)
}

/// [`matmul`] with the tolerance of `precision`.
pub fn matmul_in(
    precision: Precision,
    a: &[f32],
    b: &[f32],
    c: &[f32],
    (m, n, k): (usize, usize, usize),
    samples: usize,
    seed: u64,
) -> Check {
    let elements: Vec<usize> = if m * n <= samples {
        (0..m * n).collect()
    } else {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..samples).map(|_| rng.random_range(0..m * n)).collect()
    };
    let mut check = Check::new(digest_f32(c));
    for e in elements {
        let (want, abs) = reference::matmul_element(a, b, n, k, e / n, e % n);
        let got = c[e] as f64;
        check.checked += 1;
        let within = (got - want).abs() <= precision.tolerance(k, abs);
        // NaN fails: every comparison with NaN is false.
        if !within {
            check.mismatches += 1;
            check.first_bad.get_or_insert_with(|| (e, got.to_string(), want.to_string()));
        }
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn digests_tell_outputs_apart() {
        // FNV-1a of the empty input is the offset basis.
        assert_eq!(digest([]), 0xcbf2_9ce4_8422_2325);
        let a = [1.0f32, 2.0, 3.0];
        assert_eq!(digest_f32(&a), digest_f32(&[1.0, 2.0, 3.0]));
        assert_ne!(digest_f32(&a), digest_f32(&[1.0, 3.0, 2.0]), "order matters");
        assert_ne!(digest_f32(&a), digest_f32(&[1.0, 2.0, f32::from_bits(3.0f32.to_bits() ^ 1)]), "one bit");
        assert_ne!(digest_f32(&[0.0]), digest_f32(&[-0.0]));
        assert_ne!(digest([0]), digest([0, 0]), "length matters");
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
        // Sampling checks exactly `samples` elements.
        assert_eq!(matmul(&a, &b, &c, (m, n, k), 100, 9).checked, 100);
    }
}
