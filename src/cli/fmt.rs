//! `ignite fmt [PATH...]`: rewrite `.ign` files in the canonical layout
//! ([`crate::fmt`]). Folders mean every `*.ign` inside, recursively; `-`
//! reads standard input and writes standard output. `--check` writes
//! nothing and prints a unified diff of each file that is not formatted.
//!
//! A file already formatted is never written (its modification time
//! stays). A file with syntax errors is reported and left alone, and so is
//! a file whose result would break a guarantee of the formatter (an
//! internal error naming the file). Exit code 0 when every file is (or now
//! is) formatted, 1 when a file has syntax errors, cannot be formatted or,
//! with `--check`, is not formatted; 2 for I/O and usage errors.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{GlobalArgs, WIDTH};
use crate::fmt::{FmtError, format};
use crate::source::Sources;

/// Format `.ign` files in the one canonical layout.
#[derive(Debug, clap::Args)]
pub struct FmtArgs {
    /// Files or folders to format (folders: every `*.ign` inside); `-`
    /// formats standard input to standard output.
    #[arg(value_name = "PATH", default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Change nothing: print a diff of what would change and exit 1 when a
    /// file is not formatted.
    #[arg(long)]
    pub check: bool,
}

/// What became of one file.
enum Outcome {
    /// Formatted already, or now.
    Done,
    /// Not formatted (`--check`), or not formattable.
    Failed,
}

impl FmtArgs {
    /// Formats every file and returns the exit code.
    #[must_use]
    pub fn run(self, global: &GlobalArgs) -> ExitCode {
        let mut failed = false;
        for path in &self.paths {
            let outcome = if path.as_os_str() == "-" {
                self.stdin(global)
            } else {
                let files = match super::check::collect(std::slice::from_ref(path)) {
                    Ok(files) => files,
                    Err(message) => return super::usage(&message),
                };
                let mut outcome = Ok(Outcome::Done);
                for file in files {
                    match self.file(&file, global) {
                        Ok(Outcome::Done) => {}
                        other => outcome = other,
                    }
                    if outcome.is_err() {
                        break;
                    }
                }
                outcome
            };
            match outcome {
                Ok(Outcome::Done) => {}
                Ok(Outcome::Failed) => failed = true,
                Err(code) => return code,
            }
        }
        if failed { ExitCode::from(1) } else { ExitCode::SUCCESS }
    }

    fn stdin(&self, global: &GlobalArgs) -> Result<Outcome, ExitCode> {
        let mut text = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut text) {
            return Err(super::usage(&format!("cannot read standard input: {e}")));
        }
        let name = Path::new("<stdin>");
        let Some(formatted) = formatted(name, &text, global) else { return Ok(Outcome::Failed) };
        if self.check {
            if formatted == text {
                return Ok(Outcome::Done);
            }
            print!("{}", diff(name, &text, &formatted));
            return Ok(Outcome::Failed);
        }
        print!("{formatted}");
        Ok(Outcome::Done)
    }

    fn file(&self, path: &Path, global: &GlobalArgs) -> Result<Outcome, ExitCode> {
        let text = match std::fs::read(path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(_) => {
                    eprintln!("error: `{}` is not UTF-8 text; not formatted", path.display());
                    return Ok(Outcome::Failed);
                }
            },
            Err(e) => return Err(super::usage(&format!("cannot read `{}`: {e}", path.display()))),
        };
        let Some(formatted) = formatted(path, &text, global) else { return Ok(Outcome::Failed) };
        if formatted == text {
            return Ok(Outcome::Done);
        }
        if self.check {
            print!("{}", diff(path, &text, &formatted));
            return Ok(Outcome::Failed);
        }
        match std::fs::write(path, formatted) {
            Ok(()) => {
                eprintln!("formatted `{}`", path.display());
                Ok(Outcome::Done)
            }
            Err(e) => Err(super::usage(&format!("cannot write `{}`: {e}", path.display()))),
        }
    }
}

/// The formatted text, or `None` after reporting why there is none.
fn formatted(path: &Path, text: &str, global: &GlobalArgs) -> Option<String> {
    match format(text) {
        Ok(formatted) => Some(formatted),
        Err(FmtError::Syntax(diagnostics)) => {
            let mut sources = Sources::default();
            sources.add(path.to_path_buf(), text);
            eprint!("{}", diagnostics.render(&sources, global.color_stderr(), WIDTH));
            eprintln!("error: `{}` has syntax errors; not formatted", path.display());
            None
        }
        Err(e @ FmtError::Unsafe(_)) => {
            eprintln!("error: `{}`: {e} (a bug of `ignite fmt`: please report it)", path.display());
            None
        }
    }
}

/// A unified diff from `old` to `new`, headed with the file's name.
fn diff(path: &Path, old: &str, new: &str) -> String {
    let name = path.display().to_string();
    let old: Vec<&str> = old.split_inclusive('\n').collect();
    let new: Vec<&str> = new.split_inclusive('\n').collect();
    let mut out = String::new();
    for hunk in similar::group_diff_ops(line_ops(&old, &new), 3) {
        if out.is_empty() {
            out.push_str(&format!("--- {name}\n+++ {name} (formatted)\n"));
        }
        out.push_str(&format!("{}\n", similar::udiff::UnifiedHunkHeader::new(&hunk)));
        for op in &hunk {
            for change in op.iter_changes(&old, &new) {
                out.push_str(&change.tag().to_string());
                out.push_str(change.value());
                if !change.value().ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// The edit from the lines `old` to the lines `new`: a longest common
/// subsequence of lines, as Myers's algorithm finds it.
///
/// A line found on one side only can be in no common subsequence, so the
/// search runs on the lines found on both sides alone and its matches are
/// mapped back: exact, and linear when almost nothing matches (a file
/// reformatted on every line), where Myers's algorithm on the whole is
/// quadratic. A deadline bounds what is left (many lines repeated in a
/// different order): past it the hunks are coarser, still right.
fn line_ops(old: &[&str], new: &[&str]) -> Vec<similar::DiffOp> {
    let mut ids: hashbrown::HashMap<&str, (u32, bool)> = hashbrown::HashMap::new();
    for line in old {
        let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        ids.entry(line).or_insert((next, false));
    }
    let mut new_kept = (Vec::new(), Vec::new());
    for (i, line) in new.iter().enumerate() {
        if let Some((id, shared)) = ids.get_mut(line) {
            *shared = true;
            new_kept.0.push(*id);
            new_kept.1.push(i);
        }
    }
    let mut old_kept = (Vec::new(), Vec::new());
    for (i, line) in old.iter().enumerate() {
        if let Some(&(id, true)) = ids.get(line) {
            old_kept.0.push(id);
            old_kept.1.push(i);
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(500);
    let found = similar::capture_diff_slices_deadline(
        similar::Algorithm::Myers,
        &old_kept.0,
        &new_kept.0,
        Some(deadline),
    );
    // The matched pairs, in the indices of the whole sides, between which
    // everything is deleted (old) or inserted (new).
    let pairs = found.iter().flat_map(|op| match *op {
        similar::DiffOp::Equal { old_index, new_index, len } => (0..len)
            .map(|k| (old_kept.1[old_index + k], new_kept.1[new_index + k]))
            .collect::<Vec<_>>(),
        _ => Vec::new(),
    });
    let mut ops = Vec::new();
    let mut at = (0, 0);
    for (o, n) in pairs {
        gap(&mut ops, at, (o, n));
        match ops.last_mut() {
            Some(similar::DiffOp::Equal { old_index, len, .. }) if *old_index + *len == o => {
                *len += 1;
            }
            _ => ops.push(similar::DiffOp::Equal { old_index: o, new_index: n, len: 1 }),
        }
        at = (o + 1, n + 1);
    }
    gap(&mut ops, at, (old.len(), new.len()));
    ops
}

/// Pushes onto `ops` the deletion and insertion between the line pairs
/// `from` and `to` (old, new), if any.
fn gap(ops: &mut Vec<similar::DiffOp>, from: (usize, usize), to: (usize, usize)) {
    if to.0 > from.0 {
        ops.push(similar::DiffOp::Delete {
            old_index: from.0,
            old_len: to.0 - from.0,
            new_index: from.1,
        });
    }
    if to.1 > from.1 {
        ops.push(similar::DiffOp::Insert {
            old_index: to.0,
            new_index: from.1,
            new_len: to.1 - from.1,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::{diff, line_ops};
    use similar::DiffOp;

    /// The two sides rebuilt from `ops`, and how many lines they keep.
    fn apply<'a>(
        ops: &[DiffOp],
        old: &[&'a str],
        new: &[&'a str],
    ) -> (Vec<&'a str>, Vec<&'a str>, usize) {
        let (mut was, mut now, mut kept) = (Vec::new(), Vec::new(), 0);
        for op in ops {
            match *op {
                DiffOp::Equal { old_index, new_index, len } => {
                    assert_eq!(old[old_index..old_index + len], new[new_index..new_index + len]);
                    was.extend(&old[old_index..old_index + len]);
                    now.extend(&old[old_index..old_index + len]);
                    kept += len;
                }
                DiffOp::Delete { old_index, old_len, .. } => {
                    was.extend(&old[old_index..old_index + old_len]);
                }
                DiffOp::Insert { new_index, new_len, .. } => {
                    now.extend(&new[new_index..new_index + new_len]);
                }
                DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                    was.extend(&old[old_index..old_index + old_len]);
                    now.extend(&new[new_index..new_index + new_len]);
                }
            }
        }
        (was, now, kept)
    }

    /// On small sides of few distinct lines (most shared, some not), the
    /// edit rebuilds both sides and keeps as many lines as Myers's
    /// algorithm on the whole sides.
    #[test]
    fn the_line_edit_is_a_longest_common_subsequence() {
        let mut seed = 7_u64;
        let mut next = move |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        let words = ["a\n", "b\n", "c\n", "d\n", "e\n", "f\n", "g\n", "h\n", "}\n", "\n"];
        for _ in 0..2000 {
            let mut side = |from: usize| -> Vec<&str> {
                (0..next(14)).map(|_| words[from + next(6) as usize]).collect()
            };
            let (old, new) = (side(0), side(4));
            let (was, now, kept) = apply(&line_ops(&old, &new), &old, &new);
            assert_eq!((&was, &now), (&old, &new));
            let whole = similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new);
            assert_eq!(kept, apply(&whole, &old, &new).2, "{old:?} -> {new:?}");
        }
    }

    /// The unified diff reads as `similar`'s, a missing last newline
    /// flagged.
    #[test]
    fn the_diff_is_unified() {
        let old = "contract A {\n    input x:integer\n  output x\n}";
        let new = "contract A {\n  input x: integer\n  output x\n}\n";
        let expected = similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header("a.ign", "a.ign (formatted)")
            .to_string();
        assert_eq!(diff(std::path::Path::new("a.ign"), old, new), expected);
        assert!(expected.contains("\\ No newline at end of file"), "{expected}");
    }
}
