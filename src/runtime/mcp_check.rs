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
use crate::ir::{Callee, ContractId, Implementation, McpTool, Program, ToolId};

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
        let (toolbox, mcp): (_, McpTool) = (engine.toolbox.clone(), mcp.clone());
        let (sender, receiver) = std::sync::mpsc::channel();
        io.spawn(async move {
            let _ = sender.send(toolbox.check_mcp(&mcp).await);
        });
        let checked = receiver.recv().unwrap_or(Ok(()));
        if let Err(error) = checked {
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
    let mut seen_contracts = vec![false; program.contracts.len()];
    let mut seen_tools = vec![false; program.tools.len()];
    let mut stack = vec![contract];
    let mut out = Vec::new();
    while let Some(id) = stack.pop() {
        if std::mem::replace(&mut seen_contracts[id.index()], true) {
            continue;
        }
        let contract = &program[id];
        for node in &contract.nodes {
            for call in node.kind.calls() {
                let tools: Vec<ToolId> = match call.callee {
                    Callee::Tool(tool) => vec![tool],
                    Callee::Agent(agent) => program[agent].tools.clone(),
                    Callee::Contract(child) => {
                        stack.push(child);
                        Vec::new()
                    }
                };
                for tool in tools {
                    let is_mcp = matches!(program[tool].implementation, Implementation::Mcp(_));
                    if is_mcp && !std::mem::replace(&mut seen_tools[tool.index()], true) {
                        out.push((tool, format!("{} > {}", contract.name, node.name), node.span));
                    }
                }
            }
        }
    }
    out
}
