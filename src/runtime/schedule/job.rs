//! [`Job`]: a node of an execution, and the item for a `for` node's call;
//! what the core, the failures and the graph all speak in.

use crate::ir::NodeId;

/// A node of an execution, and the item for a `for` node's call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Job {
    pub(super) exec: usize,
    pub(super) node: NodeId,
    pub(super) item: Option<u32>,
}

impl Job {
    pub(super) fn node(exec: usize, node: NodeId) -> Self {
        Self { exec, node, item: None }
    }
}
