//! CPU references for every kernel, and the inputs the demos feed them (fixed seeds, so the same
//! run gives the same input and the same checksums).
//!
//! Inputs are counter-based: element `i` of seed `s` is a hash of `(s, i)` ([`input_f32`]), so
//! any chunk of an input can be generated on its own, on any thread, and a check can recompute
//! an input element where it needs it instead of keeping the whole input in host memory.

use rayon::prelude::*;

pub use memlab_contracts::hierarchy::LOCAL_ARRAY_WORDS;
pub use memlab_contracts::probes::{
    BANK_PROBE_UNROLL, BANK_PROBE_WINDOW, BANK_PROBE_WORDS, PRESSURE_ACCUMULATORS, STRIDED_READS_PER_THREAD,
    WIDE_PROBE_ROW, WIDE_PROBE_WINDOW, bank_probe_word,
};

/// SplitMix64's output function (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): a bijection of `u64` whose outputs pass BigCrush for consecutive
/// inputs.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Element `i` of the input of seed `seed`: uniform in `[-1, 1)` in steps of `2^-23` (24
/// random bits). SplitMix64 of the `i`-th step of the seed's own Weyl sequence.
pub fn input_f32(seed: u64, i: usize) -> f32 {
    let h = mix64(mix64(seed).wrapping_add((i as u64).wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    (h >> 40) as f32 * (1.0 / (1u32 << 23) as f32) - 1.0
}

/// Element `i` of the BF16 input of seed `seed`, as its bit pattern: `j / 128` for a `j` drawn
/// uniformly from `-128..128` ([`input_f32`]'s generator), so every value is exact in BF16 (8
/// significant bits) and every product of two is exact in FP32.
pub fn input_bf16(seed: u64, i: usize) -> u16 {
    let j = (input_f32(seed, i) * 128.0).floor();
    bf16_bits(j / 128.0)
}

/// The BF16 bit pattern of `x`, which must be exact in BF16 (the top 16 bits of its FP32 bits).
pub fn bf16_bits(x: f32) -> u16 {
    (x.to_bits() >> 16) as u16
}

/// The value of the BF16 bit pattern `bits`.
pub fn bf16_value(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// Element `i` of the FP8 e4m3 input of seed `seed`, as its bit pattern: `j / 8` for a `j`
/// drawn uniformly from `-8..8` ([`input_f32`]'s generator), every one exact in e4m3 (4 significant
/// bits) and every product of two exact in FP32.
pub fn input_e4m3(seed: u64, i: usize) -> u8 {
    /// The e4m3 bits of `j / 8` for `j` in `-8..8`, index `j + 8`.
    const EIGHTHS: [u8; 16] = {
        let mut table = [0u8; 16];
        let mut j = -8i32;
        while j < 8 {
            table[(j + 8) as usize] = e4m3_of_eighths(j);
            j += 1;
        }
        table
    };
    let j = (input_f32(seed, i) * 8.0).floor() as i32;
    EIGHTHS[(j.clamp(-8, 7) + 8) as usize]
}

/// The e4m3 bits (sign, 4 exponent bits of bias 7, 3 mantissa bits; OCP FP8 and PTX ISA,
/// "Floating point data types") of `j / 8`, `|j| <= 8`: `2^e (1 + m / 8)`.
const fn e4m3_of_eighths(j: i32) -> u8 {
    let sign = if j < 0 { 0x80 } else { 0 };
    let a = j.unsigned_abs();
    if a == 0 {
        return 0;
    }
    let log = 31 - a.leading_zeros();
    let mantissa = ((a << 3) >> log) - 8;
    sign | (((log + 4) as u8) << 3) | mantissa as u8
}

/// The value of the e4m3 bit pattern `bits` (no infinities; `S.1111.111` is NaN).
pub fn e4m3_value(bits: u8) -> f32 {
    let (sign, exp, mantissa) = (if bits & 0x80 != 0 { -1.0 } else { 1.0 }, (bits >> 3) & 0xf, bits & 7);
    match (exp, mantissa) {
        (15, 7) => f32::NAN,
        (0, m) => sign * f32::from(m) / 8.0 * 2f32.powi(-6),
        (e, m) => sign * (1.0 + f32::from(m) / 8.0) * 2f32.powi(i32::from(e) - 7),
    }
}

/// Fills `out` with elements `offset..offset + out.len()` of the input of seed `seed`
/// ([`input_f32`]), on every core.
pub fn fill_input(seed: u64, offset: usize, out: &mut [f32]) {
    fill(offset, out, |i| input_f32(seed, i));
}

/// Sets `out[j] = element(offset + j)` for every `j`, on every core.
pub fn fill(offset: usize, out: &mut [f32], element: impl Fn(usize) -> f32 + Sync) {
    out.par_iter_mut().enumerate().with_min_len(1 << 14).for_each(|(j, v)| *v = element(offset + j));
}

/// `n` floats of the input of seed `seed` ([`input_f32`]), generated on every core. A shorter
/// input is a prefix of a longer one.
pub fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut out = vec![0.0; n];
    fill_input(seed, 0, &mut out);
    out
}

/// The input index that lands at output index `i` of the transpose of a row-major `rows x cols`
/// matrix (the output is `cols x rows`): output row `i / rows` is input column, output column
/// `i % rows` input row.
pub fn transposed_from(i: usize, rows: usize, cols: usize) -> usize {
    let (q, r) = div_rem(i, rows);
    r * cols + q
}

/// `(i / d, i % d)`, in 32-bit arithmetic when both fit (every index of the kernels' matrices
/// does: they index in 32 bits), several times faster than a 64-bit division on x86-64 cores,
/// and the checks divide once per element.
pub fn div_rem(i: usize, d: usize) -> (usize, usize) {
    match (u32::try_from(i), u32::try_from(d)) {
        (Ok(i), Ok(d)) => ((i / d) as usize, (i % d) as usize),
        _ => (i / d, i % d),
    }
}

/// Element `(row, col)` of `A * B` in f64 for row-major `A` (`m x k`) and `B` (`k x n`), with
/// `sum |a_i b_i|`, the scale a rounding-error bound needs.
pub fn matmul_element(a: &[f32], b: &[f32], n: usize, k: usize, row: usize, col: usize) -> (f64, f64) {
    dot(a[row * k..(row + 1) * k].iter().copied(), (0..k).map(|i| b[i * n + col]))
}

/// `sum x_i y_i` in f64, summed in index order, with `sum |x_i y_i|`.
pub fn dot(x: impl IntoIterator<Item = f32>, y: impl IntoIterator<Item = f32>) -> (f64, f64) {
    x.into_iter().zip(y).fold((0.0f64, 0.0f64), |(dot, abs), (x, y)| {
        let p = x as f64 * y as f64;
        (dot + p, abs + p.abs())
    })
}

/// The full product `A * B` (`m x n`, row-major) in f64.
pub fn matmul(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    (0..m * n).map(|e| matmul_element(a, b, n, k, e / n, e % n).0).collect()
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
/// each read `x = input(g + i * threads)` (`i` in `0..iters`; the input is a function, so a
/// seeded one needs no host copy) updates every one as `a[j] = fma(a[j], x, j)` in f32 (one
/// rounding, as `fma.rn.f32`), and the result is their sum in index order. The kernel's register
/// cap never changes it: the result must match exactly.
pub fn register_pressure(input: impl Fn(usize) -> f32, threads: usize, iters: usize, g: usize) -> f32 {
    let mut acc = [0.0f32; PRESSURE_ACCUMULATORS];
    for i in 0..iters {
        let x = input(g + i * threads);
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

/// What `read_cg` writes for each of `threads` threads reading the `len` words `word(i)`
/// (16-byte vectors `g, g + threads, ...`) `passes` times: the wrapping sum of its words, times
/// `passes`. The words are a function, so a 1 GiB input is summed without a host copy of it.
pub fn read_sums(len: usize, word: impl Fn(usize) -> u32 + Sync, threads: usize, passes: u32) -> Vec<u32> {
    // Chunks of vectors summed per thread on every core, then added up (the sums wrap, so the
    // order of the additions does not matter).
    let chunk = threads.max(1 << 20);
    let sums = (0..len / 4)
        .into_par_iter()
        .step_by(chunk)
        .map(|first| {
            let mut sums = vec![0u32; threads];
            for v in first..(first + chunk).min(len / 4) {
                let s = &mut sums[v % threads];
                *s = (4 * v..4 * v + 4).fold(*s, |acc, i| acc.wrapping_add(word(i)));
            }
            sums
        })
        .reduce(|| vec![0u32; threads], |a, b| a.iter().zip(&b).map(|(x, y)| x.wrapping_add(*y)).collect());
    sums.iter().map(|s| s.wrapping_mul(passes)).collect()
}

/// Words `0..n` of the strided-read probe's input ([`strided_word`]), on every core.
pub fn strided_words(n: usize) -> Vec<u32> {
    (0..n).into_par_iter().map(strided_word).collect()
}

/// Elements `offset..offset + chunk.len()` of [`strided_words`], written on every core: a
/// staging chunk of an input the host never holds whole.
pub fn fill_strided_words(offset: usize, chunk: &mut [u32]) {
    chunk.par_iter_mut().enumerate().for_each(|(i, w)| *w = strided_word(offset + i));
}

/// `register_chain`'s result: `steps` dependent `x = fma(x, a, b)` in f32.
pub fn fma_chain(x: f32, a: f32, b: f32, steps: u32) -> f32 {
    (0..steps).fold(x, |x, _| x.mul_add(a, b))
}

/// The sums `hot_stream_read` writes: thread `g` of `threads` adds, for every 16-byte vector
/// `v = g, g + threads, ...` of the stream (`stream_len` words `stream(i)`), its four words and
/// the four words of vector `v & (hot vectors - 1)` of the hot buffer (`hot_len` words
/// `hot(i)`, a power of two of vectors). The words are functions: the 1 GiB stream is never
/// held on the host.
///
/// On every core: each core sums whole rounds of `threads` vectors into sums of its own, and the
/// wrapping sums add up in any order (the persisting-L2 lesson sums a 1 GiB stream per hot size).
pub fn hot_stream_sums(
    (stream_len, stream): (usize, impl Fn(usize) -> u32 + Sync),
    (hot_len, hot): (usize, impl Fn(usize) -> u32 + Sync),
    threads: usize,
) -> Vec<u32> {
    let mask = hot_len / 4 - 1;
    let vectors = stream_len / 4;
    let rounds = vectors.div_ceil(threads.max(1));
    // About 64 pieces of whole rounds: enough to spread, few sums vectors to add.
    let piece = threads.max(1) * rounds.div_ceil(64).max(1);
    let add = |mut a: Vec<u32>, b: Vec<u32>| {
        a.iter_mut().zip(b).for_each(|(x, y)| *x = x.wrapping_add(y));
        a
    };
    (0..vectors)
        .into_par_iter()
        .step_by(piece)
        .map(|first| {
            let mut sums = vec![0u32; threads];
            for v in first..(first + piece).min(vectors) {
                let h = 4 * (v & mask);
                let s = &mut sums[v % threads];
                *s = (0..4).fold(*s, |acc, j| acc.wrapping_add(stream(4 * v + j)).wrapping_add(hot(h + j)));
            }
            sums
        })
        .reduce(|| vec![0u32; threads], add)
}

/// The sums `read_cg_chunks` writes over `regions` regions of `words` (`regions *
/// REGION_VECTORS` 16-byte vectors): word `r * 256 + t` adds, for each chunk `i` of region
/// `r` (chunk index `regions * i + r`), the words of its vectors `t, t + 256, t + 512, t + 768`.
pub fn chunk_sums(words: &[u32], regions: usize) -> Vec<u32> {
    use memlab_contracts::l2::{CHUNK_LOADS, CHUNK_THREADS, CHUNK_VECTORS, CHUNKS_PER_BLOCK};
    let vectors = words.as_chunks::<4>().0;
    let threads = CHUNK_THREADS as usize;
    let mut sums = vec![0u32; regions * threads];
    for (slot, sum) in sums.iter_mut().enumerate() {
        let (r, t) = (slot / threads, slot % threads);
        for i in 0..CHUNKS_PER_BLOCK as usize {
            let chunk = (regions * i + r) * CHUNK_VECTORS as usize + t;
            for j in 0..CHUNK_LOADS as usize {
                *sum = vectors[chunk + j * threads].iter().fold(*sum, |acc, &w| acc.wrapping_add(w));
            }
        }
    }
    sums
}

#[cfg(test)]
mod tests {
    #[test]
    fn e4m3_inputs_are_the_eighths_and_decode_exactly() {
        for j in -8..=8 {
            assert_eq!(super::e4m3_value(super::e4m3_of_eighths(j)), j as f32 / 8.0, "{j}");
        }
        // The encodings OCP FP8 gives: 1 = 0x38, -1 = 0xb8, 0.375 = 0x2c, 448 = 0x7e.
        assert_eq!(
            [super::e4m3_of_eighths(8), super::e4m3_of_eighths(-8), super::e4m3_of_eighths(3)],
            [0x38, 0xb8, 0x2c]
        );
        assert_eq!(super::e4m3_value(0x7e), 448.0);
        assert!(super::e4m3_value(0x7f).is_nan());
        let values: Vec<f32> = (0..4096).map(|i| super::e4m3_value(super::input_e4m3(5, i))).collect();
        assert!(values.iter().all(|v| (v * 8.0).fract() == 0.0 && (-1.0..1.0).contains(v)));
        assert!(values.contains(&-1.0) && values.contains(&0.875) && values.contains(&0.0));
    }

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
    fn transpose_index_moves_each_element_on_odd_sizes() {
        for &(rows, cols) in &[(1, 1), (31, 33), (33, 31), (1, 1000), (1000, 1)] {
            for r in 0..rows {
                for c in 0..cols {
                    // Output (c, r) of the cols x rows result holds input (r, c).
                    assert_eq!(transposed_from(c * rows + r, rows, cols), r * cols + c);
                }
            }
            // Transposing twice is the identity.
            for i in 0..rows * cols {
                assert_eq!(transposed_from(transposed_from(i, rows, cols), cols, rows), i);
            }
        }
    }

    #[test]
    fn div_rem_agrees_in_both_widths() {
        for (i, d) in [(0, 1), (7, 3), (u32::MAX as usize, 65_535), (1 << 40, 3), (123_456_789, 1 << 35)] {
            assert_eq!(div_rem(i, d), (i / d, i % d), "{i} / {d}");
        }
    }

    #[test]
    fn inputs_are_counter_based_and_in_range() {
        let whole = random_f32(100_000, 7);
        let mut chunk = vec![0.0; 1000];
        fill_input(7, 51_234, &mut chunk);
        assert_eq!(&chunk[..], &whole[51_234..52_234], "a chunk is the same slice of the whole input");
        assert!(whole.iter().all(|v| (-1.0..1.0).contains(v)));
        // Uniform: mean near 0, about a quarter in each quarter of the range.
        let mean = whole.iter().map(|&v| v as f64).sum::<f64>() / whole.len() as f64;
        assert!(mean.abs() < 0.01, "mean {mean}");
        let low = whole.iter().filter(|&&v| v < -0.5).count();
        assert!((24_000..26_000).contains(&low), "{low} below -0.5");
        assert_ne!(random_f32(8, 1), random_f32(8, 2), "seeds differ");
        assert_eq!(input_f32(3, 0), random_f32(1, 3)[0]);
    }

    #[test]
    fn hot_stream_sums_add_each_streamed_vector_and_its_hot_vector() {
        // 5 streamed vectors over 2 threads, 2 hot vectors: thread 0 takes vectors 0, 2, 4
        // (hot 0, 0, 0), thread 1 vectors 1, 3 (hot 1, 1).
        let stream: Vec<u32> = (0..20).collect();
        let hot = [100, 100, 100, 100, 1000, 1000, 1000, 1000];
        let sums = hot_stream_sums((stream.len(), |i| stream[i]), (hot.len(), |i| hot[i]), 2);
        let vector = |v: u32| (4 * v..4 * v + 4).sum::<u32>();
        assert_eq!(sums, [vector(0) + vector(2) + vector(4) + 3 * 400, vector(1) + vector(3) + 2 * 4000]);
        // Many pieces on many cores (1001 vectors, 3 threads: pieces of 18 vectors, the last
        // one short): thread g adds vectors g, g + 3, ... and hot vector v & 3 of each.
        let stream: Vec<u32> = (0..4004u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
        let hot: Vec<u32> = (0..16).map(|i| i * 7).collect();
        let mut want = [0u32; 3];
        for v in 0..1001 {
            let words = stream[4 * v..4 * v + 4].iter().chain(&hot[4 * (v & 3)..4 * (v & 3) + 4]);
            want[v % 3] = words.fold(want[v % 3], |a, &w| a.wrapping_add(w));
        }
        assert_eq!(hot_stream_sums((stream.len(), |i| stream[i]), (hot.len(), |i| hot[i]), 3), want);
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
        assert_eq!(register_pressure(|i| input[i], 1, 2, 0), 3.0 * 8128.0);
        // Thread 1 of 2 reads input[1], input[3].
        let input = [9.0f32, 0.5, 9.0, 2.0];
        assert_eq!(register_pressure(|i| input[i], 2, 2, 1), 3.0 * 8128.0);
        assert_eq!(register_pressure(|i| input[i], 2, 0, 1), 0.0);
    }

    #[test]
    fn register_pressure_rounds_once_per_update() {
        // Two reads of x = 0.9926 (bits 0x3f7e1b09): the products need more than 24 bits, and
        // the sums of fused and of unfused updates differ in the last bit. The reference must
        // keep the fused one, what `fma.rn.f32` computes.
        let x = f32::from_bits(0x3f7e_1b09);
        let fused = register_pressure(|_| x, 1, 2, 0);
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
        let sums = read_sums(words.len(), |i| words[i], 4, 3);
        assert_eq!(sums[0], 3 * (1 + 2 + 3 + 16 + 17 + 18 + 19));
        assert_eq!(sums[3], 3 * (12 + 13 + 14 + 15));
        assert_eq!(read_sums(8, |_| u32::MAX, 1, 1)[0], u32::MAX.wrapping_mul(8));
        // Past one chunk of vectors: the same sums as one pass in order.
        let words: Vec<u32> = strided_words(4 * (3 << 20) + 8);
        let threads = 1000;
        let mut want = vec![0u32; threads];
        for (v, vector) in words.chunks(4).enumerate() {
            want[v % threads] = vector.iter().fold(want[v % threads], |s, &w| s.wrapping_add(w));
        }
        assert_eq!(read_sums(words.len(), strided_word, threads, 1), want);
        assert_eq!(strided_words(5), (0..5).map(strided_word).collect::<Vec<_>>());
        let mut chunk = [0u32; 3];
        fill_strided_words(7, &mut chunk);
        assert_eq!(chunk, [strided_word(7), strided_word(8), strided_word(9)]);
    }

    #[test]
    fn fma_chain_converges_to_its_fixed_point() {
        assert_eq!(fma_chain(0.0, 0.5, 1.0, 0), 0.0);
        assert_eq!(fma_chain(0.0, 0.5, 1.0, 2), 1.5);
        assert_eq!(fma_chain(0.0, 0.5, 1.0, 200), 2.0);
    }

    #[test]
    fn chunk_sums_add_each_threads_four_vectors_of_every_chunk_of_its_region() {
        use memlab_contracts::l2::REGION_VECTORS;
        // Two regions; word w holds w, so a sum is the sum of the word indices read.
        let words: Vec<u32> = (0..2 * 4 * REGION_VECTORS).collect();
        let sums = chunk_sums(&words, 2);
        assert_eq!(sums.len(), 512);
        // Region 1, thread 3: chunks 2i + 1, vectors 1024 (2i + 1) + 3 + 256 j, words 4v..4v+4.
        let want = (0..32u32)
            .flat_map(|i| (0..4u32).map(move |j| 1024 * (2 * i + 1) + 3 + 256 * j))
            .fold(0u32, |s, v| s.wrapping_add(16 * v + 6));
        assert_eq!(sums[256 + 3], want);
    }
}
