//! The outline (document symbols) and semantic tokens, both from the
//! symbol index of the document's own file.

use lsp_types::{
    DocumentSymbol, SemanticToken, SemanticTokenModifier, SemanticTokenType, SemanticTokens,
    SemanticTokensLegend, SymbolKind,
};

use super::Doc;
use super::index::{Index, Kind};
use super::text;
use crate::source::{FileId, Sources, Span};

/// The token types, in legend order ([`token_type`] indexes it).
const TYPES: [SemanticTokenType; 11] = [
    SemanticTokenType::FUNCTION,
    SemanticTokenType::CLASS,
    SemanticTokenType::NAMESPACE,
    SemanticTokenType::INTERFACE,
    SemanticTokenType::TYPE,
    SemanticTokenType::ENUM,
    SemanticTokenType::ENUM_MEMBER,
    SemanticTokenType::PROPERTY,
    SemanticTokenType::PARAMETER,
    SemanticTokenType::VARIABLE,
    SemanticTokenType::STRING,
];

/// What the semantic tokens of this server mean.
#[must_use]
pub(crate) fn legend() -> SemanticTokensLegend {
    SemanticTokensLegend {
        token_types: TYPES.to_vec(),
        token_modifiers: vec![SemanticTokenModifier::DECLARATION],
    }
}

/// The legend index of a declaration kind's token type.
fn token_type(kind: Kind) -> Option<u32> {
    Some(match kind {
        Kind::Tool => 0,
        Kind::Agent => 1,
        Kind::Contract => 2,
        Kind::Provider | Kind::Mcp => 3,
        Kind::Type => 4,
        Kind::Enum => 5,
        Kind::Variant => 6,
        Kind::Field | Kind::Output => 7,
        Kind::Param | Kind::Input => 8,
        Kind::Node | Kind::Local => 9,
        Kind::File => 10,
        Kind::Test | Kind::Eval => return None,
    })
}

fn symbol_kind(kind: Kind) -> Option<SymbolKind> {
    Some(match kind {
        Kind::Tool => SymbolKind::FUNCTION,
        Kind::Agent => SymbolKind::CLASS,
        Kind::Provider | Kind::Mcp => SymbolKind::INTERFACE,
        Kind::Contract => SymbolKind::MODULE,
        Kind::Type => SymbolKind::STRUCT,
        Kind::Enum => SymbolKind::ENUM,
        Kind::Variant => SymbolKind::ENUM_MEMBER,
        Kind::Field => SymbolKind::FIELD,
        Kind::Param | Kind::Input => SymbolKind::VARIABLE,
        Kind::Node => SymbolKind::VARIABLE,
        Kind::Output => SymbolKind::PROPERTY,
        Kind::Test | Kind::Eval => SymbolKind::METHOD,
        Kind::File | Kind::Local => return None,
    })
}

/// The declarations of the document, members under their owners.
#[must_use]
pub(crate) fn symbols(doc: &Doc) -> Vec<DocumentSymbol> {
    let analysis = &doc.analysis;
    // The root file's declaration is the first: files are declared first, root first.
    match analysis.index.defs.first() {
        Some(root) if root.kind == Kind::File && root.span.file == FileId(0) => {
            children(&analysis.index, &analysis.sources, 0)
        }
        _ => Vec::new(),
    }
}

fn children(index: &Index, sources: &Sources, owner: usize) -> Vec<DocumentSymbol> {
    index
        .children(owner)
        .filter_map(|(id, def)| {
            let kind = symbol_kind(def.kind)?;
            let file = &sources[def.span.file];
            let full = text::range(file, def.full.start as usize, def.full.end as usize);
            let name_range = text::range(file, def.span.start as usize, def.span.end as usize);
            let members = children(index, sources, id);
            #[allow(deprecated)]
            Some(DocumentSymbol {
                name: if def.name.is_empty() { "(unnamed)".to_owned() } else { def.name.clone() },
                detail: Some(def.kind.word().to_owned()),
                kind,
                tags: None,
                deprecated: None,
                range: full,
                selection_range: name_range,
                children: (!members.is_empty()).then_some(members),
            })
        })
        .collect()
}

/// Every declaration and reference of the document's own file as a
/// semantic token, in order.
#[must_use]
pub(crate) fn tokens(doc: &Doc) -> SemanticTokens {
    let analysis = &doc.analysis;
    let index = &analysis.index;
    let mut spans: Vec<(Span, Kind, bool)> = index
        .defs
        .iter()
        .filter(|d| d.span.file == FileId(0) && d.span.start < d.span.end)
        .map(|d| (d.span, d.kind, true))
        .chain(
            index
                .refs
                .iter()
                .filter(|(s, _)| s.file == FileId(0))
                .map(|&(s, id)| (s, index.defs[id].kind, false)),
        )
        .collect();
    spans.sort_by_key(|(s, _, _)| (s.start, s.end));
    let Some((_, file)) = analysis.sources.iter().next() else {
        return SemanticTokens::default();
    };
    let (mut line, mut column, mut end) = (0, 0, 0);
    let mut data = Vec::new();
    for (span, kind, declaration) in spans {
        let Some(token_type) = token_type(kind) else { continue };
        let range = text::range(file, span.start as usize, span.end as usize);
        // Tokens neither overlap nor span lines.
        if span.start < end || range.start.line != range.end.line {
            continue;
        }
        end = span.end;
        let delta_line = range.start.line - line;
        let delta_start =
            if delta_line == 0 { range.start.character - column } else { range.start.character };
        data.push(SemanticToken {
            delta_line,
            delta_start,
            length: range.end.character - range.start.character,
            token_type,
            token_modifiers_bitset: u32::from(declaration),
        });
        (line, column) = (range.start.line, range.start.character);
    }
    SemanticTokens { result_id: None, data }
}
