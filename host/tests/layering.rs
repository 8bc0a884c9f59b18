//! The layering rules of ARCHITECTURE.md that text can show: raw driver calls only in `gpu/`,
//! `gpu/` naming no kernel and no demo, the charts below the lessons that draw them, records
//! that own their strings, lessons that never name or run one another; that its map names every contract, lesson folder and command module; and that no
//! function of the workspace's sources is over 80 lines.

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

/// The sources of `src/<dir>` with their text, `probe` among them (so that a rule cannot pass on
/// a folder that moved away).
fn layer(dir: &str, probe: &str) -> Vec<(PathBuf, String)> {
    let files = sources(&src().join(dir));
    assert!(files.iter().any(|f| f.ends_with(probe)), "no {dir}/{probe}");
    files.into_iter().map(|f| (f.clone(), fs::read_to_string(f).unwrap())).collect()
}

/// Asserts that no file of `files` contains any of `needles`.
fn names_none(files: &[(PathBuf, String)], needles: &[&str]) {
    for (file, text) in files {
        for needle in needles {
            assert!(!text.contains(needle), "{} names {needle}", file.display());
        }
    }
}

#[test]
fn the_measurement_core_names_no_lesson_and_no_kernel() {
    // lab/ is the floor the lessons, the probes, the charts and the summaries stand on.
    let files = layer("lab", "measure.rs");
    names_none(
        &files,
        &[
            "crate::demos",
            "crate::probes",
            "crate::summary",
            "crate::registry",
            "crate::launches",
            "crate::present",
            "crate::charts",
        ],
    );
    for (file, text) in &files {
        for entry in memlab::launches::ENTRIES {
            assert!(!text.contains(&format!("\"{}\"", entry.name)), "{} names kernel `{}`", file.display(), entry.name);
        }
    }
}

#[test]
fn the_charts_stand_below_the_lessons() {
    // The lessons name the charts they draw, so the charts name no lesson, nothing above them,
    // and no file of the report: what a chart needs of a lesson is passed in.
    let files = layer("charts", "sweep.rs");
    names_none(
        &files,
        &["crate::demos", "crate::probes", "crate::summary", "crate::registry", "crate::commands", "crate::present"],
    );
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

/// The lesson modules a lesson file names, other than its own: `crate::demos::X`, and `super::X`
/// (`super::super::X` one folder down) where `super` is `demos`, alone or in a `use` list.
fn lessons_named(rel: &str, text: &str, lessons: &[String]) -> Vec<String> {
    let own = rel.split(['/', '.']).next().unwrap();
    let depth = rel.matches('/').count() - usize::from(rel.ends_with("/mod.rs"));
    let prefixes = ["crate::demos::".to_string(), format!("{}::", vec!["super"; depth + 1].join("::"))];
    let mut named = Vec::new();
    for prefix in &prefixes {
        for (at, _) in text.match_indices(prefix.as_str()) {
            if at > 0 && text[..at].ends_with(|c: char| c == ':' || c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &text[at + prefix.len()..];
            let list = rest.strip_prefix('{').map(|r| &r[..r.find('}').unwrap_or(r.len())]);
            let idents: Vec<&str> = match list {
                Some(list) => list.split(',').map(|i| i.trim().split("::").next().unwrap().trim()).collect(),
                None => vec![rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap()],
            };
            for ident in idents {
                if ident != own && lessons.iter().any(|l| l == ident) && !named.iter().any(|n| n == ident) {
                    named.push(ident.to_string());
                }
            }
        }
    }
    named
}

/// The lesson modules `demos/mod.rs` declares: the `lessons!` list's modules and its own `pub
/// mod` lines, sorted.
fn lesson_modules() -> Vec<String> {
    let text = fs::read_to_string(src().join("demos/mod.rs")).unwrap();
    let list = text.split("\nlessons! {").nth(1).and_then(|rest| rest.split('}').next());
    let list = list.expect("demos/mod.rs has no `lessons! { .. }` list");
    let mut modules: Vec<String> =
        list.split(',').filter_map(|entry| entry.trim().split_once("::")).map(|(m, _)| m.trim().to_string()).collect();
    modules.extend(text.lines().filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';')).map(String::from));
    modules.sort();
    modules
}

#[test]
fn no_lesson_names_another() {
    let root = src().join("demos");
    let lessons = lesson_modules();
    // Every module under demos/ is a declared lesson, so no file escapes the scan.
    let mut on_disk: Vec<String> = fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| Some(e.unwrap().path().file_stem()?.to_str()?.to_string()))
        .filter(|stem| stem != "mod")
        .collect();
    on_disk.sort();
    assert_eq!(lessons, on_disk, "demos/mod.rs's lessons against the modules under demos/");
    let mut edges = Vec::new();
    for file in sources(&root) {
        let rel = file.strip_prefix(&root).unwrap().display().to_string();
        if rel == "mod.rs" {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        let own = rel.split(['/', '.']).next().unwrap().to_string();
        edges.extend(lessons_named(&rel, &text, &lessons).into_iter().map(|other| format!("{own} -> {other}")));
    }
    assert!(edges.is_empty(), "a lesson names another (what several share belongs below them, in probes/): {edges:?}");
    // The scanner sees each form a lesson could use.
    let lessons = ["sgemm".to_string(), "matmul".to_string(), "tma".to_string()];
    assert_eq!(lessons_named("tma.rs", "use super::{Inputs, sgemm};", &lessons), ["sgemm"]);
    assert_eq!(lessons_named("l2/mod.rs", "super::matmul::Operands", &lessons), ["matmul"]);
    assert_eq!(lessons_named("l2/policies.rs", "super::matmul::X; super::super::sgemm::Y", &lessons), ["sgemm"]);
    assert_eq!(lessons_named("tma.rs", "crate::demos::tma::X; crate::demos::matmul::Y", &lessons), ["matmul"]);
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
fn architecture_is_a_short_map() {
    let map = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md")).unwrap();
    let lines = map.lines().count();
    // A map in prose, not a catalog: the design asks for at most 200 lines.
    assert!((100..=200).contains(&lines), "ARCHITECTURE.md has {lines} lines; a map keeps to 200");
}

#[test]
fn architecture_names_every_contract_lesson_folder_and_command_module() {
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
    // A one-file lesson is found through the `lessons!` list the demos' bullet points to; a
    // lesson that is a folder has parts of its own, which the bullet names.
    let lesson_folders = modules(src().join("demos")).into_iter().filter(|m| m.ends_with('/')).collect();
    for (names, start) in [
        (modules(manifest.join("../contracts/src")), "- `contracts/` —"),
        ([vec!["lessons!".to_string()], lesson_folders].concat(), "  - `demos/`:"),
        (modules(src().join("commands")), "  - `commands/`:"),
    ] {
        let text = bullet(start);
        assert!(names.len() >= 3, "{start}: {names:?}");
        for name in names {
            assert!(text.contains(&format!("`{name}`")), "ARCHITECTURE.md's bullet {start} does not name {name}");
        }
    }
}

/// The functions of `text` longer than `limit` lines, as `(line, name, lines)` (line 1-based):
/// each from its `fn` line to the first line after it that closes a brace at the `fn` line's
/// indentation (rustfmt's layout); a one-line function is 1 line, a declaration without a body
/// none. A body whose closing brace is not found is an error naming the line.
fn long_functions(text: &str, limit: usize) -> Result<Vec<(usize, String, usize)>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut long = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let indent = &line[..line.len() - line.trim_start().len()];
        // The signature ends at the first line that opens the body or ends a declaration.
        let Some(open) = (i..lines.len()).find(|&j| lines[j].contains('{') || lines[j].trim_end().ends_with(';'))
        else {
            return Err(format!("line {}: `fn {name}` has no body and no `;`", i + 1));
        };
        let opened = lines[open].matches('{').count();
        let length = if !lines[open].contains('{') {
            continue;
        } else if opened == lines[open].matches('}').count() && lines[open].trim_end().ends_with('}') {
            open - i + 1
        } else {
            let close = (open + 1..lines.len())
                .find(|&k| lines[k].strip_prefix(indent).is_some_and(|rest| rest.starts_with('}')))
                .ok_or_else(|| format!("line {}: `fn {name}` has no `}}` at its indentation", i + 1))?;
            close - i + 1
        };
        if length > limit {
            long.push((i + 1, name, length));
        }
    }
    Ok(long)
}

/// The name of the function `line` starts (after its visibility and qualifiers), if it does.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    if rest.starts_with("//") {
        return None;
    }
    loop {
        let before = rest;
        if rest.starts_with("pub(") {
            rest = &rest[rest.find(')')? + 1..];
        }
        for qualifier in ["pub ", "const ", "async ", "unsafe ", "default ", "extern \"C\" ", "extern "] {
            rest = rest.strip_prefix(qualifier).unwrap_or(rest);
        }
        rest = rest.trim_start();
        if rest == before {
            break;
        }
    }
    let name: String = rest.strip_prefix("fn ")?.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then_some(name)
}

#[test]
fn no_function_is_over_80_lines() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let roots =
        ["host/src", "host/build.rs", "host/build", "xtask/src", "kernels-gpu/src", "device-api/src", "contracts/src"];
    let mut files = Vec::new();
    for root in roots {
        let path = workspace.join(root);
        let found = if path.is_dir() { sources(&path) } else { vec![path.clone()] };
        assert!(found.iter().all(|f| f.is_file()) && !found.is_empty(), "no sources at {}", path.display());
        files.extend(found);
    }
    let (mut long, mut longest) = (Vec::new(), 0);
    for file in &files {
        let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let rel = file.strip_prefix(workspace).unwrap().display().to_string();
        let found = long_functions(&text, 0).unwrap_or_else(|e| panic!("{rel}: {e}"));
        longest = longest.max(found.iter().map(|f| f.2).max().unwrap_or(0));
        long.extend(
            found.into_iter().filter(|f| f.2 > 80).map(|(line, name, n)| format!("{rel}:{line} `{name}`: {n} lines")),
        );
    }
    assert!(long.is_empty(), "functions over 80 lines:\n{}", long.join("\n"));
    // The scan measured real bodies.
    assert!(longest > 40, "the longest function found is {longest} lines");
    // The counter's cases: a body, a one-liner, a declaration, a multi-line signature.
    let text = "fn a() {\n    1;\n}\n    pub(crate) const fn b() -> u32 { 2 }\n    fn c();\npub unsafe fn d(\n    x: u32,\n) -> u32 {\n    x\n}\n";
    let all = long_functions(text, 0).unwrap();
    assert_eq!(all, [(1, "a".to_string(), 3), (4, "b".to_string(), 1), (6, "d".to_string(), 5)]);
    assert_eq!(long_functions(text, 3).unwrap(), [(6, "d".to_string(), 5)]);
    assert!(long_functions("fn e() {\n    1;\n", 0).unwrap_err().contains("line 1"));
    assert_eq!(fn_name("pub type F = fn(u32) -> u32;"), None);
    assert_eq!(fn_name("    // fn f() {"), None);
}
