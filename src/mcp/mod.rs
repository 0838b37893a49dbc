//! The Model Context Protocol, server side: a program's tools and
//! top-level contracts as MCP tools (`ignite mcp PATH`, LANGUAGE.md §13).
//!
//! Input: an [`Engine`] and the capabilities granted (`--capabilities`).
//! Output: a [`Catalog`] of what is listed, and the [`server`] that
//! answers `tools/list` and `tools/call` with the official Rust SDK,
//! `rmcp`, over stdio (a line transport of its own: [`stdio`]) or
//! Streamable HTTP ([`http`]).
//!
//! | listed | when | `inputSchema` | `outputSchema` | a call |
//! | --- | --- | --- | --- | --- |
//! | a tool, by its `tool_name` | the grant covers its required capabilities (none: always) | its params, as `ignite schema` shows them | its `result` type | [`Engine::call_tool`]: validated, through the effect stores |
//! | a top-level contract, by name | the grant covers every tool it can reach (its nodes, its agents' tools, composed contracts) | its inputs, as `GET /contracts` shows them | its outputs | [`Engine::run`], as `ignite run` |
//!
//! `structuredContent` must be an object: an object result is sent as
//! it is, any other value (a tool's `integer`, a tool without `result`)
//! as `{"result": value}`, and the `outputSchema` says which. A name that
//! two listed entries share is an error at start.

pub(crate) mod http;
mod progress;
pub(crate) mod server;
mod stdio;

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::ir::{ContractId, Program, ToolId};
use crate::runtime::Engine;
use crate::tools::{Registry, ToolSource, Toolbox, type_schema};

/// What a listed entry runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// One tool, on its own.
    Tool(ToolId),
    /// A whole contract.
    Contract(ContractId),
}

/// One MCP tool: a tool or a contract of the program.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The MCP tool name: the tool's `tool_name`, the contract's name.
    pub(crate) name: String,
    /// What it does.
    pub(crate) description: String,
    /// The JSON Schema of its arguments (an object).
    pub(crate) input_schema: Map<String, Value>,
    /// The JSON Schema of its `structuredContent` (an object).
    pub(crate) output_schema: Map<String, Value>,
    /// True when the value is sent as `{"result": value}`.
    pub(crate) wrapped: bool,
    /// What a call runs.
    pub(crate) target: Target,
}

impl Entry {
    /// The `structuredContent` of a call that answered `value`.
    #[must_use]
    pub(crate) fn structured(&self, value: Value) -> Value {
        if self.wrapped { json!({ "result": value }) } else { value }
    }
}

/// A program's tools and contracts as listed to MCP clients holding a
/// grant, in declaration order (tools first).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Catalog {
    entries: Vec<Entry>,
    /// Tools and contracts left out, with the capabilities they need.
    withheld: Vec<(String, Vec<String>)>,
}

impl Catalog {
    /// What `engine`'s program lists to a client granted `grant`.
    ///
    /// # Errors
    /// Two listed entries share a name (naming both and the fix).
    pub(crate) fn new(engine: &Engine, grant: &[String]) -> Result<Self, String> {
        let program = engine.program();
        let registry = Registry::from_program(program, &Toolbox::new());
        let mut entries = Vec::new();
        let mut withheld = Vec::new();
        for tool in registry.all() {
            let ToolSource::Declared(id) = tool.source else { continue };
            if !crate::tools::covers(&tool.capabilities, grant) {
                withheld.push((tool.name.clone(), tool.capabilities.clone()));
                continue;
            }
            let (output_schema, wrapped) = match &program[id].result {
                Some(ty) => object_or_wrapped(type_schema(ty)),
                None => object_or_wrapped(Map::new()),
            };
            entries.push(Entry {
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: as_object(tool.parameters.clone()),
                output_schema,
                wrapped,
                target: Target::Tool(id),
            });
        }
        for id in engine.roots() {
            let contract = &program[id];
            let needed = needed_capabilities(program, id);
            if !crate::tools::covers(&needed, grant) {
                withheld.push((contract.name.clone(), needed));
                continue;
            }
            entries.push(Entry {
                name: contract.name.clone(),
                description: format!(
                    "Runs the ignite contract `{}` and returns its outputs",
                    contract.name
                ),
                input_schema: as_object(crate::serve::input_schema(program, id)),
                output_schema: as_object(crate::serve::output_schema(program, id)),
                wrapped: false,
                target: Target::Contract(id),
            });
        }
        for (i, entry) in entries.iter().enumerate() {
            if let Some(first) = entries[..i].iter().find(|e| e.name == entry.name) {
                return Err(format!(
                    "two MCP tools would be named `{}`: {} and {}; rename one (a tool's `tool_name` or a contract)",
                    entry.name,
                    describe(program, first.target),
                    describe(program, entry.target)
                ));
            }
        }
        Ok(Self { entries, withheld })
    }

    /// The listed entries.
    #[must_use]
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry called `name`.
    #[must_use]
    pub(crate) fn find(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Why `name` is not listed: an unknown name (with "did you mean") or
    /// one the grant does not cover.
    #[must_use]
    pub(crate) fn unknown(&self, name: &str) -> String {
        if let Some((_, needed)) = self.withheld.iter().find(|(n, _)| n == name) {
            return format!(
                "tool `{name}` needs capabilit{} `{}`, which this server was not granted; start it with `--capabilities {}`",
                if needed.len() == 1 { "y" } else { "ies" },
                needed.join("`, `"),
                needed.join(",")
            );
        }
        match crate::suggest::closest(name, self.entries.iter().map(|e| e.name.as_str())) {
            Some(close) => format!("no tool `{name}`; did you mean `{close}`?"),
            None => format!("no tool `{name}`; see `tools/list` for the tools served"),
        }
    }
}

/// `schema` as the object schema MCP wants, and whether values are wrapped
/// in `{"result": ...}` to fit it.
fn object_or_wrapped(schema: Map<String, Value>) -> (Map<String, Value>, bool) {
    if schema.get("type").and_then(Value::as_str) == Some("object") {
        return (schema, false);
    }
    let mut properties = Map::new();
    properties.insert("result".into(), Value::Object(schema));
    let wrapped = crate::tools::schema::object_schema(properties, vec!["result".into()]);
    (as_object(wrapped), true)
}

fn as_object(schema: Value) -> Map<String, Value> {
    match schema {
        Value::Object(object) => object,
        _ => unreachable!("input and output schemas are objects"),
    }
}

/// Every capability a tool reachable from contract `id` requires: its tool
/// nodes, its agents' tools and those of the contracts it composes.
fn needed_capabilities(program: &Program, id: ContractId) -> Vec<String> {
    let needed: BTreeSet<&String> = program
        .reachable_tools(id)
        .into_iter()
        .flat_map(|(_, _, tool)| &program[tool].capabilities)
        .collect();
    needed.into_iter().cloned().collect()
}

fn describe(program: &Program, target: Target) -> String {
    match target {
        Target::Tool(id) => format!("tool `{}`", program[id].name),
        Target::Contract(id) => format!("contract `{}`", program[id].name),
    }
}

#[cfg(test)]
mod tests {
    use super::{Catalog, Target};
    use crate::runtime::Engine;

    fn engine(text: &str) -> Engine {
        Engine::new(crate::compile_source("mcp.ign", text).program.expect("compiles"))
    }

    const PROGRAM: &str = r#"
tool Add {
  description "Adds"
  param a: integer
  param b: integer
  result integer
  returns a + b
}

tool Mail {
  description "Sends mail"
  param to: string
  requires_capability email_send
  returns { sent: true }
}

contract Notify {
  input to: string
  compute sent = Mail(to: to)
  output sent
}

contract Sum {
  input a: integer
  compute total = Add(a: a, b: 1)
  output total
}
"#;

    #[test]
    fn the_grant_decides_what_is_listed() {
        let engine = engine(PROGRAM);
        let none = Catalog::new(&engine, &[]).expect("no clash");
        let names: Vec<&str> = none.entries().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["add", "Sum"]);
        assert!(
            none.unknown("mail").contains("--capabilities email_send"),
            "{}",
            none.unknown("mail")
        );
        assert!(none.unknown("Notify").contains("email_send"));
        assert_eq!(none.unknown("ad"), "no tool `ad`; did you mean `add`?");
        let granted = Catalog::new(&engine, &["email_send".to_owned()]).expect("no clash");
        let names: Vec<&str> = granted.entries().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["add", "mail", "Notify", "Sum"]);
    }

    #[test]
    fn results_that_are_not_objects_are_wrapped() {
        let engine = engine(PROGRAM);
        let catalog = Catalog::new(&engine, &[]).expect("no clash");
        let add = catalog.find("add").expect("listed");
        assert!(add.wrapped);
        assert_eq!(add.target, Target::Tool(crate::ir::ToolId::from_index(0)));
        assert_eq!(add.structured(3.into()), serde_json::json!({"result": 3}));
        assert_eq!(
            serde_json::Value::Object(add.output_schema.clone())["properties"]["result"]["type"],
            "integer"
        );
        let sum = catalog.find("Sum").expect("listed");
        assert!(!sum.wrapped);
        assert_eq!(sum.output_schema["type"], "object");
    }

    #[test]
    fn a_name_clash_is_an_error_at_start() {
        let engine = engine(
            "tool Echo {\n  param x: integer\n  returns x\n}\n\ncontract echo {\n  input a: integer\n  compute e = Echo(x: a)\n  output e\n}\n",
        );
        let error = Catalog::new(&engine, &[]).expect_err("a clash");
        assert!(error.contains("two MCP tools would be named `echo`"), "{error}");
        assert!(error.contains("tool `Echo` and contract `echo`"), "{error}");
    }
}
