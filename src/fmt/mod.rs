//! The formatter behind `ignite fmt` and the language server's
//! formatting: `.ign` text to the same program in the one canonical
//! layout.
//!
//! Entry: [`format()`]`(source) -> Result<String, FmtError>`, a pure
//! function of the text (the signature the language server calls; it stays
//! stable). Input: a file's text. Output: the formatted text, or
//! [`FmtError::Syntax`] with the syntax diagnostics of a file that does not
//! parse (such a file is never formatted), or [`FmtError::Unsafe`] when
//! the result would break a guarantee (a bug of the formatter: the caller
//! writes nothing).
//!
//! It prints the syntax tree of [`crate::syntax::parse`] (no parser of its
//! own): `print.rs` builds a `doc::Doc` per statement that `doc.rs` lays
//! out at [`WIDTH`] columns as it goes. Comments, which the grammar skips, are recovered from
//! the text by span (`comments.rs`). Before answering, [`format()`] checks
//! its three guarantees on the result: it parses to the same tree, spans
//! and parentheses aside (`strip.rs`); it has the same comments in the
//! same order; and formatting it again changes nothing.
//!
//! The layout: 2-space indentation, one statement per line in source
//! order, single spaces around binary operators and after `,` and `:`, at
//! most one blank line inside a block (blank lines are kept, runs of them
//! shortened), exactly one between top-level declarations (consecutive
//! `use` lines may stay together), calls, arrays, objects and enums
//! flat when they fit in 100 columns, else one item per line with a
//! trailing comma, `match` arms one per line. Strings and numbers are kept
//! as written; parentheses are printed where precedence needs them, and
//! only there. A comment stays on its line after the code before it, or on
//! a line of its own; a comment inside an expression moves to the next
//! place a line may end.

mod comments;
mod doc;
mod print;
mod strip;

use crate::ast;
use crate::diagnostic::Diagnostics;
use crate::source::{FileId, Span};

/// The width lines are wrapped at.
pub const WIDTH: usize = 100;

/// Why a text was not formatted.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FmtError {
    /// The text does not parse: its syntax diagnostics (spans in
    /// [`FileId`] 0).
    #[error("the file has syntax errors")]
    Syntax(Diagnostics),
    /// The formatted text would break a guarantee (a formatter bug): what
    /// broke. Nothing should be written.
    #[error("internal error: formatting would {0}; the file is left as it is")]
    Unsafe(&'static str),
}

/// Formats one file's text in the canonical layout.
///
/// # Errors
/// [`FmtError::Syntax`] when `source` does not parse, and
/// [`FmtError::Unsafe`] when the result would not parse to the same tree,
/// would lose or reorder a comment, or would change when formatted again.
pub fn format(source: &str) -> Result<String, FmtError> {
    // Each tree is printed with its places, then stripped of them in place
    // for the comparison: no copy of a tree is made.
    let mut expected = crate::syntax::parse(FileId(0), source).map_err(FmtError::Syntax)?;
    let expected_comments = comments::comments(source, strip::strings(&mut expected, source));
    let formatted = render(&expected, source, &expected_comments);
    strip::strip(&mut expected, source);
    let mut again = crate::syntax::parse(FileId(0), &formatted)
        .map_err(|_| FmtError::Unsafe("produce text that does not parse"))?;
    let found_comments = comments::comments(&formatted, strip::strings(&mut again, &formatted));
    let stable = render(&again, &formatted, &found_comments) == formatted;
    strip::strip(&mut again, &formatted);
    if again != expected {
        return Err(FmtError::Unsafe("change the syntax tree"));
    }
    let texts = |c: &[comments::Comment]| c.iter().map(|c| c.text.clone()).collect::<Vec<_>>();
    if texts(&found_comments) != texts(&expected_comments) {
        return Err(FmtError::Unsafe("lose, add or reorder a comment"));
    }
    if !stable {
        return Err(FmtError::Unsafe("not be stable (formatting it again changes it)"));
    }
    Ok(formatted)
}

/// Where `text` (parsed as `file`) is not code: its string literals and
/// its comments, in order (what the language server's keyword tokens
/// skip).
#[must_use]
pub fn text_spans(file: &ast::File, text: &str) -> Vec<Span> {
    let strings = strip::strings(&mut file.clone(), text);
    let comments = comments::comments(text, strings.clone());
    let mut spans = strings;
    spans.extend(comments.iter().map(|c| Span::new(FileId(0), c.start, c.start + c.text.len())));
    spans.sort_by_key(|s| s.start);
    spans
}

fn render(file: &ast::File, source: &str, comments: &[comments::Comment]) -> String {
    // The layout mostly adds spaces: a quarter more than the source is
    // room enough to write it without growing the string.
    print::print(file, source, comments, WIDTH, source.len() + source.len() / 4)
}
