//! Ollama conventions against a local fake server speaking `/api/chat`:
//! `OLLAMA_HOST` in the forms the official client accepts, an invalid host
//! as a configuration error, `OLLAMA_API_KEY`, and tool schemas cut to the
//! keys Ollama's tool model defines.

use igniter::ir::ProviderChoice;
use igniter::llm::LlmError;
use igniter::trace::Trace;
use serde_json::json;

use crate::fixtures::{agent, llm_with, named, program, run, text_reply};
use crate::http::{bodies, ok, server};

fn ollama_program() -> igniter::ir::Program {
    program(vec![agent(vec![ProviderChoice::Kind(named("ollama"))], &["llama3.2"])], vec![])
}

#[tokio::test]
async fn host_without_a_scheme_works() {
    let server = server(vec![ok(text_reply(named("ollama"), "hi"))]).await;
    let host = server.uri().trim_start_matches("http://").to_owned();
    assert!(host.starts_with("127.0.0.1:"), "{host}");
    let llm = llm_with(&[("OLLAMA_HOST", &host)]);
    assert_eq!(run(&llm, &ollama_program(), &Trace::new(false), "hi").await.unwrap(), "hi");
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].url.path(), "/api/chat");
    // No key variable set: no key sent.
    assert!(requests[0].headers.get("authorization").is_none());
}

#[tokio::test]
async fn invalid_host_is_a_configuration_error_and_not_retried() {
    for host in ["http://", "ftp://127.0.0.1:11434", "exa mple:11434", "http://h:1/?q=1"] {
        let llm = llm_with(&[("OLLAMA_HOST", host)]);
        let trace = Trace::new(true);
        let err = run(&llm, &ollama_program(), &trace, "hi").await.unwrap_err();
        assert!(matches!(err, LlmError::Config { .. }), "{host}: {err}");
        assert!(err.to_string().starts_with("`OLLAMA_HOST` is not a valid base URL"), "{err}");
        assert!(trace.entries().is_empty(), "{host}: nothing is sent");
    }
}

#[tokio::test]
async fn api_key_is_sent_as_bearer() {
    let server = server(vec![ok(text_reply(named("ollama"), "hi"))]).await;
    let llm = llm_with(&[("OLLAMA_HOST", &server.uri()), ("OLLAMA_API_KEY", "ollama-key-42")]);
    let trace = Trace::new(true);
    run(&llm, &ollama_program(), &trace, "hi").await.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].headers["authorization"], "Bearer ollama-key-42");
    assert!(!format!("{llm:?}{}", trace.render()).contains("ollama-key-42"));
}

#[tokio::test]
async fn tool_schemas_carry_only_the_keys_of_ollamas_tool_model() {
    let server = server(vec![ok(text_reply(named("ollama"), "ok"))]).await;
    let mut program = ollama_program();
    // `lookup(sku)` gets a default (not in the tool model) and a description.
    program.tools[3].params[0].default = Some(json!("SKU-1"));
    program.tools[3].params[0].description = Some("Product SKU".into());
    let llm = llm_with(&[("OLLAMA_HOST", &server.uri())]);
    run(&llm, &program, &Trace::new(false), "hi").await.unwrap();
    let sent = bodies(&server).await;
    let lookup = sent[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "lookup")
        .unwrap()
        .clone();
    assert_eq!(
        lookup,
        json!({"type": "function", "function": {"name": "lookup",
            "description": "the lookup tool", "parameters": {"type": "object",
            "properties": {"sku": {"type": "string", "description": "Product SKU"}}}}})
    );
}
