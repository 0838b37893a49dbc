//! Provider-agnostic conversation: what the tool-use loop builds and every
//! [`ModelClient`](super::ModelClient) translates to its wire format.
//!
//! A conversation is a system prompt plus a list of [`Message`]s: the user
//! prompt, assistant turns (text and tool calls) and tool-result turns
//! (one per assistant turn with calls, results in call order).

use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use crate::media::{Format, Kind};
use crate::tools::ToolView;
pub use crate::usage::Usage;
use crate::value::{Str, Val};

/// Who a request goes to: the kind's official endpoint (the default base
/// URL) or a compatible server at another base URL. A wire format may
/// differ between them (OpenAI: `max_completion_tokens` vs `max_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// The default base URL.
    Official,
    /// Any other base URL.
    Compatible,
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A user message: text with images and documents where the prompt
    /// interpolates them, in order.
    User(Vec<Content>),
    /// A model reply, possibly asking for tools.
    Assistant {
        /// Its text (may be empty when it only calls tools).
        text: String,
        /// The tool calls, in the order the model made them.
        tool_calls: Vec<ToolCall>,
        /// The turn exactly as the provider sent it, when its wire format
        /// must get it back unchanged.
        echo: Option<Echo>,
    },
    /// The results of every call of the previous assistant turn, in call order.
    ToolResults(Vec<ToolResult>),
}

impl Message {
    /// A user message of text alone.
    #[must_use]
    pub fn user(text: impl Into<String>) -> Self {
        Message::User(vec![Content::Text(text.into())])
    }
}

/// A piece of a user message.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Text.
    Text(String),
    /// An image or a document, sent as the provider's own content block.
    Media(Media),
}

/// An image or a document in a message: its format and its bytes in
/// base64 (shared with the value it came from, never copied per turn).
#[derive(Debug, Clone)]
pub struct Media {
    /// What the bytes are.
    pub format: &'static Format,
    /// The bytes, in standard base64.
    pub data: Str,
    /// The SHA-256 of the bytes once asked for (`None` inside when `data`
    /// is not base64), and whether they sniff as an image or a document:
    /// worked out once for every turn that sends them.
    digest: Arc<OnceLock<(Option<String>, bool)>>,
}

/// Media are equal when their bytes are.
impl PartialEq for Media {
    fn eq(&self, other: &Self) -> bool {
        self.format == other.format && self.data == other.data
    }
}

impl Media {
    /// The media value `value` is (`{media_type, data}` of a known media
    /// type, nothing else), else `None`.
    #[must_use]
    pub(crate) fn of(value: &Val) -> Option<Self> {
        let fields = value.as_object().filter(|f| f.len() == 2)?;
        let media_type = fields.get("media_type")?.as_str()?;
        let format = crate::media::format_of(media_type)?;
        match fields.get("data")? {
            Val::String(data) => Some(Self { format, data: data.clone(), digest: Arc::default() }),
            _ => None,
        }
    }

    /// True for an image, false for a document.
    #[must_use]
    pub fn is_image(&self) -> bool {
        self.format.kind == Kind::Image
    }

    /// The SHA-256 of the bytes, in hex (`None` when `data` is not base64).
    #[must_use]
    pub fn sha256(&self) -> Option<&str> {
        self.digested().0.as_deref()
    }

    fn digested(&self) -> &(Option<String>, bool) {
        self.digest.get_or_init(|| {
            let sniffs = crate::media::sniff_base64(&self.data).is_some();
            (crate::media::digest(&self.data), sniffs)
        })
    }

    /// The media as a string of a request body: the base64, or as a
    /// `data:` URL (OpenAI's form) when `url`. A string a recording would
    /// store as a blob is its mark instead (the bytes are spliced in when
    /// the body is sent: see `body.rs`); a short one is the string itself.
    #[must_use]
    pub(super) fn in_body(&self, url: bool) -> Value {
        let prefix =
            if url { format!("data:{};base64,", self.format.media_type) } else { String::new() };
        let mark = match self.digested() {
            (Some(hex), true) => crate::effects::mark_of(&prefix, self.data.len(), hex),
            _ => None,
        };
        Value::String(mark.unwrap_or_else(|| {
            let mut text = String::with_capacity(prefix.len() + self.data.len());
            text.push_str(&prefix);
            text.push_str(&self.data);
            text
        }))
    }
}

/// The JSON object of `fields`, each value moved in: `json!` copies every
/// value it interpolates, so a 13 MB `data:` URL built into a block that
/// `json!` then nests in a message would be copied at every level.
pub(super) fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(fields.into_iter().map(|(key, value)| (key.to_owned(), value)).collect())
}

/// The text of a user message's pieces, media left out.
#[must_use]
pub fn text_of(content: &[Content]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            Content::Text(text) => Some(text.as_str()),
            Content::Media(_) => None,
        })
        .collect()
}

/// A user message's pieces as JSON that names media by their digest: a
/// string when it is text alone (what cache keys held before media), else
/// a list of strings and `{media_type, sha256, bytes}` objects.
#[must_use]
pub fn content_key(content: &[Content]) -> Value {
    if content.iter().all(|c| matches!(c, Content::Text(_))) {
        return Value::String(text_of(content));
    }
    content
        .iter()
        .map(|c| match c {
            Content::Text(text) => Value::String(text.clone()),
            Content::Media(m) => json!({
                "media_type": m.format.media_type,
                "sha256": m.sha256(),
                "bytes": crate::media::decoded_len(&m.data),
            }),
        })
        .collect()
}

/// A reply's content exactly as a provider sent it (thinking blocks and
/// their signatures, Gemini's thought signatures, raw argument text). A
/// request to the same wire format sends it back instead of rebuilding the
/// turn from its text and calls; other formats ignore it.
#[derive(Debug, Clone, PartialEq)]
pub struct Echo {
    /// The name of the provider kind whose format `content` is in.
    pub kind: &'static str,
    /// The content, verbatim.
    pub content: Value,
}

impl Echo {
    /// The content when it is in `kind`'s format.
    #[must_use]
    pub fn for_kind<'a>(echo: Option<&'a Echo>, kind: &str) -> Option<&'a Value> {
        echo.filter(|e| e.kind == kind).map(|e| &e.content)
    }
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The provider's call id (generated for providers without ids).
    pub id: String,
    /// The tool name the model used.
    pub name: String,
    /// The arguments; a JSON string when the model sent text that is not
    /// JSON (kept as sent so the conversation replays faithfully).
    pub arguments: Value,
}

/// The outcome of one tool call, as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub id: String,
    /// The tool name of the call.
    pub name: String,
    /// The result text: the value (strings raw, others as JSON) or `Error: ...`.
    pub content: String,
    /// True when the call failed (Anthropic's `is_error`).
    pub is_error: bool,
}

/// A request to a model: everything but the transport.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The model name.
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call, as it sees them; each wire format
    /// turns them into its own `tools` entries.
    pub tools: Vec<ToolView>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Reply token limit.
    pub max_tokens: Option<u32>,
    /// A structured answer to ask for with the provider's native mechanism
    /// (the agent's `result`); `None` for text.
    pub result: Option<super::structured::ResultSchema>,
}

impl ModelRequest {
    /// The kinds of the media in the conversation's user messages.
    pub fn media_kinds(&self) -> impl Iterator<Item = Kind> + '_ {
        self.messages
            .iter()
            .flat_map(|m| match m {
                Message::User(content) => content.as_slice(),
                _ => &[],
            })
            .filter_map(|piece| match piece {
                Content::Media(media) => Some(media.format.kind),
                Content::Text(_) => None,
            })
    }
}

/// A model's reply, normalized.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    /// The text blocks, joined.
    pub text: String,
    /// Tool calls in order.
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    pub stop: StopReason,
    /// Token usage.
    pub usage: Usage,
    /// The content to send back in this format's next request, if any.
    pub echo: Option<Echo>,
}

/// Why a model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// A natural end of turn (`end_turn`, `stop`).
    EndTurn,
    /// It wants tools to run (`tool_use`, `tool_calls`).
    ToolUse,
    /// Cut off by the token limit (`max_tokens`, `length`, `MAX_TOKENS`).
    MaxTokens,
    /// Anthropic's `pause_turn`: a long turn paused; sending the content
    /// back lets the model continue it.
    PauseTurn,
    /// The provider declined or filtered the reply (`refusal`,
    /// `content_filter`, `SAFETY`, a blocked prompt ...), named as it sent it.
    Blocked(String),
    /// Any other reason, named as the provider sent it; the run fails.
    Other(String),
}

/// The wire's counters: a provider's usage object read into [`Usage`].
impl Usage {
    /// Reads two counters of `object`, missing ones as zero.
    pub(crate) fn from_fields(object: Option<&Value>, input: &str, output: &str) -> Self {
        Self {
            input_tokens: count(object, input),
            output_tokens: count(object, output),
            ..Self::default()
        }
    }
}

/// The counter `name` of `object` (a JSON pointer when it starts with `/`), zero when missing.
pub(crate) fn count(object: Option<&Value>, name: &str) -> u64 {
    let field = if name.starts_with('/') {
        object.and_then(|o| o.pointer(name))
    } else {
        object.and_then(|o| o.get(name))
    };
    field.and_then(Value::as_u64).unwrap_or(0)
}
