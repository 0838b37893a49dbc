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

/// Arguments of `ignite fmt`.
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
    // A deadline: the diff of a big file changed on every line would
    // otherwise take minutes; past it the hunks are coarser, still right.
    similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(500))
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&name, &format!("{name} (formatted)"))
        .to_string()
}
