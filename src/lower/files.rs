//! Files a program names that should exist when it runs: `exec` programs
//! and the scripts they are given, `provider script` files, the
//! cassettes of tests' `replay` and the images and documents of `file(...)`.
//!
//! A missing one is a warning, not an error: the file may be created
//! before the run (by a build step, or by `--record`).

use std::path::Path;

use super::Lowerer;
use crate::ast;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir;
use crate::value::Val;

/// Extensions of the script files an `exec` argument may name.
const SCRIPT_EXTENSIONS: [&str; 11] =
    ["py", "sh", "bash", "js", "mjs", "cjs", "ts", "rb", "pl", "php", "lua"];

impl Lowerer<'_> {
    /// `exec "program" "arg" ...` of a tool declared in `dir`: the program
    /// (from `dir` when it holds a `/`, else on `PATH`) and every argument
    /// that names a script file must exist.
    pub(super) fn check_exec_files(&mut self, dir: &Path, words: &[ast::Expr], program: &[String]) {
        let (Some(first), Some(name)) = (words.first(), program.first()) else { return };
        if name.contains('/') {
            if !dir.join(name).exists() {
                self.missing_file(first, &format!("`exec` program `{name}` does not exist"), dir);
            }
        } else if !name.is_empty() && !on_path(name) {
            self.push(
                Diagnostic::warning(
                    Code::MissingFile,
                    first.span,
                    format!("`exec` program `{name}` is not on `PATH`"),
                )
                .label("not found")
                .help("install it, or name it by a path from the tool's folder (`./run.sh`)"),
            );
        }
        for (word, arg) in words.iter().zip(program).skip(1) {
            let script = Path::new(arg)
                .extension()
                .is_some_and(|e| SCRIPT_EXTENSIONS.iter().any(|s| e.eq_ignore_ascii_case(s)));
            if script && !dir.join(arg).exists() {
                self.missing_file(word, &format!("script `{arg}` does not exist"), dir);
            }
        }
    }

    /// `provider script "file.json"`: the file of replies.
    pub(super) fn check_script_file(&mut self, file: &ast::Expr, path: &Path, dir: &Path) {
        if !path.exists() {
            let message = format!("script file `{}` does not exist", path.display());
            self.missing_file(file, &message, dir);
        }
    }

    /// A test's `replay "cassette.json"`: written by `ignite test --record`,
    /// so a missing one is a warning saying how to make it.
    pub(super) fn check_cassette(&mut self, file: &ast::Expr, path: &Path, dir: &Path) {
        if !path.exists() {
            self.push(
                Diagnostic::warning(
                    Code::MissingFile,
                    file.span,
                    format!("cassette `{}` does not exist", path.display()),
                )
                .label("no such file")
                .help(format!(
                    "record it with `ignite test FILE --record`; paths are relative to `{}`, \
                     the folder of this file",
                    dir.display()
                )),
            );
        }
    }

    /// `file("scan.png")`: the path, a constant string, becomes the path
    /// from the current folder (it is written from the folder of its file),
    /// and the file should exist.
    pub(super) fn media_file(&mut self, written: &ast::Expr, lowered: &mut ir::Expr) {
        let Some(path) = written.as_plain_string() else {
            self.push(
                Diagnostic::error(
                    Code::NotConstant,
                    written.span,
                    "the path of `file(...)` must be a constant string",
                )
                .label("not a constant string")
                .help(
                    "write the path as a string, from this file's folder; a file chosen \
                     at run time is an `image` or `document` input (`--input NAME=@FILE`)",
                ),
            );
            return;
        };
        let dir = self.sources[written.span.file].dir();
        let path = dir.join(path);
        if !path.is_file() {
            let message = format!("file `{}` does not exist", path.display());
            self.missing_file(written, &message, dir);
        }
        lowered.kind = ir::ExprKind::Literal(Val::string(path.to_string_lossy().into_owned()));
    }

    pub(super) fn missing_file(&mut self, at: &ast::Expr, message: &str, dir: &Path) {
        self.push(
            Diagnostic::warning(Code::MissingFile, at.span, message).label("no such file").help(
                format!("paths are relative to `{}`, the folder of this file", dir.display()),
            ),
        );
    }
}

/// True when `program` is an executable file in a folder of `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}
