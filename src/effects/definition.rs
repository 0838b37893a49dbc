//! What defines an effect, as a digest: the part of a cache key and of a
//! journal entry that changes when the program's text for the effect
//! changes, so an edit is never answered from a stale store.
//!
//! | effect | its definition covers |
//! | --- | --- |
//! | a tool call | the declaration's text and folder, its params' and `result`'s resolved types (records and enums written out), and the bytes of the files of its folder that an `exec` runs: the program when it is a path, each argument that names a file (a script) |
//! | a whole agent (the cache's) | the declaration's text, its inputs' and `result`'s resolved types, its `provider` declarations (and script files), and each of its tools' definitions and schemas as the model sees them |
//! | a model request | nothing beyond its request body, which holds the prompts, the settings and the tools' schemas |
//!
//! A digest is the SHA-256 of those, in hex.

use std::path::{Component, Path};

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::ir::{AgentId, Implementation, Program, ProviderChoice, ToolId};
use crate::tools::{Toolbox, parameters_schema, type_schema};

/// The SHA-256 of `bytes`, in hex.
#[must_use]
pub(crate) fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The definition of a call of `tool`.
#[must_use]
pub(crate) fn tool(program: &Program, tool: ToolId) -> String {
    digest(tool_material(program, tool).to_string().as_bytes())
}

fn tool_material(program: &Program, id: ToolId) -> Value {
    let tool = &program[id];
    let mut files = Vec::new();
    if let Implementation::Exec { program: command, args } = &tool.implementation {
        let path = command.contains('/').then_some(command.as_str());
        let named = path.into_iter().chain(args.iter().map(String::as_str));
        for name in named {
            if let Some(bytes) = project_file(&tool.dir, name) {
                files.push(json!([name, digest(&bytes)]));
            }
        }
    }
    json!({
        "dir": tool.dir.display().to_string(),
        "declaration": program.sources.try_slice(tool.span),
        "params": parameters_schema(tool),
        "result": tool.result.as_ref().map(type_schema),
        "files": files,
    })
}

/// The bytes of `name` when it names a file inside `dir` (relative, not
/// leaving it): a script of the project. Programs on `PATH`, absolute
/// paths and arguments that name no file are not part of a definition.
fn project_file(dir: &Path, name: &str) -> Option<Vec<u8>> {
    let path = Path::new(name);
    let inside = path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !inside || name.is_empty() {
        return None;
    }
    let path = dir.join(path);
    if !path.is_file() {
        return None;
    }
    std::fs::read(path).ok()
}

/// The definition of a whole run of `agent` (its tools as `toolbox` shows
/// them to the model).
#[must_use]
pub(crate) fn agent(program: &Program, agent: AgentId, toolbox: &Toolbox) -> String {
    let declared = &program[agent];
    let providers: Vec<Value> = declared
        .providers
        .iter()
        .map(|choice| match choice {
            ProviderChoice::Kind(kind) => json!(format!("{kind:?}")),
            ProviderChoice::Declared(id) => json!(program.sources.try_slice(program[*id].span)),
            ProviderChoice::Script(path) => {
                json!([path.display().to_string(), std::fs::read(path).map(|b| digest(&b)).ok()])
            }
        })
        .collect();
    let tools: Vec<Value> = declared
        .tools
        .iter()
        .map(|&id| {
            let view = toolbox.view(&program[id]);
            json!([tool(program, id), view.name, view.description, view.parameters])
        })
        .collect();
    let inputs: Vec<Value> =
        declared.inputs.iter().map(|p| json!([p.name, type_schema(&p.ty), p.default])).collect();
    let material = json!({
        "declaration": program.sources.try_slice(declared.span),
        "inputs": inputs,
        "result": declared.result.as_ref().map(type_schema),
        "providers": providers,
        "tools": tools,
    });
    digest(material.to_string().as_bytes())
}
