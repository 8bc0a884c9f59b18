//! Labels that never overlap: each label takes the nearest free spot around its point, clear
//! of every marker and of the labels placed before it; a label set off from its point is
//! joined to it by a leader line (drawn by the chart).

/// A pixel rectangle, `x0..x1` by `y0..y1` (y grows downwards).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    /// Left edge.
    pub x0: i32,
    /// Top edge.
    pub y0: i32,
    /// Right edge (exclusive).
    pub x1: i32,
    /// Bottom edge (exclusive).
    pub y1: i32,
}

impl Rect {
    /// The square of half-side `r` around `(x, y)`.
    pub fn around((x, y): (i32, i32), r: i32) -> Self {
        Rect { x0: x - r, y0: y - r, x1: x + r, y1: y + r }
    }

    /// Whether the two share any pixel.
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    /// Whether `o` lies wholly inside.
    pub fn contains(&self, o: &Rect) -> bool {
        self.x0 <= o.x0 && o.x1 <= self.x1 && self.y0 <= o.y0 && o.y1 <= self.y1
    }

    /// The pixel of the rectangle nearest to `(x, y)`: where a leader line from there ends.
    pub fn nearest(&self, (x, y): (i32, i32)) -> (i32, i32) {
        (x.clamp(self.x0, self.x1 - 1), y.clamp(self.y0, self.y1 - 1))
    }
}

/// Farthest a label is set from its point, pixels.
const REACH: i32 = 260;

/// One rectangle of `sizes[i]` (width, height) per point `anchors[i]`, inside `bounds`, overlapping
/// no marker (the square of half-side `marker` around each point) and no other label: the first
/// free spot on rings around the point (right, left, above and below it, then the diagonals),
/// nearest ring first. `None` for a label with no free spot within [`REACH`] pixels.
pub fn place(anchors: &[(i32, i32)], sizes: &[(i32, i32)], marker: i32, bounds: Rect) -> Vec<Option<Rect>> {
    let mut taken: Vec<Rect> = anchors.iter().map(|&a| Rect::around(a, marker)).collect();
    let directions = [(1, 0), (-1, 0), (0, -1), (0, 1), (1, -1), (1, 1), (-1, -1), (-1, 1)];
    anchors
        .iter()
        .zip(sizes)
        .map(|(&(ax, ay), &(w, h))| {
            let spot = (marker + 3..REACH).step_by(5).find_map(|d| {
                directions.iter().find_map(|&(dx, dy)| {
                    let x0 = match dx {
                        1 => ax + d,
                        -1 => ax - d - w,
                        _ => ax - w / 2,
                    };
                    let y0 = match dy {
                        1 => ay + d,
                        -1 => ay - d - h,
                        _ => ay - h / 2,
                    };
                    let r = Rect { x0, y0, x1: x0 + w, y1: y0 + h };
                    (bounds.contains(&r) && !taken.iter().any(|t| t.overlaps(&r))).then_some(r)
                })
            });
            taken.extend(spot);
            spot
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crowded_points_get_labels_that_overlap_nothing() {
        let bounds = Rect { x0: 0, y0: 0, x1: 400, y1: 300 };
        // Ten points within a few pixels of each other, as the SGEMM rungs at one intensity.
        let anchors: Vec<(i32, i32)> = (0..10).map(|i| (200, 150 + 3 * i)).collect();
        let placed = place(&anchors, &[(20, 16); 10], 7, bounds);
        let rects: Vec<Rect> = placed.iter().map(|r| r.expect("room for every label")).collect();
        for (i, a) in rects.iter().enumerate() {
            assert!(bounds.contains(a));
            assert!(rects[i + 1..].iter().all(|b| !a.overlaps(b)), "label {i} overlaps a later one");
            assert!(anchors.iter().all(|&p| !a.overlaps(&Rect::around(p, 7))), "label {i} covers a marker");
        }
        // The first label sits right next to its point.
        assert_eq!(rects[0], Rect { x0: 210, y0: 142, x1: 230, y1: 158 });
        // No room at all: no label, rather than one on top of another.
        assert_eq!(place(&[(5, 5)], &[(50, 50)], 7, Rect { x0: 0, y0: 0, x1: 20, y1: 20 }), [None]);
    }
}
