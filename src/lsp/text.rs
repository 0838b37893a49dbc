//! Positions: LSP's (line, UTF-16 column) pairs to byte offsets and back.
//!
//! Every conversion clamps: a line past the end is the end of the text, a
//! column past the end of its line is the end of that line, so a request
//! at any position answers. A [`Shift`] carries offsets between an older
//! text and the current one, where the edit between them left them alone.

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

/// How the offsets of an older text and a newer one correspond: the bytes
/// before the first difference and after the last are the same text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shift {
    /// The length of the common beginning.
    prefix: usize,
    /// The length of the common end (not overlapping the beginning).
    suffix: usize,
    old_len: usize,
    new_len: usize,
}

impl Shift {
    /// The correspondence of `old` and `new`.
    #[must_use]
    pub(crate) fn between(old: &str, new: &str) -> Shift {
        let mut prefix = old.bytes().zip(new.bytes()).take_while(|(a, b)| a == b).count();
        while !(old.is_char_boundary(prefix) && new.is_char_boundary(prefix)) {
            prefix -= 1;
        }
        let most = old.len().min(new.len()) - prefix;
        let mut suffix =
            old.bytes().rev().zip(new.bytes().rev()).take(most).take_while(|(a, b)| a == b).count();
        while !(old.is_char_boundary(old.len() - suffix)
            && new.is_char_boundary(new.len() - suffix))
        {
            suffix -= 1;
        }
        Shift { prefix, suffix, old_len: old.len(), new_len: new.len() }
    }

    /// The offset in the older text of `offset` in the newer, unless the
    /// edit replaced it.
    #[must_use]
    pub(crate) fn to_old(self, offset: usize) -> Option<usize> {
        Self::carry(offset, self.prefix, self.suffix, self.new_len, self.old_len)
    }

    /// The offset in the newer text of `offset` in the older, unless the
    /// edit replaced it.
    #[must_use]
    pub(crate) fn to_new(self, offset: usize) -> Option<usize> {
        Self::carry(offset, self.prefix, self.suffix, self.old_len, self.new_len)
    }

    fn carry(offset: usize, prefix: usize, suffix: usize, from: usize, to: usize) -> Option<usize> {
        if offset <= prefix {
            Some(offset)
        } else if offset >= from - suffix && offset <= from {
            Some(offset + to - from)
        } else {
            None
        }
    }
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

    #[test]
    fn shifts_carry_offsets_around_an_edit() {
        let shift = Shift::between("ab xyz cd", "ab q cd!");
        // "ab " and " cd" are kept; "xyz" became "q" and "!" was added.
        assert_eq!(shift.to_old(1), Some(1));
        assert_eq!(shift.to_old(3), Some(3));
        assert_eq!(shift.to_old(4), None);
        let shift = Shift::between("ab xyz cd", "ab q cd");
        assert_eq!(shift.to_old(5), Some(7));
        assert_eq!(shift.to_new(7), Some(5));
        assert_eq!(shift.to_new(4), None);
        assert_eq!(shift.to_new(9), Some(7));
        // A repeated letter is not counted twice.
        let shift = Shift::between("aa", "a");
        assert_eq!((shift.to_new(1), shift.to_new(2)), (Some(1), Some(1)));
        let shift = Shift::between("é", "è");
        assert_eq!(shift.to_old(1), None);
    }
}
