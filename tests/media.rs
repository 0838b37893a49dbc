//! Images and documents sent to models, from the outside: real `ignite`
//! processes read real files and talk to a local fake provider of each
//! kind, whose request bodies are snapshot-tested (the provider's own
//! content blocks, in the prompt's order); fallbacks rebuild the blocks for
//! the next kind, tools and `result T` work beside them, a recording
//! replays offline, and Ollama is never sent a document.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::ignite;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The media files the tests read, copied into `dir`.
fn media(dir: &Path) {
    for name in ["tiny.png", "tiny.pdf"] {
        std::fs::copy(Path::new("tests/corpus/media").join(name), dir.join(name)).unwrap();
    }
}

/// The provider `Fake` of `kind` at `base`, its key from `FAKE_KEY`.
fn fake_provider(kind: &str, base: &str) -> String {
    format!(
        r#"provider Fake {{
  kind {kind}
  base_url "{base}"
  api_key env("FAKE_KEY")
  retries 0
}}
"#
    )
}

/// A provider of `kind` at `base` and an agent reading a document and a
/// photo (the photo alone for Ollama, which takes no documents).
fn program(kind: &str, base: &str) -> String {
    let (inputs, prompt, args) = if kind == "ollama" {
        ("  input photo: image\n", "Receipt: {photo} What is the total?", "photo: photo")
    } else {
        (
            "  input scan: document\n  input photo: image\n",
            "Invoice: {scan} Receipt: {photo} Do they match?",
            "scan: scan, photo: photo",
        )
    };
    let provider = fake_provider(kind, base);
    format!(
        r#"
{provider}
agent Reader {{
  provider Fake
  model "m"
{inputs}  prompt "{prompt}"
}}

contract Read {{
{inputs}  compute answer = Reader({args})
  output answer
}}
"#
    )
}

/// A reply of `kind` whose text is `text`.
fn text_reply(kind: &str, text: &str) -> Value {
    match kind {
        "anthropic" => json!({"content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}),
        "openai" => json!({"choices": [{"message": {"role": "assistant", "content": text},
            "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
        "ollama" => json!({"message": {"role": "assistant", "content": text}, "done": true,
            "done_reason": "stop", "prompt_eval_count": 10, "eval_count": 5}),
        _ => json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 10,
            "candidatesTokenCount": 5}}),
    }
}

/// The base URL of a fake server for `kind` (OpenAI's has `/v1` in it).
fn base(kind: &str, server: &MockServer) -> String {
    if kind == "openai" { format!("{}/v1", server.uri()) } else { server.uri() }
}

/// The JSON bodies the server received, in order.
async fn bodies(server: &MockServer) -> Vec<Value> {
    let requests = server.received_requests().await.unwrap_or_default();
    requests.iter().map(|r| serde_json::from_slice(&r.body).unwrap()).collect()
}

/// `ignite run FILE` with the photo, and the scan when `scan`.
fn run(dir: &Path, file: &str, scan: bool, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", file, "--input", "photo=@tiny.png"];
    if scan {
        args.extend(["--input", "scan=@tiny.pdf"]);
    }
    args.extend(extra);
    ignite(dir).args(&args).output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_provider_gets_its_own_content_blocks() {
    let mut sent = serde_json::Map::new();
    for kind in ["anthropic", "openai", "gemini", "ollama"] {
        let dir = tempfile::tempdir().unwrap();
        media(dir.path());
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(text_reply(kind, "they match")))
            .mount(&server)
            .await;
        std::fs::write(dir.path().join("read.ign"), program(kind, &base(kind, &server))).unwrap();
        let output = run(dir.path(), "read.ign", kind != "ollama", &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{kind}: {stderr}");
        let outputs: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(outputs, json!({"answer": "they match"}), "{kind}");
        let mut received = bodies(&server).await;
        assert_eq!(received.len(), 1, "{kind}");
        sent.insert(kind.to_owned(), received.remove(0));
    }
    insta::assert_json_snapshot!(sent);
}

/// The first link fails; the second kind gets the same media in its own blocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_rebuilds_the_blocks_for_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    media(dir.path());
    let server = MockServer::start().await;
    Mock::given(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(500).set_body_string("down"))
        .mount(&server)
        .await;
    Mock::given(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(text_reply("openai", "read")))
        .mount(&server)
        .await;
    let text = format!(
        r#"
provider First {{
  kind anthropic
  base_url "{uri}"
  api_key env("FAKE_KEY")
  retries 0
}}

provider Second {{
  kind openai
  base_url "{uri}/v1"
  api_key env("FAKE_KEY")
  retries 0
}}

agent Reader {{
  provider First fallback Second
  model "m" fallback "n"
  input scan: document
  input photo: image
  prompt "{{scan}} and {{photo}}"
}}

contract Read {{
  input scan: document
  input photo: image
  compute answer = Reader(scan: scan, photo: photo)
  output answer
}}
"#,
        uri = server.uri()
    );
    std::fs::write(dir.path().join("read.ign"), text).unwrap();
    let output = run(dir.path(), "read.ign", true, &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let received = bodies(&server).await;
    assert_eq!(received.len(), 2);
    let first = &received[0]["messages"][0]["content"];
    assert_eq!(first[0]["type"], "document");
    assert_eq!(first[0]["source"]["media_type"], "application/pdf");
    assert_eq!(first[2]["type"], "image");
    let second = &received[1]["messages"][0]["content"];
    assert_eq!(second[0]["type"], "file");
    assert!(
        second[0]["file"]["file_data"]
            .as_str()
            .unwrap()
            .starts_with("data:application/pdf;base64,JVBER")
    );
    assert_eq!(second[1], json!({"type": "text", "text": " and "}));
    assert!(
        second[2]["image_url"]["url"].as_str().unwrap().starts_with("data:image/png;base64,iVBOR")
    );
}

/// A tool turn and a structured answer beside the media; the run
/// recorded replays offline with the same answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_results_and_replay_work_with_media() {
    let dir = tempfile::tempdir().unwrap();
    media(dir.path());
    let server = MockServer::start().await;
    let call = json!({"choices": [{"message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "Rate", "arguments": "{\"currency\": \"EUR\"}"}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}});
    Mock::given(method("POST"))
        .and(wiremock::matchers::body_string_contains("\"role\":\"tool\""))
        .respond_with(ResponseTemplate::new(200).set_body_json(text_reply(
            "openai",
            r#"{"total": 8.5, "currency": "EUR", "in_dollars": 9.35}"#,
        )))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(call))
        .mount(&server)
        .await;
    let text = format!(
        r#"
provider Fake {{
  kind openai
  base_url "{uri}/v1"
  api_key env("FAKE_KEY")
  retries 0
}}

tool Rate {{
  description "Dollars per unit of a currency"
  param currency: string
  exec "sh" "-c" "cat > /dev/null; echo 1.1"
}}

type Total {{
  total: float
  currency: string
  in_dollars: float
}}

agent Reader {{
  provider Fake
  model "m"
  tools Rate
  input photo: image
  prompt "Total of {{photo}} in dollars"
  result Total
}}

contract Read {{
  input photo: image
  compute total = Reader(photo: photo)
  output total
}}
"#,
        uri = server.uri()
    );
    std::fs::write(dir.path().join("read.ign"), text).unwrap();
    let live = run(dir.path(), "read.ign", false, &["--record", "read.jsonl"]);
    assert!(live.status.success(), "{}", String::from_utf8_lossy(&live.stderr));
    let expected = json!({"total": {"total": 8.5, "currency": "EUR", "in_dollars": 9.35}});
    assert_eq!(serde_json::from_slice::<Value>(&live.stdout).unwrap(), expected);
    let received = bodies(&server).await;
    assert_eq!(received.len(), 2);
    for body in &received {
        let parts = &body["messages"][0]["content"];
        assert_eq!(parts[1]["type"], "image_url", "{body}");
    }
    drop(server);
    let replayed = run(dir.path(), "read.ign", false, &["--replay", "read.jsonl"]);
    assert!(replayed.status.success(), "{}", String::from_utf8_lossy(&replayed.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&replayed.stdout).unwrap(), expected);
}

/// A document that reaches an Ollama agent at run time (through an `any`
/// input, which `check` cannot see) fails the agent before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollama_is_never_sent_a_document() {
    let dir = tempfile::tempdir().unwrap();
    media(dir.path());
    let server = MockServer::start().await;
    let text = format!(
        r#"
agent Reader {{
  provider Fake
  model "m"
  input page: any
  prompt "Read {{page}}"
}}

provider Fake {{
  kind ollama
  base_url "{uri}"
}}

contract Read {{
  input scan: document
  compute answer = Reader(page: scan)
  output answer
}}
"#,
        uri = server.uri()
    );
    std::fs::write(dir.path().join("read.ign"), text).unwrap();
    let output =
        ignite(dir.path()).args(["run", "read.ign", "--input", "scan=@tiny.pdf"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("agent `Reader` sends a document to provider `Fake`, whose kind `ollama`"),
        "{stderr}"
    );
    assert!(bodies(&server).await.is_empty());
}

/// A 5 MB document read over six model turns is stored once: the
/// recording names it by its SHA-256 and its bytes are one blob beside it;
/// the replay puts them back, and a blob that is altered or gone is a
/// clear error. A journal keeps its inputs' media the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn media_is_stored_once_however_many_turns() {
    let dir = tempfile::tempdir().unwrap();
    let mut pdf = b"%PDF-1.4\n".to_vec();
    pdf.resize(5 << 20, b' ');
    pdf.extend_from_slice(b"\n%%EOF\n");
    std::fs::write(dir.path().join("scan.pdf"), &pdf).unwrap();
    let server = MockServer::start().await;
    let call = json!({"choices": [{"message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "page", "arguments": "{\"n\": 1}"}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(call))
        .up_to_n_times(5)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(text_reply("openai", "done")))
        .mount(&server)
        .await;
    let text = format!(
        r#"{reader}

agent Reader {{
  provider Fake
  model "m"
  tools Page
  max_tool_iterations 10
  input scan: document
  prompt "Read {{scan}} page by page"
}}

contract Read {{
  input scan: document
  compute answer = Reader(scan: scan)
  output answer
}}
"#,
        reader = reader_tools("openai", &format!("{}/v1", server.uri()))
    );
    std::fs::write(dir.path().join("read.ign"), text).unwrap();
    let args = ["run", "read.ign", "--input", "scan=@scan.pdf", "--max-bytes", "16M"];
    let live = ignite(dir.path())
        .args(args)
        .args(["--record", "read.jsonl", "--journal"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&live.stderr);
    assert!(live.status.success(), "{stderr}");
    assert_eq!(bodies(&server).await.len(), 6);
    let size = |path: &Path| std::fs::metadata(path).unwrap().len();
    let files = |dir: &Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect()
    };
    let id = stderr.split("run ID ").nth(1).and_then(|s| s.split(' ').next()).unwrap().to_owned();
    let runs = dir.path().join(".ignite/runs");
    for (file, blobs) in [
        (dir.path().join("read.jsonl"), dir.path().join("read.blobs")),
        (runs.join(format!("{id}.jsonl")), runs.join(format!("{id}.blobs"))),
    ] {
        assert!(size(&file) < 100_000, "{} is {} bytes", file.display(), size(&file));
        let blobs = files(&blobs);
        assert_eq!(blobs.len(), 1, "{blobs:?}");
        assert_eq!(std::fs::read(&blobs[0]).unwrap(), pdf);
    }
    drop(server);
    // Resumed with no provider: every effect (and the inputs) from the journal.
    let resumed = ignite(dir.path()).args(["run", "read.ign", "--resume", &id]).output().unwrap();
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stderr));
    assert_eq!(
        serde_json::from_slice::<Value>(&resumed.stdout).unwrap(),
        json!({"answer": "done"})
    );
    let blobs = files(&dir.path().join("read.blobs"));

    let replay = ["--replay", "read.jsonl"];
    let replayed = ignite(dir.path()).args(args).args(replay).output().unwrap();
    assert!(replayed.status.success(), "{}", String::from_utf8_lossy(&replayed.stderr));
    assert_eq!(
        serde_json::from_slice::<Value>(&replayed.stdout).unwrap(),
        json!({"answer": "done"})
    );

    let mut altered = pdf.clone();
    altered[100] = b'x';
    std::fs::write(&blobs[0], &altered).unwrap();
    let refused = ignite(dir.path()).args(args).args(replay).output().unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("was altered (its SHA-256 is not its name)"), "{stderr}");
    std::fs::remove_file(&blobs[0]).unwrap();
    let refused = ignite(dir.path()).args(args).args(replay).output().unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("names media stored in `read.blobs/"), "{stderr}");
    assert!(stderr.contains("which cannot be read"), "{stderr}");
}

/// The result cache keeps each image of its values once: two cached calls
/// that return the same picture share one blob, and a second run is
/// answered from the cache with the bytes back in place.
#[test]
fn the_cache_keeps_each_image_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy("contracts/invoices/receipt.png", dir.path().join("receipt.png")).unwrap();
    let text = r#"
tool Load {
  description "Loads the receipt, counting its calls"
  param copy: integer
  result image
  cache 1h
  exec "sh" "load.sh"
}

contract Twice {
  compute a = Load(copy: 1)
  compute b = Load(copy: 2)
  compute same = a == b
  output same
  output a
}
"#;
    std::fs::write(dir.path().join("twice.ign"), text).unwrap();
    let script = "cat > /dev/null\necho load >> calls.log\n\
        printf '{\"media_type\": \"image/png\", \"data\": \"%s\"}' \"$(base64 -w0 receipt.png)\"\n";
    std::fs::write(dir.path().join("load.sh"), script).unwrap();
    for _ in 0..2 {
        let output = ignite(dir.path()).args(["run", "twice.ign"]).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let outputs: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(outputs["same"], true);
        assert!(outputs["a"]["data"].as_str().unwrap().starts_with("iVBOR"));
    }
    let calls = std::fs::read_to_string(dir.path().join("calls.log")).unwrap();
    assert_eq!(calls.lines().count(), 2, "the second run is answered by the cache");
    let blobs = std::fs::read_dir(dir.path().join(".ignite/cache/blobs")).unwrap().count();
    assert_eq!(blobs, 1);
}

/// An `http post` tool sends a media argument as `{media_type, data}` in
/// its JSON body and may answer one (`result image`), which is checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_tools_send_and_answer_media() {
    let dir = tempfile::tempdir().unwrap();
    media(dir.path());
    let server = MockServer::start().await;
    let gif = json!({"media_type": "image/gif", "data": "R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs="});
    Mock::given(path("/thumb"))
        .respond_with(ResponseTemplate::new(200).set_body_json(gif.clone()))
        .mount(&server)
        .await;
    Mock::given(path("/broken"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"media_type": "image/png", "data": "R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs="})))
        .mount(&server)
        .await;
    let text = format!(
        r#"
tool Thumb {{
  description "A thumbnail"
  param photo: image
  result image
  http post "{uri}/thumb"
}}

tool Broken {{
  description "Says PNG, sends a GIF"
  param photo: image
  result image
  http post "{uri}/broken"
}}

contract Thumbs {{
  input photo: image
  compute small = Thumb(photo: photo)
  compute bad = try Broken(photo: photo)
  output small
  output bad.error as bad
}}
"#,
        uri = server.uri()
    );
    std::fs::write(dir.path().join("thumbs.ign"), text).unwrap();
    let output = run(dir.path(), "thumbs.ign", false, &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let outputs: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outputs["small"], gif);
    let bad = outputs["bad"].as_str().unwrap();
    assert!(bad.contains("`media_type` is `image/png` but the bytes are a GIF image"), "{bad}");
    let sent = bodies(&server).await;
    let png = std::fs::read("tests/corpus/media/tiny.png").unwrap();
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(png);
    assert_eq!(sent[0], json!({"photo": {"media_type": "image/png", "data": data}}));
}

/// A reply of `kind` that calls the tool `Page` with `{"n": 1}`.
fn call_reply(kind: &str) -> Value {
    match kind {
        "anthropic" => json!({"content": [{"type": "tool_use", "id": "t1", "name": "page",
            "input": {"n": 1}}], "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5}}),
        "openai" => json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "page", "arguments": "{\"n\": 1}"}}]},
            "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
        "ollama" => json!({"message": {"role": "assistant", "content": "",
            "tool_calls": [{"function": {"name": "page", "arguments": {"n": 1}}}]}, "done": true,
            "done_reason": "stop", "prompt_eval_count": 10, "eval_count": 5}),
        _ => json!({"candidates": [{"content": {"role": "model",
            "parts": [{"functionCall": {"name": "page", "args": {"n": 1}}}]},
            "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 10,
            "candidatesTokenCount": 5}}),
    }
}

/// Every string of `value` that is base64 (alone or in a `data:` URL)
/// decoded.
fn decoded_strings(value: &Value, out: &mut Vec<Vec<u8>>) {
    use base64::Engine as _;
    match value {
        Value::String(text) => {
            let data = text.split_once(";base64,").map_or(text.as_str(), |(_, data)| data);
            if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) {
                out.push(bytes);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| decoded_strings(v, out)),
        Value::Object(fields) => fields.values().for_each(|v| decoded_strings(v, out)),
        _ => {}
    }
}

/// Two turns (a tool call, then text) with a large file (a PDF; a PNG for
/// Ollama, which takes no documents) and a tiny PNG, for each kind: the
/// fake checks that the base64 in every body decodes to the files, and
/// the bodies' bytes, with each file's base64 written as a name, are the
/// snapshot taken before request bodies carried their media as marks
/// spliced in when sent (byte for byte: the order of fields, the
/// separators, the escapes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_turns_send_the_bodies_byte_for_byte() {
    use base64::Engine as _;
    let mut pdf = b"%PDF-1.4\n".to_vec();
    pdf.extend((0..3000u32).map(|i| (i * 7 % 251) as u8));
    pdf.extend_from_slice(b"\n%%EOF\n");
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend((0..3000u32).map(|i| (i * 11 % 253) as u8));
    png.extend_from_slice(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xAE, 0x42, 0x60, 0x82]);
    let tiny = std::fs::read("tests/corpus/media/tiny.png").unwrap();
    let mut shown = String::new();
    for kind in ["anthropic", "openai", "gemini", "ollama"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.pdf"), &pdf).unwrap();
        std::fs::write(dir.path().join("big.png"), &png).unwrap();
        std::fs::write(dir.path().join("tiny.png"), &tiny).unwrap();
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(call_reply(kind)))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(text_reply(kind, "read")))
            .mount(&server)
            .await;
        let (big, big_type) = if kind == "ollama" { (&png, "image") } else { (&pdf, "document") };
        let text = format!(
            r#"{reader}

agent Reader {{
  provider Fake
  model "m"
  tools Page
  input scan: {big_type}
  input photo: image
  prompt "Read {{scan}} beside {{photo}}, \"page\" by page"
}}

contract Read {{
  input scan: {big_type}
  input photo: image
  compute answer = Reader(scan: scan, photo: photo)
  output answer
}}
"#,
            reader = reader_tools(kind, &base(kind, &server))
        );
        std::fs::write(dir.path().join("read.ign"), text).unwrap();
        let scan = if kind == "ollama" { "scan=@big.png" } else { "scan=@big.pdf" };
        let args = ["run", "read.ign", "--input", scan, "--input", "photo=@tiny.png"];
        let output = ignite(dir.path()).args(args).output().unwrap();
        assert!(output.status.success(), "{kind}: {}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(
            serde_json::from_slice::<Value>(&output.stdout).unwrap(),
            json!({"answer": "read"})
        );
        let requests = server.received_requests().await.unwrap();
        assert_eq!(requests.len(), 2, "{kind}");
        for (turn, request) in requests.iter().enumerate() {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let mut media = Vec::new();
            decoded_strings(&body, &mut media);
            assert!(media.contains(big) && media.contains(&tiny), "{kind} turn {}", turn + 1);
            let mut text = String::from_utf8(request.body.clone()).unwrap();
            for (bytes, name) in [(big, "big"), (&tiny, "tiny")] {
                let data = base64::engine::general_purpose::STANDARD.encode(bytes);
                assert_eq!(text.matches(&data).count(), 1, "{kind} turn {}", turn + 1);
                text = text.replace(&data, &format!("<base64 of {name}>"));
            }
            shown.push_str(&format!("{kind} {}: {text}\n", turn + 1));
        }
    }
    insta::assert_snapshot!(shown);
}

/// The provider `Fake` of `kind` at `base` and the tool `Page` that the
/// reading agents of these tests call.
fn reader_tools(kind: &str, base: &str) -> String {
    let provider = fake_provider(kind, base);
    format!(
        r#"
{provider}
tool Page {{
  description "Looks at one page"
  param n: integer
  exec "sh" "-c" "cat > /dev/null; echo seen"
}}
"#
    )
}
