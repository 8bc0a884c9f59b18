//! `unsafe` stays in the device API, or says why: lines that mention `unsafe` in the lesson files
//! (`kernels-gpu/src/**/*.rs` outside `device.rs` and `device/`), target 0.
//!
//! The lessons written on the typed API (`copy` and the transposes, the matmuls, the probes, the
//! hierarchy and L2 probes, the clusters and TMA lessons) have 0. Only [`RAW_BY_DESIGN`] and the
//! SGEMM ladder's files ([`SGEMM_UNSAFE`]) may have some, exactly the count listed; every
//! `unsafe {` block of the ladder has a `// SAFETY:` comment just above it, and every `unsafe fn`
//! of the ladder a `# Safety` section in its doc comment. `README.md` states the totals, which
//! are checked here too.

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
/// `kernels-gpu/src/device/gemm.rs` and `device/ring.rs`: the operands (`Gemm`: scalar accesses
/// with their bounds tests; 128-bit ones, `unsafe fn`, on the caller's word, checked in the
/// `checked` build), the `cp.async` source of a tile (`copy_chunk_inside`, `unsafe fn`, for
/// interior chunks), and the ring of shared stages (`Ring`), whose phases are types: only its
/// loops hand out a stage to write (`Filling`) or to read (`Ready`), between the barriers and
/// `cp.async.wait_group`s that end its reads and publish its writes. Where in a stage a place
/// lies is not in the types: `Filling::at`, `Ready::at` and `Place::add` are `unsafe fn`, whose
/// callers vouch for the bounds and alignment of the accesses through the place (checked in the
/// `checked` build). The PTX is the raw ladder's (`host/tests/zero_cost.rs`).
///
/// Each file's lines that mention `unsafe`, exactly, and why: calls of `device::gemm`'s and
/// `device::ring`'s `unsafe fn`s, each `unsafe {` with its `// SAFETY:` reason, and the ladder's
/// own `unsafe fn` helpers that exist to make such a call under a precondition of their caller.
const SGEMM_UNSAFE: [(&str, usize, &str); 9] = [
    ("sgemm/mod.rs", 2, "`store_results` (`unsafe fn`: its caller's columns are multiples of 4) and its `store4_c`"),
    ("sgemm/scalar.rs", 5, "rungs 2 and 3: the tiles' places in the ring's stage"),
    ("sgemm/vector.rs", 8, "rungs 4 to 6: interior 128-bit loads and stores, the tiles' places in the stages"),
    ("sgemm/async_copy.rs", 1, "rung 7: `copy_chunk_inside` on interior steps"),
    ("sgemm/copy.rs", 2, "`copy_tile` (`unsafe fn`: its caller's places) and its place in the stage"),
    ("sgemm/staged.rs", 9, "rung 8 `Registers`: interior 128-bit loads, the stages' places, `store_results`"),
    ("sgemm/tuned.rs", 6, "rung 8 `AsyncCopy`: the stages' places, `copy_tile`, `store_results`"),
    ("sgemm/tensor.rs", 4, "rung 9: the stages' places, `copy_tile`, the `ldmatrix` and fragment places"),
    ("sgemm/split_k.rs", 0, "on `Tiles::registers_tile` and the typed views"),
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

/// The comment lines (`//`, `///`) just above line `i` of `lines`, nearest first.
fn comments_above<'a>(lines: &[&'a str], i: usize) -> impl Iterator<Item = &'a str> {
    lines[..i].iter().rev().map(|l| l.trim_start()).take_while(|l| l.starts_with("//"))
}

/// The lines (from 1) of `text` that open an `unsafe {` block with no `// SAFETY:` comment among
/// the comment lines just above, and those that declare an `unsafe fn` with no `# Safety`
/// section in the doc comment (and attributes) just above.
fn unjustified_unsafe(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let block = |i: usize| comments_above(&lines, i).any(|l| l.starts_with("// SAFETY:"));
    let function = |i: usize| {
        let above = lines[..i].iter().rev().map(|l| l.trim_start());
        above.take_while(|l| l.starts_with("///") || l.starts_with("#[")).any(|l| l == "/// # Safety")
    };
    (0..lines.len())
        .filter(|&i| (lines[i].contains("unsafe {") && !block(i)) || (lines[i].contains("unsafe fn") && !function(i)))
        .map(|i| i + 1)
        .collect()
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
        let listed = RAW_BY_DESIGN.iter().chain(&SGEMM_UNSAFE).find(|(name, ..)| name == file);
        match listed {
            // Exactly: fewer would mean the raw kernel lost what it shows (or a ladder file's
            // count went stale), more new unsafe code.
            Some((_, count, why)) => {
                assert_eq!(n, count, "kernels-gpu/src/{file}: lines with `unsafe`, listed for: {why}")
            }
            None => assert_eq!(*n, 0, "kernels-gpu/src/{file}: {n} lines with `unsafe` (move them into device/)"),
        }
    }
    // Every lesson named here exists, so a renamed file cannot leave the count unchecked.
    let has = |f: &str| lessons.iter().any(|(l, _)| l == f);
    let named = SGEMM_UNSAFE.iter().map(|(f, ..)| *f);
    for file in named.chain(["transpose.rs", "matmul.rs", "probes.rs", "hierarchy.rs", "l2.rs"]) {
        assert!(has(file), "kernels-gpu/src/{file} is gone: update this test");
    }
}

#[test]
fn the_readme_states_these_counts() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let text = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let race = RAW_BY_DESIGN[0].1;
    let lines: usize = SGEMM_UNSAFE.iter().map(|(_, n, _)| n).sum();
    let files = SGEMM_UNSAFE.iter().filter(|(_, n, _)| *n > 0).count();
    for claim in [format!("{race} lines in `race.rs`"), format!("{lines} lines in {files} files of the SGEMM ladder")] {
        assert!(text.contains(&claim), "README.md (\"Safe kernels at zero cost\") should say: {claim}");
    }
}

#[test]
fn every_unsafe_of_the_sgemm_ladder_says_why() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels-gpu/src");
    for (file, ..) in SGEMM_UNSAFE {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let bare = unjustified_unsafe(&text);
        assert!(bare.is_empty(), "kernels-gpu/src/{file}: lines {bare:?} lack their `// SAFETY:` or `# Safety`");
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

#[test]
fn the_safety_check_sees_a_block_or_function_without_its_reason() {
    let text = "\
/// Doc.
///
/// # Safety
///
/// `i` is in bounds.
#[inline(always)]
unsafe fn f(i: u32) {
    // SAFETY: the caller's word,
    // on two lines.
    unsafe { g(i) };
    // A comment, not a reason.
    unsafe { g(i) };
    let x = 1;
    unsafe { g(x) };
}
/// No safety section.
pub(super) unsafe fn h() {}";
    assert_eq!(unjustified_unsafe(text), [12, 14, 17]);
}
