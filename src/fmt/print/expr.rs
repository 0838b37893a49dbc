//! The printer's expressions: operators with the parentheses precedence
//! needs (and a few that help a reader), calls, literals as written.

use super::{Printer, Stmt, close_of, concat, start};
use crate::ast::{self, Arg, BinaryOp, Expr, ExprKind, Ident, UnaryOp};
use crate::fmt::doc::Doc;
use crate::fmt::strip::name_text;

/// Binding power of `if`, `match`, `for` and `try`: they reach as far
/// right as they can, so inside an operator they need parentheses.
const OPEN_PRECEDENCE: u8 = 0;
/// Binding power of literals, names, calls and brackets.
const ATOM_PRECEDENCE: u8 = u8::MAX;

impl<'a> Printer<'a> {
    /// `(args)`; `close` is where the `)` is (or a place after it).
    pub(super) fn args(&mut self, args: &[Arg], close: usize) -> Doc<'a> {
        let close = self.text.get(..close).and_then(|t| t.rfind(')')).unwrap_or(close);
        // One array or object argument hugs the parentheses: `f([` ... `])`.
        if let [arg] = args {
            if matches!(arg.value.kind, ExprKind::Array(_) | ExprKind::Object(_)) {
                return concat([Doc::text("("), self.arg(arg), Doc::text(")")]);
            }
        }
        self.list("(", args, arg_start, Self::arg, (close, ")"), false)
    }

    fn arg(&mut self, arg: &Arg) -> Doc<'a> {
        match &arg.name {
            Some(name) => concat([self.name(name), Doc::text(": "), self.expr(&arg.value)]),
            None => self.expr(&arg.value),
        }
    }

    pub(super) fn expr(&mut self, e: &Expr) -> Doc<'a> {
        match &e.kind {
            ExprKind::Null => Doc::text("null"),
            ExprKind::Bool(b) => Doc::text(b.to_string()),
            ExprKind::Integer(n) => {
                let written = self.source(e);
                let bare = !written.is_empty() && written.bytes().all(|b| b.is_ascii_digit());
                if bare { Doc::text(written) } else { Doc::text(n.to_string()) }
            }
            ExprKind::Float(f) => {
                let written = self.source(e);
                let bare = written.bytes().next().is_some_and(|b| b.is_ascii_digit())
                    && written.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b));
                if bare { Doc::text(written) } else { Doc::text(format!("{f:?}")) }
            }
            // Strings byte for byte, interpolations and all.
            ExprKind::String(_) => Doc::text(self.source(e)),
            ExprKind::Name => Doc::text(name_text(self.text, e.span)),
            ExprKind::Array(items) => {
                let close = (close_of(e.span), "]");
                self.list("[", items, |i| start(i.span), Self::expr, close, false)
            }
            ExprKind::Object(entries) => {
                let close = (close_of(e.span), "}");
                let entry = |p: &mut Self, (key, value): &(Ident, Expr)| {
                    let key = match p.text.get(key.span.range()) {
                        Some(written) => Doc::text(written),
                        None => Doc::text(key.name.to_string()),
                    };
                    concat([key, Doc::text(": "), p.expr(value)])
                };
                self.list("{", entries, |(k, _)| start(k.span), entry, close, false)
            }
            ExprKind::Field(field) => {
                let base = self.operand(&field.0, ast::POSTFIX_PRECEDENCE);
                concat([base, Doc::text("."), self.name(&field.1)])
            }
            ExprKind::Index(base, index) => {
                let base = self.operand(base, ast::POSTFIX_PRECEDENCE);
                concat([base, Doc::text("["), self.expr(index), Doc::text("]")])
            }
            ExprKind::Call(call) => {
                concat([self.name(&call.callee), self.args(&call.args, e.span.end as usize)])
            }
            ExprKind::Unary(op, operand) => self.unary(*op, operand),
            ExprKind::Binary(op, a, b) => {
                let left = self.operand(a, clear(*op, a, op.precedence()));
                let right = self.operand(b, clear(*op, b, op.precedence() + 1));
                concat([left, Doc::text(" "), Doc::text(op.symbol()), Doc::text(" "), right])
            }
            ExprKind::If(parts) => {
                let condition = self.expr(&parts.0);
                let then = concat([Doc::Line, Doc::text("then "), self.expr(&parts.1)]);
                let otherwise = concat([Doc::Line, Doc::text("else "), self.expr(&parts.2)]);
                concat([Doc::text("if "), condition, concat([then, otherwise]).nest()]).group()
            }
            ExprKind::Match(m) => {
                let head = concat([Doc::text("match "), self.expr(&m.0)]);
                let arms = m.1.iter().map(|arm| (start(arm.span), Stmt::Arm(arm))).collect();
                self.block(head, arms, close_of(e.span))
            }
            ExprKind::For(f) => {
                let mut parts = vec![
                    Doc::text(format!("for {} in ", f.name.name)),
                    self.operand(&f.items, OPEN_PRECEDENCE + 1),
                ];
                if let Some(filter) = &f.filter {
                    parts.push(Doc::text(" if "));
                    parts.push(self.operand(filter, OPEN_PRECEDENCE + 1));
                }
                parts.push(Doc::text(": "));
                parts.push(self.expr(&f.body));
                concat(parts)
            }
            ExprKind::Try(inner) => concat([Doc::text("try "), self.expr(inner)]),
        }
    }

    fn unary(&mut self, op: UnaryOp, operand: &Expr) -> Doc<'a> {
        let (symbol, power) = match op {
            UnaryOp::Neg => ("-", ast::NEG_PRECEDENCE),
            UnaryOp::Not => ("not ", ast::NOT_PRECEDENCE),
        };
        // `- -x`, not `--x`.
        let space = op == UnaryOp::Neg
            && matches!(operand.kind, ExprKind::Unary(UnaryOp::Neg, _))
            && precedence(operand) >= power;
        // `not (a == b)`: an operator under `not` keeps its parentheses to
        // be read right, though precedence does not need them.
        let power = match (&operand.kind, op) {
            (ExprKind::Binary(..), UnaryOp::Not) => ATOM_PRECEDENCE,
            _ => power,
        };
        let operand = self.operand(operand, power);
        concat([Doc::text(symbol), Doc::text(if space { " " } else { "" }), operand])
    }

    /// `e`, in parentheses when it binds looser than `power`.
    fn operand(&mut self, e: &Expr, power: u8) -> Doc<'a> {
        let doc = self.expr(e);
        if precedence(e) < power { concat([Doc::text("("), doc, Doc::text(")")]) } else { doc }
    }

    fn source(&self, e: &Expr) -> &'a str {
        self.text.get(e.span.range()).unwrap_or("")
    }
}

/// The binding power an operand of `parent` needs: `power`, or more where
/// parentheses that precedence does not need still help a reader (a
/// comparison of comparisons, `and` inside `or`).
fn clear(parent: BinaryOp, operand: &Expr, power: u8) -> u8 {
    let ExprKind::Binary(child, ..) = &operand.kind else { return power };
    let comparison = |op: BinaryOp| matches!(op.precedence(), 4 | 5);
    let mixed_logic = parent == BinaryOp::Or && *child == BinaryOp::And;
    if (comparison(parent) && comparison(*child)) || mixed_logic { ATOM_PRECEDENCE } else { power }
}

/// How tightly `e` binds, as its parent sees it.
fn precedence(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Binary(op, ..) => op.precedence(),
        ExprKind::Unary(UnaryOp::Neg, _) => ast::NEG_PRECEDENCE,
        ExprKind::Unary(UnaryOp::Not, _) => ast::NOT_PRECEDENCE,
        ExprKind::If(_) | ExprKind::Match(_) | ExprKind::For(_) | ExprKind::Try(_) => {
            OPEN_PRECEDENCE
        }
        _ => ATOM_PRECEDENCE,
    }
}

fn arg_start(arg: &Arg) -> usize {
    arg.name.as_ref().map_or(start(arg.value.span), |n| start(n.span))
}
