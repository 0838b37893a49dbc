//! The pinned third-party peers the tests drive (Python packages, Node
//! packages, Neovim), installed by `scripts/peers.sh` on first use.
//!
//! A peer that cannot be installed fails the test that needs it, with the
//! installer's message and the command to run by hand: never a silent skip.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// The groups this test process has installed (or found installed).
static READY: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

fn script() -> Command {
    Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/peers.sh"))
}

/// Installs peer group `group` (`python`, `node`, `neovim`) once per test
/// process; the script itself is quick when it is up to date and locks
/// against other processes.
fn ensure(group: &'static str) {
    let mut ready = READY.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if ready.get_or_insert_with(HashSet::new).contains(group) {
        return;
    }
    let out = script().args(["install", group]).output().expect("scripts/peers.sh runs");
    assert!(
        out.status.success(),
        "the test peers `{group}` could not be installed:\n{}\ninstall them by hand with `scripts/peers.sh install {group}`",
        String::from_utf8_lossy(&out.stderr).trim_end()
    );
    ready.get_or_insert_with(HashSet::new).insert(group);
}

/// The path of peer command `name` from group `group`, installing the group
/// first if needed: `peer("python", "python")` is the venv's interpreter
/// with every package of `scripts/requirements-test.txt`.
pub(crate) fn peer(group: &'static str, name: &str) -> PathBuf {
    ensure(group);
    let out = script().args(["which", name]).output().expect("scripts/peers.sh runs");
    assert!(
        out.status.success(),
        "the test peer `{name}` is missing after installing `{group}`:\n{}",
        String::from_utf8_lossy(&out.stderr).trim_end()
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim_end())
}
