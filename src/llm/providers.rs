//! The provider table: every wire protocol ignite speaks, as data.
//!
//! One [`ProviderSpec`] row per provider kind holds everything the rest of
//! ignite needs to know about it: its name in `.ign`, the environment
//! variables of its key and base URL, the default base and request path,
//! how the key is sent, and the pure functions of its wire module (tool
//! definition, request body, reply parser). Lowering reads the names from
//! here, `settings.rs` the variables, `http.rs` the URL and headers, and
//! `wire.rs` the functions; no other file matches on a provider.
//!
//! Adding a provider is its wire module (`src/llm/NAME.rs`: `tool`,
//! `request_body`, `parse_reply`, its stop-reason mapping) plus one row in
//! [`PROVIDERS`]. A per-provider request piece (structured output, say)
//! belongs in the wire module's `request_body`, reading a field of
//! [`ModelRequest`].

use serde_json::Value;

use super::message::{ModelReply, ModelRequest, Server};
use super::{anthropic, gemini, ollama, openai};
use crate::ir::ProviderKind;
use crate::tools::ToolView;

/// How an API key travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer KEY`.
    Bearer,
    /// The key as the value of this header.
    Header(&'static str),
}

/// An environment variable that holds a key, and how that key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyVar {
    /// The variable.
    pub var: &'static str,
    /// How its value is sent.
    pub auth: Auth,
}

/// One provider kind: a row of [`PROVIDERS`].
pub struct ProviderSpec {
    /// The kind's name in `.ign` (`provider NAME`, `kind NAME`).
    pub name: &'static str,
    /// Key variables, in precedence order (the first one set is used);
    /// empty when the provider needs no key.
    pub keys: &'static [KeyVar],
    /// Whether a missing key is an error (false: the key is optional).
    pub key_required: bool,
    /// The variable that overrides the base URL.
    pub base_var: &'static str,
    /// The base URL when the variable is unset.
    pub default_base: &'static str,
    /// When set, a base without a scheme is `host[:port]` over `http`, this
    /// port when none is given (the form `OLLAMA_HOST` takes).
    pub bare_host_port: Option<u16>,
    /// The request path after the base; `{model}` is replaced by the model.
    pub path: &'static str,
    /// Headers sent on every request besides the key.
    pub headers: &'static [(&'static str, &'static str)],
    /// A tool as the provider's `tools` entry.
    pub tool: fn(&ToolView) -> Value,
    /// The request body of a conversation.
    pub request_body: fn(&ModelRequest, Server) -> Value,
    /// Parses a 2xx reply body (stop reasons mapped by the wire module).
    pub parse_reply: fn(&Value) -> Result<ModelReply, String>,
}

/// What every provider kind does, one row per [`ProviderKind`] in its order.
pub static PROVIDERS: [ProviderSpec; ProviderKind::COUNT] = [
    ProviderSpec {
        name: anthropic::NAME,
        keys: &[
            KeyVar { var: "ANTHROPIC_API_KEY", auth: Auth::Header("x-api-key") },
            KeyVar { var: "ANTHROPIC_AUTH_TOKEN", auth: Auth::Bearer },
        ],
        key_required: true,
        base_var: "ANTHROPIC_BASE_URL",
        default_base: "https://api.anthropic.com",
        bare_host_port: None,
        path: "/v1/messages",
        headers: &[("anthropic-version", anthropic::VERSION)],
        tool: anthropic::tool,
        request_body: anthropic::request_body,
        parse_reply: anthropic::parse_reply,
    },
    ProviderSpec {
        name: openai::NAME,
        keys: &[KeyVar { var: "OPENAI_API_KEY", auth: Auth::Bearer }],
        key_required: true,
        base_var: "OPENAI_BASE_URL",
        default_base: "https://api.openai.com/v1",
        bare_host_port: None,
        path: "/chat/completions",
        headers: &[],
        tool: openai::tool,
        request_body: openai::request_body,
        parse_reply: openai::parse_reply,
    },
    ProviderSpec {
        name: ollama::NAME,
        keys: &[KeyVar { var: "OLLAMA_API_KEY", auth: Auth::Bearer }],
        key_required: false,
        base_var: "OLLAMA_HOST",
        default_base: "http://localhost:11434",
        bare_host_port: Some(11434),
        path: "/api/chat",
        headers: &[],
        tool: ollama::tool,
        request_body: ollama::request_body,
        parse_reply: ollama::parse_reply,
    },
    ProviderSpec {
        name: gemini::NAME,
        keys: &[
            KeyVar { var: "GOOGLE_API_KEY", auth: Auth::Header("x-goog-api-key") },
            KeyVar { var: "GEMINI_API_KEY", auth: Auth::Header("x-goog-api-key") },
        ],
        key_required: true,
        base_var: "GEMINI_BASE_URL",
        default_base: "https://generativelanguage.googleapis.com",
        bare_host_port: None,
        path: "/v1beta/models/{model}:generateContent",
        headers: &[],
        tool: gemini::tool,
        request_body: gemini::request_body,
        parse_reply: gemini::parse_reply,
    },
];

/// What a kind does: its row of [`PROVIDERS`].
impl ProviderKind {
    /// The kind's row.
    #[must_use]
    pub fn spec(self) -> &'static ProviderSpec {
        &PROVIDERS[self.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_row() {
        for kind in ProviderKind::all() {
            assert_eq!(kind.spec().name, kind.name());
        }
    }

    #[test]
    fn key_variables_are_listed_once() {
        let vars: Vec<&str> = PROVIDERS.iter().flat_map(|s| s.keys).map(|k| k.var).collect();
        for var in &vars {
            assert_eq!(vars.iter().filter(|v| *v == var).count(), 1, "{var}");
        }
    }
}
