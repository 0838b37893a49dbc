//! The runs that wait for approvals under `ignite serve --restate`: one
//! Restate virtual object, [`RUNS`], keyed by the run's ID (the Restate
//! invocation ID of its `run`), served beside the contracts when a tool of
//! the program `requires_approval`.
//!
//! Input: notes from the runs (a call waits, with the awakeable that is
//! its durable promise; the run ended), and decisions from people. Output:
//! the run's state (`show`, as `GET /runs/ID` of `ignite serve` answers),
//! and each decision resolves the awakeable of its call, once: the run,
//! suspended on it, resumes on any worker.
//!
//! | handler | kind | body | answer |
//! | --- | --- | --- | --- |
//! | `show` | shared | none | the run's state |
//! | `decide` | exclusive | `{"call", "approve": true\|false, "note"}` | the run's state after it |
//! | `note` | exclusive, private | what a run reports | nothing |
//!
//! Exclusive handlers of one key run one at a time, so two decisions of
//! one call cannot both resolve it: the second is refused (409).

use std::collections::BTreeMap;

use restate_sdk::context::{
    ContextAwakeables as _, ContextClient as _, ContextReadState as _, ContextWriteState as _,
    ObjectContext, RequestTarget, SharedObjectContext,
};
use restate_sdk::endpoint::ContextInternal;
use restate_sdk::errors::{HandlerResult, TerminalError};
use restate_sdk::serde::Json;
use restate_sdk::service::macro_support::{ServiceBoxFuture, service_definition};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::diagnostic::Code;
use crate::effects::Decision;
use crate::failure::PendingCall;

/// The name of the virtual object of the runs.
pub(crate) const RUNS: &str = "IgniteRuns";

/// The state key of a run.
const STATE: &str = "run";

/// A call that waits, and the awakeable its decision resolves.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Waiting {
    pub(super) call: PendingCall,
    pub(super) awakeable: String,
}

/// What a run reports to its object (the `note` handler).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Note {
    /// A call waits for a decision.
    Waiting(Waiting),
    /// The run ended with these outputs.
    Done(Value),
    /// The run failed: the status `ignite serve` answers and the error body.
    Failed { http_status: u16, error: Value },
}

/// Where a run stands, as its object keeps it.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    /// The calls that wait, in the order they came.
    pending: Vec<Waiting>,
    /// Decided calls: `approved`, or `denied (REASON)`.
    decided: BTreeMap<String, String>,
    /// How it ended, once it did.
    ended: Option<Note>,
}

/// Reports `note` of run `run` to its object (a one-way call, journaled).
pub(super) fn note(ctx: &restate_sdk::context::Context<'_>, run: &str, note: &Note) {
    let body = serde_json::to_value(note).unwrap_or(Value::Null);
    ctx.request::<_, ()>(RequestTarget::object(RUNS, run, "note"), Json(body)).send();
}

/// The discovery document of the object.
pub(super) fn discovery() -> Value {
    let json = json!({"contentType": "application/json", "setContentTypeIfEmpty": false});
    json!({
        "name": RUNS,
        "ty": "VIRTUAL_OBJECT",
        "documentation": "ignite runs waiting for approvals, keyed by run ID",
        "handlers": [{
            "name": "show",
            "ty": "SHARED",
            "documentation": "where the run stands: running, waiting (with its calls), done or failed",
            "input": {"contentType": "application/json", "required": false},
            "output": json,
        }, {
            "name": "decide",
            "ty": "EXCLUSIVE",
            "documentation": "approve or deny a call the run waits for: {\"call\", \"approve\", \"note\"}",
            "input": {"contentType": "application/json", "required": true},
            "output": json,
        }, {
            "name": "note",
            "ty": "EXCLUSIVE",
            "documentation": "what a run reports (called by the runs)",
            "ingressPrivate": true,
            "input": {"contentType": "application/json", "required": true},
            "output": {"setContentTypeIfEmpty": false},
        }],
    })
}

/// The object's service, for the endpoint.
///
/// # Errors
/// The discovery document does not fit the SDK's.
pub(super) fn service() -> Result<restate_sdk::service::ServiceDefinition, String> {
    let discovery = serde_json::from_value(discovery())
        .map_err(|e| format!("`{RUNS}` cannot be a Restate object: {e}"))?;
    Ok(service_definition(Runs, discovery))
}

/// The object.
struct Runs;

impl restate_sdk::service::Service for Runs {
    type Future = ServiceBoxFuture;

    fn handle(&self, ctx: ContextInternal) -> Self::Future {
        Box::pin(async move {
            let (body, metadata) = ctx.input::<Vec<u8>>().await;
            match ctx.handler_name() {
                "show" => {
                    let context = SharedObjectContext::from((&ctx, metadata));
                    ctx.handle_handler_result(show(&context).await);
                }
                "decide" => {
                    let context = ObjectContext::from((&ctx, metadata));
                    ctx.handle_handler_result(decide(&context, &body).await);
                }
                "note" => {
                    let context = ObjectContext::from((&ctx, metadata));
                    ctx.handle_handler_result(record(&context, &body).await);
                }
                other => {
                    return Err(restate_sdk::endpoint::Error::unknown_handler(
                        ctx.service_name(),
                        other,
                    ));
                }
            }
            ctx.end();
            Ok(())
        })
    }
}

/// A terminal error with `status` and `ignite serve`'s JSON error body.
fn refused(status: u16, code: Code, message: String) -> TerminalError {
    let body = json!({"error": {"code": code.as_str(), "message": message}});
    TerminalError::new_with_code(status, body.to_string())
}

fn unknown(run: &str) -> TerminalError {
    let message = format!("no run `{run}` waits for approval or ended after waiting");
    refused(404, Code::ServeApproval, message)
}

/// The answer of `show`: the body `GET /runs/ID` of `ignite serve` gives.
fn answer(run: &str, state: &State) -> Value {
    match &state.ended {
        Some(Note::Done(outputs)) => json!({"run": run, "status": "done", "outputs": outputs}),
        Some(Note::Failed { http_status, error }) => {
            json!({"run": run, "status": "failed", "http_status": http_status, "error": error["error"]})
        }
        _ if state.pending.is_empty() => json!({"run": run, "status": "running"}),
        _ => {
            let calls: Vec<PendingCall> = state.pending.iter().map(|w| w.call.clone()).collect();
            crate::serve::runs::waiting(run, &calls)
        }
    }
}

async fn show(ctx: &SharedObjectContext<'_>) -> HandlerResult<Json<Value>> {
    let Some(Json(state)) = ctx.get::<Json<State>>(STATE).await? else {
        return Err(unknown(ctx.key()).into());
    };
    Ok(Json(answer(ctx.key(), &state)))
}

/// `decide`: resolves the awakeable of the call once.
async fn decide(ctx: &ObjectContext<'_>, body: &[u8]) -> HandlerResult<Json<Value>> {
    let bad = |message: String| refused(400, Code::ServeBadBody, message);
    let decision = crate::serve::parse_decision(body).map_err(bad)?;
    let call = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("call").and_then(Value::as_str).map(str::to_owned))
        .ok_or_else(|| bad("the body must name the `call` it decides".to_owned()))?;
    let run = ctx.key();
    let Some(Json(mut state)) = ctx.get::<Json<State>>(STATE).await? else {
        return Err(unknown(run).into());
    };
    let Some(at) = state.pending.iter().position(|w| w.call.call == call) else {
        let message = match state.decided.get(&call) {
            Some(decided) => format!("call `{call}` of run `{run}` was already {decided}"),
            None => {
                let ids = state.pending.iter().map(|w| w.call.call.as_str());
                let help = crate::suggest::did_you_mean(&call, ids)
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                format!("run `{run}` has no call `{call}` waiting for approval{help}")
            }
        };
        return Err(refused(409, Code::ServeApproval, message).into());
    };
    let waiting = state.pending.remove(at);
    let (approve, note, decided) = match decision {
        Decision::Approve(note) => (true, note, "approved".to_owned()),
        Decision::Deny(reason) => (false, Some(reason.clone()), format!("denied ({reason})")),
    };
    state.decided.insert(call, decided);
    ctx.resolve_awakeable(&waiting.awakeable, Json(json!({"approve": approve, "note": note})));
    let shown = answer(run, &state);
    ctx.set(STATE, Json(state));
    Ok(Json(shown))
}

/// `note`: what a run reports.
async fn record(ctx: &ObjectContext<'_>, body: &[u8]) -> HandlerResult<()> {
    let note: Note = serde_json::from_slice(body)
        .map_err(|e| TerminalError::new(format!("`note` takes what a run reports: {e}")))?;
    let mut state = ctx.get::<Json<State>>(STATE).await?.map(Json::into_inner).unwrap_or_default();
    match note {
        Note::Waiting(waiting) => {
            if !state.pending.iter().any(|w| w.call.call == waiting.call.call) {
                state.pending.push(waiting);
            }
        }
        ended => {
            state.pending.clear();
            state.ended = Some(ended);
        }
    }
    ctx.set(STATE, Json(state));
    Ok(())
}
