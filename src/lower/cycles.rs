//! The graph checks: cycles in a contract, guard gates, unused nodes,
//! and contracts that compose themselves through other contracts.
//!
//! A node depends on the nodes its expressions mention, in first-mention
//! order. Effects (calls of tools and agents, composes of contracts that
//! make effects, branches and collections with such calls) that no guard
//! needs also depend on every guard of their contract: they are gated, so
//! a failing guard stops them before they start. A branch waits only for
//! what its condition reads (and its gates) before choosing an arm; what
//! an arm reads is that arm's own list. Guards always run when their contract runs (they are checks on
//! the run, whatever outputs are asked for), so a guard is never unused
//! and what it reads is needed. Every other node, inputs included, that
//! no output and no guard needs, directly or not, is reported unused.

use super::Lowerer;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, ContractId, Deps, Graph, NodeId, NodeKind};
use crate::source::Span;

impl Lowerer<'_> {
    /// Takes the graph of a contract without other errors ([`graph_of`]):
    /// reports its cycles, or else sets its gates and graph and reports its
    /// unused nodes. `name_spans[i]` is where node `i`'s name is written.
    pub(super) fn set_graph(
        &mut self,
        name_spans: &[Span],
        contract: &mut ir::Contract,
        graph: Result<Built, Vec<Vec<NodeId>>>,
    ) {
        let Built { graph, gated, guards, branches } = match graph {
            Ok(built) => built,
            Err(cycles) => {
                for cycle in cycles {
                    self.report_cycle(&contract.nodes, name_spans, &cycle);
                }
                return;
            }
        };
        set_branch_deps(&mut contract.nodes, &branches, &gated, &guards);
        self.check_unused(name_spans, &contract.nodes, &contract.outputs, &graph, &guards);
        contract.graph = graph;
        contract.gated = gated;
    }

    fn report_cycle(&mut self, nodes: &[ir::Node], name_spans: &[Span], cycle: &[NodeId]) {
        let name = |id: NodeId| &nodes[id.index()].name;
        let span = |id: NodeId| name_spans[id.index()];
        let path: Vec<String> = cycle.iter().map(|&id| format!("`{}`", name(id))).collect();
        let first = cycle[0];
        let message = if cycle.len() <= 2 {
            format!("node `{}` reads itself", name(first))
        } else {
            format!("nodes form a cycle: {}", path.join(" → "))
        };
        let mut diagnostic = Diagnostic::error(Code::Cycle, span(first), message)
            .help("a node cannot depend on its own value; break the cycle");
        for (i, pair) in cycle.windows(2).enumerate() {
            let text = format!("`{}` reads `{}`", name(pair[0]), name(pair[1]));
            diagnostic =
                if i == 0 { diagnostic.label(text) } else { diagnostic.note(span(pair[0]), text) };
        }
        self.push(diagnostic);
    }

    fn check_unused(
        &mut self,
        name_spans: &[Span],
        nodes: &[ir::Node],
        outputs: &[ir::Output],
        graph: &Graph,
        guards: &[NodeId],
    ) {
        let mut needed = vec![false; nodes.len()];
        let mut stack: Vec<NodeId> = outputs.iter().map(|o| o.node).collect();
        stack.extend_from_slice(guards);
        while let Some(node) = stack.pop() {
            if std::mem::replace(&mut needed[node.index()], true) {
                continue;
            }
            stack.extend(graph.deps(node).iter().filter(|d| !needed[d.index()]));
        }
        for (i, node) in nodes.iter().enumerate() {
            if needed[i] {
                continue;
            }
            let what = if matches!(node.kind, NodeKind::Input(_)) { "input" } else { "node" };
            self.push(
                Diagnostic::warning(
                    Code::UnusedNode,
                    name_spans[i],
                    format!("{what} `{}` is never used", node.name),
                )
                .label("no output or guard needs it")
                .help(format!("output it (`output {}`) or remove it", node.name)),
            );
        }
    }

    /// Reports contracts that compose themselves; `composes[c]` lists the
    /// contracts `c` composes with the place of each call.
    pub(super) fn check_recursive_compose(&mut self, composes: &[Vec<(usize, Span)>]) {
        let mut deps = Deps::with_capacity(composes.len());
        for sites in composes {
            let mut children: Vec<NodeId> = Vec::new();
            for &(child, _) in sites {
                if !children.iter().any(|c| c.index() == child) {
                    children.push(NodeId::from_index(child));
                }
            }
            children.into_iter().for_each(|child| deps.push(child));
            deps.end_row();
        }
        let Err(cycles) = Graph::new(deps) else { return };
        let decls = self.decls;
        let name = |id: NodeId| &decls.contracts[id.index()].name.name;
        let site = |from: NodeId, to: NodeId| {
            composes[from.index()]
                .iter()
                .find(|(c, _)| *c == to.index())
                .map_or(decls.contracts[from.index()].name.span, |(_, span)| *span)
        };
        for cycle in cycles {
            let path: Vec<String> = cycle.iter().map(|&c| format!("`{}`", name(c))).collect();
            let first = ContractId::from_index(cycle[0].index());
            let mut diagnostic = Diagnostic::error(
                Code::RecursiveCompose,
                site(cycle[0], cycle[1]),
                format!(
                    "contract `{}` composes itself: {}",
                    decls.contracts[first.index()].name.name,
                    path.join(" → ")
                ),
            )
            .help(
                "a contract cannot run inside itself; move the shared part into its own contract",
            );
            for (i, pair) in cycle.windows(2).enumerate() {
                let text = format!("`{}` composes `{}`", name(pair[0]), name(pair[1]));
                diagnostic = if i == 0 {
                    diagnostic.label(text)
                } else {
                    diagnostic.note(site(pair[0], pair[1]), text)
                };
            }
            self.push(diagnostic);
        }
    }
}

/// A contract's graph as [`graph_of`] builds it.
pub(super) struct Built {
    /// Its edges, gates included.
    graph: Graph,
    /// The effects that no guard needs.
    gated: Vec<NodeId>,
    /// Its guards.
    guards: Vec<NodeId>,
    /// Its branches.
    branches: Vec<NodeId>,
}

/// The graph of a contract's `nodes` with its gates; or its cycles.
/// `effectful[c]` tells whether contract `c` makes effects.
pub(super) fn graph_of(nodes: &[ir::Node], effectful: &[bool]) -> Result<Built, Vec<Vec<NodeId>>> {
    let graph = Graph::new(dependencies(nodes))?;
    let (mut guards, mut branches) = (Vec::new(), Vec::new());
    for (i, node) in nodes.iter().enumerate() {
        match node.kind {
            NodeKind::Guard { .. } => guards.push(NodeId::from_index(i)),
            NodeKind::Branch(_) => branches.push(NodeId::from_index(i)),
            _ => {}
        }
    }
    let (gated, gated_deps) = gate(nodes, &graph, effectful, &guards);
    // Gates add edges: the graph is built again only when there are some.
    let graph = match gated_deps {
        None => graph,
        Some(deps) => {
            drop(graph);
            Graph::new(deps).unwrap_or_else(|_| unreachable!("gates add no cycle"))
        }
    };
    Ok(Built { graph, gated, guards, branches })
}

/// The nodes each node reads, in first-mention order, once each. A stamp
/// per node makes the dedup linear however many names an expression has.
fn dependencies(nodes: &[ir::Node]) -> Deps {
    let mut stamp = vec![u32::MAX; nodes.len()];
    let mut deps = Deps::with_capacity(nodes.len());
    for (i, node) in nodes.iter().enumerate() {
        let i = u32::try_from(i).unwrap_or(u32::MAX);
        node.kind.visit_vars(&mut |var| {
            if (var as usize) < stamp.len() && stamp[var as usize] != i {
                stamp[var as usize] = i;
                deps.push(NodeId(var));
            }
        });
        deps.end_row();
    }
    deps
}

/// Which contracts make effects, directly or through the contracts they
/// compose.
pub(super) fn effectful_contracts(contracts: &[ir::Contract]) -> Vec<bool> {
    let mut effectful = vec![false; contracts.len()];
    // Composition is acyclic in a clean program; a pass per nesting level.
    loop {
        let mut changed = false;
        for (i, contract) in contracts.iter().enumerate() {
            if !effectful[i] && contract.nodes.iter().any(|n| is_effect(&n.kind, &effectful)) {
                effectful[i] = true;
                changed = true;
            }
        }
        if !changed {
            return effectful;
        }
    }
}

fn is_effect(kind: &NodeKind, effectful: &[bool]) -> bool {
    kind.calls().any(|call| match call.callee {
        ir::Callee::Tool(_) | ir::Callee::Agent(_) => true,
        ir::Callee::Contract(c) => effectful[c.index()],
    })
}

/// The effects that no guard needs, and when there are some, the edges of
/// `graph` with one more from every guard to each of them.
fn gate(
    nodes: &[ir::Node],
    graph: &Graph,
    effectful: &[bool],
    guards: &[NodeId],
) -> (Vec<NodeId>, Option<Deps>) {
    if guards.is_empty() {
        return (Vec::new(), None);
    }
    let mut guarded = vec![false; nodes.len()];
    let mut stack = guards.to_vec();
    while let Some(node) = stack.pop() {
        for &dep in graph.deps(node) {
            if !std::mem::replace(&mut guarded[dep.index()], true) {
                stack.push(dep);
            }
        }
    }
    let gated: Vec<NodeId> = (0..nodes.len())
        .filter(|&i| !guarded[i] && is_effect(&nodes[i].kind, effectful))
        .map(NodeId::from_index)
        .collect();
    if gated.is_empty() {
        return (gated, None);
    }
    let mut deps = Deps::with_capacity(nodes.len());
    let mut next = gated.iter().peekable();
    for i in 0..nodes.len() {
        let id = NodeId::from_index(i);
        let row = graph.deps(id);
        row.iter().for_each(|&dep| deps.push(dep));
        if next.next_if_eq(&&id).is_some() {
            guards.iter().filter(|g| !row.contains(g)).for_each(|&g| deps.push(g));
        }
        deps.end_row();
    }
    (gated, Some(deps))
}

/// The nodes (variables below `n`) that `visit` reports, once each, in
/// the order first reported.
fn read_by(n: usize, visit: impl FnOnce(&mut dyn FnMut(u32))) -> Vec<NodeId> {
    let mut out: Vec<NodeId> = Vec::new();
    visit(&mut |var| {
        let id = NodeId::from_index(var as usize);
        if (var as usize) < n && !out.contains(&id) {
            out.push(id);
        }
    });
    out
}

/// Fills in what each branch waits for before choosing (its condition's
/// nodes, and the guards when gated) and what each arm reads.
fn set_branch_deps(
    nodes: &mut [ir::Node],
    branches: &[NodeId],
    gated: &[NodeId],
    guards: &[NodeId],
) {
    let n = nodes.len();
    for &id in branches {
        let NodeKind::Branch(branch) = &mut nodes[id.index()].kind else { continue };
        branch.deps = read_by(n, |f| branch.on.visit_vars(f));
        if gated.contains(&id) {
            let missing: Vec<NodeId> =
                guards.iter().copied().filter(|g| !branch.deps.contains(g)).collect();
            branch.deps.extend(missing);
        }
        for arm in &mut branch.arms {
            arm.deps = read_by(n, |f| arm.body.visit_vars(f));
        }
    }
}
