//! `run-demos --only tma` at any matrix width: the lesson pads each row to the 16-byte stride a
//! tensor map needs, so odd widths get past the shape checks to the driver (here one that is
//! missing: the same on any machine), and only a matrix whose padded buffers exceed the kernels'
//! 32-bit element counts is refused, in one line, before the driver is asked anything.

use std::process::{Command, Output};

fn memlab(transpose: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memlab"))
        .args(["run-demos", "--only", "memcpy", "tma", "--transpose", transpose])
        .env_remove("LD_LIBRARY_PATH")
        .env("MEMLAB_LIBCUDA", "/nonexistent/libcuda.so.1")
        .output()
        .expect("run memlab")
}

/// The one line on stderr of a run that exited 2 and printed nothing.
fn one_line_error(transpose: &str) -> String {
    let out = memlab(transpose);
    assert_eq!(out.status.code(), Some(2), "{transpose}");
    assert!(out.stdout.is_empty(), "{transpose}: printed a result");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn odd_widths_are_not_refused_they_reach_the_driver() {
    // Rows of 33, 1001, 1 and 7 f32 are not multiples of 16 bytes; the transposed outputs' rows
    // of 31, 1001 and 3 neither.
    for transpose in ["31x33", "1000x1001", "1001x1000", "1x1", "3x1000", "1000x7", "70000x2"] {
        let err = one_line_error(transpose);
        assert!(err.starts_with("error: no NVIDIA driver: libcuda.so.1 not found ("), "{transpose}: {err}");
    }
}

#[test]
fn padded_buffers_past_32_bit_element_counts_are_refused_before_any_work() {
    // 65535 x 65536 elements fit; the transposed output's 65536 rows of 65535, padded to 65536,
    // do not.
    assert_eq!(
        one_line_error("65535x65536"),
        "error: the TMA demo: the transposed output 65536x65535, its rows padded to 65536 f32 (16-byte strides), holds 4294967296 elements; the kernels count elements in 32 bits (at most 4294967295)\n"
    );
    assert!(one_line_error("65535x65535").starts_with("error: no NVIDIA driver"));
}
