//! Agent loop overhead and concurrency (`cargo bench --bench agents`).
//!
//! 1. One agent making N tool turns against a local fake OpenAI server with
//!    a fixed latency: wall time minus N+1 latencies is the loop's own cost
//!    (request building, JSON, tool dispatch, trace), reported per iteration.
//! 2. 8 agents at once on one `Llm`, each call taking 300 ms: the wall time
//!    should stay near 300 ms, since waiting is not work.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use igniter::ir::{
    Agent, AgentId, BinaryOp, Expr, ExprKind, Implementation, Param, Part, Program, Provider,
    ProviderChoice, ProviderId, ProviderKind, Tool, ToolId, Type, TypeKind,
};
use igniter::llm::Llm;
use igniter::source::{FileId, Sources, Span};
use igniter::tools::Toolbox;
use igniter::trace::Trace;
use serde_json::{Map, json};
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn expr(kind: ExprKind) -> Expr {
    Expr { kind, span: Span::new(FileId(0), 0, 0) }
}

fn param(name: &str, kind: TypeKind) -> Param {
    Param {
        name: name.into(),
        ty: Type::new(kind),
        default: None,
        description: None,
        span: Span::new(FileId(0), 0, 0),
    }
}

fn program(uri: &str, max_tool_iterations: u32) -> Program {
    let add = Tool {
        name: "add".into(),
        tool_name: "add".into(),
        description: "adds".into(),
        params: vec![param("a", TypeKind::Integer), param("b", TypeKind::Integer)],
        capabilities: vec![],
        implementation: Implementation::Returns(expr(ExprKind::Binary(
            BinaryOp::Add,
            Box::new(expr(ExprKind::Var(0))),
            Box::new(expr(ExprKind::Var(1))),
        ))),
        timeout: None,
        dir: PathBuf::from("."),
        span: Span::new(FileId(0), 0, 0),
    };
    let agent = Agent {
        name: "Bench".into(),
        providers: vec![ProviderChoice::Declared(ProviderId(0))],
        models: vec!["m".into()],
        system_prompt: None,
        tools: vec![ToolId(0)],
        capabilities: vec![],
        max_tool_iterations,
        temperature: None,
        max_tokens: None,
        inputs: vec![param("q", TypeKind::String)],
        prompt: expr(ExprKind::Interpolate(vec![Part::Expr(expr(ExprKind::Var(0)))])),
        span: Span::new(FileId(0), 0, 0),
    };
    let provider = Provider {
        name: "Fake".into(),
        kind: ProviderKind::OpenAi,
        base_url: Some(format!("{uri}/v1")),
        api_key_env: None,
        timeout: None,
        retries: Some(0),
        span: Span::new(FileId(0), 0, 0),
    };
    Program {
        sources: Sources::default(),
        tools: vec![add],
        agents: vec![agent],
        providers: vec![provider],
        contracts: vec![],
    }
}

/// A server that asks for `add` until the conversation holds `turns` results, then answers.
async fn server(turns: usize, latency: Duration) -> MockServer {
    let server = MockServer::start().await;
    let marker = format!("\"tool_call_id\":\"c{turns}\"");
    let done = json!({"choices": [{"message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}]});
    Mock::given(method("POST"))
        .and(body_string_contains(marker.as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(done).set_delay(latency))
        .mount(&server)
        .await;
    for i in (1..=turns).rev() {
        let call = json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("c{i}"), "type": "function", "function": {"name": "add", "arguments": "{\"a\":1,\"b\":2}"}}]},
            "finish_reason": "tool_calls"}]});
        let previous = format!("\"tool_call_id\":\"c{}\"", i - 1);
        let mock = Mock::given(method("POST"));
        let mock = if i == 1 { mock } else { mock.and(body_string_contains(previous.as_str())) };
        mock.respond_with(ResponseTemplate::new(200).set_body_json(call).set_delay(latency))
            .mount(&server)
            .await;
    }
    server
}

async fn run(llm: &Llm, program: &Program, q: &str) -> String {
    let mut inputs = Map::new();
    inputs.insert("q".into(), json!(q));
    llm.run_agent(program, AgentId(0), &inputs, &Toolbox::new(), &Trace::new(true), "bench")
        .await
        .unwrap()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let llm = Llm::with_env(Default::default());
    let latency = Duration::from_millis(20);
    let turns = 25;
    let server = server(turns, latency).await;
    let program = program(&server.uri(), 1000);
    run(&llm, &program, "warm up").await;
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let started = Instant::now();
        assert_eq!(run(&llm, &program, "go").await, "done");
        best = best.min(started.elapsed());
    }
    let calls = u32::try_from(turns + 1).unwrap();
    let overhead = best.saturating_sub(latency * calls) / calls;
    println!(
        "loop: {turns} tool turns at {latency:?} latency: best {best:?}, overhead {overhead:?} per iteration"
    );

    let slow = server_text(Duration::from_millis(300)).await;
    let program = program_for(&slow);
    let started = Instant::now();
    let runs = (0..8).map(|i| {
        let (llm, program) = (&llm, &program);
        async move { run(llm, program, &format!("agent {i}")).await }
    });
    futures_util::future::join_all(runs).await;
    println!("concurrency: 8 agents x 300 ms call: wall {:?}", started.elapsed());
}

async fn server_text(latency: Duration) -> MockServer {
    let server = MockServer::start().await;
    let done = json!({"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(done).set_delay(latency))
        .mount(&server)
        .await;
    server
}

fn program_for(server: &MockServer) -> Program {
    program(&server.uri(), 10)
}
