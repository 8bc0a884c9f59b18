//! CPU references for every kernel, and the inputs the demos feed them (fixed seeds, so the same
//! run gives the same input and the same checksums).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub use memlab_contracts::hierarchy::LOCAL_ARRAY_WORDS;
pub use memlab_contracts::probes::{
    BANK_PROBE_UNROLL, BANK_PROBE_WINDOW, BANK_PROBE_WORDS, PRESSURE_ACCUMULATORS, STRIDED_READS_PER_THREAD,
    WIDE_PROBE_ROW, WIDE_PROBE_WINDOW, bank_probe_word,
};

/// `n` floats uniform in `[-1, 1)` from seed `seed`.
pub fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// Element `(row, col)` of `A * B` in f64 for row-major `A` (`m x k`) and `B` (`k x n`), with
/// `sum |a_i b_i|`, the scale a rounding-error bound needs.
pub fn matmul_element(a: &[f32], b: &[f32], n: usize, k: usize, row: usize, col: usize) -> (f64, f64) {
    let (mut dot, mut abs) = (0.0f64, 0.0f64);
    for i in 0..k {
        let p = a[row * k + i] as f64 * b[i * n + col] as f64;
        dot += p;
        abs += p.abs();
    }
    (dot, abs)
}

/// The full product `A * B` (`m x n`, row-major) in f64.
pub fn matmul(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    (0..m * n).map(|e| matmul_element(a, b, n, k, e / n, e % n).0).collect()
}

/// Transpose of a row-major `rows x cols` matrix (the result is `cols x rows`).
pub fn transpose(input: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = input[r * cols + c];
        }
    }
    out
}

/// Word `i` of the strided-read probe's input (a cheap hash, so every word differs).
pub fn strided_word(i: usize) -> u32 {
    (i as u32).wrapping_mul(0x2545_F491) ^ (i >> 32) as u32 ^ 0x5bd1_e995
}

/// The sum `strided_read` writes for thread `g` of `threads` at `stride`.
pub fn strided_partial(g: usize, threads: usize, stride: usize) -> u32 {
    (0..STRIDED_READS_PER_THREAD).fold(0u32, |s, r| s.wrapping_add(strided_word((g + r * threads) * stride)))
}

/// Word read by load `k` of lane `lane` in the bank probe at `stride` (0 = broadcast).
pub fn bank_probe_address(lane: usize, stride: usize, k: usize) -> usize {
    let step = k / BANK_PROBE_UNROLL;
    lane * stride + (step * BANK_PROBE_UNROLL * 32) % BANK_PROBE_WINDOW + (k % BANK_PROBE_UNROLL) * 32
}

/// The sum every thread of lane `lane` writes in the bank probe.
pub fn bank_probe_sum(lane: usize, stride: usize, iters: usize) -> u32 {
    (0..iters).fold(0u32, |s, k| s.wrapping_add(bank_probe_word(bank_probe_address(lane, stride, k) as u32)))
}

/// The sum every thread of a lane whose byte offset is `offset` writes in the wide bank probe of
/// `width` bytes (8 or 16): load `k` reads the `width / 4` words at byte
/// `offset + (1024 * (k / 8)) mod 8192 + 128 * (k mod 8)`.
pub fn wide_bank_probe_sum(offset: usize, width: usize, iters: usize) -> u32 {
    (0..iters).fold(0u32, |s, k| {
        let step = (k / BANK_PROBE_UNROLL * BANK_PROBE_UNROLL * WIDE_PROBE_ROW) % WIDE_PROBE_WINDOW;
        let byte = offset + step + (k % BANK_PROBE_UNROLL) * WIDE_PROBE_ROW;
        (0..width / 4).fold(s, |s, w| s.wrapping_add(bank_probe_word((byte / 4 + w) as u32)))
    })
}

/// What `register_pressure` writes for thread `g` of `threads`: 128 accumulators start at 0,
/// each read `x = input[g + i * threads]` (`i` in `0..iters`) updates every one as
/// `a[j] = fma(a[j], x, j)` in f32 (one rounding, as `fma.rn.f32`), and the result is their sum
/// in index order. The kernel's register cap never changes it: the result must match exactly.
pub fn register_pressure(input: &[f32], threads: usize, iters: usize, g: usize) -> f32 {
    let mut acc = [0.0f32; PRESSURE_ACCUMULATORS];
    for i in 0..iters {
        let x = input[g + i * threads];
        for (j, a) in acc.iter_mut().enumerate() {
            *a = a.mul_add(x, j as f32);
        }
    }
    acc.iter().fold(0.0f32, |s, a| s + a)
}

/// What both kernels of the spill pair (`local_array_constant_index`, and
/// `local_array_runtime_index` with shift 1) write for thread `g` of `threads`: the array
/// `a[j] = input[j * threads + g]`, `x = input[16 * threads + g]`, `iters` rounds of
/// `a[j] = fma(a[(j + 1) % 16], x, j)` for `j = 0..16` in order, then the sum in index order.
pub fn local_array(input: &[f32], threads: usize, iters: usize, g: usize) -> f32 {
    let mut a: [f32; LOCAL_ARRAY_WORDS] = std::array::from_fn(|j| input[j * threads + g]);
    let x = input[LOCAL_ARRAY_WORDS * threads + g];
    for _ in 0..iters {
        for j in 0..LOCAL_ARRAY_WORDS {
            a[j] = a[(j + 1) % LOCAL_ARRAY_WORDS].mul_add(x, j as f32);
        }
    }
    a.iter().fold(0.0f32, |s, v| s + v)
}

/// What `read_cg` writes for each of `threads` threads reading `words` (16-byte vectors
/// `g, g + threads, ...`) `passes` times: the wrapping sum of its words, times `passes`.
pub fn read_sums(words: &[u32], threads: usize, passes: u32) -> Vec<u32> {
    let mut sums = vec![0u32; threads];
    for (v, vector) in words.as_chunks::<4>().0.iter().enumerate() {
        let s = &mut sums[v % threads];
        *s = vector.iter().fold(*s, |acc, &w| acc.wrapping_add(w));
    }
    sums.iter().map(|s| s.wrapping_mul(passes)).collect()
}

/// `register_chain`'s result: `steps` dependent `x = fma(x, a, b)` in f32.
pub fn fma_chain(x: f32, a: f32, b: f32, steps: u32) -> f32 {
    (0..steps).fold(x, |x, _| x.mul_add(a, b))
}

/// The sums `hot_stream_read` writes: thread `g` of `threads` adds, for every 16-byte vector
/// `v = g, g + threads, ...` of `stream`, its four words and the four words of vector
/// `v & (hot vectors - 1)` of `hot` (whose vector count is a power of two).
pub fn hot_stream_sums(stream: &[u32], hot: &[u32], threads: usize) -> Vec<u32> {
    let hot = hot.as_chunks::<4>().0;
    let mask = hot.len() - 1;
    let mut sums = vec![0u32; threads];
    for (v, vector) in stream.as_chunks::<4>().0.iter().enumerate() {
        let s = &mut sums[v % threads];
        *s = vector.iter().chain(&hot[v & mask]).fold(*s, |acc, &w| acc.wrapping_add(w));
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Textbook triple loop in f64, written independently of `matmul_element`.
    fn naive(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
        let mut c = vec![0.0f64; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    c[i * n + j] += a[i * k + p] as f64 * b[p * n + j] as f64;
                }
            }
        }
        c
    }

    #[test]
    fn matmul_matches_hand_computed_2x2() {
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [5.0, 6.0, 7.0, 8.0];
        assert_eq!(matmul(&a, &b, 2, 2, 2), vec![19.0, 22.0, 43.0, 50.0]);
    }

    #[test]
    fn matmul_matches_triple_loop_on_odd_sizes() {
        for &(m, n, k) in &[(1, 1, 1), (31, 33, 1), (33, 31, 17), (1, 1000, 3), (7, 5, 1000)] {
            let a = random_f32(m * k, 1);
            let b = random_f32(k * n, 2);
            let want = naive(&a, &b, m, n, k);
            let got = matmul(&a, &b, m, n, k);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "{m}x{n}x{k}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn transpose_moves_each_element_on_odd_sizes() {
        for &(rows, cols) in &[(1, 1), (31, 33), (33, 31), (1, 1000), (1000, 1)] {
            let input: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
            let out = transpose(&input, rows, cols);
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(out[c * rows + r], input[r * cols + c]);
                }
            }
            assert_eq!(transpose(&out, cols, rows), input);
        }
    }

    #[test]
    fn hot_stream_sums_add_each_streamed_vector_and_its_hot_vector() {
        // 5 streamed vectors over 2 threads, 2 hot vectors: thread 0 takes vectors 0, 2, 4
        // (hot 0, 0, 0), thread 1 vectors 1, 3 (hot 1, 1).
        let stream: Vec<u32> = (0..20).collect();
        let hot = [100, 100, 100, 100, 1000, 1000, 1000, 1000];
        let sums = hot_stream_sums(&stream, &hot, 2);
        let vector = |v: u32| (4 * v..4 * v + 4).sum::<u32>();
        assert_eq!(sums, [vector(0) + vector(2) + vector(4) + 3 * 400, vector(1) + vector(3) + 2 * 4000]);
    }

    #[test]
    fn strided_partial_sums_the_right_words() {
        // Thread 1 of 4 at stride 3 reads elements (1 + 4r) * 3.
        let want = (0..8).fold(0u32, |s, r| s.wrapping_add(strided_word((1 + 4 * r) * 3)));
        assert_eq!(strided_partial(1, 4, 3), want);
        assert_ne!(strided_word(0), strided_word(1));
    }

    #[test]
    fn bank_probe_addresses_keep_the_bank_pattern_and_fit() {
        for stride in [0, 1, 2, 4, 8, 16, 32, 33] {
            for k in 0..1024 {
                let w0 = bank_probe_address(0, stride, k);
                for lane in 0..32 {
                    let w = bank_probe_address(lane, stride, k);
                    assert!(w < BANK_PROBE_WORDS);
                    // Same bank as at step 0: the offset is a multiple of 32 words.
                    assert_eq!(w % 32, (lane * stride) % 32);
                    assert_eq!(w - w0, lane * stride);
                }
            }
        }
        assert_eq!(bank_probe_sum(3, 1, 8), (0..8).fold(0u32, |s, u| s.wrapping_add(bank_probe_word(3 + 32 * u))));
    }
    #[test]
    fn the_wide_probe_sums_every_word_of_each_load() {
        // 8 bytes at byte 8, loads 0..8 at +128 each: words 2 + 32u and 3 + 32u.
        let want = (0..8u32)
            .fold(0u32, |s, u| s.wrapping_add(bank_probe_word(2 + 32 * u)).wrapping_add(bank_probe_word(3 + 32 * u)));
        assert_eq!(wide_bank_probe_sum(8, 8, 8), want);
        // The ninth load starts the next step, 1024 bytes on (word 256 + 4).
        let ninth = wide_bank_probe_sum(16, 16, 9).wrapping_sub(wide_bank_probe_sum(16, 16, 8));
        assert_eq!(ninth, (260..264).fold(0u32, |s, w| s.wrapping_add(bank_probe_word(w))));
    }

    #[test]
    fn register_pressure_matches_a_hand_computed_thread() {
        // One thread, two reads x = 0.5 then 2: a[j] = (0 * 0.5 + j) * 2 + j = 3j; sum 3 * 8128.
        let input = [0.5f32, 2.0];
        assert_eq!(register_pressure(&input, 1, 2, 0), 3.0 * 8128.0);
        // Thread 1 of 2 reads input[1], input[3].
        let input = [9.0f32, 0.5, 9.0, 2.0];
        assert_eq!(register_pressure(&input, 2, 2, 1), 3.0 * 8128.0);
        assert_eq!(register_pressure(&input, 2, 0, 1), 0.0);
    }

    #[test]
    fn register_pressure_rounds_once_per_update() {
        // Two reads of x = 0.9926 (bits 0x3f7e1b09): the products need more than 24 bits, and
        // the sums of fused and of unfused updates differ in the last bit. The reference must
        // keep the fused one, what `fma.rn.f32` computes.
        let x = f32::from_bits(0x3f7e_1b09);
        let fused = register_pressure(&[x, x], 1, 2, 0);
        let mut acc = [0.0f32; PRESSURE_ACCUMULATORS];
        for _ in 0..2 {
            for (j, a) in acc.iter_mut().enumerate() {
                *a = *a * x + j as f32;
            }
        }
        let unfused = acc.iter().fold(0.0f32, |s, a| s + a);
        assert_ne!(fused.to_bits(), unfused.to_bits());
    }

    #[test]
    fn local_array_follows_the_neighbour_update_order() {
        // x = 0: a[j] = j after one round, whatever the input.
        let threads = 2;
        let mut input: Vec<f32> = (0..17 * threads).map(|i| i as f32).collect();
        input[16 * threads + 1] = 0.0;
        assert_eq!(local_array(&input, threads, 1, 1), 120.0);
        // x = 1, one round: a[j] = a[j + 1] + j for j < 15 (old values), a[15] = new a[0] + 15.
        let a: Vec<f32> = (0..16).map(|j| j as f32).collect();
        let mut input = a.clone();
        input.push(1.0);
        let mut want: Vec<f32> = (0..15).map(|j| a[j + 1] + j as f32).collect();
        want.push(want[0] + 15.0);
        assert_eq!(local_array(&input, 1, 1, 0), want.iter().sum::<f32>());
    }

    #[test]
    fn read_sums_deal_vectors_round_robin() {
        let words: Vec<u32> = (0..24).collect();
        // 6 vectors over 4 threads: thread 0 gets vectors 0 and 4, thread 3 only vector 3.
        let sums = read_sums(&words, 4, 3);
        assert_eq!(sums[0], 3 * (1 + 2 + 3 + 16 + 17 + 18 + 19));
        assert_eq!(sums[3], 3 * (12 + 13 + 14 + 15));
        assert_eq!(read_sums(&[u32::MAX; 8], 1, 1)[0], u32::MAX.wrapping_mul(8));
    }

    #[test]
    fn fma_chain_converges_to_its_fixed_point() {
        assert_eq!(fma_chain(0.0, 0.5, 1.0, 0), 0.0);
        assert_eq!(fma_chain(0.0, 0.5, 1.0, 2), 1.5);
        assert_eq!(fma_chain(0.0, 0.5, 1.0, 200), 2.0);
    }
}
