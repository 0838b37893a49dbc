//! Control flow in a node's whole expression: branches (`if`, `match`),
//! collections (`for`) and `try`.
//!
//! A `compute` or `compose` whose expression is an `if` or a `match`
//! becomes a [`Branch`] (its arms may be calls or pure expressions); a
//! `for` becomes a [`Collection`]; `try` wraps a call. Anywhere else these
//! forms are reported: they decide what runs, so they must be a node of
//! the graph. `match` patterns are literals or `_`; a `match` needs `_`
//! unless its patterns are `true` and `false`.

use serde_json::Value;

use super::Lowerer;
use super::calls::{Lowered, Stmt};
use super::expr::Scope;
use super::types::{a_kind, constant, show};
use crate::ast::{self, ExprKind, PatternKind};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, Body, Branch, BranchKind, Collection, NodeKind, Pattern, TypeKind};
use crate::source::Span;

impl Lowerer<'_> {
    /// The expression of a `compute` or `compose` node.
    pub(super) fn lower_node_expr(
        &mut self,
        expr: &ast::Expr,
        scope: &Scope<'_>,
        stmt: Stmt,
        composes: &mut Vec<(usize, Span)>,
    ) -> NodeKind {
        match &expr.kind {
            ExprKind::If(parts) => {
                let (condition, then, otherwise) = &**parts;
                let on = self.lower_expr(condition, scope);
                let arms = [(true, then), (false, otherwise)]
                    .into_iter()
                    .map(|(value, body)| ir::Arm {
                        pattern: Pattern::Literal(Value::Bool(value)),
                        body: self.lower_body(body, scope, stmt, composes),
                        deps: Vec::new(),
                        span: body.span,
                    })
                    .collect();
                NodeKind::Branch(Box::new(Branch {
                    kind: BranchKind::If,
                    on,
                    arms,
                    deps: Vec::new(),
                }))
            }
            ExprKind::Match(parts) => {
                let (scrutinee, arms) = &**parts;
                let on = self.lower_expr(scrutinee, scope);
                self.check_patterns(arms);
                let arms = arms
                    .iter()
                    .map(|arm| ir::Arm {
                        pattern: self.lower_pattern(&arm.pattern),
                        body: self.lower_body(&arm.body, scope, stmt, composes),
                        deps: Vec::new(),
                        span: arm.span,
                    })
                    .collect();
                NodeKind::Branch(Box::new(Branch {
                    kind: BranchKind::Match,
                    on,
                    arms,
                    deps: Vec::new(),
                }))
            }
            ExprKind::For(each) => self.lower_for(each, scope, stmt, composes),
            _ => match self.lower_body(expr, scope, stmt, composes) {
                Body::Call(call) => NodeKind::Call(call),
                Body::Pure(pure) => {
                    let is_call = matches!(expr.kind, ExprKind::Call(..) | ExprKind::Try(_));
                    if stmt == Stmt::Compose && !is_call {
                        self.compose_needs_call(expr.span);
                    }
                    NodeKind::Compute(pure)
                }
            },
        }
    }

    /// An arm or a `for` body: a call (maybe under `try`) or a pure
    /// expression.
    fn lower_body(
        &mut self,
        expr: &ast::Expr,
        scope: &Scope<'_>,
        stmt: Stmt,
        composes: &mut Vec<(usize, Span)>,
    ) -> Body {
        let null = || {
            Body::Pure(ir::Expr {
                kind: ir::ExprKind::Literal(crate::value::Val::Null),
                span: expr.span,
            })
        };
        let ExprKind::Try(inner) = &expr.kind else {
            return match self.lower_call(expr, scope, stmt, composes) {
                Lowered::Call(call) => Body::Call(call),
                Lowered::Reported => null(),
                Lowered::NotACall => Body::Pure(self.lower_expr(expr, scope)),
            };
        };
        match self.lower_call(inner, scope, stmt, composes) {
            Lowered::Call(call) => Body::Call(ir::Call { catch: true, ..call }),
            Lowered::Reported => null(),
            Lowered::NotACall => {
                self.lower_expr(inner, scope);
                let what = if stmt == Stmt::Compose { "a contract" } else { "a tool or an agent" };
                self.push(
                    Diagnostic::error(Code::TryNonCall, inner.span, "`try` of something that is not a call")
                        .label(format!("not a call of {what}"))
                        .help("`try` turns a failing call into a value; pure expressions do not fail that way (use `get` for a default)"),
                );
                null()
            }
        }
    }

    fn lower_for(
        &mut self,
        each: &ast::For,
        scope: &Scope<'_>,
        stmt: Stmt,
        composes: &mut Vec<(usize, Span)>,
    ) -> NodeKind {
        let items = self.lower_expr(&each.items, scope);
        self.check_iterable(&each.items, &items);
        let (inner, var) = scope.with_item(&each.name.name);
        let filter = each.filter.as_ref().map(|f| self.lower_expr(f, &inner));
        let body = self.lower_body(&each.body, &inner, stmt, composes);
        if stmt == Stmt::Compose && matches!(body, Body::Pure(_)) {
            self.compose_needs_call(each.body.span);
        }
        NodeKind::For(Box::new(Collection { var, items, filter, body }))
    }

    /// A `for` over a literal that is not an array, or over an input
    /// declared with another type.
    fn check_iterable(&mut self, written: &ast::Expr, items: &ir::Expr) {
        let found = match &items.kind {
            ir::ExprKind::Literal(crate::value::Val::Array(_)) => return,
            ir::ExprKind::Literal(value) => format!("{} `{}`", a_kind(value), show(value)),
            ir::ExprKind::Object(_) => "an object".to_owned(),
            ir::ExprKind::Interpolate(_) => "a string".to_owned(),
            ir::ExprKind::Var(var) => {
                let Ok(at) = self.input_types.binary_search_by_key(var, |(node, _)| *node) else {
                    return;
                };
                let ty = &self.input_types[at].1;
                if matches!(ty.kind, TypeKind::Array(_) | TypeKind::Any) {
                    return;
                }
                format!("input of type `{ty}`")
            }
            _ => return,
        };
        self.push(
            Diagnostic::error(Code::ForNonArray, written.span, format!("`for` over {found}"))
                .label("not an array")
                .help("`for` goes through the items of an array"),
        );
    }

    /// Duplicate patterns (whether a `_` is needed depends on the static
    /// type of the scrutinee: see `typing.rs`).
    fn check_patterns(&mut self, arms: &[ast::MatchArm]) {
        let mut seen: Vec<(Value, Span)> = Vec::new();
        for arm in arms {
            let PatternKind::Literal(literal) = &arm.pattern.kind else { continue };
            let Some(value) = constant(literal) else { continue };
            if let Some((_, first)) = seen.iter().find(|(v, _)| *v == value) {
                self.push(
                    Diagnostic::error(
                        Code::Duplicate,
                        arm.pattern.span,
                        format!("pattern `{}` appears twice", show(&value)),
                    )
                    .label("never chosen")
                    .note(*first, "first here")
                    .help("remove one of the arms"),
                );
            } else {
                seen.push((value, arm.pattern.span));
            }
        }
    }

    fn lower_pattern(&mut self, pattern: &ast::Pattern) -> Pattern {
        match &pattern.kind {
            PatternKind::Wildcard => Pattern::Wildcard,
            PatternKind::Literal(literal) => match constant(literal) {
                Some(value) => Pattern::Literal(value),
                None => {
                    self.push(
                        Diagnostic::error(
                            Code::NotConstant,
                            pattern.span,
                            "a pattern cannot interpolate",
                        )
                        .label("not a literal")
                        .help("write the string without `{...}`"),
                    );
                    Pattern::Wildcard
                }
            },
        }
    }

    /// Reports `match`, `for` and `try` inside an expression.
    pub(super) fn nested_control(&mut self, expr: &ast::Expr) {
        let word = match expr.kind {
            ExprKind::Match(..) => "match",
            ExprKind::For(_) => "for",
            _ => "try",
        };
        self.push(
            Diagnostic::error(
                Code::NestedControl,
                expr.span,
                format!("`{word}` inside an expression"),
            )
            .label("only a node's whole expression can be this")
            .help(format!("give it its own node, e.g. `compute x = {word} ...`, and use `x` here")),
        );
    }
}
