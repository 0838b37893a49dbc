//! A contract's dependency graph; petgraph finds the cycles of a graph
//! that has some.

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use super::NodeId;

/// Edges from each node to the nodes that read it, with a topological
/// order computed once. Built only for acyclic graphs.
///
/// Both directions are stored flat, as [`Deps`].
#[derive(Debug, Clone, Default)]
pub struct Graph {
    deps: Deps,
    dependents: Deps,
    order: Vec<NodeId>,
}

/// One direction of a graph's edges, as compressed rows: node `i`'s list
/// is `targets[starts[i]..starts[i + 1]]`, four bytes per edge and per
/// node instead of a vector per node. Built a row at a time, in node
/// order.
#[derive(Debug, Clone)]
pub struct Deps {
    starts: Vec<u32>,
    targets: Vec<NodeId>,
}

impl Default for Deps {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl Deps {
    /// No rows yet, room for `nodes` of them (and as many edges).
    #[must_use]
    pub fn with_capacity(nodes: usize) -> Self {
        let mut starts = Vec::with_capacity(nodes + 1);
        starts.push(0);
        Self { starts, targets: Vec::with_capacity(nodes) }
    }

    /// Adds `dep` to the row being built.
    pub fn push(&mut self, dep: NodeId) {
        self.targets.push(dep);
    }

    /// Ends the row being built: the next edges are the next node's.
    pub fn end_row(&mut self) {
        self.starts.push(edge_count(self.targets.len()));
    }

    /// How many rows (nodes) there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// True when there is no row.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The row of `node`.
    #[must_use]
    pub fn of(&self, node: NodeId) -> &[NodeId] {
        let (from, to) = (self.starts[node.index()], self.starts[node.index() + 1]);
        &self.targets[from as usize..to as usize]
    }

    /// Every row, in node order.
    fn rows(&self) -> impl Iterator<Item = &[NodeId]> {
        self.starts.windows(2).map(|w| &self.targets[w[0] as usize..w[1] as usize])
    }
}

impl Graph {
    /// The graph of `deps` (node `i` reads the nodes of row `i`), or the
    /// cycles it has: each as its node path, smallest first node first.
    ///
    /// # Errors
    /// Every cycle, each once.
    pub fn new(deps: Deps) -> Result<Graph, Vec<Vec<NodeId>>> {
        let nodes = deps.len();
        // Dependents by counting: each node's list in node order, as its
        // dependents were declared.
        let mut starts = vec![0u32; nodes + 1];
        for dep in &deps.targets {
            starts[dep.index() + 1] += 1;
        }
        for i in 0..nodes {
            starts[i + 1] += starts[i];
        }
        let mut next = starts.clone();
        let mut targets = vec![NodeId(0); deps.targets.len()];
        for (node, row) in deps.rows().enumerate() {
            for dep in row {
                let at = &mut next[dep.index()];
                targets[*at as usize] = NodeId::from_index(node);
                *at += 1;
            }
        }
        drop(next);
        let dependents = Deps { starts, targets };
        let order = stable_order(&deps, &dependents);
        if order.len() < nodes {
            return Err(cycles(&deps));
        }
        Ok(Graph { deps, dependents, order })
    }

    /// The nodes `node` reads.
    #[must_use]
    pub fn deps(&self, node: NodeId) -> &[NodeId] {
        self.deps.of(node)
    }

    /// The nodes that read `node`.
    #[must_use]
    pub fn dependents(&self, node: NodeId) -> &[NodeId] {
        self.dependents.of(node)
    }

    /// Every node, dependencies before dependents.
    #[must_use]
    pub fn order(&self) -> &[NodeId] {
        &self.order
    }

    /// How many nodes there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True for a contract without nodes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

/// An edge count as a row start.
fn edge_count(n: usize) -> u32 {
    u32::try_from(n).expect("fewer than 2^32 edges")
}

/// Every cycle of a graph that has some. Tarjan yields strongly connected
/// components in reverse topological order; any component of more than
/// one node, or a node reading itself, is a cycle.
fn cycles(deps: &Deps) -> Vec<Vec<NodeId>> {
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(deps.len(), deps.len());
    for _ in 0..deps.len() {
        graph.add_node(());
    }
    for (node, row) in deps.rows().enumerate() {
        for dep in row {
            graph.add_edge(NodeIndex::new(dep.index()), NodeIndex::new(node), ());
        }
    }
    let mut cycles = Vec::new();
    for component in &tarjan_scc(&graph) {
        let self_loop = component.len() == 1
            && deps
                .of(NodeId::from_index(component[0].index()))
                .iter()
                .any(|d| d.index() == component[0].index());
        if component.len() > 1 || self_loop {
            cycles.push(cycle_path(deps, component));
        }
    }
    cycles.sort();
    cycles
}

/// A topological order that prefers declaration order: of the nodes whose
/// dependencies are all placed, the first declared goes next (Kahn's
/// algorithm with a min-heap), so a file written top-down keeps its
/// order. Nodes on or after a cycle are never placed: the order is short
/// exactly when the graph has a cycle.
fn stable_order(deps: &Deps, dependents: &Deps) -> Vec<NodeId> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let nodes = deps.starts.len() - 1;
    let mut waiting: Vec<u32> = deps.starts.windows(2).map(|w| w[1] - w[0]).collect();
    let mut ready: BinaryHeap<Reverse<NodeId>> =
        (0..nodes).filter(|&i| waiting[i] == 0).map(|i| Reverse(NodeId::from_index(i))).collect();
    let mut order = Vec::with_capacity(nodes);
    while let Some(Reverse(node)) = ready.pop() {
        order.push(node);
        for &dependent in dependents.of(node) {
            waiting[dependent.index()] -= 1;
            if waiting[dependent.index()] == 0 {
                ready.push(Reverse(dependent));
            }
        }
    }
    order
}

/// One cycle through the nodes of a strongly connected component, as a
/// path that starts at its smallest node and returns to it.
fn cycle_path(deps: &Deps, component: &[NodeIndex]) -> Vec<NodeId> {
    let members: std::collections::BTreeSet<usize> = component.iter().map(|n| n.index()).collect();
    let start = *members.iter().next().unwrap_or(&0);
    // Walk dependencies inside the component until a node repeats.
    let mut path = vec![start];
    let mut seen = std::collections::BTreeMap::from([(start, 0usize)]);
    let mut current = start;
    loop {
        let next = deps
            .of(NodeId::from_index(current))
            .iter()
            .map(|d| d.index())
            .filter(|d| members.contains(d))
            .min()
            .unwrap_or(start);
        if let Some(&at) = seen.get(&next) {
            let mut cycle: Vec<NodeId> =
                path[at..].iter().map(|&i| NodeId::from_index(i)).collect();
            // Report in reading order: a reads b reads c reads a.
            cycle.push(NodeId::from_index(next));
            return cycle;
        }
        seen.insert(next, path.len());
        path.push(next);
        current = next;
    }
}
