//! Where the robustness tests of `fmt` and `lsp` cut a fixture: at every
//! character boundary, so every prefix of every fixture is tried.
//!
//! This is affordable because the parser's work on a prefix is mostly
//! reused from the one before: pest, the reference parser, is optimised in
//! debug builds too (its own crate, `grammar/`), and syntax-error recovery
//! keeps each top-level declaration's parse by text on the thread, so a
//! prefix costs the parse of its last declaration, not of the whole file
//! (`src/syntax/error.rs`). The tests share the cuts of each fixture out
//! over threads with `skip` and `step_by`; each thread's consecutive
//! prefixes then differ only in their last declaration. The two fixtures
//! that are one long declaration (`run/flat_match.ign`,
//! `err/else_if_chain.ign`: a `match` of 256 arms, an `else if` chain of
//! 300) are parsed again whole at each of their prefixes: most of the
//! tests' time.

/// The byte offsets `text` is cut at, in order, its end included.
pub(crate) fn cuts(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.char_indices().map(|(i, _)| i).chain([text.len()])
}
