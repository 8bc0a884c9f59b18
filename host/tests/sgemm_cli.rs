//! The autotune file's refusals, on a machine without a GPU: a bad file named by
//! `autotune --write` or by `$MEMLAB_TUNED` is refused in one line (exit 2) before the driver is
//! asked anything.

use std::process::{Command, Output};

fn memlab(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memlab"))
        .args(args)
        .envs(env.iter().copied())
        // Hide any GPU: a refusal must come before the no-device error.
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .expect("run memlab")
}

/// A file in the test's temporary folder with `text`.
fn file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("memlab-sgemm-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn assert_refused(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn a_bad_autotune_file_is_refused_in_one_line_before_any_gpu_work() {
    let broken = file("broken.json", "{");
    let unknown = file(
        "unknown.json",
        r#"{"about": "", "choices": [{"cc": "9.0", "class": "large", "config": "sgemm_8_1x1x1", "source": ""}]}"#,
    );
    // autotune --write merges into the file it names: read (and refused) first.
    assert_refused(&memlab(&["autotune", "--write", &broken], &[]), &format!("{broken}: not an autotune file: "));
    // run-demos and bench read $MEMLAB_TUNED for the SGEMM lesson.
    for args in [&["run-demos", "--only", "sgemm"][..], &["run-demos"][..], &["bench", "--only", "sgemm"][..]] {
        assert_refused(
            &memlab(args, &[("MEMLAB_TUNED", &unknown)]),
            &format!("{unknown}: unknown configuration `sgemm_8_1x1x1` (this build has: sgemm_8_"),
        );
    }
    // A lesson that does not read it is not refused for it (it gets to the missing GPU).
    let o = memlab(&["run-demos", "--only", "matmul"], &[("MEMLAB_TUNED", &unknown)]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("unknown configuration"));
    let missing = memlab(&["run-demos", "--only", "sgemm"], &[("MEMLAB_TUNED", "/nonexistent/t.json")]);
    assert_refused(&missing, "cannot read the autotune file /nonexistent/t.json: ");
}
