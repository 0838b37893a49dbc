//! MCP servers a program uses (`mcp Name { ... }`) and `ignite.lock`, the
//! record of their tools that `check` types `mcp` tools from.
//!
//! Input: the lock file's text, or a server's live `tools/list`. Output:
//! a [`Lock`] (per server and tool: description, `inputSchema`,
//! `outputSchema`, annotations and a hash of the four), the typed params
//! and result of a locked tool ([`LockedTool::params`],
//! [`LockedTool::result`]), and what changed between a locked tool and a
//! live one ([`LockedTool::changes`]).
//!
//! Schemas map to types conservatively: `string`, `integer`, `number`,
//! `boolean`, `array` (of its `items`), `object`, a `["T", "null"]` type
//! or an `anyOf` of one type and `null` (pydantic's optional) as nullable;
//! anything else is `any` (the server checks what ignite cannot say).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::{Param, SettingText, Type, TypeKind};
use crate::source::Span;

/// The lock file's name, beside the root file.
pub const LOCK_FILE: &str = "ignite.lock";

/// The lock format's version.
const LOCK_VERSION: u32 = 1;

/// An `mcp Name { ... }` declaration, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    /// Declared name.
    pub name: String,
    /// How ignite reaches it.
    pub transport: McpTransport,
    /// `env NAME = value`: added to the child's minimal environment.
    pub env: Vec<(String, SettingText)>,
    /// `header "Name" = value` (HTTP only).
    pub headers: Vec<(String, SettingText)>,
    /// Connection and call time limit.
    pub timeout: Duration,
    /// The folder of the declaring file: the child runs there.
    pub dir: PathBuf,
    /// The declaration.
    pub span: Span,
}

/// How an MCP server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// `command "program" "arg" ...`: a child process over stdio.
    Command {
        /// The program (relative to [`McpServer::dir`] when it has a `/`).
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// `url "..."`: Streamable HTTP.
    Url(String),
}

/// The tool of an `mcp Server "tool"` implementation.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The server.
    pub server: Arc<McpServer>,
    /// The remote tool's name.
    pub tool: String,
    /// What the lock says of it: the live tool must still be this.
    pub locked: Arc<LockedTool>,
}

/// `ignite.lock`: the tools of every declared server, as last locked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// The format's version.
    pub version: u32,
    /// Servers by declared name.
    pub servers: BTreeMap<String, LockedServer>,
}

/// One server's tools in the lock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedServer {
    /// Tools by name.
    pub tools: BTreeMap<String, LockedTool>,
}

/// One tool as a server lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LockedTool {
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// The JSON Schema of its `structuredContent`, when it declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Its annotations (hints such as `readOnlyHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// `sha256:` of the four above (see [`LockedTool::digest`]).
    pub hash: String,
}

impl Lock {
    /// A new, empty lock.
    #[must_use]
    pub fn new() -> Self {
        Self { version: LOCK_VERSION, servers: BTreeMap::new() }
    }

    /// Reads a lock file's text.
    ///
    /// # Errors
    /// The text is not a lock of this version, or a hash does not match its
    /// tool (a lock edited by hand), in words.
    pub fn parse(text: &str) -> Result<Self, String> {
        let lock: Lock = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if lock.version != LOCK_VERSION {
            return Err(format!("version {} (this ignite reads {LOCK_VERSION})", lock.version));
        }
        for (server, locked) in &lock.servers {
            for (name, tool) in &locked.tools {
                if tool.hash != tool.digest() {
                    return Err(format!(
                        "the hash of tool `{name}` of server `{server}` does not match it"
                    ));
                }
            }
        }
        Ok(lock)
    }

    /// The lock file's text: sorted, indented, ending in a newline.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The locked tool `tool` of `server`.
    #[must_use]
    pub fn tool(&self, server: &str, tool: &str) -> Option<&LockedTool> {
        self.servers.get(server)?.tools.get(tool)
    }
}

impl LockedTool {
    /// A tool as listed, hashed.
    #[must_use]
    pub fn new(
        description: Option<String>,
        input_schema: Value,
        output_schema: Option<Value>,
        annotations: Option<Value>,
    ) -> Self {
        let mut tool =
            Self { description, input_schema, output_schema, annotations, hash: String::new() };
        tool.hash = tool.digest();
        tool
    }

    /// `sha256:HEX` of the description, schemas and annotations, with
    /// object keys sorted (so key order does not count).
    #[must_use]
    pub fn digest(&self) -> String {
        let parts = serde_json::json!([
            self.description,
            self.input_schema,
            self.output_schema,
            self.annotations
        ]);
        let mut text = String::new();
        canonical(&parts, &mut text);
        let digest = Sha256::digest(text.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }

    /// What differs between this locked tool and `live`: `description`,
    /// `inputSchema`, `outputSchema`, `annotations` (empty when none).
    #[must_use]
    pub fn changes(&self, live: &LockedTool) -> Vec<&'static str> {
        let mut changed = Vec::new();
        if self.description != live.description {
            changed.push("description");
        }
        let same = |a: &Value, b: &Value| {
            let (mut x, mut y) = (String::new(), String::new());
            canonical(a, &mut x);
            canonical(b, &mut y);
            x == y
        };
        if !same(&self.input_schema, &live.input_schema) {
            changed.push("inputSchema");
        }
        let none = Value::Null;
        if !same(
            self.output_schema.as_ref().unwrap_or(&none),
            live.output_schema.as_ref().unwrap_or(&none),
        ) {
            changed.push("outputSchema");
        }
        if !same(
            self.annotations.as_ref().unwrap_or(&none),
            live.annotations.as_ref().unwrap_or(&none),
        ) {
            changed.push("annotations");
        }
        changed
    }

    /// The params its `inputSchema` describes, in the schema's order;
    /// `span` is where they are used (the tool's declaration).
    #[must_use]
    pub fn params(&self, span: Span) -> Vec<Param> {
        let required: Vec<&str> = self
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(properties) = self.input_schema.get("properties").and_then(Value::as_object)
        else {
            return Vec::new();
        };
        properties
            .iter()
            .map(|(name, schema)| {
                let mut ty = schema_type(schema);
                let default = schema.get("default").cloned();
                if !required.contains(&name.as_str()) && default.is_none() {
                    // Optional without a default: may be left out.
                    ty.nullable = true;
                }
                Param {
                    name: name.clone(),
                    ty,
                    default,
                    description: schema
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    span,
                }
            })
            .collect()
    }

    /// The type of a call's value: its `outputSchema`'s, or `string` (the
    /// text of its content) when it declares none; a tool without one may
    /// also answer images, which a declared `result` says (see
    /// [`LockedTool::says_result`]).
    #[must_use]
    pub fn result(&self) -> Type {
        self.output_schema.as_ref().map_or(Type::new(TypeKind::String), schema_type)
    }

    /// Whether the lock says what a call returns (an `outputSchema`): else
    /// its content may be text, an image or both, and a declared `result`
    /// is the tool's to say.
    #[must_use]
    pub fn says_result(&self) -> bool {
        self.output_schema.is_some()
    }
}

/// The type a JSON Schema describes, as far as ignite's types can say.
#[must_use]
pub fn schema_type(schema: &Value) -> Type {
    let Some(schema) = schema.as_object() else { return Type::any() };
    if let Some(options) = schema.get("anyOf").or_else(|| schema.get("oneOf")) {
        let options = options.as_array().map(Vec::as_slice).unwrap_or_default();
        let is_null = |s: &Value| s.get("type").and_then(Value::as_str) == Some("null");
        let others: Vec<&Value> = options.iter().filter(|s| !is_null(s)).collect();
        if let [one] = others.as_slice() {
            if others.len() < options.len() {
                let mut ty = schema_type(one);
                ty.nullable = true;
                return ty;
            }
            return schema_type(one);
        }
        return Type::any();
    }
    let (name, nullable) = match schema.get("type") {
        Some(Value::String(name)) => (name.as_str(), false),
        Some(Value::Array(names)) => {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            match names.as_slice() {
                [one] => (*one, false),
                [a, "null"] | ["null", a] => (*a, true),
                _ => return Type::any(),
            }
        }
        _ => return Type::any(),
    };
    let kind = match name {
        "string" => TypeKind::String,
        "integer" => TypeKind::Integer,
        "number" => TypeKind::Float,
        "boolean" => TypeKind::Boolean,
        "object" => TypeKind::Object,
        "array" => TypeKind::Array(schema.get("items").map(|item| Arc::new(schema_type(item)))),
        _ => return Type::any(),
    };
    Type { kind, nullable }
}

/// JSON with object keys sorted, for hashing and comparing.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// `command "uvx" "mcp-server-time"` or `url "..."`, as written.
impl fmt::Display for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { program, args } => {
                write!(f, "command {program:?}")?;
                args.iter().try_for_each(|a| write!(f, " {a:?}"))
            }
            Self::Url(url) => write!(f, "url {url:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_ignores_key_order_and_the_lock_checks_it() {
        let a = LockedTool::new(
            Some("d".into()),
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            None,
            None,
        );
        let b = LockedTool::new(
            Some("d".into()),
            json!({"properties": {"a": {"type": "string"}}, "type": "object"}),
            None,
            None,
        );
        assert_eq!(a.hash, b.hash);
        assert!(a.changes(&b).is_empty());
        let mut lock = Lock::new();
        lock.servers.entry("S".into()).or_default().tools.insert("t".into(), a.clone());
        assert_eq!(Lock::parse(&lock.to_text()), Ok(lock.clone()));
        let edited = lock.to_text().replace("\"d\"", "\"e\"");
        assert!(Lock::parse(&edited).unwrap_err().contains("hash of tool `t`"));
        let c = LockedTool::new(None, json!({"type": "object"}), Some(json!({})), None);
        assert_eq!(a.changes(&c), ["description", "inputSchema", "outputSchema"]);
    }

    #[test]
    fn schemas_map_to_types() {
        let ty = |s: Value| schema_type(&s).to_string();
        assert_eq!(ty(json!({"type": "string"})), "string");
        assert_eq!(ty(json!({"type": ["integer", "null"]})), "integer?");
        assert_eq!(ty(json!({"anyOf": [{"type": "number"}, {"type": "null"}]})), "float?");
        assert_eq!(ty(json!({"type": "array", "items": {"type": "boolean"}})), "array<boolean>");
        assert_eq!(ty(json!({"type": "array"})), "array");
        assert_eq!(ty(json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})), "any");
        assert_eq!(ty(json!(true)), "any");
        let tool = LockedTool::new(
            None,
            json!({"type": "object", "required": ["a"], "properties": {
                "a": {"type": "string", "description": "the a"},
                "b": {"type": "integer", "default": 3},
                "c": {"type": "boolean"}
            }}),
            None,
            None,
        );
        let params = tool.params(Span::new(crate::source::FileId(0), 0, 0));
        let shown: Vec<String> =
            params.iter().map(|p| format!("{} {} {}", p.name, p.ty, p.required())).collect();
        assert_eq!(shown, ["a string true", "b integer false", "c boolean? false"]);
        assert_eq!(tool.result().to_string(), "string");
    }
}
