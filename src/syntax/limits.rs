//! Size limits checked on the raw text, before either parser runs.
//!
//! Both parsers, lowering and evaluation recurse once per level of an
//! expression, and pest builds a pair per token before anything else can
//! look at them. One linear scan of the bytes bounds all of that: brackets
//! (and string interpolations) nest at most [`MAX_NESTING`] deep, and one
//! expression holds at most [`MAX_NESTING`] `if`, `match`, `for` and `try`
//! keywords (an `else if` chain nests without brackets) and
//! [`MAX_OPERATORS`] operators.
//!
//! The scan knows strings, interpolations and comments but not the
//! grammar. An expression ends where a word follows a complete operand (a
//! name, a literal, a closing bracket) and is not `then`, `else`, `and`,
//! `or` or `in`: in every valid file that word starts the next statement
//! (or a `match` arm).

use crate::diagnostic::{Code, Diagnostic};
use crate::source::{FileId, Span};

/// Deepest bracket nesting, and most `if`/`match`/`for`/`try` in one
/// expression.
pub(super) const MAX_NESTING: usize = 256;

/// Most operators (infix, prefix, `.field`, `[index]`) in one expression.
/// One level of an expression then has at most `2 × 500 + 1` operators and
/// operands, which bounds the Pratt parsers' recursion.
pub(super) const MAX_OPERATORS: usize = 500;

/// Where the scan is: in code, or in a string (triple-quoted or not).
#[derive(Clone, Copy)]
enum Frame {
    /// Inside a string literal.
    Text { triple: bool },
    /// Inside `{...}` of a string, opened at this bracket depth.
    Interpolation { depth: usize },
}

/// The first limit `text` breaks, as a diagnostic.
pub(super) fn check(file: FileId, text: &str) -> Option<Diagnostic> {
    Scan { bytes: text.as_bytes(), ..Scan::default() }.run().map(|(at, limit)| {
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

#[derive(Default)]
struct Scan<'t> {
    bytes: &'t [u8],
    pos: usize,
    depth: usize,
    frames: Vec<Frame>,
    ifs: usize,
    operators: usize,
    /// The last token ends an operand: a word after it may start a statement.
    complete: bool,
}

/// True when byte `at` of `text` is inside a string's `{...}`: a syntax
/// error there is often a literal brace that needed `\{`.
pub(super) fn in_interpolation(text: &str, at: usize) -> bool {
    let mut scan = Scan { bytes: text.as_bytes(), ..Scan::default() };
    while scan.pos < at.min(text.len()) {
        scan.step();
    }
    matches!(scan.frames.last(), Some(Frame::Interpolation { .. }))
}

impl Scan<'_> {
    fn run(mut self) -> Option<(usize, Limit)> {
        while self.pos < self.bytes.len() {
            let at = self.pos;
            self.step();
            if self.depth > MAX_NESTING {
                return Some((at, Limit::Depth));
            }
            if self.ifs > MAX_NESTING {
                return Some((at, Limit::Ifs));
            }
            if self.operators > MAX_OPERATORS {
                return Some((at, Limit::Operators));
            }
        }
        None
    }

    fn step(&mut self) {
        match self.frames.last() {
            Some(&Frame::Text { triple }) => self.text(triple),
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
                self.frames.push(Frame::Interpolation { depth: self.depth });
                self.depth += 1;
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

    /// One token of code.
    fn code(&mut self) {
        let b = self.at(0);
        let mut complete = false;
        match b {
            b' ' | b'\t' | b'\r' | b'\n' => {
                self.pos += 1;
                return;
            }
            b'#' => {
                while self.pos < self.bytes.len() && self.at(0) != b'\n' {
                    self.pos += 1;
                }
                return;
            }
            b'"' => {
                let triple = self.triple_quote();
                self.frames.push(Frame::Text { triple });
                self.pos += if triple { 3 } else { 1 };
                return;
            }
            b'(' | b'[' | b'{' => {
                self.depth += 1;
                self.operators += usize::from(b == b'[');
                self.pos += 1;
            }
            b')' | b']' | b'}' => {
                self.depth = self.depth.saturating_sub(1);
                if let Some(&Frame::Interpolation { depth }) = self.frames.last()
                    && b == b'}'
                    && depth == self.depth
                {
                    self.frames.pop();
                }
                complete = true;
                self.pos += 1;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'0'..=b'9' => {
                complete = self.word();
            }
            b'=' if self.at(1) == b'=' => {
                self.operators += 1;
                self.pos += 2;
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'<' | b'>' | b'!' | b'.' => {
                self.operators += 1;
                self.pos += 1 + usize::from(self.at(1) == b'=' && b != b'.');
            }
            _ => self.pos += 1,
        }
        self.complete = complete;
    }

    /// A word or a number; true when it completes an operand.
    fn word(&mut self) -> bool {
        let start = self.pos;
        while self.pos < self.bytes.len() {
            let b = self.at(0);
            let fraction = b == b'.' && self.at(1).is_ascii_digit() && self.at_digit(-1);
            if !(b.is_ascii_alphanumeric() || b == b'_' || fraction) {
                break;
            }
            self.pos += 1;
        }
        let word = &self.bytes[start..self.pos];
        let continues = matches!(word, b"then" | b"else" | b"and" | b"or" | b"in");
        if self.complete && !continues {
            // The word after a complete operand starts the next statement.
            self.ifs = 0;
            self.operators = 0;
        }
        match word {
            b"if" | b"match" | b"for" | b"try" => self.ifs += 1,
            b"and" | b"or" | b"not" => self.operators += 1,
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
    fn operators_are_counted_per_expression() {
        let long =
            format!("contract C {{\n  compute x = 1{}\n}}\n", " + 1".repeat(MAX_OPERATORS + 1));
        assert_eq!(broken(&long).as_deref(), Some("expression is too long"));
        let many = "  compute x = a.b + c[0] - -1.5 * not d\n".repeat(MAX_OPERATORS);
        assert_eq!(broken(&format!("contract C {{\n{many}}}\n")), None);
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
        assert!(super::in_interpolation(text, inside));
        assert!(!super::in_interpolation(text, text.find('b').expect("b")));
        assert!(!super::in_interpolation(text, text.len() - 1));
    }

    #[test]
    fn interpolations_nest() {
        let text = format!("contract C {{\n  compute x = {}\n}}\n", "\"{".repeat(MAX_NESTING));
        assert_eq!(broken(&text).as_deref(), Some("expression nests too deeply"));
    }
}
