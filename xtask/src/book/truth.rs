//! The truth check of the chapters and the README: a measured figure reaches a page only through
//! the generator (an `{{#include}}` of a generated page or of a recorded measurement file, or a
//! README block that `readme.rs` writes), and a page says what is true now, not when it was
//! found or what it replaced (history belongs in git).
//!
//! A line is skipped inside a code fence, an `{{#include}}` line, an HTML comment line and a
//! generated README block. A figure is a number with a unit of time, rate or clock, a ratio
//! (`0.92x`) or a percentage. A line that cites where a figure is published (the CUDA C++
//! Programming Guide, the PTX ISA, a datasheet or whitepaper, "published") states a fact of the
//! hardware, not a measurement, and may carry one.

use std::sync::LazyLock;

use regex::Regex;

/// A number with a unit of time, rate or clock, a ratio, or a percentage.
static FIGURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(^|[^\w.])\d[\d,]*(\.\d+)?\s?(GB/s|TB/s|MB/s|TFLOP/s|GFLOP/s|cycles|ns|µs|us|ms|GHz|MHz)([^\w]|$)|(^|[^\w.])\d+(\.\d+)?x([^\w]|$)|(^|[^\w.])\d+(\.\d+)?%",
    )
    .unwrap()
});

/// A date (ISO, or a month and year), or words that tell the page's history instead of what is
/// true now.
static DATED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b20\d\d-\d\d-\d\d\b|\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sept?(ember)?|oct(ober)?|nov(ember)?|dec(ember)?)\.?( \d{1,2},?)? 20\d\d\b|since removed|\ban earlier (try|version|run|attempt)\b|(before|after) the fix|\b(was|now) fixed\b|\bwe (found|fixed|changed)\b|\bthis (commit|pr)\b|\bused to be\b|\(before:|\bissue \d+|(^|\s)#\d+\b|\bround \d+\b|\bthis session\b",
    )
    .unwrap()
});

/// A citation of a published hardware fact.
static CITED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)programming guide|ptx isa|datasheet|whitepaper|published").unwrap());

/// What is wrong with one line of a page.
#[derive(Debug, PartialEq)]
pub struct Finding {
    pub line: usize,
    pub kind: Kind,
    pub text: String,
}

#[derive(Debug, PartialEq, Clone, Copy)]
pub enum Kind {
    /// A measured figure typed into the page instead of generated (an include of the recorded
    /// run or of a docs/measurements page).
    TypedFigure,
    /// A date or a work-log phrase: say what is true now; history belongs in git.
    Dated,
}

impl Finding {
    /// One line: where, what, and the sentence's start.
    pub fn describe(&self, file: &str) -> String {
        let what = match self.kind {
            Kind::TypedFigure => "figure typed by hand",
            Kind::Dated => "dated or work-log sentence",
        };
        let start: String = self.text.chars().take(90).collect();
        format!("{file}:{}: {what}: {start}", self.line)
    }
}

/// The findings of one page (a chapter or the README), one per sentence (a table row is one).
pub fn scan(text: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut paragraph: Vec<(usize, &str)> = Vec::new();
    let mut fence = false;
    let mut generated = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let skipped = if trimmed.starts_with("```") {
            fence = !fence;
            true
        } else if trimmed.starts_with(super::readme::BEGIN) {
            generated = true;
            true
        } else if trimmed.starts_with(super::readme::END) {
            generated = false;
            true
        } else {
            fence || generated || trimmed.starts_with("{{#include") || trimmed.starts_with("<!--")
        };
        if skipped || trimmed.is_empty() || trimmed.starts_with('|') {
            check_paragraph(&paragraph, &mut findings);
            paragraph.clear();
            if !skipped && trimmed.starts_with('|') {
                check(i + 1, line, &mut findings);
            }
        } else {
            paragraph.push((i + 1, line));
        }
    }
    check_paragraph(&paragraph, &mut findings);
    findings
}

/// Checks each sentence of a paragraph: one ends at `.`, `!` or `?` before a space and a capital
/// letter, a backtick or a bracket.
fn check_paragraph(paragraph: &[(usize, &str)], findings: &mut Vec<Finding>) {
    let mut chars: Vec<(usize, char)> = Vec::new();
    for (line, text) in paragraph {
        chars.extend(text.trim().chars().map(|c| (*line, c)));
        chars.push((*line, ' '));
    }
    let mut start = 0;
    for i in 0..chars.len() {
        let ends = matches!(chars[i].1, '.' | '!' | '?')
            && chars.get(i + 1).is_some_and(|c| c.1.is_whitespace())
            && chars.get(i + 2).is_some_and(|c| c.1.is_uppercase() || matches!(c.1, '`' | '[' | '*' | '('));
        if ends || i + 1 == chars.len() {
            let sentence: String = chars[start..=i].iter().map(|c| c.1).collect();
            let line = chars[start..=i].iter().find(|c| !c.1.is_whitespace()).map_or(chars[start].0, |c| c.0);
            check(line, &sentence, findings);
            start = i + 1;
        }
    }
}

fn check(line: usize, sentence: &str, findings: &mut Vec<Finding>) {
    let text = sentence.trim().to_string();
    let kind = if DATED.is_match(&text) {
        Kind::Dated
    } else if FIGURE.is_match(&text) && !CITED.is_match(&text) {
        Kind::TypedFigure
    } else {
        return;
    };
    findings.push(Finding { line, kind, text });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(usize, Kind)> {
        scan(text).into_iter().map(|f| (f.line, f.kind)).collect()
    }

    #[test]
    fn a_planted_typed_figure_fails_and_generated_ones_pass() {
        let page = "# Shared memory\n\nThe padded tile removes the conflict.\n\
                    {{#include generated/report/transpose.md}}\n\
                    It ran at 3439 GB/s, 84% of memcpy.\n";
        assert_eq!(kinds(page), [(5, Kind::TypedFigure)]);
        for planted in ["0.92x cuBLAS", "about 200 cycles", "12% occupancy", "347 ns", "1.5 TFLOP/s"] {
            assert_eq!(kinds(&format!("text {planted} text\n")), [(1, Kind::TypedFigure)], "{planted}");
        }
    }

    #[test]
    fn a_sentence_is_judged_whole_and_reported_at_its_first_line() {
        let page = "The copy engine reaches, by the published finding,\n95% of HBM peak. It ran at\n3439 GB/s here.\n";
        assert_eq!(kinds(page), [(2, Kind::TypedFigure)]);
    }

    #[test]
    fn a_planted_dated_sentence_fails() {
        for planted in [
            "Measured on the H200 (2026-11-30), the copy",
            "`copy_flat`, since removed, wrote",
            "an earlier try ran at 69%",
            "the slow path (before: 0.68x)",
            "as issue 13 asked",
            "fixed in #17",
            "Measured in December 2026 on the H200",
            "on Dec 4, 2026 the copy",
            "as of Sept. 2026",
            "the conflict, now fixed, cost",
            "We found that the tile",
            "the kernel used to be slower",
            "after the fix the copy",
            "this commit pads the tile",
        ] {
            assert_eq!(kinds(&format!("{planted}\n")), [(1, Kind::Dated)], "{planted}");
        }
    }

    /// A chapter as committed, with `planted` put in as a paragraph of its own after line
    /// `after`: the findings (line, kind).
    fn planted_in_chapter(chapter: &str, after: usize, planted: &str) -> Vec<(usize, Kind)> {
        let mut lines: Vec<&str> = chapter.lines().collect();
        lines.splice(after..after, ["", planted, ""]);
        kinds(&lines.join("\n"))
    }

    #[test]
    fn a_chapter_fails_on_a_planted_figure_or_work_log_sentence_and_passes_without() {
        let chapter = include_str!("../../../docs/book/src/shared-memory.md");
        assert_eq!(kinds(chapter), [], "the chapter as committed");
        // Line 19 ends the paragraph on padding; the planted one is line 21.
        let measured = "Measured on the H200, the padded transpose ran at 3229 GB/s, 81% of memcpy.";
        assert_eq!(planted_in_chapter(chapter, 19, measured), [(21, Kind::TypedFigure)]);
        let log = "The padded tile replaced the tiled one (2026-11-30), since removed from the ladder.";
        assert_eq!(planted_in_chapter(chapter, 19, log), [(21, Kind::Dated)]);
        // A figure in a sentence of a paragraph is found at that sentence's first line.
        let mut lines: Vec<&str> = chapter.lines().collect();
        lines[17] = "pitch of 33 it ran at 3229 GB/s. Lane `t` reading column `c` lands in bank `(33 t + c) mod 32 = (t + c) mod 32`, a";
        assert_eq!(kinds(&lines.join("\n")), [(17, Kind::TypedFigure)]);
    }

    #[test]
    fn every_chapter_and_the_readme_pass() {
        let src = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/book/src"));
        let readme = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"));
        let pages = super::super::checks::markdown_files(src).unwrap();
        assert!(pages.len() > 10, "{pages:?}");
        for page in pages.iter().map(|p| p.as_path()).chain([readme]) {
            let findings = scan(&std::fs::read_to_string(page).unwrap());
            assert_eq!(findings, [], "{}", page.display());
        }
    }

    #[test]
    fn code_includes_comments_generated_blocks_and_cited_facts_pass() {
        let page = format!(
            "```text\n4103 GB/s\n```\n<!-- 4103 GB/s -->\n{}\n| memcpy | 4103 GB/s |\n{}\n\
             HBM3e gives 4.8 TB/s (published datasheet).\n\
             A 32x33 tile, 8 warps of 32 threads, 16-byte loads, sm_90a, 2^-8, 128-byte lines.\n",
            super::super::readme::BEGIN,
            super::super::readme::END
        );
        assert_eq!(kinds(&page), []);
    }
}
