//! The fast path: a hand-written parser for valid files only.
//!
//! pest spends about 40k instructions per one-line node on per-combinator
//! bookkeeping; this parser reads the text once, byte by byte, and builds
//! the same [`ast::File`](crate::ast::File) the pest path builds, every
//! [`Span`] included.
//!
//! [`parse`] returns `None` on anything it does not fully understand or
//! that the pest path would reject or diagnose: syntax errors, unknown
//! escapes, two statements on one line, deep nesting, integers too large,
//! interpolated object keys, and any
//! other unusual input. [`super::parse`] then falls back to pest, the
//! reference parser and the only source of syntax diagnostics. It must
//! never return `Some` for input pest rejects, and when it returns `Some`
//! the AST equals pest's (tested against the corpus and by a proptest).
//!
//! Spans follow the pest path: a statement, declaration or expression ends
//! at the end of its last token (pest's trailing whitespace and comments
//! are trimmed by `content_end`), which is what `last` tracks here.

use std::iter::Peekable;
use std::vec::IntoIter;

use self::contract::Split;
use super::expr::{dedent, push_text, raw_parts};
use super::limits::MAX_OPERATORS;
use crate::ast::{
    Agent, Arg, BinaryOp, Call, EnumDecl, Eval, EvalStmt, Expr, ExprKind, File, For, Ident,
    Implementation, Item, Keyword as K, KeywordRole, MatchArm, McpServer, MockAnswer,
    NEG_PRECEDENCE, NOT_PRECEDENCE, POSTFIX_PRECEDENCE, Param, Pattern, PatternKind, Price,
    Provider, ProviderRef, RESERVED, Rate, Setting, StringPart, Test, TestStmt, Tool, TypeDecl,
    TypeExpr, UnaryOp, Use,
};
use crate::source::{FileId, Span};

/// The UTF-8 byte order mark some editors write first; pest's `bom`.
const BOM: &str = "\u{feff}";

/// Deepest recursion of expressions and types; deeper input goes to pest.
const MAX_DEPTH: usize = 200;

/// Most prefix operators before one operand; more go to pest.
const MAX_PREFIXES: usize = 64;

mod contract;

/// Texts from this size on have the second half of their first big
/// contract's body parsed by a second thread (see [`Split`]).
const SPLIT_MIN: usize = 4 << 20;

/// Parses a valid file, or returns `None` so that pest parses (and
/// diagnoses) it.
pub(super) fn parse(file: FileId, text: &str) -> Option<File> {
    let split = if text.len() >= SPLIT_MIN { Split::Middle } else { Split::Never };
    Parser::new(file, text, split).file()
}

/// [`parse`] with the first contract's body split at byte `at` (where
/// the second thread starts), to test that a split anywhere gives the
/// tree of the whole parse.
#[cfg(test)]
pub(super) fn parse_split_at(file: FileId, text: &str, at: usize) -> Option<File> {
    Parser::new(file, text, Split::At(at)).file()
}

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

/// The statements of a block read so far, for the rule of one statement
/// a line: where the first began and the last ended.
#[derive(Clone, Copy, Default)]
pub(super) struct Lines {
    first: Option<usize>,
    end: Option<usize>,
}

impl Lines {
    /// A statement at `start..end`; `None` when it starts on the line
    /// where the last one ended.
    pub(super) fn add(&mut self, text: &str, start: usize, end: usize) -> Option<()> {
        match self.end {
            Some(last) if !text[last..start].contains('\n') => return None,
            Some(_) => {}
            None => self.first = Some(start),
        }
        self.end = Some(end);
        Some(())
    }

    /// The statements of `rest`, after these.
    pub(super) fn append(&mut self, text: &str, rest: Lines) -> Option<()> {
        if let (Some(first), Some(end)) = (rest.first, rest.end) {
            self.add(text, first, end)?;
        }
        Some(())
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A cursor over the text.
#[derive(Clone, Copy)]
struct Parser<'t> {
    file: FileId,
    text: &'t str,
    bytes: &'t [u8],
    /// Where the next token may start (maybe before whitespace).
    pos: usize,
    /// The end of the last token read.
    last: usize,
    /// Current recursion depth of expressions and types.
    depth: usize,
    /// The operators of the expressions being read, at every level
    /// together. Bounded by the pre-scan's limit, so that the tree of a
    /// file this parser accepts is never deeper than pest's may be, even
    /// while the pre-scan still runs beside it (see [`super::parse`]).
    operators: usize,
    /// Whether a contract's body may still be split between two threads.
    split: Split,
}

impl<'t> Parser<'t> {
    fn new(file: FileId, text: &'t str, split: Split) -> Self {
        Parser {
            file,
            text,
            bytes: text.as_bytes(),
            pos: 0,
            last: 0,
            depth: 0,
            operators: 0,
            split,
        }
    }

    // ------------------------------------------------------------ tokens

    /// The first byte at or after `i` that is not whitespace or comment.
    fn skip_from(&self, mut i: usize) -> usize {
        loop {
            match self.bytes.get(i) {
                Some(b' ' | b'\t' | b'\r' | b'\n') => i += 1,
                Some(b'#') => {
                    while self.bytes.get(i).is_some_and(|&b| b != b'\n') {
                        i += 1;
                    }
                }
                _ => return i,
            }
        }
    }

    fn ws(&mut self) {
        self.pos = self.skip_from(self.pos);
    }

    /// The next byte after whitespace.
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.bytes.get(self.pos).copied()
    }

    fn advance(&mut self, len: usize) {
        self.pos += len;
        self.last = self.pos;
    }

    /// Consumes `b` when it comes next.
    fn eat(&mut self, b: u8) -> bool {
        let found = self.peek() == Some(b);
        if found {
            self.advance(1);
        }
        found
    }

    fn expect(&mut self, b: u8) -> Option<()> {
        self.eat(b).then_some(())
    }

    /// The word (`[A-Za-z_][A-Za-z0-9_]*`) at `i`, or "".
    fn word_at(&self, i: usize) -> &'t str {
        let bytes = self.bytes;
        if !bytes.get(i).is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_') {
            return "";
        }
        let mut end = i + 1;
        while bytes.get(end).is_some_and(|&b| is_word_byte(b)) {
            end += 1;
        }
        &self.text[i..end]
    }

    /// True when a string (`"`, or `r"` of a raw one) comes next.
    fn at_string(&mut self) -> bool {
        self.ws();
        self.raw_at(self.pos) || self.bytes.get(self.pos) == Some(&b'"')
    }

    /// True when a raw string starts at `i`.
    fn raw_at(&self, i: usize) -> bool {
        self.bytes.get(i) == Some(&b'r') && self.bytes.get(i + 1) == Some(&b'"')
    }

    /// The next word, not consumed.
    fn peek_word(&mut self) -> &'t str {
        self.ws();
        self.word_at(self.pos)
    }

    /// The next word, consumed ("" when none).
    fn take_word(&mut self) -> &'t str {
        let word = self.peek_word();
        if !word.is_empty() {
            self.advance(word.len());
        }
        word
    }

    /// Consumes the keyword `kw` when it comes next.
    fn keyword(&mut self, kw: K) -> bool {
        let found = self.peek_word() == kw.as_str();
        if found {
            self.advance(kw.as_str().len());
        }
        found
    }

    /// The next word as a keyword, consumed when it is one.
    fn take_keyword(&mut self) -> Option<K> {
        let kw = K::of(self.peek_word())?;
        self.advance(kw.as_str().len());
        Some(kw)
    }

    /// A one-value statement from `start`: its value and its whole span.
    fn setting<T>(
        &mut self,
        start: usize,
        value: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<Setting<T>> {
        let value = value(self)?;
        Some(Setting { value, span: self.span_from(start) })
    }

    fn span_from(&self, start: usize) -> Span {
        Span::new(self.file, start, self.last)
    }

    fn ident(&mut self) -> Option<Ident> {
        let span = self.name()?;
        Some(Ident { name: self.text[span.start as usize..span.end as usize].into(), span })
    }

    /// A name that is not a keyword: where it is.
    fn name(&mut self) -> Option<Span> {
        let start = self.pos_after_ws();
        let word = self.word_at(start);
        if word.is_empty() || RESERVED.contains(&word) || self.raw_at(start) {
            return None;
        }
        self.advance(word.len());
        Some(self.span_from(start))
    }

    fn pos_after_ws(&mut self) -> usize {
        self.ws();
        self.pos
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// `item (, item)* ,? close` after the opening bracket.
    fn list<T>(
        &mut self,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        let mut items = Vec::new();
        if self.eat(close) {
            return Some(items);
        }
        loop {
            items.push(item(self)?);
            if self.eat(b',') {
                if self.eat(close) {
                    return Some(items);
                }
            } else {
                self.expect(close)?;
                return Some(items);
            }
        }
    }

    /// Statement spans must each start on a new line.
    fn lines_ok(&self, spans: &[Span]) -> Option<()> {
        let mut lines = Lines::default();
        spans.iter().try_for_each(|s| lines.add(self.text, s.start as usize, s.end as usize))
    }

    // ------------------------------------------------------------ declarations

    fn file(&mut self) -> Option<File> {
        if self.text.starts_with(BOM) {
            self.advance(BOM.len());
        }
        let mut items = Vec::new();
        let mut spans = Vec::new();
        loop {
            let start = self.pos_after_ws();
            if start == self.bytes.len() {
                break;
            }
            let item = match self.take_keyword()? {
                K::Use => Item::Use(Use { path: self.string()?, span: Span::new(self.file, 0, 0) }),
                K::Tool => Item::Tool(self.tool(start)?),
                K::Agent => Item::Agent(self.agent(start)?),
                K::Provider => Item::Provider(self.provider(start)?),
                K::Contract => Item::Contract(self.contract(start)?),
                K::Type => Item::Type(self.type_decl(start)?),
                K::Enum => Item::Enum(self.enum_decl(start)?),
                K::Test => Item::Test(self.test(start)?),
                K::Mcp => Item::Mcp(self.mcp(start)?),
                K::Eval => Item::Eval(self.eval(start)?),
                _ => return None,
            };
            let span = self.span_from(start);
            items.push(match item {
                Item::Use(u) => Item::Use(Use { span, ..u }),
                other => other,
            });
            spans.push(span);
        }
        self.lines_ok(&spans)?;
        Some(File { items })
    }

    /// The `Name {` of a block; then `statement` for each statement (its
    /// first word taken), whose spans are checked one per line. Returns the
    /// name.
    fn block(
        &mut self,
        mut statement: impl FnMut(&mut Self, &'t str, usize) -> Option<()>,
    ) -> Option<Ident> {
        let name = self.ident()?;
        self.expect(b'{')?;
        let mut lines = Lines::default();
        while !self.eat(b'}') {
            let start = self.pos_after_ws();
            let word = self.take_word();
            statement(self, word, start)?;
            lines.add(self.text, start, self.last)?;
        }
        Some(name)
    }

    fn tool(&mut self, start: usize) -> Option<Tool> {
        let dummy = Span::new(self.file, 0, 0);
        let mut tool = Tool::new(Ident { name: Box::default(), span: dummy }, dummy);
        let name = self.block(|p, word, s| {
            match K::of(word)? {
                K::Description => tool.descriptions.push(p.string()?),
                K::Param => tool.params.push(p.param(s)?),
                K::RequiresCapability => tool.capabilities.extend(p.idents()?),
                K::RequiresApproval => {
                    let when = if p.keyword(K::When) { Some(p.expr()?) } else { None };
                    tool.approvals.push(Setting { value: when, span: p.span_from(s) });
                }
                K::Timeout => tool.timeouts.push(p.number()?),
                K::Retries => tool.retries.push(p.number()?),
                K::Cache => tool.caches.push(p.setting(s, Self::cache)?),
                K::Header => {
                    let name = p.string()?;
                    p.expect(b'=')?;
                    tool.headers.push((name, p.expr()?));
                }
                K::Returns => {
                    let expr = p.expr()?;
                    tool.implementations.push(Implementation::Returns(expr, p.span_from(s)));
                }
                K::Exec => {
                    let mut args = vec![p.string()?];
                    while p.at_string() {
                        args.push(p.string()?);
                    }
                    tool.implementations.push(Implementation::Exec(args, p.span_from(s)));
                }
                K::Http => {
                    let post = match p.take_keyword()? {
                        K::Get => false,
                        K::Post => true,
                        _ => return None,
                    };
                    let url = p.string()?;
                    tool.implementations.push(Implementation::Http {
                        post,
                        url,
                        span: p.span_from(s),
                    });
                }
                K::Builtin => {
                    let name = p.string()?;
                    let config = if p.peek() == Some(b'{') { Some(p.primary()?) } else { None };
                    tool.implementations.push(Implementation::Builtin {
                        name,
                        config,
                        span: p.span_from(s),
                    });
                }
                K::Native => {
                    let name = if p.at_string() { Some(p.string()?) } else { None };
                    tool.implementations.push(Implementation::Native(name, p.span_from(s)));
                }
                K::Mcp => {
                    let server = p.ident()?;
                    let tool_name = p.string()?;
                    tool.implementations.push(Implementation::Mcp {
                        server,
                        tool: tool_name,
                        span: p.span_from(s),
                    });
                }
                K::Result => tool.results.push(p.setting(s, Self::type_expr)?),
                _ => return None,
            }
            Some(())
        })?;
        tool.name = name;
        tool.span = self.span_from(start);
        Some(tool)
    }

    fn agent(&mut self, start: usize) -> Option<Agent> {
        let dummy = Span::new(self.file, 0, 0);
        let mut agent = Agent::new(Ident { name: Box::default(), span: dummy }, dummy);
        let name = self.block(|p, word, s| {
            match K::of(word)? {
                K::Provider => {
                    let mut refs = vec![p.provider_ref()?];
                    if p.keyword(K::Fallback) {
                        refs.push(p.provider_ref()?);
                        while p.eat(b',') {
                            refs.push(p.provider_ref()?);
                        }
                    }
                    agent.providers.push(Setting { value: refs, span: p.span_from(s) });
                }
                K::Model => {
                    let mut models = vec![p.expr()?];
                    if p.keyword(K::Fallback) {
                        models.push(p.expr()?);
                        while p.eat(b',') {
                            models.push(p.expr()?);
                        }
                    }
                    agent.models.push(Setting { value: models, span: p.span_from(s) });
                }
                K::SystemPrompt => agent.system_prompts.push(p.setting(s, Self::string)?),
                K::Tools => agent.tools.extend(p.idents()?),
                K::Capabilities => agent.capabilities.extend(p.idents()?),
                K::MaxToolIterations => {
                    agent.max_tool_iterations.push(p.setting(s, Self::number)?);
                }
                K::Temperature => agent.temperatures.push(p.setting(s, Self::number)?),
                K::MaxTokens => agent.max_tokens.push(p.setting(s, Self::number)?),
                K::Input => agent.inputs.push(p.param(s)?),
                K::Prompt => agent.prompts.push(p.setting(s, Self::string)?),
                K::Result => agent.results.push(p.setting(s, Self::type_expr)?),
                K::ResultRetries => agent.result_retries.push(p.setting(s, Self::number)?),
                K::Cache => agent.caches.push(p.setting(s, Self::cache)?),
                _ => return None,
            }
            Some(())
        })?;
        agent.name = name;
        agent.span = self.span_from(start);
        Some(agent)
    }

    fn provider(&mut self, start: usize) -> Option<Provider> {
        let dummy = Span::new(self.file, 0, 0);
        let mut provider = Provider::new(Ident { name: Box::default(), span: dummy }, dummy);
        let name = self.block(|p, word, s| {
            match K::of(word)? {
                K::Kind => provider.kinds.push(p.ident()?),
                K::BaseUrl => provider.base_urls.push(p.setting(s, Self::expr)?),
                K::ApiKey => provider.api_keys.push(p.setting(s, Self::expr)?),
                K::Timeout => provider.timeouts.push(p.setting(s, Self::number)?),
                K::Retries => provider.retries.push(p.setting(s, Self::number)?),
                K::RateLimit => provider.rate_limits.push(p.setting(s, Self::rate)?),
                K::TokenLimit => provider.token_limits.push(p.setting(s, Self::rate)?),
                K::Price => {
                    let price = p.setting(s, |p| {
                        p.keyword(K::Input).then_some(())?;
                        let input = p.expr()?;
                        p.keyword(K::Output).then_some(())?;
                        Some(Price { input, output: p.expr()? })
                    })?;
                    provider.prices.push(price);
                }
                _ => return None,
            }
            Some(())
        })?;
        provider.name = name;
        provider.span = self.span_from(start);
        Some(provider)
    }

    fn mcp(&mut self, start: usize) -> Option<McpServer> {
        let dummy = Span::new(self.file, 0, 0);
        let mut server = McpServer::new(Ident { name: Box::default(), span: dummy }, dummy);
        let name = self.block(|p, word, s| {
            match K::of(word)? {
                K::Command => {
                    let mut args = vec![p.string()?];
                    while p.at_string() {
                        args.push(p.string()?);
                    }
                    server.commands.push(Setting { value: args, span: p.span_from(s) });
                }
                K::Url => server.urls.push(p.setting(s, Self::string)?),
                K::Env => {
                    let var = p.ident()?;
                    p.expect(b'=')?;
                    server.envs.push((var, p.expr()?));
                }
                K::Header => {
                    let name = p.string()?;
                    p.expect(b'=')?;
                    server.headers.push((name, p.expr()?));
                }
                K::Timeout => server.timeouts.push(p.setting(s, Self::number)?),
                _ => return None,
            }
            Some(())
        })?;
        server.name = name;
        server.span = self.span_from(start);
        Some(server)
    }

    fn type_decl(&mut self, start: usize) -> Option<TypeDecl> {
        let mut fields = Vec::new();
        let name = self.block(|p, word, s| {
            // A field starts with its name, which `block` has already taken.
            if word.is_empty() || RESERVED.contains(&word) {
                return None;
            }
            let name = Ident { name: word.into(), span: p.span_from(s) };
            fields.push(p.param_after_name(name, s)?);
            Some(())
        })?;
        Some(TypeDecl { name, fields, span: self.span_from(start) })
    }

    fn enum_decl(&mut self, start: usize) -> Option<EnumDecl> {
        let name = self.ident()?;
        self.expect(b'{')?;
        let variants = self.list(b'}', Self::ident)?;
        Some(EnumDecl { name, variants, span: self.span_from(start) })
    }

    fn test(&mut self, start: usize) -> Option<Test> {
        let name = self.string()?;
        self.expect(b'{')?;
        let mut statements = Vec::new();
        while !self.eat(b'}') {
            let s = self.pos_after_ws();
            let statement = match self.take_keyword()? {
                K::Run => {
                    let contract = self.ident()?;
                    self.expect(b'(')?;
                    let args = self.list(b')', Self::arg)?;
                    TestStmt::Run { contract, args, span: self.span_from(s) }
                }
                K::Mock => {
                    let tool = self.ident()?;
                    let args =
                        if self.eat(b'(') { Some(self.list(b')', Self::arg)?) } else { None };
                    let answer = match self.take_keyword()? {
                        K::Returns => MockAnswer::Returns(self.expr()?),
                        K::Fails => MockAnswer::Fails(self.string()?),
                        _ => return None,
                    };
                    TestStmt::Mock { tool, args, answer, span: self.span_from(s) }
                }
                K::Replay => TestStmt::Replay(self.string()?, self.span_from(s)),
                K::Expect => TestStmt::Expect(self.expr()?, self.span_from(s)),
                K::ExpectError => TestStmt::ExpectError(self.string()?, self.span_from(s)),
                K::ExpectCalls => {
                    let tool = self.ident()?;
                    let args =
                        if self.eat(b'(') { Some(self.list(b')', Self::arg)?) } else { None };
                    let op = self.infix().filter(|op| op.is_comparison())?;
                    let count = self.expr()?;
                    TestStmt::ExpectCalls { tool, args, op, count, span: self.span_from(s) }
                }
                K::Snapshot => {
                    let calls = self.keyword(K::Calls);
                    TestStmt::Snapshot { calls, span: self.span_from(s) }
                }
                K::Approve => {
                    TestStmt::Decide { tool: self.ident()?, denial: None, span: self.span_from(s) }
                }
                K::Deny => {
                    let tool = self.ident()?;
                    let denial = Some(self.string()?);
                    TestStmt::Decide { tool, denial, span: self.span_from(s) }
                }
                _ => return None,
            };
            statements.push(statement);
        }
        let spans: Vec<Span> = statements.iter().map(TestStmt::span).collect();
        self.lines_ok(&spans)?;
        Some(Test { name, statements, span: self.span_from(start) })
    }

    fn eval(&mut self, start: usize) -> Option<Eval> {
        let name = self.string()?;
        self.expect(b'{')?;
        let mut statements = Vec::new();
        while !self.eat(b'}') {
            let s = self.pos_after_ws();
            let statement = match self.take_keyword()? {
                K::Run => {
                    let contract = self.ident()?;
                    EvalStmt::Run(contract, self.span_from(s))
                }
                K::Dataset => EvalStmt::Dataset(self.string()?, self.span_from(s)),
                K::Repeat => EvalStmt::Repeat(self.expr()?, self.span_from(s)),
                K::Require => EvalStmt::Require(self.expr()?, self.span_from(s)),
                K::Score => {
                    let name = self.ident()?;
                    self.expect(b'=')?;
                    let value = self.expr()?;
                    EvalStmt::Score { name, value, span: self.span_from(s) }
                }
                _ => return None,
            };
            statements.push(statement);
        }
        let spans: Vec<Span> = statements.iter().map(EvalStmt::span).collect();
        self.lines_ok(&spans)?;
        Some(Eval { name, statements, span: self.span_from(start) })
    }

    /// `ident (, ident)*`.
    fn idents(&mut self) -> Option<Vec<Ident>> {
        let mut names = vec![self.ident()?];
        while self.eat(b',') {
            names.push(self.ident()?);
        }
        Some(names)
    }

    /// `N per UNIT` of `rate_limit` and `token_limit`.
    fn rate(&mut self) -> Option<Rate> {
        let count = self.expr()?;
        self.keyword(K::Per).then_some(())?;
        Some(Rate { count, per: self.ident()? })
    }

    fn provider_ref(&mut self) -> Option<ProviderRef> {
        let start = self.pos_after_ws();
        let name = self.ident()?;
        let file = if self.at_string() { Some(self.string()?) } else { None };
        Some(ProviderRef { name, file, span: self.span_from(start) })
    }

    /// A `param` or `input` statement after its keyword at `start`.
    fn param(&mut self, start: usize) -> Option<Param> {
        let name = self.ident()?;
        self.param_after_name(name, start)
    }

    /// The rest of a param, input or record field after its name.
    fn param_after_name(&mut self, name: Ident, start: usize) -> Option<Param> {
        self.expect(b':')?;
        let ty = self.type_expr()?;
        let default = if self.eat(b'=') { Some(self.expr()?) } else { None };
        let description = if self.at_string() { Some(self.string()?) } else { None };
        Some(Param { name, ty, default, description, span: self.span_from(start) })
    }

    fn type_expr(&mut self) -> Option<TypeExpr> {
        self.enter()?;
        let start = self.pos_after_ws();
        let name = self.ident()?;
        let item = if self.eat(b'<') {
            let item = self.type_expr()?;
            self.expect(b'>')?;
            Some(Box::new(item))
        } else {
            None
        };
        let nullable = self.eat(b'?');
        self.depth -= 1;
        Some(TypeExpr { name, item, nullable, span: self.span_from(start) })
    }

    // ------------------------------------------------------------ expressions

    fn expr(&mut self) -> Option<Expr> {
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
    fn operator(&mut self) -> Option<()> {
        self.operators += 1;
        (self.operators <= MAX_OPERATORS).then_some(())
    }

    /// A binary operator, consumed.
    fn infix(&mut self) -> Option<BinaryOp> {
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

    fn primary(&mut self) -> Option<Expr> {
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
    fn control(&mut self, keyword: K) -> Option<ExprKind> {
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
    fn match_arm(&mut self) -> Option<MatchArm> {
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
    fn arg(&mut self) -> Option<Arg> {
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
    fn entry(&mut self) -> Option<(Ident, Expr)> {
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

    /// The optional duration of `cache`: digits and a unit (`7d`), or none
    /// when the next token is not a number.
    fn cache(&mut self) -> Option<Option<String>> {
        let start = self.pos_after_ws();
        let bytes = self.bytes;
        let mut end = start;
        while bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        if end == start {
            return Some(None);
        }
        let unit = matches!(bytes.get(end), Some(b's' | b'm' | b'h' | b'd'));
        if !unit || bytes.get(end + 1).is_some_and(|&b| is_word_byte(b)) {
            return None;
        }
        self.advance(end + 1 - self.pos);
        Some(Some(self.text[start..=end].to_owned()))
    }

    /// An integer or float literal.
    fn number(&mut self) -> Option<Expr> {
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
    fn string(&mut self) -> Option<Expr> {
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
