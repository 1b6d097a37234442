//! Selection vectors: a batch seen through the ascending row indices a filter or a drop
//! point kept, so that operators read the kept rows in place instead of copying them.
//! Invariant: a selection is strictly ascending and every index is `< batch.len()`; row
//! indices handed on (to accumulators, to prefix tables) are always the batch's own.

use super::batch::Batch;
use super::schema::Nanos;

/// The rows of `batch` an operator reads: all of them, or those named by `sel`.
#[derive(Clone, Copy, Debug)]
pub struct Rows<'a> {
    pub batch: &'a Batch,
    /// Ascending row indices of `batch`; `None` is every row.
    pub sel: Option<&'a [u32]>,
}

impl<'a> Rows<'a> {
    /// Every row of `batch`.
    pub fn all(batch: &'a Batch) -> Rows<'a> {
        Rows { batch, sel: None }
    }

    /// The rows of `batch` named by `sel` (ascending).
    pub fn selected(batch: &'a Batch, sel: &'a [u32]) -> Rows<'a> {
        debug_assert!(is_selection(sel, batch.len()));
        Rows {
            batch,
            sel: Some(sel),
        }
    }

    /// How many rows are seen.
    pub fn len(&self) -> usize {
        self.sel.map_or(self.batch.len(), <[u32]>::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The batch row index of the `pos`-th row seen.
    #[inline]
    pub fn row(&self, pos: usize) -> usize {
        match self.sel {
            Some(s) => s[pos] as usize,
            None => pos,
        }
    }

    /// Arrival of the `pos`-th row seen.
    #[inline]
    pub fn arrival(&self, pos: usize) -> Nanos {
        self.batch.arrival[self.row(pos)]
    }
}

/// Whether `sel` is a selection of a batch of `len` rows (strictly ascending, in range).
pub fn is_selection(sel: &[u32], len: usize) -> bool {
    sel.windows(2).all(|w| w[0] < w[1]) && sel.last().is_none_or(|&l| (l as usize) < len)
}

/// Keeps in `sel` only the indices also in `keep` (both ascending): a filter's selection
/// over the whole batch narrowed to the rows an earlier drop point kept.
pub fn intersect(sel: &mut Vec<u32>, keep: &[u32]) {
    let mut k = 0;
    sel.retain(|&i| {
        while k < keep.len() && keep[k] < i {
            k += 1;
        }
        k < keep.len() && keep[k] == i
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intersect_keeps_common_indices_in_order() {
        let mut s = vec![0, 2, 3, 5, 8, 9];
        intersect(&mut s, &[1, 2, 5, 6, 9]);
        assert_eq!(s, vec![2, 5, 9]);
        let mut s = vec![0, 1, 2];
        intersect(&mut s, &[]);
        assert!(s.is_empty());
        let mut s: Vec<u32> = vec![];
        intersect(&mut s, &[0, 1]);
        assert!(s.is_empty());
    }

    #[test]
    fn rows_map_positions_to_batch_rows() {
        let mut b = Batch::new(&[crate::core::schema::DataType::Int], 0);
        for i in 0..5 {
            b.push_row(10 * i, &[crate::core::schema::Scalar::Int(i)]);
        }
        let sel = [1u32, 4];
        let r = Rows::selected(&b, &sel);
        assert_eq!((r.len(), r.row(1), r.arrival(0)), (2, 4, 10));
        let all = Rows::all(&b);
        assert_eq!((all.len(), all.row(3), all.arrival(3)), (5, 3, 30));
        assert!(is_selection(&[0, 3, 4], 5));
        assert!(!is_selection(&[0, 3, 3], 5));
        assert!(!is_selection(&[5], 5));
    }
}
