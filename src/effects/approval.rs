//! Approvals: a call of a tool that `requires_approval` (its `when`
//! condition true for these arguments) does not start until a person
//! approves that call.
//!
//! Input: the call (tool, node path, arguments) as a `PendingCall` with
//! its ID, a hash of what binds it (the tool and its definition, the
//! effect key, the canonical JSON of the arguments). Output: a
//! [`Verdict`] from the run's [`Approver`]: the journal's decisions
//! (`--journal`, `ignite approve`), a person asked on the terminal, a
//! test's `approve`/`deny`. Without an approver the call fails before it
//! starts ([`NodeError::ApprovalRequired`]).
//!
//! The gate sits inside the live work of [`super::Scope::call_tool`]: a
//! call the journal already holds an outcome for is answered from it and
//! never asked again, so an approved call runs at most once per
//! journaled outcome. Before an approved call starts, the approver is
//! told ([`Approver::starting`]): a journal notes it, and a resumed run
//! that finds the note without an outcome knows the call may have
//! reached its program or server. An `http` call is then resent with the
//! same `Idempotency-Key` (derived from the approval, see
//! [`idempotency_key`]); any other call is asked again.

use serde_json::Value;

use super::EffectKey;
use super::definition::digest;
use crate::failure::{NodeError, PendingCall};
use crate::ir::{Implementation, Program, ToolId};

/// What a person decided about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It may run.
    Approved,
    /// It must not: why.
    Denied(String),
    /// Nobody decided yet: the call waits (the run pauses).
    Pending(PendingCall),
}

/// Who decides the calls that need approval in a run.
pub trait Approver: Send + Sync {
    /// The decision for `call` (may ask a person and wait); `resend_safe`:
    /// the call may be sent again after a crash without acting twice (an
    /// `http` call with its `Idempotency-Key`, a pure `returns` tool).
    ///
    /// # Errors
    /// The decision could not be read or kept (a journal write failed).
    fn decide(&self, call: &PendingCall, resend_safe: bool) -> Result<Verdict, String>;

    /// An approved `call` is about to start.
    ///
    /// # Errors
    /// As [`Approver::decide`].
    fn starting(&self, _call: &PendingCall) -> Result<(), String> {
        Ok(())
    }

    /// What makes the run's idempotency keys its own (a journal's run ID).
    fn salt(&self) -> &str {
        ""
    }
}

/// The value of the `Idempotency-Key` header of an approved `http` call:
/// the same for every send of that approved call in that run.
#[must_use]
pub fn idempotency_key(salt: &str, call: &str) -> String {
    let hash = digest(format!("ignite approval\n{salt}\n{call}").as_bytes());
    format!("ignite-{}", &hash[..32])
}

/// `value` with the keys of every object sorted: the canonical JSON its
/// hash is taken of.
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), canonical(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The call of `tool` with `args` at `key` (whose node path is `path`),
/// as an approval names it.
#[must_use]
pub(crate) fn pending_call(
    program: &Program,
    tool: ToolId,
    key: &EffectKey,
    path: &str,
    args: &Value,
) -> PendingCall {
    let declared = &program[tool];
    let bound = serde_json::json!({
        "tool": declared.tool_name,
        "definition": super::definition::tool(program, tool),
        "key": key,
        "args": canonical(args),
    });
    let hash = digest(bound.to_string().as_bytes());
    PendingCall {
        call: format!("{}-{}", declared.tool_name, &hash[..10]),
        tool: declared.tool_name.clone(),
        node: path.to_owned(),
        args: args.clone(),
        interrupted: false,
    }
}

/// True when a call of `tool` may be sent again after a crash without
/// acting twice: an `http` call carries its `Idempotency-Key`, a `returns`
/// tool computes. An `exec` program, a builtin or a native may have acted.
#[must_use]
pub(crate) fn resend_safe(program: &Program, tool: ToolId) -> bool {
    matches!(program[tool].implementation, Implementation::Http { .. } | Implementation::Returns(_))
}

/// The gate before a call that needs approval: `Ok(Some(key))` (the
/// idempotency key) when it may start, else why not.
///
/// # Errors
/// The call was denied, waits, or nobody can decide.
pub(crate) fn gate(
    approver: Option<&dyn Approver>,
    program: &Program,
    tool: ToolId,
    call: PendingCall,
) -> Result<String, NodeError> {
    let Some(approver) = approver else {
        return Err(NodeError::ApprovalRequired(Box::new(call)));
    };
    let store = |message: String| NodeError::Store { message };
    match approver.decide(&call, resend_safe(program, tool)).map_err(store)? {
        Verdict::Approved => {
            approver.starting(&call).map_err(store)?;
            Ok(idempotency_key(approver.salt(), &call.call))
        }
        Verdict::Denied(reason) => Err(NodeError::Denied { tool: call.tool, reason }),
        Verdict::Pending(call) => Err(NodeError::AwaitingApproval(vec![call])),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{canonical, idempotency_key};

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let a = json!({"b": 1, "a": {"y": [ {"q": 1, "p": 2} ], "x": null}});
        let b = json!({"a": {"x": null, "y": [ {"p": 2, "q": 1} ]}, "b": 1});
        assert_eq!(canonical(&a).to_string(), canonical(&b).to_string());
        assert_eq!(canonical(&a).to_string(), r#"{"a":{"x":null,"y":[{"p":2,"q":1}]},"b":1}"#);
    }

    #[test]
    fn idempotency_keys_are_stable_and_per_run() {
        assert_eq!(idempotency_key("run1", "refund-1"), idempotency_key("run1", "refund-1"));
        assert_ne!(idempotency_key("run1", "refund-1"), idempotency_key("run2", "refund-1"));
        assert_ne!(idempotency_key("run1", "refund-1"), idempotency_key("run1", "refund-2"));
    }
}
