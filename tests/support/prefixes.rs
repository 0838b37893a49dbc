//! Where the robustness tests of `fmt` and `lsp` cut a fixture: at every
//! character boundary, so every prefix is tried, for every fixture up to
//! [`LONG`] bytes (all but the two stress tests of length).
//!
//! This is affordable because the parser's work on a prefix is mostly
//! reused from the one before: pest, the reference parser, is optimised in
//! debug builds too (its own crate, `grammar/`), and syntax-error recovery
//! keeps each top-level declaration's parse by text on the thread, so a
//! prefix costs the parse of its last declaration, not of the whole file
//! (`src/syntax/error.rs`). The tests share the cuts of each fixture out
//! over threads with `skip` and `step_by`; each thread's consecutive
//! prefixes then differ only in their last declaration.
//!
//! A fixture longer than [`LONG`] is one declaration of 9–12 KB
//! (`run/flat_match.ign`, `err/else_if_chain.ign`: a `match` of 256 arms,
//! an `else if` chain of 300), which every prefix parses again whole: about
//! 6 µs per byte, minutes for all of their prefixes. They are cut at every
//! character boundary of their first [`WHOLE`] bytes, then at every line
//! end and every [`STEP`]th byte.

/// Fixtures up to this many bytes are cut at every character boundary.
pub(crate) const LONG: usize = 4096;

/// In a longer fixture, every character boundary up to here is a cut.
pub(crate) const WHOLE: usize = 2048;

/// Past [`WHOLE`] in a longer fixture, the cuts inside lines are this many
/// bytes apart.
pub(crate) const STEP: usize = 61;

/// The byte offsets `text` is cut at, in order, its end included.
pub(crate) fn cuts(text: &str) -> impl Iterator<Item = usize> + '_ {
    let every = text.len() <= LONG;
    text.char_indices()
        .filter(move |&(i, c)| every || i < WHOLE || c == '\n' || i % STEP == 0)
        .map(|(i, _)| i)
        .chain([text.len()])
}
