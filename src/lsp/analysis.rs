//! One check of a root file, as `ignite check` does it, with the open
//! buffers in place of the files on disk, kept with its syntax trees and
//! symbol index for the requests that follow. A [`View`] reads a check
//! for a document's current text: the last one that parsed, its places
//! carried across the edits made since.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Position, Range,
    Url,
};

use super::index::Index;
use super::text::{self, Shift};
use crate::ast;
use crate::diagnostic::{Diagnostics, Severity};
use crate::ir::Program;
use crate::source::{FileId, Sources, Span};

/// The result of checking one root.
#[derive(Debug, Default)]
pub(crate) struct Analysis {
    /// Every file read, the root first.
    pub sources: Sources,
    /// The files that parsed, in load order.
    parsed: Vec<FileId>,
    /// Their syntax trees, taken by [`Analysis::index`] (lowering consumes
    /// the load's).
    pub files: Vec<(FileId, ast::File)>,
    /// Every diagnostic of reading, parsing and checking.
    pub diagnostics: Diagnostics,
    /// The declarations and references of the files that parsed.
    pub index: Index,
    /// The checked program, when there is no error.
    pub program: Option<Program>,
}

impl Analysis {
    /// Checks `root`, reading the files of `open` (by canonical path) from
    /// memory, and the unchanged `use`d files from `cache` (the parses of
    /// the root's last check). The syntax trees and the index are left
    /// empty: [`Analysis::index`] takes and indexes the trees once the
    /// diagnostics are on their way.
    #[must_use]
    pub(crate) fn run(
        root: &Path,
        open: HashMap<PathBuf, Arc<str>>,
        cache: &mut crate::load::ParseCache,
    ) -> Analysis {
        let loaded = crate::load::load_open(root, crate::load::Options::default(), open, cache);
        let parsed = loaded.files.iter().map(|(file, _)| *file).collect();
        let crate::Compilation { sources, diagnostics, program } = crate::finish(loaded);
        Analysis {
            sources,
            parsed,
            files: Vec::new(),
            diagnostics,
            index: Index::default(),
            program,
        }
    }

    /// Takes the syntax trees of this check from the parses `cache` (the
    /// one [`Analysis::run`] was given) kept, and builds the symbol index.
    pub(crate) fn index(&mut self, cache: &crate::load::ParseCache) {
        self.files = cache.trees(&self.sources, &self.parsed);
        self.index = Index::build(&self.sources, &self.files, self.program.as_ref());
    }

    /// True when the root file parsed.
    #[must_use]
    pub(crate) fn parsed(&self) -> bool {
        self.parsed.contains(&FileId(0))
    }

    /// The file of this analysis at `path` (canonical paths compared).
    #[must_use]
    pub(crate) fn file(&self, path: &Path) -> Option<FileId> {
        let wanted = crate::load::key(path);
        self.sources.iter().find(|(_, f)| crate::load::key(&f.path) == wanted).map(|(id, _)| id)
    }

    /// The location of `span`, when its file has a `file:` URL.
    #[must_use]
    pub(crate) fn location(&self, span: Span) -> Option<Location> {
        let file = self.sources.iter().nth(span.file.0 as usize)?.1;
        let uri = url_of(&file.path)?;
        Some(Location::new(uri, text::range(file, span.start as usize, span.end as usize)))
    }

    /// The diagnostics of this check in LSP's shape, by file.
    #[must_use]
    pub(crate) fn lsp_diagnostics(&self) -> HashMap<Url, Vec<lsp_types::Diagnostic>> {
        let mut by_file: HashMap<Url, Vec<lsp_types::Diagnostic>> = HashMap::new();
        // Every file read gets an entry, empty when clean: that clears it.
        for (_, file) in self.sources.iter() {
            if let Some(uri) = url_of(&file.path) {
                by_file.entry(uri).or_default();
            }
        }
        for d in self.diagnostics.iter() {
            let Some(at) = self.location(d.span) else { continue };
            let mut message = d.message.clone();
            if let Some(label) = &d.label {
                message.push_str(&format!(" ({label})"));
            }
            if let Some(help) = &d.help {
                message.push_str(&format!("\nhelp: {help}"));
            }
            let related: Vec<DiagnosticRelatedInformation> = d
                .notes
                .iter()
                .filter_map(|(span, text)| {
                    Some(DiagnosticRelatedInformation {
                        location: self.location(*span)?,
                        message: text.clone(),
                    })
                })
                .collect();
            by_file.entry(at.uri).or_default().push(lsp_types::Diagnostic {
                range: at.range,
                severity: Some(match d.severity {
                    Severity::Error => DiagnosticSeverity::ERROR,
                    Severity::Warning => DiagnosticSeverity::WARNING,
                }),
                code: Some(NumberOrString::String(d.code.as_str().to_owned())),
                source: Some("ignite".to_owned()),
                message,
                related_information: (!related.is_empty()).then_some(related),
                ..lsp_types::Diagnostic::default()
            });
        }
        by_file
    }
}

/// The check a request about a document reads, with the document's
/// current text: the current check when the text parsed, else the last
/// that did, whose root file's places are carried to the current text
/// around what changed since (a place inside the change has none).
#[derive(Debug)]
pub(crate) struct View<'a> {
    /// The check the answers come from.
    pub analysis: &'a Analysis,
    /// The current check's root file and how the view's root maps to it,
    /// when the view's check is of an older text.
    now: Option<(&'a crate::source::SourceFile, Shift)>,
}

impl<'a> View<'a> {
    /// The view of `analysis`, whose root text may be older than that of
    /// `current`.
    #[must_use]
    pub(crate) fn new(analysis: &'a Analysis, current: &'a Analysis) -> View<'a> {
        let root = |a: &'a Analysis| a.sources.iter().next().map(|(_, f)| f);
        let now = match (root(analysis), root(current)) {
            (Some(old), Some(new)) if !std::ptr::eq(analysis, current) && old.text != new.text => {
                Some((new, Shift::between(&old.text, &new.text)))
            }
            _ => None,
        };
        View { analysis, now }
    }

    /// The byte offset in the view's root file of `position` in the
    /// current text.
    #[must_use]
    pub(crate) fn offset(&self, position: Position) -> Option<usize> {
        match &self.now {
            Some((file, shift)) => {
                shift.to_old(text::offset(&file.text, file.line_starts(), position))
            }
            None => {
                let file = self.analysis.sources.iter().next()?.1;
                Some(text::offset(&file.text, file.line_starts(), position))
            }
        }
    }

    /// The place of `span` of the view's check in the current texts:
    /// `None` in a file with no `file:` URL, or where the edit since
    /// replaced it.
    #[must_use]
    pub(crate) fn location(&self, span: Span) -> Option<Location> {
        match &self.now {
            Some((file, shift)) if span.file == FileId(0) => {
                let (start, end) =
                    (shift.to_new(span.start as usize)?, shift.to_new(span.end as usize)?);
                Some(Location::new(url_of(&file.path)?, text::range(file, start, end)))
            }
            _ => self.analysis.location(span),
        }
    }

    /// The range of `span` in the current text of its file (see
    /// [`View::location`]).
    #[must_use]
    pub(crate) fn range(&self, span: Span) -> Option<Range> {
        self.location(span).map(|l| l.range)
    }
}

/// The `file:` URL of `path`, made absolute against the working folder.
#[must_use]
pub(crate) fn url_of(path: &Path) -> Option<Url> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    Url::from_file_path(absolute).ok()
}
