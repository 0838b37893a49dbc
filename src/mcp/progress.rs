//! Progress of a call whose request carries a `progressToken`: a
//! `notifications/progress` per finished node of the contract run, with
//! the total known before it starts (the contract's nodes, inputs aside).
//! Finished nodes are read from the run's timeline ([`Trace`]), the
//! scheduler's own record of each node that finished or was skipped;
//! nodes of composed contracts and the items of a `for` count with the
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
                let (done, last) = finished_nodes(&trace, &prefix);
                let done = if finished == Some(true) { total.max(done) } else { done };
                if done > sent {
                    self.send(done, total, last).await;
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

/// How many root nodes (paths `prefix` + a name) the timeline shows done,
/// and the one that finished last.
fn finished_nodes(trace: &Trace, prefix: &str) -> (usize, Option<String>) {
    let mut seen = BTreeSet::new();
    let mut last: Option<(Duration, String)> = None;
    for entry in trace.entries() {
        if INSIDE.contains(&entry.kind.as_str()) {
            continue;
        }
        let Some(node) = entry.path.strip_prefix(prefix) else { continue };
        if node.contains(['[', ' ']) {
            continue;
        }
        seen.insert(node.to_owned());
        let end = entry.start + entry.duration;
        if last.as_ref().is_none_or(|(at, _)| end >= *at) {
            last = Some((end, node.to_owned()));
        }
    }
    (seen.len(), last.map(|(_, node)| node))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::finished_nodes;
    use crate::trace::Trace;

    #[test]
    fn only_root_nodes_count_once_each() {
        let trace = Trace::new(true);
        let now = Instant::now();
        trace.record("Shop > quote", "tool", "ok", now, String::new());
        std::thread::sleep(std::time::Duration::from_millis(2));
        trace.record("Shop > ask", "model", "ok", now, String::new());
        trace.record("Shop > ask", "agent", "ok", now, String::new());
        trace.record("Shop > ask > lookup", "limit", "wait", now, String::new());
        trace.record("Shop.child > inner", "compute", "ok", now, String::new());
        trace.record("Shop > each[0]", "tool", "ok", now, String::new());
        trace.record("Shop > quote", "cache", "hit", now, String::new());
        assert_eq!(finished_nodes(&trace, "Shop > "), (2, Some("ask".to_owned())));
    }
}
