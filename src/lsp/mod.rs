//! `ignite lsp`: a Language Server (LSP 3.17 over stdio) for `.ign` files.
//!
//! Input: an editor's messages. Output: diagnostics of `ignite check` on
//! open and on every change (debounced), definition, references, rename,
//! hover, completion, the outline, semantic tokens, code lenses that run
//! tests and contracts, inlay hints of node types, and formatting.
//!
//! Built on `lsp-server` and `lsp-types`, the crates of rust-analyzer:
//! a synchronous loop over a channel of messages fits a server whose every
//! answer is a lookup in the last check (no async runtime to start, and the
//! same loop runs in memory for the transcript tests). Everything reads the
//! stages of `ignite check`: [`crate::load`] with the open buffers in place
//! of the files (`analysis`), the syntax trees of [`crate::syntax`], the
//! checked [`crate::ir::Program`], and one symbol index built from the
//! syntax trees (`index`). There is no second parser: where a half-typed
//! file does not parse, completion reads the text before the cursor and the
//! last check that parsed.
//!
//! | file | what |
//! | --- | --- |
//! | `analysis.rs` | one check of a root with the open buffers, its diagnostics in LSP's shape |
//! | `index.rs` | declarations and references of the syntax trees |
//! | `text.rs` | UTF-16 positions to byte offsets and back |
//! | `navigate.rs` | definition, references, rename |
//! | `outline.rs` | document symbols, semantic tokens |
//! | `hover.rs` | hover |
//! | `complete.rs` | completion |
//! | `lenses.rs` | code lenses and their commands, inlay hints |
//! | `formatting.rs` | whole-document formatting through [`crate::fmt`] |
//!
//! Every open document is checked as a root, so a file's diagnostics
//! include those of the files it `use`s, published under their own URLs;
//! references and rename gather the answers of every open root. The server
//! ends when its client says `exit` or closes its standard input.

mod analysis;
mod complete;
mod formatting;
mod hover;
mod index;
mod lenses;
mod navigate;
mod outline;
mod text;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{RecvTimeoutError, Sender};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use lsp_types::{
    CodeLensOptions, CompletionOptions, ExecuteCommandOptions, HoverProviderCapability,
    InitializeResult, OneOf, PublishDiagnosticsParams, RenameOptions, SemanticTokensFullOptions,
    SemanticTokensOptions, SemanticTokensServerCapabilities, ServerCapabilities, ServerInfo,
    TextDocumentSyncCapability, TextDocumentSyncKind, Url, notification, request,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use analysis::{Analysis, View};

/// How long the server waits after a change for the next one before it
/// checks. Short: the changes that arrive while a check runs wait in the
/// channel and are checked together after it, so a burst of keystrokes
/// costs a check per check's time, not one per keystroke.
const DEBOUNCE: Duration = Duration::from_millis(5);

/// Serves the editor on standard input and output until it exits or
/// closes its end. `exe` is the `ignite` binary the code lenses run.
///
/// # Errors
///
/// A broken protocol (no `initialize` first, unreadable messages).
pub fn serve_stdio(exe: Option<PathBuf>) -> Result<(), String> {
    let (connection, io_threads) = Connection::stdio();
    serve(connection, exe)?;
    io_threads.join().map_err(|e| format!("the standard input or output failed: {e}"))
}

/// Serves the client at the other end of `connection` until it exits or
/// hangs up. `exe` is the `ignite` binary the code lenses run (none: they
/// answer that they cannot run).
///
/// # Errors
///
/// A broken protocol (no `initialize` first).
pub fn serve(connection: Connection, exe: Option<PathBuf>) -> Result<(), String> {
    crate::on_big_stack(move || {
        // A client that hangs up before the handshake ends is gone, not an error.
        let ended = |e: lsp_server::ProtocolError| {
            if e.channel_is_disconnected() { Ok(()) } else { Err(e.to_string()) }
        };
        let (id, _params) = match connection.initialize_start() {
            Ok(started) => started,
            Err(e) => return ended(e),
        };
        let result = InitializeResult {
            capabilities: capabilities(),
            server_info: Some(ServerInfo {
                name: "ignite".to_owned(),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            }),
        };
        let result = serde_json::to_value(result).map_err(|e| e.to_string())?;
        if let Err(e) = connection.initialize_finish(id, result) {
            return ended(e);
        }
        let mut server = Server::new(connection.sender.clone(), exe);
        server.run(&connection);
        Ok(())
    })
}

fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Right(RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: lsp_types::WorkDoneProgressOptions::default(),
        })),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![".".to_owned(), "(".to_owned(), "\"".to_owned()]),
            ..CompletionOptions::default()
        }),
        document_symbol_provider: Some(OneOf::Left(true)),
        semantic_tokens_provider: Some(SemanticTokensServerCapabilities::SemanticTokensOptions(
            SemanticTokensOptions {
                legend: outline::legend(),
                full: Some(SemanticTokensFullOptions::Bool(true)),
                ..SemanticTokensOptions::default()
            },
        )),
        code_lens_provider: Some(CodeLensOptions { resolve_provider: Some(false) }),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: lenses::COMMANDS.iter().map(|c| (*c).to_owned()).collect(),
            ..ExecuteCommandOptions::default()
        }),
        inlay_hint_provider: Some(OneOf::Left(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        ..ServerCapabilities::default()
    }
}

/// An open document.
#[derive(Debug)]
pub(crate) struct Doc {
    /// Its path on disk (the URL's, or the URL's path for other schemes).
    pub path: PathBuf,
    /// The editor's text.
    pub text: Arc<str>,
    /// The editor's version of the text, sent back with its diagnostics.
    version: i32,
    /// Changed since the last check.
    dirty: bool,
    /// The last check with this document as root.
    pub analysis: Arc<Analysis>,
    /// The last check of this document that parsed (completion reads it
    /// while the text is half-typed).
    pub parsed: Option<Arc<Analysis>>,
    /// The last check with a checked program (node types).
    pub checked: Option<Arc<Analysis>>,
    /// The parses of the files the last check `use`d.
    parses: crate::load::ParseCache,
}

impl Doc {
    /// The best analysis to read names from: the current one when it
    /// parsed, else the last that did.
    #[must_use]
    pub(crate) fn names(&self) -> &Analysis {
        if self.analysis.parsed() {
            &self.analysis
        } else {
            self.parsed.as_deref().unwrap_or(&self.analysis)
        }
    }

    /// The check requests about this document read, for its current text
    /// (see [`View`]).
    #[must_use]
    pub(crate) fn view(&self) -> View<'_> {
        View::new(self.names(), &self.analysis)
    }

    /// The checked program to read types from: the current, else the last.
    #[must_use]
    pub(crate) fn program(&self) -> Option<&crate::ir::Program> {
        self.analysis.program.as_ref().or_else(|| self.checked.as_ref()?.program.as_ref())
    }
}

/// The server's state.
struct Server {
    sender: Sender<Message>,
    docs: HashMap<Url, Doc>,
    /// URLs with diagnostics published, to clear when they are gone.
    published: HashSet<Url>,
    /// When the changed documents are due to be checked.
    due: Option<Instant>,
    /// The `ignite` binary the code lenses run.
    exe: Option<PathBuf>,
    /// `shutdown` was asked: every other request is refused.
    shutting_down: bool,
}

/// A request's answer: its result, or an error code and message.
type Answer = Result<Value, (ErrorCode, String)>;

impl Server {
    fn new(sender: Sender<Message>, exe: Option<PathBuf>) -> Self {
        Self {
            sender,
            docs: HashMap::new(),
            published: HashSet::new(),
            due: None,
            exe,
            shutting_down: false,
        }
    }

    fn run(&mut self, connection: &Connection) {
        loop {
            let message = match self.due {
                Some(due) => {
                    match connection
                        .receiver
                        .recv_timeout(due.saturating_duration_since(Instant::now()))
                    {
                        Ok(message) => message,
                        Err(RecvTimeoutError::Timeout) => {
                            self.check();
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                None => match connection.receiver.recv() {
                    Ok(message) => message,
                    Err(_) => return,
                },
            };
            match message {
                Message::Request(request) => self.request(request),
                Message::Notification(note) if note.method == notification::Exit::METHOD => return,
                Message::Notification(note) => self.notify(note),
                Message::Response(_) => {}
            }
        }
    }

    fn send(&self, message: impl Into<Message>) {
        // A client that went away ends the loop on its next read.
        let _ = self.sender.send(message.into());
    }

    fn notify(&mut self, note: Notification) {
        match note.method.as_str() {
            notification::DidOpenTextDocument::METHOD => {
                if let Some(p) = params::<lsp_types::DidOpenTextDocumentParams>(note.params) {
                    let document = p.text_document;
                    self.open(document.uri, document.text.into(), document.version);
                    self.check();
                }
            }
            notification::DidChangeTextDocument::METHOD => {
                if let Some(p) = params::<lsp_types::DidChangeTextDocumentParams>(note.params) {
                    // Full sync: the last change holds the whole text.
                    if let (Some(doc), Some(change)) = (
                        self.docs.get_mut(&p.text_document.uri),
                        p.content_changes.into_iter().last(),
                    ) {
                        doc.text = change.text.into();
                        doc.version = p.text_document.version;
                        doc.dirty = true;
                        self.due = Some(Instant::now() + DEBOUNCE);
                    }
                }
            }
            notification::DidSaveTextDocument::METHOD => {
                // Files that `use` a saved file may not be open: check all again.
                for doc in self.docs.values_mut() {
                    doc.dirty = true;
                }
                self.check();
            }
            notification::DidCloseTextDocument::METHOD => {
                if let Some(p) = params::<lsp_types::DidCloseTextDocumentParams>(note.params) {
                    self.docs.remove(&p.text_document.uri);
                    for doc in self.docs.values_mut() {
                        doc.dirty = true;
                    }
                    self.check();
                }
            }
            _ => {}
        }
    }

    fn open(&mut self, uri: Url, text: Arc<str>, version: i32) {
        let path = uri.to_file_path().unwrap_or_else(|()| PathBuf::from(uri.path()));
        let analysis = Arc::new(Analysis::default());
        let doc = Doc {
            path,
            text,
            version,
            dirty: true,
            analysis,
            parsed: None,
            checked: None,
            parses: crate::load::ParseCache::default(),
        };
        self.docs.insert(uri, doc);
    }

    /// Checks every changed document and the open documents that read a
    /// changed one, publishes the diagnostics of every file they read, then
    /// indexes the new checks (the diagnostics do not wait for the index).
    fn check(&mut self) {
        self.due = None;
        let changed: Vec<PathBuf> =
            self.docs.values().filter(|d| d.dirty).map(|d| d.path.clone()).collect();
        if changed.is_empty() {
            return;
        }
        let open: HashMap<PathBuf, Arc<str>> =
            self.docs.values().map(|d| (crate::load::key(&d.path), Arc::clone(&d.text))).collect();
        let mut fresh: HashMap<Url, Analysis> = HashMap::new();
        for (uri, doc) in &mut self.docs {
            let reads_changed = changed.iter().any(|path| doc.analysis.file(path).is_some());
            if doc.dirty || reads_changed {
                doc.dirty = false;
                fresh.insert(uri.clone(), Analysis::run(&doc.path, open.clone(), &mut doc.parses));
            }
        }
        let roots = self.docs.iter().map(|(uri, doc)| fresh.get(uri).unwrap_or(&doc.analysis));
        let diagnostics: Vec<_> = roots.map(Analysis::lsp_diagnostics).collect();
        self.publish(diagnostics);
        for (uri, mut analysis) in fresh {
            let Some(doc) = self.docs.get_mut(&uri) else { continue };
            analysis.index(&doc.parses);
            let analysis = Arc::new(analysis);
            if analysis.parsed() {
                doc.parsed = Some(Arc::clone(&analysis));
            }
            if analysis.program.is_some() {
                doc.checked = Some(Arc::clone(&analysis));
            }
            doc.analysis = analysis;
        }
    }

    /// Publishes the diagnostics of every file the open roots read (one
    /// map per root), each once, and clears those of files no longer read
    /// or now clean.
    fn publish(&mut self, roots: Vec<HashMap<Url, Vec<lsp_types::Diagnostic>>>) {
        let mut all: HashMap<Url, Vec<lsp_types::Diagnostic>> = HashMap::new();
        for root in roots {
            for (uri, diagnostics) in root {
                let list = all.entry(uri).or_default();
                for d in diagnostics {
                    if !list.contains(&d) {
                        list.push(d);
                    }
                }
            }
        }
        for uri in std::mem::take(&mut self.published) {
            all.entry(uri).or_default();
        }
        for (uri, diagnostics) in all {
            if !diagnostics.is_empty() {
                self.published.insert(uri.clone());
            }
            // An open document's diagnostics name the version they are of,
            // so a client can drop those of a text it has changed since.
            let version = self.docs.get(&uri).map(|doc| doc.version);
            let params = PublishDiagnosticsParams { uri, diagnostics, version };
            self.send(Notification::new(
                notification::PublishDiagnostics::METHOD.to_owned(),
                params,
            ));
        }
    }

    fn request(&mut self, request: Request) {
        let Request { id, method, params } = request;
        if self.shutting_down {
            self.reply(
                id,
                Err((ErrorCode::InvalidRequest, "the server is shutting down".to_owned())),
            );
            return;
        }
        if method == request::Shutdown::METHOD {
            self.shutting_down = true;
            self.reply(id, Ok(Value::Null));
            return;
        }
        // Answers read the latest text.
        if self.due.is_some() {
            self.check();
        }
        // A bug must cost one answer, not the editor's server.
        let answer =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.answer(&method, params)))
                .unwrap_or_else(|_| {
                    Err((
                        ErrorCode::InternalError,
                        format!("`{method}` failed inside the server; please report it"),
                    ))
                });
        self.reply(id, answer);
    }

    fn reply(&self, id: RequestId, answer: Answer) {
        let response = match answer {
            Ok(result) => Response { id, result: Some(result), error: None },
            Err((code, message)) => Response::new_err(id, code as i32, message),
        };
        self.send(response);
    }

    fn answer(&mut self, method: &str, params: Value) -> Answer {
        match method {
            request::HoverRequest::METHOD => {
                let p: lsp_types::HoverParams = parse(params)?;
                let at = &p.text_document_position_params;
                let doc = self.doc(&at.text_document.uri)?;
                to_json(hover::hover(doc, at.position))
            }
            request::GotoDefinition::METHOD => {
                let p: lsp_types::GotoDefinitionParams = parse(params)?;
                let at = &p.text_document_position_params;
                let doc = self.doc(&at.text_document.uri)?;
                to_json(navigate::definition(doc, at.position))
            }
            request::References::METHOD => {
                let p: lsp_types::ReferenceParams = parse(params)?;
                let at = &p.text_document_position;
                let doc = self.doc(&at.text_document.uri)?;
                let docs: Vec<&Doc> = self.docs.values().collect();
                to_json(navigate::references(
                    doc,
                    &docs,
                    at.position,
                    p.context.include_declaration,
                ))
            }
            request::PrepareRenameRequest::METHOD => {
                let p: lsp_types::TextDocumentPositionParams = parse(params)?;
                let doc = self.doc(&p.text_document.uri)?;
                to_json(navigate::prepare_rename(doc, p.position))
            }
            request::Rename::METHOD => {
                let p: lsp_types::RenameParams = parse(params)?;
                let at = &p.text_document_position;
                let doc = self.doc(&at.text_document.uri)?;
                let docs: Vec<&Doc> = self.docs.values().collect();
                navigate::rename(doc, &docs, at.position, &p.new_name)
                    .map_err(|message| (ErrorCode::InvalidParams, message))
                    .and_then(to_json)
            }
            request::Completion::METHOD => {
                let p: lsp_types::CompletionParams = parse(params)?;
                let at = &p.text_document_position;
                let doc = self.doc(&at.text_document.uri)?;
                to_json(complete::complete(doc, at.position))
            }
            request::DocumentSymbolRequest::METHOD => {
                let p: lsp_types::DocumentSymbolParams = parse(params)?;
                let doc = self.doc(&p.text_document.uri)?;
                to_json(outline::symbols(doc))
            }
            request::SemanticTokensFullRequest::METHOD => {
                let p: lsp_types::SemanticTokensParams = parse(params)?;
                let doc = self.doc(&p.text_document.uri)?;
                to_json(outline::tokens(doc))
            }
            request::CodeLensRequest::METHOD => {
                let p: lsp_types::CodeLensParams = parse(params)?;
                let uri = p.text_document.uri.clone();
                let doc = self.doc(&uri)?;
                to_json(lenses::lenses(doc, &uri))
            }
            request::InlayHintRequest::METHOD => {
                let p: lsp_types::InlayHintParams = parse(params)?;
                let doc = self.doc(&p.text_document.uri)?;
                to_json(lenses::inlay_hints(doc, p.range))
            }
            request::Formatting::METHOD => {
                let p: lsp_types::DocumentFormattingParams = parse(params)?;
                let doc = self.doc(&p.text_document.uri)?;
                formatting::format(doc)
                    .map_err(|message| (ErrorCode::RequestFailed, message))
                    .and_then(to_json)
            }
            request::ExecuteCommand::METHOD => {
                let p: lsp_types::ExecuteCommandParams = parse(params)?;
                lenses::execute(&p, self.exe.clone(), self.sender.clone())
                    .map_err(|message| (ErrorCode::InvalidParams, message))?;
                Ok(Value::Null)
            }
            _ => Err((
                ErrorCode::MethodNotFound,
                format!("`{method}` is not supported by `ignite lsp`"),
            )),
        }
    }

    fn doc(&self, uri: &Url) -> Result<&Doc, (ErrorCode, String)> {
        self.docs.get(uri).ok_or_else(|| {
            (
                ErrorCode::InvalidParams,
                format!("`{uri}` is not open; open it first (`textDocument/didOpen`)"),
            )
        })
    }
}

/// A notification's params, or nothing when they do not fit (a
/// notification has no answer to carry an error).
fn params<P: DeserializeOwned>(value: Value) -> Option<P> {
    serde_json::from_value(value).ok()
}

/// A request's params, or an `InvalidParams` error naming the problem.
fn parse<P: DeserializeOwned>(value: Value) -> Result<P, (ErrorCode, String)> {
    serde_json::from_value(value)
        .map_err(|e| (ErrorCode::InvalidParams, format!("invalid params: {e}")))
}

fn to_json(value: impl serde::Serialize) -> Answer {
    serde_json::to_value(value).map_err(|e| (ErrorCode::InternalError, e.to_string()))
}
