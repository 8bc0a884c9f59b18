//! The N x N bookkeeping of the peer lesson: one cell per ordered pair of devices (row: the
//! device that reads or sends, column: the device whose memory is read or that receives), the
//! diagonal for a device on its own (the local anchor), for any number of devices.

use serde::{Deserialize, Serialize};

/// A value per ordered device pair; cells not measured are `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairMatrix<T> {
    /// Devices (rows and columns), by position in the run's device list.
    pub n: usize,
    cells: Vec<Option<T>>,
}

/// Every ordered pair `(from, to)` with `from != to`, row by row: `n * (n - 1)` pairs.
pub fn ordered_pairs(n: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).flat_map(move |i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
}

/// Every unordered pair `(a, b)` with `a < b`: `n * (n - 1) / 2` pairs.
pub fn unordered_pairs(n: usize) -> impl Iterator<Item = (usize, usize)> {
    ordered_pairs(n).filter(|(i, j)| i < j)
}

impl<T> PairMatrix<T> {
    /// An empty `n x n` matrix.
    pub fn new(n: usize) -> Self {
        PairMatrix { n, cells: (0..n * n).map(|_| None).collect() }
    }

    fn index(&self, from: usize, to: usize) -> usize {
        assert!(from < self.n && to < self.n, "cell ({from}, {to}) outside a {0} x {0} matrix", self.n);
        from * self.n + to
    }

    /// Sets cell `(from, to)`.
    ///
    /// # Panics
    /// When either index is outside the matrix.
    pub fn set(&mut self, from: usize, to: usize, value: T) {
        let i = self.index(from, to);
        self.cells[i] = Some(value);
    }

    /// Cell `(from, to)`, if measured.
    pub fn get(&self, from: usize, to: usize) -> Option<&T> {
        self.cells[self.index(from, to)].as_ref()
    }

    /// Ordered pairs (off the diagonal) that have no value.
    pub fn missing_pairs(&self) -> Vec<(usize, usize)> {
        ordered_pairs(self.n).filter(|&(i, j)| self.get(i, j).is_none()).collect()
    }

    /// The matrix as a table: a corner label, one column per device (`to`), one row per device
    /// (`from`); a cell without a value reads `-`.
    pub fn table(
        &self,
        labels: &[String],
        corner: &str,
        show: impl Fn(&T) -> String,
    ) -> (Vec<String>, Vec<Vec<String>>) {
        assert_eq!(labels.len(), self.n, "one label per device");
        let header = std::iter::once(corner.to_string()).chain(labels.iter().map(|l| format!("to {l}"))).collect();
        let rows = (0..self.n)
            .map(|i| {
                std::iter::once(format!("from {}", labels[i]))
                    .chain((0..self.n).map(|j| self.get(i, j).map_or("-".to_string(), &show)))
                    .collect()
            })
            .collect();
        (header, rows)
    }
}

impl PairMatrix<f64> {
    /// The smallest and largest off-diagonal values, `None` when there are none.
    pub fn off_diagonal_range(&self) -> Option<(f64, f64)> {
        ordered_pairs(self.n)
            .filter_map(|(i, j)| self.get(i, j).copied())
            .fold(None, |acc, v| Some(acc.map_or((v, v), |(lo, hi): (f64, f64)| (lo.min(v), hi.max(v)))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_pairs_cover_every_pair_once_in_both_directions() {
        for n in 0..6 {
            let pairs: Vec<_> = ordered_pairs(n).collect();
            assert_eq!(pairs.len(), n * n.saturating_sub(1));
            assert!(pairs.iter().all(|&(i, j)| i != j && i < n && j < n));
            let mut dedup = pairs.clone();
            dedup.sort();
            dedup.dedup();
            assert_eq!(dedup.len(), pairs.len());
            assert_eq!(unordered_pairs(n).count(), n * n.saturating_sub(1) / 2);
        }
        assert_eq!(ordered_pairs(2).collect::<Vec<_>>(), [(0, 1), (1, 0)]);
        assert_eq!(ordered_pairs(3).collect::<Vec<_>>(), [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]);
    }

    #[test]
    fn cells_are_directional_and_missing_pairs_are_listed() {
        let mut m = PairMatrix::new(3);
        m.set(0, 1, 10.0);
        m.set(1, 0, 20.0);
        m.set(2, 2, 99.0);
        assert_eq!(m.get(0, 1), Some(&10.0));
        assert_eq!(m.get(1, 0), Some(&20.0));
        assert_eq!(m.get(0, 2), None);
        assert_eq!(m.missing_pairs(), [(0, 2), (1, 2), (2, 0), (2, 1)]);
        assert_eq!(m.off_diagonal_range(), Some((10.0, 20.0)));
        assert_eq!(PairMatrix::<f64>::new(1).off_diagonal_range(), None);
    }

    #[test]
    fn table_has_a_row_and_column_per_device() {
        let mut m = PairMatrix::new(2);
        m.set(0, 0, 3000.0);
        m.set(0, 1, 389.4);
        m.set(1, 0, 388.6);
        let labels = ["GPU 0".to_string(), "GPU 1".to_string()];
        let (header, rows) = m.table(&labels, "GB/s", |v| format!("{v:.0}"));
        assert_eq!(header, ["GB/s", "to GPU 0", "to GPU 1"]);
        assert_eq!(rows, [vec!["from GPU 0", "3000", "389"], vec!["from GPU 1", "389", "-"]]);
    }

    #[test]
    #[should_panic(expected = "outside a 2 x 2 matrix")]
    fn a_cell_outside_the_matrix_is_a_bug() {
        PairMatrix::new(2).set(2, 0, 1.0);
    }
}
