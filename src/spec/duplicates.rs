//! Duplicate keys: the YAML parser stops at the first one, so when it does, the document is
//! walked once more by a reader that tolerates them, and every later duplicate is reported
//! too, each at the place where its key is written again.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, VariantAccess, Visitor};
use serde_yaml::Value;

use super::de::key_text;
use super::error::join;
use super::locate::locate;

/// A key written twice in one mapping.
#[derive(Debug, PartialEq)]
pub(crate) struct Duplicate {
    /// The path of the mapping.
    pub parent: String,
    pub key: Value,
}

impl Duplicate {
    /// The YAML parser's own message for it, so that all duplicates read alike.
    pub fn message(&self) -> String {
        match &self.key {
            Value::Null => "duplicate entry with null key".to_string(),
            Value::Bool(b) => format!("duplicate entry with key `{b}`"),
            Value::Number(n) => format!("duplicate entry with key {n}"),
            Value::String(s) => format!("duplicate entry with key {s:?}"),
            _ => "duplicate entry in YAML map".to_string(),
        }
    }

    /// The 1-based line and column of the second occurrence of the key when it is a block
    /// mapping key; otherwise of the first, or of the nearest ancestor found.
    pub fn position(&self, text: &str) -> (usize, usize) {
        let key = key_text(&self.key);
        let (line, col) = locate(text, &join(&self.parent, &key));
        let lines: Vec<&str> = text.lines().collect();
        let indent = col - 1;
        let is_key = |l: &str| {
            let body = l.trim_start();
            l.len() - body.len() == indent
                && [
                    format!("{key}:"),
                    format!("\"{key}\":"),
                    format!("'{key}':"),
                ]
                .iter()
                .any(|k| body.starts_with(k.as_str()))
        };
        if !lines.get(line - 1).is_some_and(|l| is_key(l)) {
            return (line, col);
        }
        for (i, l) in lines.iter().enumerate().skip(line) {
            let body = l.trim_start();
            if body.is_empty() || body.starts_with('#') {
                continue;
            }
            if l.len() - body.len() < indent {
                break;
            }
            if is_key(l) {
                return (i + 1, col);
            }
        }
        (line, col)
    }
}

/// Every duplicate key of `text`, in document order, as far as it parses.
pub(crate) fn duplicates(text: &str) -> Vec<Duplicate> {
    let mut found = Vec::new();
    // A syntax error ends the walk; it is the parser's to report.
    let _ = Walk {
        path: String::new(),
        found: &mut found,
    }
    .deserialize(serde_yaml::Deserializer::from_str(text));
    found
}

/// Visits a value at `path`, recording duplicate keys of every mapping in it.
struct Walk<'a> {
    path: String,
    found: &'a mut Vec<Duplicate>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Walk {
                path: format!("{}[{i}]", self.path),
                found: &mut *self.found,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = Vec::new();
        while let Some(key) = map.next_key::<Value>()? {
            let path = join(&self.path, &key_text(&key));
            if seen.contains(&key) {
                self.found.push(Duplicate {
                    parent: self.path.clone(),
                    key,
                });
            } else {
                seen.push(key);
            }
            map.next_value_seed(Walk {
                path,
                found: &mut *self.found,
            })?;
        }
        Ok(())
    }

    /// A tagged value (`!tag value`): its content is walked at the same path.
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        let (_, variant) = data.variant::<de::IgnoredAny>()?;
        variant.newtype_variant_seed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_duplicate_where_it_is_written_again() {
        let text = "a: 1\nm:\n  x: 1\n  y: [{k: 1, k: 2}]\n  x: 2\na: 3\n";
        let d = duplicates(text);
        let found: Vec<(&str, String)> =
            d.iter().map(|d| (d.parent.as_str(), d.message())).collect();
        assert_eq!(
            found,
            [
                ("m.y[0]", "duplicate entry with key \"k\"".to_string()),
                ("m", "duplicate entry with key \"x\"".to_string()),
                ("", "duplicate entry with key \"a\"".to_string()),
            ]
        );
        assert_eq!(d[0].position(text), (4, 8));
        assert_eq!(d[1].position(text), (5, 3));
        assert_eq!(d[2].position(text), (6, 1));
        assert!(duplicates("a: [1, 2\n").is_empty());
    }
}
