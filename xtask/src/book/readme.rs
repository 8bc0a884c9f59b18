//! The README's measured tables, written by the generator: each sits between a `BEGIN` line that
//! names its source and an `END` line, and `cargo xtask book` rewrites what lies between them
//! (`--check` fails when the README differs from what it would write). Sources:
//!
//! - `report SECTION table N` and optionally `columns A | B | C`: the N-th table (from 1) of the
//!   recorded run's report section SECTION (a name of `sources::REPORT_SECTIONS`), with only the
//!   named columns, in that order;
//! - `PATH:ANCHOR`: the lines between `<!-- ANCHOR: ANCHOR -->` and `<!-- ANCHOR_END: ANCHOR -->`
//!   of a recorded measurement page (mdBook's anchors, so the book can include the same lines).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::LazyLock;

use anyhow::{Context, Result, bail};
use regex::Regex;

pub const BEGIN: &str = "<!-- generated from ";
pub const END: &str = "<!-- end generated -->";

/// `readme` with every generated block rewritten from its source. `sections` maps a report
/// section's name to its text; `root` is the repository, for the `PATH:ANCHOR` sources.
pub fn fill(readme: &str, sections: &BTreeMap<String, String>, root: &Path) -> Result<String> {
    let mut out = String::new();
    let mut lines = readme.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        out.push_str(line);
        out.push('\n');
        let Some(source) = line.trim().strip_prefix(BEGIN).and_then(|s| s.strip_suffix("-->")) else {
            continue;
        };
        let source = source.trim();
        let body = block(source, sections, root).with_context(|| format!("README.md:{}: {source}", i + 1))?;
        out.push_str(&body);
        loop {
            match lines.next() {
                Some((_, l)) if l.trim() == END => break,
                Some(_) => {}
                None => bail!("README.md:{}: the generated block has no `{END}` line", i + 1),
            }
        }
        out.push_str(END);
        out.push('\n');
    }
    Ok(out)
}

fn block(source: &str, sections: &BTreeMap<String, String>, root: &Path) -> Result<String> {
    if let Some(rest) = source.strip_prefix("report ") {
        let (spec, columns) = match rest.split_once(" columns ") {
            Some((spec, cols)) => (spec, Some(cols.split('|').map(str::trim).collect::<Vec<_>>())),
            None => (rest, None),
        };
        let (section, n) = spec.split_once(" table ").context("expected `report SECTION table N`")?;
        let text = sections.get(section.trim()).with_context(|| format!("no report section `{section}`"))?;
        let n: usize = n.trim().parse().context("the table number is not a number")?;
        let tables = tables(text);
        let table = tables
            .get(n.wrapping_sub(1))
            .with_context(|| format!("report section `{section}` has {} tables, not a table {n}", tables.len()))?;
        return select(table, columns.as_deref());
    }
    let (path, anchor) = source.rsplit_once(':').context("expected `report ...` or `PATH:ANCHOR`")?;
    let text = fs::read_to_string(root.join(path)).with_context(|| format!("cannot read {path}"))?;
    let start = format!("<!-- ANCHOR: {anchor} -->");
    let end = format!("<!-- ANCHOR_END: {anchor} -->");
    let from = text.find(&start).with_context(|| format!("{path} has no `{start}`"))? + start.len();
    let to = text[from..].find(&end).with_context(|| format!("{path} has no `{end}`"))? + from;
    let dir = Path::new(path).parent().unwrap_or(Path::new(""));
    Ok(rebase_links(text[from..to].trim_start_matches('\n'), dir))
}

/// `text` with its relative Markdown links, written from `dir`, made relative to the root.
fn rebase_links(text: &str, dir: &Path) -> String {
    static LINK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\]\(([^)\s]+)\)").unwrap());
    LINK.replace_all(text, |c: &regex::Captures| {
        let target = &c[1];
        if target.contains("://") || target.starts_with('#') || target.starts_with('/') {
            return c[0].to_string();
        }
        let mut parts: Vec<&str> = dir.to_str().unwrap_or("").split('/').filter(|p| !p.is_empty()).collect();
        for part in target.split('/') {
            match part {
                ".." => {
                    parts.pop();
                }
                "." => {}
                p => parts.push(p),
            }
        }
        format!("]({})", parts.join("/"))
    })
    .into_owned()
}

/// The Markdown tables of `text`, each as rows of trimmed cells (the `|---|` rule dropped).
fn tables(text: &str) -> Vec<Vec<Vec<String>>> {
    let mut out: Vec<Vec<Vec<String>>> = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        let Some(inner) = line.trim().strip_prefix('|').and_then(|l| l.strip_suffix('|')) else {
            in_table = false;
            continue;
        };
        if !in_table {
            out.push(Vec::new());
            in_table = true;
        }
        let cells: Vec<String> = inner.split('|').map(|c| c.trim().to_string()).collect();
        if !cells.iter().all(|c| !c.is_empty() && c.chars().all(|ch| ch == '-' || ch == ':')) {
            out.last_mut().unwrap().push(cells);
        }
    }
    out
}

/// `table` as Markdown, with only `columns` (by header) when given.
fn select(table: &[Vec<String>], columns: Option<&[&str]>) -> Result<String> {
    let header = table.first().context("an empty table")?;
    let picks: Vec<usize> = match columns {
        None => (0..header.len()).collect(),
        Some(names) => names
            .iter()
            .map(|name| {
                header.iter().position(|h| h == name).with_context(|| format!("no column `{name}` in {header:?}"))
            })
            .collect::<Result<_>>()?,
    };
    let row = |cells: &[String]| {
        let picked: Vec<&str> = picks.iter().map(|&i| cells.get(i).map_or("", String::as_str)).collect();
        format!("| {} |\n", picked.join(" | "))
    };
    let mut out = row(header);
    out.push_str(&format!("|{}\n", "---|".repeat(picks.len())));
    for cells in &table[1..] {
        out.push_str(&row(cells));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sections() -> BTreeMap<String, String> {
        let text = "### Transpose\n\n| kernel | lesson | rate | % memcpy |\n|---|---|---|---|\n\
                    | copy | coalesced | 3958 GB/s | 97% |\n| transpose_naive | strided | 553 GB/s | 14% |\n\n\
                    - a note\n\n| kernel | TFLOP/s |\n|---|---|\n| x | 1.0 |\n";
        BTreeMap::from([("transpose".to_string(), text.to_string())])
    }

    #[test]
    fn a_block_takes_the_named_table_and_columns_of_its_section() {
        let readme = format!("intro\n{BEGIN}report transpose table 1 columns kernel | rate -->\nstale\n{END}\nafter\n");
        let filled = fill(&readme, &sections(), Path::new(".")).unwrap();
        assert_eq!(
            filled,
            format!(
                "intro\n{BEGIN}report transpose table 1 columns kernel | rate -->\n| kernel | rate |\n|---|---|\n\
                 | copy | 3958 GB/s |\n| transpose_naive | 553 GB/s |\n{END}\nafter\n"
            )
        );
        // The filled README is what the generator writes again: the check passes on it, and a
        // figure changed by hand inside the block is rewritten (so `--check` fails on it).
        assert_eq!(fill(&filled, &sections(), Path::new(".")).unwrap(), filled);
        let edited = filled.replace("3958", "4103");
        assert_ne!(fill(&edited, &sections(), Path::new(".")).unwrap(), edited);
    }

    #[test]
    fn a_second_table_and_an_anchor_of_a_page() {
        let dir = std::env::temp_dir().join(format!("memlab-readme-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::create_dir_all(dir.join("docs/m")).unwrap();
        let page = "# M\n<!-- ANCHOR: t -->\n| a |\n|---|\n| 1 |\n[r](records/x.json), [b](../b.md#s), [w](https://x.org/a)\n<!-- ANCHOR_END: t -->\n";
        fs::write(dir.join("docs/m/m.md"), page).unwrap();
        let readme = format!("{BEGIN}report transpose table 2 -->\n{END}\n{BEGIN}docs/m/m.md:t -->\n{END}\n");
        let filled = fill(&readme, &sections(), &dir).unwrap();
        assert!(filled.contains("| kernel | TFLOP/s |\n|---|---|\n| x | 1.0 |\n"), "{filled}");
        // Its links, relative to docs/m, become relative to the root where the README is.
        let links = "[r](docs/m/records/x.json), [b](docs/b.md#s), [w](https://x.org/a)";
        assert!(filled.contains(&format!("m.md:t -->\n| a |\n|---|\n| 1 |\n{links}\n<!-- end")), "{filled}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_source_that_names_nothing_real_is_refused_with_its_line() {
        for (source, expect) in [
            ("report sgemm table 1", "no report section `sgemm`"),
            ("report transpose table 3", "has 2 tables, not a table 3"),
            ("report transpose table 1 columns kernel | speed", "no column `speed`"),
            ("missing.md:t", "cannot read missing.md"),
        ] {
            let readme = format!("x\n{BEGIN}{source} -->\n{END}\n");
            let err = format!("{:#}", fill(&readme, &sections(), Path::new(".")).unwrap_err());
            assert!(err.starts_with(&format!("README.md:2: {source}")) && err.contains(expect), "{err}");
        }
        let open = format!("{BEGIN}report transpose table 1 -->\nno end\n");
        assert!(format!("{:#}", fill(&open, &sections(), Path::new(".")).unwrap_err()).contains("has no"));
    }
}
