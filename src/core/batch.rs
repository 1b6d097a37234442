//! Columnar batches: the unit that moves through queues and operators. A batch owns one
//! vector per column plus the arrival time of each row; every column has `len()` rows.
//!
//! Batches are built once and recycled: operators write into a batch the caller owns and
//! `clear` keeps the capacity, so steady-state processing allocates per batch at most.
//! Strings are dictionary-encoded (`core::strings`): copying a row copies a code.

use super::schema::{DataType, Nanos, Scalar};
pub use super::strings::{Dict, StrColumn};

/// One column of values. `Int` also stores timestamps (nanoseconds since the epoch).
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    Int(Vec<i64>),
    Float(Vec<f64>),
    Str(StrColumn),
    Bool(Vec<bool>),
}

impl Column {
    pub fn with_capacity(ty: DataType, cap: usize) -> Column {
        match ty {
            DataType::Int | DataType::Timestamp => Column::Int(Vec::with_capacity(cap)),
            DataType::Float => Column::Float(Vec::with_capacity(cap)),
            DataType::Str => Column::Str(StrColumn::with_capacity(cap)),
            DataType::Bool => Column::Bool(Vec::with_capacity(cap)),
        }
    }

    /// Makes room for `rows` rows in all (no doubling past it).
    pub fn reserve_total(&mut self, rows: usize) {
        let more = rows.saturating_sub(self.len());
        match self {
            Column::Int(v) => v.reserve_exact(more),
            Column::Float(v) => v.reserve_exact(more),
            Column::Str(v) => v.reserve_exact(more),
            Column::Bool(v) => v.reserve_exact(more),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Column::Int(v) => v.len(),
            Column::Float(v) => v.len(),
            Column::Str(v) => v.len(),
            Column::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The heap bytes this column holds: its buffer's capacity, and for strings each
    /// value's text and reference counts as if no other row shared it (an upper bound:
    /// `StrColumn::heap_bytes`).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        match self {
            Column::Int(v) => v.capacity() * size_of::<i64>(),
            Column::Float(v) => v.capacity() * size_of::<f64>(),
            Column::Str(v) => v.heap_bytes(),
            Column::Bool(v) => v.capacity(),
        }
    }

    /// The part of `heap_bytes` that follows the capacity.
    pub fn capacity_bytes(&self) -> usize {
        match self {
            Column::Str(v) => v.capacity_bytes(),
            _ => self.heap_bytes(),
        }
    }

    /// The part of `heap_bytes` that follows the rows (`None`: every row): strings' text.
    pub fn text_bytes_of(&self, rows: Option<&[u32]>) -> usize {
        match self {
            Column::Str(v) => v.text_bytes_of(rows),
            _ => 0,
        }
    }

    pub fn clear(&mut self) {
        match self {
            Column::Int(v) => v.clear(),
            Column::Float(v) => v.clear(),
            Column::Str(v) => v.clear(),
            Column::Bool(v) => v.clear(),
        }
    }

    /// Appends the rows of `src` named by `sel`. Both columns must have the same variant.
    pub fn gather_from(&mut self, src: &Column, sel: &[u32]) {
        match (self, src) {
            (Column::Int(d), Column::Int(s)) => d.extend(sel.iter().map(|&i| s[i as usize])),
            (Column::Float(d), Column::Float(s)) => d.extend(sel.iter().map(|&i| s[i as usize])),
            (Column::Str(d), Column::Str(s)) => d.gather_from(s, sel),
            (Column::Bool(d), Column::Bool(s)) => d.extend(sel.iter().map(|&i| s[i as usize])),
            (d, s) => unreachable!("gather between {:?} and {:?} columns", kind(d), kind(s)),
        }
    }

    /// Appends all rows of `src`, which must have the same variant.
    pub fn extend_from(&mut self, src: &Column) {
        match (self, src) {
            (Column::Int(d), Column::Int(s)) => d.extend_from_slice(s),
            (Column::Float(d), Column::Float(s)) => d.extend_from_slice(s),
            (Column::Str(d), Column::Str(s)) => d.extend_from(s),
            (Column::Bool(d), Column::Bool(s)) => d.extend_from_slice(s),
            (d, s) => unreachable!("extend between {:?} and {:?} columns", kind(d), kind(s)),
        }
    }

    /// Appends one value; the caller guarantees the type matches (plans are type-checked).
    pub fn push(&mut self, value: &Scalar) {
        match (self, value) {
            (Column::Int(d), Scalar::Int(v) | Scalar::Timestamp(v)) => d.push(*v),
            (Column::Float(d), Scalar::Float(v)) => d.push(*v),
            (Column::Float(d), Scalar::Int(v)) => d.push(*v as f64),
            (Column::Str(d), Scalar::Str(v)) => d.push(v),
            (Column::Bool(d), Scalar::Bool(v)) => d.push(*v),
            (d, v) => unreachable!("push {v:?} into a {:?} column", kind(d)),
        }
    }

    /// The value at `row` as a scalar of type `ty` (used at the edges: sinks and tests).
    pub fn scalar(&self, row: usize, ty: DataType) -> Scalar {
        match self {
            Column::Int(v) if ty == DataType::Timestamp => Scalar::Timestamp(v[row]),
            Column::Int(v) => Scalar::Int(v[row]),
            Column::Float(v) => Scalar::Float(v[row]),
            Column::Str(v) => Scalar::Str(v[row].clone()),
            Column::Bool(v) => Scalar::Bool(v[row]),
        }
    }
}

fn kind(c: &Column) -> &'static str {
    match c {
        Column::Int(_) => "int",
        Column::Float(_) => "float",
        Column::Str(_) => "string",
        Column::Bool(_) => "bool",
    }
}

/// Rows of one schema, column by column, with the arrival time of each row.
///
/// In an operator's output batch, `arrival` holds the arrival time of the tuple that made
/// each result due, so latency is always `emission time - arrival[row]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    pub arrival: Vec<Nanos>,
    pub columns: Vec<Column>,
}

impl Batch {
    pub fn new(types: &[DataType], cap: usize) -> Batch {
        Batch {
            arrival: Vec::with_capacity(cap),
            columns: types
                .iter()
                .map(|&t| Column::with_capacity(t, cap))
                .collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.arrival.len()
    }

    pub fn is_empty(&self) -> bool {
        self.arrival.is_empty()
    }

    /// The heap bytes the batch holds (`Column::heap_bytes`, arrival times included): what
    /// keeping it queued costs in memory.
    pub fn heap_bytes(&self) -> usize {
        self.arrival.capacity() * std::mem::size_of::<Nanos>()
            + self.columns.iter().map(Column::heap_bytes).sum::<usize>()
    }

    /// The part of `heap_bytes` that follows the capacity (`Column::capacity_bytes`).
    pub fn capacity_bytes(&self) -> usize {
        self.arrival.capacity() * std::mem::size_of::<Nanos>()
            + self
                .columns
                .iter()
                .map(Column::capacity_bytes)
                .sum::<usize>()
    }

    /// What `rows` of this batch (`None`: every row) add to `heap_bytes` beyond capacity
    /// when appended to another batch: their strings' text. So `heap_bytes` after an
    /// append is `capacity_bytes` after it plus the text before plus this.
    pub fn text_bytes_of(&self, rows: Option<&[u32]>) -> usize {
        self.columns.iter().map(|c| c.text_bytes_of(rows)).sum()
    }

    /// Makes room for `n` more rows: when they do not fit, the capacity becomes the largest
    /// of the rows needed, twice the capacity and `floor`, but at most `limit` (a batch
    /// known to grow by a few rows at a time to `limit` reallocates a few times, not once
    /// per doubling from a handful of rows).
    pub fn grow_for(&mut self, n: usize, floor: usize, limit: usize) {
        let (len, cap) = (self.len(), self.arrival.capacity());
        if len + n > cap {
            let rows = (len + n).max(2 * cap).max(floor).min(limit.max(len + n));
            self.arrival.reserve_exact(rows - len);
            self.columns.iter_mut().for_each(|c| c.reserve_total(rows));
        }
    }

    /// Empties the batch and keeps every column's capacity.
    pub fn clear(&mut self) {
        self.arrival.clear();
        self.columns.iter_mut().for_each(Column::clear);
    }

    /// Appends the rows of `src` named by `sel` (ascending row indices).
    pub fn gather_from(&mut self, src: &Batch, sel: &[u32]) {
        self.arrival
            .extend(sel.iter().map(|&i| src.arrival[i as usize]));
        for (d, s) in self.columns.iter_mut().zip(&src.columns) {
            d.gather_from(s, sel);
        }
    }

    /// Appends the rows of `src` named by `sel`, copying only the columns marked in `used`
    /// (the others stay empty: the caller promises nothing reads them).
    pub fn gather_used_from(&mut self, src: &Batch, sel: &[u32], used: &[bool]) {
        self.arrival
            .extend(sel.iter().map(|&i| src.arrival[i as usize]));
        for ((d, s), &u) in self.columns.iter_mut().zip(&src.columns).zip(used) {
            if u {
                d.gather_from(s, sel);
            }
        }
    }

    /// Appends all rows of `src`.
    pub fn extend_from(&mut self, src: &Batch) {
        self.arrival.extend_from_slice(&src.arrival);
        for (d, s) in self.columns.iter_mut().zip(&src.columns) {
            d.extend_from(s);
        }
    }

    /// Appends one row given as scalars (tests and slow paths only).
    pub fn push_row(&mut self, arrival: Nanos, row: &[Scalar]) {
        self.arrival.push(arrival);
        for (c, v) in self.columns.iter_mut().zip(row) {
            c.push(v);
        }
    }

    /// Row `row` as scalars, typed by `types` (sinks and tests).
    pub fn row(&self, row: usize, types: &[DataType]) -> Vec<Scalar> {
        self.columns
            .iter()
            .zip(types)
            .map(|(c, &t)| c.scalar(row, t))
            .collect()
    }

    /// Checks the invariant that every column has as many rows as `arrival`.
    pub fn is_consistent(&self) -> bool {
        self.columns.iter().all(|c| c.len() == self.arrival.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grow_for_jumps_to_the_floor_then_doubles_and_stops_at_the_limit() {
        let types = [DataType::Int, DataType::Str];
        let mut b = Batch::new(&types, 0);
        let row = [Scalar::Int(1), Scalar::Str("a".into())];
        let caps = |b: &Batch| match &b.columns[0] {
            Column::Int(v) => (b.arrival.capacity(), v.capacity()),
            _ => unreachable!(),
        };
        b.grow_for(3, 256, 1024);
        assert_eq!(caps(&b), (256, 256));
        for _ in 0..256 {
            b.push_row(0, &row);
        }
        // Room enough: nothing moves.
        b.grow_for(0, 256, 1024);
        assert_eq!(caps(&b), (256, 256));
        b.grow_for(1, 256, 1024);
        assert_eq!(caps(&b), (512, 512));
        for _ in 256..512 {
            b.push_row(0, &row);
        }
        // Doubling would make 1024: the limit holds it at 700.
        b.grow_for(100, 256, 700);
        assert_eq!(caps(&b), (700, 700), "never past the limit");
    }
}
