//! The automatic tool-use loop of one agent run.
//!
//! Send the conversation and the agent's tools (each as
//! [`Toolbox::view`] shows it) → a reply without tool calls ends the run
//! with its text (an empty one fails with [`LlmError::Empty`]) → otherwise
//! check every call of
//! the turn against the agent's capabilities (one failure fails the run and
//! no tool of the turn runs), run the calls concurrently (as many at once
//! as nodes may wait: `--jobs`, the runner), append the assistant turn and
//! ONE tool-results message in call order, repeat. Tool
//! turns beyond `max_tool_iterations` fail with [`LlmError::ToolLoop`]; a
//! reply cut off by the token limit fails with [`LlmError::Truncated`], one
//! the provider blocked or ended for any other reason with
//! [`LlmError::Stopped`], and their calls never run. A `pause_turn` reply
//! goes back as it came and the model continues (each pause counts as a
//! tool turn). An assistant turn carries the provider's own content
//! ([`Echo`](super::message::Echo)) so the same wire format sends it back
//! unchanged. Unknown tools and failing tools become result text
//! (`Unknown tool: NAME`, `Error: ...`) so the model can recover.
//!
//! With `result T` the final text must be JSON of `T` (see `structured.rs`,
//! asked for with each provider's native mechanism): an answer that does not
//! fit goes back with the problems, as a user message, up to
//! `result_retries` times (not counted as tool turns), then fails with
//! [`LlmError::BadAnswer`] — as it does when a `script` has no reply left
//! for the repair (the reply that did not fit is the failure).
//!
//! A provider (or malformed-reply) error moves the rest of the conversation
//! to the next link of the fallback chain; other errors end the run.

use std::time::Instant;

use futures_util::stream::{self, StreamExt as _};
use serde_json::Value;

use super::client::{CallContext, ModelClient};
use super::error::LlmError;
use super::message::{
    Content, Media, Message, ModelReply, ModelRequest, StopReason, ToolCall, ToolResult,
};
use super::structured::{Structured, excerpt};
use crate::effects::EffectKey;
use crate::eval;
use crate::ir::{Agent, Expr, ExprKind, Part, Program, ToolId};
use crate::tools::{self, ToolView, Toolbox};

/// One agent run's fixed parts.
pub(crate) struct Run<'a> {
    pub(crate) program: &'a Program,
    pub(crate) agent: &'a Agent,
    pub(crate) toolbox: &'a Toolbox,
    pub(crate) cx: CallContext<'a>,
    /// The chain: a client and its model per link.
    pub(crate) chain: Vec<(Box<dyn ModelClient>, String)>,
}

/// Renders the agent's prompts from `inputs` (missing ones: default, else
/// null). The user prompt keeps its images and documents as [`Content::Media`]
/// where it interpolates them (a media value, or an array of them); the
/// system prompt is text.
pub(crate) fn prompts(
    agent: &Agent,
    inputs: &eval::Fields,
) -> Result<(Option<String>, Vec<Content>), LlmError> {
    let scope: Vec<eval::Val> = agent
        .inputs
        .iter()
        .map(|p| match (inputs.get(&p.name), &p.default) {
            (Some(value), _) => value.clone(),
            (None, Some(default)) => default.into(),
            (None, None) => eval::Val::Null,
        })
        .collect();
    let value = |expr: &Expr| {
        eval::eval(expr, scope.as_slice())
            .map_err(|e| LlmError::Prompt { agent: agent.name.clone(), message: e.message })
    };
    let system = match &agent.system_prompt {
        Some(expr) => {
            let mut text = String::new();
            eval::push_display(&mut text, &value(expr)?);
            Some(text)
        }
        None => None,
    };
    let mut content = Vec::new();
    match &agent.prompt.kind {
        ExprKind::Interpolate(parts) => {
            for part in parts {
                match part {
                    Part::Text(text) => push_text(&mut content, text),
                    Part::Expr(expr) => push_value(&mut content, &value(expr)?),
                }
            }
        }
        _ => push_value(&mut content, &value(&agent.prompt)?),
    }
    Ok((system, content))
}

/// Appends `text` to a message's pieces, joined to the text before it.
fn push_text(content: &mut Vec<Content>, text: &str) {
    match content.last_mut() {
        Some(Content::Text(last)) => last.push_str(text),
        _ => content.push(Content::Text(text.to_owned())),
    }
}

/// Appends an interpolated value: a media value (or an array of them) as
/// its own pieces, anything else as interpolation shows it.
fn push_value(content: &mut Vec<Content>, value: &eval::Val) {
    if let Some(media) = Media::of(value) {
        content.push(Content::Media(media));
        return;
    }
    if let Some(items) = value.as_array().filter(|items| !items.is_empty()) {
        let media: Option<Vec<Media>> = items.iter().map(Media::of).collect();
        if let Some(media) = media {
            content.extend(media.into_iter().map(Content::Media));
            return;
        }
    }
    let mut text = String::new();
    eval::push_display(&mut text, value);
    push_text(content, &text);
}

impl Run<'_> {
    /// Runs the loop from the first user message to the answer: the final
    /// text, or the structured value of the agent's `result`.
    pub(crate) async fn run(
        &self,
        system: Option<String>,
        prompt: Vec<Content>,
    ) -> Result<Value, LlmError> {
        let structured = self.agent.result.as_ref().map(Structured::new);
        // One request for the whole conversation: each turn appends to its
        // messages, and its tools' schemas are built once.
        let mut request = ModelRequest {
            model: String::new(),
            system,
            messages: vec![Message::User(prompt)],
            tools: self.tool_views(),
            temperature: self.agent.temperature,
            max_tokens: self.agent.max_tokens,
            result: structured.as_ref().map(|s| s.schema.clone()),
        };
        let mut link = 0;
        let mut turns = 0;
        let mut repairs = 0;
        // The answer that did not fit, while its repair is asked for.
        let mut unfit: Option<LlmError> = None;
        loop {
            let (reply, used) = match self.complete(link, &mut request).await {
                Ok(done) => done,
                // A script with no reply for the repair: the answer it gave is
                // the failure, not the script running out.
                Err(e) => {
                    return Err(match (e, unfit) {
                        (LlmError::Script { .. }, Some(bad)) => bad,
                        (e, _) => e,
                    });
                }
            };
            unfit = None;
            link = used;
            let (agent, provider, model) = (
                self.agent.name.clone(),
                self.chain[link].0.provider().to_owned(),
                self.chain[link].1.clone(),
            );
            let pause = reply.stop == StopReason::PauseTurn;
            match reply.stop {
                StopReason::EndTurn | StopReason::ToolUse | StopReason::PauseTurn => {}
                StopReason::MaxTokens => {
                    return Err(LlmError::Truncated { agent, provider, model });
                }
                StopReason::Blocked(reason) | StopReason::Other(reason) => {
                    return Err(LlmError::Stopped {
                        agent,
                        provider,
                        model,
                        reason,
                        text: reply.text,
                    });
                }
            }
            if reply.tool_calls.is_empty() && !pause {
                if reply.text.trim().is_empty() {
                    return Err(LlmError::Empty { agent, provider, model });
                }
                let Some(structured) = &structured else { return Ok(Value::String(reply.text)) };
                let problems = match structured.read(&reply.text) {
                    Ok(value) => return Ok(value),
                    Err(problems) => problems,
                };
                let repair = structured.repair_prompt(&problems);
                let bad = LlmError::BadAnswer {
                    agent,
                    ty: structured.schema.name.clone(),
                    attempts: repairs + 1,
                    problems,
                    excerpt: excerpt(&reply.text),
                };
                if repairs >= self.agent.result_retries {
                    return Err(bad);
                }
                // The answer goes back with what is wrong with it, for another try.
                repairs += 1;
                unfit = Some(bad);
                request.messages.push(Message::Assistant {
                    text: reply.text,
                    tool_calls: Vec::new(),
                    echo: reply.echo,
                });
                request.messages.push(Message::user(repair));
                continue;
            }
            if turns >= self.agent.max_tool_iterations {
                return Err(LlmError::ToolLoop {
                    agent: self.agent.name.clone(),
                    limit: self.agent.max_tool_iterations,
                });
            }
            turns += 1;
            if pause {
                // The paused turn goes back as it came and the model goes on;
                // its partial text is never the answer.
                request.messages.push(Message::Assistant {
                    text: reply.text,
                    tool_calls: Vec::new(),
                    echo: reply.echo,
                });
                continue;
            }
            let results = self.run_tools(&reply.tool_calls).await?;
            request.messages.push(Message::Assistant {
                text: reply.text,
                tool_calls: reply.tool_calls,
                echo: reply.echo,
            });
            request.messages.push(Message::ToolResults(results));
        }
    }

    /// Sends `request` to link `from` (its model set to the link's),
    /// moving down the chain after provider errors.
    async fn complete(
        &self,
        from: usize,
        request: &mut ModelRequest,
    ) -> Result<(ModelReply, usize), LlmError> {
        let mut link = from;
        loop {
            let (client, model) = &self.chain[link];
            if request.model != *model {
                request.model.clone_from(model);
            }
            match client.complete(request, self.cx).await {
                Ok(reply) => return Ok((reply, link)),
                Err(e) if e.allows_fallback() && link + 1 < self.chain.len() => link += 1,
                Err(e) => return Err(e),
            }
        }
    }

    fn tool_views(&self) -> Vec<ToolView> {
        self.agent.tools.iter().map(|&id| self.toolbox.view(&self.program[id])).collect()
    }

    /// The agent's tool a model calls `name`.
    fn tool(&self, name: &str) -> Option<ToolId> {
        self.agent.tools.iter().copied().find(|&id| self.program[id].tool_name == name)
    }

    /// Guards every call, then runs them concurrently (at most
    /// [`Toolbox::turn_calls`] at once); results in call order.
    async fn run_tools(&self, calls: &[ToolCall]) -> Result<Vec<ToolResult>, LlmError> {
        for call in calls {
            if let Some(id) = self.tool(&call.name) {
                tools::check_capabilities(
                    &self.program[id],
                    &self.agent.name,
                    &self.agent.capabilities,
                )
                .map_err(LlmError::Capability)?;
            }
        }
        let at_once = self.toolbox.turn_calls();
        // Keys are handed out in call order, before the calls run. Collected
        // first: a lazy `map` in the stream trips up the `Send` check of the
        // spawned agent task.
        let keys: Vec<_> = calls.iter().map(|_| self.cx.scope.next_key()).collect();
        let runs: Vec<_> =
            calls.iter().zip(&keys).map(|(call, key)| self.run_tool(key, call)).collect();
        let results: Vec<Result<ToolResult, LlmError>> =
            stream::iter(runs).buffered(at_once).collect().await;
        // A call waiting for approval (or that nobody can approve) stops
        // the agent: the others of the turn ran and are journaled, and the
        // waiting ones are reported together.
        let mut waiting = Vec::new();
        let mut done = Vec::with_capacity(results.len());
        for result in results {
            match result {
                Ok(result) => done.push(result),
                Err(LlmError::AwaitingApproval(calls)) => waiting.extend(calls),
                Err(error) => return Err(error),
            }
        }
        if waiting.is_empty() { Ok(done) } else { Err(LlmError::AwaitingApproval(waiting)) }
    }

    async fn run_tool(&self, key: &EffectKey, call: &ToolCall) -> Result<ToolResult, LlmError> {
        let started = Instant::now();
        let path = format!("{} > tool {}", self.cx.path, call.name);
        let outcome = match self.tool(&call.name) {
            None => Err(format!("Unknown tool: {}", call.name)),
            Some(_) if !call.arguments.is_object() => Err(format!(
                "Error: arguments must be a JSON object, got {}",
                eval::describe(&call.arguments)
            )),
            Some(id) => {
                let result = self
                    .cx
                    .scope
                    .call_tool(
                        key,
                        Some(&call.id),
                        self.toolbox,
                        self.program,
                        id,
                        call.arguments.clone(),
                    )
                    .await;
                match result {
                    Ok(value) => {
                        let mut text = String::new();
                        eval::push_display(&mut text, &value);
                        Ok(text)
                    }
                    // Not the model's to recover from: the call never started.
                    Err(e @ (LlmError::AwaitingApproval(_) | LlmError::ApprovalRequired(_))) => {
                        return Err(e);
                    }
                    Err(e) => Err(format!("Error: {e}")),
                }
            }
        };
        let (content, is_error) = match outcome {
            Ok(text) => {
                self.cx.trace.record(&path, "tool_call", "ok", started, format!("id {}", call.id));
                (text, false)
            }
            Err(text) => {
                self.cx.trace.record(&path, "tool_call", "failed", started, text.clone());
                (text, true)
            }
        };
        Ok(ToolResult { id: call.id.clone(), name: call.name.clone(), content, is_error })
    }
}
