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
use std::sync::Arc;
use std::time::Duration;

use super::error::LlmError;
use super::limits::{Limiter, Limiters};
use super::message::Server;
use super::providers::Auth;
use crate::ir::ProviderKind;
use crate::ir::{Agent, Price, Program, ProviderChoice};

/// Request time limit when the provider declares none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
pub use crate::ir::DEFAULT_RETRIES;

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
    /// The base URL, without a trailing `/`.
    pub(crate) base: String,
    /// The key and how it is sent.
    pub(crate) key: Option<(Secret, Auth)>,
    pub(crate) timeout: Duration,
    pub(crate) retries: u32,
    /// The declaration's `rate_limit` and `token_limit`, shared process-wide.
    pub(crate) limiter: Option<Arc<Limiter>>,
    /// The declaration's `price`.
    pub(crate) price: Option<Price>,
}

impl Endpoint {
    /// Whether requests go to the kind's official endpoint.
    pub(crate) fn server(&self) -> Server {
        if self.base == self.kind.spec().default_base.trim_end_matches('/') {
            Server::Official
        } else {
            Server::Compatible
        }
    }

    /// The request URL for `model`: the base, then the kind's path.
    pub(crate) fn url(&self, model: &str) -> String {
        let path = self.kind.spec().path;
        let path = if path.contains("{model}") {
            path.replace("{model}", &encode_segment(model))
        } else {
            path.to_owned()
        };
        format!("{}{path}", self.base)
    }
}

/// A base URL checked and without a trailing `/`: `http` or `https` with a
/// host. With `bare_host_port`, `host`, `host:port` and `[v6]:port` without a
/// scheme are read over `http`, that port when none is given.
fn parse_base(text: &str, bare_host_port: Option<u16>) -> Result<String, String> {
    let text = text.trim();
    let full = match bare_host_port {
        Some(port) if !text.contains("://") => {
            let (host, path) = text.split_once('/').map_or((text, ""), |(h, p)| (h, p));
            let has_port = host.rsplit_once(':').is_some_and(|(h, p)| {
                !p.is_empty()
                    && p.bytes().all(|b| b.is_ascii_digit())
                    && (!h.contains(':') || h.ends_with(']'))
            });
            let host = if has_port { host.to_owned() } else { format!("{host}:{port}") };
            let path = if path.is_empty() { String::new() } else { format!("/{path}") };
            format!("http://{host}{path}")
        }
        _ => text.to_owned(),
    };
    let url = reqwest::Url::parse(&full).map_err(|e| e.to_string())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("the scheme must be http or https, not `{}`", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("no host".to_owned());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("a base URL takes no query or fragment".to_owned());
    }
    Ok(full.trim_end_matches('/').to_owned())
}

/// `text` as one URL path segment: characters outside the unreserved set
/// (and `:`, `@`) percent-encoded, so a model name never changes the route.
fn encode_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~:@".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
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
    limiters: &Limiters,
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
        let model = agent.models.get(i.min(agent.models.len().saturating_sub(1)));
        let model = model
            .map(|m| {
                m.resolve(|var| env.get(var).map(str::to_owned)).map_err(|var| {
                    LlmError::config(format!(
                        "environment variable `{var}` is not set (`model` of agent `{}`)",
                        agent.name
                    ))
                })
            })
            .transpose()?;
        let link = match choice {
            ProviderChoice::Script(path) => Link::Script(path.clone(), model.unwrap_or_default()),
            _ => {
                let endpoint = endpoint(env, limiters, program, choice, keys_required)?;
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

fn endpoint(
    env: &Env,
    limiters: &Limiters,
    program: &Program,
    choice: &ProviderChoice,
    keys_required: bool,
) -> Result<Endpoint, LlmError> {
    let official = |kind: ProviderKind| -> Vec<(String, Auth)> {
        kind.spec().keys.iter().map(|k| (k.var.to_owned(), k.auth)).collect()
    };
    let (mut limiter, mut price) = (None, None);
    let (label, kind, base, key_vars, explicit, timeout, retries) = match choice {
        ProviderChoice::Kind(kind) => {
            (kind.name().to_owned(), *kind, None, official(*kind), false, None, None)
        }
        ProviderChoice::Declared(id) => {
            let decl = &program[*id];
            // A custom base URL never receives the official key unless asked for.
            let vars = match (&decl.api_key_env, &decl.base_url) {
                (Some(var), _) => {
                    let auth = decl.kind.spec().keys.first().map_or(Auth::Bearer, |k| k.auth);
                    vec![(var.clone(), auth)]
                }
                (None, None) => official(decl.kind),
                (None, Some(_)) => Vec::new(),
            };
            let explicit = decl.api_key_env.is_some();
            let base = decl.base_url.as_ref();
            (limiter, price) = (limiters.of(decl), decl.price);
            (decl.name.clone(), decl.kind, base, vars, explicit, decl.timeout, decl.retries)
        }
        ProviderChoice::Script(_) => {
            return Err(LlmError::config("a script is not an HTTP provider"));
        }
    };
    let spec = kind.spec();
    let (base, origin) = match (base, env.get(spec.base_var)) {
        (Some(base), _) => {
            let origin = match base {
                crate::ir::SettingText::Literal(_) => format!("`base_url` of provider `{label}`"),
                crate::ir::SettingText::Env { var, .. } => {
                    format!("`{var}` (`base_url` of provider `{label}`)")
                }
            };
            let base = base.resolve(|var| env.get(var).map(str::to_owned)).map_err(|var| {
                LlmError::config(format!(
                    "environment variable `{var}` is not set (`base_url` of provider `{label}`)"
                ))
            })?;
            (base, origin)
        }
        (None, Some(base)) => (base.to_owned(), format!("`{}`", spec.base_var)),
        (None, None) => (spec.default_base.to_owned(), format!("`{}`", spec.base_var)),
    };
    let base = parse_base(&base, spec.bare_host_port).map_err(|why| {
        LlmError::config(format!("{origin} is not a valid base URL ({why}): `{base}`"))
    })?;
    let key =
        key_vars.iter().find_map(|(var, auth)| env.get(var).map(|v| (Secret(v.to_owned()), *auth)));
    if key.is_none() && keys_required && (explicit || spec.key_required) && !key_vars.is_empty() {
        let names: Vec<String> = key_vars.iter().map(|(v, _)| format!("`{v}`")).collect();
        let (what, verb) = if names.len() == 1 { ("variable", "is") } else { ("variables", "are") };
        return Err(LlmError::config(format!(
            "environment {what} {} {verb} not set (API key of provider `{label}`)",
            names.join(" or ")
        )));
    }
    Ok(Endpoint {
        base,
        label,
        kind,
        key,
        timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
        retries: retries.unwrap_or(DEFAULT_RETRIES),
        limiter,
        price,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_are_checked_and_ollama_takes_bare_hosts() {
        let ollama = Some(11434);
        assert_eq!(parse_base("127.0.0.1:8080", ollama).as_deref(), Ok("http://127.0.0.1:8080"));
        assert_eq!(parse_base("example.com", ollama).as_deref(), Ok("http://example.com:11434"));
        assert_eq!(parse_base("[::1]:9000", ollama).as_deref(), Ok("http://[::1]:9000"));
        assert_eq!(parse_base("[::1]", ollama).as_deref(), Ok("http://[::1]:11434"));
        assert_eq!(parse_base("host:1/base/", ollama).as_deref(), Ok("http://host:1/base"));
        assert_eq!(
            parse_base("https://ollama.example/", ollama).as_deref(),
            Ok("https://ollama.example")
        );
        assert!(parse_base("127.0.0.1:8080", None).is_err());
        assert!(parse_base("ftp://x", None).unwrap_err().contains("http or https"));
        assert!(parse_base("http://", ollama).is_err());
        assert!(parse_base("http://h:1/?x=1", None).is_err());
        assert!(parse_base("exa mple:1", ollama).is_err());
    }

    #[test]
    fn the_default_base_is_the_official_server() {
        let kind = ProviderKind::named("openai").expect("openai is a provider kind");
        let default = kind.spec().default_base;
        let endpoint = |base: &str| Endpoint {
            label: "openai".into(),
            kind,
            base: base.into(),
            key: None,
            timeout: DEFAULT_TIMEOUT,
            retries: 0,
            limiter: None,
            price: None,
        };
        assert_eq!(endpoint(default).server(), Server::Official);
        assert_eq!(endpoint("http://localhost:8000/v1").server(), Server::Compatible);
    }
}
