//! `ignite check` from the outside: exit codes, stdout and stderr.

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};
use std::process::Command;

fn ignite() -> Command {
    let mut command = Command::new(get_cargo_bin("ignite"));
    command.env("NO_COLOR", "1").current_dir(env!("CARGO_MANIFEST_DIR"));
    command
}

#[test]
fn check_clean_file() {
    assert_cmd_snapshot!(ignite().args(["check", "tests/corpus/ok/guard_only_dependency.ign"]));
}

#[test]
fn check_folder() {
    assert_cmd_snapshot!(ignite().args(["check", "contracts"]));
}

#[test]
fn check_errors() {
    assert_cmd_snapshot!(ignite().args(["check", "tests/corpus/err/unknown_name.ign"]));
}

#[test]
fn check_warnings_pass() {
    assert_cmd_snapshot!(ignite().args(["check", "tests/corpus/ok/unused_warning.ign"]));
}

#[test]
fn check_deny_warnings() {
    assert_cmd_snapshot!(ignite().args([
        "check",
        "--deny-warnings",
        "tests/corpus/ok/unused_warning.ign"
    ]));
}

#[test]
fn check_missing_path() {
    assert_cmd_snapshot!(ignite().args(["check", "no/such/file.ign"]));
}

#[test]
fn check_json() {
    assert_cmd_snapshot!(ignite().args([
        "check",
        "--format",
        "json",
        "tests/corpus/err/missing_argument.ign",
        "tests/corpus/ok/unused_warning.ign"
    ]));
}

#[test]
fn check_shared_file_reported_once() {
    // The same file given twice: its diagnostics print once.
    assert_cmd_snapshot!(ignite().args([
        "check",
        "tests/corpus/err/missing_use.ign",
        "tests/corpus/err/missing_use.ign"
    ]));
}

#[test]
fn check_help() {
    assert_cmd_snapshot!(ignite().args(["check", "--help"]));
}

#[test]
fn help() {
    assert_cmd_snapshot!(ignite().arg("--help"));
}
