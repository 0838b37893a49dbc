//! `builtin "name" {config}`: the tools shipped with ignite.
//!
//! The compiler takes a builtin's params from its `.ign` declaration; each builtin reads
//! the params below by name, falling back to the first declared param when the name is
//! absent (so `param expr: string` works for `math.eval`):
//!
//! | builtin | params read | config |
//! | --- | --- | --- |
//! | `math.eval` | `expression` (string) | none |
//! | `fs.read` | `path` (string, relative to the root; a regular file within the size limit) | `root` (default `.`), relative to the declaring file's folder |
//! | `fs.write` | `path`, `content` (a non-string is written as JSON; atomically: a temp file renamed over the target) | `root` as for `fs.read` |
//! | `http.get` | `url` (`http` or `https`) | none; the tool's time limit applies |
//! | `json.lookup` | the param named like `key`, else the first param | `file` (required), `key` (default `id`) |
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
    match builtin {
        Builtin::MathEval => {
            let expression = string_arg(&args, "expression", builtin)?;
            math::evaluate(expression).map_err(|e| ToolError::Failed(e.to_string()))
        }
        Builtin::FsRead | Builtin::FsWrite => {
            let root = fs::root(context)?;
            let path = string_arg(&args, "path", builtin)?.to_owned();
            let content = match builtin {
                Builtin::FsWrite => Some(match arg(&args, "content", 1) {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => serde_json::to_string_pretty(other).unwrap_or_default(),
                    None => return Err(missing(builtin, "content")),
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
            let url = string_arg(&args, "url", builtin)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ToolError::Failed(format!(
                    "`url` must start with http:// or https://, got `{url}`"
                )));
            }
            let client = context.toolbox.http_client()?;
            super::http::fetch(client.get(url), context.timeout, context.toolbox.max_bytes()).await
        }
        Builtin::JsonLookup => {
            let lookup = json_lookup::Lookup::from_config(context)?;
            let value =
                arg(&args, &lookup.key, 0).cloned().ok_or_else(|| missing(builtin, &lookup.key))?;
            blocking(move || lookup.find(&value)).await
        }
    }
}

/// The argument `name`, else the argument at `position`.
fn arg<'a>(args: &'a Map<String, Value>, name: &str, position: usize) -> Option<&'a Value> {
    args.get(name).or_else(|| args.values().nth(position))
}

fn string_arg<'a>(
    args: &'a Map<String, Value>,
    name: &str,
    builtin: Builtin,
) -> Result<&'a str, ToolError> {
    match arg(args, name, 0) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ToolError::Failed(format!(
            "`{name}`: expected string, got {}",
            crate::eval::describe(other)
        ))),
        None => Err(missing(builtin, name)),
    }
}

fn missing(builtin: Builtin, name: &str) -> ToolError {
    ToolError::Failed(format!("builtin `{}` needs a param `{name}`", builtin.name()))
}

async fn blocking<F>(work: F) -> Result<Value, ToolError>
where
    F: FnOnce() -> Result<Value, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|_| Err(ToolError::Failed("the builtin stopped unexpectedly".to_owned())))
}
