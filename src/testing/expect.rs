//! `expect` conditions: evaluated over a run's outputs and, when one does
//! not hold, explained the way pytest explains an `assert`: the value of
//! each sub-expression that decided the result.

use serde_json::Value;

use crate::eval::{self, Val};
use crate::ir::{BinaryOp, Expr, ExprKind, UnaryOp};
use crate::source::Sources;

/// Why an `expect` failed: the condition as written and the values that
/// explain it (`reply.priority` = `"low"`), or the evaluation error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unmet {
    /// The condition's source text.
    pub condition: String,
    /// `(sub-expression, value)` pairs, outermost first.
    pub values: Vec<(String, String)>,
    /// The evaluation error, when the condition could not be evaluated, or
    /// what it gave when that was not a boolean.
    pub error: Option<String>,
}

/// Checks `condition` over `outputs` (`Var(i)` is output `i`); `None` when
/// it holds.
#[must_use]
pub(crate) fn check(condition: &Expr, outputs: &[Value], sources: &Sources) -> Option<Unmet> {
    let text = |e: &Expr| sources.slice(e.span).to_owned();
    let mut unmet = Unmet { condition: text(condition), values: Vec::new(), error: None };
    let outputs: Vec<Val> = outputs.iter().map(Val::from).collect();
    let outputs = outputs.as_slice();
    match eval::eval(condition, outputs) {
        Ok(Val::Bool(true)) => return None,
        Ok(Val::Bool(false)) => {}
        Ok(other) => {
            unmet.error =
                Some(format!("the condition is {}, not a boolean", eval::describe(&other)));
        }
        Err(e) => unmet.error = Some(format!("`{}`: {}", sources.slice(e.span), e.message)),
    }
    explain(condition, outputs, sources, &mut unmet.values);
    Some(unmet)
}

/// The values of the sub-expressions of a false condition that decide it:
/// both sides of a comparison, the false side of `and`, the operand of
/// `not`, the arguments of a function.
fn explain(expr: &Expr, scope: &[Val], sources: &Sources, out: &mut Vec<(String, String)>) {
    let mut show = |e: &Expr| {
        if matches!(e.kind, ExprKind::Literal(_)) {
            return;
        }
        // A sub-expression that fails is the error line's business.
        let Ok(value) = eval::eval(e, scope) else { return };
        let value = value.to_string();
        let text = sources.slice(e.span).to_owned();
        if !out.iter().any(|(t, _)| *t == text) {
            out.push((text, value));
        }
    };
    match &expr.kind {
        ExprKind::Binary(BinaryOp::And, a, b) => {
            let a_holds = matches!(eval::eval(a, scope), Ok(Val::Bool(true)));
            let deciding = if a_holds { b } else { a };
            explain(deciding, scope, sources, out);
        }
        ExprKind::Binary(BinaryOp::Or, a, b) => {
            explain(a, scope, sources, out);
            explain(b, scope, sources, out);
        }
        ExprKind::Unary(UnaryOp::Not, inner) => explain(inner, scope, sources, out),
        ExprKind::Binary(_, a, b) => {
            show(a);
            show(b);
        }
        ExprKind::Call(_, args) => args.iter().for_each(show),
        _ => show(expr),
    }
}

impl Unmet {
    /// The explanation as lines: `expect COND`, then `  where X = V`.
    #[must_use]
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!("expect {}", self.condition)];
        if let Some(error) = &self.error {
            lines.push(format!("  {error}"));
        }
        for (text, value) in &self.values {
            lines.push(format!("  where {text} = {value}"));
        }
        lines
    }
}
