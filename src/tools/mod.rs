//! Tools: the functions agents may call and contracts may run.
//!
//! Input: a checked [`ir::Program`](crate::ir::Program) (its [`ir::Tool`](crate::ir::Tool)s)
//! plus Rust-native tools registered on a [`Toolbox`]. Output: one [`ToolView`] per tool
//! ([`Toolbox::view`]: what models see, what calls are validated against), a capability-filtered [`Registry`], and tool results as JSON
//! values ([`Toolbox::call`]).
//!
//! The pieces, one per file:
//!
//! | file | concept |
//! | --- | --- |
//! | `schema.rs` | params → JSON Schema; [`ToolView`], what a model sees of a tool |
//! | `capability.rs` | the capability guard the agent loop runs before a call |
//! | `validate.rs` | argument validation (the `jsonschema` crate) and default filling |
//! | `toolbox.rs` | [`Toolbox`]: natives, caches, the HTTP client; dispatch of a call |
//! | `native.rs` | the [`NativeTool`] trait and [`schema_for`] |
//! | `registry.rs` | [`Registry`]: `.ign` tools then natives, filtered by capability |
//! | `table.rs` | [`render_table`] for `ignite tools` |
//! | `returns.rs` `exec.rs` `http.rs` `mcp.rs` `builtin/` | the implementations (`mcp.rs`: MCP servers' tools, the connections) |
//!
//! Invariants and decisions:
//! - Every call is validated against the tool's declared params by the one check of
//!   declared types (`ir::Type::admit`, which inputs and results get too: `5.0` is an
//!   integer), unknown properties rejected: a model that invents one gets "`foo`:
//!   unknown field of `Lookup`" back and can retry. A registered native that declares
//!   no params is validated against its own schema (`jsonschema`, with
//!   `additionalProperties: false` added for validation only).
//! - After validation, absent optional params are filled in declaration order: the
//!   default when declared, else `null` (a nullable param). Implementations therefore see
//!   every declared param.
//! - `exec`, `http` and `builtin "http.get"` tools time out after [`ir::Tool::timeout`],
//!   [`DEFAULT_TIMEOUT`] when not declared. Native tools time out only when a timeout is
//!   declared (their blocking thread cannot be stopped, only abandoned).
//! - [`Toolbox::call`] never checks capabilities: a contract calling a tool directly is
//!   trusted. The agent loop calls [`check_capabilities`] first.
//!
//! [`ir::Tool`]: crate::ir::Tool
//! [`ir::Tool::timeout`]: crate::ir::Tool::timeout

mod builtin;
mod capability;
mod error;
mod exec;
mod group;
pub(crate) mod http;
pub(crate) mod mcp;
mod native;
pub mod registry;
mod returns;
pub mod schema;
mod table;
mod toolbox;
mod validate;

#[cfg(test)]
mod test_support;

use std::time::Duration;

pub(crate) use capability::covers;
pub use capability::{CapabilityError, check_capabilities};
pub use error::ToolError;
pub use native::{NativeTool, schema_for};
pub use registry::{RegisteredTool, Registry, ToolSource};
pub use schema::{ToolView, parameters_schema, strict_schema, type_schema};
pub use table::render_table;
pub(crate) use toolbox::admit_result;
pub use toolbox::{DEFAULT_TURN_CALLS, Toolbox};

/// Time limit of `exec`, `http` and `http.get` tools that declare none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Size limit of what one tool call or provider reply may bring in: `exec`
/// stdout, `http` and `http.get` bodies, `fs.read` files, provider replies.
/// [`Toolbox::with_max_bytes`], [`Llm::with_max_bytes`](crate::llm::Llm::with_max_bytes)
/// and `ignite run --max-bytes` change it.
pub const DEFAULT_MAX_BYTES: usize = 8 * 1024 * 1024;

/// The error for `what` (naming the source) growing past `limit` bytes.
pub(crate) fn too_big(what: &str, limit: usize) -> String {
    format!("{what} is larger than the size limit of {limit} bytes; raise it with `--max-bytes`")
}
