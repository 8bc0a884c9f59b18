//! The CPU references against straightforward implementations on random shapes, the checks
//! against deliberately wrong results, and the inputs' reproducibility (same seed, same input).

use proptest::prelude::*;

use memlab::{reference, verify};

/// Textbook `C = A * B` in f64, loop order i, p, j (the reference sums per element instead).
fn triple_loop(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            for j in 0..n {
                c[i * n + j] += f64::from(a[i * k + p]) * f64::from(b[p * n + j]);
            }
        }
    }
    c
}

/// `C = A * B` as the GPU's tiled kernel computes it: f32 fused multiply-adds in order of `k`.
fn f32_fma(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    (0..m * n).map(|e| (0..k).fold(0.0f32, |s, p| a[(e / n) * k + p].mul_add(b[p * n + e % n], s))).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn matmul_reference_matches_the_triple_loop(m in 1usize..40, n in 1usize..40, k in 1usize..70, seed in any::<u64>()) {
        let a = reference::random_f32(m * k, seed);
        let b = reference::random_f32(k * n, seed ^ 1);
        let want = triple_loop(&a, &b, m, n, k);
        for (got, want) in reference::matmul(&a, &b, m, n, k).iter().zip(&want) {
            prop_assert!((got - want).abs() <= 1e-12 * (1.0 + want.abs()), "{}x{}x{}: {} vs {}", m, n, k, got, want);
        }
    }

    #[test]
    fn matmul_check_passes_f32_results_and_catches_one_wrong_element(
        m in 1usize..24, n in 1usize..24, k in 1usize..300, seed in any::<u64>(), pick in any::<prop::sample::Index>(),
    ) {
        let a = reference::random_f32(m * k, seed);
        let b = reference::random_f32(k * n, seed ^ 1);
        let mut c = f32_fma(&a, &b, m, n, k);
        prop_assert!(verify::matmul(&a, &b, &c, (m, n, k), usize::MAX, 0).passed());
        let e = pick.index(m * n);
        // Above the largest tolerance here, k^2 * 2^-23 < 0.011.
        c[e] += 0.05;
        let bad = verify::matmul(&a, &b, &c, (m, n, k), usize::MAX, 0);
        prop_assert_eq!((bad.mismatches, bad.first_bad.map(|f| f.0)), (1, Some(e)));
    }

    #[test]
    fn transpose_reference_moves_every_element(rows in 1usize..70, cols in 1usize..70, seed in any::<u64>()) {
        let input = reference::random_f32(rows * cols, seed);
        // The transpose written out by hand: output (c, r) of the cols x rows result.
        let mut out = vec![0.0f32; rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                out[c * rows + r] = input[r * cols + c];
            }
        }
        let want = |i: usize| reference::input_f32(seed, reference::transposed_from(i, rows, cols));
        prop_assert!(verify::exact_u32(bytemuck::cast_slice(&out), |i| want(i).to_bits()).passed());
    }

    #[test]
    fn a_streamed_transpose_check_names_any_wrong_element(
        rows in 1usize..300, cols in 1usize..300, seed in any::<u64>(), pick in any::<prop::sample::Index>(),
        chunk in 1usize..4,
    ) {
        let n = rows * cols;
        let want = |i: usize| reference::input_f32(seed, reference::transposed_from(i, rows, cols));
        let mut out: Vec<f32> = (0..n).map(want).collect();
        let bad = pick.index(n);
        out[bad] = f32::from_bits(out[bad].to_bits() ^ 1);
        let mut check = verify::Streamed::new();
        for part in out.chunks(chunk * verify::DIGEST_BLOCK) {
            check.chunk_f32(part, want);
        }
        let check = check.finish();
        prop_assert_eq!((check.checked, check.mismatches), (n, 1));
        prop_assert_eq!(check.first_bad.map(|f| f.0), Some(bad));
    }

    #[test]
    fn strided_partials_sum_the_words_the_kernel_reads(threads in 1usize..500, stride in 1usize..65, pick in any::<prop::sample::Index>()) {
        // The kernel reads element (g + r * threads) * stride for r in 0..8: walk it by hand.
        let g = pick.index(threads);
        let mut sum = 0u32;
        let mut element = g * stride;
        for _ in 0..reference::STRIDED_READS_PER_THREAD {
            sum = sum.wrapping_add(reference::strided_word(element));
            element += threads * stride;
        }
        prop_assert_eq!(reference::strided_partial(g, threads, stride), sum);
    }

    #[test]
    fn the_same_seed_gives_the_same_input(n in 0usize..5000, cut in any::<prop::sample::Index>(), seed in any::<u64>()) {
        let x = reference::random_f32(n, seed);
        prop_assert_eq!(verify::digest_f32(&x), verify::digest_f32(&reference::random_f32(n, seed)));
        prop_assert!(x.iter().all(|v| (-1.0..1.0).contains(v)));
        // A shorter input is a prefix of a longer one: sizes do not reshuffle the stream.
        let m = if n == 0 { 0 } else { cut.index(n) };
        prop_assert_eq!(&reference::random_f32(m, seed)[..], &x[..m]);
        if n >= 4 {
            prop_assert_ne!(x, reference::random_f32(n, seed.wrapping_add(1)));
        }
    }
}

/// The demos' inputs are pinned: the first 1000 values of each seed have these digests on every
/// machine and build; they change only if a seed or the generator (`reference::input_f32`) does.
#[test]
fn demo_inputs_are_pinned() {
    let digests: Vec<String> =
        [1, 2, 7, 11].map(|seed| format!("{:016x}", verify::digest_f32(&reference::random_f32(1000, seed)))).to_vec();
    // Seeds 1 and 2: matmul A and B; 7: transpose; 11: memcpy.
    assert_eq!(digests, ["6749369ed2cae28c", "dd8d98243efc7d7a", "79bd16c368b76180", "8bbdd2da1a0ac5e4"]);
    // Single elements, computed independently (SplitMix64 in Python's integers): any element of
    // a 32768 x 32768 or larger input is one hash away.
    assert_eq!(reference::input_f32(1, 0), 0.499_496_46);
    assert_eq!(reference::input_f32(7, 123_456_789), -0.453_321_34);
    assert_eq!(reference::input_f32(11, 4_294_967_294), 0.074_739_814);
}
