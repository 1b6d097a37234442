//! `IndexSet`: a set of small indices (query numbers) as a bitset, for the engine's "which
//! queries have queued input / unemitted results" sets. Invariant: bit `i` of `words` is
//! set iff `i` is in the set; iteration is in index order, as a `BTreeSet<usize>`'s is.
//! Inserting and removing are one word operation; finding the next member scans words.

/// A set of indices in index order.
#[derive(Clone, Debug, Default)]
pub struct IndexSet {
    words: Vec<u64>,
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
        self.words[w] |= 1 << (i % 64);
    }

    /// Removes `i` (nothing if absent).
    pub fn remove(&mut self, i: usize) {
        if let Some(w) = self.words.get_mut(i / 64) {
            *w &= !(1 << (i % 64));
        }
    }

    /// The least member `>= from`.
    pub fn next_from(&self, from: usize) -> Option<usize> {
        let mut w = from / 64;
        let mut bits = self.words.get(w)? & (u64::MAX << (from % 64));
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
        let i = self.first()?;
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
        }
        a.retain(|i| i % 3 != 0);
        b.retain(|i| i % 3 != 0);
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            b.into_iter().collect::<Vec<_>>()
        );
        assert_eq!(a.next_from(10_000), None);
    }
}
