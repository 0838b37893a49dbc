//! Contracts as Restate services: the worker behind `ignite serve --restate`
//! (cargo feature `restate`).
//!
//! Input: an [`Engine`]. Output: a Restate deployment (the SDK's HTTP/2
//! endpoint) with one service per top-level contract, named after it, whose
//! one handler `run` takes the inputs JSON and answers the outputs JSON.
//!
//! Each invocation runs the contract through [`Engine::run`] with a
//! [`Journal`] in its effects: every tool call and model exchange becomes
//! one `ctx.run` step named by its effect key (`Contract > node#seq
//! tool:name`). The engine runs on a blocking thread and sends its steps
//! over a channel to the handler, which owns the Restate context and runs
//! them one at a time:
//!
//! | the journal | the step |
//! | --- | --- |
//! | holds the step's result (a replay on this or another worker) | answered from it, the work is not done |
//! | does not | the engine does the work; the result is journaled, then answered |
//!
//! The Rust SDK requires every `ctx.run` to be awaited before the next
//! context call, in an order that is the same on every replay (concurrent
//! steps are not supported by restate-sdk 0.13). Runs therefore go with
//! `--jobs 1`: one tool or agent node waits at a time and an agent's tool
//! calls of one turn run one after the other, so the order of the steps
//! depends only on the inputs and the steps' results. Pure nodes still run
//! as soon as they are ready.
//!
//! A tool's `retries N` become the step's retry policy (N more attempts,
//! 100 ms doubling up to 10 s, then a terminal failure); a model request's
//! transport failure is a failed step and ignite's provider retries make
//! further steps. Run errors become terminal errors whose code is the HTTP
//! status of `ignite serve` and whose message is the same JSON error body.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use restate_sdk::context::{Context, ContextSideEffects as _, RunFuture as _, RunRetryPolicy};
use restate_sdk::endpoint::{ContextInternal, Endpoint};
use restate_sdk::errors::{HandlerError, HandlerResult, TerminalError};
use restate_sdk::serde::Json;
use restate_sdk::service::macro_support::{ServiceBoxFuture, service_definition};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::effects::{Effects, Journal, Outcome, Step};
use crate::ir::ContractId;
use crate::runtime::{Engine, InputsFrom, RunOptions};
use crate::serve::{input_schema, output_schema, parse_inputs, run_error};

/// The one handler of every contract's service.
pub const HANDLER: &str = "run";

/// Why a step has no result when the invocation ends under it.
const ENDED: &str = "the Restate invocation ended during the step";

/// The Restate endpoint serving every top-level contract of `engine`.
///
/// # Errors
/// A contract's name is not a valid Restate service name.
pub fn endpoint(engine: &Arc<Engine>) -> Result<Endpoint, String> {
    let mut builder = Endpoint::builder();
    for contract in engine.roots() {
        let program = engine.program();
        let name = program[contract].name.clone();
        let discovery = serde_json::from_value(json!({
            "name": name,
            "ty": "SERVICE",
            "documentation": format!("ignite contract `{name}`: inputs JSON to outputs JSON"),
            "handlers": [{
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
            }],
        }))
        .map_err(|e| format!("contract `{name}` cannot be a Restate service: {e}"))?;
        let service = ContractService { engine: Arc::clone(engine), contract };
        builder = builder.bind(service_definition(service, discovery));
    }
    Ok(builder.build())
}

/// Serves `endpoint` on `listener` (HTTP/2, as Restate speaks to
/// deployments) until `stop` resolves.
pub async fn serve(
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
}

impl restate_sdk::service::Service for ContractService {
    type Future = ServiceBoxFuture;

    fn handle(&self, ctx: ContextInternal) -> Self::Future {
        let (engine, contract) = (Arc::clone(&self.engine), self.contract);
        Box::pin(async move {
            if ctx.handler_name() != HANDLER {
                return Err(restate_sdk::endpoint::Error::unknown_handler(
                    ctx.service_name(),
                    ctx.handler_name(),
                ));
            }
            let (body, metadata) = ctx.input::<Vec<u8>>().await;
            let result = invoke(&Context::from((&ctx, metadata)), &engine, contract, &body).await;
            ctx.handle_handler_result(result);
            ctx.end();
            Ok(())
        })
    }
}

/// Runs `contract` on the inputs `body`, its effects as steps of `ctx`.
async fn invoke(
    ctx: &Context<'_>,
    engine: &Arc<Engine>,
    contract: ContractId,
    body: &[u8],
) -> HandlerResult<Json<Value>> {
    let inputs = parse_inputs(body).map_err(|message| {
        let body = json!({"error": {"code": "ignite::serve::bad_body", "message": message}});
        TerminalError::new_with_code(400, body.to_string())
    })?;
    let (steps, mut requests) = mpsc::unbounded_channel();
    let run_engine = engine.sibling(Effects::live().with_journal(Arc::new(Bridge { steps })));
    let options =
        RunOptions { jobs: Some(1), inputs_from: InputsFrom::Body, ..RunOptions::default() };
    let mut run = tokio::task::spawn_blocking(move || run_engine.run(contract, &inputs, &options));
    loop {
        tokio::select! {
            finished = &mut run => {
                return match finished {
                    Ok(Ok(output)) => Ok(Json(Value::Object(output.outputs))),
                    Ok(Err(error)) => {
                        let (status, body) = run_error(engine.program(), &error);
                        Err(TerminalError::new_with_code(status.as_u16(), body.to_string()).into())
                    }
                    // Retried: a panic is not the inputs' fault.
                    Err(join) => Err(HandlerError::from(format!("the run stopped abnormally: {join}"))),
                };
            }
            Some(request) = requests.recv() => request.run(ctx).await,
        }
    }
}

/// A step the engine asks the handler to run.
struct StepRequest {
    step: Step,
    /// Sent when the work must be done: where its result goes.
    go: oneshot::Sender<oneshot::Sender<Result<Outcome, String>>>,
    /// The step's result, journaled.
    done: oneshot::Sender<Result<Outcome, String>>,
}

impl StepRequest {
    /// Runs the step as `ctx.run`: the journal's result, or the engine's work.
    async fn run(self, ctx: &Context<'_>) {
        let Self { step, go, done } = self;
        let policy = RunRetryPolicy::new()
            .initial_delay(Duration::from_millis(100))
            .exponentiation_factor(2.0)
            .max_delay(Duration::from_secs(10))
            .max_attempts(step.retries.saturating_add(1));
        let result = ctx
            .run(move || async move {
                let (answer, result) = oneshot::channel();
                go.send(answer).map_err(|_| HandlerError::from(ENDED.to_owned()))?;
                match result.await {
                    Ok(Ok(outcome)) => Ok(Json(outcome)),
                    // A transient failure: Restate tries again (within the policy).
                    Ok(Err(failure)) => Err(HandlerError::from(failure)),
                    Err(_) => Err(HandlerError::from(ENDED.to_owned())),
                }
            })
            .name(step.name)
            .retry_policy(policy)
            .await;
        let _ = done.send(result.map(Json::into_inner).map_err(|e| e.message().to_owned()));
    }
}

/// The engine's side of the steps: hands each to the handler and does the
/// work when asked.
struct Bridge {
    steps: mpsc::UnboundedSender<StepRequest>,
}

impl Journal for Bridge {
    fn step<'a>(
        &'a self,
        step: Step,
        work: BoxFuture<'a, Result<Outcome, String>>,
    ) -> BoxFuture<'a, Result<Outcome, String>> {
        Box::pin(async move {
            let (go, asked) = oneshot::channel();
            let (done, result) = oneshot::channel();
            self.steps.send(StepRequest { step, go, done }).map_err(|_| ENDED.to_owned())?;
            // Not asked (the sender is dropped): the journal had the result.
            if let Ok(answer) = asked.await {
                let _ = answer.send(work.await);
            }
            result.await.unwrap_or_else(|_| Err(ENDED.to_owned()))
        })
    }
}
