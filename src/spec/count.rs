//! Whole-number settings (`engine.batch_size`, `close_step`, `queue_capacity`,
//! `max_queries`) read with messages a user reads: "-3 is negative: expected a whole
//! number, 0 or more" where serde says "expected usize". (A number beyond 64 bits never
//! gets here: the YAML reader refuses it, located.) Invariant: accepts exactly the values
//! a `usize` field accepted (and `null`, as unset).

use std::fmt;

use serde::de::{self, Deserializer, Visitor};

/// For `#[serde(default, deserialize_with = "count::opt")]` on an `Option<usize>`.
pub(super) fn opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    d.deserialize_any(CountVisitor)
}

struct CountVisitor;

impl Visitor<'_> for CountVisitor {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a whole number, 0 or more")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<usize>, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<usize>, E> {
        usize::try_from(v)
            .map(Some)
            .map_err(|_| E::custom(format!("{v} is too large")))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<usize>, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(E::custom(format!(
                "{v} is negative: expected a whole number, 0 or more"
            ))),
        }
    }
}
