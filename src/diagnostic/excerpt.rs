//! The source text a report shows, with very long lines cut down.
//!
//! A report prints every line its labels touch and one line around each.
//! A generated or minified file may hold a line of megabytes; printed
//! whole, one diagnostic would flood the terminal. Lines longer than
//! [`MAX_LINE`] bytes are cut to a window around the labels on them, with
//! `…` where text was left out. Labels are moved into the cut text, and the
//! `file:line:column` header still gives the column in the real line.
//!
//! When no shown line is long, the excerpt shares the file's text. Each
//! read looks only at the lines it shows (found in the line index), so a
//! report costs the same at the start and at the end of a big file.

use std::sync::Arc;

use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};

use crate::source::{SourceFile, line_starts};

/// Longest line shown whole, in bytes.
const MAX_LINE: usize = 160;
/// Bytes kept before the first label of a cut line.
const BEFORE: usize = 40;
/// Bytes kept from the first label of a cut line on.
const AFTER: usize = 80;
/// What stands for the text left out.
const ELLIPSIS: &str = "…";

/// A file's text as a report shows it.
#[derive(Debug)]
pub(super) struct Excerpt {
    name: String,
    text: Arc<str>,
    /// Where each line of `text` starts.
    lines: Arc<[usize]>,
    /// Cut lines: (0-based line number, bytes removed before the window
    /// less the ellipsis), to report real columns.
    cuts: Vec<(usize, isize)>,
}

/// One line to cut: where it is and which window of it to keep.
struct Cut {
    line_start: usize,
    line_end: usize,
    keep: std::ops::Range<usize>,
    /// A label starts on the line (else it is only context).
    labelled: bool,
}

impl Excerpt {
    /// No text of `file` (a file that is not `.ign`, whose lines a report
    /// must not print): the labels all point at its empty start.
    pub(super) fn hidden(file: &SourceFile, spans: &mut [SourceSpan]) -> Self {
        for span in spans.iter_mut() {
            *span = SourceSpan::new(0.into(), 0);
        }
        let name = file.path.display().to_string();
        Self { name, text: Arc::from(""), lines: Arc::from([0usize]), cuts: Vec::new() }
    }

    /// The text of `name` for labels at `spans`; the spans are moved to
    /// where they land in the excerpt.
    pub(super) fn new(file: &SourceFile, spans: &mut [SourceSpan]) -> Self {
        let name = file.path.display().to_string();
        let text = &file.text;
        // A label always covers whole characters, so every cut below and
        // every slice miette takes lies on character boundaries.
        for span in spans.iter_mut() {
            let start = floor(text, span.offset().min(text.len()));
            let end = ceil(text, (span.offset() + span.len()).min(text.len())).max(start);
            *span = SourceSpan::new(start.into(), end - start);
        }
        let cuts = cuts(text, spans);
        if cuts.is_empty() {
            let lines = Arc::clone(file.line_starts());
            return Self { name, text: Arc::clone(text), lines, cuts: Vec::new() };
        }
        let mut out = String::with_capacity(text.len().min(1 << 20));
        let mut done = 0;
        let mut line = 0;
        let mut placed = Vec::new();
        let mut columns = Vec::new();
        for cut in &cuts {
            line += text[done..cut.line_start].bytes().filter(|&b| b == b'\n').count();
            out.push_str(&text[done..cut.line_start]);
            let left = cut.keep.start > cut.line_start;
            if left {
                out.push_str(ELLIPSIS);
            }
            let window = out.len();
            out.push_str(&text[cut.keep.clone()]);
            if cut.keep.end < cut.line_end {
                out.push_str(ELLIPSIS);
            }
            // The real column is the shown one, less the ellipsis, plus
            // the bytes cut before the window.
            let removed = (cut.keep.start - cut.line_start) as isize;
            columns.push((line, removed - if left { ELLIPSIS.len() as isize } else { 0 }));
            placed.push((cut, window, out.len()));
            done = cut.line_end;
        }
        out.push_str(&text[done..]);
        // Where an offset of the file lands in the excerpt.
        let map = |o: usize| match placed.iter().rev().find(|(c, ..)| c.line_start <= o) {
            None => o,
            Some((c, window, _)) if o <= c.line_end => {
                window + o.clamp(c.keep.start, c.keep.end) - c.keep.start
            }
            Some((c, _, new_end)) => o - c.line_end + new_end,
        };
        for span in spans.iter_mut() {
            let start = map(span.offset());
            let end = map(span.offset() + span.len()).max(start);
            *span = SourceSpan::new(start.into(), end - start);
        }
        let lines = line_starts(&out);
        Self { name, text: out.into(), lines, cuts: columns }
    }
}

/// The long lines to cut: those holding a label start, and the lines just
/// before and after them (shown as context), in file order.
fn cuts(text: &str, spans: &[SourceSpan]) -> Vec<Cut> {
    let mut cuts: Vec<Cut> = Vec::new();
    let mut consider = |at: usize, label: Option<usize>| {
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        if line_end - line_start <= MAX_LINE
            || cuts.iter().any(|c| c.line_start == line_start && label.is_none())
        {
            return;
        }
        let anchor = label.unwrap_or(line_start);
        let start = floor(text, anchor.saturating_sub(BEFORE).max(line_start));
        let end = floor(text, (anchor + AFTER).min(line_end));
        let labelled = label.is_some();
        match cuts.iter_mut().find(|c| c.line_start == line_start) {
            None => cuts.push(Cut { line_start, line_end, keep: start..end, labelled }),
            Some(cut) if !cut.labelled => {
                *cut = Cut { line_start, line_end, keep: start..end, labelled }
            }
            // A second label on the line: widen the window to it, unless
            // that would show most of the line.
            Some(cut) => {
                let wide = cut.keep.start.min(start)..cut.keep.end.max(end);
                if wide.len() <= 2 * MAX_LINE {
                    cut.keep = wide;
                }
            }
        }
    };
    for span in spans {
        let start = span.offset().min(text.len());
        consider(start, Some(start));
        let line_start = text[..start].rfind('\n');
        // The line before: its end (the `\n`, so a character boundary).
        if let Some(before) = line_start.filter(|&i| i > 0) {
            consider(before, None);
        }
        if let Some(after) =
            text[start..].find('\n').map(|i| start + i + 1).filter(|&i| i < text.len())
        {
            consider(after, None);
        }
    }
    cuts.sort_by_key(|c| c.line_start);
    cuts
}

/// The closest char boundary at or before `at`.
fn floor(text: &str, at: usize) -> usize {
    (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0)
}

/// The closest char boundary at or after `at`.
fn ceil(text: &str, at: usize) -> usize {
    (at..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len())
}

impl SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        // The lines shown, read on their own.
        let line_of = |o: usize| self.lines.partition_point(|&s| s <= o).saturating_sub(1);
        let first = line_of(span.offset()).saturating_sub(context_lines_before);
        let last = line_of(span.offset() + span.len().saturating_sub(1)) + context_lines_after;
        let start = self.lines[first];
        let end = self.lines.get(last + 1).copied().unwrap_or(self.text.len());
        let local = SourceSpan::new((span.offset() - start).into(), span.len());
        let contents = self.text.as_bytes()[start..end].read_span(
            &local,
            context_lines_before,
            context_lines_after,
        )?;
        let line = first + contents.line();
        let removed = self.cuts.iter().find(|(l, _)| *l == line).map_or(0, |c| c.1);
        // Only the header's reading (no context) starts inside a line.
        let column = if context_lines_before == 0 {
            contents.column().saturating_add_signed(removed)
        } else {
            0
        };
        let at = SourceSpan::new((contents.span().offset() + start).into(), contents.span().len());
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            contents.data(),
            at,
            line,
            column,
            // miette counts the lines from the start of the text (and
            // merges snippets by it): count the same way.
            first + contents.line_count(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::{Code, Diagnostic, Diagnostics};
    use crate::source::{Sources, Span};

    /// Renders one error labelled at `at` of `text`.
    fn render(text: &str, at: usize) -> String {
        let mut sources = Sources::default();
        let file = sources.add("t.ign".into(), text);
        let diagnostics: Diagnostics =
            Diagnostic::error(Code::Syntax, Span::new(file, at, at + 1), "here").label("x").into();
        diagnostics.render(&sources, false, 200)
    }

    #[test]
    fn long_lines_are_cut_around_the_label() {
        let line = "a".repeat(10_000);
        let text = format!("{line}\n{line}b{line}\n{line}\n");
        let at = line.len() * 2 + 1;
        let rendered = render(&text, at);
        assert!(rendered.len() < 2_000, "{rendered}");
        assert!(rendered.contains(&format!("t.ign:2:{}]", line.len() + 1)), "{rendered}");
        assert!(rendered.contains("…aaaa"), "{rendered}");
    }

    #[test]
    fn a_label_near_the_start_of_a_long_line_keeps_its_column() {
        let text = format!("x{}\n", "a".repeat(500));
        for at in [0, 1, 2, 41, 42, 43] {
            let rendered = render(&text, at);
            assert!(rendered.contains(&format!("t.ign:1:{}]", at + 1)), "{at}: {rendered}");
        }
    }

    #[test]
    fn labels_inside_a_character_render() {
        // A label starting or ending inside `\u{fffd}` (3 bytes), on a line
        // after one that ends in it, on long lines and short ones.
        let short = "a\n# caf\u{fffd}\nb\u{fffd}\n".to_owned();
        let long = format!("{}\u{fffd}\n{}\u{fffd}\n", "é".repeat(200), "日".repeat(100));
        for text in [short, long] {
            for at in 0..text.len() {
                let rendered = render(&text, at);
                assert!(rendered.contains("t.ign:"), "{at}: {rendered}");
            }
        }
    }

    #[test]
    fn files_that_are_not_ign_show_no_text() {
        let mut sources = Sources::default();
        let file = sources.add("notes.txt".into(), "API_KEY=secret\n");
        let diagnostics: Diagnostics =
            Diagnostic::error(Code::Syntax, Span::new(file, 8, 14), "here").label("x").into();
        let rendered = diagnostics.render(&sources, false, 200);
        assert!(rendered.contains("notes.txt"), "{rendered}");
        assert!(!rendered.contains("secret") && !rendered.contains("API_KEY"), "{rendered}");
    }
}
