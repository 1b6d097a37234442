//! A serde deserializer over a parsed YAML `Value` that remembers where it is: every error
//! carries the dotted path of the innermost value that failed (`streams.s.rate.steps[1].at`),
//! and an unknown field is reported at its own path. It also reads externally tagged enums
//! the way people write them in YAML: `now` or `{zipf: {n: 10, s: 1.1}}`.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde_yaml::{Mapping, Value};

use super::de_access::{EnumDe, MapDe, SeqDe};
use super::error::join;

/// A deserialization error and the path of the value it concerns (`None` until the
/// innermost deserializer that saw it attaches its path).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DeError {
    pub path: Option<String>,
    pub message: String,
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            path: None,
            message: msg.to_string(),
        }
    }
}

/// Deserializes `value`, which sits at `path` in the file.
pub(crate) fn from_value<'a, T: Deserialize<'a>>(
    value: &'a Value,
    path: &str,
) -> Result<T, DeError> {
    T::deserialize(PathDe {
        value,
        path: path.to_string(),
    })
}

/// The text of a mapping key as it appears in a path.
pub(crate) fn key_text(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Null => "~".to_string(),
        _ => "?".to_string(),
    }
}

/// Short description of a value's kind for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// Deserializes the value at `path`.
pub(super) struct PathDe<'a> {
    pub value: &'a Value,
    pub path: String,
}

impl PathDe<'_> {
    fn locate(&self, mut e: DeError) -> DeError {
        if e.path.is_none() {
            e.path = Some(self.path.clone());
        }
        e
    }

    fn invalid(&self, exp: &dyn de::Expected) -> DeError {
        let unexpected = match self.value {
            Value::Null => Unexpected::Unit,
            Value::Bool(b) => Unexpected::Bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Unexpected::Unsigned(u),
                (None, Some(i)) => Unexpected::Signed(i),
                _ => Unexpected::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => Unexpected::Str(s),
            Value::Sequence(_) => Unexpected::Seq,
            Value::Mapping(_) => Unexpected::Map,
            Value::Tagged(_) => Unexpected::Other("a tagged value"),
        };
        self.locate(de::Error::invalid_type(unexpected, exp))
    }
}

/// Visits the entries of `m` (none if `m` is `None`), each at `path.key`.
pub(super) fn visit_mapping<'de, V: Visitor<'de>>(
    m: Option<&'de Mapping>,
    path: &str,
    v: V,
) -> Result<V::Value, DeError> {
    v.visit_map(MapDe {
        iter: m.map(Mapping::iter),
        value: None,
        path,
        child: String::new(),
    })
}

impl<'de> Deserializer<'de> for PathDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        let r = match self.value {
            Value::Null => v.visit_unit(),
            Value::Bool(b) => v.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => v.visit_u64(u),
                (None, Some(i), _) => v.visit_i64(i),
                (None, None, f) => v.visit_f64(f.unwrap_or(f64::NAN)),
            },
            Value::String(s) => v.visit_borrowed_str(s),
            Value::Sequence(items) => v.visit_seq(SeqDe {
                iter: items.iter().enumerate(),
                path: &self.path,
            }),
            Value::Mapping(m) => visit_mapping(Some(m), &self.path, v),
            Value::Tagged(t) => Err(de::Error::custom(format!(
                "YAML tags like `{}` are not supported here",
                t.tag
            ))),
        };
        r.map_err(|e| self.locate(e))
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.value {
            Value::Null => v.visit_none().map_err(|e| self.locate(e)),
            _ => {
                let path = self.path.clone();
                v.visit_some(self).map_err(|e| locate_at(e, &path))
            }
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.value {
            Value::Null => v.visit_unit().map_err(|e| self.locate(e)),
            _ => Err(self.invalid(&v)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, DeError> {
        let path = self.path.clone();
        v.visit_newtype_struct(self)
            .map_err(|e| locate_at(e, &path))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.value {
            Value::Sequence(_) => self.deserialize_any(v),
            _ => Err(self.invalid(&v)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, v: V) -> Result<V::Value, DeError> {
        self.deserialize_seq(v)
    }

    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        let r = match self.value {
            Value::Mapping(m) => visit_mapping(Some(m), &self.path, v),
            // `engine:` with nothing after it reads as an empty mapping.
            Value::Null => visit_mapping(None, &self.path, v),
            _ => return Err(self.invalid(&v)),
        };
        r.map_err(|e| self.locate(e))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_map(v)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        let access = match self.value {
            Value::String(tag) => EnumDe {
                tag,
                value: None,
                path: self.path.clone(),
            },
            Value::Mapping(m) if m.len() == 1 => match m.iter().next() {
                Some((Value::String(tag), value)) => EnumDe {
                    tag,
                    value: Some(value),
                    path: join(&self.path, tag),
                },
                _ => return Err(self.locate(one_of(variants))),
            },
            _ => return Err(self.locate(one_of(variants))),
        };
        let path = self.path.clone();
        v.visit_enum(access).map_err(|e| locate_at(e, &path))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        v.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit_struct tuple_struct identifier
    }
}

pub(super) fn locate_at(mut e: DeError, path: &str) -> DeError {
    if e.path.is_none() {
        e.path = Some(path.to_string());
    }
    e
}

fn one_of(variants: &[&str]) -> DeError {
    let names: Vec<String> = variants.iter().map(|v| format!("`{v}`")).collect();
    de::Error::custom(format!(
        "expected one of {} (a name, or a mapping with exactly one of them as its key)",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::de_named::NamedMap;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        a: u32,
        #[serde(default)]
        b: Option<Vec<(f64, f64)>>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Shape {
        Point,
        Circle { r: f64 },
        Named(String),
    }

    fn yaml(s: &str) -> Value {
        serde_yaml::from_str(s).unwrap()
    }

    #[test]
    fn errors_carry_the_innermost_path() {
        let v = yaml("x: {a: 1, zz: 2}");
        let e = from_value::<NamedMap<Inner>>(&v, "root").unwrap_err();
        assert_eq!(e.path.as_deref(), Some("root.x.zz"));
        assert!(e.message.starts_with("unknown field `zz`"), "{}", e.message);

        let v = yaml("x: {a: 1, b: [[1, 2], [3, oops]]}");
        let e = from_value::<NamedMap<Inner>>(&v, "root").unwrap_err();
        assert_eq!(e.path.as_deref(), Some("root.x.b[1][1]"));

        let v = yaml("x: {b: []}");
        let e = from_value::<NamedMap<Inner>>(&v, "root").unwrap_err();
        assert_eq!(e.path.as_deref(), Some("root.x"));
        assert_eq!(e.message, "missing field `a`");
    }

    #[test]
    fn enums_read_as_names_or_single_key_mappings() {
        let v = yaml("[point, {circle: {r: 2}}, {named: hi}]");
        let shapes: Vec<Shape> = from_value(&v, "s").unwrap();
        assert_eq!(
            shapes,
            vec![
                Shape::Point,
                Shape::Circle { r: 2.0 },
                Shape::Named("hi".into())
            ]
        );
        let e = from_value::<Shape>(&yaml("{circle: {r: x}}"), "s").unwrap_err();
        assert_eq!(e.path.as_deref(), Some("s.circle.r"));
        let e = from_value::<Shape>(&yaml("circle"), "s").unwrap_err();
        assert!(
            e.message.contains("`circle` needs parameters"),
            "{}",
            e.message
        );
        let e = from_value::<Shape>(&yaml("{square: 1}"), "s").unwrap_err();
        assert!(
            e.message.starts_with("unknown variant `square`"),
            "{}",
            e.message
        );
        let e = from_value::<Shape>(&yaml("{point: ~, circle: {r: 1}}"), "s").unwrap_err();
        assert!(e.message.contains("expected one of"), "{}", e.message);
    }
}
