//! Value types of params, inputs and outputs.

use std::fmt;

use serde_json::Value;

/// A declared type: `string`, `array<integer>?`, ...
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Type {
    /// What the value is.
    pub kind: TypeKind,
    /// Written with `?`: `null` is accepted too.
    pub nullable: bool,
}

/// The shapes a [`Type`] can take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeKind {
    /// A JSON string.
    String,
    /// A whole number.
    Integer,
    /// Any number (integers included).
    Float,
    /// `true` or `false`.
    Boolean,
    /// An array, with its item type for `array<T>`.
    Array(Option<Box<Type>>),
    /// A JSON object.
    Object,
    /// Anything.
    Any,
}

impl Type {
    /// A non-nullable type of `kind`.
    #[must_use]
    pub fn new(kind: TypeKind) -> Self {
        Self { kind, nullable: false }
    }

    /// True when `value` is of this type (integers count as floats).
    #[must_use]
    pub fn accepts(&self, value: &Value) -> bool {
        match (&self.kind, value) {
            (_, Value::Null) => self.nullable || self.kind == TypeKind::Any,
            (TypeKind::Any, _) => true,
            (TypeKind::String, Value::String(_)) => true,
            (TypeKind::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            (TypeKind::Float, Value::Number(_)) => true,
            (TypeKind::Boolean, Value::Bool(_)) => true,
            (TypeKind::Array(item), Value::Array(items)) => {
                item.as_ref().is_none_or(|t| items.iter().all(|v| t.accepts(v)))
            }
            (TypeKind::Object, Value::Object(_)) => true,
            _ => false,
        }
    }

    /// The JSON Schema `type` name: `"string"`, `"number"`, ...; `None` for `any`.
    #[must_use]
    pub fn json_type(&self) -> Option<&'static str> {
        Some(match self.kind {
            TypeKind::String => "string",
            TypeKind::Integer => "integer",
            TypeKind::Float => "number",
            TypeKind::Boolean => "boolean",
            TypeKind::Array(_) => "array",
            TypeKind::Object => "object",
            TypeKind::Any => return None,
        })
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            TypeKind::String => f.write_str("string")?,
            TypeKind::Integer => f.write_str("integer")?,
            TypeKind::Float => f.write_str("float")?,
            TypeKind::Boolean => f.write_str("boolean")?,
            TypeKind::Array(None) => f.write_str("array")?,
            TypeKind::Array(Some(item)) => write!(f, "array<{item}>")?,
            TypeKind::Object => f.write_str("object")?,
            TypeKind::Any => f.write_str("any")?,
        }
        if self.nullable {
            f.write_str("?")?;
        }
        Ok(())
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
