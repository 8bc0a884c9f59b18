//! Pointer-chase chains laid out by the host: a random single cycle over slots one cache line
//! apart, written as the memory image each latency probe follows.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

/// Bytes between two slots of a chain: one cache line of L1 and L2, 128 bytes (CUDA C++
/// Programming Guide, "Device Memory Accesses": a cache line is 128 bytes), so no two slots
/// share a line and every hop touches a line of its own.
pub const LINE_BYTES: usize = 128;

/// A random cyclic permutation of `slots` slots as a successor table: `next[s]` is the slot
/// after `s`, and following it from any slot visits every slot once before coming back. The
/// random order leaves nothing for a prefetcher to guess.
///
/// # Panics
/// When `slots` is 0 or does not fit a `u32`.
pub fn random_cycle(slots: usize, seed: u64) -> Vec<u32> {
    assert!(slots > 0 && u32::try_from(slots).is_ok(), "a chain needs 1..=u32::MAX slots, got {slots}");
    let mut order: Vec<u32> = (0..slots as u32).collect();
    order.shuffle(&mut StdRng::seed_from_u64(seed));
    let mut next = vec![0u32; slots];
    for (k, &s) in order.iter().enumerate() {
        next[s as usize] = order[(k + 1) % slots];
    }
    next
}

/// The successor table in which word `w` of a `words`-word array points at word
/// `(w + step) mod words`: the constant-memory chain, where lanes that start on different
/// words stay on different words.
pub fn stepping_cycle(words: usize, step: usize) -> Vec<u32> {
    (0..words).map(|w| ((w + step) % words) as u32).collect()
}

/// The slot reached from `start` after `hops` links.
pub fn walk(next: &[u32], start: u32, hops: u64) -> u32 {
    (0..hops).fold(start, |s, _| next[s as usize])
}

/// The image of a chain in global memory at device address `base`: one `u64` word per 8 bytes
/// of `next.len() * LINE_BYTES`; the first word of slot `s` holds the device address of slot
/// `next[s]`, every other word is 0.
pub fn global_image(next: &[u32], base: u64) -> Vec<u64> {
    let mut words = vec![0u64; next.len() * (LINE_BYTES / 8)];
    fill_global_image(next, base, 0, &mut words);
    words
}

/// Words `offset..offset + words.len()` of [`global_image`] (`offset` a multiple of the 16
/// words of a slot), written on every core: a chunk of the image for staging, so the host never
/// holds a whole chain's image (2 GiB at the ladder's top).
pub fn fill_global_image(next: &[u32], base: u64, offset: usize, words: &mut [u64]) {
    use rayon::prelude::*;
    let per_slot = LINE_BYTES / 8;
    assert!(offset.is_multiple_of(per_slot), "offset {offset} is inside a slot");
    words.par_chunks_mut(per_slot).enumerate().for_each(|(i, slot)| {
        slot.fill(0);
        slot[0] = base + next[offset / per_slot + i] as u64 * LINE_BYTES as u64;
    });
}

/// The image of a chain in shared memory, as `chase_shared` takes it: one `u32` per 4 bytes of
/// `next.len() * LINE_BYTES`; the first word of slot `s` holds the byte offset of slot
/// `next[s]`, every other word is 0.
pub fn shared_image(next: &[u32]) -> Vec<u32> {
    let per_slot = LINE_BYTES / 4;
    let mut words = vec![0u32; next.len() * per_slot];
    for (s, &n) in next.iter().enumerate() {
        words[s * per_slot] = n * LINE_BYTES as u32;
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slots visited from slot 0 until the walk first returns to a visited slot.
    fn orbit(next: &[u32]) -> Vec<u32> {
        let mut seen = vec![false; next.len()];
        let mut orbit = Vec::new();
        let mut s = 0u32;
        while !seen[s as usize] {
            seen[s as usize] = true;
            orbit.push(s);
            s = next[s as usize];
        }
        assert_eq!(s, 0, "the walk re-entered the chain at {s}, not at its start: not one cycle");
        orbit
    }

    #[test]
    fn random_cycle_is_one_cycle_through_every_slot() {
        for slots in [1, 2, 3, 32, 1000, 4097] {
            for seed in 0..4 {
                let next = random_cycle(slots, seed);
                assert_eq!(orbit(&next).len(), slots, "{slots} slots, seed {seed}");
                assert_eq!(walk(&next, 0, slots as u64), 0);
                if slots > 1 {
                    assert!(next.iter().enumerate().all(|(s, &n)| n as usize != s), "a slot points at itself");
                }
            }
        }
    }

    #[test]
    fn random_cycles_differ_by_seed_and_are_not_sequential() {
        let (a, b) = (random_cycle(1024, 1), random_cycle(1024, 2));
        assert_ne!(a, b);
        let sequential = a.iter().enumerate().filter(|&(s, &n)| n as usize == (s + 1) % 1024).count();
        assert!(sequential < 16, "{sequential} hops go to the next line");
    }

    #[test]
    fn stepping_cycle_keeps_lanes_apart() {
        let next = stepping_cycle(256, 32);
        for lane in 0..32u32 {
            for hops in [0, 1, 7, 8, 1000] {
                assert_eq!(walk(&next, lane, hops), (lane + 32 * hops as u32) % 256);
            }
        }
    }

    #[test]
    fn images_point_each_slot_at_its_successor_one_line_apart() {
        let next = random_cycle(64, 7);
        let base = 0x7f00_0000_0000u64;
        let global = global_image(&next, base);
        let shared = shared_image(&next);
        assert_eq!(global.len() * 8, 64 * LINE_BYTES);
        assert_eq!(shared.len() * 4, 64 * LINE_BYTES);
        for (s, &n) in next.iter().enumerate() {
            assert_eq!(global[s * 16], base + n as u64 * 128);
            assert_eq!(shared[s * 32], n * 128);
            // Following the image from slot s lands on the first word of slot next[s].
            assert_eq!((global[s * 16] - base) as usize / 8, n as usize * 16);
        }
        assert_eq!(global.iter().filter(|&&w| w != 0).count(), 64);
        // Any slot-aligned window, filled over stale words, is that window of the whole image.
        let mut window = vec![u64::MAX; 5 * 16];
        fill_global_image(&next, base, 7 * 16, &mut window);
        assert_eq!(window, global[7 * 16..12 * 16]);
        assert_eq!(shared.iter().filter(|&&w| w != 0).count(), 63, "only the link to slot 0 is offset 0");
    }
}
