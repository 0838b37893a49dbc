//! Types, constants and params: `array<Product>?` to [`Type`], defaults to
//! values, `param`/`input` statements to [`ir::Param`].
//!
//! Constants are literals, arrays and objects of constants, and negated
//! numbers; anything else in a place that needs a constant is reported.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Number, Value};

use super::Lowerer;
use super::names::Decl;
use crate::ast::{self, ExprKind, UnaryOp};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, Json, Type, TypeKind, value_kind};
use crate::media::Kind;
use crate::source::Span;
use crate::suggest::did_you_mean;

/// The type names of `.ign`.
pub const TYPE_NAMES: [&str; 9] =
    ["string", "integer", "float", "boolean", "array", "object", "any", "image", "document"];

/// The `.ign` name of a type other languages spell differently.
fn type_alias(name: &str) -> Option<&'static str> {
    Some(match name {
        "bool" | "Bool" | "Boolean" => "boolean",
        "number" | "Number" | "double" | "f64" | "decimal" => "float",
        "int" | "Int" | "i64" | "long" => "integer",
        "str" | "String" | "text" => "string",
        "list" | "List" | "Vec" | "vec" => "array",
        "dict" | "map" | "Map" | "Object" | "record" => "object",
        "Image" | "picture" | "photo" | "png" | "jpeg" | "jpg" => "image",
        "Document" | "pdf" | "PDF" | "file" => "document",
        _ => return None,
    })
}

/// The value of a constant expression, `None` when it is not constant.
pub(super) fn constant(expr: &ast::Expr) -> Option<Value> {
    Some(match &expr.kind {
        ExprKind::Null => Value::Null,
        ExprKind::Bool(b) => Value::Bool(*b),
        ExprKind::Integer(n) => Value::from(*n),
        ExprKind::Float(x) => Number::from_f64(*x).map_or(Value::Null, Value::Number),
        ExprKind::String(_) => Value::String(expr.as_plain_string()?),
        ExprKind::Array(items) => Value::Array(items.iter().map(constant).collect::<Option<_>>()?),
        ExprKind::Object(entries) => {
            let mut map = Map::new();
            for (key, value) in entries {
                map.insert(key.name.to_string(), constant(value)?);
            }
            Value::Object(map)
        }
        ExprKind::Unary(UnaryOp::Neg, inner) => match &inner.kind {
            ExprKind::Integer(n) => Value::from(n.checked_neg()?),
            ExprKind::Float(x) => Number::from_f64(-x).map_or(Value::Null, Value::Number),
            _ => return None,
        },
        _ => return None,
    })
}

/// A value for messages: `"UA"`, `42`, `[1, 2]`; long ones cut short.
pub(super) fn show(value: &impl Json) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        format!("{}…", text.chars().take(39).collect::<String>())
    } else {
        text
    }
}

/// "a string", "an integer", ...: the kind of a value in words.
pub(super) fn a_kind(value: &impl Json) -> String {
    let kind = value.kind();
    let article = if kind.starts_with(['a', 'i', 'o']) { "an" } else { "a" };
    format!("{article} {kind}")
}

impl Lowerer<'_> {
    /// Resolves a written type; an unknown name is reported and read as `any`.
    pub(super) fn lower_type(&mut self, ty: &ast::TypeExpr) -> Type {
        let kind = match &*ty.name.name {
            "string" => TypeKind::String,
            "integer" => TypeKind::Integer,
            "float" => TypeKind::Float,
            "boolean" => TypeKind::Boolean,
            "array" => {
                TypeKind::Array(ty.item.as_ref().map(|item| Arc::new(self.lower_type(item))))
            }
            "object" => TypeKind::Object,
            "any" => TypeKind::Any,
            name => match (Kind::from_name(name), self.decls.get(name)) {
                (Some(media), _) => TypeKind::Media(media),
                (None, Some(Decl::Type(i))) => self.record(i, &ty.name),
                (None, Some(Decl::Enum(i))) => self.enum_type(i),
                (None, found) => {
                    self.unknown_type(&ty.name, found);
                    TypeKind::Any
                }
            },
        };
        if let (Some(item), false) = (&ty.item, matches!(kind, TypeKind::Array(_) | TypeKind::Any))
        {
            self.push(
                Diagnostic::error(
                    Code::UnknownType,
                    item.span,
                    format!("type `{}` takes no item type", ty.name.name),
                )
                .label("only `array` has an item type")
                .help(format!("write `{}` or `array<{}>`", ty.name.name, ty.name.name)),
            );
        }
        Type { kind, nullable: ty.nullable }
    }

    /// A type name that is not a type: another declaration, or nothing.
    fn unknown_type(&mut self, name: &ast::Ident, found: Option<Decl>) {
        let declared = self.decls.names_where(|d| matches!(d, Decl::Type(_) | Decl::Enum(_)));
        let mut names: Vec<&str> = TYPE_NAMES.to_vec();
        names.extend(declared);
        let (message, label) = match found {
            Some(decl) => {
                (format!("`{}` is {}, not a type", name.name, decl.a_kind()), "not a type")
            }
            None => (format!("unknown type `{}`", name.name), "not a type"),
        };
        let alias = found.is_none().then(|| type_alias(&name.name)).flatten();
        let help = alias
            .map(|t| format!("the type is called `{t}` here"))
            .or_else(|| did_you_mean(&name.name, names.iter().copied()))
            .unwrap_or_else(|| format!("types are {}", crate::suggest::list(&names)));
        self.push(Diagnostic::error(Code::UnknownType, name.span, message).label(label).help(help));
    }

    /// The value of an expression that must be constant, reported when not.
    pub(super) fn expect_constant(&mut self, expr: &ast::Expr, what: &str) -> Option<Value> {
        let value = constant(expr);
        if value.is_none() {
            self.push(
                Diagnostic::error(Code::NotConstant, expr.span, format!("{what} must be a constant"))
                    .label("not a constant")
                    .help("use literals: strings without `{...}`, numbers, `true`, `false`, `null`, arrays and objects of them"),
            );
        }
        value
    }

    /// The text of a string that must be plain, reported when not.
    pub(super) fn expect_plain_string(&mut self, expr: &ast::Expr, what: &str) -> Option<String> {
        let text = expr.as_plain_string();
        if text.is_none() {
            self.push(
                Diagnostic::error(
                    Code::NotConstant,
                    expr.span,
                    format!("{what} must be a constant string"),
                )
                .label("not a plain string")
                .help("write the text without `{...}` interpolation"),
            );
        }
        text
    }

    /// A `param` or `input` statement as an [`ir::Param`]: its type, its
    /// default (constant, of the type) and its description.
    pub(super) fn lower_param(&mut self, param: &ast::Param, what: &str) -> ir::Param {
        let ty = self.lower_type(&param.ty);
        let default = param.default.as_ref().and_then(|expr| {
            let value = self.expect_constant(expr, "a default")?;
            if !ty.accepts(&value) {
                self.push(
                    Diagnostic::error(
                        Code::DefaultType,
                        expr.span,
                        format!(
                            "default of {what} `{}` is {}, not `{ty}`",
                            param.name.name,
                            a_kind(&value)
                        ),
                    )
                    .label(format!("{} `{}`", value_kind(&value), show(&value)))
                    .note(param.ty.span, format!("declared `{ty}` here"))
                    .maybe_help(
                        matches!(ty.kind, TypeKind::Record(_) | TypeKind::Enum(_))
                            .then(|| ty.problems(&value, &param.name.name).join("; ")),
                    ),
                );
            }
            Some(value)
        });
        let description =
            param.description.as_ref().and_then(|d| self.expect_plain_string(d, "a description"));
        ir::Param { name: param.name.name.to_string(), ty, default, description, span: param.span }
    }

    /// Params of a tool or inputs of an agent, repeated names reported.
    pub(super) fn lower_params(&mut self, params: &[ast::Param], what: &str) -> Vec<ir::Param> {
        let mut seen: HashMap<&str, &ast::Param> = HashMap::new();
        let mut out = Vec::with_capacity(params.len());
        for param in params {
            if let Some(first) = seen.get(&*param.name.name) {
                self.push(
                    Diagnostic::error(
                        Code::Duplicate,
                        param.name.span,
                        format!("{what} `{}` is declared twice", param.name.name),
                    )
                    .label("declared again here")
                    .note(first.name.span, "first declared here"),
                );
            } else {
                seen.insert(&param.name.name, param);
            }
            out.push(self.lower_param(param, what));
        }
        out
    }

    /// The number of a numeric setting (the grammar only allows numbers).
    pub(super) fn number(expr: &ast::Expr) -> f64 {
        match &expr.kind {
            ExprKind::Integer(n) => *n as f64,
            ExprKind::Float(x) => *x,
            _ => f64::NAN,
        }
    }

    /// A setting that must be a whole number of at least `min`.
    pub(super) fn whole_number(&mut self, expr: &ast::Expr, what: &str, min: i64) -> Option<u32> {
        if let ExprKind::Integer(n) = expr.kind {
            if n >= min {
                if let Ok(n) = u32::try_from(n) {
                    return Some(n);
                }
            }
        }
        let bound = if min > 0 { "a positive" } else { "a non-negative" };
        self.push(self.bad_value(expr.span, format!("`{what}` must be {bound} whole number")));
        None
    }

    /// A `bad_setting` error at a value, the value quoted under it.
    pub(super) fn bad_value(&self, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(Code::BadSetting, span, message)
            .label(format!("`{}`", self.sources.slice(span)))
    }
}
