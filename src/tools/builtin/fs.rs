//! `fs.read` and `fs.write`: files under one root folder, nowhere else.
//!
//! Input: a path relative to the root. Absolute paths and `..` components are refused
//! outright; then the real location (symlinks resolved) must still be under the real
//! root, so a symlink pointing out of the root is refused too. `fs.write` creates
//! missing parent folders inside the root. Output: the file's text for `fs.read`,
//! `{path, bytes}` for `fs.write`.
//!
//! `fs.read` reads regular files only (a FIFO or `/dev/zero` is refused before it is
//! opened) of at most the toolbox's size limit. `fs.write` is atomic: the content goes
//! to a temp file beside the target, which is then renamed over it.
//!
//! A symlink swapped in between the check and the open is not defended against; the
//! root is meant to hold data the tool owns.

use std::io::{Read as _, Write as _};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::Context;
use crate::tools::ToolError;

/// The root folder: the toolbox override, else `root` from the config under the tool's folder.
pub(super) fn root(context: &Context<'_>) -> Result<PathBuf, ToolError> {
    if let Some(root) = context.toolbox.fs_root() {
        return Ok(root.to_owned());
    }
    match context.config.get("root") {
        None => Ok(context.tool.dir.clone()),
        Some(Value::String(root)) => Ok(context.tool.dir.join(root)),
        Some(other) => Err(ToolError::Failed(format!(
            "config `root` must be a string, got {}",
            crate::eval::describe(other)
        ))),
    }
}

/// Reads `path` under `root` as text: a regular file of at most `max_bytes`.
pub(super) fn read(root: &Path, path: &str, max_bytes: usize) -> Result<Value, ToolError> {
    let (root, target) = confine(root, path)?;
    let real = target.canonicalize().map_err(|e| io_error("cannot read", path, &e))?;
    inside(&root, &real, path)?;
    let fail = |e: &std::io::Error| io_error("cannot read", path, e);
    // Checked before opening: opening a FIFO would block, `/dev/zero` never ends.
    if !std::fs::metadata(&real).map_err(|e| fail(&e))?.is_file() {
        return Err(ToolError::Failed(format!("cannot read `{path}`: not a regular file")));
    }
    let file = std::fs::File::open(&real).map_err(|e| fail(&e))?;
    let mut bytes = Vec::new();
    // One byte more than allowed tells a file that grew past the limit.
    file.take(max_bytes as u64 + 1).read_to_end(&mut bytes).map_err(|e| fail(&e))?;
    if bytes.len() > max_bytes {
        return Err(ToolError::Failed(crate::tools::too_big(&format!("`{path}`"), max_bytes)));
    }
    String::from_utf8(bytes)
        .map(Value::String)
        .map_err(|_| ToolError::Failed(format!("cannot read `{path}`: not UTF-8 text")))
}

/// Writes `content` to `path` under `root`, creating parent folders inside it.
pub(super) fn write(root: &Path, path: &str, content: &str) -> Result<Value, ToolError> {
    let (root, target) = confine(root, path)?;
    let parent = target.parent().unwrap_or(&root).to_owned();
    // Check the deepest folder that exists before creating anything below it.
    let existing = parent.ancestors().find(|a| a.exists()).unwrap_or(&root);
    let real = existing.canonicalize().map_err(|e| io_error("cannot write", path, &e))?;
    inside(&root, &real, path)?;
    std::fs::create_dir_all(&parent).map_err(|e| io_error("cannot write", path, &e))?;
    let real_parent = parent.canonicalize().map_err(|e| io_error("cannot write", path, &e))?;
    inside(&root, &real_parent, path)?;
    // A symlink inside the root is written through: the file it names is replaced.
    let target = if target.is_symlink() || target.exists() {
        let real = target.canonicalize().map_err(|e| io_error("cannot write", path, &e))?;
        inside(&root, &real, path)?;
        real
    } else {
        target
    };
    replace(&target, content.as_bytes()).map_err(|e| io_error("cannot write", path, &e))?;
    Ok(json!({"path": path, "bytes": content.len()}))
}

/// Writes `bytes` to a new file next to `target` (keeping the old file's
/// permissions), then renames it over `target`: a crash or a kill leaves
/// the old content or the new, never a mix or an empty file.
fn replace(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = target.with_file_name(format!(".{name}.{}-{n}.ignite-tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        if let Ok(old) = std::fs::metadata(target) {
            file.set_permissions(old.permissions())?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, target)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// The canonical root and the lexical target under it; refuses absolute and `..` paths.
fn confine(root: &Path, path: &str) -> Result<(PathBuf, PathBuf), ToolError> {
    let refuse = |why: &str| Err(ToolError::Failed(format!("`path` {why}: `{path}`")));
    if path.trim().is_empty() {
        return refuse("is empty");
    }
    let relative = Path::new(path);
    for component in relative.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return refuse("may not contain `..`"),
            Component::RootDir | Component::Prefix(_) => return refuse("must be relative"),
        }
    }
    let root = root.canonicalize().map_err(|e| {
        ToolError::Failed(format!("the fs root `{}` is not usable: {e}", root.display()))
    })?;
    let target = root.join(relative);
    Ok((root, target))
}

fn inside(root: &Path, real: &Path, path: &str) -> Result<(), ToolError> {
    if real.starts_with(root) {
        Ok(())
    } else {
        Err(ToolError::Failed(format!("`path` leaves the fs root: `{path}`")))
    }
}

fn io_error(what: &str, path: &str, error: &std::io::Error) -> ToolError {
    let reason = match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".to_owned(),
        _ => error.to_string(),
    };
    ToolError::Failed(format!("{what} `{path}`: {reason}"))
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use crate::ir::{self, Builtin, Implementation};
    use crate::tools::test_support::{program, tool_with};
    use crate::tools::{ToolError, Toolbox};

    fn fs_tool(builtin: Builtin, dir: &std::path::Path) -> ir::Tool {
        let mut config = Map::new();
        config.insert("root".into(), json!("data"));
        let params: &[(&str, &str)] = match builtin {
            Builtin::FsWrite => &[("path", "string"), ("content", "any")],
            _ => &[("path", "string")],
        };
        tool_with("Files", params, Implementation::Builtin { builtin, config }, dir)
    }

    async fn call(
        builtin: Builtin,
        dir: &std::path::Path,
        args: Value,
    ) -> Result<Value, ToolError> {
        let p = program(vec![fs_tool(builtin, dir)]);
        Toolbox::new().call(&p, ir::ToolId(0), args).await
    }

    fn setup() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("data/notes")).unwrap();
        std::fs::write(dir.path().join("data/notes/a.txt"), "hello").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "top secret").unwrap();
        dir
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn read_and_write_inside_root() {
        let dir = setup();
        let read = call(Builtin::FsRead, dir.path(), json!({"path": "notes/a.txt"})).await;
        assert_eq!(read, Ok(json!("hello")));
        let wrote =
            call(Builtin::FsWrite, dir.path(), json!({"path": "out/r.json", "content": {"a": 1}}))
                .await;
        assert_eq!(wrote, Ok(json!({"path": "out/r.json", "bytes": 12})));
        let text = std::fs::read_to_string(dir.path().join("data/out/r.json")).unwrap();
        assert_eq!(text, "{\n  \"a\": 1\n}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn escapes_are_refused() {
        let dir = setup();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("secret.txt"), dir.path().join("data/link"))
                .unwrap();
            std::os::unix::fs::symlink(dir.path(), dir.path().join("data/up")).unwrap();
        }
        let secret = dir.path().join("secret.txt").display().to_string();
        let mut out = Vec::new();
        for path in [
            "../secret.txt",
            "notes/../../secret.txt",
            secret.as_str(),
            "link",
            "up/secret.txt",
            "",
            "missing.txt",
        ] {
            let err = call(Builtin::FsRead, dir.path(), json!({"path": path})).await.unwrap_err();
            out.push(err.to_string().replace(&secret, "<abs>"));
        }
        for path in ["../x.txt", "link", "up/new.txt", "up/deeper/new.txt"] {
            let args = json!({"path": path, "content": "pwned"});
            let err = call(Builtin::FsWrite, dir.path(), args).await.unwrap_err();
            out.push(err.to_string());
        }
        insta::assert_snapshot!(out.join("\n"));
        assert_eq!(std::fs::read_to_string(dir.path().join("secret.txt")).unwrap(), "top secret");
        assert!(!dir.path().join("deeper").exists());
        assert!(!dir.path().join("new.txt").exists());
    }

    /// Only regular files within the size limit are read: a FIFO would
    /// block and a device may never end.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_only_regular_files_within_the_limit() {
        let dir = setup();
        std::fs::write(dir.path().join("data/big.txt"), "x".repeat(101)).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.path().join("data/pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        let p = program(vec![fs_tool(Builtin::FsRead, dir.path())]);
        let toolbox = Toolbox::new().with_max_bytes(100);
        let mut out = Vec::new();
        for path in ["big.txt", "pipe", "notes"] {
            let result = toolbox.call(&p, ir::ToolId(0), json!({"path": path})).await;
            out.push(result.unwrap_err().to_string());
        }
        assert_eq!(
            out,
            [
                "`big.txt` is larger than the size limit of 100 bytes; raise it with `--max-bytes`",
                "cannot read `pipe`: not a regular file",
                "cannot read `notes`: not a regular file",
            ]
        );
        let read = toolbox.call(&p, ir::ToolId(0), json!({"path": "notes/a.txt"})).await;
        assert_eq!(read, Ok(json!("hello")));
    }

    /// `fs.write` replaces the file (a temp file renamed over it) instead of
    /// truncating it in place: another link to the old file keeps the old
    /// content, the mode is kept, and no temp file is left.
    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_replace_the_file_atomically() {
        use std::os::unix::fs::PermissionsExt;
        let dir = setup();
        let notes = dir.path().join("data/notes");
        std::fs::set_permissions(notes.join("a.txt"), std::fs::Permissions::from_mode(0o640))
            .unwrap();
        std::fs::hard_link(notes.join("a.txt"), notes.join("old.txt")).unwrap();
        let args = json!({"path": "notes/a.txt", "content": "new"});
        assert!(call(Builtin::FsWrite, dir.path(), args).await.is_ok());
        assert_eq!(std::fs::read_to_string(notes.join("a.txt")).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(notes.join("old.txt")).unwrap(), "hello");
        let mode = std::fs::metadata(notes.join("a.txt")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        let mut names: Vec<_> = std::fs::read_dir(&notes)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["a.txt", "old.txt"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn toolbox_root_overrides_config() {
        let dir = setup();
        let p = program(vec![fs_tool(Builtin::FsRead, std::path::Path::new("/nonexistent"))]);
        let toolbox = Toolbox::new().with_fs_root(dir.path().join("data/notes"));
        let out = toolbox.call(&p, ir::ToolId(0), json!({"path": "a.txt"})).await;
        assert_eq!(out, Ok(json!("hello")));
    }
}
