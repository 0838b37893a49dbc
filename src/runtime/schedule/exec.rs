//! An execution of one contract (the root, or a `compose` child) as the
//! core keeps it: its value table and per-node counts, what its branches
//! chose, its `for` nodes' calls, and the paths shown for its nodes
//! (`Root.child > node[3]`), built from the parents only when asked for.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::job::Job;
use super::nodes::{Kind, Nodes};
use crate::eval::Val;
use crate::ir::NodeId;

/// One running contract: the root or a composed child.
pub(super) struct Exec<C, S> {
    pub(super) contract: C,
    pub(super) values: Vec<Val>,
    /// Unfinished dependencies each needed node is waiting for.
    pub(super) pending: Vec<u32>,
    pub(super) needed: Vec<bool>,
    pub(super) done: Vec<bool>,
    /// Needed nodes (inputs aside) not finished yet.
    pub(super) remaining: usize,
    /// Indexes of the outputs to produce.
    pub(super) outputs: Vec<usize>,
    /// The call waiting for this execution (`None` for the root); its
    /// path (`Root.child.grandchild`, `Root.lines[3]` for a per-item child)
    /// is built from the parents only when shown, so a deep composition
    /// does not hold a path per level.
    pub(super) parent: Option<Job>,
    /// The arm each branch chose.
    pub(super) chosen: HashMap<NodeId, usize>,
    /// The per-item results of `for` nodes with call bodies.
    pub(super) gathers: HashMap<NodeId, Gather<S>>,
    /// Abandoned: a `try` above caught its failure (its or an ancestor's);
    /// late results are dropped.
    pub(super) dead: bool,
    /// The executions its `compose` nodes started, to abandon with it.
    pub(super) children: Vec<usize>,
    /// The observers' scope of its nodes.
    pub(super) scope: S,
}

/// A `for` node's items and results while its calls run.
pub(super) struct Gather<S> {
    pub(super) items: Vec<Val>,
    pub(super) results: Vec<Val>,
    pub(super) left: usize,
    /// The observers' scope of its items.
    pub(super) scope: S,
}

/// The arm `node` chose, when it is a branch that chose; other nodes are
/// not looked up (a lookup per node would hash each one).
pub(super) fn arm_of<N: Nodes, S>(
    nodes: &N,
    e: &Exec<N::Contract, S>,
    node: NodeId,
) -> Option<usize> {
    match nodes.kind(e.contract, node) {
        Kind::Branch => e.chosen.get(&node).copied(),
        _ => None,
    }
}

/// True when `dependent` is waiting for `dep` to finish: a branch waits
/// for its condition's nodes, then for its chosen arm's.
pub(super) fn waits_on<N: Nodes, S>(
    nodes: &N,
    e: &Exec<N::Contract, S>,
    dependent: NodeId,
    dep: NodeId,
) -> bool {
    match nodes.kind(e.contract, dependent) {
        Kind::Branch => {
            nodes.deps(e.contract, dependent, e.chosen.get(&dependent).copied()).contains(&dep)
        }
        _ => true,
    }
}

/// The path of a job: `Root.child > node[3]`.
pub(super) fn job_path<N: Nodes, S>(nodes: &N, execs: &[Exec<N::Contract, S>], job: Job) -> String {
    let path = node_path(nodes, execs, job.exec, job.node);
    match job.item {
        Some(i) => format!("{path}[{i}]"),
        None => path,
    }
}

/// The path of a node, without an item: `Root.child > node`.
pub(super) fn node_path<N: Nodes, S>(
    nodes: &N,
    execs: &[Exec<N::Contract, S>],
    exec: usize,
    node: NodeId,
) -> String {
    let mut path = exec_path(nodes, execs, exec);
    path.push_str(" > ");
    path.push_str(nodes.node_name(execs[exec].contract, node));
    path
}

/// The path of an execution: `Root`, `Root.child`, `Root.lines[3]`.
fn exec_path<N: Nodes, S>(nodes: &N, execs: &[Exec<N::Contract, S>], exec: usize) -> String {
    let mut calls = Vec::new();
    let mut at = &execs[exec];
    while let Some(call) = at.parent {
        calls.push(call);
        at = &execs[call.exec];
    }
    // Room for the usual rest (` > node`, `[i]`): one allocation a path.
    let mut path = String::with_capacity(64);
    path.push_str(nodes.contract_name(at.contract));
    for call in calls.iter().rev() {
        path.push('.');
        path.push_str(nodes.node_name(execs[call.exec].contract, call.node));
        if let Some(i) = call.item {
            let _ = write!(path, "[{i}]");
        }
    }
    path
}
