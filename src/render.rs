//! Drawings of a contract's graph: plain text, Mermaid and Graphviz dot.
//!
//! Input: a checked contract. Output: a string, nodes in topological order
//! (dependencies first), edges from a dependency to its reader. Output
//! nodes are drawn too, as the graph's sinks. Conditional edges are drawn
//! dashed with their condition: the edges into a branch that only an arm
//! reads (labelled with the arm's pattern) and the gates from guards to
//! the effects they hold back (labelled `gate`).

use std::fmt::Write as _;

use crate::ir::{Callee, Contract, NodeId, NodeKind, Pattern, Program};

/// An edge into a node: the dependency and, for a conditional edge, its
/// condition.
struct Edge {
    from: NodeId,
    when: Option<String>,
}

/// The edges into `id`, in dependency order.
fn edges(contract: &Contract, id: NodeId) -> Vec<Edge> {
    let gated = contract.gated.contains(&id);
    contract
        .graph
        .deps(id)
        .iter()
        .map(|&from| {
            let is_guard = matches!(contract[from].kind, NodeKind::Guard { .. });
            let when = match &contract[id].kind {
                NodeKind::Branch(branch) if !branch.deps.contains(&from) => {
                    let arms: Vec<String> = branch
                        .arms
                        .iter()
                        .filter(|arm| arm.deps.contains(&from))
                        .map(|arm| match &arm.pattern {
                            Pattern::Wildcard => "_".to_owned(),
                            Pattern::Literal(value) => value.to_string(),
                        })
                        .collect();
                    Some(format!("when {}", arms.join(" | ")))
                }
                NodeKind::Branch(_) if gated && is_guard => Some("gate".to_owned()),
                kind if gated && is_guard && !reads(kind, from) => Some("gate".to_owned()),
                _ => None,
            };
            Edge { from, when }
        })
        .collect()
}

/// True when the node's expressions read `node`.
fn reads(kind: &NodeKind, node: NodeId) -> bool {
    let mut found = false;
    kind.visit_vars(&mut |var| found |= var as usize == node.index());
    found
}

/// The drawing formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GraphFormat {
    /// One line per node with its kind and dependencies.
    Text,
    /// A Mermaid `flowchart`.
    Mermaid,
    /// A Graphviz `digraph`.
    Dot,
}

/// Draws `contract` in `format`; `notes` adds a line to the nodes it
/// names (`ignite graph --calls`: each node's worst-case model calls).
#[must_use]
pub(crate) fn render_graph(
    program: &Program,
    contract: &Contract,
    format: GraphFormat,
    notes: &[(NodeId, String)],
) -> String {
    let note = |id: NodeId| notes.iter().find(|(n, _)| *n == id).map(|(_, text)| text.as_str());
    match format {
        GraphFormat::Text => text(program, contract, &note),
        GraphFormat::Mermaid => mermaid(program, contract, &note),
        GraphFormat::Dot => dot(program, contract, &note),
    }
}

/// The note of a node, if it has one.
type Note<'a> = dyn Fn(NodeId) -> Option<&'a str> + 'a;

/// What a node calls, if anything: `tool DatabaseLookup`.
fn callee(program: &Program, kind: &NodeKind) -> Option<String> {
    let name = |callee: Callee| match callee {
        Callee::Tool(tool) => format!("tool {}", program[tool].name),
        Callee::Agent(agent) => format!("agent {}", program[agent].name),
        Callee::Contract(contract) => format!("contract {}", program[contract].name),
    };
    let calls: Vec<String> = kind.calls().map(|call| name(call.callee)).collect();
    match kind {
        NodeKind::Call(_) => calls.into_iter().next(),
        NodeKind::For(_) => calls.into_iter().next().map(|call| format!("each {call}")),
        _ if calls.is_empty() => None,
        _ => Some(format!("one of {}", calls.join(" | "))),
    }
}

fn text(program: &Program, contract: &Contract, note: &Note<'_>) -> String {
    let mut out = format!("contract {}\n", contract.name);
    for &id in contract.graph.order() {
        let node = &contract[id];
        let deps: Vec<String> = edges(contract, id)
            .into_iter()
            .map(|edge| {
                let name = &contract[edge.from].name;
                match edge.when {
                    Some(when) => format!("{name} ({when})"),
                    None => name.to_string(),
                }
            })
            .collect();
        let _ = write!(out, "  {:<8} {}", node.kind.label(), node.name);
        if let Some(callee) = callee(program, &node.kind) {
            let _ = write!(out, " = {callee}");
        }
        if !deps.is_empty() {
            let _ = write!(out, " <- {}", deps.join(", "));
        }
        if let Some(note) = note(id) {
            let _ = write!(out, "  [{note}]");
        }
        out.push('\n');
    }
    for output in &contract.outputs {
        let _ = writeln!(out, "  output   {} <- {}", output.name, field_path(contract, output));
    }
    out
}

fn field_path(contract: &Contract, output: &crate::ir::Output) -> String {
    let mut path = contract[output.node].name.to_string();
    for field in &output.fields {
        path.push('.');
        path.push_str(field);
    }
    path
}

fn mermaid(program: &Program, contract: &Contract, note: &Note<'_>) -> String {
    let mut out = format!("flowchart LR\n  %% contract {}\n", contract.name);
    for &id in contract.graph.order() {
        let node = &contract[id];
        let mut label = match callee(program, &node.kind) {
            Some(callee) => format!("{}<br/>{callee}", node.name),
            None => format!("{}<br/>{}", node.name, node.kind.label()),
        };
        if let Some(note) = note(id) {
            let _ = write!(label, "<br/>{note}");
        }
        let (open, close) = match node.kind {
            NodeKind::Input(_) => ("([", "])"),
            NodeKind::Guard { .. } => ("{{", "}}"),
            NodeKind::Call(ref call) if !matches!(call.callee, Callee::Contract(_)) => ("[[", "]]"),
            NodeKind::Branch(_) => ("{", "}"),
            _ => ("[", "]"),
        };
        let _ = writeln!(out, "  n{}{open}\"{}\"{close}", id.index(), label.replace('"', "#quot;"));
    }
    for &id in contract.graph.order() {
        for edge in edges(contract, id) {
            let (from, to) = (edge.from.index(), id.index());
            let _ = match edge.when {
                Some(when) => {
                    writeln!(out, "  n{from} -.->|\"{}\"| n{to}", when.replace('"', "#quot;"))
                }
                None => writeln!(out, "  n{from} --> n{to}"),
            };
        }
    }
    for (i, output) in contract.outputs.iter().enumerate() {
        let _ = writeln!(out, "  out{i}[/\"output {}\"/]", output.name);
        let _ = writeln!(out, "  n{} --> out{i}", output.node.index());
    }
    out
}

fn dot(program: &Program, contract: &Contract, note: &Note<'_>) -> String {
    let mut out = format!("digraph \"{}\" {{\n  rankdir=LR;\n", contract.name);
    for &id in contract.graph.order() {
        let node = &contract[id];
        let shape = match node.kind {
            NodeKind::Input(_) => "ellipse",
            NodeKind::Guard { .. } => "hexagon",
            NodeKind::Call(ref call) => match call.callee {
                Callee::Contract(_) => "component",
                _ => "box3d",
            },
            NodeKind::Branch(_) => "diamond",
            NodeKind::Compute(_) | NodeKind::For(_) => "box",
        };
        let mut label = match callee(program, &node.kind) {
            Some(callee) => format!("{}\\n{callee}", node.name),
            None => format!("{}\\n{}", node.name, node.kind.label()),
        };
        if let Some(note) = note(id) {
            let _ = write!(label, "\\n{note}");
        }
        let _ = writeln!(
            out,
            "  n{} [label=\"{}\", shape={shape}];",
            id.index(),
            label.replace('"', "\\\"")
        );
    }
    for &id in contract.graph.order() {
        for edge in edges(contract, id) {
            let (from, to) = (edge.from.index(), id.index());
            let _ = match edge.when {
                Some(when) => writeln!(
                    out,
                    "  n{from} -> n{to} [style=dashed, label=\"{}\"];",
                    when.replace('"', "\\\"")
                ),
                None => writeln!(out, "  n{from} -> n{to};"),
            };
        }
    }
    for (i, output) in contract.outputs.iter().enumerate() {
        let _ = writeln!(out, "  out{i} [label=\"output {}\", shape=note];", output.name);
        let _ = writeln!(out, "  n{} -> out{i};", output.node.index());
    }
    out.push_str("}\n");
    out
}
