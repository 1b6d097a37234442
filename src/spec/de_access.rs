//! How the path-tracking deserializer walks into sequences, mappings and enums: each
//! element, entry and variant is deserialized at its own path (`a[1]`, `a.key`,
//! `field.zipf`), so errors raised inside it are reported there.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde_yaml::Value;

use super::de::{DeError, PathDe, key_text, locate_at};
use super::error::join;

pub(super) struct SeqDe<'a, 'p> {
    pub iter: std::iter::Enumerate<std::slice::Iter<'a, Value>>,
    pub path: &'p str,
}

impl<'de> SeqAccess<'de> for SeqDe<'de, '_> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        match self.iter.next() {
            None => Ok(None),
            Some((i, value)) => seed
                .deserialize(PathDe {
                    value,
                    path: format!("{}[{i}]", self.path),
                })
                .map(Some),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

pub(super) struct MapDe<'a, 'p> {
    pub iter: Option<serde_yaml::mapping::Iter<'a>>,
    pub value: Option<&'a Value>,
    pub path: &'p str,
    /// Path of the entry being read.
    pub child: String,
}

impl<'de> MapAccess<'de> for MapDe<'de, '_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some((key, value)) = self.iter.as_mut().and_then(Iterator::next) else {
            return Ok(None);
        };
        self.value = Some(value);
        self.child = join(self.path, &key_text(key));
        seed.deserialize(PathDe {
            value: key,
            path: self.child.clone(),
        })
        .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        match self.value.take() {
            Some(value) => seed.deserialize(PathDe {
                value,
                path: self.child.clone(),
            }),
            None => Err(de::Error::custom("a mapping value was read before its key")),
        }
    }
}

pub(super) struct EnumDe<'a> {
    pub tag: &'a str,
    pub value: Option<&'a Value>,
    pub path: String,
}

impl<'de> EnumAccess<'de> for EnumDe<'de> {
    type Error = DeError;
    type Variant = EnumDe<'de>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), DeError> {
        let tag = seed
            .deserialize(BorrowedStrDeserializer::<DeError>::new(self.tag))
            .map_err(|e| locate_at(e, &self.path))?;
        Ok((tag, self))
    }
}

impl<'de> EnumDe<'de> {
    fn content(&self, what: &str) -> Result<PathDe<'de>, DeError> {
        match self.value {
            Some(value) => Ok(PathDe {
                value,
                path: self.path.clone(),
            }),
            None => Err(locate_at(
                de::Error::custom(format!(
                    "`{}` needs {what}, written `{{{}: ...}}`",
                    self.tag, self.tag
                )),
                &self.path,
            )),
        }
    }
}

impl<'de> VariantAccess<'de> for EnumDe<'de> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        match self.value {
            None | Some(Value::Null) => Ok(()),
            Some(_) => Err(locate_at(
                de::Error::custom(format!("`{}` takes no parameters", self.tag)),
                &self.path,
            )),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, DeError> {
        seed.deserialize(self.content("a value")?)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, v: V) -> Result<V::Value, DeError> {
        self.content("a list")?.deserialize_seq(v)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        self.content("parameters")?.deserialize_map(v)
    }
}
