//! What bounds a `for`: a guard `len(ITEMS) <= N` over the same node path,
//! a literal array, or the bound of the `for` whose value it iterates; and
//! which nodes of a contract run at all.

use crate::ir::{BinaryOp, Contract, Expr, ExprKind, Function, NodeId, NodeKind};
use crate::value::Val;

/// What bounds a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Bound {
    /// A guard, as `len(tickets) <= 3`.
    Guard(String),
    /// A literal array.
    Literal,
    /// Nothing.
    None,
}

/// Which nodes of `contract` run: what the outputs and the guards need.
pub(super) fn needed(contract: &Contract) -> Vec<bool> {
    let mut needed = vec![false; contract.nodes.len()];
    let mut stack: Vec<NodeId> = contract.outputs.iter().map(|o| o.node).collect();
    stack.extend(
        contract
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(n.kind, NodeKind::Guard { .. }))
            .map(|(i, _)| NodeId::from_index(i)),
    );
    while let Some(node) = stack.pop() {
        if std::mem::replace(&mut needed[node.index()], true) {
            continue;
        }
        stack.extend(contract.graph.deps(node).iter().copied());
    }
    needed
}

/// A node and the fields below it: `order.items` is `(order, ["items"])`.
fn path(expr: &Expr) -> Option<(u32, Vec<&str>)> {
    match &expr.kind {
        ExprKind::Var(v) => Some((*v, Vec::new())),
        ExprKind::Field(field) => {
            let (mut at, name) = (path(&field.0)?, &field.1);
            at.1.push(name);
            Some(at)
        }
        _ => None,
    }
}

/// The text of a node path: `order.items`.
pub(super) fn expr_text(contract: &Contract, expr: &Expr) -> Option<String> {
    let (var, fields) = path(expr)?;
    let node = contract.nodes.get(var as usize)?;
    Some(std::iter::once(&*node.name).chain(fields).collect::<Vec<_>>().join("."))
}

/// `input \`tickets\``, `\`order.items\` (of input \`order\`)`, `the items`.
pub(super) fn describe_path(contract: &Contract, expr: &Expr) -> String {
    let Some((var, fields)) = path(expr) else { return "its items".to_owned() };
    let Some(node) = contract.nodes.get(var as usize) else { return "its items".to_owned() };
    let what = if matches!(node.kind, NodeKind::Input(_)) { "input" } else { "node" };
    if fields.is_empty() {
        format!("{what} `{}`", node.name)
    } else {
        let text = expr_text(contract, expr).unwrap_or_default();
        format!("`{text}` (of {what} `{}`)", node.name)
    }
}

/// The most items `items` can have: a literal array's length, or the
/// smallest `N` of the guards `len(items) <= N` (`< N`: `N - 1`).
pub(super) fn items_bound(contract: &Contract, items: &Expr) -> Option<(u64, Bound)> {
    if let ExprKind::Array(elements) = &items.kind {
        return Some((elements.len() as u64, Bound::Literal));
    }
    if let ExprKind::Literal(Val::Array(elements)) = &items.kind {
        return Some((elements.len() as u64, Bound::Literal));
    }
    let wanted = path(items)?;
    // The value of a `for` has as many items as it iterates over at most.
    if let (var, []) = (wanted.0, wanted.1.as_slice()) {
        if let Some(NodeKind::For(each)) = contract.nodes.get(var as usize).map(|n| &n.kind) {
            return items_bound(contract, &each.items);
        }
    }
    let mut best: Option<(u64, Bound)> = None;
    for node in &contract.nodes {
        let NodeKind::Guard { condition, .. } = &node.kind else { continue };
        for (of, n) in len_limits(condition) {
            if path(of).as_ref() == Some(&wanted) && best.as_ref().is_none_or(|(b, _)| n < *b) {
                let text = format!("{} = len({}) <= {n}", node.name, expr_text(contract, of)?);
                best = Some((n, Bound::Guard(text)));
            }
        }
    }
    best
}

/// `E` of `len(E)`.
fn of_len(e: &Expr) -> Option<&Expr> {
    match &e.kind {
        ExprKind::Call(Function::Len, args) if args.len() == 1 => Some(&args[0]),
        _ => None,
    }
}

/// The limits `len(E) <= N` a condition sets (through `and`).
fn len_limits(condition: &Expr) -> Vec<(&Expr, u64)> {
    let ExprKind::Binary(op, a, b) = &condition.kind else { return Vec::new() };
    let number = |e: &Expr| -> Option<u64> {
        match &e.kind {
            ExprKind::Literal(v) => v.as_i64().and_then(|n| u64::try_from(n).ok()),
            _ => None,
        }
    };
    let limit = match op {
        BinaryOp::And => {
            let mut all = len_limits(a);
            all.extend(len_limits(b));
            return all;
        }
        BinaryOp::Le => of_len(a).zip(number(b)),
        BinaryOp::Lt => of_len(a).zip(number(b).and_then(|n| n.checked_sub(1))),
        BinaryOp::Ge => of_len(b).zip(number(a)),
        BinaryOp::Gt => of_len(b).zip(number(a).and_then(|n| n.checked_sub(1))),
        _ => None,
    };
    limit.into_iter().collect()
}
