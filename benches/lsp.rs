//! How fast `ignite lsp` answers on a 10,000-line program: diagnostics
//! published after a one-character edit (the debounce included, and the
//! check alone), hover and completion.
//!
//! Generates a program of tools, a record type and contracts of chained
//! `compute` nodes (10,000 lines in all), serves it in process over
//! `lsp_server::Connection::memory` (the loop `ignite lsp` runs, minus the
//! pipe), and times each exchange over several rounds, printing the minimum
//! and median. Each edit flips one digit of a literal in the next
//! contract, so every round's text, and its edited declaration, are new
//! (a server that keeps the parses of declarations parses that one
//! again), and every check is whole. Before each edit the bench waits
//! for the server to be idle (a hover answered), as it is between the
//! keystrokes of a person: the server indexes a check after publishing
//! its diagnostics, and that work is timed apart.
//!
//! Run with `cargo bench --bench lsp`.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, missing_docs)]

/// mimalloc, the `ignite` binary's allocator (the server runs in this
/// process: its checks should allocate as `ignite lsp` does).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::{Value, json};

const LINES: usize = 10_000;
const ROUNDS: usize = 30;

/// The default each edit changes (its last digit), one per contract.
const SEED: &str = "seed: integer = 1";

fn main() {
    let dir = std::env::temp_dir().join(format!("ignite-bench-lsp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.ign");
    let (text, hover_at, complete_at) = generate();
    std::fs::write(&path, &text).unwrap();
    let uri = lsp_types::Url::from_file_path(&path).unwrap().to_string();
    println!("program: {} lines, {} bytes", text.lines().count(), text.len());

    let (server, client) = Connection::memory();
    let thread = std::thread::spawn(move || igniter::lsp::serve(server, None));
    let mut next = 0;
    request(&client, &mut next, "initialize", json!({"capabilities": {}}));
    notify(&client, "initialized", json!({}));
    let doc = json!({"uri": uri, "languageId": "ignite", "version": 1, "text": text});
    notify(&client, "textDocument/didOpen", json!({"textDocument": doc}));
    published(&client, &uri);

    let at = |(line, character): (usize, usize)| json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}});
    let mut edits = Vec::new();
    let mut indexed = Vec::new();
    let seeds: Vec<usize> = text.match_indices(SEED).map(|(at, _)| at + SEED.len() - 1).collect();
    assert!(seeds.len() >= ROUNDS, "a contract to edit per round");
    for (round, &seed) in seeds.iter().take(ROUNDS).enumerate() {
        // One digit of another contract each round: a declaration the
        // server has not seen.
        let mut edited = text.clone();
        edited.replace_range(seed..=seed, "2");
        request(&client, &mut next, "textDocument/hover", at(hover_at));
        let start = Instant::now();
        let change = json!({"textDocument": {"uri": uri, "version": round + 2}, "contentChanges": [{"text": edited}]});
        notify(&client, "textDocument/didChange", change);
        published(&client, &uri);
        edits.push(start.elapsed());
        // The hover waits for the index of this check.
        request(&client, &mut next, "textDocument/hover", at(hover_at));
        indexed.push(start.elapsed());
    }
    // A small root that `use`s the big file: its edits re-check the big
    // file too, from the parse kept of it.
    let small = dir.join("small.ign");
    let small_text = |seed: usize| {
        format!(
            "use \"big.ign\"\n\ncontract Edit {{\n  input seed: integer = {seed}\n  compose a = Chain0(item: {{name: \"n\", price: 1.5, count: 2}}, seed: seed)\n  output a\n}}\n"
        )
    };
    std::fs::write(&small, small_text(1)).unwrap();
    let small_uri = lsp_types::Url::from_file_path(&small).unwrap().to_string();
    let doc =
        json!({"uri": small_uri, "languageId": "ignite", "version": 1, "text": small_text(1)});
    notify(&client, "textDocument/didOpen", json!({"textDocument": doc}));
    published(&client, &small_uri);
    let mut used = Vec::new();
    for round in 0..ROUNDS {
        request(&client, &mut next, "textDocument/hover", at(hover_at));
        let start = Instant::now();
        let change = json!({"textDocument": {"uri": small_uri, "version": round + 2}, "contentChanges": [{"text": small_text(round % 9 + 1)}]});
        notify(&client, "textDocument/didChange", change);
        published(&client, &small_uri);
        used.push(start.elapsed());
    }
    let small_check = time(|| {
        let _ = igniter::compile(&small);
    });
    let check = time(|| {
        let _ = igniter::compile_source(path.to_str().unwrap(), &text);
    });
    let hovers = time(|| {
        request(&client, &mut next, "textDocument/hover", at(hover_at));
    });
    let completions = time(|| {
        request(&client, &mut next, "textDocument/completion", at(complete_at));
    });
    println!("{:<44} {:>10} {:>10} {:>6}", "exchange", "min", "median", "runs");
    report("edit → diagnostics published (debounce in)", edits);
    report("edit → index built (a hover answered)", indexed);
    report("check of the program alone (compile_source)", check);
    report("edit of a root that uses it → diagnostics", used);
    report("check of that root alone (no kept parse)", small_check);
    report("hover on a node", hovers);
    report("completion after `.` of a record", completions);
    request(&client, &mut next, "shutdown", Value::Null);
    notify(&client, "exit", Value::Null);
    thread.join().unwrap().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

fn time(mut f: impl FnMut()) -> Vec<Duration> {
    (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect()
}

fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1000.0);
    println!(
        "{what:<44} {:>10} {:>10} {:>6}",
        ms(times[0]),
        ms(times[times.len() / 2]),
        times.len()
    );
}

fn notify(client: &Connection, method: &str, params: Value) {
    client.sender.send(Notification::new(method.to_owned(), params).into()).unwrap();
}

fn request(client: &Connection, next: &mut i32, method: &str, params: Value) -> Value {
    *next += 1;
    let id = RequestId::from(*next);
    client.sender.send(Request::new(id.clone(), method.to_owned(), params).into()).unwrap();
    loop {
        if let Message::Response(response) = client.receiver.recv().unwrap() {
            if response.id == id {
                return response.result.unwrap_or(Value::Null);
            }
        }
    }
}

/// Waits for the diagnostics of `uri`.
fn published(client: &Connection, uri: &str) {
    loop {
        if let Message::Notification(note) = client.receiver.recv().unwrap() {
            if note.method == "textDocument/publishDiagnostics" && note.params["uri"] == uri {
                return;
            }
        }
    }
}

/// A program of `LINES` lines, the (line, column) of a node name to hover
/// and of a place just after `item.` to complete at.
fn generate() -> (String, (usize, usize), (usize, usize)) {
    let mut text =
        String::from("type Item {\n  name: string\n  price: float\n  count: integer\n}\n\n");
    let mut contract = 0;
    let mut hover_at = (0, 0);
    let mut complete_at = (0, 0);
    while text.lines().count() < LINES - 10 {
        let _ = writeln!(
            text,
            "tool Price{contract} {{\n  param item: Item\n  returns item.price * item.count\n}}\n"
        );
        let _ = writeln!(
            text,
            "contract Chain{contract} {{\n  input item: Item\n  input seed: integer = 1"
        );
        let _ = writeln!(text, "  compute n0 = seed + len(item.name)");
        for node in 1..200 {
            if contract == 0 && node == 100 {
                let line = text.lines().count();
                hover_at = (line, 10);
                complete_at = (line, "  compute n100 = n99 + len(item.".len());
            }
            let _ = writeln!(text, "  compute n{node} = n{} + len(item.name) * {node}", node - 1);
        }
        let _ = writeln!(
            text,
            "  compute total = Price{contract}(item: item) + n199\n  output total\n}}\n"
        );
        contract += 1;
    }
    (text, hover_at, complete_at)
}
