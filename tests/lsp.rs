//! `ignite lsp`: in-process transcripts over `lsp_server::Connection::memory`
//! (each case of `tests/lsp/cases/` a file whose `# ^ request` comments
//! ask at the column of `^` on the line above; the answers are snapshots;
//! lines ending in `# typed` are typed into the case after it was opened
//! without them),
//! the bad-input and every-prefix robustness checks, and the end-to-end
//! runs with real clients: `pytest-lsp` (`tests/lsp/test_*.py`) and headless
//! Neovim, both against the built binary.

mod support;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(20);

/// A client talking to a server running in this process.
struct Client {
    conn: Connection,
    next: i32,
    /// Notifications received and not yet looked at.
    notes: Vec<Notification>,
    server: Option<JoinHandle<Result<(), String>>>,
}

impl Client {
    fn start() -> Client {
        let (server, conn) = Connection::memory();
        let exe = PathBuf::from(env!("CARGO_BIN_EXE_ignite"));
        let server = std::thread::spawn(move || igniter::lsp::serve(server, Some(exe)));
        let mut client = Client { conn, next: 0, notes: Vec::new(), server: Some(server) };
        let caps = json!({"textDocument": {"hover": {"contentFormat": ["markdown"]}}});
        client.request("initialize", json!({"capabilities": caps})).expect("initialize answers");
        client.notify("initialized", json!({}));
        client
    }

    fn notify(&self, method: &str, params: Value) {
        self.conn
            .sender
            .send(Notification::new(method.to_owned(), params).into())
            .expect("the server listens");
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next += 1;
        let id = RequestId::from(self.next);
        self.conn
            .sender
            .send(Request::new(id.clone(), method.to_owned(), params).into())
            .expect("the server listens");
        loop {
            match self.conn.receiver.recv_timeout(TIMEOUT).expect("the server answers in time") {
                Message::Response(Response { id: got, result, error }) if got == id => {
                    return match error {
                        Some(e) => Err(e.message),
                        None => Ok(result.unwrap_or(Value::Null)),
                    };
                }
                Message::Notification(note) => self.notes.push(note),
                _ => {}
            }
        }
    }

    /// The next notification `method` whose params satisfy `keep`.
    fn wait(&mut self, method: &str, keep: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(at) = self.notes.iter().position(|n| n.method == method && keep(&n.params))
            {
                return self.notes.remove(at).params;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.conn.receiver.recv_timeout(left) {
                Ok(Message::Notification(note)) => self.notes.push(note),
                Ok(_) => {}
                Err(e) => panic!("no `{method}` arrived: {e}; seen: {:?}", self.notes),
            }
        }
    }

    /// The diagnostics published next for `uri` (older ones dropped).
    fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        self.notes.retain(|n| n.params["uri"] != uri);
        let params = self.wait("textDocument/publishDiagnostics", |p| p["uri"] == uri);
        params["diagnostics"].as_array().cloned().unwrap_or_default()
    }

    /// The diagnostics of open document `uri` at `version` (earlier
    /// versions' may still be on their way).
    fn diagnostics_of(&mut self, uri: &str, version: i32) -> Vec<Value> {
        let params = self.wait("textDocument/publishDiagnostics", |p| {
            p["uri"] == uri && p["version"] == version
        });
        params["diagnostics"].as_array().cloned().unwrap_or_default()
    }

    fn open(&self, uri: &str, text: &str) {
        let doc = json!({"uri": uri, "languageId": "ignite", "version": 1, "text": text});
        self.notify("textDocument/didOpen", json!({"textDocument": doc}));
    }

    fn change(&self, uri: &str, version: i32, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
    }

    fn stop(mut self) {
        self.request("shutdown", Value::Null).expect("shutdown answers");
        self.notify("exit", Value::Null);
        let server = self.server.take().expect("a server");
        server.join().expect("the server does not panic").expect("the server ends cleanly");
    }
}

fn url(path: &Path) -> String {
    lsp_types::Url::from_file_path(path).expect("an absolute path").to_string()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The place `line:col` (1-based) of an LSP position.
fn at(position: &Value) -> String {
    format!(
        "{}:{}",
        position["line"].as_u64().unwrap_or(0) + 1,
        position["character"].as_u64().unwrap_or(0) + 1
    )
}

/// `file:line:col` of an LSP location, the file relative to the cases.
fn place(location: &Value, base: &str) -> String {
    let uri = location["uri"].as_str().unwrap_or_default();
    format!("{}:{}", uri.strip_prefix(base).unwrap_or(uri), at(&location["range"]["start"]))
}

/// The requests of a case: `# ^ METHOD [ARG]` lines, each at the column
/// of `^` on the closest line above that is not a request.
fn markers(text: &str) -> Vec<(u32, u32, String)> {
    let mut found = Vec::new();
    let mut target = 0;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match trimmed.strip_prefix('#').map(str::trim_start) {
            Some(rest) if rest.starts_with("^ ") => {
                let column = line.find('^').expect("a caret") as u32;
                found.push((target, column, rest[2..].trim().to_owned()));
            }
            _ => target = n as u32,
        }
    }
    found
}

/// One answer, in words.
fn describe(method: &str, result: &Result<Value, String>, base: &str) -> String {
    let value = match result {
        Ok(value) => value,
        Err(message) => return format!("error: {message}"),
    };
    match method {
        "hover" => value["contents"]["value"].as_str().unwrap_or("null").to_owned(),
        "definition" if value.is_null() => "null".to_owned(),
        "definition" => place(value, base),
        "references" => value
            .as_array()
            .map(|refs| refs.iter().map(|r| place(r, base)).collect::<Vec<_>>().join("\n"))
            .unwrap_or_else(|| "null".to_owned()),
        "completion" => value
            .as_array()
            .map(|items| {
                items.iter().filter_map(|i| i["label"].as_str()).collect::<Vec<_>>().join(" ")
            })
            .unwrap_or_else(|| "null".to_owned()),
        "prepareRename" if value.is_null() => "null".to_owned(),
        "prepareRename" => format!("{}-{}", at(&value["start"]), at(&value["end"])),
        "rename" => {
            let mut edits: Vec<String> = Vec::new();
            for (uri, list) in value["changes"].as_object().into_iter().flatten() {
                for edit in list.as_array().into_iter().flatten() {
                    let file = uri.strip_prefix(base).unwrap_or(uri);
                    edits.push(format!(
                        "{file}:{} -> {}",
                        at(&edit["range"]["start"]),
                        edit["newText"]
                    ));
                }
            }
            edits.sort();
            edits.join("\n")
        }
        _ => serde_json::to_string_pretty(value).unwrap_or_default(),
    }
}

fn outline(symbols: &Value, depth: usize, out: &mut String) {
    for symbol in symbols.as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "{}{} {} ({})",
            "  ".repeat(depth),
            symbol["detail"].as_str().unwrap_or_default(),
            symbol["name"].as_str().unwrap_or_default(),
            at(&symbol["selectionRange"]["start"])
        );
        outline(&symbol["children"], depth + 1, out);
    }
}

/// The semantic tokens, decoded to `line:col length type [declaration]`.
fn tokens(result: &Value, legend: &[&str]) -> String {
    let data: Vec<u64> =
        result["data"].as_array().into_iter().flatten().filter_map(Value::as_u64).collect();
    let (mut line, mut column) = (0, 0);
    let mut out = String::new();
    for token in data.chunks(5) {
        let [delta_line, delta_start, length, kind, modifiers] = token else { continue };
        line += delta_line;
        column = if *delta_line == 0 { column + delta_start } else { *delta_start };
        let decl = if *modifiers == 1 { " declaration" } else { "" };
        let _ =
            writeln!(out, "{}:{} {length} {}{decl}", line + 1, column + 1, legend[*kind as usize]);
    }
    out
}

const LEGEND: [&str; 12] = [
    "function",
    "class",
    "namespace",
    "interface",
    "type",
    "enum",
    "enumMember",
    "property",
    "parameter",
    "variable",
    "string",
    "keyword",
];

/// Every case of `tests/lsp/cases`: its diagnostics, its outline, tokens,
/// lenses and hints, and the answer to each of its `# ^` requests.
#[test]
fn transcripts() {
    let cases = root().join("tests/lsp/cases");
    let base = url(&cases) + "/";
    insta::glob!("lsp/cases/*.ign", |path| {
        let text = std::fs::read_to_string(path).expect("a case");
        let uri = url(path);
        let mut client = Client::start();
        let before: String =
            text.split_inclusive('\n').filter(|l| !l.trim_end().ends_with("# typed")).collect();
        if before == text {
            client.open(&uri, &text);
        } else {
            client.open(&uri, &before);
            client.diagnostics(&uri);
            client.change(&uri, 2, &text);
        }
        let mut out = String::from("== diagnostics\n");
        for d in client.diagnostics(&uri) {
            let _ = writeln!(
                out,
                "{} {} {}",
                at(&d["range"]["start"]),
                d["code"].as_str().unwrap_or_default(),
                d["message"].as_str().unwrap_or_default()
            );
            for related in d["relatedInformation"].as_array().into_iter().flatten() {
                let _ = writeln!(
                    out,
                    "  related {} {}",
                    place(&related["location"], &base),
                    related["message"].as_str().unwrap_or_default()
                );
            }
        }
        let doc = json!({"uri": uri});
        out.push_str("== symbols\n");
        let symbols = client
            .request("textDocument/documentSymbol", json!({"textDocument": doc}))
            .expect("symbols");
        outline(&symbols, 0, &mut out);
        out.push_str("== tokens\n");
        let result = client
            .request("textDocument/semanticTokens/full", json!({"textDocument": doc}))
            .expect("tokens");
        out.push_str(&tokens(&result, &LEGEND));
        out.push_str("== lenses\n");
        let lenses =
            client.request("textDocument/codeLens", json!({"textDocument": doc})).expect("lenses");
        for lens in lenses.as_array().into_iter().flatten() {
            let command = &lens["command"];
            let _ = writeln!(
                out,
                "{} {} {} {}",
                at(&lens["range"]["start"]),
                command["title"].as_str().unwrap_or_default(),
                command["command"].as_str().unwrap_or_default(),
                command["arguments"][1]
            );
        }
        out.push_str("== hints\n");
        let whole =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 100000, "character": 0}});
        let hints = client
            .request("textDocument/inlayHint", json!({"textDocument": doc, "range": whole}))
            .expect("hints");
        for hint in hints.as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "{} {}",
                at(&hint["position"]),
                hint["label"].as_str().unwrap_or_default()
            );
        }
        for (line, character, request) in markers(&text) {
            let (method, arg) = request.split_once(' ').unwrap_or((request.as_str(), ""));
            let position = json!({"line": line, "character": character});
            let mut params = json!({"textDocument": doc, "position": position, "newName": arg});
            if method == "references" {
                params["context"] = json!({"includeDeclaration": true});
            }
            let lsp_method = match method {
                "hover" => "textDocument/hover",
                "definition" => "textDocument/definition",
                "references" => "textDocument/references",
                "completion" => "textDocument/completion",
                "prepareRename" => "textDocument/prepareRename",
                "rename" => "textDocument/rename",
                other => panic!("unknown request `{other}` in {}", path.display()),
            };
            let result = client.request(lsp_method, params);
            let _ = writeln!(
                out,
                "== {}:{} {request}\n{}",
                line + 1,
                character + 1,
                describe(method, &result, &base)
            );
        }
        client.stop();
        let folder = cases.display().to_string();
        insta::with_settings!({filters => vec![(folder.as_str(), "[cases]")]}, {
            insta::assert_snapshot!(out);
        });
    });
}

/// Diagnostics follow the text: published on open (for the root and the
/// files it `use`s), after a change, and cleared when fixed; positions are
/// UTF-16.
#[test]
fn diagnostics_follow_edits_across_files() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let lib = dir.path().join("lib.ign");
    std::fs::write(&lib, "type Item {\n  name: strin\n}\n").expect("write");
    let main = dir.path().join("main.ign");
    let text = "use \"lib.ign\"\n\ncontract C {\n  input x: string\n  compute y = \"😀\" + zz\n  output y\n}\n";
    std::fs::write(&main, text).expect("write");
    let (main_uri, lib_uri) = (url(&main), url(&lib));
    let mut client = Client::start();
    client.open(&main_uri, text);
    let in_lib = client.diagnostics(&lib_uri);
    assert_eq!(in_lib.len(), 1, "{in_lib:?}");
    assert_eq!(in_lib[0]["code"], "ignite::lower::unknown_type");
    assert!(in_lib[0]["message"].as_str().unwrap_or_default().contains("help:"), "{in_lib:?}");
    // Fix the library on disk and the root in the editor: both clear.
    std::fs::write(&lib, "type Item {\n  name: string\n}\n").expect("write");
    client.change(&main_uri, 2, &text.replace("zz", "x"));
    assert_eq!(client.diagnostics(&lib_uri), Vec::<Value>::new());
    // A name after an emoji: the column counts UTF-16 units (the emoji is two).
    client.change(&main_uri, 3, text);
    let in_main = client.diagnostics_of(&main_uri, 3);
    let unknown = in_main
        .iter()
        .find(|d| d["code"] == "ignite::lower::unknown_name")
        .expect("the unknown name");
    assert_eq!(unknown["range"]["start"], json!({"line": 4, "character": 21}));
    client.change(&main_uri, 4, &text.replace("zz", "x"));
    assert_eq!(client.diagnostics_of(&main_uri, 4), Vec::<Value>::new());
    client.stop();
}

/// Formatting answers one edit of the whole text to the layout of
/// `ignite fmt`, none for a formatted file, and an error for a file that
/// does not parse.
#[test]
fn formatting_rewrites_the_whole_document() {
    let mut client = Client::start();
    let uri = "file:///tmp/ignite-lsp-format.ign";
    let messy = "contract   C {\n compute x=1+2 # sum\n\n\n   output x\n}\n";
    client.open(uri, messy);
    let _ = client.diagnostics(uri);
    let format =
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": true}});
    let edits = client.request("textDocument/formatting", format.clone()).expect("an edit");
    let tidy = "contract C {\n  compute x = 1 + 2 # sum\n\n  output x\n}\n";
    assert_eq!(
        edits,
        json!([{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 6, "character": 0}}, "newText": tidy}])
    );
    client.change(uri, 2, tidy);
    assert_eq!(client.request("textDocument/formatting", format.clone()), Ok(json!([])));
    client.change(uri, 3, "contract C {\n  compute x =\n");
    let refused = client.request("textDocument/formatting", format).expect_err("syntax errors");
    assert!(refused.contains("has syntax errors"), "{refused}");
    client.stop();
}

/// Bad input gets an answer, never a crash: positions past the end, a
/// document never opened, an unknown method, a `use` cycle, a file deleted
/// while open, a `use`d file that is not UTF-8, a 10 MB line.
#[test]
fn bad_input_gets_clean_answers() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let a = dir.path().join("a.ign");
    let b = dir.path().join("b.ign");
    std::fs::write(&a, "use \"b.ign\"\n").expect("write");
    std::fs::write(&b, "use \"a.ign\"\n").expect("write");
    let bin = dir.path().join("bin.ign");
    std::fs::write(&bin, [0xff, 0xfe, 0x00, 0x41]).expect("write");
    let user = dir.path().join("user.ign");
    let mut client = Client::start();
    client.open(&url(&a), "use \"b.ign\"\n");
    // The `use` that closes the cycle is `b.ign`'s.
    let cycle = client.diagnostics(&url(&b));
    assert!(cycle.iter().any(|d| d["code"] == "ignite::import::cycle"), "{cycle:?}");
    client.open(&url(&user), "use \"bin.ign\"\n");
    let unreadable = client.diagnostics(&url(&user));
    assert!(
        unreadable
            .iter()
            .any(|d| d["message"].as_str().unwrap_or_default().contains("not valid UTF-8")),
        "{unreadable:?}"
    );
    std::fs::remove_file(&a).expect("remove");
    // Deleted while open: the editor's text is checked all the same.
    client.change(&url(&a), 2, "contract A {\n  compute x = 1\n  output x\n}\n");
    assert_eq!(client.diagnostics(&url(&a)), Vec::<Value>::new());
    let doc = json!({"uri": url(&a)});
    for method in [
        "textDocument/hover",
        "textDocument/definition",
        "textDocument/completion",
        "textDocument/prepareRename",
    ] {
        let far =
            json!({"textDocument": doc, "position": {"line": 4_000_000, "character": 99_999}});
        assert!(client.request(method, far).is_ok(), "{method} past the end");
    }
    // Right after a character of several bytes that is not a letter.
    client.change(&url(&a), 3, "contract A {\n  compute x = \"😀\"😀\n");
    let _ = client.diagnostics(&url(&a));
    for character in 0..20 {
        let after = json!({"textDocument": doc, "position": {"line": 1, "character": character}});
        assert!(client.request("textDocument/completion", after).is_ok());
    }
    let never = json!({"textDocument": {"uri": "file:///nowhere/x.ign"}, "position": {"line": 0, "character": 0}});
    let refused = client.request("textDocument/hover", never).expect_err("not open");
    assert!(refused.contains("is not open"), "{refused}");
    let unknown = client.request("textDocument/moniker", json!({})).expect_err("unknown method");
    assert!(unknown.contains("not supported"), "{unknown}");
    let huge = format!(
        "contract Big {{\n  compute x = \"{}\"\n  output x\n}}\n",
        "a".repeat(10 * 1024 * 1024)
    );
    let big = dir.path().join("big.ign");
    client.open(&url(&big), &huge);
    assert_eq!(client.diagnostics(&url(&big)), Vec::<Value>::new());
    let end = json!({"textDocument": {"uri": url(&big)}, "position": {"line": 1, "character": 5_000_000}});
    assert!(client.request("textDocument/hover", end.clone()).is_ok());
    assert!(client.request("textDocument/completion", end).is_ok());
    let tokens = client
        .request("textDocument/semanticTokens/full", json!({"textDocument": {"uri": url(&big)}}));
    assert!(tokens.is_ok());
    client.stop();
}

/// The server ends when its client hangs up without `exit`.
#[test]
fn the_server_ends_when_the_client_hangs_up() {
    let mut client = Client::start();
    client.open("file:///tmp/ignite-lsp-hangup.ign", "contract C {\n");
    let _ = client.diagnostics("file:///tmp/ignite-lsp-hangup.ign");
    let server = client.server.take().expect("a server");
    drop(client);
    let deadline = Instant::now() + TIMEOUT;
    while !server.is_finished() {
        assert!(Instant::now() < deadline, "the server outlived its client");
        std::thread::sleep(Duration::from_millis(10));
    }
    server.join().expect("no panic").expect("a clean end");
}

/// The `ignite lsp` process ends (exit 0) when its standard input closes,
/// without `shutdown` or `exit`: no orphan server after a crashed editor.
#[test]
fn the_binary_ends_when_stdin_closes() {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    let mut child = Command::new(env!("CARGO_BIN_EXE_ignite"))
        .arg("lsp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("ignite lsp starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
            .to_string();
    write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
    stdin.flush().expect("flush");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut length = 0;
    loop {
        let mut line = String::new();
        stdout.read_line(&mut line).expect("a header");
        if let Some(n) = line.trim().strip_prefix("Content-Length: ") {
            length = n.parse().expect("a length");
        }
        if line.trim().is_empty() {
            break;
        }
    }
    let mut answer = vec![0; length];
    stdout.read_exact(&mut answer).expect("the answer");
    let answer: Value = serde_json::from_slice(&answer).expect("JSON");
    assert!(
        answer["result"]["capabilities"]["hoverProvider"].as_bool().unwrap_or(false),
        "{answer}"
    );
    drop(stdin);
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("the server runs") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("ignite lsp outlived its closed standard input");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status}");
}

/// Every `.ign` file of `tests/corpus` and `contracts`.
fn fixtures() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "ign") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("tests/corpus"), &mut out);
    walk(&root().join("contracts"), &mut out);
    out.sort();
    out
}

/// Every prefix of every fixture answers: a half-typed file never crashes
/// or hangs the server. Cut at every character boundary (see
/// `support::prefixes`). At every cut, the requests of a cursor there
/// (hover, definition, completion); at each line end, every
/// request kind at five places (the start, the middle, the cut, past the
/// last line, past the line's end) and the whole-document ones. The cuts
/// are shared out over the machine's cores, a server each.
#[test]
fn every_request_answers_on_every_prefix() {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|scope| {
        for share in 0..threads {
            scope.spawn(move || answer_on_prefixes(share, threads));
        }
    });
}

/// The prefixes of every fixture whose number is `share` modulo `of`,
/// each asked about as [`every_request_answers_on_every_prefix`] says.
fn answer_on_prefixes(share: usize, of: usize) {
    let mut client = Client::start();
    let mut version = 1;
    for path in fixtures() {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let uri = url(&path);
        client.open(&uri, "");
        let doc = json!({"uri": uri});
        for cut in support::prefixes::cuts(&text).skip(share).step_by(of) {
            let prefix = &text[..cut];
            version += 1;
            client.change(&uri, version, prefix);
            let lines = prefix.lines().count() as u64;
            let last = prefix.lines().last().map_or(0, |l| l.encode_utf16().count() as u64);
            let line_end = text[cut..].starts_with('\n');
            let cursor = (lines.saturating_sub(1), last);
            let places: &[(u64, u64)] = if line_end {
                &[(0, 0), (lines / 2, 4), cursor, (lines + 3, 0), (cursor.0, last + 40)]
            } else {
                &[cursor]
            };
            let methods: &[&str] = if line_end {
                &[
                    "textDocument/hover",
                    "textDocument/definition",
                    "textDocument/references",
                    "textDocument/completion",
                    "textDocument/prepareRename",
                    "textDocument/rename",
                ]
            } else {
                &["textDocument/hover", "textDocument/definition", "textDocument/completion"]
            };
            for &(line, character) in places {
                let position = json!({"line": line, "character": character});
                let params = json!({"textDocument": doc, "position": position, "newName": "renamed", "context": {"includeDeclaration": true}});
                for method in methods {
                    let answer = client.request(method, params.clone());
                    // An error response is an answer; one the server could not give is a bug.
                    if let Err(e) = &answer {
                        assert!(
                            !e.contains("failed inside"),
                            "{method} on {}: {e}",
                            path.display()
                        );
                    }
                }
            }
            if !line_end {
                continue;
            }
            let whole = json!({"start": {"line": 0, "character": 0}, "end": {"line": lines + 1, "character": 0}});
            for (method, params) in [
                ("textDocument/documentSymbol", json!({"textDocument": doc})),
                ("textDocument/semanticTokens/full", json!({"textDocument": doc})),
                ("textDocument/codeLens", json!({"textDocument": doc})),
                ("textDocument/inlayHint", json!({"textDocument": doc, "range": whole})),
            ] {
                client
                    .request(method, params)
                    .unwrap_or_else(|e| panic!("{method} on {}: {e}", path.display()));
            }
        }
        client.notify("textDocument/didClose", json!({"textDocument": doc}));
        client.notes.clear();
    }
    client.stop();
}

/// The end-to-end tests of `tests/lsp/test_*.py`: `pytest-lsp` drives the
/// built `ignite lsp` through every feature, as VS Code and as Neovim.
#[test]
fn pytest_lsp_drives_the_binary() {
    let python = support::peers::peer("python", "python");
    let out = Command::new(python)
        .args(["-m", "pytest", "tests/lsp", "-q", "-p", "no:cacheprovider"])
        .current_dir(root())
        .env("IGNITE_BIN", env!("CARGO_BIN_EXE_ignite"))
        .output()
        .expect("pytest runs");
    assert!(
        out.status.success(),
        "pytest failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Real Neovim, headless, starts `ignite lsp` on a broken file, receives
/// its diagnostics, formats another file through the server and writes
/// both to a file this test reads.
#[test]
fn neovim_receives_diagnostics_and_formats() {
    let nvim = support::peers::peer("neovim", "nvim");
    let dir = tempfile::tempdir().expect("a temp dir");
    let broken = dir.path().join("broken.ign");
    std::fs::write(&broken, "contract C {\n  compute y = missing + 1\n  output y\n}\n")
        .expect("write");
    let messy = dir.path().join("messy.ign");
    std::fs::write(&messy, "contract   C {\n compute x=1+2\n   output x\n}\n").expect("write");
    let report = dir.path().join("report.txt");
    let script = root().join("tests/lsp/neovim.lua");
    let mut child = Command::new(nvim)
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-n"])
        .arg("-c")
        .arg(format!("luafile {}", script.display()))
        .arg(&broken)
        .env("IGNITE_BIN", env!("CARGO_BIN_EXE_ignite"))
        .env("IGNITE_REPORT", &report)
        .env("IGNITE_MESSY", &messy)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("nvim starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().expect("nvim runs").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("neovim did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(&report).expect("neovim wrote its report");
    let lines: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
    assert_eq!(lines.get("count"), Some(&"1"), "{text}");
    assert_eq!(lines.get("code"), Some(&"ignite::lower::unknown_name"), "{text}");
    assert_eq!(lines.get("line"), Some(&"1"), "{text}");
    assert_eq!(
        lines.get("formatted"),
        Some(&"contract C {|  compute x = 1 + 2|  output x|}"),
        "{text}"
    );
}
