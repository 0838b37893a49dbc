//! Parsing: `.ign` text to [`ast::File`].
//!
//! Input: one [`SourceFile`](crate::source::SourceFile)'s text. Output: the
//! AST, or every syntax error found. This is the only module that touches
//! pest: `Pair`s never leave it.
//!
//! Recovery: when the whole file does not parse, each top-level declaration
//! (from a line starting in column 0 with `use`, `tool`, `agent`, `provider`
//! or `contract`) is parsed on its own, the rest of the file blanked out, so one broken declaration does not hide
//! the mistakes of the next.

mod error;
mod expr;
mod items;

use pest::Parser;
use pest::iterators::Pair;

use crate::ast;
use crate::diagnostic::{Code, Diagnostic, Diagnostics};
use crate::source::{FileId, Span};

mod generated {
    #![allow(missing_docs, unreachable_pub)]
    /// The pest parser generated from `grammar/ignite.pest`.
    #[derive(pest_derive::Parser)]
    #[grammar = "../grammar/ignite.pest"]
    pub(crate) struct IgnParser;
}

use generated::{IgnParser, Rule};

/// Deepest bracket nesting accepted; deeper input is reported, not parsed,
/// because the parser recurses once per level.
const MAX_NESTING: usize = 256;

/// Parses one file. All syntax errors of the file are returned together.
///
/// # Errors
/// The syntax diagnostics when the text is not a valid `.ign` file.
pub fn parse(file: FileId, text: &str) -> Result<ast::File, Diagnostics> {
    if let Some(diagnostic) = check_nesting(file, text) {
        return Err(diagnostic.into());
    }
    match IgnParser::parse(Rule::file, text) {
        Ok(mut pairs) => {
            let mut builder = items::Builder::new(file, text);
            let root = pairs.next().unwrap_or_else(|| unreachable!("`file` yields one pair"));
            let ast = builder.file(root);
            builder.finish(ast)
        }
        Err(_) => Err(error::recover(file, text)),
    }
}

/// Reports brackets nested deeper than [`MAX_NESTING`].
fn check_nesting(file: FileId, text: &str) -> Option<Diagnostic> {
    let mut depth = 0usize;
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => continue,
        }
        if depth > MAX_NESTING {
            return Some(
                Diagnostic::error(
                    Code::Syntax,
                    Span::new(file, i, i + 1),
                    "brackets nest too deeply",
                )
                .label(format!("more than {MAX_NESTING} levels deep"))
                .help("split the expression into several `compute` nodes"),
            );
        }
    }
    None
}

/// The span of a pair in `file`, without the whitespace and comments pest
/// leaves at the end of a rule that ends in an optional part.
fn span(file: FileId, pair: &Pair<'_, Rule>) -> Span {
    Span::new(file, pair.as_span().start(), content_end(pair))
}

/// Where the last token of `pair` ends. Text after its last child holds
/// only literal tokens, whitespace and comments (strings are pairs), so a
/// `#` there always starts a comment.
fn content_end(pair: &Pair<'_, Rule>) -> usize {
    let (start, end) = (pair.as_span().start(), pair.as_span().end());
    let Some(last) = pair.clone().into_inner().last() else { return end };
    let inner_end = content_end(&last).max(start);
    let tail = &pair.get_input()[inner_end..end];
    let mut significant = 0;
    let mut offset = 0;
    for line in tail.split_inclusive('\n') {
        let code = line.split('#').next().unwrap_or("");
        let trimmed = code.trim_end();
        if !trimmed.is_empty() {
            significant = offset + trimmed.len();
        }
        offset += line.len();
    }
    inner_end + significant
}
