//! Values of evaluated expressions: a `Datum` borrows a column of the batch where it can and
//! owns a column or holds a constant otherwise; `Side` views one operand as a constant or a
//! slice, so kernels are tight loops with no per-row dispatch.

use std::sync::Arc;

use super::batch::{Column, StrColumn};
use super::schema::Scalar;

/// The bits a float group key is compared and hashed by: -0.0 is 0.0 and every NaN is
/// one NaN, as SQL groups them. The one definition for the window operator and the
/// window-aware drop point, so a group is never split between them.
#[inline]
pub fn float_key_bits(x: f64) -> u64 {
    if x == 0.0 {
        0.0f64.to_bits()
    } else if x.is_nan() {
        f64::NAN.to_bits()
    } else {
        x.to_bits()
    }
}

/// How a value is stored (timestamps are ints): a closed set, so a new storage type is a
/// compile error at every kernel that must handle it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    Int,
    Float,
    Str,
    Bool,
}

/// The result of evaluating an expression: borrowed from the batch where possible.
#[derive(Debug)]
pub enum Datum<'a> {
    Ints(&'a [i64]),
    Floats(&'a [f64]),
    Strs(&'a StrColumn),
    Bools(&'a [bool]),
    Owned(Column),
    Int(i64),
    Float(f64),
    Str(Arc<str>),
    Bool(bool),
}

/// One operand seen as either a constant or a slice of values.
#[derive(Clone, Copy, Debug)]
pub enum Side<'a, T> {
    One(T),
    Many(&'a [T]),
}

impl<T: Copy> Side<'_, T> {
    /// The value at `row` (a constant has the same value at every row).
    #[inline]
    pub fn at(&self, row: usize) -> T {
        match self {
            Side::One(v) => *v,
            Side::Many(v) => v[row],
        }
    }
}

impl<'a> Datum<'a> {
    pub(super) fn from_column(c: &'a Column) -> Datum<'a> {
        match c {
            Column::Int(v) => Datum::Ints(v),
            Column::Float(v) => Datum::Floats(v),
            Column::Str(v) => Datum::Strs(v),
            Column::Bool(v) => Datum::Bools(v),
        }
    }

    pub(super) fn from_scalar(s: &Scalar) -> Datum<'a> {
        match s {
            Scalar::Int(v) | Scalar::Timestamp(v) => Datum::Int(*v),
            Scalar::Float(v) => Datum::Float(*v),
            Scalar::Str(v) => Datum::Str(v.clone()),
            Scalar::Bool(v) => Datum::Bool(*v),
        }
    }

    pub fn ints(&self) -> Side<'_, i64> {
        match self {
            Datum::Ints(v) => Side::Many(v),
            Datum::Owned(Column::Int(v)) => Side::Many(v),
            Datum::Int(v) => Side::One(*v),
            other => unreachable!("expected ints, got {other:?}"),
        }
    }

    pub fn floats(&self) -> Side<'_, f64> {
        match self {
            Datum::Floats(v) => Side::Many(v),
            Datum::Owned(Column::Float(v)) => Side::Many(v),
            Datum::Float(v) => Side::One(*v),
            other => unreachable!("expected floats, got {other:?}"),
        }
    }

    pub fn bools(&self) -> Side<'_, bool> {
        match self {
            Datum::Bools(v) => Side::Many(v),
            Datum::Owned(Column::Bool(v)) => Side::Many(v),
            Datum::Bool(v) => Side::One(*v),
            other => unreachable!("expected bools, got {other:?}"),
        }
    }

    pub fn str_at(&self, row: usize) -> &str {
        match self {
            Datum::Strs(v) => &v[row],
            Datum::Owned(Column::Str(v)) => &v[row],
            Datum::Str(v) => v,
            other => unreachable!("expected strings, got {other:?}"),
        }
    }

    pub fn is_str(&self) -> bool {
        matches!(
            self,
            Datum::Strs(_) | Datum::Str(_) | Datum::Owned(Column::Str(_))
        )
    }

    pub fn storage(&self) -> Storage {
        match self {
            Datum::Ints(_) | Datum::Int(_) | Datum::Owned(Column::Int(_)) => Storage::Int,
            Datum::Floats(_) | Datum::Float(_) | Datum::Owned(Column::Float(_)) => Storage::Float,
            Datum::Strs(_) | Datum::Str(_) | Datum::Owned(Column::Str(_)) => Storage::Str,
            Datum::Bools(_) | Datum::Bool(_) | Datum::Owned(Column::Bool(_)) => Storage::Bool,
        }
    }

    /// The value as a bool slice view for predicates: `Ok(slice)` or a constant.
    pub fn as_bools(&self) -> Result<&[bool], bool> {
        match self.bools() {
            Side::Many(v) => Ok(v),
            Side::One(b) => Err(b),
        }
    }

    /// Appends `n` rows of this value to `out` (which has the same storage type).
    pub fn append_to(&self, out: &mut Column, n: usize) {
        match (self, out) {
            (Datum::Owned(c), out) => out.extend_from(c),
            (Datum::Ints(v), Column::Int(o)) => o.extend_from_slice(v),
            (Datum::Floats(v), Column::Float(o)) => o.extend_from_slice(v),
            (Datum::Strs(v), Column::Str(o)) => o.extend_from(v),
            (Datum::Bools(v), Column::Bool(o)) => o.extend_from_slice(v),
            (Datum::Int(v), Column::Int(o)) => o.extend(std::iter::repeat_n(*v, n)),
            (Datum::Int(v), Column::Float(o)) => o.extend(std::iter::repeat_n(*v as f64, n)),
            (Datum::Float(v), Column::Float(o)) => o.extend(std::iter::repeat_n(*v, n)),
            (Datum::Str(v), Column::Str(o)) => o.push_repeat(v, n),
            (Datum::Bool(v), Column::Bool(o)) => o.extend(std::iter::repeat_n(*v, n)),
            (d, o) => unreachable!("append {d:?} to {o:?}"),
        }
    }

    /// Appends the rows `sel` names (ascending) of this value, evaluated over a whole
    /// batch, to `out` (which has the same storage type): a projection through a selection.
    pub fn append_selected(&self, out: &mut Column, sel: &[u32]) {
        match (self, out) {
            (Datum::Owned(c), out) => out.gather_from(c, sel),
            (Datum::Ints(v), Column::Int(o)) => o.extend(sel.iter().map(|&i| v[i as usize])),
            (Datum::Floats(v), Column::Float(o)) => o.extend(sel.iter().map(|&i| v[i as usize])),
            (Datum::Strs(v), Column::Str(o)) => o.gather_from(v, sel),
            (Datum::Bools(v), Column::Bool(o)) => o.extend(sel.iter().map(|&i| v[i as usize])),
            (d, o) => d.append_to(o, sel.len()),
        }
    }

    /// The value materialised as an owned column of `n` rows.
    pub fn into_column(self, n: usize) -> Column {
        match self {
            Datum::Owned(c) => c,
            d => {
                let mut c = match d.storage() {
                    Storage::Int => Column::Int(Vec::with_capacity(n)),
                    Storage::Float => Column::Float(Vec::with_capacity(n)),
                    Storage::Str => Column::Str(StrColumn::with_capacity(n)),
                    Storage::Bool => Column::Bool(Vec::with_capacity(n)),
                };
                d.append_to(&mut c, n);
                c
            }
        }
    }
}
