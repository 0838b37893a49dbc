//! Expressions and strings: pairs to [`ast::Expr`], operator precedence by
//! a Pratt parser.
//!
//! Precedence, loosest first: `or`; `and`; `not`; `==` `!=`; `<` `<=` `>`
//! `>=`; `+` `-`; `*` `/` `%`; unary `-`; `.field` and `[index]`. All binary
//! operators are left-associative.

use std::sync::LazyLock;

use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op, PrattParser};

use super::{OPERATOR_RULES, Rule, binary_op, items::Builder, span};
use crate::ast::{
    Arg, Call, Expr, ExprKind, For, Ident, MatchArm, NEG_PRECEDENCE, NOT_PRECEDENCE,
    POSTFIX_PRECEDENCE, Pattern, PatternKind, StringPart, UnaryOp,
};
use crate::diagnostic::{Code, Diagnostic};

/// pest's Pratt table, built level by level from the shared precedence
/// table in [`crate::ast`] (the fast path reads the same table).
static PRATT: LazyLock<PrattParser<Rule>> = LazyLock::new(|| {
    let mut pratt = PrattParser::new();
    for level in 1..=POSTFIX_PRECEDENCE {
        let mut ops: Vec<Op<Rule>> = OPERATOR_RULES
            .iter()
            .filter(|(_, op)| op.precedence() == level)
            .map(|&(rule, _)| Op::infix(rule, Assoc::Left))
            .collect();
        if level == NOT_PRECEDENCE {
            ops.push(Op::prefix(Rule::op_not));
        }
        if level == NEG_PRECEDENCE {
            ops.push(Op::prefix(Rule::op_neg));
        }
        if level == POSTFIX_PRECEDENCE {
            ops.extend([Op::postfix(Rule::field), Op::postfix(Rule::index)]);
        }
        if let Some(level_ops) = ops.into_iter().reduce(|a, b| a | b) {
            pratt = pratt.op(level_ops);
        }
    }
    pratt
});

impl Builder<'_> {
    /// An `expr` pair (or any rule that yields one expression).
    pub(super) fn expr(&mut self, pair: Pair<'_, Rule>) -> Expr {
        match pair.as_rule() {
            Rule::expr => self.operators(pair.into_inner()),
            _ => self.primary(pair),
        }
    }

    fn operators(&mut self, pairs: Pairs<'_, Rule>) -> Expr {
        // The Pratt parser's closures each need `self`; a RefCell-free way is
        // to build a small tree first and convert it afterwards.
        let tree = PRATT
            .map_primary(Tree::Leaf)
            .map_prefix(|op, rhs| Tree::Prefix(op, Box::new(rhs)))
            .map_postfix(|lhs, op| Tree::Postfix(Box::new(lhs), op))
            .map_infix(|lhs, op, rhs| Tree::Infix(Box::new(lhs), op, Box::new(rhs)))
            .parse(pairs);
        self.tree(tree)
    }

    fn tree(&mut self, tree: Tree<'_>) -> Expr {
        match tree {
            Tree::Leaf(pair) => self.primary(pair),
            Tree::Prefix(op, rhs) => {
                let rhs = self.tree(*rhs);
                let op_span = span(self.file, &op);
                let unary = match op.as_rule() {
                    Rule::op_neg => UnaryOp::Neg,
                    Rule::op_not => UnaryOp::Not,
                    rule => unreachable!("prefix operator {rule:?}"),
                };
                let span = op_span.to(rhs.span);
                Expr { kind: ExprKind::Unary(unary, Box::new(rhs)), span }
            }
            Tree::Postfix(lhs, op) => {
                let lhs = self.tree(*lhs);
                let span = lhs.span.to(span(self.file, &op));
                let inner =
                    op.into_inner().next().unwrap_or_else(|| unreachable!("postfix operand"));
                let kind = match inner.as_rule() {
                    Rule::ident => ExprKind::Field(Box::new((lhs, self.ident(inner)))),
                    _ => ExprKind::Index(Box::new(lhs), Box::new(self.expr(inner))),
                };
                Expr { kind, span }
            }
            Tree::Infix(lhs, op, rhs) => {
                let lhs = self.tree(*lhs);
                let rhs = self.tree(*rhs);
                let span = lhs.span.to(rhs.span);
                Expr {
                    kind: ExprKind::Binary(binary_op(op.as_rule()), Box::new(lhs), Box::new(rhs)),
                    span,
                }
            }
        }
    }

    fn primary(&mut self, pair: Pair<'_, Rule>) -> Expr {
        let span = span(self.file, &pair);
        let kind = match pair.as_rule() {
            Rule::expr => return self.expr(pair),
            Rule::paren => {
                let inner = pair.into_inner().next().unwrap_or_else(|| unreachable!("paren expr"));
                let mut expr = self.expr(inner);
                // A name's span is its text (`ExprKind::Name`): `(a)` is `a`.
                if !matches!(expr.kind, ExprKind::Name) {
                    expr.span = span;
                }
                return expr;
            }
            Rule::integer => self.integer(&pair),
            Rule::float => self.float(&pair),
            Rule::boolean => ExprKind::Bool(pair.as_str() == "true"),
            Rule::null => ExprKind::Null,
            Rule::plain_string | Rule::triple_string | Rule::raw_string => {
                ExprKind::String(self.string(pair).into())
            }
            Rule::ident => ExprKind::Name,
            Rule::array => ExprKind::Array(pair.into_inner().map(|p| self.expr(p)).collect()),
            Rule::object => ExprKind::Object(pair.into_inner().map(|p| self.entry(p)).collect()),
            Rule::reference => {
                let mut inner = pair.into_inner();
                let name = inner.next().unwrap_or_else(|| unreachable!("a name"));
                let Some(call_args) = inner.next() else {
                    // A plain name: its span is the name's, without the
                    // whitespace `reference` may have skipped after it.
                    return Expr { span: super::span(self.file, &name), kind: ExprKind::Name };
                };
                let name = self.ident(name);
                let args = call_args.into_inner().next().map(|args| self.args(args));
                ExprKind::Call(Box::new(Call { callee: name, args: args.unwrap_or_default() }))
            }
            Rule::if_expr => {
                let mut parts = pair.into_inner().filter(|p| p.as_rule() == Rule::expr);
                let mut next =
                    || parts.next().unwrap_or_else(|| unreachable!("if has three parts"));
                let (c, a, b) = (next(), next(), next());
                ExprKind::If(Box::new((self.expr(c), self.expr(a), self.expr(b))))
            }
            Rule::match_expr => {
                let mut inner = pair.into_inner().skip(1);
                let scrutinee =
                    self.expr(inner.next().unwrap_or_else(|| unreachable!("scrutinee")));
                let arms = inner.map(|arm| self.match_arm(arm)).collect();
                ExprKind::Match(Box::new((scrutinee, arms)))
            }
            Rule::for_expr => {
                let mut inner = pair.into_inner().filter(|p| p.as_rule() != Rule::kw_in);
                let mut next = || inner.next().unwrap_or_else(|| unreachable!("for has parts"));
                let (_, name) = (next(), next());
                let name = self.ident(name);
                let items = self.expr(next());
                let mut rest: Vec<Pair<'_, Rule>> = inner.collect();
                let body = self.expr(rest.pop().unwrap_or_else(|| unreachable!("for body")));
                let filter = rest.pop().map(|cond| self.expr(cond));
                ExprKind::For(Box::new(For { name, items, filter, body }))
            }
            Rule::try_expr => {
                let inner = pair.into_inner().nth(1).unwrap_or_else(|| unreachable!("try call"));
                ExprKind::Try(Box::new(self.expr(inner)))
            }
            rule => unreachable!("primary {rule:?}"),
        };
        Expr { kind, span }
    }

    fn match_arm(&mut self, pair: Pair<'_, Rule>) -> MatchArm {
        let arm_span = span(self.file, &pair);
        let mut inner = pair.into_inner();
        let pattern = inner.next().unwrap_or_else(|| unreachable!("arm pattern"));
        let pattern_span = span(self.file, &pattern);
        let literal = pattern.into_inner().next().unwrap_or_else(|| unreachable!("pattern"));
        let kind = match literal.as_rule() {
            Rule::wildcard => PatternKind::Wildcard,
            _ => PatternKind::Literal(self.primary(literal)),
        };
        let body = self.expr(inner.next().unwrap_or_else(|| unreachable!("arm body")));
        MatchArm { pattern: Pattern { kind, span: pattern_span }, body, span: arm_span }
    }

    fn integer(&mut self, pair: &Pair<'_, Rule>) -> ExprKind {
        if let Ok(n) = pair.as_str().parse::<i64>() {
            return ExprKind::Integer(n);
        }
        self.diagnostics.push(
            Diagnostic::error(Code::Syntax, span(self.file, pair), "integer is too large")
                .label("does not fit in 64 bits")
                .help("write it as a float, e.g. `1.0e20`"),
        );
        ExprKind::Integer(0)
    }

    fn float(&mut self, pair: &Pair<'_, Rule>) -> ExprKind {
        match pair.as_str().parse::<f64>() {
            Ok(f) if f.is_finite() => ExprKind::Float(f),
            _ => {
                self.diagnostics.push(
                    Diagnostic::error(Code::Syntax, span(self.file, pair), "number is too large")
                        .label("not a finite 64-bit float"),
                );
                ExprKind::Float(0.0)
            }
        }
    }

    fn entry(&mut self, pair: Pair<'_, Rule>) -> (Ident, Expr) {
        let mut inner = pair.into_inner();
        let key = inner.next().unwrap_or_else(|| unreachable!("entry key"));
        let key = match key.as_rule() {
            Rule::ident => self.ident(key),
            _ => {
                let key_span = span(self.file, &key);
                let parts = self.string(key);
                let name = parts
                    .into_iter()
                    .map(|p| match p {
                        StringPart::Text(t) => t,
                        StringPart::Expr(e) => {
                            self.diagnostics.push(
                                Diagnostic::error(
                                    Code::Syntax,
                                    e.span,
                                    "object keys cannot be interpolated",
                                )
                                .help("build the object with a plain key"),
                            );
                            String::new()
                        }
                    })
                    .collect();
                Ident { name, span: key_span }
            }
        };
        let value = self.expr(inner.next().unwrap_or_else(|| unreachable!("entry value")));
        (key, value)
    }

    /// An `args` pair: the arguments of a call.
    pub(super) fn args(&mut self, pair: Pair<'_, Rule>) -> Vec<Arg> {
        pair.into_inner()
            .map(|arg| {
                let mut inner = arg.into_inner().peekable();
                let name = match inner.peek().map(Pair::as_rule) {
                    Some(Rule::ident) if inner.len() == 2 => inner.next().map(|p| self.ident(p)),
                    _ => None,
                };
                let value = self.expr(inner.next().unwrap_or_else(|| unreachable!("arg value")));
                Arg { name, value }
            })
            .collect()
    }

    /// A `plain_string`, `triple_string` or `raw_string` pair, escapes
    /// applied and triple-quoted text dedented.
    pub(super) fn string(&mut self, pair: Pair<'_, Rule>) -> Vec<StringPart> {
        if pair.as_rule() == Rule::raw_string {
            let raw = pair.as_str();
            return raw_parts(&raw[2..raw.len() - 1]);
        }
        let triple = pair.as_rule() == Rule::triple_string;
        let mut parts: Vec<StringPart> = Vec::new();
        for piece in pair.into_inner() {
            match piece.as_rule() {
                Rule::text | Rule::triple_text => push_text(&mut parts, piece.as_str()),
                Rule::escape => {
                    let c = self.escape(&piece);
                    push_text(&mut parts, c);
                }
                Rule::interpolation => {
                    let inner = piece.into_inner().next().unwrap_or_else(|| unreachable!("interp"));
                    parts.push(StringPart::Expr(self.expr(inner)));
                }
                rule => unreachable!("string piece {rule:?}"),
            }
        }
        if triple { dedent(parts) } else { parts }
    }

    fn escape(&mut self, pair: &Pair<'_, Rule>) -> &'static str {
        match &pair.as_str()[1..] {
            "n" => "\n",
            "t" => "\t",
            "r" => "\r",
            "\"" => "\"",
            "\\" => "\\",
            "{" => "{",
            "}" => "}",
            other => {
                self.diagnostics.push(
                    Diagnostic::error(
                        Code::BadEscape,
                        span(self.file, pair),
                        format!("unknown escape `\\{other}`"),
                    )
                    .label("not an escape")
                    .help(r#"the escapes are `\n`, `\t`, `\r`, `\"`, `\\`, `\{` and `\}`"#),
                );
                ""
            }
        }
    }
}

/// An operator tree from the Pratt parser, before conversion.
enum Tree<'i> {
    Leaf(Pair<'i, Rule>),
    Prefix(Pair<'i, Rule>, Box<Tree<'i>>),
    Postfix(Box<Tree<'i>>, Pair<'i, Rule>),
    Infix(Box<Tree<'i>>, Pair<'i, Rule>, Box<Tree<'i>>),
}

/// The parts of a raw string whose text (between the quotes) is `text`.
pub(super) fn raw_parts(text: &str) -> Vec<StringPart> {
    let mut parts = Vec::new();
    if !text.is_empty() {
        push_text(&mut parts, text);
    }
    parts
}

pub(super) fn push_text(parts: &mut Vec<StringPart>, text: &str) {
    if let Some(StringPart::Text(last)) = parts.last_mut() {
        last.push_str(text);
    } else {
        parts.push(StringPart::Text(text.to_owned()));
    }
}

/// Removes the common indentation of a triple-quoted string's lines, a
/// first line that is empty and a last line of only spaces. Interpolations
/// count as text. The lines are kept as parts (no placeholder character
/// stands for an interpolation), so every character of the text, a NUL
/// included, survives as written.
pub(super) fn dedent(parts: Vec<StringPart>) -> Vec<StringPart> {
    let mut lines: Vec<Vec<StringPart>> = vec![Vec::new()];
    for part in parts {
        match part {
            StringPart::Text(text) => {
                for (i, piece) in text.split('\n').enumerate() {
                    if i > 0 {
                        lines.push(Vec::new());
                    }
                    if let Some(line) = lines.last_mut()
                        && !piece.is_empty()
                    {
                        push_text(line, piece);
                    }
                }
            }
            StringPart::Expr(expr) => {
                if let Some(line) = lines.last_mut() {
                    line.push(StringPart::Expr(expr));
                }
            }
        }
    }
    if lines.len() > 1 && lines[0].is_empty() {
        lines.remove(0);
    }
    let only_spaces = |line: &[StringPart]| match line {
        [] => true,
        [StringPart::Text(text)] => text.trim_matches([' ', '\t']).is_empty(),
        _ => false,
    };
    if lines.len() > 1 && lines.last().is_some_and(|line| only_spaces(line)) {
        lines.pop();
    }
    // A line's indentation is the spaces and tabs its text starts with; a
    // line of only whitespace does not count.
    let indent_of = |line: &[StringPart]| match line.first() {
        Some(StringPart::Text(text)) => text.len() - text.trim_start_matches([' ', '\t']).len(),
        _ => 0,
    };
    let blank = |line: &[StringPart]| match line {
        [] => true,
        [StringPart::Text(text)] => text.trim().is_empty(),
        _ => false,
    };
    let indent = lines.iter().filter(|l| !blank(l)).map(|l| indent_of(l)).min().unwrap_or(0);
    let mut out = Vec::new();
    for (i, line) in lines.into_iter().enumerate() {
        if i > 0 {
            push_text(&mut out, "\n");
        }
        let cut = indent_of(&line).min(indent);
        for (j, part) in line.into_iter().enumerate() {
            match part {
                StringPart::Text(text) if j == 0 => {
                    if text.len() > cut {
                        push_text(&mut out, &text[cut..]);
                    }
                }
                StringPart::Text(text) => push_text(&mut out, &text),
                StringPart::Expr(expr) => out.push(StringPart::Expr(expr)),
            }
        }
    }
    out
}
