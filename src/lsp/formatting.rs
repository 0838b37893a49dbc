//! Whole-document formatting through [`crate::fmt`], the formatter of
//! `ignite fmt`.

use lsp_types::{Position, Range, TextEdit};

use super::Doc;
use super::text;
use crate::fmt::FmtError;
use crate::source::line_starts;

/// The edit that formats `doc` (none when it is formatted already).
///
/// # Errors
///
/// The text has syntax errors (they are the document's diagnostics), or
/// the formatter refused its own result.
pub(crate) fn format(doc: &Doc) -> Result<Vec<TextEdit>, String> {
    let formatted = crate::fmt::format(&doc.text).map_err(|e| match e {
        FmtError::Syntax(_) => format!(
            "`{}` has syntax errors and is not formatted; fix them first",
            doc.path.display()
        ),
        unsafe_result @ FmtError::Unsafe(_) => unsafe_result.to_string(),
    })?;
    if formatted == *doc.text {
        return Ok(Vec::new());
    }
    let end = text::position(&doc.text, &line_starts(&doc.text), doc.text.len());
    Ok(vec![TextEdit::new(Range::new(Position::new(0, 0), end), formatted)])
}
