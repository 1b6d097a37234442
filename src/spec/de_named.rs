//! `NamedMap`: a YAML mapping read into a list of `(name, value)` in file order, so
//! streams, queries and schema fields keep the order the user wrote them in.

use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};

/// An ordered mapping from names to values, in file order (streams, queries, schema
/// fields). Keys are unique: the YAML parser rejects duplicates.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedMap<T>(pub Vec<(String, T)>);

impl<T> Default for NamedMap<T> {
    fn default() -> Self {
        NamedMap(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for NamedMap<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = NamedMap<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of names to settings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NamedMap<T>, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, T>()? {
                    out.push((k, v));
                }
                Ok(NamedMap(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::de::from_value;

    #[test]
    fn named_maps_keep_file_order() {
        let m: NamedMap<u8> =
            from_value(&serde_yaml::from_str("z: 1\na: 2\nm: 3").unwrap(), "").unwrap();
        let names: Vec<&str> = m.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["z", "a", "m"]);
    }
}
