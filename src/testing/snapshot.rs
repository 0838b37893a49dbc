//! Snapshots: a test's outputs (and, with `snapshot calls`, its tool
//! calls) as pretty JSON in `__snapshots__/FILE.TEST.snap` beside the
//! file that declares the test.
//!
//! `FILE` is the file's stem and `TEST` the test's name with every
//! character other than ASCII letters, digits, `-` and `_` replaced by `_`
//! ([`slug`]), so names are portable and a snapshot is found from its test
//! alone (`check` refuses two tests of a file that would share one). The
//! text is stable: object keys keep their order (outputs in declaration
//! order), calls are sorted by node (the calls of one agent run in the
//! order the model made them), images and documents show their media type,
//! size and SHA-256 instead of their bytes, and the file ends with one
//! newline.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use similar::{ChangeTag, TextDiff};

/// The folder snapshots live in, beside the test's file.
pub(crate) const DIR: &str = "__snapshots__";

/// The snapshot file of test `name` declared in `file`.
#[must_use]
pub(crate) fn path(file: &Path, name: &str) -> PathBuf {
    let dir = file.parent().unwrap_or_else(|| Path::new(".")).join(DIR);
    dir.join(format!("{}.{}.snap", stem(file), slug(name)))
}

fn stem(file: &Path) -> String {
    file.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned())
}

pub(crate) use crate::ir::slug;

/// The snapshot text of a run: the test's name, its outputs and, when
/// given, its calls.
#[must_use]
pub(crate) fn render(name: &str, outputs: &Map<String, Value>, calls: Option<&[Value]>) -> String {
    let mut document = json!({ "test": name, "outputs": outputs });
    if let (Some(calls), Value::Object(map)) = (calls, &mut document) {
        map.insert("calls".to_owned(), Value::Array(calls.to_vec()));
    }
    crate::media::summarize(&mut document);
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}

/// The snapshots in `dir` that belong to `file` (named `STEM.*.snap`).
#[must_use]
pub(crate) fn of_file(file: &Path) -> Vec<PathBuf> {
    let dir = file.parent().unwrap_or_else(|| Path::new(".")).join(DIR);
    let prefix = format!("{}.", stem(file));
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with(&prefix)
                    && n.ends_with(".snap")
                    && !n[prefix.len()..n.len() - ".snap".len()].contains('.')
            })
        })
        .collect();
    found.sort();
    found
}

/// A unified diff from `stored` to `actual`, `-` lines stored, `+` lines
/// new, with three lines of context.
#[must_use]
pub(crate) fn diff(stored: &str, actual: &str) -> String {
    let diff = TextDiff::from_lines(stored, actual);
    let mut out = String::new();
    for (i, group) in diff.grouped_ops(3).iter().enumerate() {
        if i > 0 {
            out.push_str("   ...\n");
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Delete => "-",
                    ChangeTag::Insert => "+",
                    ChangeTag::Equal => " ",
                };
                out.push_str(sign);
                out.push_str("  ");
                out.push_str(change.value().trim_end_matches('\n'));
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_beside_the_file_and_portable() {
        let p = path(Path::new("contracts/pricing.ign"), "vip gets 15% off");
        assert_eq!(p, Path::new("contracts/__snapshots__/pricing.vip_gets_15__off.snap"));
    }

    #[test]
    fn diffs_mark_removed_and_added_lines() {
        let d = diff("a\nb\nc\n", "a\nx\nc\n");
        assert_eq!(d, "   a\n-  b\n+  x\n   c\n");
    }
}
