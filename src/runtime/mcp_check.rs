//! The drift check before a run: every MCP tool the contract can reach
//! (its tool nodes, its agents' tools, the contracts it composes) must
//! still be listed by its server as `ignite.lock` has it, or the run fails
//! before any effect, naming the tool and what changed.
//!
//! Skipped when the run's stores answer the calls themselves (a replay, a
//! test's mocks): those runs reach no server. Connections made here are
//! the toolbox's, kept for the run's calls.

use super::{Engine, RunError};
use crate::diagnostic::Code;
use crate::ir::{ContractId, Implementation, Program, ToolId};

/// Checks every MCP tool reachable from `contract` against its server.
pub(super) fn check(engine: &Engine, contract: ContractId) -> Result<(), RunError> {
    let effects = engine.effects();
    if effects.offline() || effects.answers_pure() {
        return Ok(());
    }
    let program = engine.program();
    let reached = reached(program, contract);
    if reached.is_empty() {
        return Ok(());
    }
    let Some(io) = engine.io() else { return Ok(()) };
    for (tool, path, span) in reached {
        let Implementation::Mcp(mcp) = &program[tool].implementation else { continue };
        if let Err(error) = io.block_on(engine.toolbox.check_mcp(mcp)) {
            return Err(RunError::Node {
                message: format!("tool `{}`: {error}", program[tool].name),
                path,
                span,
                code: Code::ToolFailed,
                cause: Box::new(error),
            });
        }
    }
    Ok(())
}

/// The MCP tools reachable from `contract`, once each, with the path and
/// statement of the first node that reaches it.
fn reached(program: &Program, contract: ContractId) -> Vec<(ToolId, String, crate::source::Span)> {
    let mut seen = vec![false; program.tools.len()];
    program
        .reachable_tools(contract)
        .into_iter()
        .filter(|&(_, _, tool)| {
            matches!(program[tool].implementation, Implementation::Mcp(_))
                && !std::mem::replace(&mut seen[tool.index()], true)
        })
        .map(|(id, node, tool)| (tool, format!("{} > {}", program[id].name, node.name), node.span))
        .collect()
}
