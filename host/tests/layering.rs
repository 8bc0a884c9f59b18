//! The layering rules of ARCHITECTURE.md that text can show: raw driver calls only in `gpu/`,
//! `gpu/` naming no kernel and no demo, records that own their strings, demos that never run
//! one another; and that its map names every contract, demo and command module.

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Files under `src/` (relative path, text) whose text contains `needle`.
fn files_containing(needle: &str) -> Vec<String> {
    let root = src();
    sources(&root)
        .into_iter()
        .filter(|f| fs::read_to_string(f).unwrap().contains(needle))
        .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
        .collect()
}

#[test]
fn raw_driver_calls_live_only_in_gpu() {
    let outside: Vec<String> = files_containing("cust::sys").into_iter().filter(|f| !f.starts_with("gpu/")).collect();
    assert!(outside.is_empty(), "cust::sys outside gpu/: {outside:?}");
    // The rule is live: gpu/ does call the driver directly.
    assert!(files_containing("cust::sys").iter().any(|f| f == "gpu/memory.rs"));
}

#[test]
fn gpu_names_no_kernel_and_no_demo() {
    // gpu/ is the layer the typed launches and the lessons stand on, so an arrow from it to
    // them would be a circle.
    let root = src().join("gpu");
    let files = sources(&root);
    assert!(files.iter().any(|f| f.ends_with("launch.rs")), "no gpu/launch.rs under {}", root.display());
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        for needle in ["crate::launches", "crate::demos", "memlab::launches", "memlab::demos"] {
            assert!(!text.contains(needle), "{} names {needle}", file.display());
        }
        // Nor a kernel entry by name.
        for entry in memlab::launches::ENTRIES {
            assert!(!text.contains(&format!("\"{}\"", entry.name)), "{} names kernel `{}`", file.display(), entry.name);
        }
    }
}

#[test]
fn the_measurement_core_names_no_lesson_and_no_kernel() {
    // lab/ is the floor the lessons, the probes and the summaries stand on.
    let files = sources(&src().join("lab"));
    assert!(files.iter().any(|f| f.ends_with("measure.rs")), "no lab/measure.rs");
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        for needle in
            ["crate::demos", "crate::probes", "crate::summary", "crate::registry", "crate::launches", "crate::present"]
        {
            assert!(!text.contains(needle), "{} names {needle}", file.display());
        }
        for entry in memlab::launches::ENTRIES {
            assert!(!text.contains(&format!("\"{}\"", entry.name)), "{} names kernel `{}`", file.display(), entry.name);
        }
    }
}

#[test]
fn probes_and_lessons_never_climb_to_the_summaries() {
    for dir in ["probes", "demos"] {
        for file in sources(&src().join(dir)) {
            let text = fs::read_to_string(&file).unwrap();
            for needle in ["crate::summary", "crate::registry", "crate::commands", "crate::present"] {
                assert!(!text.contains(needle), "{} names {needle}", file.display());
            }
            if dir == "probes" {
                assert!(!text.contains("crate::demos"), "{} names a lesson", file.display());
            }
        }
    }
}

#[test]
fn records_own_their_strings() {
    let leaks = files_containing(&["Box::", "leak"].concat());
    assert!(leaks.is_empty(), "leaked strings in {leaks:?}");
}

#[test]
fn no_demo_runs_another() {
    let root = src().join("demos");
    for file in sources(&root) {
        let text = fs::read_to_string(&file).unwrap();
        let rel = file.strip_prefix(&root).unwrap().display().to_string();
        for demo in memlab::registry::NAMES {
            let own = rel == format!("{demo}.rs") || rel.starts_with(&format!("{demo}/"));
            if rel == "mod.rs" || own {
                continue;
            }
            assert!(!text.contains(&format!("{demo}::run(")), "demos/{rel} runs the `{demo}` demo");
        }
    }
}

#[test]
fn commands_launch_no_kernel_of_their_own() {
    // Launch shapes belong to the lessons, argument lists to the typed launches: a command runs
    // demos (or one demo's measurement) and never builds a launch.
    let root = src().join("commands");
    for file in sources(&root) {
        let text = fs::read_to_string(&file).unwrap();
        for needle in ["LaunchShape", "Launch::new", "launches::"] {
            assert!(!text.contains(needle), "{} uses {needle}", file.display());
        }
    }
}

#[test]
fn architecture_names_every_contract_demo_and_command_module() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = fs::read_to_string(manifest.join("../ARCHITECTURE.md")).unwrap();
    // The bullet that starts with `start`, up to the next bullet of the same or a higher level.
    let bullet = |start: &str| -> String {
        let from = map.find(start).unwrap_or_else(|| panic!("ARCHITECTURE.md has no bullet {start}"));
        let rest = &map[from + start.len()..];
        let end = [rest.find("\n- "), rest.find("\n  - ")].into_iter().flatten().min().unwrap_or(rest.len());
        rest[..end].to_string()
    };
    let modules = |dir: PathBuf| -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter_map(|p| {
                let stem = p.file_stem()?.to_str()?.to_string();
                if p.is_dir() { Some(format!("{stem}/")) } else { (stem != "mod" && stem != "lib").then_some(stem) }
            })
            .collect();
        names.sort();
        names
    };
    for (dir, start) in [
        (manifest.join("../contracts/src"), "- `contracts/` —"),
        (src().join("demos"), "  - `demos/`:"),
        (src().join("commands"), "  - `commands/`:"),
    ] {
        let text = bullet(start);
        for name in modules(dir.clone()) {
            assert!(text.contains(&format!("`{name}`")), "ARCHITECTURE.md's bullet {start} does not name {name}");
        }
    }
}
