//! A journal's approvals: the lines that say a call waits, was approved
//! or denied, or started; what they add up to per call; and the decisions
//! `ignite approve` and `ignite deny` append.
//!
//! ```json
//! {"approval":{"state":"pending","call":{"call":"refund-3f9a2c1b0e","tool":"refund","node":"Returns > refund","args":{"amount":250.0}}}}
//! {"approval":{"state":"approved","call":"refund-3f9a2c1b0e","note":"ok by Ana"}}
//! {"approval":{"state":"started","call":"refund-3f9a2c1b0e"}}
//! ```
//!
//! Each call goes `pending` → `approved` | `denied`, then (approved)
//! `started` before its work begins. A journal whose lines break that
//! order (a decision for a call that never waited, a second decision) was
//! edited by hand: reading it fails, naming the line, and nothing runs.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::approval::Verdict;
use super::lines::LineFile;
use crate::failure::PendingCall;

/// One approval line's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub(super) enum Mark {
    /// The call waits (again, after an interrupted run, when `interrupted`).
    Pending {
        /// The call.
        call: PendingCall,
    },
    /// A person approved it.
    Approved {
        /// The call's ID.
        call: String,
        /// `--note`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// A person denied it.
    Denied {
        /// The call's ID.
        call: String,
        /// `--reason`.
        reason: String,
    },
    /// Its approved work is about to start.
    Started {
        /// The call's ID.
        call: String,
    },
}

impl Mark {
    fn call(&self) -> &str {
        match self {
            Mark::Pending { call } => &call.call,
            Mark::Approved { call, .. } | Mark::Denied { call, .. } | Mark::Started { call } => {
                call
            }
        }
    }
}

/// A journal line holding a [`Mark`].
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Line<'a> {
    pub(super) approval: Cow<'a, Mark>,
}

/// Where one call stands.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum State {
    Pending(PendingCall),
    Approved,
    Denied(String),
    Started(PendingCall),
}

/// Every call's state, from a journal's marks in order (`n`: the line's
/// number, for errors).
///
/// # Errors
/// A mark that does not follow from the ones before: the journal was
/// edited by hand.
pub(super) fn fold(
    marks: impl IntoIterator<Item = (usize, Mark)>,
) -> Result<HashMap<String, State>, String> {
    let mut states: HashMap<String, State> = HashMap::new();
    let mut calls: HashMap<String, PendingCall> = HashMap::new();
    for (n, mark) in marks {
        let id = mark.call().to_owned();
        let before = states.get(&id);
        let next = match (before, mark) {
            (None | Some(State::Started(_)), Mark::Pending { call }) => {
                calls.insert(id.clone(), call.clone());
                State::Pending(call)
            }
            (Some(State::Pending(_)), Mark::Approved { .. }) => State::Approved,
            (Some(State::Pending(_)), Mark::Denied { reason, .. }) => State::Denied(reason),
            (Some(State::Approved | State::Started(_)), Mark::Started { .. }) => {
                State::Started(calls[&id].clone())
            }
            (before, mark) => {
                let was = match before {
                    None => "never waited for approval",
                    Some(State::Pending(_)) => "waits for a decision",
                    Some(State::Approved) => "was approved",
                    Some(State::Denied(_)) => "was denied",
                    Some(State::Started(_)) => "was started",
                };
                let what = match mark {
                    Mark::Pending { .. } => "waits again",
                    Mark::Approved { .. } => "is approved",
                    Mark::Denied { .. } => "is denied",
                    Mark::Started { .. } => "starts",
                };
                return Err(format!(
                    "line {n}: call `{id}` {what}, but it {was}; the journal was changed by hand"
                ));
            }
        };
        states.insert(id, next);
    }
    Ok(states)
}

/// The calls of `states` waiting for a decision, sorted by node and ID.
pub(super) fn waiting(states: &HashMap<String, State>) -> Vec<PendingCall> {
    let mut calls: Vec<PendingCall> = states
        .values()
        .filter_map(|s| match s {
            State::Pending(call) => Some(call.clone()),
            _ => None,
        })
        .collect();
    calls.sort_by(|a, b| (&a.node, &a.call).cmp(&(&b.node, &b.call)));
    calls
}

/// A journal as the run's approver (see `Recording`'s
/// [`super::Approver`]): its decisions answer, and a call nobody decided is
/// noted as waiting.
#[derive(Debug)]
pub(super) struct Decisions<'f> {
    pub(super) states: &'f Mutex<HashMap<String, State>>,
    pub(super) file: &'f LineFile,
}

impl Decisions<'_> {
    fn note(&self, mark: Mark) -> Result<(), String> {
        self.file.append_json(&Line { approval: Cow::Owned(mark) })
    }

    pub(super) fn decide(&self, call: &PendingCall, resend_safe: bool) -> Result<Verdict, String> {
        let mut states = crate::sync::lock(self.states);
        let waits = |call: PendingCall| Verdict::Pending(call);
        match states.get(&call.call).cloned() {
            Some(State::Approved) => Ok(Verdict::Approved),
            Some(State::Denied(reason)) => Ok(Verdict::Denied(reason)),
            Some(State::Pending(waiting)) => Ok(waits(waiting)),
            // Cut off after it started: resent when that cannot act twice,
            // else asked again.
            Some(State::Started(_)) if resend_safe => Ok(Verdict::Approved),
            Some(State::Started(_)) => {
                let again = PendingCall { interrupted: true, ..call.clone() };
                self.note(Mark::Pending { call: again.clone() })?;
                states.insert(call.call.clone(), State::Pending(again.clone()));
                Ok(waits(again))
            }
            None => {
                self.note(Mark::Pending { call: call.clone() })?;
                states.insert(call.call.clone(), State::Pending(call.clone()));
                Ok(waits(call.clone()))
            }
        }
    }

    pub(super) fn starting(&self, call: &PendingCall) -> Result<(), String> {
        let mut states = crate::sync::lock(self.states);
        self.note(Mark::Started { call: call.call.clone() })?;
        states.insert(call.call.clone(), State::Started(call.clone()));
        Ok(())
    }
}

/// What `ignite approve` or `ignite deny` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approve, with an optional note.
    Approve(Option<String>),
    /// Deny, with the reason.
    Deny(String),
}

/// The marks `decision` adds for `calls` (every waiting call when
/// empty), checked against `states`.
///
/// # Errors
/// A call that is not there or was already decided, or no call waits.
pub(super) fn decide(
    states: &HashMap<String, State>,
    run: &str,
    calls: &[String],
    decision: &Decision,
) -> Result<(Vec<Mark>, Vec<PendingCall>), String> {
    let chosen: Vec<String> = if calls.is_empty() {
        let all: Vec<String> = waiting(states).into_iter().map(|c| c.call).collect();
        if all.is_empty() {
            return Err(format!("no call of run `{run}` waits for approval"));
        }
        all
    } else {
        calls.to_vec()
    };
    let (mut marks, mut decided) = (Vec::new(), Vec::new());
    for id in &chosen {
        let call = match states.get(id) {
            Some(State::Pending(call)) => call.clone(),
            Some(State::Approved | State::Started(_)) => {
                return Err(format!("call `{id}` of run `{run}` was already approved"));
            }
            Some(State::Denied(reason)) => {
                return Err(format!("call `{id}` of run `{run}` was already denied ({reason})"));
            }
            None => {
                let ids: Vec<String> = waiting(states).into_iter().map(|c| c.call).collect();
                let help = crate::suggest::did_you_mean(id, ids.iter().map(String::as_str))
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                return Err(format!(
                    "run `{run}` has no call `{id}` waiting for approval{help} (`ignite approvals {run}` lists them)"
                ));
            }
        };
        if decided.iter().any(|c: &PendingCall| c.call == *id) {
            continue;
        }
        marks.push(match decision {
            Decision::Approve(note) => Mark::Approved { call: id.clone(), note: note.clone() },
            Decision::Deny(reason) => Mark::Denied { call: id.clone(), reason: reason.clone() },
        });
        decided.push(call);
    }
    Ok((marks, decided))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Decision, Mark, State, decide, fold};
    use crate::failure::PendingCall;

    fn call(id: &str) -> PendingCall {
        PendingCall {
            call: id.to_owned(),
            tool: "refund".to_owned(),
            node: "Returns > refund".to_owned(),
            args: json!({"amount": 250.0}),
            interrupted: false,
        }
    }

    #[test]
    fn marks_fold_into_states_in_order() {
        let marks = vec![
            (2, Mark::Pending { call: call("a") }),
            (3, Mark::Pending { call: call("b") }),
            (4, Mark::Approved { call: "a".into(), note: None }),
            (5, Mark::Started { call: "a".into() }),
            (6, Mark::Denied { call: "b".into(), reason: "no".into() }),
        ];
        let states = fold(marks).unwrap();
        assert_eq!(states["a"], State::Started(call("a")));
        assert_eq!(states["b"], State::Denied("no".into()));
    }

    #[test]
    fn a_decision_out_of_order_is_a_hand_edit() {
        let error = fold(vec![(2, Mark::Approved { call: "a".into(), note: None })]).unwrap_err();
        assert!(error.contains("line 2: call `a` is approved, but it never waited"), "{error}");
        let twice = vec![
            (2, Mark::Pending { call: call("a") }),
            (3, Mark::Denied { call: "a".into(), reason: "no".into() }),
            (4, Mark::Approved { call: "a".into(), note: None }),
        ];
        assert!(
            fold(twice).unwrap_err().contains("line 4: call `a` is approved, but it was denied")
        );
    }

    #[test]
    fn decisions_name_calls_that_are_not_waiting() {
        let states = fold(vec![(2, Mark::Pending { call: call("refund-1") })]).unwrap();
        let approve = Decision::Approve(None);
        let unknown = decide(&states, "r1", &["refund-2".into()], &approve).unwrap_err();
        assert!(unknown.contains("run `r1` has no call `refund-2` waiting"), "{unknown}");
        let (marks, calls) = decide(&states, "r1", &[], &approve).unwrap();
        assert_eq!(calls, vec![call("refund-1")]);
        assert_eq!(marks, vec![Mark::Approved { call: "refund-1".into(), note: None }]);
        let decided = fold(vec![
            (2, Mark::Pending { call: call("refund-1") }),
            (3, Mark::Approved { call: "refund-1".into(), note: None }),
        ])
        .unwrap();
        let again = decide(&decided, "r1", &["refund-1".into()], &approve).unwrap_err();
        assert!(again.contains("was already approved"), "{again}");
        assert!(decide(&decided, "r1", &[], &approve).unwrap_err().contains("no call"));
    }
}
