//! Lowering: parsed files to a checked [`Program`], with every semantic
//! check of `ignite check`.
//!
//! Input: the [`Sources`] and the ASTs of a program's files (see
//! [`crate::load`]). Output: the [`Program`] when no error was found, and
//! every diagnostic (errors and warnings) either way.
//!
//! The checks run in a fixed order, one family per file, each collecting
//! all its findings:
//!
//! | order | file | what |
//! | --- | --- | --- |
//! | 1 | `names.rs` | the global declaration table, duplicate declarations |
//! | 2 | `records.rs` | `type` and `enum` declarations: fields, variants, recursion |
//! | 3 | `providers.rs` | `provider` declarations |
//! | 3b | `mcp.rs` | `mcp` declarations; `mcp` tools' params and result from `ignite.lock` |
//! | 4 | `tools.rs` | tools: params, implementation, `tool_name` clashes |
//! | 5 | `agents.rs` | agents: providers, models, tools, capabilities, prompts |
//! | 6 | `contracts.rs` | contract inputs first (call signatures), then bodies (`budgets.rs`: the `budget`) |
//! | 7 | `calls.rs` | node calls of tools, agents and contracts, their arguments |
//! | 8 | `control.rs` | branches, collections, `try`: patterns, where they may appear |
//! | 9 | `cycles.rs` | per contract: cycles, the graph, guard gates, unused nodes; then recursive composition |
//! | 10 | `typing.rs` | per clean contract, after its graph: each node's static type, type errors, `match` exhaustiveness |
//! | 11 | `test_blocks.rs` | `test` blocks: the contract run, mocks, cassette, `expect`s |
//! | 12 | `eval_blocks.rs` | `eval` blocks: the contract run, dataset, scores and judges, `require`s |
//!
//! `types.rs` (types, constants, params), `expr.rs` (name resolution in
//! expressions) and `vars.rs` (its table of names) serve them all. A contract that already has errors is not
//! checked for cycles or unused nodes: its graph would be wrong.
//!
//! Lookups go through hash maps built once, and "did you mean" runs only on
//! the error path, so checking is linear in the size of the program.

mod agents;
mod budgets;
mod builtins;
mod calls;
mod contracts;
mod control;
mod cycles;
mod eval_blocks;
mod expr;
mod files;
mod mcp;
mod names;
mod providers;
mod records;
mod test_blocks;
mod tools;
mod types;
mod typing;
mod vars;

use crate::ast;
use crate::diagnostic::{Code, Diagnostic, Diagnostics, Severity};
use crate::ir::{self, Program};
use crate::source::{FileId, Sources, Span};

pub use tools::tool_name;
pub use types::TYPE_NAMES;

use names::Declarations;

/// Lowers the parsed files of one program (in load order) and checks it.
/// The program is returned only when no error was found; warnings do not
/// prevent it.
///
/// The syntax trees are consumed: each contract's nodes are freed one by
/// one as they lower, so a big contract's syntax tree and checked program
/// are not both whole at the peak.
#[must_use]
pub fn lower(
    sources: &Sources,
    mut files: Vec<(FileId, ast::File)>,
    lock: Option<&Result<ir::Lock, String>>,
) -> (Option<Program>, Diagnostics) {
    let bodies = contracts::take_bodies(&mut files);
    let declarations = Declarations::collect(&files);
    let mut lowerer = Lowerer::new(sources, &declarations);
    lowerer.lock = lock;
    lowerer.check_duplicate_declarations();
    lowerer.lower_declared_types();
    let providers = lowerer.lower_providers();
    lowerer.mcp = lowerer.lower_mcp_servers();
    let tools = lowerer.lower_tools();
    let agents = lowerer.lower_agents(&tools, &providers);
    lowerer.tools = tools;
    lowerer.agents = agents;
    let contracts = lowerer.lower_contracts(bodies);
    let tests = lowerer.lower_tests(&contracts);
    let evals = lowerer.lower_evals(&contracts);
    let Lowerer { diagnostics, tools, agents, .. } = lowerer;
    if diagnostics.has_errors() {
        return (None, diagnostics);
    }
    let program =
        Program { sources: sources.clone(), tools, agents, providers, contracts, tests, evals };
    (Some(program), diagnostics)
}

/// The `mcp` declarations of parsed files, checked, for `ignite mcp lock`
/// (which must not need the lock it writes); `None` when one has an error.
#[must_use]
pub fn mcp_servers(
    sources: &Sources,
    files: &[(FileId, ast::File)],
) -> (Option<Vec<std::sync::Arc<ir::McpServer>>>, Diagnostics) {
    let declarations = Declarations::collect(files);
    let mut lowerer = Lowerer::new(sources, &declarations);
    lowerer.check_duplicate_declarations();
    let servers = lowerer.lower_mcp_servers();
    let Lowerer { diagnostics, .. } = lowerer;
    ((!diagnostics.has_errors()).then_some(servers), diagnostics)
}

/// The state of one lowering: the declaration table, what is lowered so
/// far, and the diagnostics.
struct Lowerer<'a> {
    sources: &'a Sources,
    decls: &'a Declarations<'a>,
    diagnostics: Diagnostics,
    /// `ignite.lock`, when there is one.
    lock: Option<&'a Result<ir::Lock, String>>,
    /// Lowered `mcp` declarations (set before the tool pass).
    mcp: Vec<std::sync::Arc<ir::McpServer>>,
    /// Lowered tools (set after the tool pass; contracts and agents read
    /// their params).
    tools: Vec<ir::Tool>,
    /// Lowered agents (set after the agent pass).
    agents: Vec<ir::Agent>,
    /// Each contract's inputs, lowered before any body so that `compose`
    /// can check its arguments whatever the declaration order.
    contract_inputs: Vec<Vec<ir::Param>>,
    /// Errors counted so far, kept in step with `diagnostics`.
    errors: usize,
    /// The declared type of each input of the contract being lowered, by
    /// node index (ascending).
    input_types: Vec<(u32, ir::Type)>,
    /// Record declarations, lowered on first use.
    records: Vec<records::Slot>,
    /// Enum declarations, lowered on first use.
    enums: Vec<Option<std::sync::Arc<ir::Enum>>>,
}

impl<'a> Lowerer<'a> {
    fn new(sources: &'a Sources, decls: &'a Declarations<'a>) -> Self {
        Self {
            sources,
            decls,
            diagnostics: Diagnostics::default(),
            lock: None,
            mcp: Vec::new(),
            tools: Vec::new(),
            agents: Vec::new(),
            contract_inputs: Vec::new(),
            errors: 0,
            input_types: Vec::new(),
            records: Vec::new(),
            enums: Vec::new(),
        }
    }

    /// Records a diagnostic.
    fn push(&mut self, diagnostic: Diagnostic) {
        if diagnostic.severity == Severity::Error {
            self.errors += 1;
        }
        self.diagnostics.push(diagnostic);
    }

    /// Reports every repeat of a single-valued setting (`model` twice...)
    /// and returns the first.
    fn single<'s, T>(
        &mut self,
        items: &'s [T],
        span_of: impl Fn(&T) -> Span,
        what: &str,
    ) -> Option<&'s T> {
        let first = items.first()?;
        for item in &items[1..] {
            self.push(
                Diagnostic::error(Code::Duplicate, span_of(item), format!("`{what}` is set twice"))
                    .label("set again here")
                    .note(span_of(first), "first set here")
                    .help(format!("keep one `{what}` line")),
            );
        }
        Some(first)
    }
}
