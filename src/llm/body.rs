//! [`RequestBody`]: a request body whose images and documents are marks,
//! the base64 spliced in only as the body is sent.
//!
//! A wire format builds its body as JSON (`serde_json::Value`), and a JSON
//! value owns its strings: a 10 MB PDF in it would be a 13 MB copy of the
//! base64 the run already holds, and serializing it a third. So a large
//! media string is built as the mark a recording stores in its place
//! (`ignite-blob:sha256:HEX`, after the `data:TYPE;base64,` of a `data:`
//! URL; see `effects/blobs.rs`), and the body keeps the base64 it stands
//! for beside it, shared with the run's value ([`Attachment`]). Stores see
//! the marked JSON, so a replay matches a recorded request by its media's
//! digests. Sending serializes the small JSON around the marks and hands
//! `reqwest` the pieces ([`Pieces`]): the JSON text, then the base64 itself
//! 64 KiB at a time, never copied. The bytes sent are those of the body
//! with its media in place ([`RequestBody::expanded`]), serialized by
//! `serde_json`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;

use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use serde_json::Value;

use super::message::{Content, Message, ModelRequest};
use crate::effects::{Attachment, media_mark};
use crate::value::Str;

/// A request body as stores see it, and the media its marks stand for.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestBody {
    /// The body, each large media string as its mark.
    pub json: Value,
    /// The media named by the marks in `json`, once each.
    pub media: Vec<Attachment>,
}

impl RequestBody {
    /// `json`, built for `request`, with the media of `request` its marks
    /// name.
    #[must_use]
    pub fn new(json: Value, request: &ModelRequest) -> Self {
        let mut media = Vec::new();
        let mut sent = request
            .messages
            .iter()
            .flat_map(|m| match m {
                Message::User(content) => content.as_slice(),
                _ => &[],
            })
            .filter_map(|piece| match piece {
                Content::Media(m) => Some((m, m.sha256()?)),
                _ => None,
            })
            .peekable();
        // A conversation of text has no marks to look for.
        if sent.peek().is_none() {
            return Self { json, media };
        }
        let mut marked = Vec::new();
        marks(&json, &mut marked);
        for (m, hex) in sent {
            if marked.contains(&hex) && !media.iter().any(|a: &Attachment| a.sha256 == hex) {
                media.push(Attachment {
                    sha256: hex.to_owned(),
                    media_type: m.format.media_type,
                    data: m.data.clone(),
                });
            }
        }
        Self { json, media }
    }

    /// The body with its media in place: what is sent, as one JSON value
    /// (a durable journal's step, the bodies tests look at).
    #[must_use]
    pub fn expanded(&self) -> Value {
        expand(&self.json, &self.media)
    }
}

/// The digests the marks in `value` name.
fn marks<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.extend(media_mark(text).map(|(_, hex)| hex)),
        Value::Array(items) => items.iter().for_each(|v| marks(v, out)),
        Value::Object(fields) => fields.values().for_each(|v| marks(v, out)),
        _ => {}
    }
}

/// The media `text` stands for: the `data:` URL prefix before its mark
/// (empty for bare base64) and the attachment, when `text` is the mark of
/// one of `media` (a prefix that is not the attachment's own `data:` URL
/// start is text, never spliced).
fn spliced<'a>(text: &'a str, media: &'a [Attachment]) -> Option<(&'a str, &'a Attachment)> {
    let (prefix, hex) = media_mark(text)?;
    let attachment = media.iter().find(|a| a.sha256 == hex)?;
    let url = prefix
        .strip_prefix("data:")
        .and_then(|p| p.strip_suffix(";base64,"))
        .is_some_and(|t| t == attachment.media_type);
    (prefix.is_empty() || url).then_some((prefix, attachment))
}

fn expand(value: &Value, media: &[Attachment]) -> Value {
    match value {
        Value::String(text) => match spliced(text, media) {
            Some((prefix, attachment)) => {
                let mut full = String::with_capacity(prefix.len() + attachment.data.len());
                full.push_str(prefix);
                full.push_str(&attachment.data);
                Value::String(full)
            }
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| expand(v, media)).collect()),
        Value::Object(fields) => {
            Value::Object(fields.iter().map(|(k, v)| (k.clone(), expand(v, media))).collect())
        }
        _ => value.clone(),
    }
}

/// The most base64 handed to `reqwest` as one piece.
const PIECE: usize = 64 << 10;

/// A body as `reqwest` sends it: its JSON text and media pieces in order,
/// of exactly [`Pieces::len`] bytes in all (its `content-length`).
#[derive(Debug, Clone)]
pub(crate) struct Pieces {
    pieces: VecDeque<Bytes>,
    left: u64,
}

impl Pieces {
    /// The pieces of `json` with the base64 of `media` where their marks
    /// are: the bytes `serde_json` writes for the body with its media in
    /// place.
    pub(crate) fn of(json: &Value, media: &[Attachment]) -> Self {
        let mut out = Self { pieces: VecDeque::new(), left: 0 };
        let mut text = Vec::new();
        if media.is_empty() {
            // No mark to splice: the body is one piece, as `serde_json` writes it.
            self::json(&mut text, json);
        } else {
            out.write(json, media, &mut text);
        }
        out.push(Bytes::from(text));
        out
    }

    /// The size of the body, in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.left
    }

    /// The body for `reqwest`.
    pub(crate) fn into_body(self) -> reqwest::Body {
        reqwest::Body::wrap(self)
    }

    fn push(&mut self, piece: Bytes) {
        if !piece.is_empty() {
            self.left += piece.len() as u64;
            self.pieces.push_back(piece);
        }
    }

    /// Writes `value` as `serde_json` does (compact), into `text` until a
    /// mark, where the text so far and then the media become pieces.
    fn write(&mut self, value: &Value, media: &[Attachment], text: &mut Vec<u8>) {
        match value {
            Value::String(s) => match spliced(s, media) {
                Some((prefix, attachment)) => {
                    // Neither the prefix (`data:TYPE;base64,`) nor base64
                    // has a character JSON escapes.
                    text.push(b'"');
                    text.extend_from_slice(prefix.as_bytes());
                    self.push(Bytes::from(std::mem::take(text)));
                    let all = Bytes::from_owner(Shared(attachment.data.clone()));
                    for start in (0..all.len()).step_by(PIECE) {
                        self.push(all.slice(start..all.len().min(start + PIECE)));
                    }
                    text.push(b'"');
                }
                None => json(text, s),
            },
            Value::Array(items) => {
                text.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        text.push(b',');
                    }
                    self.write(item, media, text);
                }
                text.push(b']');
            }
            Value::Object(fields) => {
                text.push(b'{');
                for (i, (key, item)) in fields.iter().enumerate() {
                    if i > 0 {
                        text.push(b',');
                    }
                    json(text, key);
                    text.push(b':');
                    self.write(item, media, text);
                }
                text.push(b'}');
            }
            scalar => json(text, scalar),
        }
    }
}

/// Appends `value` as `serde_json` writes it.
fn json(text: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
    // Writing to memory cannot fail, and these values have string keys.
    let _ = serde_json::to_writer(text, value);
}

/// A value's base64, shared as the bytes of a piece.
struct Shared(Str);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl http_body::Body for Pieces {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.pieces.pop_front();
        if let Some(piece) = &next {
            self.left -= piece.len() as u64;
        }
        Poll::Ready(next.map(|piece| Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.pieces.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attachment(data: &str) -> Attachment {
        Attachment { sha256: "ab".repeat(32), media_type: "application/pdf", data: Str::from(data) }
    }

    fn joined(pieces: &Pieces) -> Vec<u8> {
        pieces.pieces.iter().flat_map(|p| p.iter().copied()).collect()
    }

    #[test]
    fn the_pieces_are_the_bytes_serde_json_writes() {
        let data = "JVBER".repeat(30_000);
        let media = [attachment(&data)];
        let mark = format!("ignite-blob:sha256:{}", "ab".repeat(32));
        let json = json!({
            "model": "m", "n": 1.5, "ok": true, "none": null, "empty": {}, "list": [],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "a \"quoted\"\n line é \u{1}"},
                {"data": mark},
                {"url": format!("data:application/pdf;base64,{mark}")},
                {"other": format!("data:image/png;base64,{mark}")},
                {"text": format!("see {mark}")},
                {"unknown": format!("ignite-blob:sha256:{}", "cd".repeat(32))},
            ]}],
        });
        let body = RequestBody { json: json.clone(), media: media.to_vec() };
        let expanded = body.expanded();
        assert_eq!(expanded["messages"][0]["content"][1]["data"], json!(data));
        let url = format!("data:application/pdf;base64,{data}");
        assert_eq!(expanded["messages"][0]["content"][2]["url"], json!(url));
        // A mark after any other prefix, or of media the body does not
        // have, stays text.
        for (i, field) in [(3, "other"), (4, "text"), (5, "unknown")] {
            assert_eq!(expanded["messages"][0]["content"][i], json["messages"][0]["content"][i]);
            assert!(expanded["messages"][0]["content"][i][field].is_string());
        }
        let pieces = Pieces::of(&body.json, &body.media);
        let expected = serde_json::to_vec(&expanded).expect("serialized");
        assert_eq!(joined(&pieces), expected);
        assert_eq!(pieces.len(), expected.len() as u64);
        assert!(pieces.pieces.iter().all(|p| p.len() <= PIECE.max(200)));
        // Without media, one piece: the body as `serde_json` writes it.
        let plain = Pieces::of(&json!({"a": [1, "b"]}), &[]);
        assert_eq!(joined(&plain), br#"{"a":[1,"b"]}"#);
    }
}
