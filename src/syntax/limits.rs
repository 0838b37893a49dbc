//! Size limits checked on the raw text, before either parser runs.
//!
//! Both parsers, lowering and evaluation recurse once per level of an
//! expression, and pest builds a pair per token before anything else can
//! look at them. One linear scan of the bytes bounds all of that before
//! pest recurses: brackets (and string interpolations) nest at most
//! [`MAX_NESTING`] deep, at most [`MAX_NESTING`] `if`, `match`, `for` and
//! `try` keywords are open at once (an `else if` chain nests without
//! brackets), and at most [`MAX_OPERATORS`] operators are.
//!
//! The limits count nesting the way the grammar nests, so that no program
//! the grammar accepts is refused for its length. Keywords and operators
//! are counted per bracket level, for the expression being read at that
//! level, and the count of a level starts again where its expression ends:
//! at a `,` (arguments, elements, entries, `match` arms), at a closing
//! bracket (the whole level goes), and where an operand follows a complete
//! operand. Two operands are never adjacent inside an expression, so a
//! name, a number or a string right after a name, a literal or a closing
//! bracket starts the next expression: the next statement, a `match` arm's
//! pattern, or a description after a default. The words that continue an
//! expression after an operand (`then`, `else`, `and`, `or`, `in`, the
//! `if` of a `for` filter, `not`) do not end it. A flat `match` of many
//! arms, each holding an `if`, therefore counts one arm at a time, while a
//! chain that really nests (`else if`, `for ...: try ...`, `- - -`) adds up
//! however it is split across lines.
//!
//! A type's `<...>` (`array<integer>`) is a bracket, not two operators:
//! after `param NAME:`, `input NAME:`, `result` and a field's `NAME:` in a
//! `type` body, a `<` right after the type's name opens a level that its
//! `>` closes, and the type completes an operand. Counted as operators,
//! the types of a long list of statements added up: a record of 251
//! `array<integer>` fields was refused as too long.
//!
//! This pre-scan stays a reader of its own (rather than a depth counter in
//! each parser) because pest has no depth limit: the scan is what keeps
//! pest, the reference parser, from overflowing the stack on hostile input.
//! It knows strings, interpolations and comments but not the rest of the
//! grammar, and it only ever counts too much on invalid text.

use crate::diagnostic::{Code, Diagnostic};
use crate::source::{FileId, Span};

/// Deepest bracket nesting, and most `if`/`match`/`for`/`try` open at once.
pub(super) const MAX_NESTING: usize = 256;

/// Most operators (infix, prefix, `.field`, `[index]`) open at once: in the
/// expressions being read at every open bracket level together. One level
/// of an expression then has at most `2 × 500 + 1` operators and operands,
/// which bounds the Pratt parsers' recursion and the depth of the tree.
pub(super) const MAX_OPERATORS: usize = 500;

/// Where the scan is: in code, or in a string (triple-quoted, raw or
/// neither).
#[derive(Clone, Copy)]
enum Frame {
    /// Inside a string literal.
    Text { triple: bool, raw: bool },
    /// Inside `{...}` of a string, opened at this bracket depth by the `{`
    /// at byte `start`.
    Interpolation { depth: usize, start: usize },
}

/// The keywords and operators of the expression being read at one bracket
/// level.
#[derive(Clone, Copy, Default)]
struct Level {
    keywords: usize,
    operators: usize,
    /// The code bracket that opened the level (`(`, `[`, `{`, a type's
    /// `<`) and where; `None` for the file and for a string's `{...}`.
    opened: Option<(usize, u8)>,
    /// The `{` of `type Name {`: its statements are fields.
    fields: bool,
}

/// A token of code, as far as finding where a type is read needs it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Token {
    /// A word or a number, by its place.
    Word(usize, usize),
    /// `(`, `[` or `{`.
    Open,
    /// Anything else.
    Other,
}

/// Where the scan is in reading a type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Typing {
    /// Not in a type.
    No,
    /// A type's name comes next.
    Name,
    /// A type's name was the last token: a `<` opens its argument.
    Named,
}

/// The first limit `text` breaks, as a diagnostic.
pub(super) fn check(file: FileId, text: &str) -> Option<Diagnostic> {
    Scan::new(text).run().map(|(at, limit)| {
        let span = Span::new(file, at, at + 1);
        match limit {
            Limit::Depth => Diagnostic::error(Code::Syntax, span, "expression nests too deeply")
                .label(format!("more than {MAX_NESTING} levels deep"))
                .help("split the expression into several `compute` nodes"),
            Limit::Ifs => Diagnostic::error(Code::Syntax, span, "expression nests too deeply")
                .label(format!(
                    "more than {MAX_NESTING} `if`, `match`, `for` or `try` in one expression"
                ))
                .help("split the chain into several `compute` nodes"),
            Limit::Operators => Diagnostic::error(Code::Syntax, span, "expression is too long")
                .label(format!("more than {MAX_OPERATORS} operators"))
                .help("split it into several `compute` nodes"),
        }
    })
}

/// Which limit was broken.
enum Limit {
    Depth,
    Ifs,
    Operators,
}

struct Scan<'t> {
    bytes: &'t [u8],
    pos: usize,
    frames: Vec<Frame>,
    /// The open bracket levels, the file's top level first: the depth is
    /// one less than their number.
    levels: Vec<Level>,
    /// The keywords of all open levels together.
    keywords: usize,
    /// The operators of all open levels together.
    operators: usize,
    /// The last token ends an operand: an operand after it starts the next
    /// expression.
    complete: bool,
    /// The last two tokens of code, the last first, and whether the one
    /// before the last ended an operand.
    recent: [Token; 2],
    complete_before: bool,
    typing: Typing,
}

/// Where the `{` is when byte `at` of `text` is inside a string's
/// `{...}`: a syntax error there is often a literal brace that needed `\{`.
pub(super) fn interpolation_start(text: &str, at: usize) -> Option<usize> {
    let mut scan = Scan::new(text);
    while scan.pos < at.min(text.len()) {
        scan.step();
    }
    match scan.frames.last() {
        Some(&Frame::Interpolation { start, .. }) => Some(start),
        _ => None,
    }
}

/// Where the innermost `{` of code that is still open at the end of
/// `text` is (strings, their `{...}` and comments are skipped): a block
/// that was never closed.
pub(super) fn unclosed_brace(text: &str) -> Option<usize> {
    let mut scan = Scan::new(text);
    while scan.pos < text.len() {
        scan.step();
    }
    scan.levels.iter().rev().find_map(|level| match level.opened {
        Some((at, b'{')) => Some(at),
        _ => None,
    })
}

/// True when each of `offsets` (ascending) is in code at the top level of
/// `text`: outside every bracket, string and string `{...}`. A top-level
/// declaration of a file that parses cannot span such a place (its body
/// is a `{...}`), which is what lets recovery's chunks stand for the file.
pub(super) fn at_top_level(text: &str, offsets: &[usize]) -> bool {
    let mut scan = Scan::new(text);
    offsets.iter().all(|&at| {
        while scan.pos < at {
            scan.step();
        }
        scan.pos == at && scan.frames.is_empty() && scan.depth() == 0
    })
}

impl<'t> Scan<'t> {
    fn new(text: &'t str) -> Self {
        Scan {
            bytes: text.as_bytes(),
            pos: 0,
            frames: Vec::new(),
            levels: vec![Level::default()],
            keywords: 0,
            operators: 0,
            complete: false,
            recent: [Token::Other; 2],
            complete_before: false,
            typing: Typing::No,
        }
    }

    fn run(mut self) -> Option<(usize, Limit)> {
        while self.pos < self.bytes.len() {
            // Whitespace and comments change nothing: skipped here, not
            // stepped over.
            if !matches!(self.frames.last(), Some(Frame::Text { .. })) && self.space() {
                continue;
            }
            let at = self.pos;
            self.step();
            if self.depth() > MAX_NESTING {
                return Some((at, Limit::Depth));
            }
            if self.keywords > MAX_NESTING {
                return Some((at, Limit::Ifs));
            }
            if self.operators > MAX_OPERATORS {
                return Some((at, Limit::Operators));
            }
        }
        None
    }

    fn depth(&self) -> usize {
        self.levels.len() - 1
    }

    fn open(&mut self, opened: Option<(usize, u8)>) {
        self.levels.push(Level { opened, ..Level::default() });
    }

    /// Skips a run of whitespace and comments in code; false when there is
    /// none here.
    fn space(&mut self) -> bool {
        let start = self.pos;
        loop {
            match self.at(0) {
                b' ' | b'\t' | b'\r' | b'\n' => self.pos += 1,
                b'#' => {
                    while self.pos < self.bytes.len() && self.at(0) != b'\n' {
                        self.pos += 1;
                    }
                }
                _ => return self.pos > start,
            }
        }
    }

    /// The text of `token` when it is a word.
    fn word_of(&self, token: Token) -> Option<&'t [u8]> {
        match token {
            Token::Word(start, end) => Some(&self.bytes[start..end]),
            _ => None,
        }
    }

    /// A `:` after the last token starts a type: the `:` of `param NAME`,
    /// `input NAME`, or a field's name (first in its `type` body, or after
    /// a complete field). In an expression a name before a `:` (that of a
    /// `for`'s items or filter) follows an operator or a keyword.
    fn type_follows(&self) -> bool {
        if self.word_of(self.recent[0]).is_none() {
            return false;
        }
        matches!(self.word_of(self.recent[1]), Some(b"param" | b"input"))
            || (self.levels.last().is_some_and(|level| level.fields)
                && (self.recent[1] == Token::Open || self.complete_before))
    }

    /// A closing bracket: its level's expression ends with it.
    fn close(&mut self) {
        if self.levels.len() > 1 {
            self.end_expression();
            self.levels.pop();
        }
    }

    /// The expression being read at the current level has ended.
    fn end_expression(&mut self) {
        if let Some(level) = self.levels.last_mut() {
            self.keywords -= level.keywords;
            self.operators -= level.operators;
            level.keywords = 0;
            level.operators = 0;
        }
    }

    fn count(&mut self, keywords: usize, operators: usize) {
        if let Some(level) = self.levels.last_mut() {
            level.keywords += keywords;
            level.operators += operators;
            self.keywords += keywords;
            self.operators += operators;
        }
    }

    fn step(&mut self) {
        match self.frames.last() {
            Some(&Frame::Text { raw: true, .. }) => self.raw_text(),
            Some(&Frame::Text { triple, .. }) => self.text(triple),
            _ => self.code(),
        }
    }

    fn at(&self, offset: usize) -> u8 {
        self.bytes.get(self.pos + offset).copied().unwrap_or(0)
    }

    fn triple_quote(&self) -> bool {
        self.at(0) == b'"' && self.at(1) == b'"' && self.at(2) == b'"'
    }

    /// One step inside a string.
    fn text(&mut self, triple: bool) {
        match self.at(0) {
            b'\\' => self.pos += 2,
            b'{' => {
                self.frames.push(Frame::Interpolation { depth: self.depth(), start: self.pos });
                self.open(None);
                self.complete = false;
                self.pos += 1;
            }
            b'"' if !triple || self.triple_quote() => {
                self.frames.pop();
                self.complete = true;
                self.pos += if triple { 3 } else { 1 };
            }
            // A plain string ends at the line (pest reports it).
            b'\n' if !triple => {
                self.frames.pop();
                self.pos += 1;
            }
            _ => self.pos += 1,
        }
    }

    /// One step inside a raw string: it ends at the next `"` or the line.
    fn raw_text(&mut self) {
        match self.at(0) {
            b'"' => {
                self.frames.pop();
                self.complete = true;
            }
            b'\n' => {
                self.frames.pop();
            }
            _ => {}
        }
        self.pos += 1;
    }

    /// One token of code.
    fn code(&mut self) {
        if self.space() {
            return;
        }
        let b = self.at(0);
        let start = self.pos;
        let was_complete = self.complete;
        let typing = std::mem::replace(&mut self.typing, Typing::No);
        let mut token = Token::Other;
        let mut complete = false;
        match b {
            b'"' => {
                if self.complete {
                    self.end_expression();
                }
                let triple = self.triple_quote();
                self.frames.push(Frame::Text { triple, raw: false });
                self.pos += if triple { 3 } else { 1 };
                self.remember(Token::Other, was_complete);
                return;
            }
            b'(' | b'[' | b'{' => {
                // `[` after an operand indexes it; elsewhere it opens a list.
                if b == b'[' && self.complete {
                    self.count(0, 1);
                }
                let fields = b == b'{'
                    && self.word_of(self.recent[0]).is_some()
                    && self.word_of(self.recent[1]) == Some(b"type");
                self.open(Some((self.pos, b)));
                if let Some(level) = self.levels.last_mut() {
                    level.fields = fields;
                }
                token = Token::Open;
                self.pos += 1;
            }
            b')' | b']' | b'}' => {
                self.close();
                if let Some(&Frame::Interpolation { depth, .. }) = self.frames.last()
                    && b == b'}'
                    && depth == self.depth()
                {
                    self.frames.pop();
                }
                complete = true;
                self.pos += 1;
            }
            b',' => {
                self.end_expression();
                self.pos += 1;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'0'..=b'9' => {
                complete = self.word();
                token = Token::Word(start, self.pos);
                self.typing = match (typing, self.word_of(token)) {
                    (Typing::Name, _) => Typing::Named,
                    (_, Some(b"result")) => Typing::Name,
                    _ => Typing::No,
                };
            }
            b':' => {
                if self.type_follows() {
                    self.typing = Typing::Name;
                }
                self.pos += 1;
            }
            // A type's argument: a bracket, closed by its `>`.
            b'<' if typing == Typing::Named => {
                self.open(Some((self.pos, b)));
                self.typing = Typing::Name;
                self.pos += 1;
            }
            b'>' if matches!(self.levels.last(), Some(Level { opened: Some((_, b'<')), .. })) => {
                self.close();
                complete = true;
                self.pos += 1;
            }
            // `?` is only ever a type's (`string?`), which it completes.
            b'?' => {
                complete = true;
                self.pos += 1;
            }
            b'=' if self.at(1) == b'>' => self.pos += 2,
            b'=' if self.at(1) == b'=' => {
                self.count(0, 1);
                self.pos += 2;
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'<' | b'>' | b'!' | b'.' => {
                self.count(0, 1);
                self.pos += 1 + usize::from(self.at(1) == b'=' && b != b'.');
            }
            _ => self.pos += 1,
        }
        self.complete = complete;
        if self.frames.last().is_some_and(|f| matches!(f, Frame::Text { raw: true, .. })) {
            // `r"`: the word `r` opened a raw string.
            token = Token::Other;
        }
        self.remember(token, was_complete);
    }

    /// `token` was the last token of code; an operand was complete before
    /// it when `complete_before`.
    fn remember(&mut self, token: Token, complete_before: bool) {
        self.recent = [token, self.recent[0]];
        self.complete_before = complete_before;
    }

    /// A word or a number; true when it completes an operand.
    fn word(&mut self) -> bool {
        let start = self.pos;
        loop {
            let rest = &self.bytes[self.pos..];
            self.pos += rest
                .iter()
                .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
                .unwrap_or(rest.len());
            // A fraction's `.` (`1.5`) continues the number.
            if !(self.at(0) == b'.' && self.at(1).is_ascii_digit() && self.at_digit(-1)) {
                break;
            }
            self.pos += 1;
        }
        let word = &self.bytes[start..self.pos];
        if word == b"r" && self.at(0) == b'"' {
            // `r"` starts a raw string.
            if self.complete {
                self.end_expression();
            }
            self.frames.push(Frame::Text { triple: false, raw: true });
            self.pos += 1;
            return false;
        }
        let continues = matches!(word, b"then" | b"else" | b"and" | b"or" | b"in" | b"if" | b"not");
        if self.complete && !continues {
            // An operand after a complete operand starts the next expression.
            self.end_expression();
        }
        match word {
            b"if" | b"match" | b"for" | b"try" => self.count(1, 0),
            b"and" | b"or" | b"not" => self.count(0, 1),
            _ => {}
        }
        !matches!(
            word,
            b"if"
                | b"then"
                | b"else"
                | b"and"
                | b"or"
                | b"not"
                | b"match"
                | b"for"
                | b"in"
                | b"try"
        )
    }

    fn at_digit(&self, offset: isize) -> bool {
        self.pos
            .checked_add_signed(offset)
            .and_then(|i| self.bytes.get(i))
            .is_some_and(u8::is_ascii_digit)
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_NESTING, MAX_OPERATORS, check};
    use crate::source::FileId;

    fn broken(text: &str) -> Option<String> {
        check(FileId(0), text).map(|d| d.message)
    }

    #[test]
    fn an_else_if_chain_across_lines_counts() {
        let mut text = String::from("contract C {\n  compute x = ");
        for i in 0..=MAX_NESTING {
            text.push_str(&format!("if a == {i} then {i}\n    else "));
        }
        text.push_str("0\n}\n");
        assert_eq!(broken(&text).as_deref(), Some("expression nests too deeply"));
    }

    #[test]
    fn for_and_try_chains_count() {
        let chain = "for x in xs: try ".repeat(MAX_NESTING / 2 + 1);
        let text = format!("contract C {{\n  compute y = {chain}f(x)\n}}\n");
        assert_eq!(broken(&text).as_deref(), Some("expression nests too deeply"));
    }

    #[test]
    fn ifs_of_separate_statements_do_not_add_up() {
        let lines = "  compute x = if a then b else c\n".repeat(MAX_NESTING * 2);
        assert_eq!(broken(&format!("contract C {{\n{lines}}}\n")), None);
    }

    #[test]
    fn a_flat_match_counts_one_arm_at_a_time() {
        let mut arms = String::new();
        for i in 0..MAX_NESTING * 2 {
            arms.push_str(&format!("    {i} => if a > {i} then -a.b[0] else not c\n"));
            arms.push_str(&format!("    \"s{i}\" => for x in xs if x > 1: try f(x), _ => 1\n"));
        }
        let text = format!("contract C {{\n  compute x = match a {{\n{arms}  }}\n}}\n");
        assert_eq!(broken(&text), None);
    }

    #[test]
    fn long_lists_and_calls_count_one_element_at_a_time() {
        let elements = "if a then b + 1 else c * 2, ".repeat(MAX_OPERATORS * 2);
        let text = format!("contract C {{\n  compute x = f([{elements}], {elements})\n}}\n");
        assert_eq!(broken(&text), None);
    }

    #[test]
    fn chains_across_brackets_and_filters_add_up() {
        let filters = "for a in b if c: ".repeat(MAX_NESTING + 1);
        let text = format!("contract C {{\n  compute y = {filters}a\n}}\n");
        assert_eq!(broken(&text).as_deref(), Some("expression nests too deeply"));
        let arms = "match a { 1 => 2\n _ => if a then b else ".repeat(MAX_NESTING / 2 + 1);
        let text = format!("contract C {{\n  compute y = {arms}a\n}}\n");
        assert_eq!(broken(&text).as_deref(), Some("expression nests too deeply"));
        let sums = "(a + a + ".repeat(MAX_OPERATORS / 2 + 1);
        let text = format!("contract C {{\n  compute y = {sums}a\n}}\n");
        assert_eq!(broken(&text).as_deref(), Some("expression is too long"));
    }

    #[test]
    fn operators_are_counted_per_expression() {
        let long =
            format!("contract C {{\n  compute x = 1{}\n}}\n", " + 1".repeat(MAX_OPERATORS + 1));
        assert_eq!(broken(&long).as_deref(), Some("expression is too long"));
        let many = "  compute x = a.b + c[0] - -1.5 * not d\n".repeat(MAX_OPERATORS);
        assert_eq!(broken(&format!("contract C {{\n{many}}}\n")), None);
    }

    #[test]
    fn types_are_brackets_not_operators() {
        let many = MAX_OPERATORS;
        let fields = "  f: array<integer>\n  g: array<map<string>>? = [] \"d\"\n".repeat(many);
        let inputs = "  input i: array<integer>\n  input j: array<string>? \"d\"\n".repeat(many);
        let params = "  param p: array<integer>? \"d\"\n  param q: array<array<string>>\n";
        let params = params.repeat(many);
        let result = "  result array<Item>\n  result map<array<Item>>?\n".repeat(many);
        for text in [
            format!("type R {{\n{fields}}}\n"),
            format!("contract C {{\n{inputs}  compute y = a > b\n}}\n"),
            format!("tool T {{\n  description \"d\"\n{params}}}\n"),
            format!("agent A {{\n{result}}}\n"),
        ] {
            assert_eq!(broken(&text), None, "{}", &text[..40]);
            assert!(crate::syntax::parse(FileId(0), &text).is_ok(), "{}", &text[..40]);
        }
        // A type nests as brackets do.
        let deep = format!(
            "type R {{\n  f: {}integer{}\n}}\n",
            "array<".repeat(MAX_NESTING + 1),
            ">".repeat(MAX_NESTING + 1)
        );
        assert_eq!(broken(&deep).as_deref(), Some("expression nests too deeply"));
    }

    #[test]
    fn comparisons_stay_operators_beside_types() {
        let chain = " < a > b".repeat(MAX_OPERATORS / 2 + 1);
        for text in [
            format!("contract C {{\n  input x: array<integer>\n  compute y = x{chain}\n}}\n"),
            format!("type R {{\n  f: integer = for x in xs: x{chain}\n}}\n"),
            format!("type R {{\n  f: integer = for x in xs if a: b{chain}\n}}\n"),
            format!("agent A {{\n  result R\n  input x: integer = result{chain}\n}}\n"),
        ] {
            assert_eq!(broken(&text).as_deref(), Some("expression is too long"), "{text}");
        }
    }

    #[test]
    fn strings_and_comments_hold_no_code() {
        let text = format!(
            "# {}\ncontract C {{\n  compute x = \"{}\\{{ if {{a + b}}\" + \"\"\"\n{}\n\"\"\"\n}}\n",
            "((((".repeat(MAX_NESTING),
            "- if ".repeat(MAX_OPERATORS),
            "[ if -".repeat(MAX_OPERATORS)
        );
        assert_eq!(broken(&text), None);
    }

    #[test]
    fn finds_interpolations() {
        let text = r#"prompt "a \{ {"k": 1} b" {x}"#;
        let inside = text.find(':').expect("colon");
        assert_eq!(super::interpolation_start(text, inside), text.find("{\"k"));
        assert_eq!(super::interpolation_start(text, text.find('b').expect("b")), None);
        assert_eq!(super::interpolation_start(text, text.len() - 1), None);
        let raw = r#"prompt r"a \{ {x" "{y}""#;
        assert_eq!(super::interpolation_start(raw, raw.find('x').expect("x")), None);
        assert!(super::interpolation_start(raw, raw.find('y').expect("y")).is_some());
    }

    #[test]
    fn interpolations_nest() {
        let text = format!("contract C {{\n  compute x = {}\n}}\n", "\"{".repeat(MAX_NESTING));
        assert_eq!(broken(&text).as_deref(), Some("expression nests too deeply"));
    }
}
