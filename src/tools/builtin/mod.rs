//! `builtin "name" {config}`: the tools shipped with ignite.
//!
//! What each builtin reads is its descriptor in [`ir::BUILTINS`] (also what `check`
//! validates declarations against): a param by name, else the declared param at the same
//! position (so `param expr: string` works for `math.eval`):
//!
//! | builtin | params read | config |
//! | --- | --- | --- |
//! | `math.eval` | `expression` (string) | none |
//! | `fs.read` | `path` (string, relative to the root; a regular file within the size limit) | `root` (default `.`), relative to the declaring file's folder |
//! | `fs.write` | `path`, `content` (a non-string is written as JSON; atomically: a temp file renamed over the target) | `root` as for `fs.read` |
//! | `http.get` | `url` (`http` or `https`) | none; the tool's time limit applies |
//! | `json.lookup` | the param named like `key` (default `id`) | `file` (required), `key` |
//!
//! [`Toolbox::with_fs_root`](super::Toolbox::with_fs_root) replaces the `root` of every
//! `fs.*` tool. File work runs on tokio's blocking pool, bounded by the tool's time
//! limit.

mod fs;
mod json_lookup;
mod math;

use std::time::Duration;

use serde_json::{Map, Value};

use super::{ToolError, Toolbox};
use crate::ir::{self, Builtin};

/// What a builtin may use besides its arguments.
pub(crate) struct Context<'a> {
    pub(crate) tool: &'a ir::Tool,
    pub(crate) config: &'a Map<String, Value>,
    pub(crate) toolbox: &'a Toolbox,
    pub(crate) timeout: Duration,
}

/// Runs `builtin` on the filled arguments.
pub(crate) async fn run(
    builtin: Builtin,
    context: &Context<'_>,
    args: Map<String, Value>,
) -> Result<Value, ToolError> {
    let read = Args { builtin, args: &args, config: context.config };
    match builtin {
        Builtin::MathEval => {
            let expression = read.string(0)?;
            math::evaluate(expression).map_err(|e| ToolError::Failed(e.to_string()))
        }
        Builtin::FsRead | Builtin::FsWrite => {
            let root = fs::root(context)?;
            let path = read.string(0)?.to_owned();
            let content = match builtin {
                Builtin::FsWrite => Some(match read.value(1)? {
                    Value::String(s) => s.clone(),
                    other => serde_json::to_string_pretty(other).unwrap_or_default(),
                }),
                _ => None,
            };
            let max_bytes = context.toolbox.max_bytes();
            let work = blocking(move || match content {
                Some(content) => fs::write(&root, &path, &content),
                None => fs::read(&root, &path, max_bytes),
            });
            // A stalled file system (a hung network mount) costs the call, not the
            // run: the blocking thread is abandoned at the time limit.
            tokio::time::timeout(context.timeout, work)
                .await
                .map_err(|_| ToolError::Timeout(context.timeout))?
        }
        Builtin::HttpGet => {
            let url = read.string(0)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ToolError::Failed(format!(
                    "`url` must start with http:// or https://, got `{url}`"
                )));
            }
            let client = context.toolbox.http_client()?;
            let max_bytes = context.toolbox.max_bytes();
            super::http::fetch(client.get(url), context.timeout, max_bytes, &[]).await
        }
        Builtin::JsonLookup => {
            let lookup = json_lookup::Lookup::from_config(context)?;
            let value = read.value(0)?.clone();
            blocking(move || lookup.find(&value)).await
        }
    }
}

/// A builtin's arguments, read through its descriptor.
struct Args<'a> {
    builtin: Builtin,
    args: &'a Map<String, Value>,
    config: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// The argument feeding the descriptor's `position`-th param.
    fn value(&self, position: usize) -> Result<&'a Value, ToolError> {
        let spec = self.builtin.spec();
        let missing = || {
            let name = spec.params.get(position).map_or("?", |p| p.name_in(self.config));
            ToolError::Failed(format!("builtin `{}` needs a param `{name}`", spec.name))
        };
        let index = spec
            .resolve(position, self.config, self.args.keys().map(String::as_str))
            .ok_or_else(missing)?;
        self.args.values().nth(index).ok_or_else(missing)
    }

    fn string(&self, position: usize) -> Result<&'a str, ToolError> {
        match self.value(position)? {
            Value::String(s) => Ok(s),
            other => {
                let spec = self.builtin.spec();
                let name = spec.params.get(position).map_or("?", |p| p.name_in(self.config));
                Err(ToolError::Failed(format!(
                    "`{name}`: expected string, got {}",
                    crate::eval::describe(other)
                )))
            }
        }
    }
}

async fn blocking<F>(work: F) -> Result<Value, ToolError>
where
    F: FnOnce() -> Result<Value, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|_| Err(ToolError::Failed("the builtin stopped unexpectedly".to_owned())))
}
