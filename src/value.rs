//! [`Val`]: the runtime value, JSON whose strings, arrays and objects are
//! shared by reference counting.
//!
//! Nodes pass values to the nodes that read them, nest them in records and
//! arrays, and collect them per `for` item; with `serde_json::Value` each of
//! those steps was a deep copy, so a chain of nodes that each nest the
//! previous value cost quadratic memory (exponential when a value is nested
//! twice). A `Val` clone is O(1): the nested value is shared, never copied,
//! and values are immutable once built (nothing in the language mutates
//! one). JSON (`serde_json::Value`) stays the format at the edges: inputs,
//! outputs, tool and agent calls, recordings. [`Val::into_json`] moves what
//! no one else holds instead of copying it.

use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Number, Value};

/// The fields of an object, in insertion order (as `serde_json`'s
/// `preserve_order` map keeps them).
pub(crate) type Fields = IndexMap<String, Val>;

/// A runtime value: JSON with shared strings, arrays and objects.
///
/// `==` is equality of the JSON (as `serde_json::Value` compares: `1` and
/// `1.0` differ), for comparing checked programs; the language's `==` is
/// [`equal`](crate::eval::equal).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Val {
    /// `null`.
    #[default]
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer or a finite float.
    Number(Number),
    /// A string.
    String(Arc<String>),
    /// An array.
    Array(Arc<Vec<Val>>),
    /// An object.
    Object(Arc<Fields>),
}

impl Val {
    /// A string value.
    #[must_use]
    pub fn string(text: String) -> Self {
        Val::String(Arc::new(text))
    }

    /// An array value.
    #[must_use]
    pub fn array(items: Vec<Val>) -> Self {
        Val::Array(Arc::new(items))
    }

    /// An object value.
    #[must_use]
    pub fn object(fields: Fields) -> Self {
        Val::Object(Arc::new(fields))
    }

    /// An integer value.
    #[must_use]
    pub fn int(i: i64) -> Self {
        Val::Number(i.into())
    }

    /// The field `key` of an object; `None` for a missing field or a non-object.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Val> {
        match self {
            Val::Object(fields) => fields.get(key),
            _ => None,
        }
    }

    /// The text of a string.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Val::String(s) => Some(s),
            _ => None,
        }
    }

    /// The items of an array.
    #[must_use]
    pub fn as_array(&self) -> Option<&[Val]> {
        match self {
            Val::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The fields of an object.
    #[must_use]
    pub fn as_object(&self) -> Option<&Fields> {
        match self {
            Val::Object(fields) => Some(fields),
            _ => None,
        }
    }

    /// The integer of a whole number that fits `i64`.
    #[must_use]
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Val::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// The JSON type name, for messages: `"string"`, `"integer"`, ...
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Val::Null => "null",
            Val::Bool(_) => "boolean",
            Val::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Val::Number(_) => "float",
            Val::String(_) => "string",
            Val::Array(_) => "array",
            Val::Object(_) => "object",
        }
    }

    /// The value as JSON, copied.
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(*b),
            Val::Number(n) => Value::Number(n.clone()),
            Val::String(s) => Value::String(String::clone(s)),
            Val::Array(items) => Value::Array(items.iter().map(Val::to_json).collect()),
            Val::Object(fields) => {
                Value::Object(fields.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }

    /// The value as JSON: what nothing else shares is moved, the rest copied.
    #[must_use]
    pub fn into_json(self) -> Value {
        match self {
            Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(b),
            Val::Number(n) => Value::Number(n),
            Val::String(s) => Value::String(Arc::unwrap_or_clone(s)),
            Val::Array(items) => match Arc::try_unwrap(items) {
                Ok(items) => Value::Array(items.into_iter().map(Val::into_json).collect()),
                Err(items) => Value::Array(items.iter().map(Val::to_json).collect()),
            },
            Val::Object(fields) => match Arc::try_unwrap(fields) {
                Ok(fields) => {
                    Value::Object(fields.into_iter().map(|(k, v)| (k, v.into_json())).collect())
                }
                Err(fields) => {
                    Value::Object(fields.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
                }
            },
        }
    }

    /// The same allocation: two clones of one string, array or object.
    #[must_use]
    pub fn same(&self, other: &Val) -> bool {
        match (self, other) {
            (Val::String(a), Val::String(b)) => Arc::ptr_eq(a, b),
            (Val::Array(a), Val::Array(b)) => Arc::ptr_eq(a, b),
            (Val::Object(a), Val::Object(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl From<Value> for Val {
    fn from(value: Value) -> Self {
        match value {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(b),
            Value::Number(n) => Val::Number(n),
            Value::String(s) => Val::string(s),
            Value::Array(items) => Val::array(items.into_iter().map(Val::from).collect()),
            Value::Object(map) => {
                Val::object(map.into_iter().map(|(k, v)| (k, v.into())).collect())
            }
        }
    }
}

impl From<&Value> for Val {
    fn from(value: &Value) -> Self {
        match value {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(*b),
            Value::Number(n) => Val::Number(n.clone()),
            Value::String(s) => Val::string(s.clone()),
            Value::Array(items) => Val::array(items.iter().map(Val::from).collect()),
            Value::Object(map) => {
                Val::object(map.iter().map(|(k, v)| (k.clone(), v.into())).collect())
            }
        }
    }
}

impl From<bool> for Val {
    fn from(b: bool) -> Self {
        Val::Bool(b)
    }
}

impl From<&str> for Val {
    fn from(text: &str) -> Self {
        Val::string(text.to_owned())
    }
}

impl Serialize for Val {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Val::Null => serializer.serialize_unit(),
            Val::Bool(b) => serializer.serialize_bool(*b),
            Val::Number(n) => n.serialize(serializer),
            Val::String(s) => serializer.serialize_str(s),
            Val::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items.iter() {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Val::Object(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (key, value) in fields.iter() {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

/// JSON read straight into a value, without a `serde_json::Value` first
/// (an inputs file of 100 MB was held as text, as `Value` and as `Val`
/// at once). Numbers are read as `serde_json` reads them.
impl<'de> Deserialize<'de> for Val {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValVisitor)
    }
}

/// Builds a [`Val`] from whatever JSON value comes.
struct ValVisitor;

impl<'de> Visitor<'de> for ValVisitor {
    type Value = Val;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Val, E> {
        Ok(Val::Null)
    }

    fn visit_none<E>(self) -> Result<Val, E> {
        Ok(Val::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Val, D::Error> {
        Val::deserialize(deserializer)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Val, E> {
        Ok(Val::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Val, E> {
        Ok(Val::Number(i.into()))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Val, E> {
        Ok(Val::Number(u.into()))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Val, E> {
        // JSON has no NaN or infinity; `null` is what `serde_json` makes of them.
        Ok(Number::from_f64(f).map_or(Val::Null, Val::Number))
    }

    fn visit_str<E>(self, text: &str) -> Result<Val, E> {
        Ok(Val::from(text))
    }

    fn visit_string<E>(self, text: String) -> Result<Val, E> {
        Ok(Val::string(text))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Val, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        items.shrink_to_fit();
        Ok(Val::array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Val, A::Error> {
        let mut fields = Fields::with_capacity(map.size_hint().unwrap_or(0));
        while let Some((key, value)) = map.next_entry::<String, Val>()? {
            // A repeated key keeps its first place and its last value, as in `Value`.
            fields.insert(key, value);
        }
        fields.shrink_to_fit();
        Ok(Val::object(fields))
    }
}

/// Compact JSON, as `serde_json::Value` prints.
impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn converts_both_ways_keeping_key_order_and_numbers() {
        let json = json!({"z": 1, "a": [1.5, "x", null, true], "m": {"k": -3}});
        let val = Val::from(&json);
        assert_eq!(val.to_string(), json.to_string());
        assert_eq!(val.to_json(), json);
        assert_eq!(val.clone().into_json(), json);
        assert_eq!(Val::from(json.clone()).into_json(), json);
    }

    #[test]
    fn clones_share_instead_of_copying() {
        let inner = Val::from(&json!({"big": [1, 2, 3]}));
        let outer = Val::array(vec![inner.clone(), inner.clone()]);
        let items = outer.as_array().unwrap();
        assert!(items[0].same(&inner) && items[1].same(&inner));
    }

    #[test]
    fn reads_json_as_value_reads_it() {
        let text = r#"{"z": [1, -2, 3.5, 18446744073709551615, null, true],
            "a": {"b": "c\u00e9", "b": "last"}, "e": {}, "s": ""}"#;
        let read: Val = serde_json::from_str(text).unwrap();
        let through_value = Val::from(serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(read, through_value);
        assert_eq!(read.to_string(), through_value.to_string());
        assert!(serde_json::from_str::<Val>("[1,").is_err());
    }
}
