//! What the integration tests that start the real `ignite` binary share.

// Each test crate uses the part it needs.
#![allow(dead_code)]

pub(crate) mod peers;
pub(crate) mod prefixes;
pub(crate) mod tls;

use std::io::{BufRead, BufReader, Lines};
use std::path::Path;
use std::process::{ChildStderr, Command};
use std::time::Duration;

/// `ignite` in `dir`, without colour, with `FAKE_KEY` for the fake
/// providers' `api_key env("FAKE_KEY")`.
pub(crate) fn ignite(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ignite"));
    command.current_dir(dir).env("NO_COLOR", "1").env("FAKE_KEY", "sk-fake");
    command
}

/// An HTTP client for the servers the tests start: ignite's own kind
/// (`igniter::http_client`), as reqwest brings no TLS provider of its own.
pub(crate) fn http() -> reqwest::Client {
    igniter::http_client::builder().build().expect("an HTTP client")
}

/// Reads the stderr of `ignite serve` up to its `listening on URL` line:
/// the URL, and the rest of stderr (the server's writes fail once it is
/// dropped).
pub(crate) fn listening(stderr: ChildStderr) -> (String, Lines<BufReader<ChildStderr>>) {
    let mut lines = BufReader::new(stderr).lines();
    loop {
        let line = lines.next().expect("ignite prints its address").expect("stderr is text");
        if let Some(url) = line.strip_prefix("listening on ") {
            return (url.to_owned(), lines);
        }
    }
}

/// Polls `done` every 20 ms for up to 60 s; `what` names it on a timeout.
pub(crate) async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..3000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Reads one HTTP/1.1 request from `reader` (its head, then
/// `content-length` bytes of body), for the servers the tests start: its
/// body, or `None` when the connection ends before a request.
pub(crate) fn read_request(reader: &mut impl BufRead) -> std::io::Result<Option<Vec<u8>>> {
    let mut length = 0;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(body))
}
