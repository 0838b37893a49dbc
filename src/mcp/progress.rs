//! Progress of a call whose request carries a `progressToken`: a
//! `notifications/progress` per finished node of the contract run, and per
//! finished item of its `for` nodes of calls. The total is the contract's
//! nodes, inputs aside (known before it starts), plus the items of each
//! such `for` once it starts its calls (its list known). Finished nodes
//! and items are read from the run's timeline ([`Trace`]), the
//! scheduler's own record of each node that finished or was skipped and
//! of each `for` that started; nodes of composed contracts count with the
//! node that holds them. A tool called on its own is one node.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::trace::Trace;

/// How often the timeline is read while a run goes.
const EVERY: Duration = Duration::from_millis(25);

/// Kinds of timeline lines that are steps inside a node, not nodes.
const INSIDE: [&str; 4] = ["model", "tool_call", "cache", "limit"];

/// Where a call's progress goes.
pub(crate) struct Progress {
    token: ProgressToken,
    peer: Peer<RoleServer>,
}

/// A watch on a run: say how it ended (true: every node is done), then
/// await the handle before answering, so the last notification goes first.
pub(crate) type Watching = (oneshot::Sender<bool>, JoinHandle<()>);

impl Progress {
    /// The progress of the request of `context`, when it asked for it.
    #[must_use]
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Option<Self> {
        let token = context.meta.get_progress_token()?;
        Some(Self { token, peer: context.peer.clone() })
    }

    /// Tells the client `done` of `total` are finished, the last one `last`.
    pub(crate) async fn send(&self, done: usize, total: usize, last: Option<String>) {
        #[allow(clippy::cast_precision_loss)]
        let mut param = ProgressNotificationParam::new(self.token.clone(), done as f64)
            .with_total(total as f64);
        if let Some(last) = last {
            param = param.with_message(format!("finished `{last}`"));
        }
        // A client that went away gets no more: nothing to do about it.
        let _ = self.peer.notify_progress(param).await;
    }

    /// Reports the root nodes of `contract` that `trace` shows finished,
    /// as they finish, out of `total`, until told the run ended.
    #[must_use]
    pub(crate) fn watch(self, trace: Arc<Trace>, contract: &str, total: usize) -> Watching {
        let (ended, mut end) = oneshot::channel();
        let prefix = format!("{contract} > ");
        let task = tokio::spawn(async move {
            let mut sent = 0;
            loop {
                let finished = tokio::select! {
                    () = tokio::time::sleep(EVERY) => None,
                    all = &mut end => Some(all.unwrap_or(false)),
                };
                let tally = finished_nodes(&trace, &prefix);
                let all = total + tally.items;
                let done = if finished == Some(true) { all.max(tally.done) } else { tally.done };
                if done > sent {
                    self.send(done, all, tally.last).await;
                    sent = done;
                }
                if finished.is_some() {
                    return;
                }
            }
        });
        (ended, task)
    }
}

/// What the timeline shows of a run's root nodes (paths `prefix` + a name).
#[derive(Debug, PartialEq, Eq)]
struct Tally {
    /// Root nodes and items of root `for` nodes that finished.
    done: usize,
    /// The items of the root `for` nodes whose calls started.
    items: usize,
    /// The node (or item: `each[2]`) that finished last.
    last: Option<String>,
}

/// The root nodes and `for` items the timeline shows done, and how many
/// items the root `for` nodes that started have.
fn finished_nodes(trace: &Trace, prefix: &str) -> Tally {
    let root = |path: &str| root_node(path, prefix).is_some();
    let mut seen = BTreeSet::new();
    let mut last: Option<(Duration, String)> = None;
    for entry in trace.entries() {
        if INSIDE.contains(&entry.kind) {
            continue;
        }
        // A root node (`quote`) or an item of one (`each[2]`).
        let Some(node) = root_node(&entry.path, prefix) else { continue };
        seen.insert(node.to_owned());
        let end = entry.start + entry.duration;
        if last.as_ref().is_none_or(|(at, _)| end >= *at) {
            last = Some((end, node.to_owned()));
        }
    }
    let items =
        trace.item_counts().iter().filter(|(path, _)| root(path)).map(|(_, count)| count).sum();
    Tally { done: seen.len(), items, last: last.map(|(_, node)| node) }
}

/// The name of the root node (`quote`) or item (`each[2]`) at `path`.
fn root_node<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    path.strip_prefix(prefix).filter(|node| !node.contains(' '))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::{Tally, finished_nodes};
    use crate::trace::Trace;

    #[test]
    fn root_nodes_and_their_items_count_once_each() {
        let trace = Trace::new(true);
        let now = Instant::now();
        trace.record("Shop > quote", "tool", "ok", now, String::new());
        std::thread::sleep(std::time::Duration::from_millis(2));
        trace.record("Shop > ask", "model", "ok", now, String::new());
        trace.record("Shop > ask", "agent", "ok", now, String::new());
        trace.record("Shop > ask > lookup", "limit", "wait", now, String::new());
        trace.record("Shop.child > inner", "compute", "ok", now, String::new());
        trace.record("Shop > quote", "cache", "hit", now, String::new());
        trace.record_items("Shop > each", 3);
        trace.record_items("Shop.child > inner", 5);
        trace.record("Shop > each[0]", "tool", "ok", now, String::new());
        trace.record("Shop > each[0]", "for", "ok", now, String::new());
        trace.record("Shop.child > inner[0]", "tool", "ok", now, String::new());
        let tally = finished_nodes(&trace, "Shop > ");
        assert_eq!(tally, Tally { done: 3, items: 3, last: Some("each[0]".to_owned()) });
    }
}
