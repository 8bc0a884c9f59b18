//! Checks of the book's sources and of the built HTML, no network: every `{{#include}}` resolves
//! (file and anchor), every relative link and image of the built pages points at a file that
//! exists (and at an id that exists, for fragments), and the search index was written.

use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The `{{#include PATH[:ANCHOR]}}` and `{{#include PATH:START:END}}` directives of a chapter:
/// (path, anchor; none for a whole file or a line range).
pub fn includes(markdown: &str) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let mut rest = markdown;
    while let Some(start) = rest.find("{{#include ") {
        let after = &rest[start + "{{#include ".len()..];
        let Some(end) = after.find("}}") else { break };
        // `\{{#include ...}}` is mdBook's escape: shown as text, not included.
        if rest[..start].ends_with('\\') {
            rest = &after[end..];
            continue;
        }
        let target = after[..end].trim();
        let (path, selector) = target.split_once(':').unwrap_or((target, ""));
        // mdBook's line ranges (`PATH:3`, `PATH:3:`, `PATH::9`, `PATH:3:9`) name no anchor.
        let is_range = selector.split(':').all(|part| part.chars().all(|c| c.is_ascii_digit()));
        let anchor = (!is_range).then(|| selector.to_string());
        found.push((path.to_string(), anchor));
        rest = &after[end..];
    }
    found
}

/// True when `text` holds `MARK: name` with `name` ending there (not a longer anchor's prefix).
fn has_anchor_mark(text: &str, mark: &str, name: &str) -> bool {
    let needle = format!("{mark} {name}");
    text.match_indices(&needle).any(|(i, _)| {
        let before_ok = mark != "ANCHOR:" || !text[..i].ends_with("_END");
        let next = text[i + needle.len()..].chars().next();
        before_ok && !next.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
    })
}

/// Every include of every chapter in `src` resolves: the file exists and holds both marks of
/// its anchor. Returns the problems, one line each.
pub fn check_includes(src: &Path) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    for chapter in markdown_files(src)? {
        let text = fs::read_to_string(&chapter)?;
        for (path, anchor) in includes(&text) {
            let file = chapter.parent().unwrap().join(&path);
            let name = chapter.strip_prefix(src).unwrap_or(&chapter).display().to_string();
            let Ok(body) = fs::read_to_string(&file) else {
                problems.push(format!("{name}: included file {path} does not exist"));
                continue;
            };
            if let Some(anchor) = anchor
                && !(has_anchor_mark(&body, "ANCHOR:", &anchor) && has_anchor_mark(&body, "ANCHOR_END:", &anchor))
            {
                problems.push(format!("{name}: anchor {anchor} is missing from {path} (needs `// ANCHOR: {anchor}` and `// ANCHOR_END: {anchor}`)"));
            }
        }
    }
    Ok(problems)
}

/// Generated pages (`generated/...md`, names as in `generated`) that no chapter in `src`
/// includes: an exercise or table written but never shown.
pub fn unshown<'a>(src: &Path, generated: impl Iterator<Item = &'a String>) -> Result<Vec<String>> {
    let mut shown = std::collections::BTreeSet::new();
    for chapter in markdown_files(src)? {
        for (path, _) in includes(&fs::read_to_string(&chapter)?) {
            shown.insert(path);
        }
    }
    Ok(generated.filter(|g| g.ends_with(".md") && !shown.contains(&format!("generated/{g}"))).cloned().collect())
}

pub(super) fn markdown_files(src: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(src).with_context(|| format!("reading {}", src.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// The values of `attr="..."` in an HTML page.
fn attribute_values<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
    let needle = format!(" {attr}=\"");
    html.match_indices(&needle)
        .filter_map(|(i, _)| {
            let value = &html[i + needle.len()..];
            value.find('"').map(|end| &value[..end])
        })
        .collect()
}

/// `path` with `.` and `..` folded, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Every relative `href` and `src` of every page under `html_root` points at a file inside it,
/// and every fragment at an `id` of its page. `print.html` is checked for files only (mdBook
/// rewrites its links to fragments of the one page); `404.html` is skipped. Returns the broken links, one line each.
pub fn check_links(html_root: &Path) -> Result<Vec<String>> {
    let mut broken = Vec::new();
    let mut pages = Vec::new();
    collect_html(html_root, &mut pages)?;
    // 404.html resolves its links against the site's root (`<base href="/">`), not its folder.
    pages.retain(|p| !p.ends_with("404.html"));
    for page in &pages {
        let html = fs::read_to_string(page)?;
        let name = page.strip_prefix(html_root).unwrap_or(page).display().to_string();
        for link in attribute_values(&html, "href").into_iter().chain(attribute_values(&html, "src")) {
            if link.contains("://") || link.starts_with("mailto:") || link.starts_with("data:") || link.is_empty() {
                continue;
            }
            let (file, fragment) = match link.split_once('#') {
                Some((f, frag)) => (f, Some(frag)),
                None => (link, None),
            };
            let file = file.split('?').next().unwrap_or_default();
            let target = if file.is_empty() { page.clone() } else { normalize(&page.parent().unwrap().join(file)) };
            if !target.starts_with(html_root) || !target.is_file() {
                broken.push(format!("{name}: {link} (no such file)"));
                continue;
            }
            if let Some(fragment) = fragment
                && !fragment.is_empty()
                && !name.ends_with("print.html")
                && target.extension().is_some_and(|e| e == "html")
            {
                let body = fs::read_to_string(&target)?;
                if !body.contains(&format!("id=\"{fragment}\"")) {
                    broken.push(format!("{name}: {link} (no id {fragment})"));
                }
            }
        }
    }
    Ok(broken)
}

fn collect_html(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_html(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "html") {
            out.push(path);
        }
    }
    Ok(())
}

/// mdBook's search index was written and knows `word`.
pub fn check_search_index(html_root: &Path, word: &str) -> Result<()> {
    let index = ["searchindex.js", "searchindex.json"]
        .iter()
        .map(|n| html_root.join(n))
        .find(|p| p.is_file())
        .context("the built book has no searchindex.js or searchindex.json (search disabled?)")?;
    let text = fs::read_to_string(&index)?;
    if !text.contains(word) {
        bail!("{} does not index the word {word:?}", index.display());
    }
    Ok(())
}
