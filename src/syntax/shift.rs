//! Moving a syntax tree's places: a declaration parsed alone, at offset 0,
//! put where it stands in its file (see `error::kept_trees`).
//!
//! Input: parsed items and a distance in bytes. Output: the same items
//! with every [`Span`] moved that far. The walk visits every span of the
//! tree once, so a missed one shows as a difference from a whole parse
//! (`syntax::tests::kept_declarations_parse_as_the_whole_file`).

use crate::ast::Item;
use crate::ast::walk::{Places, walk};
use crate::source::Span;

/// Moves every span of `items` `by` bytes on.
pub(super) fn shift(items: &mut [Item], by: u32) {
    if by == 0 {
        return;
    }
    walk(items, &mut Shift(by));
}

/// The distance every span moves.
struct Shift(u32);

impl Places for Shift {
    fn span(&mut self, span: &mut Span) {
        span.start = span.start.saturating_add(self.0);
        span.end = span.end.saturating_add(self.0);
    }
}
