//! How tables and text reach the reader: full Markdown tables (`--format markdown`, and the
//! report folder), or tables that fit the terminal: cells wrapped by comfy-table's dynamic
//! arrangement, columns whose cell is the same on every row said once above the table, and
//! paragraphs wrapped to the width.
//!
//! The width is `COLUMNS` when set, else the terminal's, else [`PIPE_WIDTH`] when the output
//! is not a terminal.

use std::collections::HashSet;
use std::sync::OnceLock;

use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width, presets::ASCII_MARKDOWN};
use textwrap::core::Word;

/// Width of the terminal layout when the output is not a terminal and `COLUMNS` is not set.
pub const PIPE_WIDTH: u16 = 120;

/// Narrowest width laid out; a narrower terminal gets this width (and lines that wrap).
pub const MIN_WIDTH: u16 = 60;

/// Characters of a table's first column kept on one line (the longest kernel name is 26).
const FIRST_COLUMN: usize = 28;

/// Characters of a word kept whole in the other columns.
const WORD: usize = 18;

/// What `--format` asks for.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// Tables that fit the terminal's width (120 columns when not a terminal).
    #[default]
    Terminal,
    /// Full Markdown tables, every column, one line per row.
    Markdown,
}

/// A resolved layout: Markdown, or the terminal layout at a width in columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Full Markdown tables.
    Markdown,
    /// Every line at most this many columns.
    Terminal(u16),
}

static FORMAT: OnceLock<Format> = OnceLock::new();

/// Sets the format of this process's output (`main` calls it once, from `--format`).
pub fn set_format(format: Format) {
    let _ = FORMAT.set(format);
}

impl Layout {
    /// The layout of this process's standard output.
    pub fn current() -> Layout {
        match FORMAT.get().copied().unwrap_or_default() {
            Format::Markdown => Layout::Markdown,
            Format::Terminal => Layout::Terminal(terminal_width()),
        }
    }

    /// Whether this is the terminal layout.
    pub fn is_terminal(self) -> bool {
        matches!(self, Layout::Terminal(_))
    }
}

/// `COLUMNS` when it is a number, else the terminal's width, else [`PIPE_WIDTH`]; never below
/// [`MIN_WIDTH`].
pub fn terminal_width() -> u16 {
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<u16>().ok());
    // comfy-table reads the terminal's size only when stdout is one.
    columns.or_else(|| Table::new().width()).unwrap_or(PIPE_WIDTH).max(MIN_WIDTH)
}

/// A table of `header` and `rows`: Markdown (one line per row), or fitted to the terminal's
/// width, cells wrapped. Columns that do not fit at their words' widths (see [`fitting_columns`])
/// leave the terminal table and follow it, one line per row.
pub fn render(layout: Layout, header: Vec<String>, rows: Vec<Vec<String>>) -> String {
    let Layout::Terminal(width) = layout else {
        return table(&header, &rows, None);
    };
    let bounds = word_bounds(&header, &rows);
    let keep = fitting_columns(&bounds, width);
    if keep.iter().all(|&k| k) {
        return table(&header, &rows, Some((width, &bounds)));
    }
    let pick = |cells: &[String]| -> Vec<String> {
        cells.iter().zip(&keep).filter(|(_, k)| **k).map(|(c, _)| c.clone()).collect()
    };
    let kept_bounds: Vec<usize> = bounds.iter().zip(&keep).filter(|(_, k)| **k).map(|(b, _)| *b).collect();
    let kept_rows: Vec<Vec<String>> = rows.iter().map(|r| pick(r)).collect();
    let mut out = table(&pick(&header), &kept_rows, Some((width, &kept_bounds)));
    // A row is named by its first cell, or by its first two when the first repeats (one kernel
    // at several sizes).
    let by_two = header.len() > 1 && rows.iter().map(|r| &r[0]).collect::<HashSet<_>>().len() < rows.len();
    for row in &rows {
        let name = if by_two { format!("{} {}", row[0], row[1]) } else { row[0].clone() };
        let moved: Vec<String> = (1..header.len())
            .filter(|&c| !keep[c] && !(by_two && c == 1))
            .map(|c| format!("{}: {}", header[c], row[c]))
            .collect();
        out += "\n";
        out += &bullet(layout, &format!("{name}: {}", moved.join("; ")));
    }
    out
}

/// Which columns stay in a terminal table of `width` columns, given each column's longest word
/// (`bounds`, from [`word_bounds`]): a column takes its words, 2 of padding and a border. While
/// they do not fit, the widest column but the first leaves (the rightmost of equals); two
/// columns always stay.
pub fn fitting_columns(bounds: &[usize], width: u16) -> Vec<bool> {
    let mut keep = vec![true; bounds.len()];
    let needed = |keep: &[bool]| 1 + bounds.iter().zip(keep).filter(|(_, k)| **k).map(|(b, _)| b + 3).sum::<usize>();
    while needed(&keep) > width as usize && keep.iter().filter(|&&k| k).count() > 2 {
        let widest = (1..bounds.len()).filter(|&c| keep[c]).max_by_key(|&c| (bounds[c], c));
        keep[widest.expect("more than two columns kept")] = false;
    }
    keep
}

/// Each column's longest word, capped: [`FIRST_COLUMN`] characters in the first column (it names
/// the row: a kernel, a level), [`WORD`] in the others.
fn word_bounds(header: &[String], rows: &[Vec<String>]) -> Vec<usize> {
    let words = longest_words(header, rows);
    words.iter().enumerate().map(|(c, &w)| w.min(if c == 0 { FIRST_COLUMN } else { WORD })).collect()
}

/// comfy-table's Markdown table; with `fit` (width, word bounds) wrapped to the width, each
/// column kept at least as wide as its bound where the width allows it.
fn table(header: &[String], rows: &[Vec<String>], fit: Option<(u16, &[usize])>) -> String {
    let mut t = Table::new();
    t.load_preset(ASCII_MARKDOWN);
    t.set_header(header.to_vec());
    for row in rows {
        t.add_row(row.clone());
    }
    if let Some((width, bounds)) = fit {
        t.set_content_arrangement(ContentArrangement::Dynamic).set_width(width);
        // The first column first, then the narrowest, while the table still fits (a column
        // takes its words, 2 of padding and a border; an unbounded one at least 4).
        let mut order: Vec<usize> = (1..bounds.len()).collect();
        order.sort_by_key(|&c| bounds[c]);
        let mut used = 1 + 4 * bounds.len();
        for c in std::iter::once(0).chain(order) {
            if used + bounds[c].saturating_sub(1) > width as usize {
                break;
            }
            used += bounds[c].saturating_sub(1);
            if let Some(column) = t.column_mut(c) {
                column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(bounds[c] as u16 + 2)));
            }
        }
    }
    t.to_string()
}

/// The longest word (space-separated) of each column, header included, in characters.
fn longest_words(header: &[String], rows: &[Vec<String>]) -> Vec<usize> {
    let mut longest = vec![0; header.len()];
    for row in rows.iter().chain([&header.to_vec()]) {
        for (c, cell) in row.iter().enumerate().take(header.len()) {
            let w = cell.split_whitespace().map(|w| w.chars().count()).max().unwrap_or(0);
            longest[c] = longest[c].max(w);
        }
    }
    longest
}

/// [`render`] after [`condense`] in the terminal layout: columns with one value on every row
/// (of two or more) become a line above the table.
pub fn render_condensed(layout: Layout, header: Vec<String>, rows: Vec<Vec<String>>) -> String {
    if !layout.is_terminal() {
        return render(layout, header, rows);
    }
    let Condensed { common, header, rows } = condense(header, rows);
    let mut out = String::new();
    if !common.is_empty() {
        let said: Vec<String> = common.iter().map(|(h, v)| format!("{h} {v}")).collect();
        out += &text(layout, &format!("Every row: {}.", said.join("; ")));
        out += "\n";
    }
    out + &render(layout, header, rows)
}

/// A table with the columns that hold one value on every row taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condensed {
    /// Header and value of each column taken out.
    pub common: Vec<(String, String)>,
    /// The remaining header.
    pub header: Vec<String>,
    /// The remaining rows.
    pub rows: Vec<Vec<String>>,
}

/// Takes out the columns (but the first) whose cells are equal on every row, when there are two
/// rows or more.
pub fn condense(header: Vec<String>, rows: Vec<Vec<String>>) -> Condensed {
    if rows.len() < 2 {
        return Condensed { common: Vec::new(), header, rows };
    }
    let same = |c: usize| rows.iter().all(|r| r.get(c) == rows[0].get(c));
    let keep: Vec<bool> = (0..header.len()).map(|c| c == 0 || !same(c)).collect();
    let common = (0..header.len()).filter(|&c| !keep[c]).map(|c| (header[c].clone(), rows[0][c].clone())).collect();
    let pick = |cells: Vec<String>| cells.into_iter().zip(&keep).filter(|(_, k)| **k).map(|(c, _)| c).collect();
    let rows = rows.into_iter().map(pick).collect();
    Condensed { common, header: pick(header), rows }
}

/// A paragraph: unchanged in Markdown, wrapped to the width in the terminal layout.
pub fn text(layout: Layout, paragraph: &str) -> String {
    wrap(layout, paragraph, "", "")
}

/// A bullet (`- item`): wrapped in the terminal layout with its continuation lines indented.
pub fn bullet(layout: Layout, item: &str) -> String {
    wrap(layout, item, "- ", "  ")
}

/// `paragraph` after `first`, continuation lines after `rest`: wrapped to the width in the
/// terminal layout, one line in Markdown.
pub fn wrap(layout: Layout, paragraph: &str, first: &str, rest: &str) -> String {
    match layout {
        Layout::Markdown => format!("{first}{paragraph}"),
        Layout::Terminal(width) => {
            // Lines break at spaces only: a break after the hyphen of "8-way" would make the
            // text read differently from the record's (and the Markdown's) words.
            let options = textwrap::Options::new(width as usize)
                .initial_indent(first)
                .subsequent_indent(rest)
                .break_words(true)
                .word_separator(textwrap::WordSeparator::Custom(unit_words))
                .word_splitter(textwrap::WordSplitter::NoHyphenation);
            textwrap::fill(paragraph, options)
        }
    }
}

/// Units a line never begins with when a number ends the line before (`49152 B` stays whole).
const UNITS: [&str; 10] = ["B", "KiB", "MiB", "GiB", "GB/s", "TFLOP/s", "ms", "ns", "cycles", "%"];

/// Words of `line` at its spaces, a number and the unit after it counting as one word.
fn unit_words(line: &str) -> Box<dyn Iterator<Item = Word<'_>> + '_> {
    let mut words = Vec::new();
    let mut start = 0;
    let mut spaces = line.match_indices(' ').map(|(i, _)| i).peekable();
    while let Some(i) = spaces.next() {
        let mut end = i + 1;
        while line[end..].starts_with(' ') {
            end += 1;
            spaces.next();
        }
        let next = line[end..].split(' ').next().unwrap_or("");
        let unit = UNITS.iter().any(|u| next.trim_end_matches([',', ';', ')', '.', ':']) == *u);
        if unit && line[start..i].ends_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        words.push(Word::from(&line[start..end]));
        start = end;
    }
    if start < line.len() {
        words.push(Word::from(&line[start..]));
    }
    Box::new(words.into_iter())
}

/// `text` in lines of at most `width` characters, broken at spaces and after the separators of
/// a path (`/`, and Rust's `::`), never inside a word: a word longer than `width` keeps a line
/// of its own. For table cells whose words are paths (`device-api/src/global.rs:46`), which a
/// table would otherwise cut where the column ends.
pub fn break_lines(text: &str, width: usize) -> String {
    fill(text, width, path_words)
}

/// [`break_lines`] for Rust source and SASS opcodes: a word longer than `width` breaks too,
/// after `(` and `,` and after a `.` that a name follows (a method call, an opcode's modifier),
/// so that `sum.wrapping_add(v[0]).wrapping_add(v[1])` breaks between its calls; a number's
/// point (`1.5`) and a range's dots (`0..n`) stay. A piece longer than `width` keeps a line of
/// its own.
pub fn break_code(text: &str, width: usize) -> String {
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let words: Vec<Word> = path_words(line)
                .flat_map(|word| match word.width > width {
                    false => vec![word],
                    // The long word's pieces, the last with the spaces after the word.
                    true => {
                        let mut pieces: Vec<Word> = code_words(word.word).collect();
                        if let Some(last) = pieces.last_mut() {
                            last.whitespace = word.whitespace;
                        }
                        pieces
                    }
                })
                .collect();
            let lines = textwrap::wrap_algorithms::wrap_first_fit(&words, &[width.max(1) as f64]);
            let joined = lines.iter().map(|words| match words.split_last() {
                Some((last, before)) => {
                    before.iter().map(|w| format!("{}{}", w.word, w.whitespace)).collect::<String>() + last.word
                }
                None => String::new(),
            });
            joined.collect::<Vec<_>>().join("\n")
        })
        .collect();
    lines.join("\n")
}

/// The longest piece [`break_code`] keeps whole in `text`, in characters: the narrowest width
/// it fits without a line longer than the width.
pub fn longest_code_piece(text: &str) -> usize {
    text.lines().flat_map(code_words).map(|w| w.word.chars().count()).max().unwrap_or(0)
}

/// `text` filled to `width` with the pieces of `words`, never broken inside one.
fn fill(text: &str, width: usize, words: fn(&str) -> Box<dyn Iterator<Item = Word<'_>> + '_>) -> String {
    let options = textwrap::Options::new(width.max(1))
        .break_words(false)
        .word_separator(textwrap::WordSeparator::Custom(words))
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    textwrap::fill(text, options)
}

/// The pieces [`break_lines`] may break between: each ends after a run of spaces, a `/` or a
/// `::` (with the spaces after it).
fn path_words(line: &str) -> Box<dyn Iterator<Item = Word<'_>> + '_> {
    pieces(line, |rest, _| if rest.starts_with("::") { 2 } else { usize::from(rest.starts_with(['/', ' '])) })
}

/// The pieces [`break_code`] may break a long word between: those of [`path_words`], and after
/// `(`, `,` and a `.` a name follows.
fn code_words(line: &str) -> Box<dyn Iterator<Item = Word<'_>> + '_> {
    pieces(line, |rest, before| {
        let call = rest.strip_prefix('.').is_some_and(|r| r.starts_with(|c: char| c.is_alphabetic() || c == '_'));
        if rest.starts_with("::") {
            2
        } else if rest.starts_with([' ', '/', '(', ',']) || (call && before != Some('.')) {
            1
        } else {
            0
        }
    })
}

/// `line` cut after each separator `sep` finds (its length in bytes at the start of the rest
/// of the line, given the character before; 0 where none starts), each piece with the spaces
/// after its separator.
fn pieces(line: &str, sep: fn(&str, Option<char>) -> usize) -> Box<dyn Iterator<Item = Word<'_>> + '_> {
    let mut words = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < line.len() {
        let rest = &line[i..];
        let n = sep(rest, line[..i].chars().next_back());
        if n == 0 {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        }
        i += n;
        i += line[i..].len() - line[i..].trim_start_matches(' ').len();
        words.push(Word::from(&line[start..i]));
        start = i;
    }
    if start < line.len() {
        words.push(Word::from(&line[start..]));
    }
    Box::new(words.into_iter())
}

/// Every line of `text` is at most `width` columns (counted in characters).
pub fn fits(text: &str, width: u16) -> bool {
    text.lines().all(|l| l.chars().count() <= width as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_keeps_its_unit_on_its_line() {
        let text = "0 B static + 49152 B dynamic shared memory, at 3878 GB/s; 12 KiB";
        for width in 14..40 {
            let wrapped = wrap(Layout::Terminal(width), text, "", "  ");
            for line in wrapped.lines() {
                let first = line.trim_start().split(' ').next().unwrap();
                assert!(!UNITS.contains(&first.trim_end_matches([',', ';'])), "width {width}: {wrapped}");
            }
            assert_eq!(wrapped.split_whitespace().collect::<Vec<_>>(), text.split_whitespace().collect::<Vec<_>>());
        }
    }

    #[test]
    fn lines_break_at_spaces_and_path_separators_only() {
        assert_eq!(break_lines("device-api/src/global.rs:46", 16), "device-api/src/\nglobal.rs:46");
        assert_eq!(break_lines("core_arch/src/nvptx/mod.rs:57", 15), "core_arch/src/\nnvptx/mod.rs:57");
        assert_eq!(
            break_lines("`if contract::whole_sector_rows(rows) {`", 20),
            "`if contract::\nwhole_sector_rows(rows)\n{`"
        );
        assert_eq!(break_lines("BAR.SYNC.DEFER_BLOCKING x1", 10), "BAR.SYNC.DEFER_BLOCKING\nx1");
        assert_eq!(break_lines("a b/c", 80), "a b/c");
        assert_eq!(break_lines("global.rs:46", 7), "global.rs:46", "a file's dot is no separator");
    }

    #[test]
    fn long_code_breaks_between_calls_and_arguments_not_inside_names() {
        let sum = "`sum = sum.wrapping_add(v[0]).wrapping_add(v[1])`";
        assert_eq!(longest_code_piece(sum), "wrapping_add(".len());
        // (text, width, lines, why)
        let cases = [
            (sum, 24, "`sum = sum.wrapping_add(\nv[0]).wrapping_add(\nv[1])`", "between calls"),
            (
                "`pub fn transpose_aligned_stores(block: Block, n: u32)`",
                30,
                "`pub fn\ntranspose_aligned_stores(\nblock: Block, n: u32)`",
                "after an opening parenthesis",
            ),
            ("let x = 1.5 * y; for i in 0..n {", 8, "let x =\n1.5 * y;\nfor i in\n0..n {", "points and ranges stay"),
            ("BAR.SYNC.DEFER_BLOCKING x1", 15, "BAR.SYNC.\nDEFER_BLOCKING\nx1", "after a modifier's dot"),
            ("LDG.E.128 x2", 8, "LDG.\nE.128 x2", "a modifier of digits is no name"),
            ("a.b(c) d.e(f)", 7, "a.b(c)\nd.e(f)", "words that fit stay whole"),
            ("é.é(ü", 2, "é.\né(\nü", "characters, not bytes"),
        ];
        for (text, width, lines, why) in cases {
            assert_eq!(break_code(text, width), lines, "{why}");
        }
    }

    fn cells(rows: &[&[&str]]) -> Vec<Vec<String>> {
        rows.iter().map(|r| r.iter().map(|c| c.to_string()).collect()).collect()
    }

    #[test]
    fn markdown_tables_keep_one_line_per_row() {
        let t = render(Layout::Markdown, vec!["a".into(), "b".into()], cells(&[&["1", &"x".repeat(300)]]));
        let lines: Vec<_> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[0].starts_with('|') && lines[0].contains(" a ") && lines[0].contains(" b "));
        assert!(lines[1].starts_with("|-"));
        assert!(lines[2].len() > 300);
    }

    #[test]
    fn terminal_tables_wrap_cells_to_the_width() {
        let long = "word ".repeat(60);
        let rows = cells(&[&["kernel_name", &long, "42"], &["other", "short", "7"]]);
        for width in [60, 100, 160] {
            let t = render(Layout::Terminal(width), vec!["k".into(), "text".into(), "n".into()], rows.clone());
            assert!(fits(&t, width), "{width}:\n{t}");
            assert!(t.lines().count() > 4, "the long cell wraps at {width}:\n{t}");
            assert_eq!(t.matches("word").count(), 60, "no word lost at {width}");
        }
    }

    #[test]
    fn columns_beyond_the_width_follow_the_table() {
        // Eleven columns whose words need 1 + 27 + 9 + 8 * 8 + 16 + 11 * 3 = 150 characters: at
        // 100 the widest leave the table (the digest, the size, then the rightmost of the 8s).
        let header: Vec<String> =
            ["kernel", "size", "a", "b", "c", "d", "e", "f", "g", "h", "check"].iter().map(|h| h.to_string()).collect();
        let row = |kernel: &str, size: &str, digest: &str| {
            let mut r = vec![kernel.to_string(), size.to_string()];
            r.extend((0..8).map(|i| format!("{i}.{i}{i}{i}{i}{i}{i}")));
            r.push(format!("ok (1 exact), output {digest}"));
            r
        };
        let rows = vec![
            row("sgemm_6_double_buffered_xyz", "4096x4096", "0123456789abcdef"),
            row("sgemm_6_double_buffered_xyz", "8192x8192", "fedcba9876543210"),
        ];
        let bounds = word_bounds(&header, &rows);
        assert_eq!(bounds, [27, 9, 8, 8, 8, 8, 8, 8, 8, 8, 16]);
        let keep = fitting_columns(&bounds, 100);
        assert_eq!(keep, [true, false, true, true, true, true, true, true, false, false, false]);
        let t = render(Layout::Terminal(100), header.clone(), rows.clone());
        assert!(fits(&t, 100), "{t}");
        // Every kept column keeps its longest word whole, and the moved ones follow, named by
        // kernel and size (the kernel repeats).
        assert!(t.contains("| 5.555555 |"), "{t}");
        assert!(t.contains("- sgemm_6_double_buffered_xyz 8192x8192: g: 6.666666; h: 7.777777; check: ok (1"), "{t}");
        assert!(t.contains("fedcba9876543210") && t.contains("0123456789abcdef"), "{t}");
        // Wide enough, nothing moves; Markdown never moves anything.
        assert!(fitting_columns(&bounds, 160).iter().all(|&k| k));
        assert!(!render(Layout::Markdown, header, rows).contains("\n- "));
        // Two columns always stay, however narrow the width.
        assert_eq!(fitting_columns(&[28, 18, 18], 20), [true, true, false]);
    }

    #[test]
    fn repeated_columns_are_said_once() {
        let rows = cells(&[&["a", "0", "1"], &["b", "0", "2"]]);
        let c = condense(vec!["k".into(), "local B".into(), "n".into()], rows);
        assert_eq!(c.common, vec![("local B".to_string(), "0".to_string())]);
        assert_eq!(c.header, ["k", "n"]);
        assert_eq!(c.rows, cells(&[&["a", "1"], &["b", "2"]]));
        let one = cells(&[&["a", "0"]]);
        assert!(condense(vec!["k".into(), "x".into()], one).common.is_empty(), "one row keeps its columns");
        let out = render_condensed(
            Layout::Terminal(80),
            vec!["k".into(), "local B".into()],
            cells(&[&["a", "0"], &["b", "0"]]),
        );
        assert!(out.starts_with("Every row: local B 0.\n"), "{out}");
    }

    #[test]
    fn bullets_wrap_with_an_indent() {
        let b = bullet(Layout::Terminal(60), &"lorem ipsum ".repeat(20));
        assert!(fits(&b, 60) && b.starts_with("- ") && b.lines().skip(1).all(|l| l.starts_with("  ")), "{b}");
        assert_eq!(bullet(Layout::Markdown, "x y"), "- x y");
    }
}
