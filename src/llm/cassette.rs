//! Record and replay of provider exchanges (`--record FILE`, `--replay FILE`).
//!
//! A recording is a JSON object `{"version": 1, "exchanges": [...]}`; each
//! [`Exchange`] holds the provider label, the URL, the request body and the
//! response status and body — never headers, so never keys. Exchanges are
//! written sorted by provider, URL and request (stable, so repeated
//! identical requests keep their order), which keeps files deterministic
//! under concurrency. Replay matches provider + URL path + body exactly and
//! uses each exchange once, so the order in which concurrent agents ask
//! does not matter.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::LlmError;

/// The recording format version.
pub const VERSION: u32 = 1;

/// One request and its response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// The provider label: its kind (`anthropic`) or its declaration name.
    pub provider: String,
    /// The request URL.
    pub url: String,
    /// The request body.
    pub request: Value,
    /// The response status.
    pub status: u16,
    /// The response body when it is JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// The response body when it is not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_text: Option<String>,
}

impl Exchange {
    /// The response body as the server sent it (JSON re-serialized).
    #[must_use]
    pub fn body_text(&self) -> String {
        match (&self.response, &self.response_text) {
            (Some(json), _) => json.to_string(),
            (None, Some(text)) => text.clone(),
            (None, None) => String::new(),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct File {
    version: u32,
    exchanges: Vec<Exchange>,
}

/// Collects exchanges while recording.
#[derive(Debug)]
pub(crate) struct Recorder {
    path: PathBuf,
    exchanges: Mutex<Vec<Exchange>>,
}

impl Recorder {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self { path, exchanges: Mutex::new(Vec::new()) }
    }

    pub(crate) fn push(&self, provider: &str, url: &str, request: &Value, status: u16, body: &str) {
        let (response, response_text) = match serde_json::from_str(body) {
            Ok(json) => (Some(json), None),
            Err(_) => (None, Some(body.to_owned())),
        };
        let exchange = Exchange {
            provider: provider.to_owned(),
            url: url.to_owned(),
            request: request.clone(),
            status,
            response,
            response_text,
        };
        lock(&self.exchanges).push(exchange);
    }

    /// Writes the file.
    pub(crate) fn write(&self) -> Result<(), LlmError> {
        let mut exchanges = lock(&self.exchanges).clone();
        exchanges
            .sort_by_cached_key(|e| (e.provider.clone(), e.url.clone(), e.request.to_string()));
        let text = serde_json::to_string_pretty(&File { version: VERSION, exchanges })
            .map_err(|e| recording_error(&self.path, &e))?;
        std::fs::write(&self.path, text + "\n").map_err(|e| recording_error(&self.path, &e))
    }
}

/// Serves recorded exchanges.
#[derive(Debug)]
pub(crate) struct Replayer {
    unused: Mutex<Vec<Option<Exchange>>>,
}

impl Replayer {
    pub(crate) fn load(path: &Path) -> Result<Self, LlmError> {
        let text = std::fs::read_to_string(path).map_err(|e| recording_error(path, &e))?;
        let file: File = serde_json::from_str(&text).map_err(|e| recording_error(path, &e))?;
        if file.version != VERSION {
            return Err(recording_error(path, &format!("unsupported version {}", file.version)));
        }
        Ok(Self { unused: Mutex::new(file.exchanges.into_iter().map(Some).collect()) })
    }

    /// Takes the first unused exchange matching the request, or says what differs.
    pub(crate) fn take(
        &self,
        provider: &str,
        url: &str,
        request: &Value,
    ) -> Result<Exchange, String> {
        let path = url_path(url);
        let mut unused = lock(&self.unused);
        let same_route = |e: &Exchange| e.provider == provider && url_path(&e.url) == path;
        if let Some(slot) = unused
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|e| same_route(e) && e.request == *request))
        {
            if let Some(exchange) = slot.take() {
                return Ok(exchange);
            }
        }
        let closest = unused
            .iter()
            .flatten()
            .filter(|e| same_route(e))
            .filter_map(|e| difference(&e.request, request, String::new()))
            .min_by_key(|(depth, _)| std::cmp::Reverse(*depth));
        Err(match closest {
            Some((_, hint)) => hint,
            None => format!("no unused exchange for `{provider}` at `{path}`"),
        })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn recording_error(path: &Path, error: &dyn std::fmt::Display) -> LlmError {
    LlmError::Recording { path: path.to_owned(), message: error.to_string() }
}

fn url_path(url: &str) -> String {
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
