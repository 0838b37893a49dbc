//! Expression evaluation: [`ir::Expr`](crate::ir::Expr) to a value.
//!
//! Input: a resolved expression and a [`Scope`] giving each variable's
//! value. Output: the value (a [`Val`]: reading a variable or nesting one
//! in a record or an array shares it, never copies it), or an
//! [`EvalError`] that says what value was wrong and points at the
//! sub-expression. Pure: no I/O except `env`.
//!
//! Semantics (documented for users in `docs/language.md`):
//! - integers stay integers under `+ - * %` (overflow is an error); `/`
//!   always yields a float; integers and floats compare by value;
//! - `+` adds numbers, joins strings and concatenates arrays;
//! - `and`, `or`, `not` and `if` take booleans only, `and`/`or` short-circuit;
//! - a missing field or an index out of range is an error (use `get` for a
//!   default); negative indexes count from the end;
//! - interpolation inserts strings as they are and other values as JSON.

mod functions;
mod number;

use std::sync::Arc;

use serde_json::Value;

use crate::ir::{BinaryOp, Expr, ExprKind, Part, UnaryOp};
pub(crate) use crate::ir::{Json, describe};
use crate::source::Span;

pub(crate) use crate::value::{Fields, Val};
pub(crate) use functions::media_file;
pub(crate) use number::Num;

/// Where variables get their values.
pub(crate) trait Scope {
    /// The value of variable `var` (a node, param or input index).
    fn var(&self, var: u32) -> &Val;
}

impl Scope for [Val] {
    fn var(&self, var: u32) -> &Val {
        &self[var as usize]
    }
}

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct EvalError {
    /// What went wrong, naming the value.
    pub message: String,
    /// The sub-expression that failed.
    pub span: Span,
}

impl EvalError {
    fn new(span: Span, message: impl Into<String>) -> Self {
        Self { message: message.into(), span }
    }
}

/// Evaluates `expr` with variables from `scope`.
///
/// # Errors
/// When an operation gets a value it cannot handle: division by zero, a
/// missing field, a string where a number is needed, ...
pub(crate) fn eval<S: Scope + ?Sized>(expr: &Expr, scope: &S) -> Result<Val, EvalError> {
    match &expr.kind {
        ExprKind::Literal(value) => Ok(value.clone()),
        ExprKind::Var(var) => Ok(scope.var(*var).clone()),
        ExprKind::Field(field_of) => {
            let (target, name) = &**field_of;
            // `a.b.c` over a variable reads in place: no copy of `a` is made.
            if let Some(value) = place(target, scope).and_then(|t| t.get(name)) {
                return Ok(value.clone());
            }
            let target = eval(target, scope)?;
            field(&target, name).cloned().map_err(|m| EvalError::new(expr.span, m))
        }
        ExprKind::Index(target, index) => {
            let target = eval(target, scope)?;
            let index = eval(index, scope)?;
            self::index(&target, &index).cloned().map_err(|m| EvalError::new(expr.span, m))
        }
        ExprKind::Unary(op, operand) => {
            let value = eval(operand, scope)?;
            unary(*op, &value).map_err(|m| EvalError::new(expr.span, m))
        }
        ExprKind::Binary(op, lhs, rhs) => binary(*op, lhs, rhs, scope, expr.span),
        ExprKind::If(parts) => {
            let [condition, then, otherwise] = &**parts;
            if truth(&eval(condition, scope)?, "`if`", condition.span)? {
                eval(then, scope)
            } else {
                eval(otherwise, scope)
            }
        }
        ExprKind::Array(items) => {
            Ok(Val::array(items.iter().map(|e| eval(e, scope)).collect::<Result<_, _>>()?))
        }
        ExprKind::Object(entries) => {
            let mut object = Fields::with_capacity(entries.len());
            for (key, value) in entries {
                object.insert(key.clone(), eval(value, scope)?);
            }
            Ok(Val::object(object))
        }
        ExprKind::Interpolate(parts) => {
            let mut out = String::new();
            for part in parts {
                match part {
                    Part::Text(text) => out.push_str(text),
                    Part::Expr(e) => push_display(&mut out, &eval(e, scope)?),
                }
            }
            Ok(Val::string(out))
        }
        ExprKind::Call(function, args) => {
            let values = args.iter().map(|e| eval(e, scope)).collect::<Result<Vec<_>, _>>()?;
            functions::call(*function, &values).map_err(|m| EvalError::new(expr.span, m))
        }
    }
}

/// The value a variable or a chain of fields of one denotes, borrowed;
/// `None` when it is something else or a field is missing (the caller
/// evaluates it and reports the error).
fn place<'s, S: Scope + ?Sized>(expr: &Expr, scope: &'s S) -> Option<&'s Val> {
    match &expr.kind {
        ExprKind::Var(var) => Some(scope.var(*var)),
        ExprKind::Field(field) => place(&field.0, scope)?.get(&field.1),
        _ => None,
    }
}

/// Appends a value (a [`Val`] or JSON) as interpolation shows it:
/// strings raw, the rest as JSON.
pub(crate) fn push_display<V: Json>(out: &mut String, value: &V) {
    match value.text() {
        Some(text) => out.push_str(text),
        None => {
            use std::fmt::Write as _;
            let _ = write!(out, "{value}");
        }
    }
}

/// Evaluates `expr` over JSON variables (a tool's params, an agent's
/// inputs), giving JSON: for the callers at the edges of the runtime.
///
/// # Errors
/// As [`eval`].
pub(crate) fn eval_json(expr: &Expr, vars: &[Value]) -> Result<Value, EvalError> {
    let scope: Vec<Val> = vars.iter().map(Val::from).collect();
    eval(expr, scope.as_slice()).map(Val::into_json)
}

fn truth(value: &Val, what: &str, span: Span) -> Result<bool, EvalError> {
    match value {
        Val::Bool(b) => Ok(*b),
        other => {
            Err(EvalError::new(span, format!("{what} needs a boolean, got {}", describe(other))))
        }
    }
}

fn field<'v>(target: &'v Val, name: &str) -> Result<&'v Val, String> {
    match target {
        Val::Object(map) => map.get(name).ok_or_else(|| {
            let keys: Vec<&str> = map.keys().collect();
            if keys.is_empty() {
                format!("field `{name}` not found: the object is empty")
            } else {
                format!("field `{name}` not found; the object has `{}`", keys.join("`, `"))
            }
        }),
        other => Err(format!("cannot read field `{name}` of {}", describe(other))),
    }
}

fn index<'v>(target: &'v Val, index: &Val) -> Result<&'v Val, String> {
    match (target, index) {
        (Val::Array(items), Val::Number(n)) => {
            let i = n
                .as_i64()
                .ok_or_else(|| format!("index must be an integer, got {}", describe(index)))?;
            let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
            let at = if i < 0 { len + i } else { i };
            usize::try_from(at)
                .ok()
                .and_then(|at| items.get(at))
                .ok_or_else(|| format!("index {i} is out of range for an array of length {len}"))
        }
        (Val::Object(_), Val::String(key)) => field(target, key),
        (Val::Array(_), other) => {
            Err(format!("an array index must be an integer, got {}", describe(other)))
        }
        (Val::Object(_), other) => {
            Err(format!("an object key must be a string, got {}", describe(other)))
        }
        (other, _) => Err(format!("cannot index {}", describe(other))),
    }
}

fn unary(op: UnaryOp, value: &Val) -> Result<Val, String> {
    match (op, value) {
        (UnaryOp::Not, Val::Bool(b)) => Ok(Val::Bool(!b)),
        (UnaryOp::Not, other) => Err(format!("`not` needs a boolean, got {}", describe(other))),
        (UnaryOp::Neg, other) => {
            let n = Num::of(other)
                .ok_or_else(|| format!("`-` needs a number, got {}", describe(other)))?;
            n.checked_neg().map(Num::to_value).ok_or_else(|| "integer overflow in `-`".to_owned())
        }
    }
}

fn binary<S: Scope + ?Sized>(
    op: BinaryOp,
    lhs: &Expr,
    rhs: &Expr,
    scope: &S,
    span: Span,
) -> Result<Val, EvalError> {
    let left = eval(lhs, scope)?;
    match op {
        BinaryOp::And | BinaryOp::Or => {
            let what = format!("`{}`", op.symbol());
            let l = truth(&left, &what, lhs.span)?;
            if l == (op == BinaryOp::Or) {
                return Ok(Val::Bool(l));
            }
            return Ok(Val::Bool(truth(&eval(rhs, scope)?, &what, rhs.span)?));
        }
        _ => {}
    }
    let right = eval(rhs, scope)?;
    operate(op, &left, &right).map_err(|m| EvalError::new(span, m))
}

/// Applies a non-logical binary operator to two values.
fn operate(op: BinaryOp, left: &Val, right: &Val) -> Result<Val, String> {
    match op {
        BinaryOp::Eq => return Ok(Val::Bool(equal(left, right))),
        BinaryOp::Ne => return Ok(Val::Bool(!equal(left, right))),
        BinaryOp::Add => match (left, right) {
            (Val::String(a), Val::String(b)) => return Ok(Val::string(format!("{a}{b}"))),
            (Val::Array(a), Val::Array(b)) => {
                return Ok(Val::array(a.iter().chain(b.iter()).cloned().collect()));
            }
            _ => {}
        },
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            return compare(op, left, right).map(Val::Bool);
        }
        _ => {}
    }
    let symbol = op.symbol();
    let (Some(a), Some(b)) = (Num::of(left), Num::of(right)) else {
        return Err(format!(
            "cannot apply `{symbol}` to {} and {}",
            describe(left),
            describe(right)
        ));
    };
    let result = match op {
        BinaryOp::Add => a.checked_add(b),
        BinaryOp::Sub => a.checked_sub(b),
        BinaryOp::Mul => a.checked_mul(b),
        BinaryOp::Div => {
            if b.as_f64() == 0.0 {
                return Err(format!("division by zero: {} / {}", a, b));
            }
            Some(Num::F(a.as_f64() / b.as_f64()))
        }
        BinaryOp::Mod => {
            if b.as_f64() == 0.0 {
                return Err(format!("division by zero: {} % {}", a, b));
            }
            a.checked_rem(b)
        }
        _ => unreachable!("logical and comparison operators are handled above"),
    };
    let result = result.ok_or_else(|| format!("integer overflow in {a} {symbol} {b}"))?;
    result
        .finite()
        .map(Num::to_value)
        .ok_or_else(|| format!("{a} {symbol} {b} is not a finite number"))
}

/// Deep equality where `1 == 1.0`; a shared array or object equals
/// itself without being walked.
#[must_use]
pub(crate) fn equal(left: &Val, right: &Val) -> bool {
    match (left, right) {
        (Val::Null, Val::Null) => true,
        (Val::Bool(a), Val::Bool(b)) => a == b,
        (Val::Number(_), Val::Number(_)) => Num::of(left)
            .zip(Num::of(right))
            .is_some_and(|(a, b)| a.cmp_num(b) == Some(std::cmp::Ordering::Equal)),
        (Val::String(a), Val::String(b)) => a == b,
        (Val::Array(a), Val::Array(b)) => {
            Arc::ptr_eq(a, b)
                || a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| equal(x, y))
        }
        (Val::Object(a), Val::Object(b)) => {
            a.same(b)
                || a.len() == b.len()
                    && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => false,
    }
}

fn compare(op: BinaryOp, left: &Val, right: &Val) -> Result<bool, String> {
    let ordering = match (left, right) {
        (Val::String(a), Val::String(b)) => Some(a.cmp(b)),
        _ => Num::of(left).zip(Num::of(right)).and_then(|(a, b)| a.cmp_num(b)),
    };
    let ordering = ordering.ok_or_else(|| {
        format!(
            "cannot compare {} with {} using `{}`",
            describe(left),
            describe(right),
            op.symbol()
        )
    })?;
    Ok(match op {
        BinaryOp::Lt => ordering.is_lt(),
        BinaryOp::Le => ordering.is_le(),
        BinaryOp::Gt => ordering.is_gt(),
        _ => ordering.is_ge(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::source::FileId;

    fn expr(kind: ExprKind) -> Expr {
        Expr { kind, span: Span::new(FileId(0), 0, 0) }
    }

    fn var(i: u32) -> Expr {
        expr(ExprKind::Var(i))
    }

    /// `{x: a, y: a}` and `[a, a]` hold `a` itself: building them costs
    /// the same however big `a` is, and equality of shared parts is not walked.
    #[test]
    fn nesting_a_variable_shares_it() {
        let a = Val::from(&json!({"rows": [[1, 2], [3, 4]], "name": "big"}));
        let scope = [a.clone()];
        let object = expr(ExprKind::Object([("x".into(), var(0)), ("y".into(), var(0))].into()));
        let object = eval(&object, scope.as_slice()).unwrap();
        assert!(object.get("x").unwrap().same(&a) && object.get("y").unwrap().same(&a));
        let array =
            eval(&expr(ExprKind::Array([var(0), var(0)].into())), scope.as_slice()).unwrap();
        assert!(array.as_array().unwrap().iter().all(|item| item.same(&a)));
        let field = expr(ExprKind::Field(Box::new((var(0), "rows".into()))));
        let rows = eval(&field, scope.as_slice()).unwrap();
        assert!(rows.same(a.get("rows").unwrap()));
        assert!(equal(&object, &object.clone()));
    }
}
