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
}

impl Check {
    /// Whether every compared element matched (and at least one was compared).
    pub fn passed(&self) -> bool {
        self.mismatches == 0 && self.checked > 0
    }

    /// One-line summary, e.g. `"ok (67108864 exact)"` or `"FAIL 3/100 (first at 7: 1 vs 2)"`.
    pub fn summary(&self, what: &str) -> String {
        match &self.first_bad {
            None if self.checked > 0 => format!("ok ({} {what})", self.checked),
            None => "FAIL (nothing checked)".into(),
            Some((i, got, want)) => {
                format!("FAIL {}/{} (first at {i}: {got} vs {want})", self.mismatches, self.checked)
            }
        }
    }

    fn from_pairs<T: PartialEq + std::fmt::Display>(pairs: impl Iterator<Item = (usize, T, T)>) -> Check {
        let mut check = Check { checked: 0, mismatches: 0, first_bad: None };
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

/// Bit-exact comparison (a transpose or copy moves values, it never rounds).
pub fn exact_f32(got: &[f32], want: &[f32]) -> Check {
    if got.len() != want.len() {
        return length_mismatch(got.len(), want.len());
    }
    Check::from_pairs(got.iter().zip(want).enumerate().map(|(i, (g, w))| (i, g.to_bits(), w.to_bits())))
}

/// Exact comparison of 32-bit words against `want(i)`.
pub fn exact_u32(got: &[u32], want: impl Fn(usize) -> u32) -> Check {
    Check::from_pairs(got.iter().enumerate().map(|(i, &g)| (i, g, want(i))))
}

fn length_mismatch(got: usize, want: usize) -> Check {
    Check {
        checked: want,
        mismatches: want,
        first_bad: Some((0, format!("{got} elements"), format!("{want} elements"))),
    }
}

/// Largest error accepted for one f32 dot product of length `k`: `k * eps * sum |a_i b_i|`
/// (`eps = 2^-23`, twice the unit roundoff; a standard forward bound for recursive summation,
/// Higham, "Accuracy and Stability of Numerical Algorithms", section 3.1), plus a floor for
/// exact zeros.
pub fn matmul_tolerance(k: usize, abs_sum: f64) -> f64 {
    k as f64 * f32::EPSILON as f64 * abs_sum + f64::from(f32::MIN_POSITIVE)
}

/// Checks `C = A * B` (row-major, `m x n` from `m x k` and `k x n`) against the f64 reference:
/// every element when `m * n <= samples`, otherwise `samples` elements drawn with `seed`, each a
/// full dot product. NaN never passes.
pub fn matmul(a: &[f32], b: &[f32], c: &[f32], (m, n, k): (usize, usize, usize), samples: usize, seed: u64) -> Check {
    let elements: Vec<usize> = if m * n <= samples {
        (0..m * n).collect()
    } else {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..samples).map(|_| rng.random_range(0..m * n)).collect()
    };
    let mut check = Check { checked: 0, mismatches: 0, first_bad: None };
    for e in elements {
        let (want, abs) = reference::matmul_element(a, b, n, k, e / n, e % n);
        let got = c[e] as f64;
        check.checked += 1;
        let within = (got - want).abs() <= matmul_tolerance(k, abs);
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
        assert!(!Check { checked: 0, mismatches: 0, first_bad: None }.passed());
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
