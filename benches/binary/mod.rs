//! What the benches that time the `ignite` binary share.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/release/ignite`, built first when it is missing.
pub(crate) fn release_binary() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let binary = root.join("target/release/ignite");
    if !binary.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--release", "--bin", "ignite"])
            .current_dir(root)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "release build failed");
    }
    binary
}
