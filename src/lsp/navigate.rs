//! Definition, references and rename, from the symbol index of each open
//! root (of the last check that parsed, while a text does not).

use std::collections::HashMap;
use std::path::PathBuf;

use lsp_types::{
    GotoDefinitionResponse, Location, Position, PrepareRenameResponse, TextEdit, WorkspaceEdit,
};

use super::Doc;
use super::analysis::{Analysis, View};
use super::index::Kind;
use crate::ast::RESERVED;
use crate::source::{FileId, Span};

/// The declaration named at `position` of `view`'s document, and the
/// name's span.
#[must_use]
pub(crate) fn named_at(view: &View<'_>, position: Position) -> Option<(usize, Span)> {
    let offset = view.offset(position)?;
    view.analysis.index.at(FileId(0), offset)
}

/// Where the name at `position` is declared.
#[must_use]
pub(crate) fn definition(doc: &Doc, position: Position) -> Option<GotoDefinitionResponse> {
    let view = doc.view();
    let (id, _) = named_at(&view, position)?;
    let def = &view.analysis.index.defs[id];
    view.location(def.span).map(GotoDefinitionResponse::Scalar)
}

/// A declaration told apart across checks: its file and name's place.
#[derive(PartialEq, Eq)]
struct Anchor {
    path: PathBuf,
    kind: Kind,
    start: u32,
}

fn anchor(analysis: &Analysis, id: usize) -> Anchor {
    let def = &analysis.index.defs[id];
    Anchor {
        path: crate::load::key(&analysis.sources[def.span.file].path),
        kind: def.kind,
        start: def.span.start,
    }
}

/// The declaration of `analysis` at `anchor`, if it read that file.
fn find(analysis: &Analysis, anchor: &Anchor) -> Option<usize> {
    let file = analysis.file(&anchor.path)?;
    analysis
        .index
        .defs
        .iter()
        .position(|d| d.span.file == file && d.kind == anchor.kind && d.span.start == anchor.start)
}

/// Every place that names the declaration at `position` (the declaration
/// too when `declaration`), gathered from every open root.
#[must_use]
pub(crate) fn references(
    doc: &Doc,
    docs: &[&Doc],
    position: Position,
    declaration: bool,
) -> Option<Vec<Location>> {
    let view = doc.view();
    let (id, _) = named_at(&view, position)?;
    let anchor = anchor(view.analysis, id);
    let mut found: Vec<Location> = Vec::new();
    for other in std::iter::once(&doc).chain(docs) {
        let view = other.view();
        let analysis = view.analysis;
        let Some(id) = find(analysis, &anchor) else { continue };
        let def = &analysis.index.defs[id];
        let spans = declaration.then_some(def.span).into_iter().chain(analysis.index.refs_to(id));
        for location in spans.filter_map(|span| view.location(span)) {
            if !found.contains(&location) {
                found.push(location);
            }
        }
    }
    Some(found)
}

/// The name at `position`, when it can be renamed.
#[must_use]
pub(crate) fn prepare_rename(doc: &Doc, position: Position) -> Option<PrepareRenameResponse> {
    let view = doc.view();
    let (id, span) = named_at(&view, position)?;
    if !renamable(view.analysis.index.defs[id].kind) {
        return None;
    }
    Some(PrepareRenameResponse::Range(view.range(span)?))
}

fn renamable(kind: Kind) -> bool {
    !matches!(kind, Kind::File | Kind::Test | Kind::Eval)
}

/// The edits that rename the declaration at `position` to `new_name` and
/// every reference to it, in every file the open roots read.
///
/// # Errors
///
/// Nothing renamable there, or `new_name` is not a name.
pub(crate) fn rename(
    doc: &Doc,
    docs: &[&Doc],
    position: Position,
    new_name: &str,
) -> Result<WorkspaceEdit, String> {
    let view = doc.view();
    let Some((id, _)) = named_at(&view, position) else {
        return Err("there is no name to rename here".to_owned());
    };
    let kind = view.analysis.index.defs[id].kind;
    if !renamable(kind) {
        return Err(format!("a {} cannot be renamed here", kind.word()));
    }
    check_name(new_name)?;
    let locations = references(doc, docs, position, true).unwrap_or_default();
    let mut changes: HashMap<lsp_types::Url, Vec<TextEdit>> = HashMap::new();
    for location in locations {
        changes
            .entry(location.uri)
            .or_default()
            .push(TextEdit::new(location.range, new_name.to_owned()));
    }
    Ok(WorkspaceEdit { changes: Some(changes), ..WorkspaceEdit::default() })
}

/// Checks that `name` can name a declaration.
fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let starts_well = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !starts_well || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "`{name}` is not a name; help: use letters, digits and `_`, starting with a letter"
        ));
    }
    if RESERVED.contains(&name) {
        return Err(format!("`{name}` is a reserved word; help: choose another name"));
    }
    Ok(())
}
