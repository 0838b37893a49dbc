//! Value types of params, inputs, record fields, results and nodes.
//!
//! Declared records and enums are shared ([`Arc`]) so a [`Type`] is a
//! self-contained tree: checking a value, writing its JSON Schema or
//! printing it needs nothing else. Records are never recursive (lowering
//! reports recursion), so every tree is finite. Records and enums compare
//! by name: the program has one declaration per name.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::Param;
use super::json::{Json, describe, integral};
use crate::media;
use crate::source::Span;
use crate::suggest::closest;

/// A declared type: `string`, `array<integer>?`, `Product`, ...
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Type {
    /// What the value is.
    pub kind: TypeKind,
    /// Written with `?`: `null` is accepted too.
    pub nullable: bool,
}

/// The shapes a [`Type`] can take.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
    Array(Option<Arc<Type>>),
    /// A JSON object.
    Object,
    /// Anything.
    Any,
    /// A declared `type`: an object with known fields.
    Record(Arc<Record>),
    /// A declared `enum`: a string that is one of the variants.
    Enum(Arc<Enum>),
    /// `image` or `document`: the object `{media_type, data}` whose bytes
    /// are a whole file of the kind (see [`crate::media`]).
    Media(media::Kind),
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

impl Hash for Record {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl PartialEq for Enum {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for Enum {}

impl Hash for Enum {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

/// Arrays nested deeper than this in a type (`array<array<...>>`) keep it
/// out of [`Types`]'s index: hashing or comparing it takes time in its
/// depth, and a chain of nodes each nesting the last in a list made
/// checking quadratic (8,000 nodes: 1.4 s against 0.03 s).
const INDEXED_DEPTH: usize = 16;

/// The static type of each variable of a scope (a contract's nodes, a
/// tool's params), by index. Each distinct type is kept once and a
/// variable holds the index of its own: four bytes instead of a whole
/// [`Type`], as a contract may have a million nodes that share a few types.
#[derive(Debug, Clone, Default)]
pub struct Types {
    /// Each type once, in the order first set.
    distinct: Vec<Type>,
    /// The index in `distinct` of each variable's type.
    of: Vec<u32>,
    /// The index of each type of `distinct`.
    index: HashMap<Type, u32>,
    /// The index of the type set last: neighbours mostly share a type,
    /// which is then found without hashing it.
    last: u32,
}

impl Types {
    /// `len` variables, each of type `any`.
    #[must_use]
    pub fn any(len: usize) -> Self {
        let mut types = Self::default();
        types.intern(Type::any());
        types.of = vec![0; len];
        types
    }

    /// The type of variable `i`, if there is one.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<&Type> {
        self.of.get(i).map(|&t| &self.distinct[t as usize])
    }

    /// Sets the type of variable `i`; variables added before it are `any`.
    pub fn set(&mut self, i: usize, ty: Type) {
        if self.of.len() <= i {
            let any = self.intern(Type::any());
            self.of.resize(i + 1, any);
        }
        self.of[i] = self.intern(ty);
    }

    /// The index of `ty` in `distinct`, added if it is new (a type nested
    /// past [`INDEXED_DEPTH`] is added each time).
    fn intern(&mut self, ty: Type) -> u32 {
        if !ty.nests_at_most(INDEXED_DEPTH) {
            let t = u32::try_from(self.distinct.len()).unwrap_or(u32::MAX);
            self.distinct.push(ty);
            return t;
        }
        if self.distinct.get(self.last as usize) == Some(&ty) {
            return self.last;
        }
        if let Some(&t) = self.index.get(&ty) {
            self.last = t;
            return t;
        }
        // There are at most as many distinct types as variables, and a
        // variable is a `u32`.
        let t = u32::try_from(self.distinct.len()).unwrap_or(u32::MAX);
        self.distinct.push(ty.clone());
        self.index.insert(ty, t);
        self.last = t;
        t
    }
}

impl FromIterator<Type> for Types {
    /// One variable per type, in order.
    fn from_iter<I: IntoIterator<Item = Type>>(types: I) -> Self {
        let mut all = Self::default();
        for (i, ty) in types.into_iter().enumerate() {
            all.set(i, ty);
        }
        all
    }
}

impl Type {
    /// True when at most `levels` arrays nest in the type (`array<integer>`
    /// has one); it looks no deeper.
    fn nests_at_most(&self, levels: usize) -> bool {
        let mut ty = self;
        for _ in 0..=levels {
            match &ty.kind {
                TypeKind::Array(Some(item)) => ty = item,
                _ => return true,
            }
        }
        false
    }

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

    /// True when `value` is of this type (integers count as floats, and a
    /// float with no fraction, `5.0`, as an integer).
    #[must_use]
    pub fn accepts<V: Json>(&self, value: &V) -> bool {
        let mut problems = Vec::new();
        self.check(value, "", &mut problems, false);
        problems.is_empty()
    }

    /// Every way `value` is not of this type, each naming where in the
    /// value (`items[2].priority`); `what` names the whole value.
    #[must_use]
    pub fn problems<V: Json>(&self, value: &V, what: &str) -> Vec<String> {
        let mut problems = Vec::new();
        self.check(value, what, &mut problems, true);
        problems
    }

    /// The one check of every value that enters a run against its declared
    /// type (an input, a tool's or an agent's result, from live work or a
    /// store): [`Type::conform`], then every problem, each naming where in
    /// the value (`result.items[2].priority`); `what` names the whole value.
    ///
    /// # Errors
    /// Every way `value` does not fit.
    pub fn admit<V: Json>(&self, value: &mut V, what: &str) -> Result<(), Vec<String>> {
        self.conform(value);
        let problems = self.problems(value, what);
        if problems.is_empty() { Ok(()) } else { Err(problems) }
    }

    /// Pushes the problems of `value` at `path`; stops at the first
    /// unless `all`.
    fn check<V: Json>(&self, value: &V, path: &str, out: &mut Vec<String>, all: bool) {
        let fits = match (&self.kind, value.kind()) {
            (_, "null") => self.nullable || self.kind == TypeKind::Any,
            (TypeKind::Any, _)
            | (TypeKind::String, "string")
            | (TypeKind::Integer, "integer")
            | (TypeKind::Float, "integer" | "float")
            | (TypeKind::Boolean, "boolean")
            | (TypeKind::Object, "object") => true,
            (TypeKind::Integer, "float") => value.number().and_then(integral).is_some(),
            (TypeKind::Array(item), "array") => {
                if let (Some(item), Some(items)) = (item, value.items()) {
                    for (i, v) in items.iter().enumerate() {
                        item.check(v, &format!("{path}[{i}]"), out, all);
                        if !all && !out.is_empty() {
                            return;
                        }
                    }
                }
                true
            }
            (TypeKind::Enum(e), "string") => {
                let s = value.text().unwrap_or_default();
                if !e.variants.iter().any(|v| v == s) {
                    out.push(format!(
                        "`{path}`: expected one of {}, got {}",
                        e.variants.join(", "),
                        describe(value)
                    ));
                }
                true
            }
            (TypeKind::Record(record), "object") => {
                check_fields(&record.fields, &record.name, value, path, out, all);
                true
            }
            (TypeKind::Media(kind), "object") => {
                let text = |name: &str| value.field(name).and_then(Json::text);
                let others = value.keys().any(|k| k != "media_type" && k != "data");
                if let Some(problem) =
                    media::problem(*kind, text("media_type"), text("data"), others)
                {
                    out.push(format!("`{path}`: {problem}"));
                }
                true
            }
            _ => false,
        };
        if !fits {
            out.push(format!("`{path}`: expected {self}, got {}", describe(value)));
        }
    }

    /// Brings `value` to the form of this type before it is checked (at
    /// any depth): in a record, an absent field, or a `null` one that is
    /// not nullable, takes its default (OpenAI's strict mode sends `null`
    /// for "absent"); where an integer is declared, a float with no
    /// fraction (`5.0`) becomes that integer. A value that needs neither is
    /// left untouched (a shared one is not copied).
    pub fn conform<V: Json>(&self, value: &mut V) {
        if self.lacks_defaults(value) {
            self.fill_lacking(value);
        }
    }

    /// True when [`Type::conform`] would change `value`.
    fn lacks_defaults<V: Json>(&self, value: &V) -> bool {
        match &self.kind {
            TypeKind::Integer => {
                value.kind() == "float" && value.number().and_then(integral).is_some()
            }
            TypeKind::Record(record) if value.kind() == "object" => {
                record.fields.iter().any(|field| match value.field(&field.name) {
                    v if absent(v) && !field.ty.nullable => field.default.is_some(),
                    Some(v) => field.ty.lacks_defaults(v),
                    None => false,
                })
            }
            TypeKind::Array(Some(item)) => {
                value.items().is_some_and(|items| items.iter().any(|v| item.lacks_defaults(v)))
            }
            _ => false,
        }
    }

    /// [`Type::conform`] of a value that needs it.
    fn fill_lacking<V: Json>(&self, value: &mut V) {
        match &self.kind {
            TypeKind::Integer => {
                if let Some(i) = value.number().and_then(integral) {
                    *value = V::integer(i);
                }
            }
            TypeKind::Record(record) => fill_fields(&record.fields, value),
            TypeKind::Array(Some(item)) => {
                for v in value.items_mut().into_iter().flatten() {
                    item.conform(v);
                }
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
            TypeKind::Object | TypeKind::Record(_) | TypeKind::Media(_) => "object",
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

/// [`Type::conform`] over the fields (or params) of an object.
pub fn fill_fields<V: Json>(fields: &[Param], object: &mut V) {
    for field in fields {
        let value = object.field(&field.name);
        if absent(value) && !field.ty.nullable {
            if let Some(default) = &field.default {
                object.set_field(&field.name, default);
            }
        } else if value.is_some_and(|v| field.ty.lacks_defaults(v)) {
            object.update_field(&field.name, |value| field.ty.fill_lacking(value));
        }
    }
}

/// A field that is missing or `null`.
fn absent<V: Json>(value: Option<&V>) -> bool {
    value.is_none_or(|v| v.kind() == "null")
}

/// Every way the object `object` does not fit `fields` (a tool's params),
/// after [`fill_fields`]; `owner` names what declares them (a tool).
#[must_use]
pub fn field_problems<V: Json>(fields: &[Param], owner: &str, object: &V) -> Vec<String> {
    let mut problems = Vec::new();
    check_fields(fields, owner, object, "", &mut problems, true);
    problems
}

/// The problems of the fields of `object` at `path`, declared by `owner`
/// (a record's name).
fn check_fields<V: Json>(
    fields: &[Param],
    owner: &str,
    object: &V,
    path: &str,
    out: &mut Vec<String>,
    all: bool,
) {
    let at = |name: &str| if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") };
    for field in fields {
        match object.field(&field.name) {
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
    for key in object.keys() {
        if !fields.iter().any(|f| f.name == key) {
            let hint = closest(key, fields.iter().map(|f| f.name.as_str()))
                .map_or_else(String::new, |name| format!(" (did you mean `{name}`?)"));
            out.push(format!("`{}`: unknown field of `{owner}`{hint}", at(key)));
            if !all {
                return;
            }
        }
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
            TypeKind::Media(kind) => f.write_str(kind.name())?,
        }
        if self.nullable {
            f.write_str("?")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Type, TypeKind, Types};

    #[test]
    fn each_distinct_type_is_kept_once() {
        let integer = Type::new(TypeKind::Integer);
        let mut types = Types::any(3);
        types.set(0, integer.clone());
        types.set(2, integer.clone());
        types.set(5, Type { kind: TypeKind::Integer, nullable: true });
        assert_eq!(types.get(0), Some(&integer));
        assert_eq!(types.get(1), Some(&Type::any()));
        assert_eq!(types.get(2), Some(&integer));
        assert_eq!(types.get(4), Some(&Type::any()), "filled in as `any`");
        assert_eq!(types.get(5).map(|t| t.nullable), Some(true));
        assert_eq!(types.get(6), None);
        assert_eq!(types.distinct.len(), 3, "any, integer, integer?");
    }

    #[test]
    fn deeply_nested_types_are_kept_without_the_index() {
        let nested = |depth: usize| {
            (0..depth).fold(Type::new(TypeKind::Integer), |item, _| {
                Type::new(TypeKind::Array(Some(std::sync::Arc::new(item))))
            })
        };
        let (shallow, deep) = (nested(super::INDEXED_DEPTH), nested(super::INDEXED_DEPTH + 1));
        assert!(shallow.nests_at_most(super::INDEXED_DEPTH));
        assert!(!deep.nests_at_most(super::INDEXED_DEPTH));
        let mut types = Types::default();
        for i in 0..4 {
            types.set(i, if i % 2 == 0 { shallow.clone() } else { deep.clone() });
        }
        assert_eq!(types.get(2), Some(&shallow));
        assert_eq!(types.get(3), Some(&deep));
        assert_eq!(types.distinct.len(), 4, "`any`, the shallow type once, the deep one twice");
        assert_eq!(types.index.len(), 2);
    }
}
