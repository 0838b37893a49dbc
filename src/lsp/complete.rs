//! Completion. A half-typed file does not parse, so the place is read from
//! the text before the cursor (the line so far, the declaration it is in,
//! an open call or `match`), and the names from the last check that parsed
//! and the last checked program:
//!
//! - at the start of a statement: the keywords of that place
//!   ([`Keyword`]s of role item, statement, test or eval, and `run` in an eval);
//! - after `.`: the fields of the record before it;
//! - inside a call: the callee's param names, then the names in scope;
//! - after `capabilities`/`requires_capability`, `tools`, `provider`,
//!   `kind`, `run`, `mock`, a `:` of a param: capabilities, tools,
//!   providers, contracts, types;
//! - inside `builtin "…"` and its config object: builtin names and keys;
//! - at an arm of a `match` on an enum: its variants;
//! - anywhere else in an expression: the names in scope, the callables
//!   and the built-in functions.

use lsp_types::{CompletionItem, CompletionItemKind, CompletionResponse, Position};

use super::Doc;
use super::analysis::Analysis;
use super::hover::type_in;
use super::index::Kind;
use super::text;
use crate::ast::{Keyword, KeywordRole};
use crate::ir::{BUILTINS, Function, ProviderKind, TypeKind};
use crate::source::line_starts;

/// The completions at `position` of `doc`.
#[must_use]
pub(crate) fn complete(doc: &Doc, position: Position) -> CompletionResponse {
    let text = &*doc.text;
    let starts = line_starts(text);
    let offset = text::offset(text, &starts, position);
    let line = starts.partition_point(|&s| s <= offset).saturating_sub(1);
    let line_start = starts.get(line).copied().unwrap_or(0);
    let before = &text[line_start..offset];
    let (head, prefix) = before.split_at(word_start(before));
    let block = block_at(text, &starts, line);
    // In a test, `expect` reads the outputs of the contract it runs.
    let block = match block {
        Some((Keyword::Test, _)) => {
            Some((Keyword::Test, run_contract(text, &starts, line).unwrap_or_default()))
        }
        other => other,
    };
    let mut out = Completions { prefix, items: Vec::new() };
    let names = doc.names();
    let trimmed = head.trim_start();
    let first = trimmed.split_whitespace().next().and_then(Keyword::of);
    if let Some(receiver) = head.strip_suffix('.') {
        fields(&mut out, doc, block, receiver);
    } else if trimmed.is_empty() {
        let role = match block {
            None => KeywordRole::Item,
            Some((Keyword::Test, _)) => KeywordRole::Test,
            Some((Keyword::Eval, _)) => KeywordRole::Eval,
            Some(_) => KeywordRole::Statement,
        };
        // An eval's `run` is the test statement's keyword.
        let run = (role == KeywordRole::Eval).then_some(Keyword::Run);
        for keyword in Keyword::ALL.iter().filter(|&&k| k.role() == role || Some(k) == run) {
            out.add(keyword.as_str(), CompletionItemKind::KEYWORD, "keyword");
        }
    } else if let Some(builtin) = builtin_config(trimmed) {
        if let Some(spec) = BUILTINS.iter().find(|b| b.name == builtin) {
            for key in spec.config {
                out.add(
                    key.name,
                    CompletionItemKind::PROPERTY,
                    if key.required { "required config key" } else { "config key" },
                );
            }
        }
    } else if trimmed.ends_with("builtin \"")
        || trimmed.starts_with("builtin \"") && !trimmed[9..].contains('"')
    {
        for spec in BUILTINS {
            out.add(spec.name, CompletionItemKind::VALUE, "builtin");
        }
    } else if first.is_some_and(|k| {
        !(trimmed.contains('=') || trimmed.contains('(')) && statement(&mut out, names, k, trimmed)
    }) {
        // `statement` added the words that may follow its keyword.
    } else if let Some(callee) = open_call(head) {
        if let Some(&id) = names.index.globals.get(callee) {
            for (_, def) in names
                .index
                .children(id)
                .filter(|(_, d)| matches!(d.kind, Kind::Param | Kind::Input | Kind::Node))
            {
                if def.kind != Kind::Node
                    || names.sources.try_slice(def.full).is_some_and(|s| s.starts_with("input"))
                {
                    out.add(&format!("{}:", def.name), CompletionItemKind::FIELD, def.kind.word());
                }
            }
        }
        in_scope(&mut out, doc, block);
    } else if let Some(variants) = match_variants(doc, text, &starts, line, block, head) {
        // After an opening quote the variant goes in bare.
        let quoted = !head.ends_with('"');
        for variant in variants {
            let label = if quoted { format!("\"{variant}\"") } else { variant };
            out.add(&label, CompletionItemKind::ENUM_MEMBER, "variant");
        }
        if quoted {
            out.add("_", CompletionItemKind::KEYWORD, "any other value");
        }
    } else {
        in_scope(&mut out, doc, block);
    }
    CompletionResponse::Array(out.items)
}

/// Where the name that ends `text` starts.
fn word_start(text: &str) -> usize {
    text.char_indices()
        .rev()
        .find(|&(_, c)| !(c.is_alphanumeric() || c == '_'))
        .map_or(0, |(at, c)| at + c.len_utf8())
}

/// The items so far, kept to those that start with what is typed.
struct Completions<'a> {
    prefix: &'a str,
    items: Vec<CompletionItem>,
}

impl Completions<'_> {
    fn add(&mut self, label: &str, kind: CompletionItemKind, detail: &str) {
        let typed = self.prefix.to_lowercase();
        let bare = label.trim_start_matches('"').to_lowercase();
        if !bare.starts_with(&typed) || self.items.iter().any(|i| i.label == label) {
            return;
        }
        self.items.push(CompletionItem {
            label: label.to_owned(),
            kind: Some(kind),
            detail: Some(detail.to_owned()),
            ..CompletionItem::default()
        });
    }
}

/// The top-level declaration line `line` is in: its keyword and name.
/// A declaration starts with its keyword in column 0 and ends at a `}` in
/// column 0.
fn block_at<'t>(text: &'t str, starts: &[usize], line: usize) -> Option<(Keyword, &'t str)> {
    for l in (0..line).rev() {
        let start = starts[l];
        let end = starts.get(l + 1).map_or(text.len(), |&e| e);
        let content = &text[start..end];
        if content.starts_with('}') {
            return None;
        }
        let mut words = content.split(|c: char| c.is_whitespace() || c == '{');
        let Some(keyword) = words.next().and_then(Keyword::of) else { continue };
        if keyword.role() == KeywordRole::Item {
            return match keyword {
                Keyword::Use => None,
                _ => Some((keyword, words.find(|w| !w.is_empty()).unwrap_or_default())),
            };
        }
    }
    None
}

/// The contract the `run` statement of the test block around `line` runs.
fn run_contract<'t>(text: &'t str, starts: &[usize], line: usize) -> Option<&'t str> {
    for l in (0..=line).rev() {
        let content = &text[starts[l]..starts.get(l + 1).map_or(text.len(), |&e| e)];
        if let Some(rest) = content.trim_start().strip_prefix("run ") {
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
            return Some(&rest[..end]);
        }
        if content.starts_with("test") {
            return None;
        }
    }
    None
}

/// The name of the callee of the innermost call still open on `head`.
fn open_call(head: &str) -> Option<&str> {
    let mut depth = 0i32;
    for (at, c) in head.char_indices().rev() {
        match c {
            ')' | ']' | '}' => depth += 1,
            '[' | '{' if depth > 0 => depth -= 1,
            '[' | '{' => return None,
            '(' if depth > 0 => depth -= 1,
            '(' => {
                let callee = head[..at].trim_end();
                return Some(&callee[word_start(callee)..]).filter(|c| !c.is_empty());
            }
            _ => {}
        }
    }
    None
}

/// The builtin whose config object `trimmed` (a line so far) is inside.
fn builtin_config(trimmed: &str) -> Option<&str> {
    let rest = trimmed.strip_prefix("builtin \"")?;
    let (name, after) = rest.split_once('"')?;
    let after = after.trim_start();
    (after.starts_with('{') && !after.contains('}')).then_some(name)
}

/// The completions after a statement keyword; false when the statement
/// takes an expression there (the names in scope then).
fn statement(out: &mut Completions<'_>, names: &Analysis, keyword: Keyword, trimmed: &str) -> bool {
    let index = &names.index;
    let globals = |out: &mut Completions<'_>, kinds: &[Kind], item: CompletionItemKind| {
        let mut found: Vec<(&String, &str)> = index
            .globals
            .iter()
            .filter(|&(_, &id)| kinds.contains(&index.defs[id].kind))
            .map(|(name, &id)| (name, index.defs[id].kind.word()))
            .collect();
        found.sort();
        for (name, word) in found {
            out.add(name, item, word);
        }
    };
    match keyword {
        Keyword::Capabilities | Keyword::RequiresCapability => {
            for capability in &index.capabilities {
                out.add(capability, CompletionItemKind::CONSTANT, "capability");
            }
        }
        Keyword::Tools | Keyword::Mock => globals(out, &[Kind::Tool], CompletionItemKind::FUNCTION),
        Keyword::Run => globals(out, &[Kind::Contract], CompletionItemKind::MODULE),
        Keyword::Provider | Keyword::Kind | Keyword::Fallback => {
            for kind in ProviderKind::all() {
                out.add(kind.name(), CompletionItemKind::ENUM_MEMBER, "provider kind");
            }
            if keyword != Keyword::Kind {
                out.add("script", CompletionItemKind::KEYWORD, "scripted replies from a file");
                globals(out, &[Kind::Provider], CompletionItemKind::INTERFACE);
            }
        }
        Keyword::Param | Keyword::Input | Keyword::Result
            if trimmed.contains(':') || keyword == Keyword::Result =>
        {
            for name in crate::lower::TYPE_NAMES {
                out.add(name, CompletionItemKind::TYPE_PARAMETER, "type");
            }
            globals(out, &[Kind::Type, Kind::Enum], CompletionItemKind::STRUCT);
        }
        Keyword::Runner => {
            out.add(Keyword::Inline.as_str(), CompletionItemKind::KEYWORD, "one node at a time");
            out.add(
                Keyword::ThreadPool.as_str(),
                CompletionItemKind::KEYWORD,
                "a pool of `pool_size` nodes",
            );
        }
        Keyword::Budget => {
            out.add(Keyword::Usd.as_str(), CompletionItemKind::KEYWORD, "USD, by the `price`s");
            out.add(Keyword::ModelCalls.as_str(), CompletionItemKind::KEYWORD, "model requests");
            out.add(Keyword::Tokens.as_str(), CompletionItemKind::KEYWORD, "tokens in and out");
        }
        _ => return false,
    }
    true
}

/// The fields of the record `receiver` (the text before a `.`) is.
fn fields(out: &mut Completions<'_>, doc: &Doc, block: Option<(Keyword, &str)>, receiver: &str) {
    let node = &receiver[word_start(receiver)..];
    let (Some(program), Some((Keyword::Contract, contract))) = (doc.program(), block) else {
        return;
    };
    let Some(ty) = type_in(program, contract, node) else { return };
    if let TypeKind::Record(record) = &ty.kind {
        for field in &record.fields {
            out.add(&field.name, CompletionItemKind::FIELD, &field.ty.to_string());
        }
    }
}

/// The variants of the enum a `match` still open before the cursor is on.
fn match_variants(
    doc: &Doc,
    text: &str,
    starts: &[usize],
    line: usize,
    block: Option<(Keyword, &str)>,
    head: &str,
) -> Option<Vec<String>> {
    let Some((Keyword::Contract, contract)) = block else { return None };
    if !matches!(head.trim(), "" | "\"") {
        return None;
    }
    let mut depth = 0;
    for l in (0..line).rev() {
        let content = &text[starts[l]..starts[l + 1]];
        depth += content.matches('}').count();
        let opened = content.matches('{').count();
        if opened > depth {
            let (_, rest) = content.split_once("match ")?;
            let scrutinee = rest.trim_end().strip_suffix('{')?.trim();
            let ty = type_in(doc.program()?, contract, scrutinee)?;
            return match &ty.kind {
                TypeKind::Enum(decl) => Some(decl.variants.clone()),
                _ => None,
            };
        }
        depth -= opened;
        if content.starts_with("contract") {
            return None;
        }
    }
    None
}

/// The names an expression of the declaration at the cursor may use.
fn in_scope(out: &mut Completions<'_>, doc: &Doc, block: Option<(Keyword, &str)>) {
    let names = doc.names();
    let index = &names.index;
    if let Some((keyword, name)) = block {
        if let Some(&id) = index.globals.get(name) {
            for (_, def) in index.children(id) {
                let item = match (keyword, def.kind) {
                    (Keyword::Contract, Kind::Node) => CompletionItemKind::VARIABLE,
                    (Keyword::Test, _) => continue,
                    (Keyword::Tool, Kind::Param) | (Keyword::Agent, Kind::Input) => {
                        CompletionItemKind::VARIABLE
                    }
                    _ => continue,
                };
                out.add(&def.name, item, def.kind.word());
            }
        }
    }
    if let Some((Keyword::Test, contract)) = block {
        if let Some(&id) = index.globals.get(contract) {
            for (name, _) in index.outputs_of(id) {
                out.add(name, CompletionItemKind::VARIABLE, "output");
            }
        }
    }
    let mut callables: Vec<(&String, usize)> = index
        .globals
        .iter()
        .filter(|&(_, &id)| {
            matches!(index.defs[id].kind, Kind::Tool | Kind::Agent | Kind::Contract)
        })
        .map(|(name, &id)| (name, id))
        .collect();
    callables.sort();
    for (name, id) in callables {
        out.add(name, CompletionItemKind::FUNCTION, index.defs[id].kind.word());
    }
    for function in Function::ALL {
        out.add(function.name(), CompletionItemKind::FUNCTION, "built-in function");
    }
    for keyword in Keyword::ALL.iter().filter(|k| k.role() == KeywordRole::Expression) {
        out.add(keyword.as_str(), CompletionItemKind::KEYWORD, "keyword");
    }
    for word in ["true", "false", "null", "and", "or", "not"] {
        out.add(word, CompletionItemKind::KEYWORD, "keyword");
    }
}
