//! `cargo xtask book [--check]`: the memlab book (`docs/book/`, an mdBook).
//!
//! 1. Generate (`generate.rs`, from the table in `sources.rs`): the recorded run's tables and
//!    charts, `memlab inspect` and model outputs, and the exercises, each answer checked against
//!    its command. Without `--check` the files are written to `docs/book/src/generated/`; with it
//!    they are compared with the committed ones and any difference fails.
//! 2. Check every `{{#include}}` of the chapters (file and anchor), and that every generated
//!    page is included by a chapter.
//! 3. Build with mdBook (installed from crates.io beside cargo's registry when missing) into
//!    `target/book`, then check every relative link and image of the HTML and the search index.
//! 4. With `--check` (what `cargo xtask test` runs): load every chapter in headless Chromium
//!    (`browser.rs`) and keep screenshots of two in `target/book-check/`.

mod browser;
mod checks;
mod generate;
mod readme;
mod records;
mod sources;
mod truth;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// mdBook from crates.io, pinned; built without its server and watcher (not needed here).
const MDBOOK_VERSION: &str = "0.4.40";
/// Chapters kept as screenshots by the browser check.
const SCREENSHOTS: [&str; 2] = ["shared-memory", "tiling"];

fn book_dir() -> PathBuf {
    super::root().join("docs/book")
}

pub fn run(args: &[String]) -> Result<()> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => bail!("usage: cargo xtask book [--check]"),
    };
    let tools = super::setup()?;
    super::run(super::cargo().args(["build", "--package", "memlab"]).env("CUDA_LIBRARY_PATH", &tools.cuda_link))?;
    build(check, &tools, &super::root().join("target/debug/memlab"))
}

/// Generates, checks and builds the book with the `memlab` binary `bin`, built from this tree:
/// `cargo xtask test` passes the one its tests ran, which `cargo build` would build again, with
/// the features of the normal dependencies alone.
pub fn build(check: bool, tools: &super::Tools, bin: &Path) -> Result<()> {
    let root = super::root();
    let work = root.join("target/book-check");
    fs::create_dir_all(&work)?;
    let lib64 = tools.cuda_link.join("lib64");
    let memlab = generate::Memlab {
        bin,
        cuda_bin: &tools.cuda_bin,
        lib64: super::system_libcuda().is_none().then_some(lib64.as_path()),
        cwd: &root,
    };
    let fresh = generate::generate(&memlab, &root, &work)?;
    let generated = book_dir().join("src/generated");
    if check {
        let stale = generate::stale(&generate::read_tree(&generated)?, &fresh);
        if !stale.is_empty() {
            bail!(
                "the book's generated files are stale; run `cargo xtask book` and commit docs/book/src/generated:\n  {}",
                stale.join("\n  ")
            );
        }
    } else {
        generate::write_tree(&generated, &fresh)?;
    }
    readme_and_truth(&root, &fresh, check)?;
    let mut problems = checks::check_includes(&book_dir().join("src"))?;
    problems.extend(
        checks::unshown(&book_dir().join("src"), fresh.keys())?
            .into_iter()
            .map(|g| format!("generated/{g} is included by no chapter (xtask/src/book/sources.rs lists it)")),
    );
    if !problems.is_empty() {
        bail!("book includes:\n  {}", problems.join("\n  "));
    }
    let html = root.join("target/book");
    super::run(Command::new(mdbook()?).arg("build").arg(book_dir()).arg("--dest-dir").arg(&html))
        .context("mdbook build")?;
    let broken = checks::check_links(&html)?;
    if !broken.is_empty() {
        bail!("broken links in the built book:\n  {}", broken.join("\n  "));
    }
    checks::check_search_index(&html, "coalesced")?;
    if check {
        let pages = chapter_pages(&book_dir().join("src/SUMMARY.md"), &html)?;
        let problems = browser::check_pages(&pages, &SCREENSHOTS, &work, &work.join("screenshots"))?;
        if !problems.is_empty() {
            bail!("the book in Chromium:\n  {}", problems.join("\n  "));
        }
        eprintln!(
            "xtask: book checked: {} chapters load in Chromium, screenshots in {}",
            pages.len(),
            work.join("screenshots").display()
        );
    }
    eprintln!("xtask: the book is at {}", html.join("index.html").display());
    Ok(())
}

/// Rewrites the README's generated tables from the fresh report (with `check`, fails when the
/// committed README differs), then runs the truth check over the README and every chapter.
fn readme_and_truth(root: &Path, fresh: &generate::Files, check: bool) -> Result<()> {
    let sections = fresh
        .iter()
        .filter_map(|(key, text)| {
            let name = key.strip_prefix("report/")?.strip_suffix(".md")?;
            Some((name.to_string(), String::from_utf8_lossy(text).into_owned()))
        })
        .collect();
    let path = root.join("README.md");
    let committed = fs::read_to_string(&path)?;
    let filled = readme::fill(&committed, &sections, root)?;
    if filled != committed {
        if check {
            bail!("README.md's generated tables are stale; run `cargo xtask book` and commit README.md");
        }
        fs::write(&path, &filled)?;
    }
    let mut findings: Vec<String> = truth::scan(&filled).iter().map(|f| f.describe("README.md")).collect();
    findings.extend(records::check(root)?);
    for chapter in checks::markdown_files(&book_dir().join("src"))? {
        let name = chapter.strip_prefix(root).unwrap_or(&chapter).display().to_string();
        findings.extend(truth::scan(&fs::read_to_string(&chapter)?).iter().map(|f| f.describe(&name)));
    }
    if !findings.is_empty() {
        bail!(
            "{} sentences state what only the generator may (a measured figure comes from an include of the recorded run or a docs/measurements page; history belongs in git):\n  {}",
            findings.len(),
            findings.join("\n  ")
        );
    }
    Ok(())
}

/// The built page of every chapter listed in `SUMMARY.md`.
fn chapter_pages(summary: &Path, html: &Path) -> Result<Vec<PathBuf>> {
    let text = fs::read_to_string(summary)?;
    let pages: Vec<PathBuf> = text
        .match_indices("](")
        .filter_map(|(i, _)| {
            let rest = &text[i + 2..];
            let target = &rest[..rest.find(')')?];
            target.strip_suffix(".md").map(|stem| html.join(format!("{stem}.html")))
        })
        .collect();
    if pages.is_empty() {
        bail!("{} lists no chapters", summary.display());
    }
    Ok(pages)
}

/// `mdbook`, installed with `cargo install --locked` when missing, beside cargo's own registry
/// cache (`$CARGO_HOME/memlab-tools/mdbook-VERSION`) rather than in `target/`: its build is
/// minutes on 2 cores, which a fresh clone, and every CI run, would otherwise pay again.
fn mdbook() -> Result<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set")?;
    let root = cargo_home.join("memlab-tools").join(format!("mdbook-{MDBOOK_VERSION}"));
    let bin = root.join("bin/mdbook");
    let installed = Command::new(&bin)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(MDBOOK_VERSION));
    if !installed {
        eprintln!("xtask: installing mdbook {MDBOOK_VERSION} from crates.io into {}", root.display());
        super::run(
            Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args(["install", "--locked", "mdbook", "--version", MDBOOK_VERSION])
                .args(["--no-default-features", "--features", "search", "--root"])
                .arg(&root),
        )
        .context("cargo install mdbook")?;
    }
    Ok(bin)
}

#[cfg(test)]
mod tests {
    use super::generate::{Files, OTHER_LESSONS, exercise_page, pick_answer, split_report, stale};
    use super::sources::{EXERCISES, Pick};
    use super::*;

    /// `memlab occupancy` output for the textbook SM at 512 threads and 40 registers.
    const OCCUPANCY_OUTPUT: &str = "resident per SM: 3 blocks = 48 warps = 1536 threads\n\
                                    occupancy: 75.0% (limited by registers)\n";

    #[test]
    fn an_exercise_whose_stated_answer_is_stale_fails() {
        let ex = EXERCISES.iter().find(|e| e.id == "machine-registers-limit").unwrap();
        assert!(exercise_page(ex, OCCUPANCY_OUTPUT).unwrap().contains("**75.0% (limited by registers).**"));
        // The model now says something else than the book: the build must stop and say both.
        let moved = OCCUPANCY_OUTPUT.replace("75.0%", "62.5%");
        let err = exercise_page(ex, &moved).unwrap_err().to_string();
        assert!(
            err.contains("\"75.0% (limited by registers)\"") && err.contains("\"62.5% (limited by registers)\""),
            "{err}"
        );
    }

    #[test]
    fn a_stale_generated_number_is_named() {
        let fresh: Files = [("report/banks.md".to_string(), b"| 16 | 8.507 | 15.70 | 16 |".to_vec())].into();
        let committed: Files = [("report/banks.md".to_string(), b"| 16 | 8.507 | 15.71 | 16 |".to_vec())].into();
        assert_eq!(stale(&committed, &fresh), ["report/banks.md (differs)"]);
        assert!(stale(&fresh, &fresh).is_empty());
        let extra: Files = [("report/old.md".to_string(), Vec::new())].into_iter().chain(fresh.clone()).collect();
        assert_eq!(stale(&extra, &fresh), ["report/old.md (no longer generated)"]);
    }

    #[test]
    fn answers_are_read_from_table_cells_and_lines() {
        let tables = "| stride | sector model |\n|---|---|\n| 64 | 0.125 |\n\n\
                      | cap | regs | local B (spills) |\n|---|---|---|\n| 64 | 64 | 400 |\n";
        let cell = |column, row| pick_answer(tables, Pick::Cell { column, row });
        assert_eq!(cell("local B (spills)", &["64"]).as_deref(), Some("400"));
        assert_eq!(cell("sector model", &["64"]).as_deref(), Some("0.125"));
        assert_eq!(cell("regs", &["65"]), None);
        assert_eq!(cell("no such column", &["64"]), None);
        assert_eq!(
            pick_answer(OCCUPANCY_OUTPUT, Pick::After("occupancy:")).as_deref(),
            Some("75.0% (limited by registers)")
        );
    }

    #[test]
    fn report_sections_go_to_their_files_and_an_unclaimed_one_to_the_appendix() {
        let report =
            "# memlab report: X\n\n| a |\n\n## Charts\n\n![c.svg](c.svg)\n\n## Tables\n\n## Roofline: r\n\ntext\n";
        let sections = split_report(report).unwrap();
        let names: Vec<&str> = sections.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["device", "roofline", OTHER_LESSONS]);
        assert!(sections[1].1.contains("### Roofline: r"), "{}", sections[1].1);
        assert!(!sections[2].1.contains("##"), "{}", sections[2].1);
        // A section no chapter claims lands under the appendix page's own heading.
        let sections = split_report("## Roofline: r\n\n## Peer memory: new lesson\n\n### rows\n").unwrap();
        let names: Vec<&str> = sections.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["roofline", OTHER_LESSONS]);
        let page = &sections[1].1;
        assert!(page.contains("## Lessons without a chapter of their own\n\n### Peer memory: new lesson"), "{page}");
        assert!(page.contains("#### rows") && !page.contains("Roofline"), "{page}");
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-book-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_missing_anchor_or_file_is_reported() {
        let dir = scratch("anchors");
        fs::write(dir.join("k.rs"), "// ANCHOR: good\nfn f() {}\n// ANCHOR_END: good\n// ANCHOR: open\n").unwrap();
        fs::write(
            dir.join("c.md"),
            "{{#include k.rs:good}}\n{{#include k.rs:open}}\n{{#include k.rs:goo}}\n{{#include generated/nope.md}}\n\\{{#include k.rs:escaped}}\n{{#include k.rs:2:}}\n{{#include k.rs:1:3}}\n{{#include gone.md:3:}}\n",
        )
        .unwrap();
        let problems = checks::check_includes(&dir).unwrap();
        assert_eq!(problems.len(), 4, "{problems:?}");
        let generated = ["nope.md".to_string(), "exercises/x.md".to_string(), "charts/x.png".to_string()];
        assert_eq!(checks::unshown(&dir, generated.iter()).unwrap(), ["exercises/x.md"]);
        assert!(problems[0].contains("anchor open"));
        assert!(problems[1].contains("anchor goo"));
        assert!(problems[2].contains("nope.md does not exist"));
        assert!(problems[3].contains("included file gone.md does not exist"), "{}", problems[3]);
    }

    #[test]
    fn a_broken_link_or_image_is_reported() {
        let dir = scratch("links");
        fs::create_dir_all(dir.join("img")).unwrap();
        fs::write(dir.join("img/a.png"), b"png").unwrap();
        fs::write(
            dir.join("a.html"),
            r##"<h2 id="x">x</h2> <a href="b.html#y">ok</a> <img src="img/a.png"> <a href="#x">ok</a>
            <a href="https://example.org/">skipped</a> <img src="img/missing.png"> <a href="b.html#z">bad</a>"##,
        )
        .unwrap();
        fs::write(dir.join("b.html"), r#"<p id="y"></p>"#).unwrap();
        let broken = checks::check_links(&dir).unwrap();
        assert_eq!(broken.len(), 2, "{broken:?}");
        assert!(broken.iter().any(|b| b.contains("img/missing.png")));
        assert!(broken.iter().any(|b| b.contains("no id z")));
    }

    #[test]
    fn the_browser_probe_is_read_back() {
        let dom = r#"<html data-book-check="Shared memory &amp; banks|generated/charts/banks.png=1200,x.png=0"><body>"#;
        let check = browser::parse_dump(dom).unwrap();
        assert_eq!(check.heading, "Shared memory & banks");
        assert_eq!(check.images, [("generated/charts/banks.png".to_string(), 1200), ("x.png".to_string(), 0)]);
        assert_eq!(browser::parse_dump("<html><body>"), None);
    }

    #[test]
    fn every_chapter_of_the_summary_is_checked_in_the_browser() {
        let pages = chapter_pages(&book_dir().join("src/SUMMARY.md"), Path::new("/b")).unwrap();
        for chapter in [
            "machine",
            "global-memory",
            "shared-memory",
            "tiling",
            "registers",
            "latency",
            "beyond",
            "rust-cuda",
            "using-the-tool",
            "measured-on-the-h200",
        ] {
            assert!(pages.contains(&Path::new("/b").join(format!("{chapter}.html"))), "{chapter}: {pages:?}");
        }
    }
}
