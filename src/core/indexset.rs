//! `IndexSet`: a set of small indices (query numbers) as a bitset, for the engine's "which
//! queries have queued input / unemitted results" sets. Invariant: bit `i` of `words` is
//! set iff `i` is in the set; iteration is in index order, as a `BTreeSet<usize>`'s is.
//! Inserting and removing are one word operation; finding the next member scans words,
//! from the lowest word that may hold one (`low`), and an empty set answers at once (`len`):
//! the engine asks "any member?" after every turn, with thousands of queries.

/// A set of indices in index order.
#[derive(Clone, Debug, Default)]
pub struct IndexSet {
    words: Vec<u64>,
    /// Members.
    len: usize,
    /// No word below this one has a bit set.
    low: usize,
}

impl IndexSet {
    pub fn new() -> IndexSet {
        IndexSet::default()
    }

    /// Adds `i`.
    pub fn insert(&mut self, i: usize) {
        let w = i / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        let bit = 1 << (i % 64);
        if self.words[w] & bit == 0 {
            self.words[w] |= bit;
            self.len += 1;
            self.low = self.low.min(w);
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Removes `i` (nothing if absent).
    pub fn remove(&mut self, i: usize) {
        if let Some(w) = self.words.get_mut(i / 64) {
            let bit = 1 << (i % 64);
            if *w & bit != 0 {
                *w &= !bit;
                self.len -= 1;
            }
        }
    }

    /// The least member `>= from`.
    pub fn next_from(&self, from: usize) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mut w = from / 64;
        let mut bits = self.words.get(w)? & (u64::MAX << (from % 64));
        if w < self.low {
            w = self.low;
            bits = *self.words.get(w)?;
        }
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.words.get(w)?;
        }
    }

    /// The least member.
    pub fn first(&self) -> Option<usize> {
        self.next_from(0)
    }

    /// Removes and returns the least member.
    pub fn pop_first(&mut self) -> Option<usize> {
        let Some(i) = self.first() else {
            self.low = self.words.len();
            return None;
        };
        self.low = i / 64;
        self.remove(i);
        Some(i)
    }

    /// The members in index order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &bits)| {
            let mut b = bits;
            std::iter::from_fn(move || {
                (b != 0).then(|| {
                    let t = b.trailing_zeros() as usize;
                    b &= b - 1;
                    w * 64 + t
                })
            })
        })
    }

    /// Keeps only the members for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(usize) -> bool) {
        for (w, word) in self.words.iter_mut().enumerate() {
            let mut b = *word;
            while b != 0 {
                let t = b.trailing_zeros() as usize;
                b &= b - 1;
                if !keep(w * 64 + t) {
                    *word &= !(1 << t);
                    self.len -= 1;
                }
            }
        }
    }
}

impl FromIterator<usize> for IndexSet {
    fn from_iter<T: IntoIterator<Item = usize>>(iter: T) -> IndexSet {
        let mut s = IndexSet::new();
        for i in iter {
            s.insert(i);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn behaves_as_an_ordered_set() {
        let mut a = IndexSet::new();
        let mut b = BTreeSet::new();
        let mut x = 12345u64;
        for step in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let i = (x >> 33) as usize % 300;
            match step % 5 {
                0 | 1 => {
                    a.insert(i);
                    b.insert(i);
                }
                2 => {
                    a.remove(i);
                    b.remove(&i);
                }
                3 => assert_eq!(a.next_from(i), b.range(i..).next().copied()),
                _ => assert_eq!(a.pop_first(), b.pop_first()),
            }
            assert_eq!(a.first(), b.first().copied());
            assert_eq!(a.len(), b.len());
        }
        a.retain(|i| i % 3 != 0);
        b.retain(|i| i % 3 != 0);
        assert_eq!(a.len(), b.len());
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            b.into_iter().collect::<Vec<_>>()
        );
        assert_eq!(a.next_from(10_000), None);
        // Emptied by `pop_first`, then refilled below where it last looked.
        while a.pop_first().is_some() {}
        assert!(a.is_empty() && a.first().is_none());
        a.insert(299);
        a.insert(3);
        assert_eq!(
            (a.first(), a.next_from(4), a.len()),
            (Some(3), Some(299), 2)
        );
    }
}
