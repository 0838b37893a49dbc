//! The effects seam: every tool call and model exchange of a run passes
//! through [`Scope::perform`], which asks the run's stores for a result
//! before doing the work and hands them the result after it is done.
//!
//! Input: an [`Effect`] (what is about to happen, with a stable
//! [`EffectKey`]) and the live work as a future. Output: the effect's
//! [`Outcome`], from a store or from the live work.
//!
//! | store | looks up | records |
//! | --- | --- | --- |
//! | none (live) | nothing | nothing |
//! | [`Recording`] for `--record FILE` | nothing | tool calls, model exchanges |
//! | [`Recording`] for `--replay FILE` | tool calls, model exchanges; a miss refuses | nothing |
//! | [`Recording`] for `--journal` / `--resume ID` | the successful entries of the journal with the same definition | tool calls, model exchanges |
//! | [`Cache`] | tools and agents declared `cache` | their successes |
//! //!
//! Stores are asked in order; the first hit wins and the work is not done.
//! A store that refuses (a replay that has no such call) fails the effect.
//! After live work every store records the outcome. A test runner's mocks
//! are further [`EffectStore`]s, not new code paths.
//!
//! A call of a tool that `requires_approval` passes the run's
//! [`Approver`] first ([`approval`]), inside the live work: a call a store
//! already holds the outcome of (a journal's finished call) is not asked
//! again; stores that stand in for the tools (a test's mocks,
//! [`EffectStore::stands_in`]) answer only decided calls. Under a durable
//! [`Journal`] the decision is the journal's durable promise
//! ([`Journal::approval`]), awaited before the call's step is asked for.
//!
//! A call of a pure `returns` tool is a computation, not an effect: it
//! skips the stores and the journal (nothing records or answers it) unless
//! the tool is declared `cache` or a store answers such calls (a test's
//! mocks, [`EffectStore::answers_pure`]).
//!
//! One boundary: a value a store answered gets the check a live one gets
//! ([`crate::ir::Type::admit`] against the declared `result`), so a stored
//! value that does not fit fails exactly as the live one would; an
//! effect's [`Effect::definition`] (a digest of what defines it, see
//! `definition.rs`) is part of its cache key and journal entry, so an
//! edited tool or agent is not answered from them.
//!
//! A durable [`Journal`] (Restate, for `ignite serve --restate`) replaces
//! all of that: each tool call and model exchange becomes one journaled
//! step named by its key ([`EffectKey`]'s display), whose live work is
//! described as data ([`Work`]) so that any worker serving the same
//! program can do it ([`crate::runtime::Engine::perform`], the same code
//! the live work of a run calls). A step the journal already holds is not
//! run again; a transient failure (a connection error, a tool failure its
//! `retries` allow again) is retried by the journal, a bounded number of
//! times. Whole-agent effects (the cache's) are not steps: their model
//! exchanges and tool calls are. The run's [`Activity`] tells the journal
//! when every task waits on its steps, so that it can start the steps
//! asked for in an order that does not depend on timing.
//!
//! Keys: an effect is named by its node path (`Root.child > node`), the
//! item index of a `for` (none today) and its sequence number among the
//! effects of that node (an agent's model attempts and tool calls count up
//! in the order the loop starts them). The same program on the same
//! inputs gives every effect the same key.

mod activity;
pub mod approval;
mod blobs;
mod cache;
mod decisions;
pub(crate) mod definition;
mod lines;
mod recording;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use opentelemetry::KeyValue;
use opentelemetry::trace::SpanKind;

use crate::diagnostic::Code;
use crate::failure::NodeError;
use crate::telemetry::{self, Span};
use crate::trace::Trace;

pub use activity::Activity;
pub(crate) use activity::track;
pub use approval::{Approver, Verdict};
pub(crate) use blobs::summarize as summarize_media;
pub use blobs::{Attachment, mark_of, media_mark};
pub use cache::{Cache, CacheStats};
pub use decisions::Decision;
pub use recording::{JOURNAL_DIR, ProgramMark, Recording, RunHeader};

/// The stable name of one effect of a run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EffectKey {
    /// The node path: `Root.child > node`.
    pub node: String,
    /// The item index inside a `for`, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<u32>,
    /// The effect's number among its node's effects, from 0.
    pub seq: u32,
}

/// `Root.child > node[item]#seq`: a journal step's name.
impl std::fmt::Display for EffectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.node)?;
        if let Some(item) = self.item {
            write!(f, "[{item}]")?;
        }
        write!(f, "#{}", self.seq)
    }
}

/// What kind of work an effect is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EffectKind {
    /// One call of a tool (a tool node, or a tool call of an agent).
    Tool,
    /// One request to a model provider (one attempt).
    Model,
    /// One whole agent run (only the cache stores these).
    Agent,
}

/// One effect about to happen.
#[derive(Debug, Clone, Copy)]
pub struct Effect<'a> {
    /// Its stable name.
    pub key: &'a EffectKey,
    /// What it is.
    pub kind: EffectKind,
    /// The tool's name, the provider's label or the agent's name.
    pub name: &'a str,
    /// A model request's URL; empty otherwise.
    pub route: &'a str,
    /// Everything that shapes the result: a tool's arguments, a model
    /// request's body (its large media as marks, see `media`), an agent's
    /// prompts and settings.
    pub request: &'a Value,
    /// What defines the effect beyond its request, as a digest (see
    /// `definition.rs`): part of its cache key and of its journal entry,
    /// so an edited tool or agent is not answered from them. `None` for a
    /// model request (its body is its definition), and when no store is
    /// asked.
    pub definition: Option<&'a str>,
    /// How the result may be cached: `None` unless the declaration says `cache`.
    pub cache: Option<CachePolicy>,
    /// The live work as data, for a durable journal's step; `None` when
    /// there is no journal (and for whole agents, which are no steps).
    pub work: Option<&'a Work>,
    /// The media `request` names by their marks (a model request's images
    /// and documents): a store that keeps the request keeps their bytes
    /// as blobs. Empty for every other effect.
    pub media: &'a [Attachment],
}

/// An effect's live work as data: what a durable journal hands to the
/// worker that does a step (any worker serving the same program, see
/// [`crate::runtime::Engine::perform`]). Keys and other secrets are not
/// in it: each worker has them from its environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Work {
    /// A call of the program's tool number `tool` with `args`.
    Tool {
        /// The tool's index in the program.
        tool: u32,
        /// The arguments.
        args: Value,
        /// The `Idempotency-Key` of an approved call's `http` requests.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<String>,
    },
    /// One attempt to send `body` to `url` through link number `link` of
    /// the provider chain of the program's agent number `agent`.
    Model {
        /// The agent's index in the program.
        agent: u32,
        /// The index in its chain of providers (fallbacks).
        link: u32,
        /// Where the request goes.
        url: String,
        /// The request body, as sent (without the key, which is a header).
        body: Value,
    },
}

/// A declaration's `cache` setting.
#[derive(Debug, Clone, Copy)]
pub struct CachePolicy {
    /// How long a result stays valid; `None` for ever.
    pub ttl: Option<Duration>,
}

/// What an effect produced, in the form stores keep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A result: a tool's value, a 2xx model response, an agent's answer.
    Value(Value),
    /// A failure: a tool's [`NodeError`] ([`NodeError::to_stored`]), a
    /// non-2xx model response.
    /// Replayed, never cached, not reused by `--resume`.
    Failed(Value),
}

/// What a store has for an effect.
#[derive(Debug)]
pub enum Lookup {
    /// This outcome: the work is not done.
    Hit(Outcome),
    /// Nothing: ask the next store, then do the work.
    Miss,
    /// The effect must not run: why (a replay without this call).
    Refuse(String),
}

/// A place effects are looked up in and recorded to.
pub trait EffectStore: Send + Sync {
    /// The stored outcome of `effect`, if any.
    fn lookup(&self, effect: &Effect<'_>) -> Lookup;

    /// Keeps the outcome of `effect`, which just ran live.
    ///
    /// # Errors
    /// The store could not keep it (a write failed): the message says why.
    fn record(&self, effect: &Effect<'_>, outcome: &Outcome) -> Result<(), String>;

    /// What the store is, in traces when it answered an effect
    /// (`ignite.effect.source`): `cache`, `replay`, `journal`, ...
    fn label(&self) -> &'static str {
        "store"
    }

    /// True when this store answers every effect itself (a replay): no key
    /// or network is needed, and nobody waits before a retry.
    fn offline(&self) -> bool {
        false
    }

    /// True when this store may answer a whole agent call (a test's agent
    /// mocks): the agent is then looked up, by its inputs, before any model
    /// is asked.
    fn answers_agents(&self) -> bool {
        false
    }

    /// True when the store may answer a call of a pure `returns` tool (a
    /// test's mocks): only then do those calls go through the stores.
    fn answers_pure(&self) -> bool {
        false
    }

    /// True when the store stands in for the tools themselves (a test's
    /// mocks): a call that needs approval is decided before the store is
    /// asked. Other stores keep what happened (a journal's finished call is
    /// not asked again).
    fn stands_in(&self) -> bool {
        false
    }

    /// Called once when the run ends (a recording sorts its file).
    ///
    /// # Errors
    /// As [`EffectStore::record`].
    fn finish(&self) -> Result<(), String> {
        Ok(())
    }
}

/// One step of a durable [`Journal`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// `Root > node#seq tool:name`: the key, the kind and the name.
    pub name: String,
    /// How many more times the journal may do the work after a transient
    /// failure (a tool's `retries`); 0 keeps the first failure.
    pub retries: u32,
    /// The work.
    pub work: Work,
}

/// A durable journal that runs every tool call and model exchange as one
/// named step (Restate). Steps of one run may be asked for concurrently;
/// the run's [`Activity`] tells when every task waits on its steps.
pub trait Journal: Send + Sync {
    /// The step's result: from the journal when it holds one, else from
    /// doing `step.work` ([`crate::runtime::Engine::perform`]), which the
    /// journal keeps before answering.
    ///
    /// # Errors
    /// The work's last transient failure once `step.retries` are used up
    /// (kept by the journal too), or why the journal cannot go on.
    fn step(&self, step: Step) -> BoxFuture<'_, Result<Outcome, String>>;

    /// The decision on `call`, which needs approval: a durable promise of
    /// the journal (a Restate awakeable) that a person resolves; the run
    /// waits on it, and a replay gets the decision from the journal.
    ///
    /// # Errors
    /// Why the journal cannot go on.
    fn approval(&self, call: crate::failure::PendingCall)
    -> BoxFuture<'_, Result<Verdict, String>>;

    /// What makes the run's idempotency keys its own (the run's ID).
    fn salt(&self) -> &str;
}

/// Why an effect did not produce an [`Outcome`].
#[derive(Debug)]
pub enum EffectError<L> {
    /// A store refused the effect (a replay without it): what differs.
    Refused(String),
    /// A store could not record the outcome: why.
    Store(String),
    /// The live work failed in a way no store keeps (a connection error).
    Live(L),
    /// The durable journal's step failed for good: the last transient
    /// failure once its retries were used up.
    Journal(String),
}

impl EffectError<NodeError> {
    /// The failure as the run's one failure type; `attempts`: how many
    /// times a durable journal did the work.
    #[must_use]
    pub fn into_node_error(self, attempts: u32) -> NodeError {
        match self {
            EffectError::Live(error) => error,
            EffectError::Refused(hint) => NodeError::Replay { agent: None, provider: None, hint },
            EffectError::Store(message) => NodeError::Store { message },
            EffectError::Journal(message) => NodeError::Journal { message, attempts },
        }
    }
}

/// The stores of a run, in lookup order, and its durable journal if any;
/// cheap to clone.
#[derive(Clone, Default)]
pub struct Effects {
    stores: Arc<Vec<Arc<dyn EffectStore>>>,
    journal: Option<(Arc<dyn Journal>, Arc<Activity>)>,
    approver: Option<Arc<dyn Approver>>,
}

impl std::fmt::Debug for Effects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Effects")
            .field("stores", &self.stores.len())
            .field("journal", &self.journal.is_some())
            .field("approver", &self.approver.is_some())
            .finish()
    }
}

impl Effects {
    /// No store: every effect runs live.
    #[must_use]
    pub fn live() -> Self {
        Self::default()
    }

    /// Adds `store` after the ones there are.
    #[must_use]
    pub fn with(mut self, store: Arc<dyn EffectStore>) -> Self {
        Arc::make_mut(&mut self.stores).push(store);
        self
    }

    /// Runs every tool call and model exchange as a step of `journal`
    /// (the stores are not asked for those); `activity` is where the run's
    /// tasks hold their tokens (one run per `Effects` with a journal).
    #[must_use]
    pub fn with_journal(mut self, journal: Arc<dyn Journal>, activity: Arc<Activity>) -> Self {
        self.journal = Some((journal, activity));
        self
    }

    /// Calls that need approval are decided by `approver`; without one they
    /// fail before they start ([`NodeError::ApprovalRequired`]).
    #[must_use]
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// The run's activity, under a journal.
    #[must_use]
    pub fn activity(&self) -> Option<&Arc<Activity>> {
        self.journal.as_ref().map(|(_, activity)| activity)
    }

    /// True when a durable journal runs the effects (and retries tools).
    #[must_use]
    pub fn journaled(&self) -> bool {
        self.journal.is_some()
    }

    /// True when there is a store to ask: effects need their definitions.
    #[must_use]
    pub fn stored(&self) -> bool {
        !self.stores.is_empty()
    }

    /// True when a store may answer calls of pure `returns` tools (mocks).
    #[must_use]
    pub fn answers_pure(&self) -> bool {
        self.stores.iter().any(|s| s.answers_pure())
    }

    /// True when a store stands in for the tools (mocks): approvals come first.
    #[must_use]
    pub fn stands_in(&self) -> bool {
        self.stores.iter().any(|s| s.stands_in())
    }

    /// True when a store may answer whole agent calls (mocks).
    #[must_use]
    pub fn answers_agents(&self) -> bool {
        self.stores.iter().any(|s| s.answers_agents())
    }

    /// True when a store answers everything (a replay).
    #[must_use]
    pub fn offline(&self) -> bool {
        self.stores.iter().any(|s| s.offline())
    }

    /// Tells every store the run has ended.
    ///
    /// # Errors
    /// The first store that failed to finish.
    pub fn finish(&self) -> Result<(), String> {
        self.stores.iter().try_for_each(|s| s.finish())
    }

    /// The outcome, and what answered instead of live work: a store's
    /// label, or `restate` for the durable journal's step. With a journal,
    /// tool calls and model exchanges (effects with [`Effect::work`]) are
    /// its steps, which may do the work again `retries` times after a
    /// transient failure; `live` is not used then.
    async fn perform<L>(
        &self,
        effect: &Effect<'_>,
        retries: u32,
        live: impl Future<Output = Result<Outcome, L>> + Send,
    ) -> Result<(Outcome, Option<&'static str>), EffectError<L>> {
        let (Some((journal, _)), Some(work)) = (&self.journal, effect.work) else {
            return self.perform_stores(effect, live).await;
        };
        let kind = match effect.kind {
            EffectKind::Tool => "tool",
            EffectKind::Model => "model",
            EffectKind::Agent => "agent",
        };
        let step = Step {
            name: format!("{} {kind}:{}", effect.key, effect.name),
            retries,
            work: work.clone(),
        };
        // The task waits on this step: its activity token may go.
        let waiting = activity::waiting_on_step();
        let outcome = journal.step(step).await.map_err(EffectError::Journal);
        drop(waiting);
        Ok((outcome?, Some("restate")))
    }

    /// [`Effects::perform`] without the journal: the stores, else `live`.
    async fn perform_stores<L>(
        &self,
        effect: &Effect<'_>,
        live: impl Future<Output = Result<Outcome, L>>,
    ) -> Result<(Outcome, Option<&'static str>), EffectError<L>> {
        for store in self.stores.iter() {
            match store.lookup(effect) {
                Lookup::Hit(outcome) => return Ok((outcome, Some(store.label()))),
                Lookup::Miss => {}
                Lookup::Refuse(why) => return Err(EffectError::Refused(why)),
            }
        }
        let outcome = live.await.map_err(EffectError::Live)?;
        for store in self.stores.iter() {
            store.record(effect, &outcome).map_err(EffectError::Store)?;
        }
        Ok((outcome, None))
    }
}

/// The effects of one node: its path and the count of keys handed out.
#[derive(Debug)]
pub struct Scope {
    effects: Effects,
    node: String,
    item: Option<u32>,
    /// `node`, or `node[item]`.
    path: String,
    next: AtomicU32,
    /// Where cache hits and misses are noted.
    trace: Option<Arc<Trace>>,
    /// The node's span: effect spans are its children.
    span: Span,
}

impl Scope {
    /// The scope of node `node` (its path) under `effects`.
    #[must_use]
    pub fn new(effects: Effects, node: impl Into<String>) -> Self {
        let node = node.into();
        Self {
            effects,
            path: node.clone(),
            node,
            item: None,
            next: AtomicU32::new(0),
            trace: None,
            span: Span::none(),
        }
    }

    /// Makes the effect spans of this scope children of `span` (the node's).
    #[must_use]
    pub fn with_span(mut self, span: Span) -> Self {
        self.span = span;
        self
    }

    /// The node's span.
    #[must_use]
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// Notes each cached effect's hit or miss in `trace` (as `cache`).
    #[must_use]
    pub fn with_trace(mut self, trace: Arc<Trace>) -> Self {
        self.trace = Some(trace);
        self
    }

    /// The scope of one item of a `for` node (`None`: the node itself).
    #[must_use]
    pub fn with_item(mut self, item: Option<u32>) -> Self {
        self.item = item;
        self.path = match item {
            Some(i) => format!("{}[{i}]", self.node),
            None => self.node.clone(),
        };
        self
    }

    /// A scope whose effects all run live (tests, embedding programs).
    #[must_use]
    pub fn live(node: impl Into<String>) -> Self {
        Self::new(Effects::live(), node)
    }

    /// The node path, with `[item]` for an item of a `for`.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The run's stores.
    #[must_use]
    pub fn effects(&self) -> &Effects {
        &self.effects
    }

    /// The key of the node's next effect.
    #[must_use]
    pub fn next_key(&self) -> EffectKey {
        EffectKey {
            node: self.node.clone(),
            item: self.item,
            seq: self.next.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Looks `effect` up in the stores, or runs `live` and records its
    /// outcome. A cached effect's hit or miss goes to the trace; `span`
    /// (the effect's, a child of [`Scope::span`]) learns where the outcome
    /// came from (`ignite.effect.source`) and whether it failed. A `live`
    /// failure is the caller's to note on the span.
    ///
    /// # Errors
    /// A store refused or could not record, or `live` failed.
    pub async fn perform<L>(
        &self,
        effect: &Effect<'_>,
        span: &Span,
        live: impl Future<Output = Result<Outcome, L>> + Send,
    ) -> Result<Outcome, EffectError<L>> {
        self.perform_retried(effect, span, 0, live).await.map(|(outcome, _)| outcome)
    }

    /// [`Scope::perform`] where a journal may run `live` again `retries`
    /// times after it fails; also true when a store (or the durable
    /// journal) answered instead of live work.
    async fn perform_retried<L>(
        &self,
        effect: &Effect<'_>,
        span: &Span,
        retries: u32,
        live: impl Future<Output = Result<Outcome, L>> + Send,
    ) -> Result<(Outcome, bool), EffectError<L>> {
        let started = Instant::now();
        let result = self.effects.perform(effect, retries, live).await;
        if span.is_recording() {
            match &result {
                Ok((outcome, source)) => {
                    let source = source.unwrap_or("live");
                    span.set(|| vec![KeyValue::new("ignite.effect.source", source)]);
                    if let Outcome::Failed(failure) = outcome {
                        span.fail(&telemetry::failure_type(failure));
                    }
                }
                Err(EffectError::Refused(_)) => span.fail(Code::EffectReplay.as_str()),
                Err(EffectError::Store(_)) => span.fail(Code::EffectStore.as_str()),
                Err(EffectError::Journal(_)) => span.fail(Code::EffectJournal.as_str()),
                Err(EffectError::Live(_)) => {}
            }
        }
        let (outcome, stored) = result?;
        if let (Some(trace), Some(_)) = (&self.trace, effect.cache) {
            let status = if stored.is_some() { "hit" } else { "miss" };
            trace.record(&self.path, "cache", status, started, effect.name.to_owned());
        }
        Ok((outcome, stored.is_some()))
    }

    /// Calls `tool` of `program` with `args` through the stores, in an
    /// `execute_tool` span (`call_id`: the model's id of the call, for an
    /// agent's tool call).
    ///
    /// # Errors
    /// The tool's error, or why a store refused the call.
    pub async fn call_tool(
        &self,
        key: &EffectKey,
        call_id: Option<&str>,
        toolbox: &crate::tools::Toolbox,
        program: &crate::ir::Program,
        tool: crate::ir::ToolId,
        args: Value,
    ) -> Result<Value, NodeError> {
        let declared = &program[tool];
        let span = self.span.child(
            SpanKind::Internal,
            || format!("execute_tool {}", declared.tool_name),
            || {
                let mut attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    KeyValue::new("gen_ai.tool.name", declared.tool_name.clone()),
                    KeyValue::new("gen_ai.tool.type", "function"),
                ];
                if let Some(id) = call_id {
                    attributes.push(KeyValue::new("gen_ai.tool.call.id", id.to_owned()));
                }
                if telemetry::capture_content() {
                    attributes.push(telemetry::json_attribute("gen_ai.tool.call.arguments", &args));
                }
                attributes
            },
        );
        // A pure `returns` tool is a computation, not an effect: no store
        // or journal keeps or answers it, unless it is cached or a test's
        // mocks may answer it.
        let pure = matches!(declared.implementation, crate::ir::Implementation::Returns(_))
            && declared.cache.is_none()
            && !self.effects.answers_pure();
        let approval = match crate::tools::Toolbox::needs_approval(declared, &args) {
            Ok(true) => Some(approval::pending_call(program, tool, key, &self.path, &args)),
            Ok(false) => None,
            Err(error) => {
                span.fail(error.code().as_str());
                span.end(None);
                return Err(error);
            }
        };
        // Stores that stand in for the tools (mocks) answer only decided calls.
        let approval = match approval {
            Some(call) if self.effects.stands_in() => {
                let approver = self.effects.approver.as_deref();
                if let Err(error) = approval::gate(approver, program, tool, call) {
                    span.fail(error.code().as_str());
                    span.end(None);
                    return Err(error);
                }
                None
            }
            approval => approval,
        };
        let result = if pure {
            let outcome = self
                .gated(
                    approval,
                    program,
                    tool,
                    Box::pin(tool_work(toolbox, program, tool, args, false)),
                )
                .await;
            span.set(|| vec![KeyValue::new("ignite.effect.source", "live")]);
            if let Ok(Outcome::Failed(failure)) = &outcome {
                span.fail(&telemetry::failure_type(failure));
            }
            outcome.map_err(EffectError::Live)
        } else {
            self.effect_call(key, &span, toolbox, program, tool, args, approval).await
        };
        match &result {
            Ok(Outcome::Value(value)) if telemetry::capture_content() => {
                span.set(|| vec![telemetry::json_attribute("gen_ai.tool.call.result", value)]);
            }
            Err(EffectError::Live(error)) => span.fail(error.code().as_str()),
            _ => {}
        }
        span.end(None);
        match result {
            Ok(Outcome::Value(value)) => Ok(value),
            Ok(Outcome::Failed(failure)) => Err(NodeError::from_stored(failure)),
            Err(error) => Err(error.into_node_error(declared.retries + 1)),
        }
    }

    /// A call of `tool` as an effect: through the stores (or the journal),
    /// a stored value checked as the toolbox checks a live one.
    #[allow(clippy::too_many_arguments)]
    async fn effect_call(
        &self,
        key: &EffectKey,
        span: &Span,
        toolbox: &crate::tools::Toolbox,
        program: &crate::ir::Program,
        tool: crate::ir::ToolId,
        args: Value,
        approval: Option<crate::failure::PendingCall>,
    ) -> Result<Outcome, EffectError<NodeError>> {
        let declared = &program[tool];
        let journaled = self.effects.journaled();
        // A durable journal's steps do not run the live work, where the
        // gate is: the call is decided before its step is asked for.
        let (approval, idempotency_key) = match approval {
            Some(call) if journaled => {
                (None, Some(self.approve(program, tool, call).await.map_err(EffectError::Live)?))
            }
            approval => (approval, None),
        };
        let definition = self.effects.stored().then(|| definition::tool(program, tool));
        let work = journaled.then(|| Work::Tool {
            tool: u32::try_from(tool.index()).unwrap_or(u32::MAX),
            args: args.clone(),
            idempotency_key,
        });
        let effect = Effect {
            key,
            kind: EffectKind::Tool,
            name: &declared.tool_name,
            route: "",
            request: &args,
            definition: definition.as_deref(),
            cache: declared.cache.map(|ttl| CachePolicy { ttl }),
            work: work.as_ref(),
            media: &[],
        };
        // Boxed: each layer below (`gated`, `perform_retried`, `perform`,
        // `perform_stores`) takes the future by value and kept its own copy
        // in its state, which made a tool call's task 15 KB, copied and
        // touched whole on every call (1.8 KB now; BENCHMARKS.md, "Bursts").
        let work = Box::pin(tool_work(toolbox, program, tool, args.clone(), false));
        let live = Box::pin(self.gated(approval, program, tool, work));
        match self.perform_retried(&effect, span, declared.retries, live).await {
            // A stored value gets the check a live one got in the toolbox.
            Ok((Outcome::Value(mut value), true)) => {
                match crate::tools::admit_result(declared, &mut value) {
                    Ok(()) => Ok(Outcome::Value(value)),
                    Err(error) => {
                        let failure = error.to_stored();
                        span.fail(&telemetry::failure_type(&failure));
                        Ok(Outcome::Failed(failure))
                    }
                }
            }
            other => other.map(|(outcome, _)| outcome),
        }
    }
}

impl Scope {
    /// `work`, once the run's approver approved `approval` (when the call
    /// needs one), with the approval's `Idempotency-Key` on its requests.
    /// Being the live work, this runs only when no store holds the call's
    /// outcome: a finished approved call is never asked or run again. An
    /// MCP call's progress goes to the trace, when it records.
    async fn gated(
        &self,
        approval: Option<crate::failure::PendingCall>,
        program: &crate::ir::Program,
        tool: crate::ir::ToolId,
        work: impl Future<Output = Result<Outcome, NodeError>>,
    ) -> Result<Outcome, NodeError> {
        let work = async {
            let Some(call) = approval else { return work.await };
            let key = self.approve(program, tool, call).await?;
            crate::tools::http::IDEMPOTENCY_KEY.scope(key, work).await
        };
        match self.trace.as_ref().filter(|trace| trace.enabled()) {
            Some(trace) => {
                let (trace, path) = (Arc::clone(trace), self.path.clone());
                let sink: crate::tools::mcp::ProgressSink = Arc::new(move |detail| {
                    trace.record(&path, "progress", "ok", std::time::Instant::now(), detail);
                });
                crate::tools::mcp::PROGRESS.scope(sink, work).await
            }
            None => work.await,
        }
    }

    /// The gate before `call` of `tool`, which needs approval: the
    /// durable journal's promise when there is one (the task waits on it
    /// as on a step), else the run's approver. The call's
    /// `Idempotency-Key` when it may start.
    ///
    /// # Errors
    /// The call was denied, waits, or nobody can decide.
    async fn approve(
        &self,
        program: &crate::ir::Program,
        tool: crate::ir::ToolId,
        call: crate::failure::PendingCall,
    ) -> Result<String, NodeError> {
        let Some((journal, _)) = &self.effects.journal else {
            return approval::gate(self.effects.approver.as_deref(), program, tool, call);
        };
        let id = call.call.clone();
        let waiting = activity::waiting_on_step();
        let verdict = journal.approval(call).await;
        drop(waiting);
        match verdict.map_err(|message| NodeError::Journal { message, attempts: 1 })? {
            Verdict::Approved => Ok(approval::idempotency_key(journal.salt(), &id)),
            Verdict::Denied(reason) => {
                Err(NodeError::Denied { tool: program[tool].tool_name.clone(), reason })
            }
            Verdict::Pending(call) => Err(NodeError::AwaitingApproval(vec![call])),
        }
    }
}

/// Calls `tool` of `program` with `args`: its value, or its failure as
/// stores keep it. Under a durable journal (`journaled`) the journal
/// retries (each attempt is a step's attempt): a failure the tool's
/// `retries` allow again is an error, for the journal to try again; else
/// the toolbox retries.
///
/// # Errors
/// Under a journal, a failure worth another attempt.
pub(crate) async fn tool_work(
    toolbox: &crate::tools::Toolbox,
    program: &crate::ir::Program,
    tool: crate::ir::ToolId,
    args: Value,
    journaled: bool,
) -> Result<Outcome, NodeError> {
    let declared = &program[tool];
    let http = matches!(declared.implementation, crate::ir::Implementation::Http { .. });
    match toolbox.call_with(program, tool, args, !journaled).await {
        Ok(value) => Ok(Outcome::Value(value)),
        Err(e) if journaled && declared.retries > 0 && e.retryable(http) => Err(e),
        Err(e) => Ok(Outcome::Failed(e.to_stored())),
    }
}
