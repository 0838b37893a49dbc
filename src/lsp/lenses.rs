//! Code lenses "Run test" on each `test` block and "Run" on each contract,
//! the commands they run (the server runs `ignite test` or `ignite run` as
//! a child process and shows the result as a message, the whole output in
//! the log), and inlay hints of the nodes' inferred types.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use lsp_server::{Message, Notification};
use lsp_types::notification::Notification as _;
use lsp_types::{
    CodeLens, ExecuteCommandParams, InlayHint, InlayHintKind, InlayHintLabel, LogMessageParams,
    MessageType, Range, ShowMessageParams, Url, notification,
};
use serde_json::Value;

use super::Doc;
use super::hover::node_type;
use super::index::Kind;
use crate::source::FileId;

/// Runs one `test` block: arguments the document's URL and the test's name.
const RUN_TEST: &str = "ignite.runTest";
/// Runs one contract: arguments the document's URL and the contract's name.
const RUN: &str = "ignite.run";
/// The commands of the code lenses.
pub(crate) const COMMANDS: [&str; 2] = [RUN_TEST, RUN];

/// The longest a command may run before it is stopped.
const TIME_LIMIT: Duration = Duration::from_secs(120);
/// The most of a command's output a message shows (the log has it all).
const MESSAGE_CHARS: usize = 2_000;

/// A lens over each test block and each contract of the document.
#[must_use]
pub(crate) fn lenses(doc: &Doc, uri: &Url) -> Vec<CodeLens> {
    let view = doc.view();
    view.analysis
        .index
        .defs
        .iter()
        .filter(|d| d.span.file == FileId(0))
        .filter_map(|def| {
            let (title, command) = match def.kind {
                Kind::Test => ("Run test", RUN_TEST),
                Kind::Contract => ("Run", RUN),
                _ => return None,
            };
            let range = view.range(def.span)?;
            let arguments = vec![Value::String(uri.to_string()), Value::String(def.name.clone())];
            Some(CodeLens {
                range,
                command: Some(lsp_types::Command {
                    title: title.to_owned(),
                    command: command.to_owned(),
                    arguments: Some(arguments),
                }),
                data: None,
            })
        })
        .collect()
}

/// Starts the command of a lens; its result arrives later as a
/// `window/showMessage` (and the whole output as a `window/logMessage`).
///
/// # Errors
///
/// An unknown command, arguments that are not a `file:` URL and a name, or
/// no `ignite` binary to run.
pub(crate) fn execute(
    params: &ExecuteCommandParams,
    exe: Option<PathBuf>,
    sender: Sender<Message>,
) -> Result<(), String> {
    let [Value::String(uri), Value::String(name)] = params.arguments.as_slice() else {
        return Err(format!("`{}` takes two arguments: a document URL and a name", params.command));
    };
    let path = Url::parse(uri)
        .ok()
        .and_then(|u| u.to_file_path().ok())
        .ok_or_else(|| format!("`{uri}` is not a `file:` URL"))?;
    let Some(exe) = exe else {
        return Err(
            "this server has no `ignite` binary to run; help: start it as `ignite lsp`".to_owned()
        );
    };
    let mut command = Command::new(exe);
    command.arg("--color").arg("never");
    let what = match params.command.as_str() {
        RUN_TEST => {
            command.arg("test").arg(&path).arg("--filter").arg(name);
            format!("test \"{name}\"")
        }
        RUN => {
            command.arg("run").arg(&path).arg("--contract").arg(name);
            let inputs = path.with_extension("inputs.json");
            if inputs.is_file() {
                command.arg("--inputs").arg(inputs);
            }
            format!("contract `{name}`")
        }
        other => {
            return Err(format!(
                "unknown command `{other}`; help: the commands are {}",
                COMMANDS.join(", ")
            ));
        }
    };
    if let Some(dir) = path.parent() {
        command.current_dir(dir);
    }
    std::thread::spawn(move || {
        let (ok, output) = run(command);
        let verdict = if ok { "passed" } else { "failed" };
        let short: String = output.chars().take(MESSAGE_CHARS).collect();
        let show = ShowMessageParams {
            typ: if ok { MessageType::INFO } else { MessageType::ERROR },
            message: format!("{what} {verdict}\n{short}"),
        };
        let log = LogMessageParams { typ: MessageType::LOG, message: format!("{what}:\n{output}") };
        let _ =
            sender.send(Notification::new(notification::LogMessage::METHOD.to_owned(), log).into());
        let _ = sender
            .send(Notification::new(notification::ShowMessage::METHOD.to_owned(), show).into());
    });
    Ok(())
}

/// Runs `command` to its end (or [`TIME_LIMIT`]): whether it succeeded,
/// and its standard output then error.
fn run(mut command: Command) -> (bool, String) {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return (false, format!("cannot start `ignite`: {e}")),
    };
    let pipes = (child.stdout.take(), child.stderr.take());
    let readers = [pipes.0.map(|p| read_all(Box::new(p))), pipes.1.map(|p| read_all(Box::new(p)))];
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < TIME_LIMIT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let mut output: String =
        readers.into_iter().flatten().map(|r| r.join().unwrap_or_default()).collect();
    match status {
        Some(status) => (status.success(), output),
        None => {
            output.push_str(&format!("\nstopped after {} s", TIME_LIMIT.as_secs()));
            (false, output)
        }
    }
}

fn read_all(mut pipe: Box<dyn std::io::Read + Send>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// A hint `: Type` after the name of each `compute`, `compose` and
/// `guard` node in `range`, from the last checked program (read through
/// the document's [`super::View`]); and after a node that may ask models,
/// its worst case (`at worst 30 model calls`, from [`crate::plan`]).
#[must_use]
pub(crate) fn inlay_hints(doc: &Doc, range: Range) -> Vec<InlayHint> {
    let view = doc.view();
    let analysis = view.analysis;
    // A range that starts or ends inside an edit since reaches past it.
    let from = view.offset(range.start).unwrap_or(0);
    let to = view.offset(range.end).unwrap_or(usize::MAX);
    let hint = |position, label: String, kind: Option<InlayHintKind>| InlayHint {
        position,
        label: InlayHintLabel::String(label),
        kind,
        text_edits: None,
        tooltip: None,
        padding_left: None,
        padding_right: None,
        data: None,
    };
    // The worst cases of each contract, planned once per request.
    let mut plans: std::collections::HashMap<usize, Vec<(crate::ir::NodeId, String)>> =
        std::collections::HashMap::new();
    let mut hints = Vec::new();
    for (id, def) in analysis.index.defs.iter().enumerate() {
        if def.kind != Kind::Node
            || def.span.file != FileId(0)
            || !(from..=to).contains(&(def.span.end as usize))
            || analysis.sources.try_slice(def.full).unwrap_or_default().starts_with("input")
        {
            continue;
        }
        if let (Some(ty), Some(at)) = (node_type(doc, analysis, id), view.range(def.span)) {
            hints.push(hint(at.end, format!(": {ty}"), Some(InlayHintKind::TYPE)));
        }
        let calls = (|| {
            let program = doc.program()?;
            let contract = program.contract_named(&analysis.index.defs[def.parent?].name)?;
            let node = program[contract].node_named(&def.name)?;
            let notes = plans
                .entry(contract.index())
                .or_insert_with(|| crate::plan::call_notes(program, contract));
            notes.iter().find(|(n, _)| *n == node).map(|(_, note)| note.clone())
        })();
        if let (Some(calls), Some(at)) = (calls, view.range(def.full)) {
            hints.push(hint(at.end, format!("  {calls}"), None));
        }
    }
    hints
}
