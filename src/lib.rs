//! ignite: declarative contract graphs with typed tools and LLM agents.
//!
//! ```text
//! .ign text ──load/parse──▶ AST ──lower──▶ checked Program ──▶ runtime, tools, llm
//! ```
//!
//! | stage | module | input | output | errors |
//! | --- | --- | --- | --- | --- |
//! | read + import | [`load`] | a root path | [`Sources`] + one [`ast::File`] per file | [`Diagnostics`] (`ignite::io`, `ignite::import`) |
//! | parse | [`syntax`] | one file's text | [`ast::File`] | [`Diagnostics`] (`ignite::syntax`) |
//! | lower + check | [`lower`] | the files' ASTs | [`ir::Program`] | [`Diagnostics`] (`ignite::lower`) |
//! | run | [`runtime`] | a [`ir::Program`], a contract, JSON inputs | JSON outputs + [`trace::Trace`] + [`usage::UsageTotals`] | [`runtime::RunError`] |
//! | plan | [`plan`] | a [`ir::Program`], a contract (and inputs, for a dry run) | [`plan::Plan`] (worst cases), [`plan::dry::DryRun`] (the effects, none performed) | `check`'s budget [`Diagnostics`] |
//! | tools | [`tools`] | a tool and JSON arguments | a JSON value | [`failure::NodeError`] |
//! | agents | [`llm`] | an agent and its inputs | the final text | [`failure::NodeError`] |
//! | format | [`fmt`] | one file's text | the text in the canonical layout | [`fmt::FmtError`] (syntax diagnostics, or a broken guarantee) |
//! | tests | `testing` | checked programs' `test` blocks | one result per test | `testing::Failure` |
//! | evals | `evals` | checked programs' `eval` blocks, datasets | scores with intervals, baseline deltas | `evals::EvalError` |
//! | editors | [`lsp`] | an editor's LSP messages | diagnostics, navigation, completion, runs | LSP error responses |
//! | serve | `serve` | an [`runtime::Engine`] and limits | an HTTP service of its contracts | JSON errors with the run's codes |
//! | mcp | `mcp` | an [`runtime::Engine`] and a capability grant | an MCP server of its tools and contracts | `isError` results with the run's codes |
//! | command line | [`cli`] | arguments | exit code, printed reports | exit codes |
//!
//! [`compile`] runs the first three stages: reading and parsing report
//! every file's errors, and lowering runs only when every file parsed.
//!
//! Imports run one way, down these floors (ground floor first; a module
//! names only modules below it, which a unit test checks):
//!
//! | floor | modules |
//! | --- | --- |
//! | 1 | `sync` (locks that outlive a panic), [`http_client`] (every HTTP client's TLS) |
//! | 2 | [`source`], [`suggest`] ("did you mean"), `value` (the run-time value), `shutdown`, [`telemetry`], `backoff`, [`media`] (images and documents), `markup` (XML and HTML escapes) |
//! | 3 | [`diagnostic`], [`ast`] |
//! | 4 | [`syntax`], [`ir`] (names a provider kind by index, holds no `llm` type), `failure` (the run's one failure type) |
//! | 5 | [`load`], [`lower`], `eval`, `usage`, [`budget`] (run budgets), `render`, `report` (self-contained HTML pages), [`fmt`] (the formatter) |
//! | 6 | [`tools`], [`trace`], [`plan`] (worst cases and dry runs) |
//! | 7 | [`effects`] |
//! | 8 | [`llm`] |
//! | 9 | [`runtime`] |
//! | 10 | `serve`, `testing`, `evals` (scored datasets), [`lsp`] (the language server) |
//! | 11 | `mcp` (tools and contracts over the Model Context Protocol), `restate` (feature `restate`) |
//! | 12 | [`cli`], [`prelude`] |
//!
//! A program that embeds ignite starts from [`prelude`]. The stage modules
//! linked above are public for tools that work on one stage; the ones in
//! plain code (`value`, `eval`, `failure`, `serve`, ...) are the crate's own,
//! and what of them an embedder needs ([`prelude::NodeError`],
//! [`prelude::UsageTotals`]) is re-exported.

pub mod ast;
pub(crate) mod backoff;
pub mod budget;
pub mod cli;
pub mod diagnostic;
pub mod effects;
pub(crate) mod eval;
pub(crate) mod evals;
pub(crate) mod failure;
pub mod fmt;
#[cfg(test)]
mod house;
pub mod http_client;
pub mod ir;
pub mod llm;
pub mod load;
pub mod lower;
pub mod lsp;
pub(crate) mod markup;
pub(crate) mod mcp;
pub mod media;
pub mod plan;
pub mod prelude;
pub(crate) mod render;
pub(crate) mod report;
#[cfg(feature = "restate")]
pub(crate) mod restate;
pub mod runtime;
pub(crate) mod serve;
pub(crate) mod shutdown;
pub mod source;
pub mod suggest;
pub(crate) mod sync;
pub mod syntax;
pub mod telemetry;
pub(crate) mod testing;
pub mod tools;
pub mod trace;
pub(crate) mod usage;
pub(crate) mod value;

use std::path::Path;

use diagnostic::Diagnostics;
use ir::Program;
use source::Sources;

/// Stack of the thread checks run on: deep expressions (a sum of ten
/// thousand terms) recurse once per level.
const STACK_SIZE: usize = 256 * 1024 * 1024;

/// The result of compiling one root file.
#[derive(Debug)]
pub struct Compilation {
    /// Every file read.
    pub sources: Sources,
    /// Every diagnostic, sorted by file and position.
    pub diagnostics: Diagnostics,
    /// The checked program; present exactly when there is no error.
    pub program: Option<Program>,
}

/// Reads `root` and everything it `use`s, then checks the program.
#[must_use]
pub fn compile(root: &Path) -> Compilation {
    compile_with(root, load::Options::default())
}

/// [`compile`] with the `use` reach of `options` (`--allow-outside`).
#[must_use]
pub fn compile_with(root: &Path, options: load::Options) -> Compilation {
    let root = root.to_path_buf();
    on_big_stack(move || finish(load::load_scanning(&root, options)))
}

/// Checks one in-memory file named `name` (its `use`s resolve from the
/// folder of `name`).
#[must_use]
pub fn compile_source(name: &str, text: &str) -> Compilation {
    let (name, text) = (name.to_owned(), text.to_owned());
    on_big_stack(move || finish(load::load_source_scanning(&name, &text)))
}

/// Checks a program already loaded (by [`load::load_open`], say).
///
/// The limits of a big file may still be being scanned
/// ([`load::load_scanning`]): the file is lowered meanwhile, and when it
/// breaks a limit it did not parse, so the diagnostics are the load's and
/// the limit's, as if the scan had come first.
#[must_use]
pub fn finish(mut loaded: load::Loaded) -> Compilation {
    let scanning = loaded.has_scans().then(|| loaded.diagnostics.clone());
    let mut program = None;
    if !loaded.diagnostics.has_errors() {
        let (lowered, found) =
            lower::lower(&loaded.sources, std::mem::take(&mut loaded.files), loaded.lock.as_ref());
        loaded.diagnostics.extend(found);
        // Budgets are checked against each contract's plan.
        if let Some(checked) = &lowered {
            loaded.diagnostics.extend(plan::check(checked));
        }
        program = lowered.filter(|_| !loaded.diagnostics.has_errors());
    }
    let refused: Vec<diagnostic::Diagnostic> =
        loaded.take_scans().into_iter().filter_map(|(_, v)| v).collect();
    if let (false, Some(read)) = (refused.is_empty(), scanning) {
        loaded.diagnostics = read;
        refused.into_iter().for_each(|limit| loaded.diagnostics.push(limit));
        program = None;
    }
    let load::Loaded { sources, mut diagnostics, .. } = loaded;
    diagnostics.sort(&sources);
    Compilation { sources, diagnostics, program }
}

std::thread_local! {
    /// True on a thread [`on_big_stack`] started.
    static ON_BIG_STACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` on a thread with a 256 MiB stack, or on this thread when one
/// cannot be started or when this thread is already such a thread (`ignite
/// check` compiles on the thread its command runs on: a second thread cost
/// 14 % of a one-line check's wall time; BENCHMARKS.md, "Start-up"). Its
/// callers are near the top of their stack, so `f` still has almost all
/// of it.
pub fn on_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    if ON_BIG_STACK.with(std::cell::Cell::get) {
        return f();
    }
    let (sender, receiver) = std::sync::mpsc::channel();
    let shared = std::sync::Arc::new(std::sync::Mutex::new(Some(f)));
    let job = std::sync::Arc::clone(&shared);
    let spawned = std::thread::Builder::new().stack_size(STACK_SIZE).spawn(move || {
        ON_BIG_STACK.with(|on| on.set(true));
        let f = job.lock().ok().and_then(|mut f| f.take());
        if let Some(f) = f {
            let _ = sender.send(f());
        }
    });
    match spawned {
        Ok(handle) => {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
            match receiver.recv() {
                Ok(value) => value,
                Err(_) => unreachable!("the check thread sends its result before it ends"),
            }
        }
        Err(_) => {
            let f = shared.lock().ok().and_then(|mut f| f.take());
            match f {
                Some(f) => f(),
                None => unreachable!("a thread that failed to start did not take the job"),
            }
        }
    }
}
