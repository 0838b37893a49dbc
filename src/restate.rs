//! Contracts as Restate services: the worker behind `ignite serve --restate`
//! (cargo feature `restate`).
//!
//! Input: an [`Engine`]. Output: a Restate deployment (the SDK's HTTP/2
//! endpoint) with one service per top-level contract, named after it, with
//! two handlers: `run` takes the inputs JSON and answers the outputs JSON;
//! `step` (private to Restate: the ingress refuses it) does one effect.
//!
//! An invocation of `run` runs the contract through [`Engine::run`] with a
//! [`Journal`] in its effects: every tool call and model exchange becomes
//! a call to the same service's `step` handler (a child invocation) whose
//! input is the effect described as data ([`Step`]: its key as the name,
//! its retries, its [`Work`](crate::effects::Work)). The child does the
//! work as one `ctx.run` step named by the effect key (`Contract >
//! node#seq tool:name`) through [`Engine::perform`], on whichever worker
//! Restate chooses (every worker serves the same program and has its own
//! keys), so independent effects of one run are in flight together:
//!
//! | the journal | the step |
//! | --- | --- |
//! | of `run` holds the call's result (a replay on this or another worker) | answered from it, no child runs |
//! | of the child holds the `ctx.run` result | the child answers it, the work is not done |
//! | holds neither | the child does the work; the result is journaled, then answered |
//!
//! Restate matches a replayed journal by position, so `run` must make its
//! calls in the same order on every replay. The engine runs on a blocking
//! thread and asks for steps over a channel; the handler owns the Restate
//! context and goes in rounds: it waits until every task of the run waits
//! on its steps (the run's [`Activity`] is quiet), calls `step` for each
//! new request in the order of their names, then awaits the first call
//! to complete (Restate gives completions in journal order, also on a
//! replay) and hands its result to the engine, which reacts before the
//! next round. The order of the calls therefore depends only on the
//! inputs and the results, and runners keep their meaning.
//!
//! A round with one new request and no call in flight has nothing to
//! overlap: that step is a `ctx.run` of the run's own invocation, done by
//! the same [`Engine::perform`] (a child invocation costs several times
//! more). Whether a step is a child or not depends on the rounds only, so
//! a replay makes the same choice.
//!
//! A call that needs approval waits on a durable promise, a Restate
//! awakeable, asked for in the rounds like a step (a child invocation of
//! the `approval` handler, or of the run itself when it is alone): the
//! call is reported with the awakeable to the run's object ([`runs`],
//! keyed by the run's invocation ID), the invocation suspends, and a
//! decision there resolves the awakeable; the run resumes on any worker,
//! its finished steps answered from the journal. An approved call's step
//! carries the approval's `Idempotency-Key` for its `http` requests.
//!
//! A tool's `retries N` become the step's retry policy (N more attempts,
//! 100 ms doubling up to 10 s, then a terminal failure of the child); a
//! model request's transport failure is a failed step and ignite's
//! provider retries make further steps. Run errors become terminal errors
//! whose code is the HTTP status of `ignite serve` and whose message is
//! the same JSON error body.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use restate_sdk::context::{
    Context, ContextAwakeables as _, ContextClient as _, ContextSideEffects as _,
    DurableFuturesUnordered, RequestTarget, RunFuture as _, RunRetryPolicy,
};
use restate_sdk::endpoint::{ContextInternal, Endpoint};
use restate_sdk::errors::{HandlerError, HandlerResult, TerminalError};
use restate_sdk::serde::Json;
use restate_sdk::service::macro_support::{ServiceBoxFuture, service_definition};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

mod runs;

use crate::effects::{Activity, Effects, Journal, Outcome, Step, Verdict};
use crate::failure::PendingCall;
use crate::ir::ContractId;
use crate::runtime::{Engine, InputsFrom, RunOptions};
use crate::serve::{input_schema, output_schema, parse_inputs, run_error};

/// The handler of every contract's service that runs the contract.
pub(crate) const HANDLER: &str = "run";

/// The handler of every contract's service that does one effect.
pub(crate) const STEP: &str = "step";

/// The handler of every contract's service that waits for one approval
/// (when a tool of the program `requires_approval`).
pub(crate) const APPROVAL: &str = "approval";

/// Why a step has no result when the invocation ends under it.
const ENDED: &str = "the Restate invocation ended during the step";

/// The Restate endpoint serving every top-level contract of `engine`.
///
/// # Errors
/// A contract's name is not a valid Restate service name, or is the
/// name of the runs' object.
pub(crate) fn endpoint(engine: &Arc<Engine>) -> Result<Endpoint, String> {
    let mut builder = Endpoint::builder();
    let approvals = engine.program().tools.iter().any(|t| t.approval.is_some());
    if approvals {
        builder = builder.bind(runs::service()?);
    }
    for contract in engine.roots() {
        let program = engine.program();
        let name = program[contract].name.clone();
        if approvals && name == runs::RUNS {
            return Err(format!(
                "contract `{name}` has the name of the Restate object of the runs waiting for approvals; rename the contract"
            ));
        }
        let private = |name: &str, documentation: &str| {
            json!({
                "name": name,
                "documentation": documentation,
                "ingressPrivate": true,
                "input": {"contentType": "application/json", "required": true},
                "output": {"contentType": "application/json", "setContentTypeIfEmpty": false},
            })
        };
        let mut handlers = vec![
            json!({
                "name": HANDLER,
                "input": {
                    "contentType": "application/json",
                    "jsonSchema": input_schema(program, contract),
                    "required": false,
                },
                "output": {
                    "contentType": "application/json",
                    "jsonSchema": output_schema(program, contract),
                    "setContentTypeIfEmpty": false,
                },
            }),
            private(STEP, "one tool call or model exchange of a run (called by `run`)"),
        ];
        if approvals {
            handlers.push(private(APPROVAL, "waits for a decision on a call (called by `run`)"));
        }
        let discovery = serde_json::from_value(json!({
            "name": name,
            "ty": "SERVICE",
            "documentation": format!("ignite contract `{name}`: inputs JSON to outputs JSON"),
            "handlers": handlers,
        }))
        .map_err(|e| format!("contract `{name}` cannot be a Restate service: {e}"))?;
        let service = ContractService { engine: Arc::clone(engine), contract, approvals };
        builder = builder.bind(service_definition(service, discovery));
    }
    Ok(builder.build())
}

/// Serves `endpoint` on `listener` (HTTP/2, as Restate speaks to
/// deployments) until `stop` resolves.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    endpoint: Endpoint,
    stop: impl Future<Output = ()>,
) {
    restate_sdk::http_server::HttpServer::new(endpoint).serve_with_cancel(listener, stop).await;
}

/// One contract's service.
struct ContractService {
    engine: Arc<Engine>,
    contract: ContractId,
    /// A tool of the program `requires_approval`: runs report to their object.
    approvals: bool,
}

impl restate_sdk::service::Service for ContractService {
    type Future = ServiceBoxFuture;

    fn handle(&self, ctx: ContextInternal) -> Self::Future {
        let (engine, contract, approvals) =
            (Arc::clone(&self.engine), self.contract, self.approvals);
        Box::pin(async move {
            let (body, metadata) = ctx.input::<Vec<u8>>().await;
            let context = Context::from((&ctx, metadata));
            match ctx.handler_name() {
                HANDLER => {
                    let result = invoke(&context, &engine, contract, &body, approvals).await;
                    ctx.handle_handler_result(result);
                }
                STEP => ctx.handle_handler_result(step(&context, &engine, &body).await),
                APPROVAL if approvals => ctx.handle_handler_result(approval(&context, &body).await),
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

/// Runs `contract` on the inputs `body`, its effects as calls of `step`
/// and its approvals as calls of `approval`; with `approvals`, how it
/// ends is reported to its object.
async fn invoke(
    ctx: &Context<'_>,
    engine: &Arc<Engine>,
    contract: ContractId,
    body: &[u8],
    approvals: bool,
) -> HandlerResult<Json<Value>> {
    let inputs = parse_inputs(body).map_err(|message| {
        let body = json!({"error": {"code": "ignite::serve::bad_body", "message": message}});
        TerminalError::new_with_code(400, body.to_string())
    })?;
    let (steps, mut requests) = mpsc::unbounded_channel();
    let activity = Activity::new();
    let run_id = ctx.invocation_id().to_owned();
    let bridge = Bridge { steps, run: run_id.clone() };
    let effects = Effects::live().with_journal(Arc::new(bridge), Arc::clone(&activity));
    let run_engine = engine.sibling(effects);
    let options = RunOptions { inputs_from: InputsFrom::Body, ..RunOptions::default() };
    let mut run = tokio::task::spawn_blocking(move || run_engine.run(contract, &inputs, &options));
    let service = &engine.program()[contract].name;
    let mut calls = DurableFuturesUnordered::new();
    let mut answers = HashMap::new();
    loop {
        tokio::select! {
            biased;
            finished = &mut run => return finished_run(ctx, engine, finished, approvals.then_some(&run_id)),
            () = activity.quiet() => {}
        }
        // Every task waits on its steps: the new ones, in the order of their names.
        let mut asked = Vec::new();
        while let Ok(request) = requests.try_recv() {
            asked.push(request);
        }
        asked.sort_by_cached_key(|request| request.ask.name());
        // A lone step, nothing in flight: no other effect could overlap it,
        // so it is a step of this invocation (cheaper than a child).
        if let ([_], true) = (asked.as_slice(), calls.is_empty()) {
            if let Some(StepRequest { ask, answer }) = asked.pop() {
                let result = match ask {
                    Ask::Step(step) => run_step(ctx, engine, step).await,
                    Ask::Approval(call) => decision(ctx, &run_id, call).await,
                };
                let _ = answer.send(result.map_err(|e| e.message().to_owned()));
            }
            continue;
        }
        for StepRequest { ask, answer } in asked {
            let (handler, body) = match ask {
                Ask::Step(step) => (STEP, serde_json::to_value(step)),
                Ask::Approval(call) => (APPROVAL, Ok(json!({"run": run_id, "call": call}))),
            };
            let body = body.map_err(|e| HandlerError::from(format!("a step as JSON: {e}")))?;
            let target = RequestTarget::service(service.as_str(), handler);
            let call = ctx.request::<_, Json<Outcome>>(target, Json(body)).call();
            answers.insert(calls.push(call), answer);
        }
        let Some((index, result)) = calls.next().await? else {
            // Quiet with no step in flight: the run is ending.
            return finished_run(ctx, engine, run.await, approvals.then_some(&run_id));
        };
        if let Some(answer) = answers.remove(&index) {
            let _ = answer.send(result.map(Json::into_inner).map_err(|e| e.message().to_owned()));
        }
    }
}

/// The handler's result for a finished run; how it ended is reported to
/// the object of run `reported` (when the program has approvals).
fn finished_run(
    ctx: &Context<'_>,
    engine: &Engine,
    finished: Result<
        Result<crate::runtime::RunOutput, crate::runtime::RunError>,
        tokio::task::JoinError,
    >,
    reported: Option<&String>,
) -> HandlerResult<Json<Value>> {
    match finished {
        Ok(Ok(output)) => {
            if let Some(run) = reported {
                runs::note(ctx, run, &runs::Note::Done(Value::Object(output.outputs.clone())));
            }
            Ok(Json(Value::Object(output.outputs)))
        }
        Ok(Err(error)) => {
            let (status, body) = run_error(engine.program(), &error);
            if let Some(run) = reported {
                let failed =
                    runs::Note::Failed { http_status: status.as_u16(), error: body.clone() };
                runs::note(ctx, run, &failed);
            }
            Err(TerminalError::new_with_code(status.as_u16(), body.to_string()).into())
        }
        // Retried: a panic is not the inputs' fault.
        Err(join) => Err(HandlerError::from(format!("the run stopped abnormally: {join}"))),
    }
}

/// Does the effect `body` (a [`Step`]): the `step` handler.
async fn step(
    ctx: &Context<'_>,
    engine: &Arc<Engine>,
    body: &[u8],
) -> HandlerResult<Json<Outcome>> {
    let step = serde_json::from_slice(body)
        .map_err(|e| TerminalError::new(format!("the `{STEP}` handler takes a step: {e}")))?;
    Ok(Json(run_step(ctx, engine, step).await?))
}

/// Does `step` as one `ctx.run` of `ctx` named by its key: its result from
/// the journal, or from the engine's work, journaled.
async fn run_step(
    ctx: &Context<'_>,
    engine: &Arc<Engine>,
    Step { name, retries, work }: Step,
) -> Result<Outcome, TerminalError> {
    let policy = RunRetryPolicy::new()
        .initial_delay(Duration::from_millis(100))
        .exponentiation_factor(2.0)
        .max_delay(Duration::from_secs(10))
        .max_attempts(retries.saturating_add(1));
    let engine = Arc::clone(engine);
    let result = ctx
        .run(move || async move {
            // A failure here is transient: Restate tries again (within the policy).
            engine.perform(&work).await.map(Json).map_err(HandlerError::from)
        })
        .name(name)
        .retry_policy(policy)
        .await?;
    Ok(result.into_inner())
}

/// The body of an `approval` call: the run and the call that waits.
#[derive(serde::Deserialize)]
struct Asked {
    run: String,
    call: PendingCall,
}

/// Waits for the decision on the call `body` (an [`Asked`]): the
/// `approval` handler.
async fn approval(ctx: &Context<'_>, body: &[u8]) -> HandlerResult<Json<Outcome>> {
    let Asked { run, call } = serde_json::from_slice(body)
        .map_err(|e| TerminalError::new(format!("the `{APPROVAL}` handler takes a call: {e}")))?;
    Ok(Json(decision(ctx, &run, call).await?))
}

/// The decision on `call` of run `run`: an awakeable of `ctx`, reported
/// with the call to the run's object, awaited (the invocation suspends
/// until it is resolved). `{"approve": true|false, "note": ..}`; an
/// awakeable rejected through Restate's own API is a denial.
async fn decision(
    ctx: &Context<'_>,
    run: &str,
    call: PendingCall,
) -> Result<Outcome, TerminalError> {
    let (awakeable, decided) = ctx.awakeable::<Json<Value>>();
    runs::note(ctx, run, &runs::Note::Waiting(runs::Waiting { call, awakeable }));
    Ok(Outcome::Value(match decided.await {
        Ok(decision) => decision.into_inner(),
        Err(rejected) => json!({"approve": false, "note": rejected.message()}),
    }))
}

/// What the run asks its handler for.
enum Ask {
    /// One effect.
    Step(Step),
    /// The decision on a call that needs approval.
    Approval(PendingCall),
}

impl Ask {
    /// What orders the asks of one round: a step's name, the call's node
    /// and ID.
    fn name(&self) -> String {
        match self {
            Ask::Step(step) => step.name.clone(),
            Ask::Approval(call) => format!("{} approval:{}", call.node, call.call),
        }
    }
}

/// An ask of the engine, and where its result goes.
struct StepRequest {
    ask: Ask,
    answer: oneshot::Sender<Result<Outcome, String>>,
}

/// The engine's side of the steps: hands each to the handler.
struct Bridge {
    steps: mpsc::UnboundedSender<StepRequest>,
    /// The run's ID: its invocation's.
    run: String,
}

impl Bridge {
    async fn ask(&self, ask: Ask) -> Result<Outcome, String> {
        let (answer, result) = oneshot::channel();
        self.steps.send(StepRequest { ask, answer }).map_err(|_| ENDED.to_owned())?;
        result.await.unwrap_or_else(|_| Err(ENDED.to_owned()))
    }
}

impl Journal for Bridge {
    fn step(&self, step: Step) -> BoxFuture<'_, Result<Outcome, String>> {
        Box::pin(self.ask(Ask::Step(step)))
    }

    fn approval(&self, call: PendingCall) -> BoxFuture<'_, Result<Verdict, String>> {
        Box::pin(async move {
            let decided = match self.ask(Ask::Approval(call)).await? {
                Outcome::Value(decided) => decided,
                Outcome::Failed(failure) => return Err(failure.to_string()),
            };
            Ok(match decided["approve"] {
                Value::Bool(true) => Verdict::Approved,
                _ => Verdict::Denied(
                    decided["note"].as_str().unwrap_or("denied through Restate").to_owned(),
                ),
            })
        })
    }

    fn salt(&self) -> &str {
        &self.run
    }
}
