//! Value types of params, inputs, record fields, results and nodes.
//!
//! Declared records and enums are shared ([`Arc`]) so a [`Type`] is a
//! self-contained tree: checking a value, writing its JSON Schema or
//! printing it needs nothing else. Records are never recursive (lowering
//! reports recursion), so every tree is finite. Records and enums compare
//! by name: the program has one declaration per name.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::Param;
use crate::source::Span;

/// A declared type: `string`, `array<integer>?`, `Product`, ...
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
    /// A declared `type`: an object with known fields.
    Record(Arc<Record>),
    /// A declared `enum`: a string that is one of the variants.
    Enum(Arc<Enum>),
}

/// A `type Name { ... }` declaration.
#[derive(Debug)]
pub struct Record {
    /// Declared name.
    pub name: String,
    /// Fields in declaration order; a field is optional when it has a
    /// default or a nullable type.
    pub fields: Vec<Param>,
    /// The declaration.
    pub span: Span,
}

impl Record {
    /// The field called `name`.
    #[must_use]
    pub fn field(&self, name: &str) -> Option<&Param> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// An `enum Name { ... }` declaration.
#[derive(Debug)]
pub struct Enum {
    /// Declared name.
    pub name: String,
    /// The variants in declaration order.
    pub variants: Vec<String>,
    /// The declaration.
    pub span: Span,
}

impl PartialEq for Record {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for Record {}

impl PartialEq for Enum {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for Enum {}

impl Type {
    /// A non-nullable type of `kind`.
    #[must_use]
    pub fn new(kind: TypeKind) -> Self {
        Self { kind, nullable: false }
    }

    /// `any`: nothing is known.
    #[must_use]
    pub fn any() -> Self {
        Self::new(TypeKind::Any)
    }

    /// True when `value` is of this type (integers count as floats).
    #[must_use]
    pub fn accepts(&self, value: &Value) -> bool {
        let mut problems = Vec::new();
        self.check(value, "", &mut problems, false);
        problems.is_empty()
    }

    /// Every way `value` is not of this type, each naming where in the
    /// value (`items[2].priority`); `what` names the whole value.
    #[must_use]
    pub fn problems(&self, value: &Value, what: &str) -> Vec<String> {
        let mut problems = Vec::new();
        self.check(value, what, &mut problems, true);
        problems
    }

    /// Pushes the problems of `value` at `path`; stops at the first
    /// unless `all`.
    fn check(&self, value: &Value, path: &str, out: &mut Vec<String>, all: bool) {
        let fits = match (&self.kind, value) {
            (_, Value::Null) => self.nullable || self.kind == TypeKind::Any,
            (TypeKind::Any, _) | (TypeKind::String, Value::String(_)) => true,
            (TypeKind::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            (TypeKind::Float, Value::Number(_))
            | (TypeKind::Boolean, Value::Bool(_))
            | (TypeKind::Object, Value::Object(_)) => true,
            (TypeKind::Array(item), Value::Array(items)) => {
                if let Some(item) = item {
                    for (i, v) in items.iter().enumerate() {
                        item.check(v, &format!("{path}[{i}]"), out, all);
                        if !all && !out.is_empty() {
                            return;
                        }
                    }
                }
                true
            }
            (TypeKind::Enum(e), Value::String(s)) => {
                if !e.variants.iter().any(|v| v == s) {
                    out.push(format!(
                        "`{path}`: expected one of {}, got {}",
                        e.variants.join(", "),
                        describe(value)
                    ));
                }
                true
            }
            (TypeKind::Record(record), Value::Object(map)) => {
                check_record(record, map, path, out, all);
                true
            }
            _ => false,
        };
        if !fits {
            out.push(format!("`{path}`: expected {self}, got {}", describe(value)));
        }
    }

    /// Fills defaults into `value` where it is a record (at any depth):
    /// an absent field, or a `null` one that is not nullable, takes its
    /// default. OpenAI's strict mode sends `null` for "absent".
    pub fn fill_defaults(&self, value: &mut Value) {
        match (&self.kind, value) {
            (TypeKind::Record(record), Value::Object(map)) => fill_fields(&record.fields, map),
            (TypeKind::Array(Some(item)), Value::Array(items)) => {
                items.iter_mut().for_each(|v| item.fill_defaults(v));
            }
            _ => {}
        }
    }

    /// The JSON Schema `type` name: `"string"`, `"number"`, ...; `None` for `any`.
    #[must_use]
    pub fn json_type(&self) -> Option<&'static str> {
        Some(match self.kind {
            TypeKind::String | TypeKind::Enum(_) => "string",
            TypeKind::Integer => "integer",
            TypeKind::Float => "number",
            TypeKind::Boolean => "boolean",
            TypeKind::Array(_) => "array",
            TypeKind::Object | TypeKind::Record(_) => "object",
            TypeKind::Any => return None,
        })
    }

    /// The record this type is (nullable or not).
    #[must_use]
    pub fn record(&self) -> Option<&Record> {
        match &self.kind {
            TypeKind::Record(r) => Some(r),
            _ => None,
        }
    }
}

/// [`Type::fill_defaults`] over the fields (or params) of an object.
pub fn fill_fields(fields: &[Param], map: &mut serde_json::Map<String, Value>) {
    for field in fields {
        match map.get_mut(&field.name) {
            Some(Value::Null) | None if !field.ty.nullable => {
                if let Some(default) = &field.default {
                    map.insert(field.name.clone(), default.clone());
                }
            }
            Some(value) => field.ty.fill_defaults(value),
            None => {}
        }
    }
}

fn check_record(
    record: &Record,
    map: &serde_json::Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
    all: bool,
) {
    let at = |name: &str| if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") };
    for field in &record.fields {
        match map.get(&field.name) {
            Some(v) => field.ty.check(v, &at(&field.name), out, all),
            None if field.required() => {
                out.push(format!("`{}`: missing required field ({})", at(&field.name), field.ty));
            }
            None => {}
        }
        if !all && !out.is_empty() {
            return;
        }
    }
    for key in map.keys() {
        if record.field(key).is_none() {
            out.push(format!("`{}`: unknown field of `{}`", at(key), record.name));
            if !all {
                return;
            }
        }
    }
}

/// What messages and interpolation need of a value: JSON and the
/// runtime's shared values (`eval::Val`) alike.
pub trait Shown: serde::Serialize + fmt::Display {
    /// The JSON type name: `"string"`, `"integer"`, ...
    fn kind(&self) -> &'static str;
    /// The text of a string value.
    fn text(&self) -> Option<&str>;
}

impl Shown for Value {
    fn kind(&self) -> &'static str {
        value_kind(self)
    }

    fn text(&self) -> Option<&str> {
        self.as_str()
    }
}

/// How many characters of a value's JSON a description shows.
const DESCRIBED: usize = 40;

/// A short description of a value for messages: `string "abc"`, `integer 3`.
/// Only the JSON shown is written, however big the value.
#[must_use]
pub fn describe<V: Shown + ?Sized>(value: &V) -> String {
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
            TypeKind::Record(r) => f.write_str(&r.name)?,
            TypeKind::Enum(e) => f.write_str(&e.name)?,
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
