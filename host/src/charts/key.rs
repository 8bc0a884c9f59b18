//! A chart's title and key, drawn in a band of their own above the plot: no key entry can hide
//! a point, whichever corner the data fill.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{DrawResult, FONT};

/// How a key entry shows what it names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sample {
    /// A solid line with a filled dot (measured data).
    Line(RGBColor),
    /// A dashed line with an open marker (a model).
    Dashed(RGBColor),
    /// A filled block (a class of bars).
    Block(RGBColor),
    /// A cross (a value the chart refuses to draw).
    Cross(RGBColor),
    /// None: a note.
    Note,
}

/// Key text size, pixels.
const SIZE: i32 = 14;
/// Height of one row of the key, pixels.
const ROW: i32 = 20;
/// Width of an entry's sample and the gap after it, pixels.
const SAMPLE: i32 = 34;
/// Space between two entries of a row, pixels.
const GAP: i32 = 22;
/// Height of the title line, pixels.
const TITLE: i32 = 34;

/// The width of `text` at `size` pixels, an upper bound for DejaVu Sans (whose widest
/// characters other than W and M are about 0.62 em).
pub fn text_width(text: &str, size: i32) -> i32 {
    (text.chars().count() as f64 * f64::from(size) * 0.62).ceil() as i32
}

/// Where each entry of the key goes, across a band `width` pixels wide: `(x, row)` of its
/// left edge, entries in order, a new row when the next would not fit whole.
pub fn flow(texts: &[String], width: i32) -> Vec<(i32, i32)> {
    let mut at = Vec::with_capacity(texts.len());
    let (mut x, mut row) = (10, 0);
    for t in texts {
        let w = SAMPLE + text_width(t, SIZE);
        if x > 10 && x + w > width - 10 {
            (x, row) = (10, row + 1);
        }
        at.push((x, row));
        x += w + GAP;
    }
    at
}

/// Height of the title and a key of `texts` on a chart `width` pixels wide.
pub fn height(texts: &[String], width: i32) -> i32 {
    let rows = flow(texts, width).last().map_or(0, |p| p.1 + 1);
    TITLE + ROW * rows + 6
}

/// Draws `title` and the key of `entries` at the top of `root`; returns the area below them.
pub fn titled<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    entries: &[(Sample, String)],
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let width = root.dim_in_pixel().0 as i32;
    let texts: Vec<String> = entries.iter().map(|e| e.1.clone()).collect();
    let (band, rest) = root.split_vertically(height(&texts, width));
    let style = (FONT, 20).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
    band.draw(&Text::new(title, (width / 2, 8), style))?;
    for ((sample, text), (x, row)) in entries.iter().zip(flow(&texts, width)) {
        let y = TITLE + ROW * row + ROW / 2;
        draw_sample(&band, *sample, (x, y))?;
        let font = (FONT, SIZE).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
        band.draw(&Text::new(text.as_str(), (x + SAMPLE - 6, y), font))?;
    }
    Ok(rest)
}

fn draw_sample<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    sample: Sample,
    (x, y): (i32, i32),
) -> DrawResult<DB> {
    match sample {
        Sample::Line(c) => {
            area.draw(&PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3)))?;
            area.draw(&Circle::new((x + 11, y), 4, c.filled()))
        }
        Sample::Dashed(c) => {
            area.draw(&DashedPathElement::new(vec![(x, y), (x + 22, y)], 5, 3, c.stroke_width(2)))?;
            area.draw(&Circle::new((x + 11, y), 5, c.stroke_width(2)))
        }
        Sample::Block(c) => area.draw(&Rectangle::new([(x, y - 6), (x + 22, y + 6)], c.mix(0.8).filled())),
        Sample::Cross(c) => area.draw(&Cross::new((x + 11, y), 6, c.stroke_width(3))),
        Sample::Note => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_entries_flow_into_rows_without_overlapping() {
        let texts: Vec<String> =
            ["measured", "bank model", "bank model, same box unswizzled", "a fourth entry"].map(String::from).to_vec();
        let at = flow(&texts, 600);
        for (i, (&(x, row), t)) in at.iter().zip(&texts).enumerate() {
            assert!(x + SAMPLE + text_width(t, SIZE) <= 600 - 10, "entry {i} runs off the band");
            if let Some(&(next, next_row)) = at.get(i + 1).filter(|n| n.1 == row) {
                assert!(next >= x + SAMPLE + text_width(t, SIZE), "entry {} overlaps entry {i}", i + 1);
                assert_eq!(next_row, row);
            }
        }
        assert_eq!(at.last().unwrap().1, 1, "the fourth entry wraps to a second row");
        assert_eq!(height(&texts, 600), TITLE + 2 * ROW + 6);
    }
}
