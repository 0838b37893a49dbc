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
//!
//! A value is small: 16 bytes; a string one allocation of its length and
//! bytes; an object one allocation of its values beside a pointer to its
//! keys, which the objects read from one JSON document with the same keys
//! share.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::mem::MaybeUninit;
use std::ops::Deref;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Number, Value};
use triomphe::{HeaderSlice, HeaderWithLength, UniqueArc};

/// The fields of an object being built, in insertion order (as
/// `serde_json`'s `preserve_order` map keeps them); [`Val::object`] makes
/// the compact [`Object`] of them.
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
    String(Str),
    /// An array.
    Array(Arc<Vec<Val>>),
    /// An object.
    Object(Object),
}

// A value is two words: a million-node program holds millions of them.
const _: () = assert!(size_of::<Val>() == 16);

/// The text of a string value: one allocation (its length beside the
/// bytes) behind a one-word pointer, shared by reference counting.
#[derive(Clone)]
pub struct Str(triomphe::ThinArc<(), u8>);

impl Str {
    /// The text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        // SAFETY: the bytes are a copy of a whole `&str` (see `From<&str>`)
        // or were checked to be UTF-8 (`StrBuf::into_str`), and are never
        // changed.
        unsafe { std::str::from_utf8_unchecked(&self.0.slice) }
    }

    /// The same text: two clones of one string.
    #[must_use]
    pub fn same(&self, other: &Str) -> bool {
        self.0.ptr() == other.0.ptr()
    }
}

/// The bytes of a [`Str`] while they are written: zeroed at their final
/// length and written in place, so that a long text (a file's base64) is
/// never copied into its string.
pub(crate) struct StrBuf(UniqueArc<HeaderSlice<HeaderWithLength<()>, [u8]>>);

impl StrBuf {
    /// `len` zero bytes.
    #[must_use]
    pub(crate) fn zeroed(len: usize) -> Self {
        let mut bytes =
            UniqueArc::from_header_and_uninit_slice(HeaderWithLength::new((), len), len);
        bytes.slice.fill(MaybeUninit::new(0));
        // SAFETY: every byte of the slice was just written.
        StrBuf(unsafe { bytes.assume_init_slice_with_header() })
    }

    /// The string of the bytes written.
    ///
    /// # Errors
    /// The bytes are not UTF-8.
    pub(crate) fn into_str(self) -> Result<Str, std::str::Utf8Error> {
        std::str::from_utf8(&self.0.slice)?;
        Ok(Str(triomphe::Arc::into_thin(self.0.shareable())))
    }
}

impl AsRef<[u8]> for StrBuf {
    fn as_ref(&self) -> &[u8] {
        &self.0.slice
    }
}

impl AsMut<[u8]> for StrBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.0.slice
    }
}

impl From<&str> for Str {
    fn from(text: &str) -> Self {
        Str(triomphe::ThinArc::from_header_and_slice((), text.as_bytes()))
    }
}

impl From<String> for Str {
    fn from(text: String) -> Self {
        Str::from(text.as_str())
    }
}

impl From<&Str> for String {
    fn from(text: &Str) -> Self {
        text.as_str().to_owned()
    }
}

impl Deref for Str {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Str {
    fn as_ref(&self) -> &str {
        self
    }
}

impl Borrow<str> for Str {
    fn borrow(&self) -> &str {
        self
    }
}

impl PartialEq for Str {
    fn eq(&self, other: &Str) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Str {}

impl PartialOrd for Str {
    fn partial_cmp(&self, other: &Str) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Str {
    fn cmp(&self, other: &Str) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Str {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

/// Objects with more keys than this find a key by hash, not by scanning.
const SCAN: usize = 8;

/// The keys of an object in order, shared by the objects read with the
/// same keys (the records of an array keep one list of keys).
#[derive(Debug)]
struct Shape {
    keys: Box<[Arc<str>]>,
    /// Positions by key, for an object of more than [`SCAN`] keys.
    index: Option<hashbrown::HashMap<Arc<str>, u32>>,
}

impl Shape {
    /// The shape of `keys`, which are distinct.
    fn new(keys: Box<[Arc<str>]>) -> Arc<Self> {
        let index = (keys.len() > SCAN).then(|| {
            keys.iter().zip(0..).map(|(key, i): (&Arc<str>, u32)| (Arc::clone(key), i)).collect()
        });
        Arc::new(Shape { keys, index })
    }

    fn position(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).map(|&i| i as usize),
            None => self.keys.iter().position(|k| **k == *key),
        }
    }
}

/// The fields of an object value, in order: one allocation holding the
/// values and a pointer to the keys ([`Shape`]), which the objects read
/// with the same keys share, behind a one-word pointer. Values are
/// immutable once built; the few edits (`update`, `insert`) copy an
/// object that is shared.
#[derive(Clone)]
pub struct Object(triomphe::ThinArc<Arc<Shape>, Val>);

impl Object {
    fn of(shape: Arc<Shape>, values: Vec<Val>) -> Self {
        Object(triomphe::ThinArc::from_header_and_iter(shape, values.into_iter()))
    }

    fn shape(&self) -> &Shape {
        &self.0.header.header
    }

    /// The value of field `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Val> {
        self.shape().position(key).and_then(|i| self.0.slice.get(i))
    }

    /// Whether the object has field `key`.
    #[must_use]
    pub fn contains_key(&self, key: &str) -> bool {
        self.shape().position(key).is_some()
    }

    /// The number of fields.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.slice.len()
    }

    /// Whether there are no fields.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.slice.is_empty()
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.shape().keys.iter().map(|key| &**key)
    }

    /// The values, in order.
    pub fn values(&self) -> std::slice::Iter<'_, Val> {
        self.0.slice.iter()
    }

    /// The fields, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Val)> {
        self.keys().zip(self.values())
    }

    /// Changes the value of field `key` by `change` (the object is copied
    /// first when shared); `None` when there is no such field.
    pub fn update<R>(&mut self, key: &str, change: impl FnOnce(&mut Val) -> R) -> Option<R> {
        let i = self.shape().position(key)?;
        if triomphe::ThinArc::strong_count(&self.0) > 1 {
            *self = Object::of(Arc::clone(&self.0.header.header), self.0.slice.to_vec());
        }
        self.0.with_arc_mut(|object| {
            triomphe::Arc::get_mut(object).and_then(|o| o.slice_mut().get_mut(i)).map(change)
        })
    }

    /// Sets field `key` to `value` (a new key goes last).
    pub fn insert(&mut self, key: &str, value: Val) {
        if self.contains_key(key) {
            self.update(key, |slot| *slot = value);
        } else {
            let mut fields = self.to_fields();
            fields.insert(key.to_owned(), value);
            *self = Object::from(fields);
        }
    }

    /// The fields, copied for building on.
    #[must_use]
    pub fn to_fields(&self) -> Fields {
        self.iter().map(|(key, value)| (key.to_owned(), value.clone())).collect()
    }

    /// The fields: the values moved when nothing else holds the object,
    /// else copied.
    #[must_use]
    pub fn into_fields(mut self) -> Fields {
        let moved = self.0.with_arc_mut(|object| {
            triomphe::Arc::get_mut(object)
                .map(|o| o.slice_mut().iter_mut().map(std::mem::take).collect::<Vec<_>>())
        });
        match moved {
            Some(values) => self.keys().map(str::to_owned).zip(values).collect(),
            None => self.to_fields(),
        }
    }

    /// The same allocation: two clones of one object.
    #[must_use]
    pub fn same(&self, other: &Object) -> bool {
        self.0.ptr() == other.0.ptr()
    }
}

impl From<Fields> for Object {
    fn from(fields: Fields) -> Self {
        let (keys, values): (Vec<Arc<str>>, Vec<Val>) =
            fields.into_iter().map(|(key, value)| (Arc::from(key), value)).unzip();
        Object::of(Shape::new(keys.into_boxed_slice()), values)
    }
}

/// Equality of the JSON objects: the same keys with equal values, in any
/// order (as `serde_json::Map` compares).
impl PartialEq for Object {
    fn eq(&self, other: &Object) -> bool {
        self.same(other)
            || self.len() == other.len()
                && self.iter().all(|(key, value)| other.get(key) == Some(value))
    }
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Val {
    /// A string value.
    #[must_use]
    pub fn string(text: String) -> Self {
        Val::String(Str::from(text))
    }

    /// An array value.
    #[must_use]
    pub fn array(items: Vec<Val>) -> Self {
        Val::Array(Arc::new(items))
    }

    /// An object value.
    #[must_use]
    pub fn object(fields: Fields) -> Self {
        Val::Object(Object::from(fields))
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
    pub fn as_object(&self) -> Option<&Object> {
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
            Val::String(s) => Value::String(String::from(s)),
            Val::Array(items) => Value::Array(items.iter().map(Val::to_json).collect()),
            Val::Object(fields) => {
                Value::Object(fields.iter().map(|(k, v)| (k.to_owned(), v.to_json())).collect())
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
            Val::String(s) => Value::String(String::from(&s)),
            Val::Array(items) => match Arc::try_unwrap(items) {
                Ok(items) => Value::Array(items.into_iter().map(Val::into_json).collect()),
                Err(items) => Value::Array(items.iter().map(Val::to_json).collect()),
            },
            Val::Object(fields) => Value::Object(
                fields.into_fields().into_iter().map(|(k, v)| (k, v.into_json())).collect(),
            ),
        }
    }

    /// The same allocation: two clones of one string, array or object.
    #[must_use]
    pub fn same(&self, other: &Val) -> bool {
        match (self, other) {
            (Val::String(a), Val::String(b)) => a.same(b),
            (Val::Array(a), Val::Array(b)) => Arc::ptr_eq(a, b),
            (Val::Object(a), Val::Object(b)) => a.same(b),
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
            Value::String(s) => Val::from(s.as_str()),
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
        Val::String(Str::from(text))
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
/// at once). Numbers are read as `serde_json` reads them. The objects
/// read with the same keys share one list of them.
impl<'de> Deserialize<'de> for Val {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        DeserializeSeed::deserialize(Reader { shapes: &mut Shapes::default() }, deserializer)
    }
}

/// The keys and key lists met while reading one JSON document, to share.
#[derive(Default)]
struct Shapes {
    keys: hashbrown::HashSet<Arc<str>>,
    shapes: hashbrown::HashMap<Box<[Arc<str>]>, Arc<Shape>>,
}

impl Shapes {
    /// At most this many distinct keys and key lists are kept for sharing
    /// (a document of a million different keys keeps its keys once).
    const KEPT: usize = 4096;
    /// Key lists longer than this are not looked for again.
    const WIDEST: usize = 64;

    fn key(&mut self, text: &str) -> Arc<str> {
        if let Some(key) = self.keys.get(text) {
            return Arc::clone(key);
        }
        let key: Arc<str> = Arc::from(text);
        if self.keys.len() < Self::KEPT {
            self.keys.insert(Arc::clone(&key));
        }
        key
    }

    fn shape(&mut self, keys: Vec<Arc<str>>) -> Arc<Shape> {
        if let Some(shape) = self.shapes.get(keys.as_slice()) {
            return Arc::clone(shape);
        }
        let keys = keys.into_boxed_slice();
        if self.shapes.len() >= Self::KEPT || keys.len() > Self::WIDEST {
            return Shape::new(keys);
        }
        let shape = Shape::new(keys.clone());
        self.shapes.insert(keys, Arc::clone(&shape));
        shape
    }
}

/// Builds a [`Val`] from whatever JSON value comes, sharing keys through
/// `shapes`.
struct Reader<'s> {
    shapes: &'s mut Shapes,
}

impl<'de> DeserializeSeed<'de> for Reader<'_> {
    type Value = Val;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Val, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Reader<'_> {
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
        DeserializeSeed::deserialize(self, deserializer)
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
        while let Some(item) = seq.next_element_seed(Reader { shapes: &mut *self.shapes })? {
            items.push(item);
        }
        items.shrink_to_fit();
        Ok(Val::array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Val, A::Error> {
        let mut keys: Vec<Arc<str>> = Vec::new();
        let mut values: Vec<Val> = Vec::new();
        // Positions by key once there are more than `SCAN` keys.
        let mut index: Option<hashbrown::HashMap<Arc<str>, usize>> = None;
        while let Some(key) = map.next_key_seed(KeyReader { shapes: &mut *self.shapes })? {
            let value = map.next_value_seed(Reader { shapes: &mut *self.shapes })?;
            let repeated = match &index {
                Some(index) => index.get(&*key).copied(),
                None => keys.iter().position(|k| *k == key),
            };
            // A repeated key keeps its first place and its last value, as in `Value`.
            if let Some(at) = repeated {
                values[at] = value;
                continue;
            }
            if index.is_none() && keys.len() == SCAN {
                index = Some(keys.iter().cloned().zip(0..).collect());
            }
            if let Some(index) = &mut index {
                index.insert(Arc::clone(&key), keys.len());
            }
            keys.push(key);
            values.push(value);
        }
        values.shrink_to_fit();
        Ok(Val::Object(Object::of(self.shapes.shape(keys), values)))
    }
}

/// Reads an object's key, shared through `shapes`.
struct KeyReader<'s> {
    shapes: &'s mut Shapes,
}

impl<'de> DeserializeSeed<'de> for KeyReader<'_> {
    type Value = Arc<str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Arc<str>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyReader<'_> {
    type Value = Arc<str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, text: &str) -> Result<Arc<str>, E> {
        Ok(self.shapes.key(text))
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

    #[test]
    fn records_read_with_the_same_keys_share_them() {
        let read: Val =
            serde_json::from_str(r#"[{"id": 1, "n": "a"}, {"id": 2, "n": "b"}]"#).unwrap();
        let [Val::Object(a), Val::Object(b)] = read.as_array().unwrap() else { panic!() };
        assert!(Arc::ptr_eq(&a.0.header.header, &b.0.header.header));
        assert_eq!(b.get("n"), Some(&Val::from("b")));
        assert_eq!(b.get("x"), None);
    }

    #[test]
    fn wide_objects_find_keys_and_keep_the_first_place_of_a_repeated_one() {
        let mut text = String::from("{");
        for i in 0..40 {
            text.push_str(&format!("\"k{i}\": {i}, "));
        }
        text.push_str(r#""k3": "again", "k2": "again"}"#);
        let read: Val = serde_json::from_str(&text).unwrap();
        let through_value = Val::from(serde_json::from_str::<Value>(&text).unwrap());
        assert_eq!(read.to_string(), through_value.to_string());
        let fields = read.as_object().unwrap();
        assert_eq!(fields.len(), 40);
        assert_eq!(fields.get("k39"), Some(&Val::int(39)));
        assert_eq!(fields.get("k3"), Some(&Val::from("again")));
        assert_eq!(fields.keys().nth(3), Some("k3"));
    }

    #[test]
    fn strings_are_shared_and_keep_their_text() {
        let text = Val::from("é".repeat(12).as_str());
        assert_eq!(text.as_str(), Some("é".repeat(12).as_str()));
        assert!(text.same(&text.clone()) && !text.same(&Val::from("é".repeat(12).as_str())));
        assert_eq!(Val::from(""), Val::string(String::new()));
    }

    #[test]
    fn edits_copy_a_shared_object_only() {
        let mut a = Val::from(&json!({"x": 1}));
        let b = a.clone();
        let Val::Object(fields) = &mut a else { panic!() };
        fields.insert("x", Val::int(2));
        fields.insert("y", Val::int(3));
        assert_eq!(a.to_json(), json!({"x": 2, "y": 3}));
        assert_eq!(b.to_json(), json!({"x": 1}));
        assert_eq!(Val::from(&json!({"a": 1, "b": 2})), Val::from(&json!({"b": 2, "a": 1})));
    }
}
