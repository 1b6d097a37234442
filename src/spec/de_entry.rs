//! Reading one entry (the `engine:` map, a stream, a query) so that every field's error is
//! reported, not only the first: when the entry as a whole fails, each of its keys is read
//! on its own. The invariant is no cascade: a key that failed to read never also shows up
//! as a missing field, and the well-formed rest is returned only if it reads on its own.

use serde::de::DeserializeOwned;
use serde_yaml::{Mapping, Value};

use super::de::{DeError, from_value};

/// Why an entry failed to read, and what could be read of it.
pub(crate) struct EntryErrors<T> {
    /// Every error of the entry's keys, at least one; the first error the entry as a whole
    /// gives is always among them, with the same message and path.
    pub errors: Vec<DeError>,
    /// The entry without the keys that failed, if that reads (all required fields well
    /// formed), so it can still be checked for meaning.
    pub rest: Option<T>,
}

/// Deserializes the struct `T` from `value`, which sits at `path`; on failure, collects
/// the error of every key of the mapping.
///
/// Each key is read as a mapping of that one entry: serde's derived visitor reads entries
/// in order and checks for missing fields only at the end, so an error located below
/// `path` belongs to that key (its value, or the key itself if it is unknown), while an
/// error at `path` itself is only a missing field and is ignored there. A missing required
/// field is reported only if its key is absent and no key is unknown: an unknown key is
/// most likely the missing one misspelt (`ratee` for `rate`), and a key that failed is not
/// missing. Serde names only the first missing field, so a later one may go unreported
/// while an earlier one failed to read.
pub(crate) fn read_entry<T: DeserializeOwned>(
    value: &Value,
    path: &str,
) -> Result<T, EntryErrors<T>> {
    let first = match from_value::<T>(value, path) {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    let Value::Mapping(m) = value else {
        return Err(EntryErrors {
            errors: vec![first],
            rest: None,
        });
    };
    let mut errors = Vec::new();
    let mut good = Mapping::new();
    for (k, v) in m {
        let one: Mapping = [(k.clone(), v.clone())].into_iter().collect();
        match from_value::<T>(&Value::Mapping(one), path) {
            Err(e) if e.path.as_deref() != Some(path) => errors.push(e),
            _ => {
                good.insert(k.clone(), v.clone());
            }
        }
    }
    let misspelt = errors
        .iter()
        .any(|e| e.message.starts_with("unknown field"));
    let rest = match from_value::<T>(&Value::Mapping(good), path) {
        Ok(t) => Some(t),
        Err(e) => {
            let absent = missing_field(&e).is_some_and(|f| !m.contains_key(f));
            if errors.is_empty() || (absent && !misspelt) {
                errors.push(e);
            }
            None
        }
    };
    if errors.is_empty() {
        // Not expected (the first error concerns some key, or a missing field), but the
        // entry did fail: never lose its error.
        errors.push(first);
    }
    Err(EntryErrors { errors, rest })
}

/// The field named by serde's "missing field `x`" message.
fn missing_field(e: &DeError) -> Option<&str> {
    e.message.strip_prefix("missing field `")?.strip_suffix('`')
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Entry {
        a: u32,
        #[serde(default)]
        b: Option<u32>,
        #[serde(default)]
        c: Option<String>,
    }

    fn read(text: &str) -> Result<Entry, EntryErrors<Entry>> {
        read_entry(&serde_yaml::from_str(text).unwrap(), "e")
    }

    fn paths(e: &EntryErrors<Entry>) -> Vec<&str> {
        e.errors
            .iter()
            .map(|e| e.path.as_deref().unwrap())
            .collect()
    }

    #[test]
    fn every_key_is_reported_and_the_rest_kept() {
        assert_eq!(
            read("{a: 1, b: 2}").ok(),
            Some(Entry {
                a: 1,
                b: Some(2),
                c: None
            })
        );
        let e = read("{a: 1, b: -2, x: 1, c: [], y: 2}").err().unwrap();
        assert_eq!(paths(&e), ["e.b", "e.x", "e.c", "e.y"]);
        assert!(e.errors[1].message.starts_with("unknown field `x`"));
        assert_eq!(
            e.rest,
            Some(Entry {
                a: 1,
                b: None,
                c: None
            })
        );
    }

    #[test]
    fn missing_fields_are_reported_unless_failed_or_misspelt() {
        let e = read("{b: 2}").err().unwrap();
        assert_eq!(paths(&e), ["e"]);
        assert_eq!(e.errors[0].message, "missing field `a`");
        // A misspelt or broken `a` is not also missing.
        let e = read("{aa: 1, b: 2}").err().unwrap();
        assert_eq!(paths(&e), ["e.aa"]);
        let e = read("{b: x}").err().unwrap();
        assert_eq!(paths(&e), ["e.b", "e"]);
        let e = read("{a: x, b: y}").err().unwrap();
        assert_eq!(paths(&e), ["e.a", "e.b"]);
        assert!(e.rest.is_none());
        let e = read_entry::<Entry>(&Value::from(3), "e").err().unwrap();
        assert_eq!(paths(&e), ["e"]);
    }
}
