//! The floor of `scripts/ab.py`'s agent-loop workload: the same
//! conversation as the agent's, sent by the barest client there is, so
//! that the loop's own cost per request can be read against what any
//! client pays on the same machine in the same run.
//!
//!     floor_client HOST:PORT TURNS
//!
//! One connection, blocking reads and writes on one thread, no TLS, no
//! pool, no JSON library: request `i` (from 0 to TURNS) carries the user's
//! message, then `i` assistant tool calls each followed by its result, in
//! OpenAI's chat shape, as the agent's requests do; a reply is read to its
//! `content-length` and not parsed. Prints the microseconds from the
//! connection's start to the last reply's end. Built by `ab.py` with
//! `rustc -O`; only the standard library is used.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(address), Some(Ok(turns))) = (args.get(1), args.get(2).map(|t| t.parse::<usize>()))
    else {
        eprintln!("usage: floor_client HOST:PORT TURNS");
        std::process::exit(2);
    };
    let started = Instant::now();
    let mut stream = TcpStream::connect(address).expect("connects");
    stream.set_nodelay(true).expect("sets TCP_NODELAY");
    let mut messages = String::from(r#"{"role":"user","content":"go"}"#);
    let mut reply = vec![0u8; 1 << 16];
    for turn in 0..=turns {
        if turn > 0 {
            let call = turn - 1;
            messages.push_str(&format!(
                r#",{{"role":"assistant","content":null,"tool_calls":[{{"id":"c{call}","type":"function","function":{{"name":"step","arguments":"{{\"i\":{call}}}"}}}}]}},{{"role":"tool","tool_call_id":"c{call}","content":"{}"}}"#,
                call + 1
            ));
        }
        let body = format!(
            r#"{{"model":"m","messages":[{messages}],"tools":[{{"type":"function","function":{{"name":"step","description":"Takes one step","parameters":{{"type":"object","properties":{{"i":{{"type":"integer"}}}},"required":["i"],"additionalProperties":false}},"strict":true}}}}]}}"#
        );
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(format!("{head}{body}").as_bytes()).expect("sends");
        let mut got = 0;
        loop {
            if got == reply.len() {
                reply.resize(got * 2, 0);
            }
            let read = stream.read(&mut reply[got..]).expect("reads");
            assert!(read > 0, "the server closed the connection");
            got += read;
            if complete(&reply[..got]) {
                break;
            }
        }
    }
    println!("{}", started.elapsed().as_micros());
}

/// Whether `bytes` hold a whole response: its head and `content-length`
/// bytes of body.
fn complete(bytes: &[u8]) -> bool {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else { return false };
    let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .unwrap_or(0);
    bytes.len() >= end + 4 + length
}
