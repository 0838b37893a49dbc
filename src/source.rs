//! Source files and spans.
//!
//! Input: file paths and text. Output: [`SourceFile`]s owned by a
//! [`Sources`] table and [`Span`]s (a file id plus a byte range) that every
//! later stage stores instead of text. Spans are `Copy` and small, so ASTs,
//! IR nodes and diagnostics hold them freely.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Index of a file in [`Sources`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// A byte range in one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Span {
    /// The file the range is in.
    pub file: FileId,
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// A span of `file` from byte `start` to byte `end`.
    #[must_use]
    pub fn new(file: FileId, start: usize, end: usize) -> Self {
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Self { file, start: clamp(start), end: clamp(end) }
    }

    /// The smallest span covering `self` and `other` (same file).
    #[must_use]
    pub fn to(self, other: Span) -> Span {
        Span { file: self.file, start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    /// The byte range, for slicing the file's text.
    #[must_use]
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

impl From<Span> for miette::SourceSpan {
    fn from(span: Span) -> Self {
        (span.start as usize, (span.end - span.start) as usize).into()
    }
}

/// One `.ign` file: its path as the user named it and its text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Path as given on the command line or resolved from a `use`.
    pub path: PathBuf,
    /// The whole text.
    pub text: Arc<str>,
    /// Where each line starts, built on first use (by diagnostics only).
    lines: OnceLock<Arc<[usize]>>,
}

impl SourceFile {
    /// The 1-based line and column (in characters) of byte `offset`.
    #[must_use]
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_of(offset);
        let line_start = self.line_starts()[line];
        (line + 1, self.text[line_start..offset].chars().count() + 1)
    }

    /// The 0-based line that holds byte `offset`.
    #[must_use]
    pub fn line_of(&self, offset: usize) -> usize {
        self.line_starts().partition_point(|&start| start <= offset).saturating_sub(1)
    }

    /// The byte offset where each line starts, the first at 0.
    #[must_use]
    pub fn line_starts(&self) -> &Arc<[usize]> {
        self.lines.get_or_init(|| line_starts(&self.text))
    }

    /// The folder relative paths in this file resolve from; `.` for a
    /// bare file name (`ignite run fs.ign`).
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or_else(|| Path::new("."))
    }
}

/// The byte offset where each line of `text` starts, the first at 0.
#[must_use]
pub fn line_starts(text: &str) -> Arc<[usize]> {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect()
}

/// Every file of a program, indexed by [`FileId`].
#[derive(Debug, Clone, Default)]
pub struct Sources {
    files: Vec<SourceFile>,
}

impl Sources {
    /// Adds a file and returns its id.
    pub fn add(&mut self, path: PathBuf, text: impl Into<Arc<str>>) -> FileId {
        let id = FileId(u32::try_from(self.files.len()).expect("fewer than 2^32 files"));
        self.files.push(SourceFile { path, text: text.into(), lines: OnceLock::new() });
        id
    }

    /// The id of the file at `path`, if it was added.
    #[must_use]
    pub fn find(&self, path: &Path) -> Option<FileId> {
        self.files
            .iter()
            .position(|f| f.path == path)
            .map(|i| FileId(u32::try_from(i).expect("fewer than 2^32 files")))
    }

    /// The text a span covers.
    #[must_use]
    pub fn slice(&self, span: Span) -> &str {
        &self[span.file].text[span.range()]
    }

    /// The text a span covers, when its file is one of these (a program
    /// built by hand may have none).
    #[must_use]
    pub fn try_slice(&self, span: Span) -> Option<&str> {
        self.files.get(span.file.0 as usize)?.text.get(span.range())
    }

    /// All files in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files.iter().enumerate().map(|(i, f)| (FileId(i as u32), f))
    }
}

impl std::ops::Index<FileId> for Sources {
    type Output = SourceFile;
    fn index(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }
}
