//! The layout algebra of the formatter: a [`Doc`] says what may break, and
//! [`Doc::render`] picks, group by group, the flat layout when it fits in
//! the width and the broken one otherwise (Wadler's "prettier printer",
//! simplified: a group is measured once, flat, up to its end).
//!
//! Input: a `Doc` built by the printer. Output: the text, lines without
//! trailing whitespace, indented with spaces.

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
const INDENT: usize = 2;

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

    /// Lays the document out at `width` columns.
    /// `capacity` is a guess of the text's length (the output is written
    /// into one string of it).
    pub(super) fn render(&self, width: usize, capacity: usize) -> String {
        let mut out = Renderer { out: String::with_capacity(capacity), column: 0, width };
        out.print(self);
        out.out
    }
}

/// Whether a part is laid out flat or broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Flat,
    Break,
}

struct Renderer {
    out: String,
    column: usize,
    width: usize,
}

impl Renderer {
    fn print(&mut self, doc: &Doc<'_>) {
        let mut stack: Vec<(usize, Mode, &Doc<'_>)> = vec![(0, Mode::Break, doc)];
        while let Some((indent, mode, doc)) = stack.pop() {
            match doc {
                Doc::Text(text) => self.push(text),
                Doc::Line if mode == Mode::Flat => self.push(" "),
                Doc::SoftLine | Doc::BreakParent if mode == Mode::Flat => {}
                Doc::IfBreak(_) if mode == Mode::Flat => {}
                Doc::BreakParent => {}
                Doc::IfBreak(text) => self.push(text),
                Doc::Line | Doc::SoftLine | Doc::HardLine => self.newline(indent),
                Doc::Nest(inner) => stack.push((indent + INDENT, mode, inner)),
                Doc::Group(inner) => {
                    let fits = mode == Mode::Flat || self.fits(inner, &stack);
                    stack.push((indent, if fits { Mode::Flat } else { Mode::Break }, inner));
                }
                Doc::Concat(parts) => {
                    stack.extend(parts.iter().rev().map(|part| (indent, mode, part)));
                }
            }
        }
    }

    fn push(&mut self, text: &str) {
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
    use super::Doc;

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
        assert_eq!(list(&["a", "b"]).render(10, 0), "[a, b]");
    }

    #[test]
    fn a_group_too_wide_breaks_one_item_per_line() {
        assert_eq!(list(&["aaaa", "bbbb"]).render(8, 0), "[\n  aaaa,\n  bbbb,\n]");
    }

    #[test]
    fn a_break_parent_breaks_the_group() {
        let doc =
            Doc::Concat(vec![Doc::text("["), Doc::BreakParent, Doc::SoftLine, Doc::text("]")])
                .group();
        assert_eq!(doc.render(80, 0), "[\n]");
    }
}
