//! The formatter's guarantees over every fixture and example: each file
//! that parses formats (so it kept its tree and its comments, which
//! `format` checks before answering) to a fixed point; a file with syntax
//! errors is refused. `fmt/*.ign` are messy inputs, snapshotted formatted.
//! The examples in `contracts/` and the `ign` blocks of `docs/` are
//! formatted already. Prefixes of the fixtures get an answer.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};

use igniter::fmt::{FmtError, format};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn ign_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            ign_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "ign") {
            out.push(path);
        }
    }
}

/// Every `.ign` file of the examples and the parsing corpora.
fn fixtures() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in
        ["contracts", "tests/corpus/ok", "tests/corpus/run", "tests/corpus/syntax", "tests/fmt"]
    {
        ign_files(&root().join(dir), &mut files);
    }
    files.sort();
    files
}

#[test]
fn every_fixture_formats_to_a_fixed_point() {
    let mut formatted = 0;
    for path in fixtures() {
        let text = std::fs::read_to_string(&path).unwrap();
        match format(&text) {
            Ok(once) => {
                let twice = format(&once).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert_eq!(once, twice, "{} formats differently twice", path.display());
                formatted += 1;
            }
            Err(FmtError::Syntax(diagnostics)) => {
                assert!(diagnostics.has_errors(), "{}", path.display());
            }
            Err(e @ FmtError::Unsafe(_)) => panic!("{}: {e}\n{text}", path.display()),
        }
    }
    assert!(formatted > 30, "only {formatted} fixtures formatted");
}

#[test]
fn messy_inputs_format_as_snapshotted() {
    insta::glob!("fmt/*.ign", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let formatted = format(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        insta::assert_snapshot!(formatted);
    });
}

#[test]
fn a_file_with_syntax_errors_is_refused() {
    let error = format("contract C {\n  compute = 1\n}\n").unwrap_err();
    assert!(matches!(error, FmtError::Syntax(d) if d.has_errors()));
}

/// The `ign` code blocks of a Markdown text.
fn ign_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim_start() == "```ign" => current = Some(String::new()),
            Some(block) if line.trim_start() == "```" => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

#[test]
fn the_examples_of_the_docs_are_formatted() {
    let mut docs = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        docs.push(entry.unwrap().path());
    }
    docs.sort();
    let mut unformatted = Vec::new();
    for path in docs.iter().filter(|p| p.extension().is_some_and(|e| e == "md")) {
        let text = std::fs::read_to_string(path).unwrap();
        for block in ign_blocks(&text) {
            // Fragments that are not whole files (a lone statement) are
            // shown as they are; only blocks that parse are held to it.
            if let Ok(formatted) = format(&block) {
                if formatted != block {
                    unformatted
                        .push(format!("{}:\n{block}---- formatted:\n{formatted}", path.display()));
                }
            }
        }
    }
    assert!(unformatted.is_empty(), "unformatted examples:\n{}", unformatted.join("\n"));
}

/// Every prefix of every fixture gets an answer: formatted or refused,
/// never a panic or a broken guarantee. Cut at every character boundary
/// (see `support::prefixes`); shared out over the machine's cores.
#[test]
fn prefixes_of_every_fixture_get_an_answer() {
    let files: Vec<(PathBuf, String)> =
        fixtures().into_iter().map(|p| (p.clone(), std::fs::read_to_string(p).unwrap())).collect();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|scope| {
        for share in 0..threads {
            let files = &files;
            scope.spawn(move || {
                for (path, text) in files {
                    for end in support::prefixes::cuts(text).skip(share).step_by(threads) {
                        if let Err(FmtError::Unsafe(what)) = format(&text[..end]) {
                            panic!("{} up to byte {end}: formatting would {what}", path.display());
                        }
                    }
                }
            });
        }
    });
}

fn ignite() -> std::process::Command {
    let mut command = std::process::Command::new(insta_cmd::get_cargo_bin("ignite"));
    command.env("NO_COLOR", "1").current_dir(root());
    command
}

#[test]
fn the_examples_are_formatted() {
    let output = ignite().args(["fmt", "--check", "contracts"]).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "run `ignite fmt contracts`:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

const MESSY: &str = "contract A {\n    input x:integer\n  output x\n}\n";
const TIDY: &str = "contract A {\n  input x: integer\n  output x\n}\n";

/// `--check` prints a unified diff, changes nothing and exits 1; `fmt`
/// then rewrites the file, and a second `fmt` leaves it alone.
#[test]
fn check_diffs_and_fmt_rewrites_only_what_changes() {
    let dir = tempfile::tempdir().unwrap();
    let messy = dir.path().join("messy.ign");
    let tidy = dir.path().join("tidy.ign");
    std::fs::write(&messy, MESSY).unwrap();
    std::fs::write(&tidy, TIDY).unwrap();
    let stamp = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    let tidy_time = stamp(&tidy);

    let output = ignite().args(["fmt", "--check"]).arg(dir.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let diff = String::from_utf8_lossy(&output.stdout);
    assert!(diff.contains("-    input x:integer\n+  input x: integer\n"), "{diff}");
    assert!(diff.contains("messy.ign (formatted)"), "{diff}");
    assert!(!diff.contains("tidy.ign"), "{diff}");
    assert_eq!(std::fs::read_to_string(&messy).unwrap(), MESSY);

    std::thread::sleep(std::time::Duration::from_millis(20));
    let output = ignite().arg("fmt").arg(dir.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(std::fs::read_to_string(&messy).unwrap(), TIDY);
    assert_eq!(stamp(&tidy), tidy_time, "an unchanged file was written");

    let messy_time = stamp(&messy);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let output = ignite().arg("fmt").arg(&messy).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stamp(&messy), messy_time, "a formatted file was written again");
}

/// A file with syntax errors is reported and left as it is; the others
/// are still formatted.
#[test]
fn a_file_with_syntax_errors_is_reported_not_touched() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("a_broken.ign");
    let messy = dir.path().join("b_messy.ign");
    let text = "contract A {\n    compute = 1\n}\n";
    std::fs::write(&broken, text).unwrap();
    std::fs::write(&messy, MESSY).unwrap();
    let output = ignite().arg("fmt").arg(dir.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("a_broken.ign` has syntax errors; not formatted"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&broken).unwrap(), text);
    assert_eq!(std::fs::read_to_string(&messy).unwrap(), TIDY);
}

/// `-` formats standard input to standard output.
#[test]
fn stdin_to_stdout() {
    use std::io::Write as _;
    let mut child = ignite()
        .args(["fmt", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(MESSY.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stdout), TIDY);
}
