//! Expressions: their pieces read in order, then pest's Pratt algorithm
//! over them (the shared precedence table of [`crate::ast`]).

use std::iter::Peekable;
use std::vec::IntoIter;

use super::{MAX_PREFIXES, Parser, is_word_byte};
use crate::ast::{
    Arg, BinaryOp, Call, Expr, ExprKind, For, Ident, Keyword as K, KeywordRole, MatchArm,
    NEG_PRECEDENCE, NOT_PRECEDENCE, POSTFIX_PRECEDENCE, Pattern, PatternKind, RESERVED, StringPart,
    UnaryOp,
};
use crate::source::Span;
use crate::syntax::expr::{dedent, push_text, raw_parts};
use crate::syntax::limits::MAX_OPERATORS;

/// A piece of an expression before precedence is applied, as pest's
/// `expr` rule yields them.
enum Piece {
    Prefix(UnaryOp, Span),
    Operand(Expr),
    Field(Ident, Span),
    Index(Expr, Span),
    Infix(BinaryOp),
}

/// The binding power of a piece that follows an operand (the shared
/// table in [`crate::ast`], which pest's Pratt parser is built from).
fn binding(piece: &Piece) -> u8 {
    match piece {
        Piece::Infix(op) => op.precedence(),
        Piece::Field(..) | Piece::Index(..) => POSTFIX_PRECEDENCE,
        Piece::Prefix(..) | Piece::Operand(_) => 0,
    }
}

/// pest's Pratt algorithm over the pieces of one expression.
fn pratt(pieces: &mut Peekable<IntoIter<Piece>>, rbp: u8) -> Option<Expr> {
    let mut lhs = match pieces.next()? {
        Piece::Prefix(op, span) => {
            let prec = if op == UnaryOp::Not { NOT_PRECEDENCE } else { NEG_PRECEDENCE };
            let rhs = pratt(pieces, prec - 1)?;
            Expr { span: span.to(rhs.span), kind: ExprKind::Unary(op, Box::new(rhs)) }
        }
        Piece::Operand(expr) => expr,
        _ => return None,
    };
    while let Some(next) = pieces.peek() {
        let prec = binding(next);
        if rbp >= prec {
            break;
        }
        lhs = match pieces.next()? {
            Piece::Field(name, span) => {
                Expr { span: lhs.span.to(span), kind: ExprKind::Field(Box::new((lhs, name))) }
            }
            Piece::Index(index, span) => Expr {
                span: lhs.span.to(span),
                kind: ExprKind::Index(Box::new(lhs), Box::new(index)),
            },
            Piece::Infix(op) => {
                let rhs = pratt(pieces, prec)?;
                Expr {
                    span: lhs.span.to(rhs.span),
                    kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                }
            }
            _ => return None,
        };
    }
    Some(lhs)
}

impl Parser<'_> {
    pub(super) fn expr(&mut self) -> Option<Expr> {
        self.enter()?;
        let operators = self.operators;
        let mut pieces = Vec::new();
        loop {
            let mut prefixes = 0;
            loop {
                let start = self.pos_after_ws();
                let op = if self.bytes.get(start) == Some(&b'-') {
                    self.advance(1);
                    UnaryOp::Neg
                } else if self.peek_word() == "not" {
                    self.advance(3);
                    UnaryOp::Not
                } else {
                    break;
                };
                pieces.push(Piece::Prefix(op, self.span_from(start)));
                self.operator()?;
                prefixes += 1;
                if prefixes > MAX_PREFIXES {
                    return None;
                }
            }
            pieces.push(Piece::Operand(self.primary()?));
            loop {
                let start = self.pos_after_ws();
                match self.bytes.get(start) {
                    Some(b'.') => {
                        self.advance(1);
                        let name = self.ident()?;
                        pieces.push(Piece::Field(name, self.span_from(start)));
                        self.operator()?;
                    }
                    Some(b'[') => {
                        self.advance(1);
                        self.operator()?;
                        let index = self.expr()?;
                        self.expect(b']')?;
                        pieces.push(Piece::Index(index, self.span_from(start)));
                    }
                    _ => break,
                }
            }
            let Some(op) = self.infix() else { break };
            pieces.push(Piece::Infix(op));
            self.operator()?;
        }
        let expr = pratt(&mut pieces.into_iter().peekable(), 0)?;
        self.depth -= 1;
        self.operators = operators;
        Some(expr)
    }

    /// Counts an operator of the expression being read; `None` past the
    /// pre-scan's limit.
    pub(super) fn operator(&mut self) -> Option<()> {
        self.operators += 1;
        (self.operators <= MAX_OPERATORS).then_some(())
    }

    /// A binary operator, consumed.
    pub(super) fn infix(&mut self) -> Option<BinaryOp> {
        let start = self.pos_after_ws();
        let second = self.bytes.get(start + 1).copied();
        let (op, len) = match (self.bytes.get(start)?, second) {
            (b'+', _) => (BinaryOp::Add, 1),
            (b'-', _) => (BinaryOp::Sub, 1),
            (b'*', _) => (BinaryOp::Mul, 1),
            (b'/', _) => (BinaryOp::Div, 1),
            (b'%', _) => (BinaryOp::Mod, 1),
            (b'=', Some(b'=')) => (BinaryOp::Eq, 2),
            (b'!', Some(b'=')) => (BinaryOp::Ne, 2),
            (b'<', Some(b'=')) => (BinaryOp::Le, 2),
            (b'>', Some(b'=')) => (BinaryOp::Ge, 2),
            (b'<', _) => (BinaryOp::Lt, 1),
            (b'>', _) => (BinaryOp::Gt, 1),
            _ => match self.word_at(start) {
                "and" => (BinaryOp::And, 3),
                "or" => (BinaryOp::Or, 2),
                _ => return None,
            },
        };
        self.advance(len);
        Some(op)
    }

    pub(super) fn primary(&mut self) -> Option<Expr> {
        let start = self.pos_after_ws();
        let kind = match *self.bytes.get(start)? {
            b'"' => return self.string(),
            b'r' if self.raw_at(start) => return self.string(),
            b'0'..=b'9' => return self.number(),
            b'(' => {
                self.advance(1);
                let mut expr = self.expr()?;
                self.expect(b')')?;
                // A name's span is its text (`ExprKind::Name`): `(a)` is `a`.
                if !matches!(expr.kind, ExprKind::Name) {
                    expr.span = self.span_from(start);
                }
                return Some(expr);
            }
            b'[' => {
                self.advance(1);
                ExprKind::Array(self.list(b']', Self::expr)?.into())
            }
            b'{' => {
                self.advance(1);
                ExprKind::Object(self.list(b'}', Self::entry)?.into())
            }
            _ => match self.word_at(start) {
                word if K::of(word).is_some_and(|kw| kw.role() == KeywordRole::Expression) => {
                    self.advance(word.len());
                    self.control(K::of(word)?)?
                }
                "true" => {
                    self.advance(4);
                    ExprKind::Bool(true)
                }
                "false" => {
                    self.advance(5);
                    ExprKind::Bool(false)
                }
                "null" => {
                    self.advance(4);
                    ExprKind::Null
                }
                _ => {
                    let span = self.name()?;
                    if !self.eat(b'(') {
                        return Some(Expr { kind: ExprKind::Name, span });
                    }
                    let name = &self.text[span.start as usize..span.end as usize];
                    let callee = Ident { name: name.into(), span };
                    let args = self.list(b')', Self::arg)?;
                    ExprKind::Call(Box::new(Call { callee, args }))
                }
            },
        };
        Some(Expr { kind, span: self.span_from(start) })
    }

    /// The rest of an `if`, `match`, `for` or `try` after its keyword.
    pub(super) fn control(&mut self, keyword: K) -> Option<ExprKind> {
        Some(match keyword {
            K::If => {
                let condition = self.expr()?;
                self.keyword(K::Then).then_some(())?;
                let then = self.expr()?;
                self.keyword(K::Else).then_some(())?;
                let otherwise = self.expr()?;
                ExprKind::If(Box::new((condition, then, otherwise)))
            }
            K::Match => {
                let scrutinee = self.expr()?;
                self.expect(b'{')?;
                let mut arms = Vec::new();
                while !self.eat(b'}') {
                    arms.push(self.match_arm()?);
                    self.eat(b',');
                }
                ExprKind::Match(Box::new((scrutinee, arms)))
            }
            K::For => {
                let name = self.ident()?;
                self.keyword(K::In).then_some(())?;
                let items = self.expr()?;
                let filter = if self.keyword(K::If) { Some(self.expr()?) } else { None };
                self.expect(b':')?;
                let body = self.expr()?;
                ExprKind::For(Box::new(For { name, items, filter, body }))
            }
            K::Try => ExprKind::Try(Box::new(self.expr()?)),
            _ => return None,
        })
    }

    /// `pattern => expr` of a `match`.
    pub(super) fn match_arm(&mut self) -> Option<MatchArm> {
        let start = self.pos_after_ws();
        let kind = match self.bytes.get(start)? {
            b'"' => PatternKind::Literal(self.string()?),
            b'r' if self.raw_at(start) => PatternKind::Literal(self.string()?),
            b'0'..=b'9' => {
                let literal = self.number()?;
                matches!(literal.kind, ExprKind::Integer(_)).then_some(())?;
                PatternKind::Literal(literal)
            }
            _ => match self.word_at(start) {
                "_" => {
                    self.advance(1);
                    PatternKind::Wildcard
                }
                "true" | "false" | "null" => PatternKind::Literal(self.primary()?),
                _ => return None,
            },
        };
        let pattern = Pattern { kind, span: self.span_from(start) };
        self.expect(b'=')?;
        (self.bytes.get(self.pos) == Some(&b'>')).then_some(())?;
        self.advance(1);
        let body = self.expr()?;
        Some(MatchArm { pattern, body, span: self.span_from(start) })
    }

    /// `name: expr` or `expr`.
    pub(super) fn arg(&mut self) -> Option<Arg> {
        let start = self.pos_after_ws();
        let word = self.word_at(start);
        if !word.is_empty() && !RESERVED.contains(&word) {
            let colon = self.skip_from(start + word.len());
            if self.bytes.get(colon) == Some(&b':') {
                if self.bytes.get(self.skip_from(colon + 1)) == Some(&b':') {
                    return None;
                }
                let name = self.ident()?;
                self.expect(b':')?;
                return Some(Arg { name: Some(name), value: self.expr()? });
            }
        }
        Some(Arg { name: None, value: self.expr()? })
    }

    /// `key: value` of an object; keys with interpolation go to pest.
    pub(super) fn entry(&mut self) -> Option<(Ident, Expr)> {
        let key = if self.at_string() {
            let string = self.string()?;
            let ExprKind::String(parts) = string.kind else { return None };
            let name = parts
                .into_iter()
                .map(|part| match part {
                    StringPart::Text(text) => Some(text),
                    StringPart::Expr(_) => None,
                })
                .collect::<Option<String>>()?;
            Ident { name: name.into(), span: string.span }
        } else {
            self.ident()?
        };
        self.expect(b':')?;
        Some((key, self.expr()?))
    }

    /// An integer or float literal.
    pub(super) fn number(&mut self) -> Option<Expr> {
        let start = self.pos_after_ws();
        let bytes = self.bytes;
        let digit_at = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
        let mut end = start;
        while digit_at(end) {
            end += 1;
        }
        if end == start {
            return None;
        }
        let dot = bytes.get(end) == Some(&b'.') && digit_at(end + 1);
        let kind = if !dot && !bytes.get(end).is_some_and(|&b| is_word_byte(b)) {
            ExprKind::Integer(self.text[start..end].parse().ok()?)
        } else {
            let exponent = |i: usize| {
                if !matches!(bytes.get(i), Some(b'e' | b'E')) {
                    return None;
                }
                let mut j = i + 1;
                if matches!(bytes.get(j), Some(b'+' | b'-')) {
                    j += 1;
                }
                let digits = j;
                while digit_at(j) {
                    j += 1;
                }
                (j > digits).then_some(j)
            };
            if dot {
                end += 1;
                while digit_at(end) {
                    end += 1;
                }
                if let Some(e) = exponent(end) {
                    end = e;
                }
            } else {
                end = exponent(end)?;
            }
            let value: f64 = self.text[start..end].parse().ok()?;
            if !value.is_finite() {
                return None;
            }
            ExprKind::Float(value)
        };
        self.advance(end - self.pos);
        Some(Expr { kind, span: self.span_from(start) })
    }

    /// A `"..."` or `"""..."""` string with escapes applied, triple-quoted
    /// text dedented, or a raw `r"..."` as written.
    pub(super) fn string(&mut self) -> Option<Expr> {
        let start = self.pos_after_ws();
        let bytes = self.bytes;
        if self.raw_at(start) {
            let len = bytes[start + 2..].iter().position(|&b| b == b'"' || b == b'\n')?;
            let end = start + 2 + len;
            (bytes[end] == b'"').then_some(())?;
            self.advance(end + 1 - self.pos);
            let parts = raw_parts(&self.text[start + 2..end]);
            return Some(Expr {
                kind: ExprKind::String(parts.into()),
                span: self.span_from(start),
            });
        }
        if bytes.get(start) != Some(&b'"') {
            return None;
        }
        let triple = bytes[start..].starts_with(b"\"\"\"");
        let quote = if triple { 3 } else { 1 };
        let mut i = start + quote;
        let mut parts = Vec::new();
        loop {
            let run = i;
            loop {
                let b = *bytes.get(i)?;
                let stop = match b {
                    b'\\' | b'{' => true,
                    b'"' => !triple || bytes[i..].starts_with(b"\"\"\""),
                    b'\n' => !triple,
                    _ => false,
                };
                if stop {
                    break;
                }
                i += 1;
            }
            if i > run {
                push_text(&mut parts, &self.text[run..i]);
            }
            match bytes[i] {
                b'\\' => {
                    let escaped = match bytes.get(i + 1)? {
                        b'n' => "\n",
                        b't' => "\t",
                        b'r' => "\r",
                        b'"' => "\"",
                        b'\\' => "\\",
                        b'{' => "{",
                        b'}' => "}",
                        _ => return None,
                    };
                    push_text(&mut parts, escaped);
                    i += 2;
                }
                b'{' => {
                    self.pos = i + 1;
                    let expr = self.expr()?;
                    self.expect(b'}')?;
                    parts.push(StringPart::Expr(expr));
                    i = self.pos;
                }
                b'"' => {
                    i += quote;
                    break;
                }
                _ => return None,
            }
        }
        self.pos = i;
        self.last = i;
        let parts = if triple { dedent(parts) } else { parts };
        Some(Expr { kind: ExprKind::String(parts.into()), span: self.span_from(start) })
    }
}
