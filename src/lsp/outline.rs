//! The outline (document symbols) and semantic tokens, both from the
//! symbol index of the document's own file (of the last check that
//! parsed, while the text does not).

use lsp_types::{
    DocumentSymbol, SemanticToken, SemanticTokenModifier, SemanticTokenType, SemanticTokens,
    SemanticTokensLegend, SymbolKind,
};

use super::Doc;
use super::analysis::{Analysis, View};
use super::index::Kind;
use crate::ast::{Keyword, RESERVED};
use crate::source::{FileId, Span};

/// The token types, in legend order ([`token_type`] indexes it).
const TYPES: [SemanticTokenType; 12] = [
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
    SemanticTokenType::KEYWORD,
];

/// The legend index of [`SemanticTokenType::KEYWORD`].
const KEYWORD: u32 = 11;

/// What the semantic tokens of this server mean.
#[must_use]
pub(crate) fn legend() -> SemanticTokensLegend {
    SemanticTokensLegend {
        token_types: TYPES.to_vec(),
        token_modifiers: vec![SemanticTokenModifier::DECLARATION],
    }
}

/// The keywords of the root file of `analysis` that parsed: the words of
/// [`Keyword::ALL`] and [`RESERVED`] outside strings and comments and not
/// one of the `names` (sorted), nor a field after `.` or a key before `:`.
fn keywords(analysis: &Analysis, names: &[Span]) -> Vec<Span> {
    let Some((_, root)) = analysis.files.iter().find(|(f, _)| *f == FileId(0)) else {
        return Vec::new();
    };
    let text = &analysis.sources[FileId(0)].text;
    let skip = crate::fmt::text_spans(root, text);
    let (mut skip, mut names) = (skip.iter().peekable(), names.iter().peekable());
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        while skip.next_if(|s| s.end as usize <= at).is_some() {}
        if let Some(s) = skip.peek().filter(|s| s.start as usize <= at) {
            at = s.end as usize;
            continue;
        }
        if !word(bytes[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && word(bytes[at]) {
            at += 1;
        }
        while names.next_if(|s| (s.end as usize) < start).is_some() {}
        let named = names.peek().is_some_and(|s| (s.start as usize) < at);
        let after_dot = text[..start].trim_end_matches([' ', '\t']).ends_with('.');
        let before_colon = text[at..].trim_start_matches([' ', '\t']).starts_with(':');
        let spelt = &text[start..at];
        if !(named || after_dot || before_colon)
            && (Keyword::of(spelt).is_some() || RESERVED.contains(&spelt))
        {
            found.push(Span::new(FileId(0), start, at));
        }
    }
    found
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
    let view = doc.view();
    // The root file's declaration is the first: files are declared first, root first.
    match view.analysis.index.defs.first() {
        Some(root) if root.kind == Kind::File && root.span.file == FileId(0) => children(&view, 0),
        _ => Vec::new(),
    }
}

fn children(view: &View<'_>, owner: usize) -> Vec<DocumentSymbol> {
    view.analysis
        .index
        .children(owner)
        .filter_map(|(id, def)| {
            let kind = symbol_kind(def.kind)?;
            let full = view.range(def.full)?;
            let name_range = view.range(def.span)?;
            let members = children(view, id);
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

/// Every declaration, reference and keyword of the document's own file
/// as a semantic token, in order.
#[must_use]
pub(crate) fn tokens(doc: &Doc) -> SemanticTokens {
    let view = doc.view();
    let index = &view.analysis.index;
    let mut spans: Vec<(Span, u32, bool)> = index
        .defs
        .iter()
        .filter(|d| d.span.file == FileId(0) && d.span.start < d.span.end)
        .filter_map(|d| Some((d.span, token_type(d.kind)?, true)))
        .chain(
            index
                .refs
                .iter()
                .filter(|(s, _)| s.file == FileId(0))
                .filter_map(|&(s, id)| Some((s, token_type(index.defs[id].kind)?, false))),
        )
        .collect();
    spans.sort_by_key(|(s, _, _)| (s.start, s.end));
    let names: Vec<Span> = spans.iter().map(|(s, _, _)| *s).collect();
    spans.extend(keywords(view.analysis, &names).into_iter().map(|s| (s, KEYWORD, false)));
    spans.sort_by_key(|(s, _, _)| (s.start, s.end));
    let (mut line, mut column, mut end) = (0, 0, 0);
    let mut data = Vec::new();
    for (span, token_type, declaration) in spans {
        let Some(range) = view.range(span) else { continue };
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
