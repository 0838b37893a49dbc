//! The syntax tree with its places taken out, so that two trees compare
//! equal when they say the same thing however they are laid out.
//!
//! Input: a parsed [`ast::File`] and its text. Output: the same tree with
//! every span zeroed and every name expression (whose text lives only in
//! the source) given its text, parentheses aside. The same walk, run
//! without changing the tree, finds the spans of every string literal,
//! which is where a `#` is not a comment.

use crate::ast::walk::{Places, walk as walk_places};
use crate::ast::{Call, Expr, ExprKind, File, Ident};
use crate::source::{FileId, Span};

/// The span every place becomes.
const NOWHERE: Span = Span { file: FileId(0), start: 0, end: 0 };

/// Marks a name's text in a stripped tree: no callee can start with it.
const NAME_MARK: char = '\0';

/// Strips `file` (parsed from `text`) in place.
pub(super) fn strip(file: &mut File, text: &str) {
    walk(file, text, true);
}

/// The spans of the string literals of `file` (parsed from `text`), in no
/// particular order; `file` is left as it is (the walk is [`strip`]'s).
pub(super) fn strings(file: &mut File, text: &str) -> Vec<Span> {
    walk(file, text, false)
}

fn walk(file: &mut File, text: &str, strip: bool) -> Vec<Span> {
    let mut walk = Strip { text, strings: Vec::new(), strip };
    walk_places(&mut file.items, &mut walk);
    walk.strings
}

/// The text of a name expression at `span`, without the parentheses and
/// spaces a parenthesised name's span includes.
pub(super) fn name_text(text: &str, span: Span) -> &str {
    let mut name = text.get(span.range()).unwrap_or("").trim();
    while let Some(inner) = name.strip_prefix('(').and_then(|n| n.strip_suffix(')')) {
        name = inner.trim();
    }
    name
}

struct Strip<'a> {
    text: &'a str,
    strings: Vec<Span>,
    /// Zero the places (else only find the strings).
    strip: bool,
}

impl Places for Strip<'_> {
    /// Zeroes `span` (when stripping).
    fn span(&mut self, span: &mut Span) {
        if self.strip {
            *span = NOWHERE;
        }
    }

    /// Notes a string literal's span, and an object's keys (a quoted key is
    /// a string too: a `#` in it is text); gives a name its text (when
    /// stripping), as a call no callee can spell.
    fn expr(&mut self, expr: &mut Expr) {
        match &mut expr.kind {
            ExprKind::String(_) => self.strings.push(expr.span),
            ExprKind::Object(entries) => {
                self.strings.extend(entries.iter().map(|(key, _)| key.span));
            }
            ExprKind::Name if self.strip => {
                let name = format!("{NAME_MARK}{}", name_text(self.text, expr.span));
                let callee = Ident { name: name.into(), span: NOWHERE };
                expr.kind = ExprKind::Call(Box::new(Call { callee, args: Vec::new() }));
            }
            _ => {}
        }
    }
}
