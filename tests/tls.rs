//! `https` to model providers and `http` tools, from the outside: the
//! `ignite` binary against a local HTTPS server whose certificate an
//! authority of the test's own signed. Which roots are trusted
//! (docs/language.md, "TLS"): the system's, which `SSL_CERT_FILE` and
//! `SSL_CERT_DIR` may name, or the Mozilla roots built into ignite when the
//! system has none. MCP servers over `https`, which take the same client,
//! are tested in `mcp_client.rs`.

#![allow(clippy::unwrap_used)] // helpers of the tests below

mod support;

use std::path::Path;

use support::tls::TestCa;

/// An OpenAI-format reply: the provider's answer, and the `http` tool's.
const REPLY: &str = r#"{"choices": [{"message": {"role": "assistant", "content": "over tls"},
  "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}"#;

/// A provider and an `http` tool at `https://127.0.0.1:PORT`, each called
/// by a contract of its own (`Ask`, `Get`).
fn program(port: u16) -> String {
    format!(
        r#"provider Local {{
  kind openai
  base_url "https://127.0.0.1:{port}/v1"
  retries 0
}}
agent Helper {{
  provider Local
  model "test-model"
  input question: string
}}
contract Ask {{
  compute answer = Helper(question: "hi")
  output answer
}}
tool Fetch {{
  http get "https://127.0.0.1:{port}/item"
}}
contract Get {{
  compute fetched = Fetch()
  output fetched
}}
"#
    )
}

/// Runs `contract` of `dir/p.ign` with the system's own roots, or with
/// only those of `cert_file`: stdout, or stderr on a failure.
fn run(dir: &Path, contract: &str, cert_file: Option<&Path>) -> Result<String, String> {
    let mut command = support::ignite(dir);
    command.args(["run", "p.ign", "--contract", contract]);
    command.env_remove("SSL_CERT_FILE").env_remove("SSL_CERT_DIR");
    if let Some(file) = cert_file {
        command.env("SSL_CERT_FILE", file).env("SSL_CERT_DIR", "");
    }
    let out = command.output().unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    if out.status.success() { Ok(text(&out.stdout)) } else { Err(text(&out.stderr)) }
}

#[test]
fn providers_and_http_tools_trust_the_system_roots_or_mozillas_when_it_has_none() {
    let ca = TestCa::new();
    let port = ca.serve(REPLY);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.ign"), program(port)).unwrap();
    for contract in ["Ask", "Get"] {
        // The test's authority is not among the system's roots.
        let untrusted = run(dir.path(), contract, None).unwrap_err();
        assert!(untrusted.contains("UnknownIssuer"), "{contract}: {untrusted}");
        // Named by `SSL_CERT_FILE`, it is trusted.
        let trusted = run(dir.path(), contract, Some(&ca.ca())).unwrap();
        assert!(trusted.contains("over tls"), "{contract}: {trusted}");
        // No roots in the system: the client is still made, and verifies
        // against the Mozilla roots, which do not hold the test's either.
        let none = run(dir.path(), contract, Some(&ca.empty())).unwrap_err();
        assert!(none.contains("UnknownIssuer"), "{contract}: {none}");
    }
}
