//! Field types, schemas and single values; a schema resolves column names to indices once,
//! at plan time, so nothing on the hot path ever looks a name up.

use std::fmt;
use std::sync::Arc;

/// Nanoseconds. Arrival and event times, durations and latencies all use this unit.
pub type Nanos = i64;

/// The type of a field. `Timestamp` is stored like `Int` (nanoseconds since the epoch) but
/// keeps its own type so windows can insist on it and sinks can print it as time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    Int,
    Float,
    Str,
    Bool,
    Timestamp,
}

impl DataType {
    /// Parses the names used in workload schemas.
    pub fn parse(name: &str) -> Option<DataType> {
        Some(match name {
            "int" | "bigint" | "i64" => DataType::Int,
            "float" | "double" | "f64" => DataType::Float,
            "string" | "str" | "text" => DataType::Str,
            "bool" | "boolean" => DataType::Bool,
            "timestamp" | "ts" => DataType::Timestamp,
            _ => return None,
        })
    }

    pub fn is_numeric(self) -> bool {
        matches!(self, DataType::Int | DataType::Float | DataType::Timestamp)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DataType::Int => "int",
            DataType::Float => "float",
            DataType::Str => "string",
            DataType::Bool => "bool",
            DataType::Timestamp => "timestamp",
        })
    }
}

/// One named, typed column of a schema.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: DataType,
}

/// The ordered fields of a stream or of a query's output. `event_time` is the index of the
/// timestamp field that carries event time, if the stream declares one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schema {
    pub fields: Vec<Field>,
    pub event_time: Option<usize>,
}

impl Schema {
    pub fn new(fields: Vec<Field>) -> Schema {
        Schema {
            fields,
            event_time: None,
        }
    }

    /// Index of a column, case-insensitive as SQL identifiers are.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.fields
            .iter()
            .position(|f| f.name.eq_ignore_ascii_case(name))
    }

    pub fn types(&self) -> Vec<DataType> {
        self.fields.iter().map(|f| f.ty).collect()
    }

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

/// One value, used for literals, generator output and result rows leaving the engine.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    Int(i64),
    Float(f64),
    Str(Arc<str>),
    Bool(bool),
    Timestamp(i64),
}

impl Scalar {
    pub fn data_type(&self) -> DataType {
        match self {
            Scalar::Int(_) => DataType::Int,
            Scalar::Float(_) => DataType::Float,
            Scalar::Str(_) => DataType::Str,
            Scalar::Bool(_) => DataType::Bool,
            Scalar::Timestamp(_) => DataType::Timestamp,
        }
    }

    /// The value as f64, for numeric scalars.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Int(v) | Scalar::Timestamp(v) => Some(*v as f64),
            Scalar::Float(v) => Some(*v),
            _ => None,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Int(v) | Scalar::Timestamp(v) => write!(f, "{v}"),
            Scalar::Float(v) => write!(f, "{v}"),
            Scalar::Str(v) => write!(f, "'{v}'"),
            Scalar::Bool(v) => write!(f, "{v}"),
        }
    }
}
