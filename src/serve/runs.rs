//! Served runs that wait for approvals: each run of a program with a tool
//! that `requires_approval` is journaled (`.ignite/runs/RUN_ID.jsonl`, as
//! `ignite run --journal` does); a run that pauses is answered `202` with
//! its run ID and waiting calls, `GET /runs/ID` shows where it stands, and
//! `POST /runs/ID/approvals/CALL` records a decision in its journal. Once
//! no call waits, the run resumes by itself from its journal (finished
//! effects are not done again) and `GET /runs/ID` gives its outcome.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::effects::{Decision, Recording, RunHeader};
use crate::failure::PendingCall;
use crate::ir::ContractId;
use crate::runtime::{Engine, RunError};

/// Where a served run stands.
#[derive(Debug, Clone)]
enum State {
    /// It runs (first, or resumed).
    Running,
    /// It paused: these calls wait for a decision.
    Waiting(Vec<PendingCall>),
    /// It ended with these outputs.
    Done(Map<String, Value>),
    /// It failed: the error as `serve` renders it, with its status.
    Failed(StatusCode, Value),
}

/// The journaled runs of a server, by run ID.
#[derive(Debug)]
pub(super) struct Runs {
    dir: PathBuf,
    states: Mutex<HashMap<String, (ContractId, State)>>,
}

/// A run to resume: the engine through its journal, its contract, its inputs.
pub(super) type Resume = (Engine, ContractId, Map<String, Value>);

/// Why a decision was not taken: a status and the error's code and message.
pub(super) type Refusal = (StatusCode, &'static str, String);

impl Runs {
    /// The runs journaled in `dir`.
    pub(super) fn new(dir: PathBuf) -> Self {
        Self { dir, states: Mutex::new(HashMap::new()) }
    }

    fn set(&self, id: &str, contract: ContractId, state: State) {
        let mut states = crate::sync::lock(&self.states);
        states.insert(id.to_owned(), (contract, state));
    }

    fn get(&self, id: &str) -> Option<(ContractId, State)> {
        let states = crate::sync::lock(&self.states);
        states.get(id).cloned()
    }

    /// A new journal for a run of `contract` (named `name`) on `inputs`,
    /// and the engine whose effects go through it; the run ID.
    ///
    /// # Errors
    /// The journal cannot be created.
    pub(super) fn start(
        &self,
        engine: &Engine,
        contract: ContractId,
        name: &str,
        inputs: &Map<String, Value>,
    ) -> Result<(Engine, String), String> {
        let header =
            RunHeader { program: None, contract: Some(name.to_owned()), inputs: inputs.clone() };
        let (journal, id) = Recording::journal(&self.dir, header)?;
        self.set(&id, contract, State::Running);
        Ok((through(engine, journal), id))
    }

    /// Notes how run `id` ended: waiting, done or failed.
    pub(super) fn ended(
        &self,
        id: &str,
        contract: ContractId,
        result: &Result<Map<String, Value>, RunError>,
        failed: impl FnOnce(&RunError) -> (StatusCode, Value),
    ) {
        let state = match result {
            Ok(outputs) => State::Done(outputs.clone()),
            Err(RunError::Paused { calls }) => State::Waiting(calls.clone()),
            Err(error) => {
                let (status, body) = failed(error);
                State::Failed(status, body)
            }
        };
        self.set(id, contract, state);
    }

    /// `GET /runs/ID`: its state, or `None` when the server has no such run.
    pub(super) fn show(&self, id: &str) -> Option<Value> {
        let (_, state) = self.get(id)?;
        Some(match state {
            State::Running => json!({"run": id, "status": "running"}),
            State::Waiting(calls) => waiting(id, &calls),
            State::Done(outputs) => json!({"run": id, "status": "done", "outputs": outputs}),
            State::Failed(status, body) => {
                json!({"run": id, "status": "failed", "http_status": status.as_u16(), "error": body["error"]})
            }
        })
    }

    /// `POST /runs/ID/approvals/CALL`: records the decision; when no call
    /// waits any more, the engine to resume the run with (through its
    /// journal), its contract and inputs.
    ///
    /// # Errors
    /// No such run, or the call is not waiting (unknown, decided).
    pub(super) fn decide(
        &self,
        engine: &Engine,
        id: &str,
        call: &str,
        decision: &Decision,
    ) -> Result<Option<Resume>, Refusal> {
        let Some((contract, State::Waiting(_))) = self.get(id) else {
            let message = match self.get(id) {
                None => format!("this server has no run `{id}`"),
                Some(_) => format!("run `{id}` waits for no decision"),
            };
            let status =
                if self.get(id).is_none() { StatusCode::NOT_FOUND } else { StatusCode::CONFLICT };
            return Err((status, crate::diagnostic::Code::ServeApproval.as_str(), message));
        };
        let refused = |message: String| {
            (StatusCode::CONFLICT, crate::diagnostic::Code::ServeApproval.as_str(), message)
        };
        Recording::decide(&self.dir, id, &[call.to_owned()], decision).map_err(refused)?;
        let left = Recording::waiting(&self.dir, id).map_err(refused)?;
        if !left.is_empty() {
            self.set(id, contract, State::Waiting(left));
            return Ok(None);
        }
        let journal = Recording::resume(&self.dir, id).map_err(refused)?;
        let inputs = journal.header().inputs.clone();
        self.set(id, contract, State::Running);
        Ok(Some((through(engine, journal), contract, inputs)))
    }
}

/// The JSON Schema of a run's state (`GET /runs/ID`, a `202`).
pub(super) fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "run": {"type": "string"},
            "status": {"enum": ["running", "waiting", "done", "failed"]},
            "code": {"const": "ignite::run::awaiting_approval"},
            "pending": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "call": {"type": "string"},
                    "tool": {"type": "string"},
                    "node": {"type": "string"},
                    "args": {"type": "object"},
                    "interrupted": {"type": "boolean"},
                },
                "required": ["call", "tool", "node", "args"],
            }},
            "outputs": {"type": "object"},
            "error": {"type": "object"},
        },
        "required": ["run", "status"],
    })
}

/// The paths of runs and their approvals, with `errors` (the error
/// responses of a decision).
pub(super) fn document(paths: &mut Map<String, Value>, errors: &Map<String, Value>) {
    let run = json!({"$ref": "#/components/schemas/Run"});
    let id = json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}});
    let call =
        json!({"name": "call", "in": "path", "required": true, "schema": {"type": "string"}});
    paths.insert(
        "/runs/{id}".into(),
        json!({"get": {
            "operationId": "get_run",
            "summary": "Where a journaled run stands: running, waiting (with its calls), done or failed",
            "parameters": [id],
            "responses": {
                "200": {"description": "The run", "content": {"application/json": {"schema": run}}},
                "404": errors["404"],
            },
        }}),
    );
    let mut responses = errors.clone();
    responses.insert(
        "202".into(),
        json!({"description": "Recorded; the run resumes by itself once no call waits",
               "content": {"application/json": {"schema": run}}}),
    );
    paths.insert(
        "/runs/{id}/approvals/{call}".into(),
        json!({"post": {
            "operationId": "decide_call",
            "summary": "Approve or deny a call the run waits for",
            "parameters": [id, call],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "object",
                "properties": {"approve": {"type": "boolean"}, "note": {"type": "string"}},
                "required": ["approve"],
            }}}},
            "responses": responses,
        }}),
    );
}

/// The body of a paused run: `202` with the run ID and the waiting calls.
pub(crate) fn waiting(id: &str, calls: &[PendingCall]) -> Value {
    let code = crate::diagnostic::Code::RunAwaitingApproval.as_str();
    json!({"run": id, "status": "waiting", "code": code, "pending": calls})
}

/// `engine` with its effects going through `journal`, which decides
/// approvals too.
fn through(engine: &Engine, journal: Recording) -> Engine {
    let journal = Arc::new(journal);
    let effects = engine.effects().clone().with(Arc::clone(&journal) as _).with_approver(journal);
    engine.sibling(effects)
}
