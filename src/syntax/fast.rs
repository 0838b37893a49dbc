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
//!
//! This file holds the reader (position, whitespace, words, blocks, the
//! file's declarations in turn); a contract's body is read in
//! `contract.rs`, the other declarations in `items.rs`, expressions in
//! `expr.rs`, as pest's builders are split (`syntax/items.rs`,
//! `syntax/expr.rs`).

use self::contract::Split;
use crate::ast::{File, Ident, Item, Keyword as K, RESERVED, Setting, Use};
use crate::source::{FileId, Span};

/// The UTF-8 byte order mark some editors write first; pest's `bom`.
const BOM: &str = "\u{feff}";

/// Deepest recursion of expressions and types; deeper input goes to pest.
const MAX_DEPTH: usize = 200;

/// Most prefix operators before one operand; more go to pest.
const MAX_PREFIXES: usize = 64;

mod contract;
mod expr;
mod items;

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
}
