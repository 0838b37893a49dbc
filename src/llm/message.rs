//! Provider-agnostic conversation: what the tool-use loop builds and every
//! [`ModelClient`](super::ModelClient) translates to its wire format.
//!
//! A conversation is a system prompt plus a list of [`Message`]s: the user
//! prompt, assistant turns (text and tool calls) and tool-result turns
//! (one per assistant turn with calls, results in call order).

use serde_json::Value;

use crate::tools::ToolView;
pub use crate::usage::Usage;

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
    /// A user message.
    User(String),
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
