//! JSON lines: one object per line, deserialized straight into the batch's columns by a
//! serde visitor that matches keys against the schema on borrowed text. Unknown keys are
//! skipped; a missing, duplicate or mistyped field makes the line malformed.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::parse::{Interner, LineError, LineParser, parse_timestamp};
use crate::core::batch::Column;
use crate::core::schema::DataType;

impl LineParser {
    /// Appends the object in `text` to `columns`; on error some columns may hold a partial
    /// row (the caller truncates).
    pub(super) fn json_row(&mut self, text: &str, columns: &mut [Column]) -> Result<(), LineError> {
        self.seen.iter_mut().for_each(|s| *s = false);
        let mut de = serde_json::Deserializer::from_str(text);
        let row = Row {
            names: &self.names,
            types: &self.types,
            seen: &mut self.seen,
            strings: &mut self.strings,
            columns,
        };
        de.deserialize_map(row)
            .and_then(|()| de.end())
            .map_err(LineError::Json)
    }
}

/// Visits one JSON object as one row.
struct Row<'a> {
    names: &'a [Box<str>],
    types: &'a [crate::core::schema::DataType],
    seen: &'a mut [bool],
    strings: &'a mut Interner,
    columns: &'a mut [Column],
}

impl<'de> Visitor<'de> for Row<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object with the stream's fields")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(Key(self.names))? {
            let Some(i) = key else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if self.seen[i] {
                return Err(de::Error::custom(format_args!(
                    "field `{}` given twice",
                    self.names[i]
                )));
            }
            self.seen[i] = true;
            map.next_value_seed(Value {
                name: &self.names[i],
                ty: self.types[i],
                col: &mut self.columns[i],
                strings: self.strings,
            })?;
        }
        if let Some(i) = self.seen.iter().position(|s| !s) {
            return Err(de::Error::custom(format_args!(
                "missing field `{}`",
                self.names[i]
            )));
        }
        Ok(())
    }
}

/// A key: the index of the schema field it names (exact, else ignoring case), if any.
struct Key<'a>(&'a [Box<str>]);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, k: &str) -> Result<Option<usize>, E> {
        Ok(self
            .0
            .iter()
            .position(|n| &**n == k)
            .or_else(|| self.0.iter().position(|n| n.eq_ignore_ascii_case(k))))
    }
}

/// One field's value, pushed into its column.
struct Value<'a> {
    name: &'a str,
    ty: DataType,
    col: &'a mut Column,
    strings: &'a mut Interner,
}

impl<'de> DeserializeSeed<'de> for Value<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Value<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let what = match self.ty {
            DataType::Int => "an integer",
            DataType::Float => "a number",
            DataType::Str => "a string",
            DataType::Bool => "true or false",
            DataType::Timestamp => "nanoseconds since the epoch or an RFC 3339 time",
        };
        write!(f, "{what} for field `{}`", self.name)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        match &mut *self.col {
            Column::Int(c) => c.push(v),
            Column::Float(c) => c.push(v as f64),
            _ => return Err(self.wrong(de::Unexpected::Signed(v))),
        }
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        if let Ok(v) = i64::try_from(v) {
            return self.visit_i64(v);
        }
        match &mut *self.col {
            Column::Float(c) => c.push(v as f64),
            _ => return Err(self.wrong(de::Unexpected::Unsigned(v))),
        }
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        match &mut *self.col {
            Column::Float(c) => c.push(v),
            _ => return Err(self.wrong(de::Unexpected::Float(v))),
        }
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        match &mut *self.col {
            Column::Bool(c) => c.push(v),
            _ => return Err(self.wrong(de::Unexpected::Bool(v))),
        }
        Ok(())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        let ok = match (self.ty, &mut *self.col) {
            (DataType::Str, Column::Str(c)) => {
                let strings = &mut *self.strings;
                c.push_str(v, || strings.get(v));
                true
            }
            (DataType::Timestamp, Column::Int(c)) => match parse_timestamp(v) {
                Some(t) => {
                    c.push(t);
                    true
                }
                None => false,
            },
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(self.wrong(de::Unexpected::Str(v)))
        }
    }
}

impl Value<'_> {
    /// The error for a value of the wrong kind (only malformed lines get here).
    fn wrong<E: de::Error>(&self, got: de::Unexpected<'_>) -> E {
        de::Error::invalid_type(got, self)
    }
}
