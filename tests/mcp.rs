//! `ignite mcp` driven by real MCP clients: the official Python SDK's
//! (`mcp` on PyPI, pinned in scripts/requirements-test.txt) runs the
//! pytest files of tests/mcp/ against the `ignite` binary over stdio, in
//! both protocol eras.

mod support;

use std::path::Path;
use std::process::Command;

/// Runs `pytest` on `tests/mcp/FILE` with `IGNITE` naming the binary.
fn pytest(file: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp");
    let out = Command::new(support::peers::peer("python", "python"))
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", file])
        .current_dir(&dir)
        .env("IGNITE", env!("CARGO_BIN_EXE_ignite"))
        .env("NO_COLOR", "1")
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "pytest {file} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_python_sdk_client_lists_and_calls_over_stdio() {
    pytest("test_server.py");
}
