//! The comments of a file, recovered by span: the grammar skips them, so
//! they are found in the text, outside every string literal the parser
//! saw.
//!
//! Input: a file's text and the spans of its string literals. Output: its
//! comments in source order, each with its place and whether code comes
//! before it on its line.

use crate::source::Span;

/// A `#` comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Comment {
    /// Where the `#` is.
    pub(super) start: usize,
    /// From `#` to the end of the line, trailing spaces removed.
    pub(super) text: String,
    /// True when only spaces come before it on its line.
    pub(super) own_line: bool,
}

/// Every comment of `text` outside the `strings` spans, in order.
pub(super) fn comments(text: &str, mut strings: Vec<Span>) -> Vec<Comment> {
    strings.sort_by_key(|s| s.start);
    let mut strings = strings.into_iter().peekable();
    let mut found = Vec::new();
    let mut from = 0;
    // Each `#` in turn: a comment unless a string holds it.
    while let Some(at) = text.get(from..).and_then(|rest| rest.find('#')).map(|n| from + n) {
        while strings.next_if(|s| (s.end as usize) <= at).is_some() {}
        if let Some(string) = strings.peek() {
            if string.start as usize <= at {
                from = string.end as usize;
                continue;
            }
        }
        let end = text[at..].find('\n').map_or(text.len(), |n| at + n);
        let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        let before = text[line_start..at].trim_start_matches('\u{feff}');
        found.push(Comment {
            start: at,
            text: text[at..end].trim_end().to_owned(),
            own_line: before.trim().is_empty(),
        });
        from = end;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::comments;
    use crate::source::{FileId, Span};

    #[test]
    fn a_hash_inside_a_string_is_no_comment() {
        let text = "compute a = \"#x\" # one  \n# two\n";
        let found = comments(text, vec![Span::new(FileId(0), 12, 16)]);
        let texts: Vec<(&str, bool)> =
            found.iter().map(|c| (c.text.as_str(), c.own_line)).collect();
        assert_eq!(texts, [("# one", false), ("# two", true)]);
    }
}
