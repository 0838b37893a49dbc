//! Positions: LSP's (line, UTF-16 column) pairs to byte offsets and back.
//!
//! Every conversion clamps: a line past the end is the end of the text, a
//! column past the end of its line is the end of that line, so a request
//! at any position answers.

use lsp_types::{Position, Range};

use crate::source::SourceFile;

/// The byte offset of `position` in `text`, whose lines start at `starts`.
#[must_use]
pub(crate) fn offset(text: &str, starts: &[usize], position: Position) -> usize {
    let Some(&start) = starts.get(position.line as usize) else {
        return text.len();
    };
    let end = starts.get(position.line as usize + 1).map_or(text.len(), |&next| next);
    let mut units = 0;
    for (at, c) in text[start..end].char_indices() {
        if units >= position.character || c == '\n' || c == '\r' {
            return start + at;
        }
        units += c.len_utf16() as u32;
    }
    end
}

/// The position of byte `offset` of `text`, whose lines start at `starts`.
#[must_use]
pub(crate) fn position(text: &str, starts: &[usize], offset: usize) -> Position {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line = starts.partition_point(|&start| start <= offset).saturating_sub(1);
    let start = starts.get(line).copied().unwrap_or(0);
    let character = text[start..offset].encode_utf16().count();
    Position::new(line as u32, u32::try_from(character).unwrap_or(u32::MAX))
}

/// The range of bytes `start..end` of `file`.
#[must_use]
pub(crate) fn range(file: &SourceFile, start: usize, end: usize) -> Range {
    let starts = file.line_starts();
    Range::new(position(&file.text, starts, start), position(&file.text, starts, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::line_starts;

    #[test]
    fn columns_count_utf16_units() {
        let text = "a😀b\nçd\n";
        let starts = line_starts(text);
        // The emoji is 4 bytes and 2 UTF-16 units.
        assert_eq!(position(text, &starts, 5), Position::new(0, 3));
        assert_eq!(offset(text, &starts, Position::new(0, 3)), 5);
        assert_eq!(position(text, &starts, 9), Position::new(1, 1));
        assert_eq!(offset(text, &starts, Position::new(1, 1)), 9);
    }

    #[test]
    fn positions_past_the_end_clamp() {
        let text = "ab\ncd";
        let starts = line_starts(text);
        assert_eq!(offset(text, &starts, Position::new(0, 99)), 2);
        assert_eq!(offset(text, &starts, Position::new(9, 0)), text.len());
        assert_eq!(position(text, &starts, 99), Position::new(1, 2));
    }
}
