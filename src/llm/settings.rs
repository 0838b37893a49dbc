//! Provider settings: environment variables and `provider` declarations
//! resolved into [`Endpoint`]s, and an agent's fallback chain.
//!
//! Input: the environment captured once by [`Llm`](super::Llm) and the
//! agent's `provider`/`model` lists. Output: one [`Link`] per position of
//! the chain, or a [`LlmError::Config`] naming the missing variable — before
//! anything is sent. Keys live in [`Secret`]s, whose `Debug` hides them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::error::LlmError;
use crate::ir::{Agent, Program, ProviderChoice, ProviderKind};

/// Request time limit when the provider declares none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Retries after the first attempt when the provider declares none.
pub const DEFAULT_RETRIES: u32 = 2;

/// An API key; `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The environment variables captured once; `Debug` lists names only.
#[derive(Clone, Default)]
pub(crate) struct Env(BTreeMap<String, String>);

impl Env {
    pub(crate) fn new(vars: BTreeMap<String, String>) -> Self {
        Self(vars)
    }

    /// A variable, treating empty as unset.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

/// Where and how to reach one HTTP provider.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// The kind name or the declaration name, for messages and recordings.
    pub(crate) label: String,
    pub(crate) kind: ProviderKind,
    /// The full request URL.
    pub(crate) url: String,
    pub(crate) key: Option<Secret>,
    pub(crate) timeout: Duration,
    pub(crate) retries: u32,
}

/// One position of an agent's chain.
#[derive(Debug, Clone)]
pub(crate) enum Link {
    /// An HTTP provider and the model to ask.
    Http(Endpoint, String),
    /// A script file and the model name (informational).
    Script(PathBuf, String),
}

/// The `(provider, model)` pairs of `agent`, settings resolved.
///
/// The i-th model goes with the i-th provider; the shorter list repeats its
/// last entry. With `keys_required` false (replay) missing keys are fine.
pub(crate) fn chain(
    env: &Env,
    program: &Program,
    agent: &Agent,
    keys_required: bool,
) -> Result<Vec<Link>, LlmError> {
    if agent.providers.is_empty() {
        return Err(LlmError::config(format!("agent `{}` has no provider", agent.name)));
    }
    let len = agent.providers.len().max(agent.models.len());
    let mut links = Vec::with_capacity(len);
    for i in 0..len {
        let choice = &agent.providers[i.min(agent.providers.len() - 1)];
        let model = agent.models.get(i.min(agent.models.len().saturating_sub(1))).cloned();
        let link = match choice {
            ProviderChoice::Script(path) => Link::Script(path.clone(), model.unwrap_or_default()),
            _ => {
                let endpoint = endpoint(env, program, choice, keys_required)?;
                let model = model.ok_or_else(|| {
                    LlmError::config(format!(
                        "agent `{}` has no model for provider `{}`",
                        agent.name, endpoint.label
                    ))
                })?;
                Link::Http(endpoint, model)
            }
        };
        links.push(link);
    }
    Ok(links)
}

/// The variables of a built-in kind: key, base URL, default base, URL path.
fn kind_vars(
    kind: ProviderKind,
) -> (Option<&'static str>, &'static str, &'static str, &'static str) {
    match kind {
        ProviderKind::Anthropic => (
            Some("ANTHROPIC_API_KEY"),
            "ANTHROPIC_BASE_URL",
            "https://api.anthropic.com",
            "/v1/messages",
        ),
        ProviderKind::OpenAi => (
            Some("OPENAI_API_KEY"),
            "OPENAI_BASE_URL",
            "https://api.openai.com/v1",
            "/chat/completions",
        ),
        ProviderKind::Ollama => (None, "OLLAMA_HOST", "http://localhost:11434", "/api/chat"),
    }
}

fn endpoint(
    env: &Env,
    program: &Program,
    choice: &ProviderChoice,
    keys_required: bool,
) -> Result<Endpoint, LlmError> {
    let (label, kind, base, key_var, timeout, retries) = match choice {
        ProviderChoice::Kind(kind) => {
            let (key_var, _, _, _) = kind_vars(*kind);
            (kind.name().to_owned(), *kind, None, key_var.map(str::to_owned), None, None)
        }
        ProviderChoice::Declared(id) => {
            let decl = &program[*id];
            let (default_key, _, _, _) = kind_vars(decl.kind);
            // A custom base URL never receives the official key unless asked for.
            let key_var = decl.api_key_env.clone().or_else(|| {
                decl.base_url.is_none().then(|| default_key.map(str::to_owned)).flatten()
            });
            (
                decl.name.clone(),
                decl.kind,
                decl.base_url.clone(),
                key_var,
                decl.timeout,
                decl.retries,
            )
        }
        ProviderChoice::Script(_) => {
            return Err(LlmError::config("a script is not an HTTP provider"));
        }
    };
    let (_, base_var, default_base, path) = kind_vars(kind);
    let base = base.unwrap_or_else(|| env.get(base_var).unwrap_or(default_base).to_owned());
    let key = match key_var {
        Some(var) => match env.get(&var) {
            Some(value) => Some(Secret(value.to_owned())),
            None if keys_required => {
                return Err(LlmError::config(format!(
                    "environment variable `{var}` is not set (API key of provider `{label}`)"
                )));
            }
            None => None,
        },
        None => None,
    };
    Ok(Endpoint {
        url: format!("{}{path}", base.trim_end_matches('/')),
        label,
        kind,
        key,
        timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
        retries: retries.unwrap_or(DEFAULT_RETRIES),
    })
}
