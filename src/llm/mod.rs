//! Agents: LLM providers, the automatic tool-use loop, retries and
//! fallbacks.
//!
//! Input: a checked [`Program`], an agent id and its (checked, defaulted)
//! inputs. Output: the final text of the agent's conversation, or an
//! [`LlmError`]. One [`Llm`] is shared by every agent node of a run: it
//! holds the environment captured once, the connection pool, the backoff
//! settings and the limiters of `provider` declarations (its clones share
//! them, so all agents of a process do). Record, replay, journals and the cache are effect
//! stores (see [`crate::effects`]) reached through the [`Scope`] of each
//! call. Nothing here blocks a thread: all waiting is async (tokio), so
//! many agents wait concurrently.
//!
//! | file | concept |
//! | --- | --- |
//! | `message.rs` | provider-agnostic conversation, request and reply |
//! | `client.rs` | the [`ModelClient`] trait |
//! | `providers.rs` | the provider table: one [`ProviderSpec`] row per kind |
//! | `anthropic.rs` `openai.rs` `ollama.rs` `gemini.rs` | wire formats (pure) |
//! | `wire.rs` | request, reply and error body through the table |
//! | `http.rs` | the reqwest client: timeouts, retries; each attempt an effect |
//! | `retry.rs` | what is retried and how long to wait |
//! | `limits.rs` | `rate_limit` and `token_limit`: one limiter per provider declaration |
//! | `script.rs` | scripted replies from a JSON file |
//! | `settings.rs` | environment, `provider` declarations, fallback chains |
//! | `agent_loop.rs` | the tool-use loop |
//! | `structured.rs` | `result T`: the schema asked for, reading and validating the answer |
//!
//! API keys are read only from the environment, held in a `Secret` whose
//! `Debug` hides them, sent only as headers and never recorded, traced or
//! put in an error.

mod agent_loop;
pub mod anthropic;
mod body;
mod client;
mod error;
pub mod gemini;
mod http;
mod limits;
mod message;
pub mod ollama;
pub mod openai;
pub mod providers;
mod retry;
mod script;
mod semconv;
mod settings;
mod structured;
pub mod wire;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value, json};

pub use body::RequestBody;
pub use client::{BoxFuture, CallContext, ModelClient};
pub use error::LlmError;
pub use message::{
    Content, Echo, Media, Message, ModelReply, ModelRequest, Server, StopReason, ToolCall,
    ToolResult, Usage, content_key, text_of,
};
pub use providers::{Auth, KeyVar, PROVIDERS, ProviderSpec};
pub use retry::{Backoff, parse_retry_after, retryable_status};
pub use settings::{DEFAULT_RETRIES, DEFAULT_TIMEOUT};
pub use structured::ResultSchema;

use crate::effects::{CachePolicy, Effect, EffectError, EffectKind, Outcome, Scope};
use crate::ir::{AgentId, Program};
use crate::tools::Toolbox;
use crate::trace::Trace;
use crate::value::{Fields, Val};
use agent_loop::Run;
use http::{HttpModel, Shared};
use limits::Limiters;
use script::ScriptModel;
use settings::{Env, Link};

/// The agent runner shared by every agent node of a run (cheap to clone).
#[derive(Clone)]
pub struct Llm {
    env: Arc<Env>,
    shared: Shared,
    /// The limiters of `provider` declarations, shared by every clone.
    limiters: Arc<Limiters>,
}

impl fmt::Debug for Llm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Llm")
            .field("env", &*self.env)
            .field("backoff", &self.shared.backoff)
            .finish_non_exhaustive()
    }
}

/// One agent call as [`Llm::run_agent`] was asked it.
#[derive(Clone, Copy)]
struct Asked<'a> {
    program: &'a Program,
    agent: AgentId,
    inputs: &'a Fields,
    toolbox: &'a Toolbox,
    trace: &'a Trace,
    scope: &'a Scope,
}

impl Llm {
    /// Captures the process environment once.
    #[must_use]
    pub fn from_env() -> Self {
        Self::with_env(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        )
    }

    /// Uses `vars` as the environment.
    #[must_use]
    pub fn with_env(vars: BTreeMap<String, String>) -> Self {
        Self {
            env: Arc::new(Env::new(vars)),
            shared: Shared {
                http: Arc::default(),
                backoff: Backoff::default(),
                max_bytes: crate::tools::DEFAULT_MAX_BYTES,
            },
            limiters: Arc::default(),
        }
    }

    /// Sets the retry backoff (tests and benches use tiny values).
    #[must_use]
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.shared.backoff = backoff;
        self
    }

    /// Limits a provider's reply body to `bytes` (default
    /// [`DEFAULT_MAX_BYTES`](crate::tools::DEFAULT_MAX_BYTES)); a larger reply
    /// is a malformed one.
    #[must_use]
    pub fn with_max_bytes(mut self, bytes: usize) -> Self {
        self.shared.max_bytes = bytes;
        self
    }

    /// Runs `agent` on `inputs` and returns its answer: the final text, or the
    /// structured value of its `result` type. Every model request and tool
    /// call goes through `scope`, whose node path names them in traces
    /// (`{path} > model`, `{path} > tool NAME`).
    ///
    /// # Errors
    /// See [`LlmError`]: configuration (before anything is sent), provider
    /// failures after retries and fallbacks, tool loops, capability
    /// violations, truncated replies, replay mismatches.
    pub async fn run_agent(
        &self,
        program: &Program,
        agent: AgentId,
        inputs: &Map<String, Value>,
        toolbox: &Toolbox,
        trace: &Trace,
        scope: &Scope,
    ) -> Result<Value, LlmError> {
        let inputs: Fields = inputs.iter().map(|(k, v)| (k.clone(), Val::from(v))).collect();
        self.run_agent_on(program, agent, &inputs, toolbox, trace, scope).await
    }

    /// [`Llm::run_agent`] on runtime values, as an agent node calls it: the
    /// inputs' strings (a document's base64) are shared with the run's
    /// values all the way to the prompt's content blocks, never copied.
    ///
    /// # Errors
    /// See [`Llm::run_agent`].
    pub(crate) async fn run_agent_on(
        &self,
        program: &Program,
        agent: AgentId,
        inputs: &Fields,
        toolbox: &Toolbox,
        trace: &Trace,
        scope: &Scope,
    ) -> Result<Value, LlmError> {
        let asked = Asked { program, agent, inputs, toolbox, trace, scope };
        if scope.effects().answers_agents() {
            return self.run_mocked(asked).await;
        }
        self.run_unmocked(asked).await
    }

    /// [`Llm::run_agent`] where a store may answer the whole call (a test's
    /// `mock Agent`), looked up by the agent's inputs before any model is
    /// asked; an answer is checked as a model's is.
    async fn run_mocked(&self, asked: Asked<'_>) -> Result<Value, LlmError> {
        let Asked { program, agent, inputs, scope, .. } = asked;
        let declared = &program[agent];
        let request = Value::Object(inputs.iter().map(|(k, v)| (k.clone(), v.to_json())).collect());
        let key = scope.next_key();
        let effect = Effect {
            key: &key,
            kind: EffectKind::Agent,
            name: &declared.name,
            route: "",
            request: &request,
            definition: None,
            cache: None,
            work: None,
            media: &[],
        };
        let live = async {
            let answer = self.run_unmocked(asked).await?;
            Ok(Outcome::Value(answer))
        };
        match scope.perform(&effect, &crate::telemetry::Span::none(), live).await {
            Ok(Outcome::Value(answer)) => admitted(declared, answer),
            Ok(Outcome::Failed(failure)) => Err(LlmError::from_stored(failure)),
            Err(error) => Err(error.into_node_error(1)),
        }
    }

    /// [`Llm::run_agent`] without a store's whole answer (but through the
    /// result cache when the agent declares `cache`).
    async fn run_unmocked(&self, asked: Asked<'_>) -> Result<Value, LlmError> {
        let Asked { program, agent, inputs, toolbox, trace, scope } = asked;
        let id = agent;
        let agent = &program[agent];
        let (system, prompt) = agent_loop::prompts(agent, inputs)?;
        let keys_required = !scope.effects().offline();
        let mut chain: Vec<(Box<dyn ModelClient>, String)> = Vec::new();
        let links = settings::chain(&self.env, &self.limiters, program, agent, keys_required)?;
        for (i, link) in links.into_iter().enumerate() {
            chain.push(match link {
                Link::Http(endpoint, model) => (Box::new(self.http_model(id, i, endpoint)), model),
                Link::Script(file, model) => (Box::new(ScriptModel::load(file).await?), model),
            });
        }
        let Some(ttl) = agent.cache else {
            let cx = CallContext { agent: &agent.name, path: scope.path(), trace, scope };
            return Run { program, agent, toolbox, cx, chain }.run(system, prompt).await;
        };
        // What shapes the answer beyond the declaration: the chain, the
        // rendered prompts (so the inputs) and the tools' schemas.
        let links: Vec<Value> =
            chain.iter().map(|(client, model)| json!([client.provider(), model])).collect();
        let tools: Vec<Value> = agent
            .tools
            .iter()
            .map(|&id| {
                let tool = &program[id];
                json!([tool.tool_name, tool.description, crate::tools::parameters_schema(tool)])
            })
            .collect();
        let request = json!({
            "chain": links,
            "system": system,
            "prompt": content_key(&prompt),
            "tools": tools,
        });
        let key = scope.next_key();
        let definition = crate::effects::definition::agent(program, id, toolbox);
        let effect = Effect {
            key: &key,
            kind: EffectKind::Agent,
            name: &agent.name,
            route: "",
            request: &request,
            definition: Some(&definition),
            cache: Some(CachePolicy { ttl }),
            work: None,
            media: &[],
        };
        let cx = CallContext { agent: &agent.name, path: scope.path(), trace, scope };
        let live = async {
            let answer = Run { program, agent, toolbox, cx, chain }.run(system, prompt).await?;
            Ok(Outcome::Value(answer))
        };
        let span = scope.span().child(
            opentelemetry::trace::SpanKind::Internal,
            || format!("invoke_agent {}", agent.name),
            || {
                vec![
                    opentelemetry::KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                    opentelemetry::KeyValue::new("gen_ai.agent.name", agent.name.clone()),
                ]
            },
        );
        let result: Result<_, EffectError<LlmError>> = scope.perform(&effect, &span, live).await;
        let failure = match &result {
            Err(EffectError::Live(error)) => Some(error.code().as_str()),
            _ => None,
        };
        span.end(failure);
        match result {
            // A stored answer gets the check a live one got in the loop.
            Ok(Outcome::Value(answer)) => admitted(agent, answer),
            Ok(Outcome::Failed(other)) => Err(LlmError::Store {
                message: format!("the cache holds no answer of agent `{}`: {other}", agent.name),
            }),
            Err(error) => Err(error.into_node_error(1)),
        }
    }

    /// Does one model exchange of a durable journal's step
    /// ([`crate::effects::Work::Model`]):
    /// link `link` of `agent`'s chain, resolved from this worker's
    /// environment (its keys), sends `body` to `url` once.
    ///
    /// # Errors
    /// No such agent or link, a missing key, or the attempt's failure.
    pub(crate) async fn perform(
        &self,
        program: &Program,
        agent: AgentId,
        link: usize,
        url: &str,
        body: &Value,
    ) -> Result<Outcome, String> {
        let declared = program.agents.get(agent.index()).ok_or_else(|| {
            format!(
                "no agent with id {} in this program: the workers serve different programs",
                agent.index()
            )
        })?;
        let links = settings::chain(&self.env, &self.limiters, program, declared, true)
            .map_err(|e| e.to_string())?;
        match links.into_iter().nth(link) {
            Some(Link::Http(endpoint, _)) => {
                self.http_model(agent, link, endpoint).perform(body, url).await
            }
            _ => Err(format!(
                "agent `{}` has no HTTP provider number {link}: the workers serve different programs",
                declared.name
            )),
        }
    }

    /// The client of `agent`'s link number `link`.
    fn http_model(&self, agent: AgentId, link: usize, endpoint: settings::Endpoint) -> HttpModel {
        let origin = (
            u32::try_from(agent.index()).unwrap_or(u32::MAX),
            u32::try_from(link).unwrap_or(u32::MAX),
        );
        HttpModel { endpoint, shared: self.shared.clone(), origin, url: OnceLock::new() }
    }

    /// The retry wait settings in use.
    #[must_use]
    pub fn backoff(&self) -> Backoff {
        self.shared.backoff
    }
}

/// `answer`, a stored or mocked answer of `agent`, checked against its
/// `result` type as a live answer is in the loop.
fn admitted(agent: &crate::ir::Agent, mut answer: Value) -> Result<Value, LlmError> {
    let Some(ty) = &agent.result else { return Ok(answer) };
    match ty.admit(&mut answer, "result") {
        Ok(()) => Ok(answer),
        Err(problems) => Err(LlmError::BadAnswer {
            agent: agent.name.clone(),
            ty: structured::Structured::new(ty).schema.name,
            attempts: 1,
            problems,
            excerpt: structured::excerpt(&answer.to_string()),
        }),
    }
}
