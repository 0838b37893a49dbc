//! The layout algebra of the formatter: a [`Doc`] says what may break, and
//! [`Layout`] picks, group by group, the flat layout when it fits in
//! the width and the broken one otherwise (Wadler's "prettier printer",
//! simplified: a group is measured once, flat, up to its end).
//!
//! Input: the `Doc`s built by the printer, piece by piece. Output: the
//! text, lines without trailing whitespace, indented with spaces.

use std::borrow::Cow;

/// A piece of layout; its text is borrowed (from the source, or static)
/// where it can be.
#[derive(Debug, Clone)]
pub(super) enum Doc<'a> {
    /// Text without newlines, except inside verbatim strings (the column
    /// after it is then the length of its last line).
    Text(Cow<'a, str>),
    /// A space when flat, a newline when broken.
    Line,
    /// Nothing when flat, a newline when broken.
    SoftLine,
    /// Always a newline; the groups around it break.
    HardLine,
    /// Nothing; the groups around it break (after an end-of-line comment).
    BreakParent,
    /// The text only when the enclosing group breaks (a trailing comma).
    IfBreak(&'static str),
    /// The lines inside are indented by one more level.
    Nest(Box<Doc<'a>>),
    /// Flat if it fits, else broken.
    Group(Box<Doc<'a>>),
    /// One after the other.
    Concat(Vec<Doc<'a>>),
}

/// Spaces per indentation level.
pub(super) const INDENT: usize = 2;

impl<'a> Doc<'a> {
    /// Text.
    pub(super) fn text(text: impl Into<Cow<'a, str>>) -> Doc<'a> {
        Doc::Text(text.into())
    }

    /// The lines of `self` one level deeper.
    pub(super) fn nest(self) -> Doc<'a> {
        Doc::Nest(Box::new(self))
    }

    /// `self` as one group.
    pub(super) fn group(self) -> Doc<'a> {
        Doc::Group(Box::new(self))
    }
}

/// Whether a part is laid out flat or broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Flat,
    Break,
}

/// The layout of a whole text, written as it is printed: documents are
/// pushed, each at its indentation, and laid out at each hard line break
/// ([`Layout::line`]). A group's layout depends only on what comes before
/// the next line break, so laying out the pieces between hard breaks one
/// at a time gives the text the whole document would, while only one
/// piece of it is ever held. The pieces must be outside every group (a
/// declaration, a statement of its body: nothing around them is flat).
pub(super) struct Layout<'a> {
    out: String,
    column: usize,
    width: usize,
    /// The pieces since the last hard line break, with their indentation.
    pending: Vec<(usize, Doc<'a>)>,
}

impl<'a> Layout<'a> {
    /// An empty text laid out at `width` columns; `capacity` is a guess of
    /// its length (the text is written into one string of it).
    pub(super) fn new(width: usize, capacity: usize) -> Self {
        Layout { out: String::with_capacity(capacity), column: 0, width, pending: Vec::new() }
    }

    /// Adds `doc`, its lines indented by `indent` spaces.
    pub(super) fn push(&mut self, indent: usize, doc: Doc<'a>) {
        self.pending.push((indent, doc));
    }

    /// A hard line break, the next line indented by `indent` spaces: what
    /// came before it is laid out.
    pub(super) fn line(&mut self, indent: usize) {
        self.flush();
        self.newline(indent);
    }

    /// The text.
    pub(super) fn finish(mut self) -> String {
        self.flush();
        self.out
    }

    fn flush(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let mut stack: Vec<(usize, Mode, &Doc<'_>)> =
            pending.iter().rev().map(|(indent, doc)| (*indent, Mode::Break, doc)).collect();
        self.print(&mut stack);
        // The list's room is kept for the next piece.
        self.pending = pending;
        self.pending.clear();
    }

    fn print(&mut self, stack: &mut Vec<(usize, Mode, &Doc<'_>)>) {
        while let Some((indent, mode, doc)) = stack.pop() {
            match doc {
                Doc::Text(text) => self.push_text(text),
                Doc::Line if mode == Mode::Flat => self.push_text(" "),
                Doc::SoftLine | Doc::BreakParent if mode == Mode::Flat => {}
                Doc::IfBreak(_) if mode == Mode::Flat => {}
                Doc::BreakParent => {}
                Doc::IfBreak(text) => self.push_text(text),
                Doc::Line | Doc::SoftLine | Doc::HardLine => self.newline(indent),
                Doc::Nest(inner) => stack.push((indent + INDENT, mode, inner)),
                Doc::Group(inner) => {
                    let fits = mode == Mode::Flat || self.fits(inner, stack);
                    stack.push((indent, if fits { Mode::Flat } else { Mode::Break }, inner));
                }
                Doc::Concat(parts) => {
                    stack.extend(parts.iter().rev().map(|part| (indent, mode, part)));
                }
            }
        }
    }

    fn push_text(&mut self, text: &str) {
        self.out.push_str(text);
        // Most texts are a short token: a loop over their bytes beats a
        // search call, and an ASCII text has as many columns as bytes.
        match text.bytes().rposition(|b| b == b'\n') {
            Some(at) => self.column = text.len() - at - 1,
            None if text.is_ascii() => self.column += text.len(),
            None => self.column += text.chars().count(),
        }
    }

    fn newline(&mut self, indent: usize) {
        let spaces = self.out.bytes().rev().take_while(|&b| b == b' ').count();
        self.out.truncate(self.out.len() - spaces);
        self.out.push('\n');
        self.out.extend(std::iter::repeat_n(' ', indent));
        self.column = indent;
    }

    /// Whether `doc`, flat, and what follows it up to the next possible
    /// line break fit in the rest of the line. A hard break inside `doc`
    /// never fits.
    fn fits(&self, doc: &Doc<'_>, rest: &[(usize, Mode, &Doc<'_>)]) -> bool {
        let mut left = self.width.saturating_sub(self.column);
        let mut todo: Vec<(Mode, &Doc<'_>)> = vec![(Mode::Flat, doc)];
        let mut rest = rest.iter().rev();
        loop {
            let Some((mode, doc)) = todo.pop() else {
                match rest.next() {
                    Some((_, mode, doc)) => {
                        todo.push((*mode, doc));
                        continue;
                    }
                    None => return true,
                }
            };
            match doc {
                Doc::Text(text) => {
                    let line = text.bytes().position(|b| b == b'\n');
                    let first = &text[..line.unwrap_or(text.len())];
                    let width = if first.is_ascii() { first.len() } else { first.chars().count() };
                    let Some(after) = left.checked_sub(width) else {
                        return false;
                    };
                    if line.is_some() {
                        return true;
                    }
                    left = after;
                }
                Doc::Line | Doc::SoftLine if mode == Mode::Break => return true,
                Doc::HardLine | Doc::BreakParent => return mode == Mode::Break,
                Doc::Line => match left.checked_sub(1) {
                    Some(after) => left = after,
                    None => return false,
                },
                Doc::SoftLine => {}
                Doc::IfBreak(text) => {
                    if mode == Mode::Break {
                        left = left.saturating_sub(text.len());
                    }
                }
                Doc::Nest(inner) | Doc::Group(inner) => todo.push((mode, inner)),
                Doc::Concat(parts) => todo.extend(parts.iter().rev().map(|part| (mode, part))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Doc, Layout};

    fn render(doc: Doc<'_>, width: usize) -> String {
        let mut layout = Layout::new(width, 0);
        layout.push(0, doc);
        layout.finish()
    }

    fn list<'a>(items: &[&'a str]) -> Doc<'a> {
        let mut parts = vec![Doc::text("["), Doc::SoftLine];
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                parts.extend([Doc::text(","), Doc::Line]);
            }
            parts.push(Doc::text(*item));
        }
        let inner = Doc::Concat(parts).nest();
        Doc::Concat(vec![inner, Doc::IfBreak(","), Doc::SoftLine, Doc::text("]")]).group()
    }

    #[test]
    fn a_group_that_fits_stays_flat() {
        assert_eq!(render(list(&["a", "b"]), 10), "[a, b]");
    }

    #[test]
    fn a_group_too_wide_breaks_one_item_per_line() {
        assert_eq!(render(list(&["aaaa", "bbbb"]), 8), "[\n  aaaa,\n  bbbb,\n]");
    }

    #[test]
    fn a_break_parent_breaks_the_group() {
        let doc =
            Doc::Concat(vec![Doc::text("["), Doc::BreakParent, Doc::SoftLine, Doc::text("]")])
                .group();
        assert_eq!(render(doc, 80), "[\n]");
    }

    /// A group followed, before the next hard break, by text in another
    /// piece is measured with that text; after a hard break, without.
    #[test]
    fn a_group_is_measured_up_to_the_next_hard_break() {
        let mut layout = Layout::new(8, 0);
        layout.push(0, list(&["a", "b"]));
        layout.push(0, Doc::text(" # long"));
        layout.line(0);
        layout.push(0, list(&["a", "b"]));
        layout.line(0);
        layout.push(0, Doc::text(" # long"));
        assert_eq!(layout.finish(), "[\n  a,\n  b,\n] # long\n[a, b]\n # long");
    }
}
