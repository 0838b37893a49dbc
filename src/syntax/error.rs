//! Syntax errors in human terms: pest's failure turned into "expected `)`
//! or an operator, found `}`", and recovery by declaration, whose cache of
//! each declaration's parse also holds the trees `super::parse_kept` puts
//! a valid file together from.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Once;

use pest::Parser;
use pest::error::{Error, ErrorVariant, InputLocation};

use super::items::Builder;
use super::shift::shift;
use super::{IgnParser, Rule};
use crate::ast::{self, Keyword, KeywordRole};
use crate::diagnostic::{Code, Diagnostic, Diagnostics};
use crate::source::{FileId, Span};

/// The diagnostics of a file's recovery chunks (see [`chunk_starts`]),
/// each parsed alone and its diagnostics shifted to its place in the file
/// (chunks start in column 0, so columns are unchanged).
pub(super) struct Chunks {
    /// Every chunk's diagnostics, in order: pest's error for a chunk that
    /// does not parse, the builder's for one that does.
    pub(super) diagnostics: Diagnostics,
    /// Some chunk does not parse (a pest error, not only the builder's).
    pub(super) broken: bool,
}

/// Most bytes of chunk text [`CACHE`] keeps before it drops the chunks the
/// last parse did not read.
const CACHE_BYTES: usize = 8 << 20;

/// A chunk's parse, unshifted (as of a text that starts with the chunk),
/// and whether pest rejected it.
struct Entry {
    /// Its tree when it parses clean, else its diagnostics.
    parse: Result<ast::File, Diagnostics>,
    broken: bool,
    /// The parse that last read it.
    generation: u64,
}

/// The chunks parsed on this thread, by file and text. An edit changes
/// one declaration, so the next parse of the file parses only that chunk
/// again: typing in an editor, or every prefix of a file, costs a chunk
/// per keystroke rather than the whole file.
#[derive(Default)]
struct Cache {
    /// By file, then chunk text (foldhash: a chunk is read whole to hash
    /// it, on every parse).
    entries: HashMap<FileId, hashbrown::HashMap<Box<str>, Entry>>,
    generation: u64,
    bytes: usize,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

impl Cache {
    /// Visits the parse of each chunk of `text` (starting at `starts`,
    /// the first 0) in order, with the chunk's start, parsing the chunks
    /// this cache does not have; then drops the chunks this visit did not
    /// read when the cache holds too much. With `limits`, a chunk the
    /// cache does not have is first checked against the size limits, and
    /// one that breaks them is neither parsed nor kept: `each` gets `None`.
    fn visit(
        &mut self,
        file: FileId,
        text: &str,
        starts: &[usize],
        limits: bool,
        mut each: impl FnMut(usize, Option<&Entry>),
    ) {
        self.generation += 1;
        let generation = self.generation;
        let chunks = self.entries.entry(file).or_default();
        for (i, &start) in starts.iter().enumerate() {
            let end = starts.get(i + 1).copied().unwrap_or(text.len());
            let chunk = &text[start..end];
            if let Some(entry) = chunks.get_mut(chunk) {
                entry.generation = generation;
                each(start, Some(entry));
                continue;
            }
            if limits && super::limits::check(file, chunk).is_some() {
                each(start, None);
                continue;
            }
            self.bytes += chunk.len();
            let (parse, broken) = parse_chunk(file, chunk);
            let entry = chunks.entry(chunk.into()).or_insert(Entry { parse, broken, generation });
            each(start, Some(entry));
        }
        if self.bytes > CACHE_BYTES {
            for chunks in self.entries.values_mut() {
                chunks.retain(|_, entry| entry.generation == generation);
            }
            self.entries.retain(|_, chunks| !chunks.is_empty());
            self.bytes = self.entries.values().flat_map(|c| c.keys()).map(|c| c.len()).sum();
        }
    }
}

/// Parses each chunk of `text` (starting at `starts`, the first 0) alone,
/// or takes its parse from this thread's cache of chunks.
pub(super) fn chunks(file: FileId, text: &str, starts: &[usize]) -> Chunks {
    detail();
    let mut out = Chunks { diagnostics: Diagnostics::default(), broken: false };
    CACHE.with_borrow_mut(|cache| {
        cache.visit(file, text, starts, false, |start, entry| {
            let Some(entry) = entry else { unreachable!("chunks are parsed without limits") };
            out.broken |= entry.broken;
            if let Err(diagnostics) = &entry.parse {
                out.diagnostics.extend(diagnostics.clone().shifted(start));
            }
        });
    });
    out
}

/// The tree of `text` put together from the trees of its chunks (starting
/// at `starts`, the first 0), each parsed alone or taken from this
/// thread's cache, its places moved to where the chunk starts; `None`
/// when a chunk does not parse clean or breaks a size limit.
///
/// When every chunk parses clean alone, their trees are the file's: each
/// chunk is whole declarations, balanced, so the next starts at the top
/// level of the file (outside brackets and strings), where a declaration
/// is read the same way alone or in the file (see `super::pest_parse`);
/// the chunks start on lines of their own, so the declarations of two
/// chunks are never on one line; and no chunk breaks a size limit, so
/// neither does the file (at the top level, between declarations, the
/// limits count nothing).
pub(super) fn kept_trees(file: FileId, text: &str, starts: &[usize]) -> Option<ast::File> {
    let mut items = Some(Vec::new());
    CACHE.with_borrow_mut(|cache| {
        cache.visit(file, text, starts, true, |start, entry| match entry.map(|e| &e.parse) {
            Some(Ok(tree)) => {
                if let Some(items) = items.as_mut() {
                    let at = items.len();
                    items.extend_from_slice(&tree.items);
                    shift(&mut items[at..], u32::try_from(start).unwrap_or(u32::MAX));
                }
            }
            // The other chunks are still parsed: the recovery that follows
            // finds them kept.
            Some(Err(_)) | None => items = None,
        });
    });
    items.map(|items| ast::File { items })
}

/// One chunk parsed alone: its tree or diagnostics, and whether pest
/// rejected it. The fast path answers for a valid chunk (its tree is
/// pest's, see `super::fast`).
fn parse_chunk(file: FileId, chunk: &str) -> (Result<ast::File, Diagnostics>, bool) {
    if let Some(tree) = super::fast::parse(file, chunk) {
        return (Ok(tree), false);
    }
    detail();
    match IgnParser::parse(Rule::file, chunk) {
        Err(error) => (Err(describe(file, chunk, &error).into()), true),
        Ok(mut pairs) => {
            let mut builder = Builder::new(file, chunk);
            let root = pairs.next().unwrap_or_else(|| unreachable!("`file` yields one pair"));
            let ast = builder.file(root);
            (builder.finish(ast), false)
        }
    }
}

/// Every syntax error of a file that does not parse (`error`, pest's
/// error for the whole file): one per broken top-level declaration.
pub(super) fn recover(
    file: FileId,
    text: &str,
    starts: &[usize],
    error: &Error<Rule>,
) -> Diagnostics {
    let diagnostics = chunks(file, text, starts).diagnostics;
    if diagnostics.is_empty() {
        // The chunks parse alone but not together (a declaration split
        // oddly across lines): report the whole-file error.
        return describe(file, text, error).into();
    }
    diagnostics
}

/// Turns on pest's record of what it tried at an error (what "expected
/// ..." lists) before any parse. The setting is global, so it is turned on
/// and left on: turning it off again raced with files parsed at once on
/// other threads (`check` of a folder, the language server), whose
/// messages then lost part of their list.
pub(super) fn detail() {
    static ON: Once = Once::new();
    ON.call_once(|| pest::set_error_detail(true));
}

/// Byte offsets where a top-level declaration starts in column 0; the
/// first chunk also holds anything before the first declaration.
pub(super) fn chunk_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let word = line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
        let word = &line[..word.unwrap_or(line.len())];
        // A top-level keyword in column 0 starts a recovery chunk.
        if offset > 0 && Keyword::of(word).is_some_and(|k| k.role() == KeywordRole::Item) {
            starts.push(offset);
        }
        offset += line.len();
    }
    starts
}

/// One pest error as a diagnostic.
fn describe(file: FileId, text: &str, error: &Error<Rule>) -> Diagnostic {
    let attempts = error.parse_attempts();
    let position = attempts.as_ref().map_or_else(
        || match error.location {
            InputLocation::Pos(p) | InputLocation::Span((p, _)) => p,
        },
        |a| a.max_position,
    );
    let found = found_at(text, position);
    let span = Span::new(file, position, position + found.len());
    let mut expected: Vec<String> = Vec::new();
    if let Some(attempts) = &attempts {
        // pest keeps its token type private; its Debug form tells a
        // case-sensitive literal (`Sensitive { .. }`) from the rest.
        for token in attempts.expected_tokens() {
            let text = token.to_string();
            if !format!("{token:?}").starts_with("Sensitive")
                || text.trim().is_empty()
                || text == "#"
            {
                continue;
            }
            expected.push(if OPERATORS.contains(&text.as_str()) {
                "an operator".to_owned()
            } else {
                format!("`{text}`")
            });
        }
    }
    if let ErrorVariant::ParsingError { positives, .. } = &error.variant {
        expected.extend(positives.iter().filter_map(|&rule| rule_name(rule)));
    }
    expected.sort();
    expected.dedup();
    let found_text = if found.is_empty() { "end of file".to_owned() } else { format!("`{found}`") };
    // The text ends inside a block: point at the `{` that was never closed
    // (the end of a recovery chunk is where the next declaration starts).
    if found.is_empty() && expected.iter().any(|e| e == "`}`") {
        if let Some(open) = super::limits::unclosed_brace(text) {
            let brace = Span::new(file, open, open + 1);
            return Diagnostic::error(Code::Syntax, brace, "this `{` is never closed")
                .label("opened here")
                .note(span, "the block is still open here")
                .help("add the missing `}`");
        }
    }
    let statement = expected.iter().any(|e| starts_statement(e));
    let word = found.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if statement && word {
        expected.retain(|e| e == "`}`" || starts_statement(e));
        Diagnostic::error(Code::Syntax, span, format!("unknown statement `{found}`"))
            .label("not a statement of this block")
            .help(format!("expected {}", join_or(&expected)))
    } else if expected.is_empty() {
        Diagnostic::error(Code::Syntax, span, format!("unexpected {found_text}"))
            .label("not expected here")
            .maybe_help(hint(text, position, found, &expected))
    } else {
        Diagnostic::error(
            Code::Syntax,
            span,
            format!("expected {}, found {found_text}", join_or(&expected)),
        )
        .label(format!("expected {}", join_or(&expected)))
        .maybe_help(hint(text, position, found, &expected))
    }
}

/// Help for the commonest slips behind a syntax error: a literal `{` in a
/// string (JSON in a prompt, a repetition like `{2,3}` in a pattern), and
/// `=` written for `==`.
fn hint(text: &str, position: usize, found: &str, expected: &[String]) -> Option<String> {
    if let Some(start) = super::limits::interpolation_start(text, position) {
        // `{2,3}` or `{2,}`: a regular expression's repetition.
        let inside = &text[start + 1..position];
        let tail = text[position..].split('}').next().unwrap_or_default();
        let repetition = format!("{inside}{tail}");
        if found == "," && repetition.bytes().all(|b| b.is_ascii_digit() || b == b',') {
            return Some(format!(
                "`{{` in a string starts an interpolation; for the repetition `{{{repetition}}}` \
                 of a regular expression write `\\{{{repetition}}}`, or use a raw string \
                 `r\"...\"` (no escapes, no interpolation)"
            ));
        }
        return Some(
            "`{` in a string starts an interpolation; write `\\{` for a literal brace".to_owned(),
        );
    }
    let operator = expected.iter().any(|e| e == "an operator");
    (found == "=" && operator).then(|| "to compare two values, write `==`".to_owned())
}

/// Tokens that continue an expression, all reported as "an operator".
const OPERATORS: [&str; 16] =
    ["!=", "%", "*", "+", "-", ".", "/", "<=", "<", "==", ">=", ">", "[", "and", "or", "not"];

/// True for a statement keyword of a tool, agent, provider or contract
/// body as [`rule_name`] prints it (`` `compute` ``).
fn starts_statement(expected: &str) -> bool {
    let word = expected.strip_prefix('`').and_then(|e| e.strip_suffix('`'));
    word.and_then(Keyword::of).is_some_and(|k| k.role() == KeywordRole::Statement)
}

/// The token at `position`: a word, a string, one character, or nothing
/// at the end of the text.
fn found_at(text: &str, position: usize) -> &str {
    let rest = text.get(position..).unwrap_or("");
    let Some(first) = rest.chars().next() else { return "" };
    if first.is_ascii_alphanumeric() || first == '_' {
        let end =
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        return &rest[..end];
    }
    if first == '\n' || first == '\r' {
        return &rest[..1];
    }
    &rest[..first.len_utf8()]
}

/// "a", "a or b", "a, b or c".
fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// What a user calls a rule; `None` for rules covered by their tokens.
fn rule_name(rule: Rule) -> Option<String> {
    let name = match rule {
        Rule::ident => "a name",
        Rule::expr => "an expression",
        Rule::plain_string | Rule::triple_string | Rule::raw_string => "a string",
        Rule::integer | Rule::float => "a number",
        Rule::type_expr => "a type",
        Rule::pattern | Rule::wildcard => "a pattern (`_` or a literal)",
        Rule::match_arm => "a `match` arm",
        Rule::op_or
        | Rule::op_and
        | Rule::op_eq
        | Rule::op_ne
        | Rule::op_le
        | Rule::op_ge
        | Rule::op_lt
        | Rule::op_gt
        | Rule::op_add
        | Rule::op_sub
        | Rule::op_mul
        | Rule::op_div
        | Rule::op_mod
        | Rule::field
        | Rule::index => "an operator",
        other => {
            let debug = format!("{other:?}");
            let word = debug.strip_prefix("kw_")?;
            return Some(format!("`{word}`"));
        }
    };
    Some(name.to_owned())
}
