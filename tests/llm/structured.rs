//! Structured answers (`result T`) against local fake servers, for each wire
//! format: valid at once, fenced, repaired after a mismatch, failing after
//! two, and after tool turns.

use std::sync::Arc;

use igniter::effects::{Effects, Scope};
use igniter::ir::{AgentId, Enum, Program, ProviderKind, Record, Type, TypeKind};
use igniter::llm::LlmError;
use igniter::tools::Toolbox;
use igniter::trace::Trace;
use serde_json::{Value, json};

use crate::fixtures::{kinds, llm, question, span, text_reply, tool_reply};
use crate::http::{bodies, ok, server, single};

/// `Ticket { title: string "One line", priority: Priority, note: string?,
/// tags: array<string> = [] }`, `enum Priority { low, high }`.
fn ticket() -> Type {
    let field = |name: &str, ty: Type, default: Option<Value>, description: Option<&str>| {
        igniter::ir::Param {
            name: name.into(),
            ty,
            default,
            description: description.map(str::to_owned),
            span: span(),
        }
    };
    let priority = Type::new(TypeKind::Enum(Arc::new(Enum {
        name: "Priority".into(),
        variants: vec!["low".into(), "high".into()],
        span: span(),
    })));
    let strings =
        Type::new(TypeKind::Array(Some(std::sync::Arc::new(Type::new(TypeKind::String)))));
    Type::new(TypeKind::Record(Arc::new(Record {
        name: "Ticket".into(),
        fields: vec![
            field("title", Type::new(TypeKind::String), None, Some("One line")),
            field("priority", priority, None, None),
            field("note", Type { kind: TypeKind::String, nullable: true }, None, None),
            field("tags", strings, Some(json!([])), None),
        ],
        span: span(),
    })))
}

/// The fake server's program with a `Ticket` result and `retries` repairs.
fn typed(kind: ProviderKind, server: &wiremock::MockServer, retries: u32) -> Program {
    let mut program = single(kind, server, 5_000, 0);
    program.agents[0].result = Some(ticket());
    program.agents[0].result_retries = retries;
    program
}

async fn answer(program: &Program) -> Result<Value, LlmError> {
    let trace = Trace::new(false);
    let scope = Scope::new(Effects::live(), "p");
    llm().run_agent(program, AgentId(0), &question("triage"), &Toolbox::new(), &trace, &scope).await
}

/// Where each provider's request asks for the structured answer.
fn asked_schema(kind: ProviderKind, body: &Value) -> Value {
    match kind.name() {
        "anthropic" => body["output_config"]["format"]["schema"].clone(),
        "openai" => body["response_format"]["json_schema"]["schema"].clone(),
        "ollama" => body["format"].clone(),
        "gemini" => body["generationConfig"]["responseJsonSchema"].clone(),
        other => panic!("no structured field for {other}"),
    }
}

/// The text of the last user message of a request, whatever the format.
fn last_user_text(body: &Value) -> String {
    let turns = body.get("messages").or_else(|| body.get("contents")).unwrap();
    let last = turns.as_array().unwrap().last().unwrap();
    last.get("content")
        .and_then(Value::as_str)
        .or_else(|| last["parts"][0]["text"].as_str())
        .unwrap_or_default()
        .to_owned()
}

const VALID: &str = r#"{"title": "Printer on fire", "priority": "high", "note": null}"#;

#[tokio::test]
async fn valid_on_first_try() {
    for kind in kinds() {
        let server = server(vec![ok(text_reply(kind, VALID))]).await;
        let value = answer(&typed(kind, &server, 1)).await.unwrap();
        assert_eq!(
            value,
            json!({"title": "Printer on fire", "priority": "high", "note": null, "tags": []}),
            "{kind:?}"
        );
        let sent = bodies(&server).await;
        assert_eq!(sent.len(), 1);
        let schema = asked_schema(kind, &sent[0]);
        assert_eq!(schema["properties"]["priority"]["enum"], json!(["low", "high"]), "{kind:?}");
        assert_eq!(schema["additionalProperties"], json!(false), "{kind:?}");
    }
}

#[tokio::test]
async fn fenced_json_is_read() {
    for kind in kinds() {
        let fenced = format!("```json\n{VALID}\n```\n");
        let server = server(vec![ok(text_reply(kind, &fenced))]).await;
        let value = answer(&typed(kind, &server, 0)).await.unwrap();
        assert_eq!(value["priority"], "high", "{kind:?}");
    }
}

#[tokio::test]
async fn invalid_then_repaired() {
    for kind in kinds() {
        let wrong = r#"{"title": "Printer on fire", "priority": "urgent", "colour": "red"}"#;
        let server = server(vec![ok(text_reply(kind, wrong)), ok(text_reply(kind, VALID))]).await;
        let value = answer(&typed(kind, &server, 1)).await.unwrap();
        assert_eq!(value["priority"], "high", "{kind:?}");
        let sent = bodies(&server).await;
        assert_eq!(sent.len(), 2, "{kind:?}");
        let repair = last_user_text(&sent[1]);
        assert!(repair.contains("`result.priority`"), "{kind:?}: {repair}");
        assert!(
            repair.contains("`result.colour`: unknown field of `Ticket`"),
            "{kind:?}: {repair}"
        );
    }
}

#[tokio::test]
async fn invalid_twice_fails_with_the_problems_and_the_reply() {
    for kind in kinds() {
        let server = server(vec![ok(text_reply(kind, "Sure! The priority is high."))]).await;
        let error = answer(&typed(kind, &server, 1)).await.unwrap_err();
        assert!(matches!(error, LlmError::BadAnswer { attempts: 2, .. }), "{kind:?}: {error:?}");
        let message = error.to_string();
        assert!(message.contains("does not fit `Ticket`"), "{message}");
        assert!(message.contains("not JSON"), "{message}");
        assert!(message.contains("Sure! The priority is high."), "{message}");
        assert_eq!(bodies(&server).await.len(), 2, "{kind:?}");
    }
}

#[tokio::test]
async fn tool_turns_first_then_the_typed_answer() {
    for kind in kinds() {
        let calls = [("c1", "add", json!({"a": 2, "b": 3}))];
        let server = server(vec![
            ok(tool_reply(kind, &calls, false)),
            ok(text_reply(kind, r#"{"title": "5 units", "priority": "low", "tags": ["math"]}"#)),
        ])
        .await;
        let value = answer(&typed(kind, &server, 1)).await.unwrap();
        assert_eq!(value, json!({"title": "5 units", "priority": "low", "tags": ["math"]}));
        let sent = bodies(&server).await;
        assert_eq!(sent.len(), 2, "{kind:?}");
        // The schema is asked for on every turn, tools offered alongside.
        assert!(asked_schema(kind, &sent[0]).is_object(), "{kind:?}");
        assert!(asked_schema(kind, &sent[1]).is_object(), "{kind:?}");
    }
}

#[tokio::test]
async fn non_record_results_are_wrapped() {
    for kind in kinds() {
        let server = server(vec![ok(text_reply(kind, r#"{"value": ["a", "b"]}"#))]).await;
        let mut program = typed(kind, &server, 0);
        let strings =
            Type::new(TypeKind::Array(Some(std::sync::Arc::new(Type::new(TypeKind::String)))));
        program.agents[0].result = Some(strings);
        assert_eq!(answer(&program).await.unwrap(), json!(["a", "b"]), "{kind:?}");
        let schema = asked_schema(kind, &bodies(&server).await[0]);
        assert_eq!(schema["required"], json!(["value"]), "{kind:?}");
    }
}
