//! `unsafe` stays in the device API: lines that mention `unsafe` in the lesson files
//! (`kernels-gpu/src/**/*.rs` outside `device.rs` and `device/`), target 0.
//!
//! The lessons written on the API (`copy` and the transposes, the matmuls, the probes, the
//! hierarchy and L2 probes, the clusters and TMA lessons, and the whole SGEMM ladder) have 0.
//! Only [`RAW_BY_DESIGN`] may have some, exactly the count listed.

use std::path::{Path, PathBuf};

/// The one lesson kept on raw pointers by design, with its line count and why (the race lesson
/// keeps its raw kernel, to show what the GPU does when the check is bypassed).
/// On the API its bug, the tiled matmul without its second barrier, does not compile
/// (`device-api/tests/ui/missing_barrier.rs`), so the only way to run it is a raw kernel.
const RAW_BY_DESIGN: [(&str, usize, &str); 1] = [(
    "race.rs",
    8,
    "matmul_tiled_32_missing_barrier: the race lesson's bug, which does not compile on the typed tiles",
)];

/// The SGEMM ladder (rungs 2 to 9 and `sgemm/mod.rs`'s shared helpers) is on
/// `kernels-gpu/src/device/gemm.rs`: the operands (`Gemm`: scalar accesses with their bounds
/// tests, 128-bit ones on the caller's word, checked in the `checked` build), places in the
/// dynamic shared memory (`Shared`: 32/64/128-bit accesses, `ldmatrix`), the `cp.async` source
/// of a tile, the block barrier; with the same PTX (`host/tests/zero_cost.rs`). They are not on
/// the typed `SharedTile` phases: `cp.async` writes a stage outside the barrier phases (the
/// write lands at `cp.async.wait_group` plus a barrier, later than the instruction), the stages
/// are a ring of 2 to 4 tiles whose phases differ per stage, and `ldmatrix` reads a tile into
/// another lane's registers; so `device::gemm` states the phase discipline as an invariant
/// instead of a type.
const SGEMM_FILES: [&str; 8] = [
    "sgemm/mod.rs",
    "sgemm/scalar.rs",
    "sgemm/vector.rs",
    "sgemm/async_copy.rs",
    "sgemm/copy.rs",
    "sgemm/staged.rs",
    "sgemm/tuned.rs",
    "sgemm/tensor.rs",
];

/// Every `.rs` file under `dir`, as paths relative to `root`.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// Lines of `text` that mention `unsafe`.
fn unsafe_lines(text: &str) -> usize {
    text.lines().filter(|l| l.contains("unsafe")).count()
}

#[test]
fn lesson_files_hold_no_unsafe_beyond_the_listed_ones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels-gpu/src");
    let mut files = Vec::new();
    rust_files(&root, &root, &mut files);
    let lessons: Vec<(String, usize)> = files
        .iter()
        .map(|f| f.to_string_lossy().replace('\\', "/"))
        .filter(|f| f != "device.rs" && !f.starts_with("device/"))
        .map(|f| {
            let n = unsafe_lines(&std::fs::read_to_string(root.join(&f)).unwrap());
            (f, n)
        })
        .collect();
    assert!(lessons.iter().any(|(f, _)| f == "transpose.rs") && lessons.len() >= 9, "{lessons:?}");
    for (file, n) in &lessons {
        match RAW_BY_DESIGN.iter().find(|(raw, ..)| raw == file) {
            // Exactly: fewer would mean the raw kernel lost what it shows, more new raw code.
            Some((_, most, why)) => assert_eq!(n, most, "kernels-gpu/src/{file} is raw by design ({why})"),
            None => assert_eq!(*n, 0, "kernels-gpu/src/{file}: {n} lines with `unsafe` (move them into device/)"),
        }
    }
    // Every lesson named here exists, so a renamed file cannot leave the count unchecked.
    let has = |f: &str| lessons.iter().any(|(l, _)| l == f);
    for file in SGEMM_FILES.iter().chain(&["transpose.rs", "matmul.rs", "probes.rs", "hierarchy.rs", "l2.rs"]) {
        assert!(has(file), "kernels-gpu/src/{file} is gone: update this test");
    }
}

#[test]
fn the_raw_kernel_by_design_is_the_race_lessons_and_nothing_else() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels-gpu/src");
    for (file, _, why) in RAW_BY_DESIGN {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        // One raw entry (the macro `kernel!` is how every other lesson declares its entries).
        let raw_entries: Vec<&str> = text.lines().filter(|l| l.contains("extern \"ptx-kernel\" fn")).collect();
        assert_eq!(raw_entries.len(), 1, "{file}: {raw_entries:?}");
        let entry = why.split(':').next().unwrap();
        assert!(raw_entries[0].contains(&format!("fn {entry}(")), "{file}: {raw_entries:?}");
        // ... and it is the kernel that lacks a barrier: the bug the typed tiles refuse.
        assert!(text.contains("The missing `sync_threads()`"), "{file}");
    }
}

#[test]
fn the_counter_sees_unsafe_blocks_functions_and_attributes() {
    let text = "#[unsafe(no_mangle)]\npub unsafe extern \"ptx-kernel\" fn k() {\n    let v = 1;\n    unsafe { f() }\n}";
    assert_eq!(unsafe_lines(text), 3);
}
