//! The race lesson's kernel, checked in the PTX without a GPU: it is the tiled matmul with
//! exactly one barrier fewer, and no demo of `run-demos` launches it.

use memlab::ptx::{self, count_ops, entry_body};

fn barriers(p: &ptx::Ptx, kernel: &str) -> usize {
    let body = entry_body(p.text, kernel).unwrap_or_else(|| panic!("{} PTX lacks {kernel}", p.arch));
    count_ops(body, "bar.sync") + count_ops(body, "barrier.sync")
}

#[test]
fn the_broken_kernel_lacks_exactly_the_second_barrier() {
    for p in &ptx::ALL {
        assert_eq!(barriers(p, "matmul_tiled_32"), 2, "{}", p.arch);
        assert_eq!(barriers(p, "matmul_tiled_32_missing_barrier"), 1, "{}", p.arch);
        // Same loads and stores otherwise: the lesson changes nothing but the barrier.
        let (good, bad) = (
            entry_body(p.text, "matmul_tiled_32").unwrap(),
            entry_body(p.text, "matmul_tiled_32_missing_barrier").unwrap(),
        );
        for op in ["ld.shared", "st.shared", "ld.global", "st.global", "fma.rn.f32"] {
            assert_eq!(count_ops(good, op), count_ops(bad, op), "{}: {op}", p.arch);
        }
    }
}

#[test]
fn no_demo_launches_the_broken_kernel() {
    assert!(!memlab::registry::NAMES.contains(&"race"));
    let mut pending = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/demos")];
    let mut read = 0;
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().unwrap() != "race.rs" {
                let source = std::fs::read_to_string(&path).unwrap();
                assert!(!source.contains("missing_barrier"), "{} launches the broken kernel", path.display());
                read += 1;
            }
        }
    }
    assert!(read >= memlab::registry::NAMES.len(), "every demo module was read");
}
