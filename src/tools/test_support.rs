//! Hand-built IR for the tests of this module (the lowering stage is not used here).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::ir::{self, Expr, ExprKind, Implementation, Part, Type, TypeKind};
use crate::source::{FileId, Sources, Span};

pub(crate) fn span() -> Span {
    Span::new(FileId(0), 0, 0)
}

/// A tool returning `null`, running in `.`, with no params.
pub(crate) fn tool(name: &str, description: &str) -> ir::Tool {
    ir::Tool {
        name: name.to_owned(),
        tool_name: crate::lower::tool_name(name),
        description: description.to_owned(),
        params: Vec::new(),
        capabilities: Vec::new(),
        approval: None,
        implementation: Implementation::Returns(lit(Value::Null)),
        result: None,
        timeout: None,
        retries: 0,
        cache: None,
        dir: PathBuf::from("."),
        span: span(),
    }
}

/// A tool with `implementation` and params `(name, type)`, all required unless nullable.
pub(crate) fn tool_with(
    name: &str,
    params: &[(&str, &str)],
    implementation: Implementation,
    dir: &Path,
) -> ir::Tool {
    let mut t = tool(name, &format!("{name} for tests"));
    t.params = params.iter().map(|(n, t)| param(n, ty(t), None, None)).collect();
    t.implementation = implementation;
    t.dir = dir.to_owned();
    t
}

pub(crate) fn param(
    name: &str,
    ty: Type,
    default: Option<Value>,
    description: Option<&str>,
) -> ir::Param {
    ir::Param {
        name: name.to_owned(),
        ty,
        default,
        description: description.map(str::to_owned),
        span: span(),
    }
}

/// Parses `array<string>?` and friends.
pub(crate) fn ty(text: &str) -> Type {
    let (text, nullable) = match text.strip_suffix('?') {
        Some(t) => (t, true),
        None => (text, false),
    };
    let kind = match text {
        "string" => TypeKind::String,
        "integer" => TypeKind::Integer,
        "float" => TypeKind::Float,
        "boolean" => TypeKind::Boolean,
        "array" => TypeKind::Array(None),
        "object" => TypeKind::Object,
        "any" => TypeKind::Any,
        other => {
            let inner = other.strip_prefix("array<").and_then(|t| t.strip_suffix('>'));
            TypeKind::Array(Some(std::sync::Arc::new(ty(inner.expect("a known type")))))
        }
    };
    Type { kind, nullable }
}

pub(crate) fn expr(kind: ExprKind) -> Expr {
    Expr { kind, span: span() }
}

pub(crate) fn lit(value: Value) -> Expr {
    expr(ExprKind::Literal(value.into()))
}

pub(crate) fn var(i: u32) -> Expr {
    expr(ExprKind::Var(i))
}

/// An interpolated string: text pieces and `Var(i)` holes.
pub(crate) fn template(parts: Vec<Part>) -> Expr {
    expr(ExprKind::Interpolate(parts.into()))
}

pub(crate) fn text(s: &str) -> Part {
    Part::Text(s.to_owned())
}

pub(crate) fn hole(i: u32) -> Part {
    Part::Expr(var(i))
}

pub(crate) fn program(tools: Vec<ir::Tool>) -> ir::Program {
    ir::Program {
        sources: Sources::default(),
        tools,
        agents: Vec::new(),
        providers: Vec::new(),
        contracts: Vec::new(),
        tests: Vec::new(),
        evals: Vec::new(),
    }
}
