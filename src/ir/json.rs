//! [`Json`]: what type checks, defaults and messages need of a value, so
//! that they work alike on JSON (`serde_json::Value`: inputs, tool and
//! agent results, literals) and on the runtime's shared values
//! (`value::Val`), without converting one into the other.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::value::{Object, Val};

/// A JSON-shaped value.
pub trait Json: serde::Serialize + fmt::Display + Sized {
    /// The JSON type name: `"null"`, `"boolean"`, `"integer"`, `"float"`,
    /// `"string"`, `"array"` or `"object"`.
    fn kind(&self) -> &'static str;
    /// The text of a string.
    fn text(&self) -> Option<&str>;
    /// The items of an array.
    fn items(&self) -> Option<&[Self]>;
    /// The field `name` of an object.
    fn field(&self, name: &str) -> Option<&Self>;
    /// The keys of an object (none for other values).
    fn keys(&self) -> impl Iterator<Item = &str>;
    /// The items of an array, to change (a shared list is copied first).
    fn items_mut(&mut self) -> Option<&mut [Self]>;
    /// Changes the field `name` of an object by `change`, if it has one (a
    /// shared object is copied first).
    fn update_field(&mut self, name: &str, change: impl FnOnce(&mut Self));
    /// Sets the field `name` of an object to `value` (no-op otherwise).
    fn set_field(&mut self, name: &str, value: &Value);
    /// The number, when the value is one.
    fn number(&self) -> Option<&serde_json::Number>;
    /// The integer `i` as a value.
    fn integer(i: i64) -> Self;
}

impl Json for Value {
    fn kind(&self) -> &'static str {
        value_kind(self)
    }

    fn text(&self) -> Option<&str> {
        self.as_str()
    }

    fn items(&self) -> Option<&[Self]> {
        self.as_array().map(Vec::as_slice)
    }

    fn field(&self, name: &str) -> Option<&Self> {
        self.as_object()?.get(name)
    }

    fn keys(&self) -> impl Iterator<Item = &str> {
        self.as_object().into_iter().flat_map(|map| map.keys().map(String::as_str))
    }

    fn items_mut(&mut self) -> Option<&mut [Self]> {
        self.as_array_mut().map(Vec::as_mut_slice)
    }

    fn update_field(&mut self, name: &str, change: impl FnOnce(&mut Self)) {
        if let Some(value) = self.as_object_mut().and_then(|map| map.get_mut(name)) {
            change(value);
        }
    }

    fn set_field(&mut self, name: &str, value: &Value) {
        if let Some(map) = self.as_object_mut() {
            map.insert(name.to_owned(), value.clone());
        }
    }

    fn number(&self) -> Option<&serde_json::Number> {
        match self {
            Value::Number(n) => Some(n),
            _ => None,
        }
    }

    fn integer(i: i64) -> Self {
        Value::from(i)
    }
}

/// The whole number a float stands for: `5.0` is the integer 5 (the one
/// rule for numbers at every check). Floats beyond ±9e15, where not every
/// integer is a float, stay floats.
#[must_use]
pub(super) fn integral(number: &serde_json::Number) -> Option<i64> {
    if number.is_i64() || number.is_u64() {
        return number.as_i64();
    }
    match number.as_f64() {
        #[allow(clippy::cast_possible_truncation)]
        Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(f as i64),
        _ => None,
    }
}

/// The JSON type name of a value, for messages: `"string"`, `"integer"`, ...
#[must_use]
pub fn value_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "float",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// How many characters of a value's JSON a description shows.
const DESCRIBED: usize = 40;

/// A short description of a value for messages: `string "abc"`, `integer 3`.
/// Only the JSON shown is written, however big the value.
#[must_use]
pub fn describe<V: Json>(value: &V) -> String {
    let mut clipped = Clipped::default();
    // The writer stops the serializer once it has enough.
    let _ = serde_json::to_writer(&mut clipped, value);
    let mut text = String::from_utf8_lossy(&clipped.bytes).into_owned();
    if clipped.chars > DESCRIBED {
        text = text.chars().take(DESCRIBED - 3).collect::<String>() + "...";
    }
    format!("{} {text}", value.kind())
}

/// A writer that keeps the first characters written and then refuses more.
#[derive(Default)]
struct Clipped {
    bytes: Vec<u8>,
    chars: usize,
}

impl std::io::Write for Clipped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.chars > DESCRIBED {
            return Err(std::io::Error::other("enough for a description"));
        }
        // serde_json writes whole UTF-8 characters: count their first bytes.
        self.chars += buf.iter().filter(|&&b| b & 0xC0 != 0x80).count();
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Json for Val {
    fn kind(&self) -> &'static str {
        Val::kind(self)
    }

    fn text(&self) -> Option<&str> {
        self.as_str()
    }

    fn items(&self) -> Option<&[Self]> {
        self.as_array()
    }

    fn field(&self, name: &str) -> Option<&Self> {
        self.get(name)
    }

    fn keys(&self) -> impl Iterator<Item = &str> {
        self.as_object().into_iter().flat_map(Object::keys)
    }

    fn items_mut(&mut self) -> Option<&mut [Self]> {
        match self {
            Val::Array(items) => Some(Arc::make_mut(items).as_mut_slice()),
            _ => None,
        }
    }

    fn update_field(&mut self, name: &str, change: impl FnOnce(&mut Self)) {
        if let Val::Object(fields) = self {
            fields.update(name, change);
        }
    }

    fn set_field(&mut self, name: &str, value: &Value) {
        if let Val::Object(fields) = self {
            fields.insert(name, value.into());
        }
    }

    fn number(&self) -> Option<&serde_json::Number> {
        match self {
            Val::Number(n) => Some(n),
            _ => None,
        }
    }

    fn integer(i: i64) -> Self {
        Val::int(i)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn descriptions_are_clipped_at_forty_characters() {
        assert_eq!(describe(&json!("abc")), "string \"abc\"");
        let long = json!({"text": "é".repeat(100)});
        let full = long.to_string();
        let shown: String = full.chars().take(37).collect();
        assert_eq!(describe(&long), format!("object {shown}..."));
        let exact = json!("x".repeat(38)); // 40 characters with the quotes
        assert_eq!(describe(&exact), format!("string {exact}"));
    }
}
