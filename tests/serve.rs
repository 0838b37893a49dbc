//! `ignite serve` end to end: the binary started on 127.0.0.1 with a free
//! port, spoken to with reqwest.

mod support;

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::listening;

/// A running `ignite serve`; killed when dropped.
struct Server {
    child: Child,
    base: String,
    /// What it printed on stderr after its address.
    log: Arc<Mutex<String>>,
}

impl Server {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ignite"))
            .arg("serve")
            .args(args)
            .args(["--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ignite starts");
        let (base, lines) = listening(child.stderr.take().expect("piped stderr"));
        let log = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut log = sink.lock().expect("log lock");
                log.push_str(&line);
                log.push('\n');
            }
        });
        Self { child, base, log }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn post(&self, contract: &str, body: Value) -> (u16, Value) {
        let response = support::http()
            .post(self.url(&format!("/contracts/{contract}")))
            .json(&body)
            .send()
            .await
            .expect("the server answers");
        (response.status().as_u16(), response.json().await.expect("a JSON answer"))
    }

    async fn get(&self, path: &str) -> Value {
        let response =
            support::http().get(self.url(path)).send().await.expect("the server answers");
        assert_eq!(response.status(), 200, "GET {path}");
        response.json().await.expect("a JSON answer")
    }

    /// Waits until `/health` reports `running` runs in flight.
    async fn until_running(&self, running: u64) {
        for _ in 0..500 {
            if self.get("/health").await["running"] == json!(running) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the server never had {running} run(s) in flight");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const PRICING: &str = "contracts/pricing.ign";
const SLOW: &str = "tests/serve/slow.ign";

#[tokio::test]
async fn runs_lists_and_reports_health() {
    let server = Server::start(&[PRICING]);
    assert_eq!(server.get("/health").await, json!({"status": "ok", "running": 0}));

    let (status, outputs) = server.post("Checkout", json!({"prices": [10, 20]})).await;
    assert_eq!(status, 200);
    assert_eq!(outputs, json!({"total": 36.0, "summary": "Order of 2 items\n  total: 36.0"}));

    // Only top-level contracts are served, each with its schemas.
    let contracts = server.get("/contracts").await;
    assert_eq!(contracts.as_array().map(Vec::len), Some(1));
    assert_eq!(contracts[0]["name"], "Checkout");
    assert_eq!(contracts[0]["inputs"]["required"], json!(["prices"]));
    assert_eq!(contracts[0]["inputs"]["properties"]["prices"]["items"], json!({"type": "number"}));
    assert_eq!(contracts[0]["outputs"]["required"], json!(["total", "summary"]));
}

#[tokio::test]
async fn input_problems_are_422_with_every_problem() {
    let server = Server::start(&[PRICING]);
    let (status, body) = server.post("Checkout", json!({"price": [1], "discount_pct": "x"})).await;
    assert_eq!(status, 422);
    let error = &body["error"];
    assert_eq!(error["code"], "ignite::run::input");
    let messages: Vec<&str> = error["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| d["message"].as_str().expect("a message"))
        .collect();
    assert_eq!(
        messages,
        [
            "unknown input `price`",
            "missing required input `prices` (array<float>)",
            "input `discount_pct`: expected float, got string \"x\"",
        ]
    );
    assert_eq!(error["diagnostics"][0]["help"], "did you mean `prices`?");
    assert_eq!(error["diagnostics"][1]["line"], 17);
    assert_eq!(
        error["diagnostics"][1]["help"],
        "add `\"prices\": VALUE` to the request's JSON body"
    );
}

#[tokio::test]
async fn failed_nodes_name_their_path() {
    let server = Server::start(&[PRICING]);
    let (status, body) = server.post("Checkout", json!({"prices": []})).await;
    assert_eq!(status, 422);
    assert_eq!(body["error"]["code"], "ignite::run::guard_failed");
    assert_eq!(body["error"]["path"], "Checkout > has_items");
    assert_eq!((&body["error"]["kind"], &body["error"]["cause"]), (&json!("guard"), &Value::Null));
    assert_eq!(body["error"]["diagnostics"][0]["file"], PRICING);

    let (status, body) = server.post("PriceContract", json!({})).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "ignite::serve::unknown_contract");
    assert!(
        body["error"]["message"].as_str().is_some_and(|m| m.contains("served ones are `Checkout`")),
        "{body}"
    );
    let (status, body) = server.post("Checkot", json!({})).await;
    assert_eq!(
        (status, &body["error"]["message"]),
        (404, &json!("no contract `Checkot`; did you mean `Checkout`?"))
    );

    let (status, body) = server.post("Checkout", json!([1, 2])).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "ignite::serve::bad_body");
    assert_eq!(body["error"]["message"], "the body must be a JSON object of inputs, got array");
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let server = Server::start(&[PRICING, "--max-body", "1K"]);
    let prices: Vec<u32> = (0..1000).collect();
    let (status, body) = server.post("Checkout", json!({"prices": prices})).await;
    assert_eq!(status, 413);
    assert_eq!(body["error"]["code"], "ignite::serve::too_large");
    let (status, _) = server.post("Checkout", json!({"prices": [1]})).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn openapi_document_is_valid_openapi_3_1() {
    let server = Server::start(&[PRICING]);
    let document = server.get("/openapi.json").await;
    assert_eq!(document["openapi"], "3.1.0");
    let schema = &document["paths"]["/contracts/Checkout"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"];
    assert_eq!(*schema, server.get("/contracts").await[0]["inputs"]);
    let file = tempfile::NamedTempFile::new().expect("a temp file");
    std::fs::write(file.path(), document.to_string()).expect("written");
    let out = Command::new(support::peers::peer("python", "python"))
        .args(["-m", "openapi_spec_validator"])
        .arg(file.path())
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "openapi-spec-validator rejects the document:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn runs_past_the_time_limit_are_504_and_stopped() {
    let server = Server::start(&[SLOW, "--timeout", "1", "--max-runs", "1"]);
    let (status, body) = server.post("Slow", json!({"seconds": 60})).await;
    assert_eq!(status, 504);
    assert_eq!(body["error"]["code"], "ignite::run::deadline");
    // The run was stopped, so its one turn is free at once: the next
    // request runs (were the first still going, it would wait and be 504).
    let (status, body) = server.post("Slow", json!({"seconds": 0})).await;
    assert_eq!((status, body), (200, json!({"rested": "rested"})));
}

#[tokio::test]
async fn runs_beyond_the_limit_wait_for_a_turn() {
    let server = Arc::new(Server::start(&[SLOW, "--max-runs", "1"]));
    let first = tokio::spawn({
        let server = Arc::clone(&server);
        async move {
            let answer = server.post("Slow", json!({"seconds": 1})).await;
            (answer, Instant::now())
        }
    });
    server.until_running(1).await;
    let second = server.post("Slow", json!({"seconds": 0})).await;
    let second_done = Instant::now();
    let (first, first_done) = first.await.expect("the first request ends");
    assert_eq!((first.0, second.0), (200, 200));
    assert!(second_done >= first_done, "the second run went before the first finished");
}

#[tokio::test]
async fn sigterm_finishes_runs_in_flight_and_refuses_new_ones() {
    let mut server = Server::start(&[SLOW]);
    let url = server.url("/contracts/Slow");
    let in_flight = tokio::spawn(async move {
        let response = support::http()
            .post(url)
            .json(&json!({"seconds": 4}))
            .send()
            .await
            .expect("the server answers");
        (response.status().as_u16(), response.json::<Value>().await.expect("JSON"))
    });
    server.until_running(1).await;
    let killed = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let mut refused = None;
    for _ in 0..200 {
        let (status, body) = server.post("Slow", json!({"seconds": 0})).await;
        if status == 503 {
            refused = Some(body);
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let refused = refused.expect("a request after SIGTERM is refused");
    assert_eq!(refused["error"]["code"], "ignite::serve::shutting_down");
    assert_eq!(in_flight.await.expect("ends"), (200, json!({"rested": "rested"})));
    let status = server.child.wait().expect("ignite exits");
    assert!(status.success(), "{status}");
    assert!(server.log.lock().expect("log").contains("every run in flight finished"));
}

#[tokio::test]
async fn an_agent_answer_output_has_its_result_type() {
    let server = Server::start(&["contracts/extraction.ign"]);
    let outputs = &server.get("/contracts").await[0]["outputs"]["properties"];
    assert_eq!(outputs["ticket"]["type"], "object");
    assert_eq!(
        outputs["ticket"]["properties"]["priority"]["enum"],
        json!(["low", "normal", "high", "urgent"])
    );
    // A computed output has its static type (#26: it was left untyped).
    assert_eq!(outputs["queue"], json!({"type": "string", "description": "from `queue`"}));
}

/// A run's answer carries its run ID and what it spent as headers, and
/// every request is one access-log line on stderr.
#[tokio::test]
async fn runs_report_usage_in_headers_and_the_access_log() {
    let server = Server::start(&["tests/serve/asked.ign"]);
    let response = support::http()
        .post(server.url("/contracts/Greet"))
        .json(&json!({"name": "Ada"}))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    let header =
        |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let id = header("x-ignite-run-id").expect("a run ID");
    assert_eq!(id.len(), 16, "{id}");
    assert_eq!(header("x-ignite-input-tokens").as_deref(), Some("12"));
    assert_eq!(header("x-ignite-output-tokens").as_deref(), Some("3"));
    // A script has no price.
    assert_eq!(header("x-ignite-cost-usd"), None);
    assert_eq!(response.json::<Value>().await.unwrap()["shout"], "HELLO");
    // Computed outputs carry their static types: `integer` only where certain.
    let outputs = &server.get("/contracts").await[0]["outputs"]["properties"];
    let types: Vec<&Value> =
        ["greeting", "shout", "letters", "half"].iter().map(|o| &outputs[*o]["type"]).collect();
    assert_eq!(types, [&json!("string"), &json!("string"), &json!("integer"), &json!("number")]);
    let openapi = server.get("/openapi.json").await;
    // The only integer of the contract is `letters`.
    assert!(openapi.to_string().contains(r#""type":"integer""#), "{openapi}");
    // A failed run has an ID too (no tokens spent).
    let (status, _) = server.post("Greet", json!({})).await;
    assert_eq!(status, 422);
    let _ = server.get("/health").await;
    let started = Instant::now();
    loop {
        let log = server.log.lock().expect("log").clone();
        let lines: Vec<&str> = log.lines().filter(|l| l.starts_with("serve: ")).collect();
        if lines.len() >= 5 {
            assert!(lines[0].starts_with("serve: POST /contracts/Greet 200 "), "{log}");
            assert!(lines[0].ends_with(&format!("ms run {id} tokens 12 in / 3 out")), "{log}");
            assert!(lines[1].starts_with("serve: GET /contracts 200 "), "{log}");
            assert!(lines[2].starts_with("serve: GET /openapi.json 200 "), "{log}");
            assert!(lines[3].starts_with("serve: POST /contracts/Greet 422 "), "{log}");
            assert!(lines[3].ends_with("tokens 0 in / 0 out"), "{log}");
            assert!(lines[4].starts_with("serve: GET /health 200 "), "{log}");
            assert!(!lines[4].contains(" run "), "{log}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no access log: {log}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Images and documents are JSON `{media_type, data}` (base64) in requests
/// and answers, declared so in the OpenAPI document; a request's
/// `{"path": ...}` is never read from the server's disk.
#[tokio::test]
async fn media_inputs_are_base64_json() {
    let server = Server::start(&["tests/corpus/media/files.ign"]);
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAAAAABX3VL4AAAADElEQVR42mNg+A+EAAYAAf+tLDclAAAAAElFTkSuQmCC";
    let (status, outputs) =
        server.post("MediaFiles", json!({"photo": {"media_type": "image/png", "data": png}})).await;
    assert_eq!(status, 200, "{outputs}");
    assert_eq!(outputs, json!({"photo_type": "image/png", "page_types": []}));
    for (photo, expected) in [
        (
            json!({"path": "/etc/passwd"}),
            "input `photo`: expected an image as `{media_type, data}`",
        ),
        (
            json!({"media_type": "image/png", "data": &png[..40]}),
            "input `photo`: a PNG image is truncated",
        ),
    ] {
        let (status, body) = server.post("MediaFiles", json!({"photo": photo})).await;
        assert_eq!(status, 422, "{body}");
        let message = body["error"]["diagnostics"][0]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with(expected), "{message}");
    }
    let document = server.get("/openapi.json").await;
    let photo = &document["paths"]["/contracts/MediaFiles"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"]["properties"]["photo"];
    assert_eq!(photo["required"], json!(["media_type", "data"]));
    assert_eq!(
        photo["properties"]["media_type"]["enum"],
        json!(["image/png", "image/jpeg", "image/gif", "image/webp"])
    );
    assert_eq!(photo["properties"]["data"]["contentEncoding"], "base64");
}
