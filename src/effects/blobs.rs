//! [`Blobs`]: images and documents of a recording or journal stored once.
//!
//! A media value's bytes go into every request that sends it: a 5 MB scan
//! an agent reads over six model turns is in six request bodies. Before a
//! line is written, every large base64 string whose bytes are an image or
//! a document (alone, or after a `data:...;base64,` prefix, as OpenAI
//! sends them) becomes a mark, `ignite-blob:sha256:HEX`, and its bytes go
//! once into `FILE.blobs/HEX` beside the file (`run.jsonl` →
//! `run.blobs/`). A model request's body comes with these marks already
//! ([`mark_of`]; the bytes beside it as [`Attachment`]s, see
//! `llm/body.rs`). Reading a line puts the bytes of its values back, after
//! checking that the blob is there and still has the SHA-256 its name
//! says: a missing or altered blob is an error naming both files. Its
//! requests keep their marks (their blobs checked the same way): a request
//! is matched by its media's digests, never by their bytes. The result cache keeps its
//! values' media the same way, in its folder's `blobs/` (a blob that is
//! gone there is a miss: the call runs again).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::value::Str;

/// What a string holding media becomes (before its digest).
const MARK: &str = "ignite-blob:sha256:";

/// The shortest base64 string moved to a blob: small ones stay readable in
/// the line.
const SMALLEST: usize = 1024;

/// An image or a document that a request names by its mark (a model
/// request's body holds marks, not the bytes; see `llm/body.rs`): what a
/// store that keeps the request writes as a blob.
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    /// The SHA-256 of its bytes, in hex: what its mark names.
    pub sha256: String,
    /// Its media type (`application/pdf`).
    pub media_type: &'static str,
    /// Its bytes, in standard base64 (shared with the value it came from).
    pub data: Str,
}

/// The mark a stored line holds in place of a string that is `prefix`
/// (`data:TYPE;base64,` or empty) and then `len` characters of base64 of
/// an image or a document whose SHA-256 is `sha256`; `None` when a line
/// keeps such a string as it is (a short one). The rule `Blobs::stow`
/// follows, so a body built with these marks is the body a line stores.
#[must_use]
pub fn mark_of(prefix: &str, len: usize, sha256: &str) -> Option<String> {
    (prefix.len() + len >= SMALLEST).then(|| marked(prefix, sha256))
}

/// `prefix` and then the mark of `hex`.
fn marked(prefix: &str, hex: &str) -> String {
    format!("{prefix}{MARK}{hex}")
}

/// The text before the mark a string ends with, and the digest it names:
/// `None` when the string is not text and then a mark.
#[must_use]
pub fn media_mark(text: &str) -> Option<(&str, &str)> {
    let at = text.find(MARK)?;
    Some((&text[..at], mark(&text[at..])?))
}

/// The blob folder of one recording or journal.
#[derive(Debug, Clone)]
pub(super) struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    /// The folder beside `file`: `run.jsonl` → `run.blobs`.
    pub(super) fn beside(file: &Path) -> Self {
        Self::in_dir(file.with_extension("blobs"))
    }

    /// The folder `dir` (the result cache's `blobs`).
    pub(super) fn in_dir(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// `value` with its media strings as marks, each blob written once;
    /// `None` when it holds no media (nothing to change).
    ///
    /// # Errors
    /// A blob cannot be written.
    pub(super) fn stow(&self, value: &Value) -> Result<Option<Value>, String> {
        if !holds_media(value) {
            return Ok(None);
        }
        self.stowed(value, true).map(Some)
    }

    /// `value` as [`Blobs::stow`] would write it, without writing any
    /// blob: what a stored request is compared with. `None` when it holds
    /// no media.
    pub(super) fn marks(&self, value: &Value) -> Option<Value> {
        // Without writing, nothing fails but media that is not base64,
        // which `holds_media` has already ruled out.
        holds_media(value).then(|| self.stowed(value, false).ok()).flatten()
    }

    /// A copy of `value` with its media strings as marks: the media
    /// themselves are never copied, only read into their blobs (when
    /// `write`).
    fn stowed(&self, value: &Value, write: bool) -> Result<Value, String> {
        Ok(match value {
            Value::String(text) => match media_string(text) {
                Some((prefix, data)) => {
                    let hex = crate::media::digest(data).ok_or("media that is not base64")?;
                    if write {
                        self.write(&hex, data)?;
                    }
                    Value::String(marked(prefix, &hex))
                }
                None => value.clone(),
            },
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.stowed(v, write)).collect::<Result<_, _>>()?)
            }
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), self.stowed(v, write)?)))
                    .collect::<Result<_, String>>()?,
            ),
            _ => value.clone(),
        })
    }

    /// Writes blob `hex`, the bytes of base64 `data`, unless it is there
    /// (decoded a piece at a time through a temporary file, so a blob is
    /// whole or absent).
    pub(super) fn write(&self, hex: &str, data: &str) -> Result<(), String> {
        let path = self.dir.join(hex);
        if path.is_file() {
            return Ok(());
        }
        let failed = |e: std::io::Error| format!("cannot write `{}`: {e}", path.display());
        std::fs::create_dir_all(&self.dir).map_err(failed)?;
        // Its own temporary file: two calls of one run may write the same
        // blob at once, and a name shared by them would let one rename the
        // other's file away.
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let write = WRITES.fetch_add(1, Ordering::Relaxed);
        let temp = self.dir.join(format!("{hex}.{}.{write}.tmp", std::process::id()));
        let mut file = std::io::BufWriter::new(std::fs::File::create(&temp).map_err(failed)?);
        let mut bytes = Vec::new();
        for piece in data.as_bytes().chunks(1 << 16) {
            bytes.clear();
            STANDARD.decode_vec(piece, &mut bytes).map_err(|e| e.to_string())?;
            std::io::Write::write_all(&mut file, &bytes).map_err(failed)?;
        }
        file.into_inner().map_err(|e| failed(e.into_error()))?;
        std::fs::rename(&temp, &path).map_err(failed)
    }

    /// Puts the bytes of every mark in `value` back, `file` naming the
    /// recording in errors.
    ///
    /// # Errors
    /// A blob is missing or does not have the SHA-256 its name says.
    pub(super) fn restore(&self, value: &mut Value, file: &Path) -> Result<(), String> {
        match value {
            Value::String(text) => {
                let Some((prefix, hex)) = media_mark(text) else { return Ok(()) };
                let path = self.dir.join(hex);
                let bytes = std::fs::read(&path).map_err(|e| unreadable(file, &path, &e))?;
                if format!("{:x}", Sha256::digest(&bytes)) != hex {
                    return Err(altered(file, &path));
                }
                *text = format!("{prefix}{}", STANDARD.encode(&bytes));
                Ok(())
            }
            Value::Array(items) => items.iter_mut().try_for_each(|v| self.restore(v, file)),
            Value::Object(fields) => fields.values_mut().try_for_each(|v| self.restore(v, file)),
            _ => Ok(()),
        }
    }

    /// Checks that every blob a mark in `value` names is there with the
    /// SHA-256 its name says, as [`Blobs::restore`] does, without putting
    /// the bytes back (a blob is hashed as it is read, once: `checked`
    /// holds the digests already seen).
    ///
    /// # Errors
    /// A blob is missing or does not have the SHA-256 its name says.
    pub(super) fn check(
        &self,
        value: &Value,
        file: &Path,
        checked: &mut HashSet<String>,
    ) -> Result<(), String> {
        match value {
            Value::String(text) => {
                let Some((_, hex)) = media_mark(text) else { return Ok(()) };
                if checked.contains(hex) {
                    return Ok(());
                }
                let path = self.dir.join(hex);
                let mut hasher = Sha256::new();
                std::fs::File::open(&path)
                    .and_then(|mut blob| std::io::copy(&mut blob, &mut hasher))
                    .map_err(|e| unreadable(file, &path, &e))?;
                if format!("{:x}", hasher.finalize()) != hex {
                    return Err(altered(file, &path));
                }
                checked.insert(hex.to_owned());
                Ok(())
            }
            Value::Array(items) => items.iter().try_for_each(|v| self.check(v, file, checked)),
            Value::Object(fields) => fields.values().try_for_each(|v| self.check(v, file, checked)),
            _ => Ok(()),
        }
    }
}

/// The error of a blob at `path`, named by `file`, that cannot be read.
fn unreadable(file: &Path, path: &Path, error: &std::io::Error) -> String {
    format!(
        "`{}` names media stored in `{}`, which cannot be read ({error}): \
         keep the `.blobs` folder beside the file, or record it again",
        file.display(),
        path.display()
    )
}

/// The error of a blob at `path`, named by `file`, whose bytes changed.
fn altered(file: &Path, path: &Path) -> String {
    format!(
        "the media blob `{}` of `{}` was altered (its SHA-256 is not its name): record it again",
        path.display(),
        file.display()
    )
}

/// `value`, a line of the recording or journal `file`, as a page shows it:
/// every media value `{media_type, data}` as `{media_type, bytes,
/// sha256}`, and every other string holding media (base64, a `data:` URL,
/// a blob's mark, as provider requests carry them) as `media image/png, 69
/// bytes, sha256 HEX`. The bytes are never shown; a blob is only measured
/// (its size, its first bytes), never read whole.
pub(crate) fn summarize(value: &mut Value, file: &Path) {
    let blobs = Blobs::beside(file);
    blobs.summarize_in(value);
}

impl Blobs {
    fn summarize_in(&self, value: &mut Value) {
        if let Value::Object(fields) = value
            && fields.len() == 2
            && let (Some(Value::String(media_type)), Some(Value::String(data))) =
                (fields.get("media_type"), fields.get("data"))
            && crate::media::format_of(media_type).is_some()
            && let Some((bytes, hex)) = self.measure(data)
        {
            *value = serde_json::json!({"media_type": media_type, "bytes": bytes, "sha256": hex});
            return;
        }
        match value {
            Value::String(text) => {
                if let Some(summary) = self.summary(text) {
                    *text = summary;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.summarize_in(v)),
            Value::Object(fields) => fields.values_mut().for_each(|v| self.summarize_in(v)),
            _ => {}
        }
    }

    /// The size and SHA-256 of the bytes `data` holds: base64, or the mark
    /// of a blob (its size on disk; 0 when it is gone).
    fn measure(&self, data: &str) -> Option<(u64, String)> {
        if let Some(hex) = mark(data) {
            let size = std::fs::metadata(self.dir.join(hex)).map_or(0, |m| m.len());
            return Some((size, hex.to_owned()));
        }
        crate::media::sniff_base64(data)?;
        let hex = crate::media::digest(data)?;
        Some((crate::media::decoded_len(data) as u64, hex))
    }

    /// The words that stand for a string holding media, `None` for any
    /// other string.
    fn summary(&self, text: &str) -> Option<String> {
        let (prefix, data) = match text.strip_prefix("data:") {
            Some(rest) => text.split_at("data:".len() + rest.find(";base64,")? + ";base64,".len()),
            None => ("", text),
        };
        let from_prefix = prefix.strip_prefix("data:").and_then(|p| p.strip_suffix(";base64,"));
        let media_type = match (from_prefix, mark(data)) {
            (Some(media_type), _) => media_type.to_owned(),
            (None, Some(hex)) => self.sniff_blob(hex)?.to_owned(),
            (None, None) => crate::media::sniff_base64(data)?.media_type.to_owned(),
        };
        let (bytes, hex) = self.measure(data)?;
        Some(format!("media {media_type}, {bytes} bytes, sha256 {hex}"))
    }

    /// The media type of blob `hex` by its first bytes.
    fn sniff_blob(&self, hex: &str) -> Option<&'static str> {
        let mut head = [0u8; 16];
        let mut file = std::fs::File::open(self.dir.join(hex)).ok()?;
        let read = std::io::Read::read(&mut file, &mut head).ok()?;
        Some(crate::media::sniff(&head[..read])?.media_type)
    }
}

/// The digest a mark `ignite-blob:sha256:HEX` names.
fn mark(text: &str) -> Option<&str> {
    let hex = text.strip_prefix(MARK)?;
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hex)
}

/// True when a string of `value` holds media.
fn holds_media(value: &Value) -> bool {
    match value {
        Value::String(text) => media_string(text).is_some(),
        Value::Array(items) => items.iter().any(holds_media),
        Value::Object(fields) => fields.values().any(holds_media),
        _ => false,
    }
}

/// The prefix (`data:TYPE;base64,` or none) and the base64 of a large
/// string whose bytes are an image or a document.
fn media_string(text: &str) -> Option<(&str, &str)> {
    if text.len() < SMALLEST {
        return None;
    }
    let (prefix, data) = match text.strip_prefix("data:") {
        Some(rest) => {
            let comma = rest.find(";base64,")? + ";base64,".len();
            text.split_at("data:".len() + comma)
        }
        None => ("", text),
    };
    crate::media::sniff_base64(data).map(|_| (prefix, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pdf(size: usize) -> String {
        let mut bytes = b"%PDF-1.4\n".to_vec();
        bytes.resize(size, b' ');
        bytes.extend_from_slice(b"%%EOF\n");
        STANDARD.encode(bytes)
    }

    /// Eight threads writing one blob at once each succeed, and leave the
    /// blob whole and no temporary file behind (twenty times: a race).
    #[test]
    fn one_blob_written_at_once_by_many_calls() {
        for _ in 0..20 {
            one_blob_written_at_once();
        }
    }

    fn one_blob_written_at_once() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let blobs = Blobs::beside(&dir.path().join("run.jsonl"));
        let data = pdf(200_000);
        let hex = format!("{:x}", Sha256::digest(STANDARD.decode(&data).expect("base64")));
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| blobs.write(&hex, &data).expect("written"));
            }
        });
        let names: Vec<_> = std::fs::read_dir(&blobs.dir)
            .expect("the blobs folder")
            .map(|e| e.expect("an entry").file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(&hex)]);
        let bytes = std::fs::read(blobs.dir.join(&hex)).expect("the blob");
        assert_eq!(STANDARD.encode(bytes), data);
    }

    #[test]
    fn media_goes_out_once_and_comes_back() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let file = dir.path().join("run.jsonl");
        let blobs = Blobs::beside(&file);
        let data = pdf(5000);
        let url = format!("data:application/pdf;base64,{data}");
        let value = serde_json::json!({"a": data, "b": [url, "short"], "c": "x".repeat(2000)});
        let stowed = blobs.stow(&value).expect("written").expect("changed");
        assert!(stowed["a"].as_str().is_some_and(|s| s.starts_with(MARK)));
        assert!(
            stowed["b"][0]
                .as_str()
                .is_some_and(|s| s.starts_with("data:application/pdf;base64,ignite-blob:"))
        );
        assert_eq!(stowed["c"], value["c"]);
        assert_eq!(std::fs::read_dir(dir.path().join("run.blobs")).expect("blobs").count(), 1);
        let mut back = stowed.clone();
        blobs.restore(&mut back, &file).expect("restored");
        assert_eq!(back, value);
        assert_eq!(blobs.stow(&serde_json::json!({"x": 1})).expect("nothing to write"), None);
        // Altered, then missing.
        let blob = std::fs::read_dir(dir.path().join("run.blobs")).expect("blobs").next();
        let blob = blob.expect("one").expect("an entry").path();
        std::fs::write(&blob, b"%PDF-1.4 changed").expect("altered");
        let altered = blobs.restore(&mut stowed.clone(), &file).expect_err("altered");
        assert!(altered.contains("was altered"), "{altered}");
        std::fs::remove_file(&blob).expect("removed");
        let missing = blobs.restore(&mut stowed.clone(), &file).expect_err("missing");
        assert!(missing.contains("cannot be read"), "{missing}");
    }
}
