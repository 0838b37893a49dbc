//! Where the robustness tests of `fmt` and `lsp` cut a fixture: every
//! prefix of its beginning, then a dense sample of the rest.
//!
//! Every prefix of every fixture, in a debug build, is minutes of parsing
//! (each prefix that does not parse costs the reference parser's error
//! recovery, so the work grows with the square of a file's length, and the
//! largest fixture alone is 70% of it): the cuts are every character
//! boundary up to [`WHOLE`] bytes, and past it every line end and every
//! [`STEP`]th byte.

/// Up to here every character boundary is a cut.
pub(crate) const WHOLE: usize = 2048;

/// Past [`WHOLE`], the cuts inside lines are this many bytes apart.
pub(crate) const STEP: usize = 61;

/// The byte offsets `text` is cut at, in order, its end included.
pub(crate) fn cuts(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.char_indices()
        .filter(|&(i, c)| i < WHOLE || c == '\n' || i % STEP == 0)
        .map(|(i, _)| i)
        .chain([text.len()])
}
