//! Drawings of a contract's graph: plain text, Mermaid and Graphviz dot.
//!
//! Input: a checked contract. Output: a string, nodes in topological order
//! (dependencies first), edges from a dependency to its reader. Output
//! nodes are drawn too, as the graph's sinks.

use std::fmt::Write as _;

use crate::ir::{Contract, NodeKind, Program};

/// The drawing formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    /// One line per node with its kind and dependencies.
    Text,
    /// A Mermaid `flowchart`.
    Mermaid,
    /// A Graphviz `digraph`.
    Dot,
}

/// Draws `contract` in `format`.
#[must_use]
pub fn render_graph(program: &Program, contract: &Contract, format: GraphFormat) -> String {
    match format {
        GraphFormat::Text => text(program, contract),
        GraphFormat::Mermaid => mermaid(program, contract),
        GraphFormat::Dot => dot(program, contract),
    }
}

/// What a node calls, if anything: `tool DatabaseLookup`.
fn callee(program: &Program, kind: &NodeKind) -> Option<String> {
    match kind {
        NodeKind::Tool { tool, .. } => Some(format!("tool {}", program[*tool].name)),
        NodeKind::Agent { agent, .. } => Some(format!("agent {}", program[*agent].name)),
        NodeKind::Compose { contract, .. } => Some(format!("contract {}", program[*contract].name)),
        _ => None,
    }
}

fn text(program: &Program, contract: &Contract) -> String {
    let mut out = format!("contract {}\n", contract.name);
    for &id in contract.graph.order() {
        let node = &contract[id];
        let deps: Vec<&str> =
            contract.graph.deps(id).iter().map(|d| contract[*d].name.as_str()).collect();
        let _ = write!(out, "  {:<8} {}", node.kind.label(), node.name);
        if let Some(callee) = callee(program, &node.kind) {
            let _ = write!(out, " = {callee}");
        }
        if !deps.is_empty() {
            let _ = write!(out, " <- {}", deps.join(", "));
        }
        out.push('\n');
    }
    for output in &contract.outputs {
        let _ = writeln!(out, "  output   {} <- {}", output.name, field_path(contract, output));
    }
    out
}

fn field_path(contract: &Contract, output: &crate::ir::Output) -> String {
    let mut path = contract[output.node].name.clone();
    for field in &output.fields {
        path.push('.');
        path.push_str(field);
    }
    path
}

fn mermaid(program: &Program, contract: &Contract) -> String {
    let mut out = format!("flowchart LR\n  %% contract {}\n", contract.name);
    for &id in contract.graph.order() {
        let node = &contract[id];
        let label = match callee(program, &node.kind) {
            Some(callee) => format!("{}<br/>{callee}", node.name),
            None => format!("{}<br/>{}", node.name, node.kind.label()),
        };
        let (open, close) = match node.kind {
            NodeKind::Input(_) => ("([", "])"),
            NodeKind::Guard { .. } => ("{{", "}}"),
            NodeKind::Tool { .. } | NodeKind::Agent { .. } => ("[[", "]]"),
            _ => ("[", "]"),
        };
        let _ = writeln!(out, "  n{}{open}\"{}\"{close}", id.index(), label.replace('"', "#quot;"));
    }
    for &id in contract.graph.order() {
        for dep in contract.graph.deps(id) {
            let _ = writeln!(out, "  n{} --> n{}", dep.index(), id.index());
        }
    }
    for (i, output) in contract.outputs.iter().enumerate() {
        let _ = writeln!(out, "  out{i}[/\"output {}\"/]", output.name);
        let _ = writeln!(out, "  n{} --> out{i}", output.node.index());
    }
    out
}

fn dot(program: &Program, contract: &Contract) -> String {
    let mut out = format!("digraph \"{}\" {{\n  rankdir=LR;\n", contract.name);
    for &id in contract.graph.order() {
        let node = &contract[id];
        let shape = match node.kind {
            NodeKind::Input(_) => "ellipse",
            NodeKind::Guard { .. } => "hexagon",
            NodeKind::Tool { .. } | NodeKind::Agent { .. } => "box3d",
            NodeKind::Compose { .. } => "component",
            NodeKind::Compute(_) => "box",
        };
        let label = match callee(program, &node.kind) {
            Some(callee) => format!("{}\\n{callee}", node.name),
            None => format!("{}\\n{}", node.name, node.kind.label()),
        };
        let _ = writeln!(
            out,
            "  n{} [label=\"{}\", shape={shape}];",
            id.index(),
            label.replace('"', "\\\"")
        );
    }
    for &id in contract.graph.order() {
        for dep in contract.graph.deps(id) {
            let _ = writeln!(out, "  n{} -> n{};", dep.index(), id.index());
        }
    }
    for (i, output) in contract.outputs.iter().enumerate() {
        let _ = writeln!(out, "  out{i} [label=\"output {}\", shape=note];", output.name);
        let _ = writeln!(out, "  n{} -> out{i};", output.node.index());
    }
    out.push_str("}\n");
    out
}
