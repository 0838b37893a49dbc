//! Hand-built programs (the compiler lands elsewhere) and fake replies per wire format.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use igniter::effects::{Effects, Recording, RunHeader, Scope};
use igniter::ir::{
    Agent, AgentId, BinaryOp, Expr, ExprKind, Implementation, Param, Part, Program, Provider,
    ProviderChoice, ProviderId, ProviderKind, Tool, ToolId, Type, TypeKind,
};
use igniter::llm::{Backoff, Llm, LlmError};
use igniter::source::{FileId, Sources, Span};
use igniter::tools::Toolbox;
use igniter::trace::Trace;
use serde_json::{Map, Value, json};

/// Every provider kind of the table.
pub(crate) fn kinds() -> Vec<ProviderKind> {
    ProviderKind::all().collect()
}

/// The kind called `name`.
pub(crate) fn named(name: &str) -> ProviderKind {
    ProviderKind::named(name).unwrap()
}

pub(crate) fn span() -> Span {
    Span::new(FileId(0), 0, 0)
}

fn expr(kind: ExprKind) -> Expr {
    Expr { kind, span: span() }
}

fn var(i: u32) -> Box<Expr> {
    Box::new(expr(ExprKind::Var(i)))
}

fn param(name: &str, kind: TypeKind) -> Param {
    Param { name: name.into(), ty: Type::new(kind), default: None, description: None, span: span() }
}

fn tool(name: &str, params: Vec<Param>, caps: &[&str], body: ExprKind) -> Tool {
    Tool {
        name: name.into(),
        tool_name: name.into(),
        description: format!("the {name} tool"),
        params,
        capabilities: caps.iter().map(|c| (*c).to_owned()).collect(),
        approval: None,
        implementation: Implementation::Returns(expr(body)),
        result: None,
        timeout: None,
        retries: 0,
        cache: None,
        dir: PathBuf::from("."),
        span: span(),
    }
}

/// Tools: 0 `add(a, b)`, 1 `divide(a, b)` (fails on 0), 2 `send_email(to)`
/// needing `email_send`, 3 `lookup(sku)` needing `database_read`.
pub(crate) fn tools() -> Vec<Tool> {
    let ints = || vec![param("a", TypeKind::Integer), param("b", TypeKind::Integer)];
    vec![
        tool("add", ints(), &[], ExprKind::Binary(BinaryOp::Add, var(0), var(1))),
        tool("divide", ints(), &[], ExprKind::Binary(BinaryOp::Div, var(0), var(1))),
        tool(
            "send_email",
            vec![param("to", TypeKind::String)],
            &["email_send"],
            ExprKind::Literal(json!("sent").into()),
        ),
        tool(
            "lookup",
            vec![param("sku", TypeKind::String)],
            &["database_read"],
            ExprKind::Object(
                [
                    ("sku".into(), *var(0)),
                    ("price".into(), expr(ExprKind::Literal(json!(29.99).into()))),
                ]
                .into(),
            ),
        ),
    ]
}

/// An agent using every tool, holding `database_read` only.
pub(crate) fn agent(providers: Vec<ProviderChoice>, models: &[&str]) -> Agent {
    Agent {
        name: "Assistant".into(),
        providers,
        models: models.iter().map(|m| igniter::ir::SettingText::Literal((*m).to_owned())).collect(),
        system_prompt: Some(expr(ExprKind::Literal(json!("Use tools when needed.").into()))),
        tools: (0..4).map(ToolId::from_index).collect(),
        capabilities: vec!["database_read".into()],
        max_tool_iterations: 3,
        temperature: None,
        max_tokens: None,
        inputs: vec![param("question", TypeKind::String)],
        prompt: expr(ExprKind::Interpolate(
            [Part::Text("Q: ".into()), Part::Expr(expr(ExprKind::Var(0)))].into(),
        )),
        result: None,
        result_retries: 1,
        cache: None,
        span: span(),
    }
}

pub(crate) fn program(agents: Vec<Agent>, providers: Vec<Provider>) -> Program {
    Program {
        sources: Sources::default(),
        tools: tools(),
        agents,
        providers,
        contracts: Vec::new(),
        tests: Vec::new(),
        evals: Vec::new(),
    }
}

/// A declared provider `name` of `kind` at `base_url`.
pub(crate) fn declared(
    name: &str,
    kind: ProviderKind,
    base_url: &str,
    timeout_ms: u64,
    retries: u32,
) -> Provider {
    Provider {
        name: name.into(),
        kind,
        base_url: Some(igniter::ir::SettingText::Literal(base_url.into())),
        api_key_env: Some("TEST_KEY".into()),
        timeout: Some(Duration::from_millis(timeout_ms)),
        retries: Some(retries),
        rate_limit: None,
        token_limit: None,
        price: None,
        span: span(),
    }
}

pub(crate) fn provider_id(i: usize) -> ProviderId {
    ProviderId::from_index(i)
}

/// The base URL a kind's server is reached at, for a server at `uri`.
pub(crate) fn base_url(kind: ProviderKind, uri: &str) -> String {
    match kind.name() {
        "openai" => format!("{uri}/v1"),
        _ => uri.to_owned(),
    }
}

/// The request path of a kind for `model`.
pub(crate) fn url_path(kind: ProviderKind, model: &str) -> String {
    match kind.name() {
        "anthropic" => "/v1/messages".to_owned(),
        "openai" => "/v1/chat/completions".to_owned(),
        "ollama" => "/api/chat".to_owned(),
        "gemini" => format!("/v1beta/models/{model}:generateContent"),
        other => panic!("no fixture for provider {other}"),
    }
}

/// An `Llm` with `TEST_KEY` set and tiny backoff.
pub(crate) fn llm() -> Llm {
    llm_with(&[("TEST_KEY", "sk-test-secret-1234")])
}

pub(crate) fn llm_with(vars: &[(&str, &str)]) -> Llm {
    let vars: BTreeMap<String, String> =
        vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    Llm::with_env(vars)
        .with_backoff(Backoff { base: Duration::from_millis(5), max: Duration::from_millis(500) })
}

pub(crate) fn question(q: &str) -> Map<String, Value> {
    let mut inputs = Map::new();
    inputs.insert("question".into(), json!(q));
    inputs
}

pub(crate) async fn run(
    llm: &Llm,
    program: &Program,
    trace: &Trace,
    q: &str,
) -> Result<String, LlmError> {
    run_with(llm, program, trace, q, Effects::live()).await
}

/// Effects that record every request to `path`.
pub(crate) fn recording(path: &std::path::Path) -> Effects {
    let file = Recording::record(path, RunHeader::default()).unwrap();
    Effects::live().with(std::sync::Arc::new(file))
}

/// As [`run`], with every request going through `effects`.
pub(crate) async fn run_with(
    llm: &Llm,
    program: &Program,
    trace: &Trace,
    q: &str,
    effects: Effects,
) -> Result<String, LlmError> {
    let scope = Scope::new(effects, "Report > assistant");
    llm.run_agent(program, AgentId::from_index(0), &question(q), &Toolbox::new(), trace, &scope)
        .await
        .map(|answer| text(&answer))
}

/// An answer as text: a string as it is, anything else as JSON.
pub(crate) fn text(answer: &Value) -> String {
    answer.as_str().map_or_else(|| answer.to_string(), str::to_owned)
}

/// A final text reply in `kind`'s format.
pub(crate) fn text_reply(kind: ProviderKind, text: &str) -> Value {
    match kind.name() {
        "anthropic" => json!({"id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5}}),
        "openai" => json!({"id": "chatcmpl-1", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
            "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
        "ollama" => {
            json!({"model": "m", "message": {"role": "assistant", "content": text},
            "done": true, "done_reason": "stop", "prompt_eval_count": 10, "eval_count": 5})
        }
        "gemini" => json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "gemini-2.5-flash"}),
        other => panic!("no fixture for provider {other}"),
    }
}

/// A reply calling `calls` (`(id, name, arguments)`); `truncated` cuts it at the token limit.
pub(crate) fn tool_reply(
    kind: ProviderKind,
    calls: &[(&str, &str, Value)],
    truncated: bool,
) -> Value {
    match kind.name() {
        "anthropic" => {
            let blocks: Vec<Value> = calls
                .iter()
                .map(|(id, name, args)| json!({"type": "tool_use", "id": id, "name": name, "input": args}))
                .collect();
            json!({"content": blocks, "stop_reason": if truncated { "max_tokens" } else { "tool_use" },
                "usage": {"input_tokens": 20, "output_tokens": 8}})
        }
        "openai" => {
            let calls: Vec<Value> = calls
                .iter()
                .map(|(id, name, args)| {
                    json!({"id": id, "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}})
                })
                .collect();
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                "tool_calls": calls}, "finish_reason": if truncated { "length" } else { "tool_calls" }}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 8}})
        }
        "ollama" => {
            let calls: Vec<Value> = calls
                .iter()
                .map(|(_, name, args)| json!({"function": {"name": name, "arguments": args}}))
                .collect();
            json!({"message": {"role": "assistant", "content": "", "tool_calls": calls}, "done": true,
                "done_reason": if truncated { "length" } else { "stop" },
                "prompt_eval_count": 20, "eval_count": 8})
        }
        "gemini" => {
            let parts: Vec<Value> = calls
                .iter()
                .map(|(_, name, args)| json!({"functionCall": {"name": name, "args": args}}))
                .collect();
            json!({"candidates": [{"content": {"role": "model", "parts": parts},
                "finishReason": if truncated { "MAX_TOKENS" } else { "STOP" }, "index": 0}],
                "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 8}})
        }
        other => panic!("no fixture for provider {other}"),
    }
}

/// The tool results a request body sends back: `(content, is_error)` in order.
pub(crate) fn sent_results(kind: ProviderKind, body: &Value) -> Vec<(String, bool)> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    match kind.name() {
        "gemini" => body["contents"]
            .as_array()
            .and_then(|c| c.last())
            .and_then(|c| c["parts"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|p| {
                let response = &p["functionResponse"]["response"];
                match response.get("error") {
                    Some(e) => (e.as_str().unwrap_or("").to_owned(), true),
                    None => (response["output"].as_str().unwrap_or("").to_owned(), false),
                }
            })
            .collect(),
        "anthropic" => messages
            .last()
            .and_then(|m| m["content"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| (b["content"].as_str().unwrap_or("").to_owned(), b["is_error"] == json!(true)))
            .collect(),
        _ => messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| (m["content"].as_str().unwrap_or("").to_owned(), false))
            .collect(),
    }
}

/// `reply` with its stop reason replaced by `reason`, in `kind`'s field.
pub(crate) fn with_stop(kind: ProviderKind, mut reply: Value, reason: &str) -> Value {
    match kind.name() {
        "anthropic" => reply["stop_reason"] = json!(reason),
        "openai" => reply["choices"][0]["finish_reason"] = json!(reason),
        "ollama" => reply["done_reason"] = json!(reason),
        "gemini" => reply["candidates"][0]["finishReason"] = json!(reason),
        other => panic!("no fixture for provider {other}"),
    }
    reply
}
