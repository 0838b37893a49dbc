//! Hover: what the name under the cursor is. A node's static type; a
//! tool's params, capabilities and the exact JSON Schema each provider of
//! the agents that list it is sent; an agent's providers, models, tools and
//! capability closure; a type's fields; any other declaration as written.

use std::fmt::Write as _;

use lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind, Position};

use super::Doc;
use super::analysis::Analysis;
use super::index::{Def, Kind};
use super::navigate::named_at;
use crate::ir::{self, Program, ProviderChoice, ProviderKind};
use crate::tools::Toolbox;

/// The most of a declaration's text a hover shows.
const MAX_SOURCE: usize = 600;

/// The hover of the name at `position`.
#[must_use]
pub(crate) fn hover(doc: &Doc, position: Position) -> Option<Hover> {
    let view = doc.view();
    let (id, span) = named_at(&view, position)?;
    let analysis = view.analysis;
    let def = &analysis.index.defs[id];
    let program = doc.program();
    let mut text = String::new();
    match def.kind {
        Kind::Tool => tool(&mut text, def, program),
        Kind::Agent => agent(&mut text, def, program),
        Kind::Node => {
            let ty = node_type(doc, analysis, id);
            let ty =
                ty.map_or_else(|| "unknown until the program checks".to_owned(), |t| t.to_string());
            let _ = writeln!(text, "```ignite\n{}: {ty}\n```", def.name);
        }
        Kind::File => {
            let _ = writeln!(text, "file `{}`", def.name);
        }
        _ => {}
    }
    // A tool or agent described from the checked program is not repeated as written.
    if !(matches!(def.kind, Kind::File)
        || matches!(def.kind, Kind::Tool | Kind::Agent) && !text.is_empty())
    {
        let source = analysis.sources.try_slice(def.full).unwrap_or_default();
        let mut shown: String = source.chars().take(MAX_SOURCE).collect();
        if shown.len() < source.len() {
            shown.push_str("\n…");
        }
        let _ = write!(
            text,
            "{} `{}`, declared as:\n```ignite\n{shown}\n```",
            def.kind.word(),
            def.name
        );
    }
    let range = view.range(span);
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: text }),
        range,
    })
}

/// The static type of node `id` (of the index of `analysis`, a check of
/// `doc`), from the checked program: its contract's and its name's.
#[must_use]
pub(crate) fn node_type(doc: &Doc, analysis: &Analysis, id: usize) -> Option<ir::Type> {
    let index = &analysis.index;
    let def = &index.defs[id];
    let contract = &index.defs[def.parent?];
    type_in(doc.program()?, &contract.name, &def.name)
}

/// The static type of node `node` of contract `contract`.
#[must_use]
pub(crate) fn type_in(program: &Program, contract: &str, node: &str) -> Option<ir::Type> {
    let contract = &program[program.contract_named(contract)?];
    contract.types.get(contract.node_named(node)?.index()).cloned()
}

fn provider_kind(program: &Program, choice: &ProviderChoice) -> Option<ProviderKind> {
    match choice {
        ProviderChoice::Kind(kind) => Some(*kind),
        ProviderChoice::Declared(id) => Some(program[*id].kind),
        ProviderChoice::Script(_) => None,
    }
}

fn tool(text: &mut String, def: &Def, program: Option<&Program>) {
    let Some(program) = program else { return };
    let Some(id) = program.tools.iter().position(|t| t.name == def.name) else { return };
    let tool = &program.tools[id];
    let _ = writeln!(text, "**tool `{}`** (models call it `{}`)\n", tool.name, tool.tool_name);
    if !tool.description.is_empty() {
        let _ = writeln!(text, "{}\n", tool.description);
    }
    for param in &tool.params {
        let need = if param.required() { "required" } else { "optional" };
        let about = param.description.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
        let _ = writeln!(text, "- param `{}: {}` ({need}){about}", param.name, param.ty);
    }
    if !tool.capabilities.is_empty() {
        let _ = writeln!(text, "\nrequires capabilities: `{}`", tool.capabilities.join("`, `"));
    }
    let view = Toolbox::new().view(tool);
    let mut kinds: Vec<ProviderKind> = program
        .agents
        .iter()
        .filter(|a| a.tools.iter().any(|t| t.index() == id))
        .flat_map(|a| a.providers.iter().filter_map(|p| provider_kind(program, p)))
        .collect();
    kinds.dedup();
    if kinds.is_empty() {
        let schema = serde_json::to_string_pretty(&view.intermediate()).unwrap_or_default();
        let _ = writeln!(text, "\nthe tool as models see it:\n```json\n{schema}\n```\n");
    }
    for kind in kinds {
        let schema = serde_json::to_string_pretty(&(kind.spec().tool)(&view)).unwrap_or_default();
        let _ = writeln!(text, "\nas sent to `{}`:\n```json\n{schema}\n```\n", kind.name());
    }
}

fn agent(text: &mut String, def: &Def, program: Option<&Program>) {
    let Some(program) = program else { return };
    let Some(agent) = program.agents.iter().find(|a| a.name == def.name) else { return };
    let _ = writeln!(text, "**agent `{}`**\n", agent.name);
    let providers: Vec<String> = agent
        .providers
        .iter()
        .map(|p| match p {
            ProviderChoice::Kind(kind) => kind.name().to_owned(),
            ProviderChoice::Declared(id) => program[*id].name.clone(),
            ProviderChoice::Script(path) => format!("script {}", path.display()),
        })
        .collect();
    let _ = writeln!(text, "- providers: {}", providers.join(", then "));
    let _ = writeln!(
        text,
        "- models: {}",
        agent.models.iter().map(ToString::to_string).collect::<Vec<_>>().join(", then ")
    );
    let tools: Vec<&str> = agent.tools.iter().map(|t| program[*t].name.as_str()).collect();
    let _ = writeln!(
        text,
        "- tools: {}",
        if tools.is_empty() { "none".to_owned() } else { tools.join(", ") }
    );
    let mut closure: Vec<&str> = agent.capabilities.iter().map(String::as_str).collect();
    for tool in &agent.tools {
        closure.extend(program[*tool].capabilities.iter().map(String::as_str));
    }
    closure.sort_unstable();
    closure.dedup();
    let held = if agent.capabilities.is_empty() {
        "none".to_owned()
    } else {
        agent.capabilities.join(", ")
    };
    let _ = writeln!(text, "- capabilities held: {held}");
    let all = if closure.is_empty() { "none".to_owned() } else { closure.join(", ") };
    let _ = writeln!(text, "- capability closure (held and needed by its tools): {all}\n");
}
