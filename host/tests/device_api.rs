//! The device API (`device-api/`) on the host, in its checked build: its stand-ins for the
//! intrinsics run a kernel as one thread, so what the views and tiles read and write can be
//! checked here, and an index past a tile or view traps (a panic on the host, `trap;` on the
//! GPU) before it touches memory.

use memlab_device_api::global::{GlobalIn, GlobalOut};
use memlab_device_api::kernel;
use memlab_device_api::shared::SharedTile;

kernel! {
    /// Transposes a `rows x cols` matrix (at most 4 x 8) through one padded `4 x 8` tile.
    pub fn transpose_through_tile(block: Block, input: GlobalIn<f32>, output: GlobalOut<f32>, rows: u32, cols: u32) {
        let (barrier, mut tile) = block.carve::<SharedTile<f32, 4, 8, 9>>();
        let (rows, cols) = (rows as usize, cols as usize);
        let (input, mut output) = (input.matrix(rows, cols), output.matrix(cols, rows));
        for r in 0..rows {
            for c in 0..cols {
                tile.set(r, c, input.get(r, c));
            }
        }
        let tile = barrier.sync(tile);
        for c in 0..cols {
            let column = tile.col(c);
            for r in 0..rows {
                output.set(c, r, column.get(&tile, r));
            }
        }
    }
}

/// Runs the kernel on a `rows x cols` matrix of `0, 1, 2, ...`.
fn run(rows: u32, cols: u32) -> Vec<f32> {
    let input: Vec<f32> = (0..rows * cols).map(|v| v as f32).collect();
    let mut output = vec![-1.0; input.len()];
    // SAFETY: both buffers hold `rows * cols` floats, the views' lengths.
    unsafe { transpose_through_tile(input.as_ptr(), output.as_mut_ptr(), rows, cols) };
    output
}

#[test]
fn a_kernel_on_the_api_writes_and_reads_where_its_views_say() {
    let out = run(4, 8);
    for (i, v) in out.iter().enumerate() {
        let (c, r) = (i / 4, i % 4);
        assert_eq!(*v, (r * 8 + c) as f32, "output ({c}, {r})");
    }
    assert_eq!(run(3, 5)[..3], [0.0, 5.0, 10.0]);
}

#[test]
fn an_index_past_a_tile_traps_in_the_checked_build() {
    // 5 rows do not fit the 4-row tile: the fifth row's `set` traps instead of writing past it.
    let trapped = std::panic::catch_unwind(|| run(5, 8)).unwrap_err();
    assert_eq!(trapped.downcast_ref::<&str>(), Some(&"trap: index out of bounds"));
    // So do 9 columns (the pad column is not the tile's).
    assert!(std::panic::catch_unwind(|| run(4, 9)).is_err());
}

kernel! {
    /// Reads `len` words of a view of `view_len` words and sums them.
    pub fn sum_words(input: GlobalIn<u32>, out: GlobalOut<u32>, view_len: u32, len: u32) {
        let input = input.slice(view_len as usize);
        let mut sum = 0u32;
        for i in 0..len as usize {
            sum = sum.wrapping_add(input.get(i));
        }
        out.slice(1).set(0, sum);
    }
}

#[test]
fn an_index_past_a_global_view_traps_in_the_checked_build() {
    let words = [1u32, 2, 3, 4];
    let mut out = [0u32];
    // SAFETY: the view is 4 words, the buffer's length.
    unsafe { sum_words(words.as_ptr(), out.as_mut_ptr(), 4, 4) };
    assert_eq!(out[0], 10);
    // SAFETY: as above; the fifth read is refused before it reaches memory.
    let past = std::panic::catch_unwind(|| unsafe { sum_words(words.as_ptr(), [0u32].as_mut_ptr(), 4, 5) });
    assert!(past.is_err());
}

kernel! {
    /// Reverses `len` words through a shared slice of `words` words (run-time sized, as the
    /// shared-memory chase's chain).
    pub fn reverse_through_slice(block: Block, input: GlobalIn<u32>, out: GlobalOut<u32>, words: u32, len: u32) {
        let (barrier, mut slice) = block.carve_slice::<u32>(words as usize);
        let (input, mut out) = (input.slice(len as usize), out.slice(len as usize));
        for i in 0..len as usize {
            slice.set(i, input.get(i));
        }
        let slice = barrier.sync(slice);
        for i in 0..len as usize {
            out.set(i, slice.get(len as usize - 1 - i));
        }
    }
}

#[test]
fn a_shared_slice_is_written_then_read_across_the_barrier_and_bounded_by_its_length() {
    let words = [1u32, 2, 3, 4, 5];
    let mut out = [0u32; 5];
    // SAFETY: both buffers hold 5 words, the views' lengths.
    unsafe { reverse_through_slice(words.as_ptr(), out.as_mut_ptr(), 5, 5) };
    assert_eq!(out, [5, 4, 3, 2, 1]);
    // A 4-word slice: the fifth `set` traps instead of writing past it.
    // SAFETY: as above.
    let past =
        std::panic::catch_unwind(|| unsafe { reverse_through_slice(words.as_ptr(), [0u32; 5].as_mut_ptr(), 4, 5) });
    assert_eq!(past.unwrap_err().downcast_ref::<&str>(), Some(&"trap: index out of bounds"));
    // More words than the launch's dynamic shared memory: the carve traps.
    let too_many = (memlab_device_api::arch::HOST_SHARED_BYTES / 4 + 1) as u32;
    // SAFETY: as above; nothing is read or written.
    let carve = std::panic::catch_unwind(|| unsafe {
        reverse_through_slice(words.as_ptr(), [0u32; 5].as_mut_ptr(), too_many, 0)
    });
    assert!(carve.is_err());
}
