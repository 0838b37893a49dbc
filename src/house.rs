//! The house rule, tested: the library's top-level modules stand on floors
//! ([`FLOORS`], ground floor first) and a module names only modules on
//! floors below its own, so imports run one way and no two modules import
//! each other. A module that is not on a floor fails the test: place it
//! when you add it (and update the stage table in `lib.rs` and HACKING.md).
//!
//! Unit tests (after a file's `#[cfg(test)]`, and files named `tests.rs`
//! or `test_support.rs`) may reach up: they exercise a module from above.

use std::collections::BTreeSet;
use std::path::Path;

/// The floors of the house, from the ground up.
const FLOORS: &[&[&str]] = &[
    &["sync", "http_client"],
    &["source", "suggest", "value", "shutdown", "telemetry", "backoff", "media", "markup"],
    &["diagnostic", "ast"],
    &["syntax", "ir", "failure"],
    &["load", "lower", "eval", "usage", "render", "report", "fmt", "budget"],
    &["tools", "trace", "plan"],
    &["effects"],
    &["llm"],
    &["runtime"],
    &["serve", "testing", "evals", "lsp"],
    &["mcp", "restate"],
    &["cli", "prelude"],
];

fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|floor| floor.contains(&module))
}

/// The top-level modules a file names as `crate::NAME`, outside comments
/// and unit tests.
fn named(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        if line.starts_with("//") {
            continue;
        }
        for (at, _) in line.match_indices("crate::") {
            let rest = &line[at + "crate::".len()..];
            let end =
                rest.find(|c: char| !(c.is_ascii_lowercase() || c == '_')).unwrap_or(rest.len());
            names.insert(rest[..end].to_owned());
        }
    }
    names
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn imports_run_down_the_floors() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut wrong = Vec::new();
    for path in all {
        let relative = path.strip_prefix(&src).expect("under src");
        let first = relative.iter().next().and_then(|c| c.to_str()).expect("a file name");
        let module = first.trim_end_matches(".rs");
        if matches!(module, "lib" | "main" | "house")
            || path.file_name().is_some_and(|n| n == "test_support.rs" || n == "tests.rs")
        {
            continue;
        }
        let Some(floor) = floor_of(module) else {
            wrong.push(format!("module `{module}` stands on no floor of `FLOORS`"));
            continue;
        };
        let text = std::fs::read_to_string(&path).expect("a source file");
        for name in named(&text) {
            match floor_of(&name) {
                Some(below) if below < floor => {}
                Some(_) if name == module => {}
                Some(_) => wrong.push(format!(
                    "{} names `crate::{name}`, which is not below `{module}`",
                    relative.display()
                )),
                None => {}
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the floors:\n{}", wrong.join("\n"));
}

#[test]
fn every_module_of_the_library_stands_on_one_floor() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("src/lib.rs");
    for line in lib.lines() {
        let Some(rest) = line
            .trim()
            .strip_prefix("pub mod ")
            .or_else(|| line.trim().strip_prefix("pub(crate) mod "))
        else {
            continue;
        };
        let module = rest.trim_end_matches(';');
        let floors = FLOORS.iter().filter(|floor| floor.contains(&module)).count();
        assert_eq!(floors, 1, "module `{module}` must stand on exactly one floor");
    }
}
