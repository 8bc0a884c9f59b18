//! `run-demos --only tma` with a matrix a tensor map cannot describe: one line naming the limit,
//! exit 2, before the driver is asked anything (so on any machine, GPU or not).

use std::process::Command;

fn refused(transpose: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_memlab"))
        .args(["run-demos", "--only", "memcpy", "tma", "--transpose", transpose])
        .output()
        .expect("run memlab");
    assert_eq!(out.status.code(), Some(2), "{transpose}");
    assert!(out.stdout.is_empty(), "{transpose}: printed a result");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn matrices_a_tensor_map_cannot_describe_are_refused_before_any_work() {
    assert_eq!(
        refused("1000x1001"),
        "error: a tensor map cannot describe a row pitch of 1001 f32: 4004 bytes is not a multiple of 16 bytes (pad it to 1004)\n"
    );
    // The transposed output of 1001 rows of 1000 columns has rows 1001 f32 = 4004 bytes apart too.
    assert_eq!(
        refused("1001x1000"),
        "error: a tensor map cannot describe a row pitch of 1001 f32: 4004 bytes is not a multiple of 16 bytes (pad it to 1004)\n"
    );
    assert_eq!(refused("1x1"), "error: the 1-D bulk copy moves multiples of 16 bytes: 1x1 f32 is 4 bytes\n");
}
