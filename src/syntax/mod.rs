//! Parsing: `.ign` text to [`ast::File`].
//!
//! Input: one [`SourceFile`](crate::source::SourceFile)'s text. Output: the
//! AST, or every syntax error found. This is the only module that touches
//! pest: `Pair`s never leave it.
//!
//! Valid files take the fast path (`fast.rs`), a hand-written parser that
//! builds the same AST; anything it declines is parsed by pest, the
//! reference grammar and the only source of syntax diagnostics.
//!
//! Recovery: when the whole file does not parse, each top-level declaration
//! (from a line starting in column 0 with `use`, `tool`, `agent`, `provider`
//! `contract` or `test`) is parsed on its own, the rest of the file blanked out, so one broken declaration does not hide
//! the mistakes of the next. Each declaration's parse is kept by its text
//! on the thread, and a declaration that does not parse alone answers for
//! the file (see `pest_parse`): an edit of a broken file parses only the
//! declaration it changed. [`parse_kept`], the language server's, reads a
//! valid file the same way: each declaration's tree is kept by its text and
//! moved to where it stands (`shift.rs`), so an edit parses again only the
//! declarations it changed.
//!
//! Big texts use a second thread: the pre-scan of the limits (`limits.rs`)
//! runs beside the fast path (or, through [`parse_scanning`], after it,
//! while the caller lowers the tree), and the fast path parses the second
//! half of a big contract's body on a thread of its own (`fast::Split`);
//! none of this changes the result.
//!
//! pest's parser is derived in its own crate, `grammar/` (`ignite-grammar`),
//! so that debug builds optimise it.

mod error;
mod expr;
mod fast;
mod items;
mod limits;
mod shift;

use pest::Parser;
use pest::iterators::Pair;

use crate::ast::{self, BinaryOp};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::source::{FileId, Span};

/// The parser generated from `grammar/ignite.pest`, in its own crate
/// (`grammar/`) so that debug builds optimise it.
use ignite_grammar::{IgnParser, Rule};

/// The grammar rule of each binary operator (both pest readers, `expr` and
/// `items`, map rules to operators through it).
const OPERATOR_RULES: [(Rule, BinaryOp); 13] = [
    (Rule::op_or, BinaryOp::Or),
    (Rule::op_and, BinaryOp::And),
    (Rule::op_eq, BinaryOp::Eq),
    (Rule::op_ne, BinaryOp::Ne),
    (Rule::op_lt, BinaryOp::Lt),
    (Rule::op_le, BinaryOp::Le),
    (Rule::op_gt, BinaryOp::Gt),
    (Rule::op_ge, BinaryOp::Ge),
    (Rule::op_add, BinaryOp::Add),
    (Rule::op_sub, BinaryOp::Sub),
    (Rule::op_mul, BinaryOp::Mul),
    (Rule::op_div, BinaryOp::Div),
    (Rule::op_mod, BinaryOp::Mod),
];

/// The operator of an infix rule (`op_eq`).
fn binary_op(rule: Rule) -> BinaryOp {
    OPERATOR_RULES
        .iter()
        .find(|(r, _)| *r == rule)
        .map_or_else(|| unreachable!("infix operator {rule:?}"), |&(_, op)| op)
}

/// Parses one file. All syntax errors of the file are returned together.
///
/// # Errors
/// The syntax diagnostics when the text is not a valid `.ign` file.
pub fn parse(file: FileId, text: &str) -> Result<ast::File, Diagnostics> {
    let (limit, fast) = scan_and_parse(file, text);
    judged(file, text, limit, fast)
}

/// The parse of `text` once its limits are known: the limit it breaks, else
/// the fast path's tree, else pest's parse (which the limits have passed).
fn judged(
    file: FileId,
    text: &str,
    limit: Option<Diagnostic>,
    fast: Option<ast::File>,
) -> Result<ast::File, Diagnostics> {
    if let Some(diagnostic) = limit {
        return Err(diagnostic.into());
    }
    fast.map_or_else(|| pest_parse(file, text), Ok)
}

/// Texts from this size on are pre-scanned on a second thread while the
/// fast path parses them (a thread costs tens of microseconds; the scan
/// of a 32 MB file, 50 ms).
const SCAN_BESIDE: usize = 1 << 20;

/// The limits' verdict on `text` and the fast path's tree. pest must not
/// read a text before the pre-scan has passed it, but the fast path is
/// bounded on its own (its depth and operator limits), so a big text is
/// scanned and parsed at once; a tree of a text over the limits is
/// dropped.
fn scan_and_parse(file: FileId, text: &str) -> (Option<Diagnostic>, Option<ast::File>) {
    if text.len() >= SCAN_BESIDE {
        return crate::sync::beside(|| limits::check(file, text), || fast::parse(file, text));
    }
    match limits::check(file, text) {
        Some(limit) => (Some(limit), None),
        None => (None, fast::parse(file, text)),
    }
}

/// The pre-scan of a big text's limits, on a thread of its own while its
/// caller goes on with the text's tree (see [`parse_scanning`]).
#[derive(Debug)]
#[must_use = "the text is not known to parse until the verdict is taken"]
pub struct Scanning(std::thread::JoinHandle<Option<Diagnostic>>);

impl Scanning {
    /// The limit the text breaks, if any, once the scan is done.
    pub fn verdict(self) -> Option<Diagnostic> {
        self.0.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

/// Parses one file as [`parse`] does, except that the limits of a big text
/// the fast path reads are scanned after the parse, on a thread of its own:
/// the tree comes with that [`Scanning`], whose verdict the caller takes
/// before it reports anything, and a verdict that is a diagnostic is the
/// answer instead of the tree (the file does not parse). `ignite check`
/// lowers the tree meanwhile: its lowering leaves the second core idle, and
/// the scan, beside the parse, took from the parse's two threads.
///
/// # Errors
/// The syntax diagnostics when the text is not a valid `.ign` file.
pub fn parse_scanning(
    file: FileId,
    text: &std::sync::Arc<str>,
) -> Result<(ast::File, Option<Scanning>), Diagnostics> {
    if text.len() < SCAN_BESIDE {
        return parse(file, text).map(|tree| (tree, None));
    }
    let Some(tree) = fast::parse(file, text) else {
        return judged(file, text, limits::check(file, text), None).map(|tree| (tree, None));
    };
    let shared = std::sync::Arc::clone(text);
    match std::thread::Builder::new().spawn(move || limits::check(file, &shared)) {
        Ok(scan) => Ok((tree, Some(Scanning(scan)))),
        Err(_) => {
            judged(file, text, limits::check(file, text), Some(tree)).map(|tree| (tree, None))
        }
    }
}

/// Parses one file as [`parse`] does, keeping each top-level declaration's
/// tree (or errors) on this thread by its text: the next parse of a text
/// that shares declarations with this one parses only the others. The
/// result is [`parse`]'s.
///
/// When every declaration parses clean alone, the file's tree is their
/// trees in order (see `error::kept_trees`), and neither the file nor its
/// kept declarations are read again; otherwise [`parse`] reads the file,
/// and its recovery finds the declarations' parses kept.
///
/// # Errors
/// The syntax diagnostics when the text is not a valid `.ign` file.
pub fn parse_kept(file: FileId, text: &str) -> Result<ast::File, Diagnostics> {
    let starts = error::chunk_starts(text);
    error::kept_trees(file, text, &starts).map_or_else(|| parse(file, text), Ok)
}

/// Parses one file with pest, the reference parser: the path for invalid
/// files and the source of every syntax diagnostic.
///
/// Recovery parses each top-level declaration alone (`error::chunks`,
/// cached by text). When every declaration starts at the top level of the
/// text (outside brackets and strings), a declaration that does not parse
/// alone means the file does not parse either: a declaration of a file
/// that parses ends inside its chunk (its body is a `{...}` closed before
/// the next declaration's keyword), and the text from a declaration's
/// start on is read the same way alone or in the file. The chunks' errors
/// are then the answer, and pest does not read the whole file: an edit of
/// a broken file costs the parse of the declaration it changed. Otherwise
/// pest parses the whole file first, as the grammar of record.
fn pest_parse(file: FileId, text: &str) -> Result<ast::File, Diagnostics> {
    error::detail();
    let starts = error::chunk_starts(text);
    if limits::at_top_level(text, &starts[1..]) {
        let chunks = error::chunks(file, text, &starts);
        if chunks.broken {
            return Err(chunks.diagnostics);
        }
    }
    whole_parse(file, text, &starts)
}

/// Parses the whole of `text` with pest; its recovery chunks start at
/// `starts`.
fn whole_parse(file: FileId, text: &str, starts: &[usize]) -> Result<ast::File, Diagnostics> {
    match IgnParser::parse(Rule::file, text) {
        Ok(mut pairs) => {
            let mut builder = items::Builder::new(file, text);
            let root = pairs.next().unwrap_or_else(|| unreachable!("`file` yields one pair"));
            let ast = builder.file(root);
            builder.finish(ast)
        }
        Err(error) => Err(error::recover(file, text, starts, &error)),
    }
}

/// The span of a pair in `file`, without the whitespace and comments pest
/// leaves at the end of a rule that ends in an optional part.
fn span(file: FileId, pair: &Pair<'_, Rule>) -> Span {
    Span::new(file, pair.as_span().start(), content_end(pair))
}

/// Where the last token of `pair` ends. Text after its last child holds
/// only literal tokens, whitespace and comments (strings are pairs), so a
/// `#` there always starts a comment.
fn content_end(pair: &Pair<'_, Rule>) -> usize {
    let (start, end) = (pair.as_span().start(), pair.as_span().end());
    let Some(last) = pair.clone().into_inner().next_back() else { return end };
    let inner_end = content_end(&last).max(start);
    let tail = &pair.get_input()[inner_end..end];
    let mut significant = 0;
    let mut offset = 0;
    for line in tail.split_inclusive('\n') {
        let code = line.split('#').next().unwrap_or("");
        let trimmed = code.trim_end();
        if !trimmed.is_empty() {
            significant = offset + trimmed.len();
        }
        offset += line.len();
    }
    inner_end + significant
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use std::path::{Path, PathBuf};

    use super::{fast, limits, parse, pest_parse};
    use crate::ast::{Keyword, KeywordRole};
    use crate::source::FileId;

    const SAMPLE: &str = r#"
use "tools.ign"
tool Lookup {
  description "Find a thing"
  param sku: string "the SKU"
  param limit: integer? = 5
  requires_capability db_read, other
  returns {sku: sku, "n": limit * 2, tags: [1, 2.5, true, null]}
}
agent Helper {
  provider anthropic fallback openai, script "s.json"
  model "m" fallback "n"
  tools Lookup
  input q: string
  prompt """
    Answer {q}
    """
}
contract C {
  runner thread_pool(pool_size: 2)
  input a: float = 1
  compute b = if a > 1 and not (a == 3) then -a % 2 else a[0].x
  guard g = b != 0 else "b is {b}"
  output b as result
}
"#;

    /// More of the language for the fast-path tests: every tool, agent and
    /// provider statement, escapes, floats, comments, calls, objects.
    const SAMPLE2: &str = r#"# a comment
provider Local {   # trailing
  kind openai
  base_url "http://x/{1}"
  api_key env("KEY")
  timeout 2.5e1
  retries 3
  rate_limit 5 * 100 per minute
  token_limit 2e5 per hour  # lowering reports the float
  price input 0.15 output -0.6
}
tool T {
  param a: array<integer>? = [1, -2, 3,] "the \"a\"\n\t{x}"
  requires_approval when len(a) > 2 and a[0] != 1
  requires_approval
  header "X-A" = "v{a[0] + 1}"
  timeout 30
  http post "http://h"
  exec "sh" r"-c" """
      echo {a}
        two \{
    """
  builtin "b" {"k": 1, k2: {}, k3: []}
  native
  mcp Clock "get_time"
  result array<R>?
}
mcp Clock {   # a server
  command "uvx" r"mcp-server-time" "--local-timezone={z}"
  url "http://127.0.0.1:9/mcp"
  env TZ = "UTC"
  env TOKEN = env("CLOCK_TOKEN", "x")
  header "Authorization" = "Bearer {env("T")}"
  timeout 30
}
type R {   # a record
  a: string "the a"
  b: array<E> = ["x",] "bs"
  c: R2?
}
enum E { x, y, }
enum E2 {
  p,
  q
}
agent A {
  provider p "f.json" fallback q, r
  model "m"
  system_prompt "s"
  capabilities c1, c2
  max_tool_iterations 8
  temperature 0.2
  max_tokens 1024
  prompt "p {f(x: 1, y)} {g()}"
  result R
  result_retries 2
}
contract D {
  runner inline
  budget usd 0.5, model_calls 40,
    tokens 200000
  budget model_calls 1.5e1
  input x: object
  compose y = C(a: x.b.c, 2)
  compute z = not a or b and c == d != e < f <= g > h >= i + j - k * l / m % -n.o[p]
  compute w = (1 + 2) * -(3) - - 4 + if a then b else c + 1
  compute v = a * not b == c
  guard h = 1.5and z
  compute m = match x.y { "a" => T(a: 1), 2 => try T(a: 2)
    true => null, null => -1, _ => for i in [1, 2] if i > 1: i * 2 }
  compute f = for item in items: try T(a: item.x, b)
  compute r = matches(r, r"\d{4}\{") or r"" == {r"k": r"{v}"}.k
  output y.q.r as s
  output z
}
"#;

    /// Test blocks: every statement form.
    const TESTS: &str = r#"
test "vip customers get the premium agent" {
  run Triage(message: "refund please", tier: "vip",)
  mock CreateTicket returns {id: "T-1"}   # any arguments
  mock DatabaseLookup(sku: "A1") returns {name: "Widget", price: 100.0}
  mock SendEmail fails "smtp down"
  mock Empty() returns null
  replay "cassettes/triage_vip.json"
  expect reply.priority == "high" and not contains(reply.summary, "x")
  expect_error "out of stock"
  expect_calls SendEmail == 0
  expect_calls DatabaseLookup(sku: "A1",) >= 1
  expect_calls CreateTicket != 2
  expect_calls CreateTicket<3
  expect_calls CreateTicket()<=3
  expect_calls CreateTicket > 0
  snapshot calls
  approve Refund
  deny SendEmail "not today"
}
test """multi
  line""" {
  run Empty()
  snapshot
}
test "empty" {}
"#;

    /// Eval blocks: every statement form.
    const EVALS: &str = r#"
eval "tickets are triaged right" {
  run Classify
  dataset "evals/tickets.jsonl"
  repeat 3
  score priority = ticket.priority == expected.priority
  score short = len(ticket.summary) <= 200   # a rate
  score faithful = Judge(summary: ticket.summary, email: inputs.email)
  require priority >= 0.9 and faithful > 0.5
}
eval """two
  lines""" {
  run C
}
eval "empty" {}
"#;

    #[test]
    fn eval_blocks_parse_the_same_on_both_paths() {
        assert_eq!(fast_agrees(EVALS), Ok(true));
        let file = parse(FileId(0), EVALS).expect("evals parse");
        insta::assert_debug_snapshot!(file);
    }

    #[test]
    fn test_blocks_parse_the_same_on_both_paths() {
        assert_eq!(fast_agrees(TESTS), Ok(true));
        let file = parse(FileId(0), TESTS).expect("tests parse");
        insta::assert_debug_snapshot!(file);
    }

    /// Every `.ign` file under `dir`.
    fn ign_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("dir reads").flatten() {
            let path = entry.path();
            if path.is_dir() {
                ign_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "ign") {
                out.push(path);
            }
        }
    }

    /// The fast path's AST equals pest's, or it declines; pest is never
    /// overruled on input it rejects. `Ok(true)` when the fast path parsed.
    fn fast_agrees(text: &str) -> Result<bool, String> {
        if limits::check(FileId(0), text).is_some() {
            return Ok(false);
        }
        let Some(fast) = fast::parse(FileId(0), text) else { return Ok(false) };
        match pest_parse(FileId(0), text) {
            Ok(pest) if pest == fast => Ok(true),
            Ok(pest) => Err(format!("fast {fast:#?}\npest {pest:#?}")),
            Err(e) => Err(format!("fast parsed what pest rejects: {e:?}")),
        }
    }

    #[test]
    fn the_fast_path_matches_pest_on_every_file() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        ign_files(&root.join("tests/corpus"), &mut files);
        ign_files(&root.join("contracts"), &mut files);
        assert!(files.len() > 10, "corpus found");
        let mut used = 0;
        for path in &files {
            // Files that are not UTF-8 never reach the parser.
            let Ok(text) = std::fs::read_to_string(path) else { continue };
            let relative = path.strip_prefix(root).expect("under root");
            let fast = crate::on_big_stack(move || fast_agrees(&text));
            let fast = fast.unwrap_or_else(|e| panic!("{}: {e}", relative.display()));
            let valid = ["tests/corpus/ok", "tests/corpus/run", "tests/corpus/syntax", "contracts"]
                .iter()
                .any(|dir| relative.starts_with(dir));
            assert!(fast || !valid, "{}: the fast path declined a valid file", relative.display());
            used += usize::from(fast);
        }
        assert!(used > 0);
    }

    /// A contract's body split between two threads anywhere (every line
    /// start, and every first word of a line, of every fixture and
    /// example) parses as the whole file does: the second thread's
    /// statements are taken where this thread reaches their start, and
    /// dropped elsewhere (inside a string, another declaration, ...).
    #[test]
    fn a_body_split_anywhere_parses_as_the_whole() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        ign_files(&root.join("tests/corpus"), &mut files);
        ign_files(&root.join("contracts"), &mut files);
        let texts: Vec<(PathBuf, String)> = files
            .into_iter()
            .filter_map(|path| Some((path.clone(), std::fs::read_to_string(path).ok()?)))
            .collect();
        crate::on_big_stack(move || {
            let mut splits = 0;
            for (path, text) in &texts {
                let whole = fast::parse(FileId(0), text);
                let lines = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
                for line in lines {
                    let word = line + text[line..].len() - text[line..].trim_start().len();
                    for at in [line, word] {
                        let split = fast::parse_split_at(FileId(0), text, at);
                        assert!(split == whole, "{} split at {at}", path.display());
                        splits += 1;
                    }
                }
            }
            assert!(splits > 5000, "{splits} splits");
        });
        // Two statements on one line are refused wherever the split is.
        let text =
            "contract C {\n  input x: integer\n  compute a = x compute b = a\n  output b\n}\n";
        for at in 0..text.len() {
            assert_eq!(fast::parse_split_at(FileId(0), text, at), None, "split at {at}");
        }
    }

    /// The shortcut of `pest_parse` (a declaration that does not parse
    /// alone answers for the file) gives what pest's parse of the whole
    /// file gives, on texts the fast path declines: every fixture cut at
    /// every [`EVERY`]th line end, and with every [`EVERY`]th line removed
    /// (a declaration broken in the middle of the file). Files are read up
    /// to their first line end past 4 KB.
    #[test]
    fn a_broken_declaration_answers_for_the_file() {
        const EVERY: usize = 4;
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        ign_files(&root.join("tests/corpus"), &mut files);
        ign_files(&root.join("contracts"), &mut files);
        let mut texts = Vec::new();
        for path in &files {
            let Ok(text) = std::fs::read_to_string(path) else { continue };
            let past = text.char_indices().map(|(i, _)| i).find(|&i| i >= 4096);
            let end = past.and_then(|p| text[p..].find('\n').map(|i| p + i));
            let text = &text[..end.unwrap_or(text.len())];
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            for cut in (0..lines.len()).step_by(EVERY) {
                texts.push((path.clone(), lines[..cut].concat()));
                let mut without = lines.clone();
                without.remove(cut);
                texts.push((path.clone(), without.concat()));
            }
        }
        crate::on_big_stack(move || {
            let (mut broken, mut whole) = (0, 0);
            for (path, text) in &texts {
                if limits::check(FileId(0), text).is_some()
                    || fast::parse(FileId(0), text).is_some()
                {
                    continue;
                }
                let starts = super::error::chunk_starts(text);
                let reference = super::whole_parse(FileId(0), text, &starts);
                assert_eq!(pest_parse(FileId(0), text), reference, "{}:\n{text}", path.display());
                let shortcut = limits::at_top_level(text, &starts[1..])
                    && super::error::chunks(FileId(0), text, &starts).broken;
                if shortcut { broken += 1 } else { whole += 1 }
            }
            // Both ways are taken.
            assert!(broken > 100 && whole > 0, "{broken} shortcuts, {whole} whole parses");
        });
    }

    /// [`parse_kept`] gives what [`parse`] gives, on one thread in turn
    /// (so that later texts reuse the declarations kept of earlier ones,
    /// moved): every fixture whole, cut at every [`EVERY`]th line end,
    /// with a line put in or taken out there (the declarations after it
    /// move), and after the fixture before it (they all move).
    #[test]
    fn kept_declarations_parse_as_the_whole_file() {
        const EVERY: usize = 3;
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        ign_files(&root.join("tests/corpus"), &mut files);
        ign_files(&root.join("contracts"), &mut files);
        files.sort();
        let mut texts = Vec::new();
        let mut before = String::new();
        for path in &files {
            let Ok(text) = std::fs::read_to_string(path) else { continue };
            texts.push((path.clone(), text.clone()));
            texts.push((path.clone(), format!("{before}{text}")));
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            for cut in (0..lines.len()).step_by(EVERY) {
                texts.push((path.clone(), lines[..cut].concat()));
                let mut edited = lines.clone();
                edited.insert(cut, "\n");
                texts.push((path.clone(), edited.concat()));
                edited.remove(cut);
                edited.remove(cut);
                texts.push((path.clone(), edited.concat()));
                edited.insert(cut, "contract Inserted {\n  input a: integer\n  output a\n}\n");
                texts.push((path.clone(), edited.concat()));
            }
            before = text;
        }
        crate::on_big_stack(move || {
            let mut moved = 0;
            for (path, text) in &texts {
                let kept = super::parse_kept(FileId(0), text);
                assert_eq!(kept, parse(FileId(0), text), "{}:\n{text}", path.display());
                let starts = super::error::chunk_starts(text);
                moved += usize::from(kept.is_ok() && starts.len() > 1);
            }
            // Most texts are put together from declarations kept.
            assert!(moved > texts.len() / 4, "{moved} of {}", texts.len());
        });
    }

    #[test]
    fn the_fast_path_parses_the_samples() {
        assert_eq!(fast_agrees(SAMPLE), Ok(true));
        assert_eq!(fast_agrees(SAMPLE2), Ok(true));
    }

    /// The grammar's `ident` rule excludes exactly the shared reserved
    /// words: pest rejects each as a name, and the rule lists no other.
    #[test]
    fn the_grammar_reserves_the_shared_words() {
        use pest::Parser as _;
        for word in crate::ast::RESERVED {
            assert!(
                super::IgnParser::parse(super::Rule::ident, word).is_err(),
                "`{word}` is a name to pest"
            );
            assert!(super::IgnParser::parse(super::Rule::ident, &format!("{word}x")).is_ok());
        }
        let grammar = include_str!("../../grammar/ignite.pest");
        let rule = grammar
            .lines()
            .skip_while(|line| !line.starts_with("ident = "))
            .nth(1)
            .expect("the ident rule");
        let words = rule.split(") ~").next().unwrap_or_default();
        let listed: Vec<&str> = words.split('"').skip(1).step_by(2).collect();
        assert_eq!(listed, crate::ast::RESERVED, "{rule}");
        // Each reserved word is an expression keyword, or an operator or
        // literal of the grammar.
        for word in crate::ast::RESERVED {
            let keyword = Keyword::of(word).is_some_and(|k| k.role() == KeywordRole::Expression);
            let spelt = grammar.lines().any(|line| {
                ["op_", "boolean ", "null "].iter().any(|rule| line.starts_with(rule))
                    && line.contains(&format!("\"{word}\""))
            });
            assert!(
                keyword != spelt,
                "`{word}` is a keyword: {keyword}, an operator or literal: {spelt}"
            );
        }
    }

    /// The grammar's `kw_*` rules are exactly the table of keywords, in
    /// order, each spelt as its name; expression keywords are reserved.
    #[test]
    fn the_grammar_spells_the_keyword_table() {
        let grammar = include_str!("../../grammar/ignite.pest");
        let rules: Vec<(&str, &str)> = grammar
            .lines()
            .filter_map(|line| line.strip_prefix("kw_"))
            .map(|line| {
                let (name, rest) = line.split_once(" = @{ \"").expect("kw_name = @{ \"word\"");
                let word = rest.split('"').next().unwrap_or_default();
                assert_eq!(
                    rest.strip_prefix(word),
                    Some("\" ~ !(ASCII_ALPHANUMERIC | \"_\") }"),
                    "kw_{name} is the whole word"
                );
                (name, word)
            })
            .collect();
        let table: Vec<(&str, &str)> =
            Keyword::ALL.iter().map(|k| (k.as_str(), k.as_str())).collect();
        assert_eq!(rules, table);
        for keyword in Keyword::ALL {
            let reserved = crate::ast::RESERVED.contains(&keyword.as_str());
            assert_eq!(reserved, keyword.role() == KeywordRole::Expression, "{keyword:?}");
            assert_eq!(Keyword::of(keyword.as_str()), Some(*keyword));
        }
    }

    /// `r"` always starts a raw string, in both parsers; `r` alone is a name.
    #[test]
    fn raw_strings_parse_the_same_on_both_paths() {
        let text = "contract C {\n  compute a = matches(r, r\"\\d{4}\")\n}\n";
        assert_eq!(fast_agrees(text), Ok(true));
        let file = parse(FileId(0), text).expect("parses");
        let crate::ast::Item::Contract(contract) = &file.items[0] else { panic!("a contract") };
        let crate::ast::Node::Compute(_, expr, _) = &contract.nodes[0] else { panic!("compute") };
        let crate::ast::ExprKind::Call(call) = &expr.kind else { panic!("a call") };
        assert_eq!(call.args[1].value.as_plain_string().as_deref(), Some("\\d{4}"));
        // Not closed on its line; `r` before a string is not a name.
        for broken in ["contract C {\n  compute a = r\"x\n\"\n}\n", "provider r\"x\" {}\n"] {
            assert_eq!(fast_agrees(broken), Ok(false));
            assert!(parse(FileId(0), broken).is_err(), "{broken}");
        }
    }

    #[test]
    fn a_byte_order_mark_is_skipped_by_both_parsers() {
        let text = format!("\u{feff}{SAMPLE}");
        assert_eq!(fast_agrees(&text), Ok(true));
        assert_eq!(parse(FileId(0), &text).map(|f| f.items.len()), Ok(4));
        // Only at the start of the file.
        assert!(parse(FileId(0), &format!("{SAMPLE}\u{feff}")).is_err());
    }

    #[test]
    fn the_sample_parses() {
        let file = parse(FileId(0), SAMPLE).expect("sample parses");
        assert_eq!(file.items.len(), 4);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Arbitrary text never panics the parser.
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
            let _ = parse(FileId(0), &text);
        }

        /// Deep nesting is reported, not overflowed.
        #[test]
        fn deep_nesting_is_an_error(depth in 200..3000usize, op in prop::sample::select(vec!["(", "[", "-", "not ", "if true then "])) {
            let text = format!("contract C {{\n compute x = {}1\n output x\n}}\n", op.repeat(depth));
            // The compiler parses on a thread with a large stack; so does this test.
            let parsed = crate::on_big_stack(move || parse(FileId(0), &text).is_ok());
            prop_assert!(depth <= 256 || !parsed || op == "-" || op == "not ");
        }

        /// Nor does a valid file with a slice cut out or a byte repeated.
        #[test]
        fn damaged_files_never_panic(at in 0..SAMPLE.len(), len in 0..40usize, insert in "[{}()\"\\\\#a-z=.,<>?\n éü日\u{fffd}-]{0,4}") {
            let mut text = SAMPLE.to_owned();
            let start = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            let end = (start + len).min(text.len());
            let end = (end..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
            text.replace_range(start..end, &insert);
            let _ = parse(FileId(0), &text);
        }

        /// A damaged sample after another, and again with a line put in
        /// before it: [`parse_kept`] gives what [`parse`] gives (the second
        /// time from the declarations kept, moved).
        #[test]
        fn kept_declarations_of_damaged_samples_parse_as_the_whole_file(
            first in 0..4usize,
            second in 0..4usize,
            at in 0..2000usize,
            len in 0..40usize,
            insert in "[{}()\"\\\\#a-z0-9=.,:<>?+*%!\n \t-]{0,6}",
        ) {
            let samples = [SAMPLE, SAMPLE2, TESTS, EVALS];
            let mut damaged = samples[second].to_owned();
            let at = at % damaged.len();
            let start = (0..=at).rev().find(|&i| damaged.is_char_boundary(i)).unwrap_or(0);
            let end = (start + len).min(damaged.len());
            let end = (end..=damaged.len()).find(|&i| damaged.is_char_boundary(i)).unwrap_or(damaged.len());
            damaged.replace_range(start..end, &insert);
            let texts =
                [format!("{}{damaged}", samples[first]), format!("{}\n{damaged}", samples[first])];
            let parses = crate::on_big_stack(move || {
                    texts.map(|text| {
                        let kept = super::parse_kept(FileId(0), &text);
                        (kept, parse(FileId(0), &text), text)
                    })
                });
            for (kept, whole, text) in parses {
                prop_assert_eq!(kept, whole, "{}", text);
            }
        }

        /// Damaged samples (slices cut, characters or tokens inserted): the
        /// fast path declines or agrees with pest.
        #[test]
        fn the_fast_path_agrees_with_pest(
            sample in 0..4usize,
            at in 0..2000usize,
            len in 0..40usize,
            insert in prop_oneof![
                "[{}()\"\\\\#a-z0-9=.,:<>?+*%!\n \t-]{0,6}",
                prop::sample::select(vec![
                    " and ", " or ", " not ", "if a then b else ", " then ", " else ", "true",
                    "null", ".x", "[0]", "(1)", "\"s{x}\"", "\"\"\"", "\n", "#", " == ", " - ",
                    "1.5", "1e3", "99999999999999999999", "\\q", "\n  compute q = 1\n",
                    "\n  output q\n", "f(a: 1)", "{k: 1}", " fallback ", " as ", " match x { ",
                    " => ", " _ ", "for i in ", " in ", ": ", " try ", "},", "\"a\" => 1",
                    "if c: ", "match", "for", "try",
                    "\n  result R\n", "\ntype T {\n  a: string\n}\n", "enum E { a, b }",
                    "\n  result_retries 1\n", " type ", " enum ", "\u{feff}",
                    " returns ", " fails ", " calls", "r\"\\d{4}\"", "r\"", " r",
                    " per ", " per minute", "\n  rate_limit 3 per second\n",
                    "\n  price input 1 output 2\n", " input ", " output ",
                    "\n  mcp S \"t\"\n", "\n  env A = 1\n", " command ", " url ", " mcp ",
                    "\n  budget usd 1, tokens 5\n", " model_calls 3", " usd ",
                    "\n  snapshot\n", "\n  run C()\n", " mock T(", "expect_error ", "\n  expect_calls T == 1\n", " expect_calls ", " <= ", "test ",
                    "\n  requires_approval\n", " requires_approval when ", " when ",
                    "\n  approve T\n", "\n  deny T \"no\"\n", " approve ", " deny ",
                    "\n  score s = 1\n", " score ", "\n  repeat 2\n", " require ", "eval ",
                    "\n  dataset \"d.jsonl\"\n", " dataset ", " run C\n",
                    "é", "名前", " # caf\u{fffd}\n", "\"日本語 ✓\"", "\u{fffd}", "\u{1f525}",
                ]).prop_map(str::to_owned),
            ],
        ) {
            let sample = [SAMPLE, SAMPLE2, TESTS, EVALS][sample];
            let mut text = sample.to_owned();
            let at = at % text.len();
            let start = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            let end = (start + len).min(text.len());
            let end = (end..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
            text.replace_range(start..end, &insert);
            if let Err(e) = fast_agrees(&text) {
                prop_assert!(false, "{e}\n--- text:\n{text}");
            }
        }
    }
}
