//! `ignite check PATH...`: compile each file (folders: every `*.ign` in
//! them, recursively, sorted) as a root and report every diagnostic once.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::ValueEnum;

use super::{GlobalArgs, WIDTH};
use crate::diagnostic::{Diagnostics, Severity};

/// Check `.ign` files and report every problem.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Files or folders to check (folders: every `*.ign` inside).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// How to print diagnostics.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Fail (exit 1) on warnings too.
    #[arg(long)]
    pub deny_warnings: bool,
}

/// How diagnostics are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Reports with source excerpts on stderr.
    Human,
    /// A JSON array of diagnostics on stdout.
    Json,
}

impl CheckArgs {
    /// Runs the check and returns the exit code.
    #[must_use]
    pub fn run(self, global: &GlobalArgs) -> ExitCode {
        let files = match collect(&self.paths) {
            Ok(files) => files,
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::from(2);
            }
        };
        let color = global.color_stderr();
        let mut seen: HashSet<(PathBuf, u32, u32, &'static str, String)> = HashSet::new();
        let mut json = Vec::new();
        let (mut errors, mut warnings) = (0, 0);
        for file in &files {
            let crate::Compilation { sources, diagnostics, program } =
                crate::compile_with(file, global.load_options());
            // `check` only reports; freeing a big checked program node by
            // node costs a tenth of the check, and the process ends soon.
            std::mem::forget(program);
            let mut fresh = Diagnostics::default();
            for d in diagnostics {
                let path = &sources[d.span.file].path;
                let key =
                    (canonical(path), d.span.start, d.span.end, d.code.as_str(), d.message.clone());
                if seen.insert(key) {
                    fresh.push(d);
                }
            }
            errors += fresh.count(Severity::Error);
            warnings += fresh.count(Severity::Warning);
            match self.format {
                Format::Human => eprint!("{}", fresh.render(&sources, color, WIDTH)),
                Format::Json => {
                    if let serde_json::Value::Array(items) = fresh.to_json(&sources) {
                        json.extend(items);
                    }
                }
            }
        }
        let code = if errors > 0 || (self.deny_warnings && warnings > 0) {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        };
        match self.format {
            Format::Human => {
                eprintln!("{}", summary(errors, warnings, files.len(), self.deny_warnings));
                code
            }
            Format::Json => super::emit_json(&json, code),
        }
    }
}

/// The last line of a human report.
pub(super) fn summary(errors: usize, warnings: usize, files: usize, deny_warnings: bool) -> String {
    let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    match (errors, warnings) {
        (0, 0) => format!("ok: {} checked", count(files, "file")),
        (0, w) if deny_warnings => {
            format!("error: {} (denied by `--deny-warnings`)", count(w, "warning"))
        }
        (0, w) => format!("ok: {} checked, {}", count(files, "file"), count(w, "warning")),
        (e, 0) => format!("error: {}", count(e, "error")),
        (e, w) => format!("error: {} and {}", count(e, "error"), count(w, "warning")),
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The files to check: files as given, folders expanded to their `*.ign`
/// files, sorted, recursively. A folder reached twice (through a symbolic
/// link to itself or to a parent) is read once.
pub(super) fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    let mut seen = HashSet::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut files, &mut seen)
                .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        } else if path.exists() {
            files.push(path.clone());
        } else {
            return Err(format!("no such file or folder `{}`", path.display()));
        }
    }
    Ok(files)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>, seen: &mut HashSet<PathBuf>) -> std::io::Result<()> {
    if !seen.insert(std::fs::canonicalize(dir)?) {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            walk(&entry, files, seen)?;
        } else if entry.extension().is_some_and(|e| e == "ign") {
            files.push(entry);
        }
    }
    Ok(())
}
