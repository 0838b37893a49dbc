//! [`Recording`]: effects in a JSON Lines file — `--record`, `--replay`,
//! `--journal` and `--resume` are its four modes.
//!
//! The first line is a header, `{"version": 2, "program": {"path": ...,
//! "hash": ...}, "contract": ..., "inputs": {...}}`; every other line is
//! one effect:
//!
//! ```json
//! {"key": {"node": "Report > ask", "seq": 0}, "kind": "model", "name": "anthropic",
//!  "route": "https://api.anthropic.com/v1/messages", "request": {...},
//!  "value": {"status": 200, "response": {...}}}
//! {"key": {"node": "Report > save", "seq": 0}, "kind": "tool", "name": "save",
//!  "request": {"text": "hi"},
//!  "failed": {"message": "`./save.sh` exited with status 1 (no stderr)", "code": "ignite::tools::failed"}}
//! ```
//!
//! A recording or journal also keeps the run's timeline, a `step` line per
//! entry of its trace as it is recorded (see [`crate::trace::Timeline`]):
//! nodes, model and tool calls, waits, skipped arms, `for` items and the
//! run's end, with its failure; `start_us` counts from the start of the
//! process that ran it (a resumed journal holds one run per process,
//! each ending with its `run` step). Only `ignite report` reads them:
//!
//! ```json
//! {"step": {"node": "Report > ask", "kind": "agent", "status": "ok", "start_us": 120, "us": 5210}}
//! ```
//!
//! Images and documents in a line (inputs, requests, values) are stored
//! once each, by SHA-256, in `FILE.blobs/` beside the file (see
//! `blobs.rs`): the line holds a mark where the bytes were.
//!
//! A line is appended (one `write`, see [`LineFile`]) as soon as its
//! effect completes, so a killed run leaves every finished
//! effect in the file; what a kill cut short is ignored when the file is
//! read (and removed before a resumed run appends). `--record` sorts the
//! file by key when the run ends, so a recording is stable under
//! concurrency.
//!
//! Matching: an effect is answered by an unused entry of the same kind,
//! name, URL path and request (the one with the same key first; media on
//! both sides as their marks, so compared by digest); each
//! entry answers once. A journal's tool lines also keep the tool's
//! definition (`"definition"`: a digest of its declaration, types and
//! scripts, see `definition.rs`), and only the same definition matches:
//! `--resume` runs an edited tool again. A replay refuses what it cannot
//! answer and names the first field that differs from the closest entry; a
//! resumed journal runs it live. A resumed journal reuses successes only:
//! failures run again.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::approval::{Approver, Verdict};
use super::blobs::Blobs;
use super::decisions::{self, Decision, Decisions, Mark, State};
use super::lines::{LineFile, exclusive, json_line, whole_lines};
use super::{Effect, EffectKey, EffectKind, EffectStore, Lookup, Outcome};
use crate::failure::PendingCall;
use crate::sync::lock;
use crate::trace::{Entry as TraceEntry, Timeline};

/// Where `--journal` keeps its files, from the current folder.
pub const JOURNAL_DIR: &str = ".ignite/runs";

/// The file format version.
const VERSION: u32 = 2;

/// The program a run ran: its file and a digest of its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramMark {
    /// The file, as it was named.
    pub path: String,
    /// The SHA-256 (hex) of the text of its files, in the order they were read.
    pub hash: String,
}

impl ProgramMark {
    /// The mark of `program`, read from the file `path`.
    #[must_use]
    pub fn of(path: &Path, program: &crate::ir::Program) -> Self {
        let mut text = Vec::new();
        for (_, file) in program.sources.iter() {
            text.extend_from_slice(file.path.to_string_lossy().as_bytes());
            text.push(0);
            text.extend_from_slice(file.text.as_bytes());
            text.push(0);
        }
        Self { path: path.display().to_string(), hash: super::definition::digest(&text) }
    }
}

/// What a recording says about the run it belongs to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// The program run (none in files written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramMark>,
    /// The contract run, when it was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    /// The inputs given.
    #[serde(default)]
    pub inputs: Map<String, Value>,
}

#[derive(Serialize, Deserialize)]
struct Header<'a> {
    version: u32,
    #[serde(flatten)]
    run: Cow<'a, RunHeader>,
}

/// One line: an effect and its outcome; borrowed when written, owned
/// when read.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry<'a> {
    key: Cow<'a, EffectKey>,
    kind: EffectKind,
    name: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "str::is_empty")]
    route: Cow<'a, str>,
    request: Cow<'a, Value>,
    /// A journal's: the effect's definition, so that `--resume` runs an
    /// edited tool again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    definition: Option<Cow<'a, str>>,
    #[serde(flatten)]
    outcome: Cow<'a, Outcome>,
}

/// A `step` line: an entry of the run's timeline.
#[derive(Serialize)]
struct StepLine<'a> {
    step: Step<'a>,
}

#[derive(Serialize)]
struct Step<'a> {
    node: &'a str,
    kind: &'a str,
    status: &'a str,
    start_us: u128,
    us: u128,
    #[serde(skip_serializing_if = "str::is_empty")]
    detail: &'a str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Record,
    Replay,
    Journal,
}

/// A recording or journal file in one of its modes.
#[derive(Debug)]
pub struct Recording {
    path: PathBuf,
    mode: Mode,
    header: RunHeader,
    unused: Mutex<Vec<Option<Entry<'static>>>>,
    /// False when no effect can be answered from the file (a recording, a
    /// new journal): lookups take no lock.
    answers: bool,
    file: Option<LineFile>,
    /// Where its images and documents are kept, once each.
    blobs: Blobs,
    /// A journal's run ID (what its idempotency keys are derived from).
    run: String,
    /// A journal's approvals, per call ID.
    states: Mutex<HashMap<String, State>>,
}

impl Recording {
    /// `--record FILE`: a new file that every effect is appended to.
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn record(path: &Path, header: RunHeader) -> Result<Self, String> {
        let file = create(path, &header)?;
        Ok(Self::new(path, Mode::Record, header, Vec::new(), Some(file)))
    }

    /// `--replay FILE`: answers every effect from the file; nothing is written.
    ///
    /// # Errors
    /// The file cannot be read or is not a recording.
    pub fn replay(path: &Path) -> Result<Self, String> {
        let (header, entries, ..) = load(path)?;
        Ok(Self::new(path, Mode::Replay, header, entries, None))
    }

    /// `--journal`: a new journal `ID.jsonl` in `dir`; returns it and the run ID.
    ///
    /// # Errors
    /// The folder or file cannot be created.
    pub fn journal(dir: &Path, header: RunHeader) -> Result<(Self, String), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the journal folder `{}`: {e}", dir.display()))?;
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let id = format!("{seconds}-{:04x}", fastrand::u16(..));
        let path = journal_path(dir, &id);
        let file = create(&path, &header)?;
        let journal = Self::new(&path, Mode::Journal, header, Vec::new(), Some(file));
        Ok((journal.of_run(&id, HashMap::new()), id))
    }

    /// `--resume ID`: the journal `ID.jsonl` in `dir`; its successful
    /// entries answer effects, and new effects are appended to it.
    ///
    /// # Errors
    /// No such journal, or it cannot be read or appended to.
    pub fn resume(dir: &Path, id: &str) -> Result<Self, String> {
        let path = existing_journal(dir, id)?;
        let file = File::options()
            .append(true)
            .open(&path)
            .map_err(|e| format!("cannot append to `{}`: {e}", path.display()))?;
        // Before anything is read or changed: another process may be
        // appending to it.
        exclusive(&file, &path)?;
        let bytes = read(&path)?;
        let (header, entries, marks, _) = parse(&path, &bytes)?;
        let (header, entries) = restored(&path, header, entries)?;
        let states = decisions::fold(marks).map_err(|e| not_recording(&path, &e))?;
        // What a kill left unfinished goes, so the next line starts clean:
        // cut off at the end, or (a line cut short before others that
        // ended) the whole lines written afresh.
        let mut kept = Vec::with_capacity(bytes.len());
        for (_, line) in whole_lines(&bytes) {
            kept.extend_from_slice(line);
            kept.push(b'\n');
        }
        let file = if bytes.starts_with(&kept) { file } else { replace(&path, &kept)? };
        let file = LineFile::open(&path, file, kept.len() as u64)?;
        let entries =
            entries.into_iter().filter(|e| matches!(*e.outcome, Outcome::Value(_))).collect();
        Ok(Self::new(&path, Mode::Journal, header, entries, Some(file)).of_run(id, states))
    }

    /// The calls of run `id` (journal in `dir`) waiting for approval.
    ///
    /// # Errors
    /// No such journal, or it cannot be read.
    pub fn waiting(dir: &Path, id: &str) -> Result<Vec<PendingCall>, String> {
        let path = existing_journal(dir, id)?;
        let (_, _, marks, _) = load(&path)?;
        let states = decisions::fold(marks).map_err(|e| not_recording(&path, &e))?;
        Ok(decisions::waiting(&states))
    }

    /// Records `decision` for `calls` of run `id` (every waiting call when
    /// empty) in its journal, holding it as a run does (a second `approve`
    /// or a running run is refused). Returns the calls decided.
    ///
    /// # Errors
    /// No such journal, another process holds it, or a call is not waiting.
    pub fn decide(
        dir: &Path,
        id: &str,
        calls: &[String],
        decision: &Decision,
    ) -> Result<Vec<PendingCall>, String> {
        let journal = Self::resume(dir, id)?;
        let states = lock(&journal.states);
        let (marks, decided) = decisions::decide(&states, id, calls, decision)?;
        let file = journal.file.as_ref().ok_or_else(|| journal.error(&"not open"))?;
        for mark in marks {
            file.append_json(&decisions::Line { approval: Cow::Owned(mark) })?;
        }
        Ok(decided)
    }

    fn of_run(mut self, id: &str, states: HashMap<String, State>) -> Self {
        self.run = id.to_owned();
        self.states = Mutex::new(states);
        self
    }

    fn decisions(&self) -> Result<Decisions<'_>, String> {
        let file = self.file.as_ref().filter(|_| self.mode == Mode::Journal);
        let file = file.ok_or_else(|| format!("`{}` is no journal", self.path.display()))?;
        Ok(Decisions { states: &self.states, file })
    }

    fn new(
        path: &Path,
        mode: Mode,
        header: RunHeader,
        entries: Vec<Entry<'static>>,
        file: Option<LineFile>,
    ) -> Self {
        Self {
            path: path.to_owned(),
            mode,
            header,
            answers: mode == Mode::Replay || !entries.is_empty(),
            unused: Mutex::new(entries.into_iter().map(Some).collect()),
            file,
            blobs: Blobs::beside(path),
            run: String::new(),
            states: Mutex::new(HashMap::new()),
        }
    }

    /// The run the file was made for.
    #[must_use]
    pub fn header(&self) -> &RunHeader {
        &self.header
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, error: &dyn std::fmt::Display) -> String {
        write_error(&self.path, error)
    }
}

impl EffectStore for Recording {
    fn lookup(&self, effect: &Effect<'_>) -> Lookup {
        if effect.kind == EffectKind::Agent || !self.answers {
            return Lookup::Miss;
        }
        let route = url_path(effect.route);
        let mut unused = lock(&self.unused);
        let same_call = |e: &Entry| {
            e.kind == effect.kind && e.name == effect.name && url_path(&e.route) == route
        };
        // A journal's entry answers only the same definition; a replay
        // reproduces what was recorded, whatever the program says now (its
        // values are checked against the declared types like live ones).
        let same_definition =
            |e: &Entry| self.mode != Mode::Journal || e.definition.as_deref() == effect.definition;
        // Entries keep their requests' media as marks: the request is
        // compared in that form.
        let marked = self.blobs.marks(effect.request);
        let request = marked.as_ref().unwrap_or(effect.request);
        let matches = |e: &Entry| same_call(e) && *e.request == *request && same_definition(e);
        let found = unused
            .iter()
            .position(|s| s.as_ref().is_some_and(|e| matches(e) && *e.key == *effect.key))
            .or_else(|| unused.iter().position(|s| s.as_ref().is_some_and(matches)));
        if let Some(entry) = found.and_then(|i| unused[i].take()) {
            return Lookup::Hit(entry.outcome.into_owned());
        }
        if self.mode == Mode::Journal {
            return Lookup::Miss;
        }
        let closest = unused
            .iter()
            .flatten()
            .filter(|e| same_call(e))
            .filter_map(|e| difference(&e.request, request, String::new()))
            .min_by_key(|(depth, _)| std::cmp::Reverse(*depth));
        Lookup::Refuse(match closest {
            Some((_, hint)) => hint,
            None => format!("`{}` has no unused call of `{}`", self.path.display(), effect.name),
        })
    }

    fn record(&self, effect: &Effect<'_>, outcome: &Outcome) -> Result<(), String> {
        let Some(file) = self.file.as_ref().filter(|_| effect.kind != EffectKind::Agent) else {
            return Ok(());
        };
        for media in effect.media {
            self.blobs.write(&media.sha256, &media.data)?;
        }
        let request =
            self.blobs.stow(effect.request)?.map_or(Cow::Borrowed(effect.request), Cow::Owned);
        let (Outcome::Value(value) | Outcome::Failed(value)) = outcome;
        let outcome = match (self.blobs.stow(value)?, outcome) {
            (Some(stowed), Outcome::Value(_)) => Cow::Owned(Outcome::Value(stowed)),
            (Some(stowed), Outcome::Failed(_)) => Cow::Owned(Outcome::Failed(stowed)),
            (None, _) => Cow::Borrowed(outcome),
        };
        file.append_json(&Entry {
            key: Cow::Borrowed(effect.key),
            kind: effect.kind,
            name: Cow::Borrowed(effect.name),
            route: Cow::Borrowed(effect.route),
            request,
            definition: effect.definition.filter(|_| self.mode == Mode::Journal).map(Cow::Borrowed),
            outcome,
        })
    }

    fn label(&self) -> &'static str {
        match self.mode {
            Mode::Record => "record",
            Mode::Replay => "replay",
            Mode::Journal => "journal",
        }
    }

    fn offline(&self) -> bool {
        self.mode == Mode::Replay
    }

    /// A recording is rewritten sorted by key (then request), through a
    /// temporary file, so its effects read the same however the run was
    /// scheduled; its timeline follows them, as it was written.
    fn finish(&self) -> Result<(), String> {
        if self.mode != Mode::Record {
            return Ok(());
        }
        let (header, mut entries, _, steps) = parse(&self.path, &read(&self.path)?)?;
        entries.sort_by_cached_key(|e| (e.key.clone(), e.request.to_string()));
        let mut text = Vec::new();
        let header = Header { version: VERSION, run: Cow::Owned(header) };
        json_line(&header, &mut text).map_err(|e| self.error(&e))?;
        for entry in &entries {
            json_line(entry, &mut text).map_err(|e| self.error(&e))?;
        }
        for step in steps {
            text.extend(step);
            text.push(b'\n');
        }
        replace(&self.path, &text).map(drop)
    }
}

/// A recording and a journal keep the run's timeline; a replay writes nothing.
impl Timeline for Recording {
    fn step(&self, entry: &TraceEntry) {
        let Some(file) = &self.file else { return };
        let step = Step {
            node: &entry.path,
            kind: entry.kind,
            status: entry.status,
            start_us: entry.start.as_micros(),
            us: entry.duration.as_micros(),
            detail: &entry.detail,
        };
        // A step that cannot be written (a full disk) costs the page that
        // step; the effects' own lines report the disk.
        let _ = file.append_json(&StepLine { step });
    }
}

/// The journal of run `id` in `dir`, which must exist.
fn existing_journal(dir: &Path, id: &str) -> Result<PathBuf, String> {
    let path = journal_path(dir, id);
    if id.contains(['/', '\\']) || !path.is_file() {
        return Err(format!(
            "no journal for run `{id}` (looked for `{}`); runs started with `--journal` are kept there",
            path.display()
        ));
    }
    Ok(path)
}

fn not_recording(path: &Path, what: &dyn std::fmt::Display) -> String {
    format!("`{}` is not a recording: {what}", path.display())
}

/// A journal decides the calls that need approval in its run.
impl Approver for Recording {
    fn decide(&self, call: &PendingCall, resend_safe: bool) -> Result<Verdict, String> {
        self.decisions()?.decide(call, resend_safe)
    }

    fn starting(&self, call: &PendingCall) -> Result<(), String> {
        self.decisions()?.starting(call)
    }

    fn salt(&self) -> &str {
        &self.run
    }
}

/// `DIR/ID.jsonl`.
fn journal_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.jsonl"))
}

/// Creates `path` with its header line.
fn create(path: &Path, header: &RunHeader) -> Result<LineFile, String> {
    // Not truncated here: `LineFile::open` empties it once it holds it.
    let file = File::options()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("cannot create `{}`: {e}", path.display()))?;
    let file = LineFile::open(path, file, 0)?;
    // The inputs with their media as marks, built without a copy of the media.
    let blobs = Blobs::beside(path);
    let mut inputs = Map::new();
    let mut stowed = false;
    for (name, value) in &header.inputs {
        let value = match blobs.stow(value)? {
            Some(marked) => {
                stowed = true;
                marked
            }
            None => value.clone(),
        };
        inputs.insert(name.clone(), value);
    }
    let run = if stowed {
        Cow::Owned(RunHeader {
            program: header.program.clone(),
            contract: header.contract.clone(),
            inputs,
        })
    } else {
        Cow::Borrowed(header)
    };
    file.append_json(&Header { version: VERSION, run })?;
    Ok(file)
}

/// `path` now holds `bytes`: written to a temporary file, then renamed.
/// Returns the new file, open for appending and held ([`exclusive`]) from
/// before it had its name.
fn replace(path: &Path, bytes: &[u8]) -> Result<File, String> {
    let temp = path.with_extension("jsonl.tmp");
    let mut file =
        File::options().append(true).create(true).open(&temp).map_err(|e| write_error(path, &e))?;
    exclusive(&file, path)?;
    file.set_len(0).map_err(|e| write_error(path, &e))?;
    file.write_all(bytes).map_err(|e| write_error(path, &e))?;
    std::fs::rename(&temp, path).map_err(|e| write_error(path, &e))?;
    Ok(file)
}

fn write_error(path: &Path, error: &dyn std::fmt::Display) -> String {
    format!("cannot write `{}`: {error}", path.display())
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))
}

/// The header, the entries (their values' media back from the blobs) and
/// the approval marks of `path`.
fn load(path: &Path) -> Result<Parsed, String> {
    let (header, entries, marks, steps) = parse(path, &read(path)?)?;
    let (header, entries) = restored(path, header, entries)?;
    Ok((header, entries, marks, steps))
}

/// `header` and `entries` of `path` with the media of the inputs and the
/// outcomes back from its blobs; the requests keep their marks (what
/// [`Recording::lookup`] compares), their blobs checked.
fn restored(
    path: &Path,
    mut header: RunHeader,
    mut entries: Vec<Entry<'static>>,
) -> Result<(RunHeader, Vec<Entry<'static>>), String> {
    let blobs = Blobs::beside(path);
    let mut inputs = Value::Object(std::mem::take(&mut header.inputs));
    blobs.restore(&mut inputs, path)?;
    if let Value::Object(inputs) = inputs {
        header.inputs = inputs;
    }
    let mut checked = HashSet::new();
    for entry in &mut entries {
        blobs.check(&entry.request, path, &mut checked)?;
        let (Outcome::Value(value) | Outcome::Failed(value)) = entry.outcome.to_mut();
        blobs.restore(value, path)?;
    }
    Ok((header, entries))
}

/// A file's header, effect entries, approval marks (with their line
/// numbers) and timeline steps (their lines as they are).
type Parsed = (RunHeader, Vec<Entry<'static>>, Vec<(usize, Mark)>, Vec<Vec<u8>>);

/// The header and the entries in `bytes`, the text of `path`: its whole
/// lines (what a kill cut short is not there).
fn parse(path: &Path, bytes: &[u8]) -> Result<Parsed, String> {
    let bad = |what: String| not_recording(path, &what);
    let mut lines = whole_lines(bytes);
    let header = match lines.next() {
        Some((n, line)) => match serde_json::from_slice::<Header>(line) {
            Ok(h) if h.version == VERSION => h.run.into_owned(),
            Ok(h) => {
                return Err(bad(format!(
                    "version {} (this ignite reads {VERSION}); record it again with `--record`",
                    h.version
                )));
            }
            Err(e) => {
                return Err(bad(format!(
                    "line {n}: {e}; recordings made before version 2 must be recorded again with `--record`"
                )));
            }
        },
        None => return Err(bad("the file is empty".to_owned())),
    };
    let (mut entries, mut marks, mut steps) = (Vec::new(), Vec::new(), Vec::new());
    for (n, line) in lines {
        let error = |e: serde_json::Error| bad(format!("line {n}: {e}"));
        if line.starts_with(br#"{"step":"#) {
            steps.push(line.to_vec());
        } else if line.starts_with(br#"{"approval":"#) {
            let mark: decisions::Line<'static> = serde_json::from_slice(line).map_err(error)?;
            marks.push((n, mark.approval.into_owned()));
        } else {
            entries.push(serde_json::from_slice(line).map_err(error)?);
        }
    }
    Ok((header, entries, marks, steps))
}

fn url_path(url: &str) -> String {
    if url.is_empty() {
        return String::new();
    }
    reqwest::Url::parse(url).map_or_else(|_| url.to_owned(), |u| u.path().to_owned())
}

/// The first difference between `recorded` and `sent` with its depth (deeper
/// means more alike): `at /messages/1/content: recorded "a", sent "b"`.
fn difference(recorded: &Value, sent: &Value, at: String) -> Option<(usize, String)> {
    let depth = at.matches('/').count();
    match (recorded, sent) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let Some(other) = b.get(key) else {
                    return Some((depth, format!("at `{at}/{key}`: recorded a value, sent none")));
                };
                if let Some(d) = difference(value, other, format!("{at}/{key}")) {
                    return Some(d);
                }
            }
            b.keys()
                .find(|k| !a.contains_key(*k))
                .map(|key| (depth, format!("at `{at}/{key}`: sent a value, recorded none")))
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if let Some(d) = difference(x, y, format!("{at}/{i}")) {
                    return Some(d);
                }
            }
            (a.len() != b.len()).then(|| {
                (depth, format!("at `{at}`: recorded {} items, sent {}", a.len(), b.len()))
            })
        }
        (a, b) if a == b => None,
        (a, b) => Some((
            depth,
            format!(
                "at `{}`: recorded {}, sent {}",
                if at.is_empty() { "/" } else { &at },
                short(a),
                short(b)
            ),
        )),
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}...", text.chars().take(57).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(n: u32) -> EffectKey {
        EffectKey { node: "Run > step".to_owned(), item: None, seq: n }
    }

    /// Tool call `n` of `Step`, answered `n + 1`: recorded, or looked up.
    fn call(store: &Recording, n: u32, record: bool) -> Lookup {
        let (key, request) = (key(n), json!({"n": n}));
        let effect = Effect {
            key: &key,
            kind: EffectKind::Tool,
            name: "Step",
            route: "",
            request: &request,
            definition: None,
            cache: None,
            work: None,
            media: &[],
        };
        if record {
            store.record(&effect, &Outcome::Value(json!(n + 1))).expect("recorded");
            return Lookup::Miss;
        }
        store.lookup(&effect)
    }

    fn hit(store: &Recording, n: u32) -> bool {
        matches!(call(store, n, false), Lookup::Hit(Outcome::Value(v)) if v == json!(n + 1))
    }

    #[test]
    fn a_resumed_journal_keeps_the_whole_lines_a_kill_left() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (journal, _) = Recording::journal(dir.path(), RunHeader::default()).expect("journal");
        call(&journal, 0, true);
        call(&journal, 1, true);
        // SIGKILL: a third line was half written when it came. (The
        // killed process's lock went with it: its file is read here, and
        // resumed under another run ID.)
        let mut bytes = std::fs::read(journal.path()).expect("read");
        std::mem::forget(journal);
        let end = bytes.len();
        assert_eq!(bytes.last(), Some(&b'\n'));
        bytes.extend_from_slice(br#"{"key":{"nod"#);
        let id = "killed";
        let path = journal_path(dir.path(), id);
        std::fs::write(&path, &bytes).expect("written");

        let resumed = Recording::resume(dir.path(), id).expect("resumed");
        assert!(hit(&resumed, 0) && hit(&resumed, 1));
        assert!(matches!(call(&resumed, 2, false), Lookup::Miss));
        call(&resumed, 2, true);
        resumed.finish().expect("finished");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with(std::str::from_utf8(&bytes[..end]).expect("text")));
        assert_eq!(text.lines().count(), 4);
        assert!(text.ends_with(r#"{"key":{"node":"Run > step","seq":2},"kind":"tool","name":"Step","request":{"n":2},"value":3}
"#));
    }

    #[test]
    fn a_line_cut_short_before_others_is_dropped_when_resuming() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (journal, id) = Recording::journal(dir.path(), RunHeader::default()).expect("journal");
        for n in 0..3 {
            call(&journal, n, true);
        }
        journal.finish().expect("finished");
        let path = journal.path().to_owned();
        drop(journal);
        // Line 3 (call 1) was reserved first and written last when the
        // kill came: a part of it, zeros, and no `\n`.
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        let mut torn = lines[2].as_bytes()[..20].to_vec();
        torn.resize(lines[2].len() + 1, 0);
        let mut bytes = format!("{}\n{}\n", lines[0], lines[1]).into_bytes();
        bytes.extend(torn);
        bytes.extend(format!("{}\n", lines[3]).bytes());
        bytes.extend([0; 4096]);
        std::fs::write(&path, &bytes).expect("written");

        let resumed = Recording::resume(dir.path(), &id).expect("resumed");
        assert!(hit(&resumed, 0) && hit(&resumed, 2));
        assert!(matches!(call(&resumed, 1, false), Lookup::Miss));
        drop(resumed);
        let kept = std::fs::read_to_string(&path).expect("read");
        assert_eq!(kept, format!("{}\n{}\n{}\n", lines[0], lines[1], lines[3]));
    }

    #[test]
    fn a_recording_is_sorted_and_whole_when_the_run_ends() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("run.jsonl");
        let recording = Recording::record(&path, RunHeader::default()).expect("recording");
        for n in [2, 0, 1] {
            call(&recording, n, true);
        }
        recording.finish().expect("finished");
        let text = std::fs::read_to_string(&path).expect("read");
        let seqs: Vec<u64> = text
            .lines()
            .skip(1)
            .map(|l| {
                serde_json::from_str::<Value>(l).expect("json")["key"]["seq"].as_u64().expect("seq")
            })
            .collect();
        assert_eq!(seqs, [0, 1, 2]);
        let replay = Recording::replay(&path).expect("replay");
        assert!((0..3).all(|n| hit(&replay, n)));
    }
}
