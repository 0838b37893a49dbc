//! A contract's dependency graph, built on petgraph.

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use super::NodeId;

/// Edges from each node to the nodes that read it, with a topological
/// order computed once. Built only for acyclic graphs.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    deps: Vec<Vec<NodeId>>,
    dependents: Vec<Vec<NodeId>>,
    order: Vec<NodeId>,
}

impl Graph {
    /// The graph of `deps` (node `i` reads `deps[i]`), or the cycles it has:
    /// each as its node path, smallest first node first.
    ///
    /// # Errors
    /// Every cycle, each once.
    pub fn new(deps: Vec<Vec<NodeId>>) -> Result<Graph, Vec<Vec<NodeId>>> {
        let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(deps.len(), deps.len());
        for _ in 0..deps.len() {
            graph.add_node(());
        }
        for (node, node_deps) in deps.iter().enumerate() {
            for dep in node_deps {
                graph.add_edge(NodeIndex::new(dep.index()), NodeIndex::new(node), ());
            }
        }
        // Tarjan yields strongly connected components in reverse
        // topological order; any component of more than one node, or a node
        // reading itself, is a cycle.
        let components = tarjan_scc(&graph);
        let mut cycles = Vec::new();
        for component in &components {
            let self_loop = component.len() == 1
                && deps[component[0].index()].iter().any(|d| d.index() == component[0].index());
            if component.len() > 1 || self_loop {
                cycles.push(cycle_path(&deps, component));
            }
        }
        if !cycles.is_empty() {
            cycles.sort();
            return Err(cycles);
        }
        let mut dependents = vec![Vec::new(); deps.len()];
        for (node, node_deps) in deps.iter().enumerate() {
            for dep in node_deps {
                dependents[dep.index()].push(NodeId::from_index(node));
            }
        }
        let order = stable_order(&deps, &dependents);
        Ok(Graph { deps, dependents, order })
    }

    /// The nodes `node` reads.
    #[must_use]
    pub fn deps(&self, node: NodeId) -> &[NodeId] {
        &self.deps[node.index()]
    }

    /// The nodes that read `node`.
    #[must_use]
    pub fn dependents(&self, node: NodeId) -> &[NodeId] {
        &self.dependents[node.index()]
    }

    /// Every node, dependencies before dependents.
    #[must_use]
    pub fn order(&self) -> &[NodeId] {
        &self.order
    }

    /// How many nodes there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.deps.len()
    }

    /// True for a contract without nodes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.deps.is_empty()
    }
}

/// A topological order of an acyclic graph that prefers declaration order:
/// of the nodes whose dependencies are all placed, the first declared goes
/// next (Kahn's algorithm with a min-heap), so a file written top-down
/// keeps its order.
fn stable_order(deps: &[Vec<NodeId>], dependents: &[Vec<NodeId>]) -> Vec<NodeId> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut waiting: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..deps.len()).filter(|&i| waiting[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(deps.len());
    while let Some(Reverse(node)) = ready.pop() {
        order.push(NodeId::from_index(node));
        for dependent in &dependents[node] {
            waiting[dependent.index()] -= 1;
            if waiting[dependent.index()] == 0 {
                ready.push(Reverse(dependent.index()));
            }
        }
    }
    order
}

/// One cycle through the nodes of a strongly connected component, as a
/// path that starts at its smallest node and returns to it.
fn cycle_path(deps: &[Vec<NodeId>], component: &[NodeIndex]) -> Vec<NodeId> {
    let members: std::collections::BTreeSet<usize> = component.iter().map(|n| n.index()).collect();
    let start = *members.iter().next().unwrap_or(&0);
    // Walk dependencies inside the component until a node repeats.
    let mut path = vec![start];
    let mut seen = std::collections::BTreeMap::from([(start, 0usize)]);
    let mut current = start;
    loop {
        let next = deps[current]
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
