//! [`Recording`]: effects in a JSON Lines file — `--record`, `--replay`,
//! `--journal` and `--resume` are its four modes.
//!
//! The first line is a header, `{"version": 2, "contract": ..., "inputs":
//! {...}}`; every other line is one effect:
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
//! A line is appended (one `write`) as soon as its effect completes, so a
//! killed run leaves every finished effect on disk; a line cut short by a
//! kill is ignored when the file is read (and cut off before a resumed run
//! appends). `--record` sorts the file by key when the run ends, so a
//! recording is stable under concurrency.
//!
//! Matching: an effect is answered by an unused entry of the same kind,
//! name, URL path and request (the one with the same key first); each
//! entry answers once. A replay refuses what it cannot answer and names
//! the first field that differs from the closest entry; a resumed journal
//! runs it live. A resumed journal reuses successes only: failures run
//! again.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Effect, EffectKey, EffectKind, EffectStore, Lookup, Outcome};

/// The file format version.
const VERSION: u32 = 2;

/// What a recording says about the run it belongs to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// The contract run, when it was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    /// The inputs given.
    #[serde(default)]
    pub inputs: Map<String, Value>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    version: u32,
    #[serde(flatten)]
    run: RunHeader,
}

/// One line: an effect and its outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    key: EffectKey,
    kind: EffectKind,
    name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    route: String,
    request: Value,
    #[serde(flatten)]
    outcome: Outcome,
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
    unused: Mutex<Vec<Option<Entry>>>,
    file: Option<Mutex<File>>,
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
        let (header, entries, _) = load(path)?;
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
        Ok((Self::new(&path, Mode::Journal, header, Vec::new(), Some(file)), id))
    }

    /// `--resume ID`: the journal `ID.jsonl` in `dir`; its successful
    /// entries answer effects, and new effects are appended to it.
    ///
    /// # Errors
    /// No such journal, or it cannot be read or appended to.
    pub fn resume(dir: &Path, id: &str) -> Result<Self, String> {
        let path = journal_path(dir, id);
        if !path.is_file() {
            return Err(format!(
                "no journal for run `{id}` (looked for `{}`); runs started with `--journal` are kept there",
                path.display()
            ));
        }
        let (header, entries, whole) = load(&path)?;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| format!("cannot append to `{}`: {e}", path.display()))?;
        // Cut a line a kill left half-written, so the next one starts clean.
        file.set_len(whole).map_err(|e| format!("cannot repair `{}`: {e}", path.display()))?;
        let entries =
            entries.into_iter().filter(|e| matches!(e.outcome, Outcome::Value(_))).collect();
        Ok(Self::new(&path, Mode::Journal, header, entries, Some(file)))
    }

    fn new(
        path: &Path,
        mode: Mode,
        header: RunHeader,
        entries: Vec<Entry>,
        file: Option<File>,
    ) -> Self {
        Self {
            path: path.to_owned(),
            mode,
            header,
            unused: Mutex::new(entries.into_iter().map(Some).collect()),
            file: file.map(Mutex::new),
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

    fn append(&self, entry: &Entry) -> Result<(), String> {
        let Some(file) = &self.file else { return Ok(()) };
        let mut line = serde_json::to_string(entry).map_err(|e| self.error(&e))?;
        line.push('\n');
        let mut file = lock(file);
        crate::shutdown::whole(|| file.write_all(line.as_bytes())).map_err(|e| self.error(&e))
    }

    fn error(&self, error: &dyn std::fmt::Display) -> String {
        format!("cannot write `{}`: {error}", self.path.display())
    }
}

impl EffectStore for Recording {
    fn lookup(&self, effect: &Effect<'_>) -> Lookup {
        if effect.kind == EffectKind::Agent || self.mode == Mode::Record {
            return Lookup::Miss;
        }
        let route = url_path(effect.route);
        let mut unused = lock(&self.unused);
        let same_call = |e: &Entry| {
            e.kind == effect.kind && e.name == effect.name && url_path(&e.route) == route
        };
        let matches = |e: &Entry| same_call(e) && e.request == *effect.request;
        let found = unused
            .iter()
            .position(|s| s.as_ref().is_some_and(|e| matches(e) && e.key == *effect.key))
            .or_else(|| unused.iter().position(|s| s.as_ref().is_some_and(matches)));
        if let Some(entry) = found.and_then(|i| unused[i].take()) {
            return Lookup::Hit(entry.outcome);
        }
        if self.mode == Mode::Journal {
            return Lookup::Miss;
        }
        let closest = unused
            .iter()
            .flatten()
            .filter(|e| same_call(e))
            .filter_map(|e| difference(&e.request, effect.request, String::new()))
            .min_by_key(|(depth, _)| std::cmp::Reverse(*depth));
        Lookup::Refuse(match closest {
            Some((_, hint)) => hint,
            None => format!("`{}` has no unused call of `{}`", self.path.display(), effect.name),
        })
    }

    fn record(&self, effect: &Effect<'_>, outcome: &Outcome) -> Result<(), String> {
        if effect.kind == EffectKind::Agent {
            return Ok(());
        }
        self.append(&Entry {
            key: effect.key.clone(),
            kind: effect.kind,
            name: effect.name.to_owned(),
            route: effect.route.to_owned(),
            request: effect.request.clone(),
            outcome: outcome.clone(),
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
    /// temporary file, so it reads the same however the run was scheduled.
    fn finish(&self) -> Result<(), String> {
        if self.mode != Mode::Record {
            return Ok(());
        }
        let (header, mut entries, _) = load(&self.path)?;
        entries.sort_by_cached_key(|e| (e.key.clone(), e.request.to_string()));
        let mut text = serde_json::to_string(&Header { version: VERSION, run: header })
            .map_err(|e| self.error(&e))?;
        text.push('\n');
        for entry in &entries {
            text.push_str(&serde_json::to_string(entry).map_err(|e| self.error(&e))?);
            text.push('\n');
        }
        let temp = self.path.with_extension("jsonl.tmp");
        std::fs::write(&temp, text).map_err(|e| self.error(&e))?;
        std::fs::rename(&temp, &self.path).map_err(|e| self.error(&e))
    }
}

/// `DIR/ID.jsonl`.
fn journal_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.jsonl"))
}

/// Creates `path` with its header line.
fn create(path: &Path, header: &RunHeader) -> Result<File, String> {
    let mut line = serde_json::to_string(&Header { version: VERSION, run: header.clone() })
        .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
    line.push('\n');
    let mut file =
        File::create(path).map_err(|e| format!("cannot create `{}`: {e}", path.display()))?;
    file.write_all(line.as_bytes())
        .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
    Ok(file)
}

/// The header, the entries and the length of the whole lines of `path`.
fn load(path: &Path) -> Result<(RunHeader, Vec<Entry>, u64), String> {
    let bad = |what: String| format!("`{}` is not a recording: {what}", path.display());
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    // A last line without its newline was cut short by a kill: not written.
    let whole = text.rfind('\n').map_or(0, |i| i + 1);
    let mut lines = text[..whole].lines().enumerate();
    let header = match lines.next() {
        Some((_, line)) => match serde_json::from_str::<Header>(line) {
            Ok(h) if h.version == VERSION => h.run,
            Ok(h) => {
                return Err(bad(format!(
                    "version {} (this ignite reads {VERSION}); record it again with `--record`",
                    h.version
                )));
            }
            Err(e) => {
                return Err(bad(format!(
                    "line 1: {e}; recordings made before version 2 must be recorded again with `--record`"
                )));
            }
        },
        None => return Err(bad("the file is empty".to_owned())),
    };
    let entries = lines
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| bad(format!("line {}: {e}", i + 1)))
        })
        .collect::<Result<_, _>>()?;
    Ok((header, entries, whole as u64))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
