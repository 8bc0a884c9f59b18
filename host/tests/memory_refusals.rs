//! Sizes whose buffers do not fit in free device memory: the refusal's text, and byte counts
//! that saturate instead of wrapping for absurd sizes (checked without a GPU; on one, the demos
//! call the same check with `cuMemGetInfo`'s figures before allocating).

use memlab::lab::{check_free, f32_bytes};

const GIB: usize = 1 << 30;

#[test]
fn a_demo_that_does_not_fit_is_refused_with_the_free_memory() {
    let err = check_free("the transpose demo", 2 * GIB, GIB, 141 * GIB).unwrap_err().to_string();
    assert_eq!(
        err,
        "the transpose demo needs 2.00 GiB of device memory, but only 1.00 GiB of 141.00 GiB is free: choose smaller sizes"
    );
    assert!(check_free("the transpose demo", GIB, GIB, 141 * GIB).is_ok(), "exactly the free bytes fit");
}

#[test]
fn byte_counts_saturate_so_absurd_sizes_are_refused() {
    assert_eq!(f32_bytes(&[3, 4]), 28);
    assert_eq!(f32_bytes(&[]), 0);
    // The largest transpose the CLI accepts: two (2^32 - 1)^2-element buffers.
    let n = (u32::MAX as usize) * (u32::MAX as usize);
    assert_eq!(f32_bytes(&[n, n]), usize::MAX);
    let err = check_free("the transpose demo", f32_bytes(&[n, n]), 140 * GIB, 141 * GIB).unwrap_err().to_string();
    assert!(err.starts_with("the transpose demo needs 17179869184.00 GiB of device memory"), "{err}");
}
