//! `exec "program" "arg" ...`: a child process, no shell.
//!
//! Input: the program and its arguments, the declaring file's folder and the filled
//! arguments. The program is resolved from that folder when it contains a `/` (else it
//! is looked up on `PATH`), and runs with that folder as its working directory. The
//! arguments are written to its stdin as one JSON object, then stdin is closed.
//! Output: stdout parsed as JSON when it parses, else the trimmed text; a stdout larger
//! than the toolbox's size limit kills the child and fails the call. A non-zero exit
//! is a [`ToolError::Failed`] carrying the exit status and the last lines of stderr; a
//! child still running at the time limit is killed and the call is a
//! [`ToolError::Timeout`]. Waiting is async: no thread is blocked.
//!
//! The child inherits ignite's environment minus provider keys (see
//! [`is_key_var`]): a script never sees the keys of the program's models.
//!
//! Each child leads a process group of its own; the whole group (so the
//! grandchildren too) is killed when the child exits, on timeout, when the
//! call is dropped, and on [`crate::shutdown::halt`]. The call ends when the
//! child exits: a grandchild that escaped the group and holds stdout open
//! does not keep it waiting (what was written until [`PIPE_GRACE`] after
//! the exit is kept).

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStderr, ChildStdout, Command};

use super::ToolError;

/// Lines of stderr kept in an error.
const STDERR_LINES: usize = 20;
/// Bytes of stderr kept in an error.
const STDERR_BYTES: usize = 2048;
/// How long output is still read after the child exited.
const PIPE_GRACE: Duration = Duration::from_millis(200);

/// What to run.
pub(crate) struct Spec<'a> {
    pub(crate) program: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) dir: &'a Path,
    pub(crate) timeout: Duration,
    /// The variables the program's providers read their keys from
    /// (`api_key env("VAR")`), kept from the child like [`is_key_var`]'s.
    pub(crate) key_vars: &'a [&'a str],
    /// The size limit of stdout.
    pub(crate) max_bytes: usize,
}

/// Whether `name` holds a provider key by its name: `*_API_KEY` (every
/// provider's convention: `OPENAI_API_KEY`, `GEMINI_API_KEY`, ...) or
/// `*_AUTH_TOKEN` (`ANTHROPIC_AUTH_TOKEN`).
fn is_key_var(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    name.ends_with("_API_KEY") || name.ends_with("_AUTH_TOKEN")
}

/// Runs the child with `args` on stdin.
pub(crate) async fn run(spec: &Spec<'_>, args: &Map<String, Value>) -> Result<Value, ToolError> {
    let dir = absolute(spec.dir);
    let program = if spec.program.contains('/') {
        dir.join(spec.program).into_os_string()
    } else {
        spec.program.into()
    };
    let mut command = Command::new(&program);
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if is_key_var(&name_text) || spec.key_vars.contains(&name_text.as_ref()) {
            command.env_remove(&name);
        }
    }
    command.args(spec.args).current_dir(&dir);
    let (mut child, group) = super::group::spawn(&mut command).map_err(|e| {
        ToolError::Failed(format!("cannot start `{}` in `{}`: {e}", spec.program, dir.display()))
    })?;
    let input = Value::Object(args.clone()).to_string();
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let write = async move {
        if let Some(mut stdin) = stdin {
            // A child that never reads its stdin closes the pipe early: not an error.
            let _ = stdin.write_all(input.as_bytes()).await;
        }
    };
    let (exited_tx, exited_rx) = tokio::sync::oneshot::channel::<()>();
    let wait = async {
        let status = tokio::join!(write, child.wait()).1;
        // The call is over when the child exits: what it left running goes too.
        group.kill();
        let _ = exited_tx.send(());
        status
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let read = async {
        let all = async {
            tokio::try_join!(read_stdout(stdout, spec, &mut out), read_tail(stderr, &mut err))
                .map(|_| ())
        };
        // A process outside the group may still hold the pipes open.
        let late = async {
            let _ = exited_rx.await;
            tokio::time::sleep(PIPE_GRACE).await;
            Ok(())
        };
        tokio::select! {
            read = all => read,
            read = late => read,
        }
    };
    // On timeout or a stdout over the limit the futures are dropped with the
    // child, and `group` kills its whole process group.
    let finish = async { tokio::try_join!(wait, read).map(|(status, ())| status) };
    let status = tokio::time::timeout(spec.timeout, finish)
        .await
        .map_err(|_| ToolError::Timeout(spec.timeout))?
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::FileTooLarge => ToolError::Failed(e.to_string()),
            _ => ToolError::Failed(format!("waiting for `{}` failed: {e}", spec.program)),
        })?;
    if !status.success() {
        return Err(ToolError::Failed(failure(spec.program, status, &err)));
    }
    Ok(parse_output(&out))
}

/// Reads stdout into `bytes` up to the size limit; what was read stays when
/// the future is dropped early.
async fn read_stdout(
    stdout: Option<ChildStdout>,
    spec: &Spec<'_>,
    bytes: &mut Vec<u8>,
) -> std::io::Result<()> {
    if let Some(stdout) = stdout {
        // One byte more than allowed tells an overflow.
        stdout.take(spec.max_bytes as u64 + 1).read_to_end(bytes).await?;
    }
    if bytes.len() > spec.max_bytes {
        let what = format!("the stdout of `{}`", spec.program);
        let message = super::too_big(&what, spec.max_bytes);
        return Err(std::io::Error::new(std::io::ErrorKind::FileTooLarge, message));
    }
    Ok(())
}

/// Reads `stderr` to its end into `kept`, keeping only the last bytes
/// [`tail`] may show.
async fn read_tail(stderr: Option<ChildStderr>, kept: &mut Vec<u8>) -> std::io::Result<()> {
    let Some(mut stderr) = stderr else { return Ok(()) };
    let mut chunk = [0u8; 8192];
    loop {
        let n = stderr.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        kept.extend_from_slice(&chunk[..n]);
        if kept.len() > 2 * STDERR_BYTES {
            kept.drain(..kept.len() - 2 * STDERR_BYTES);
        }
    }
}

/// JSON when it parses, else the trimmed text.
pub(crate) fn parse_output(bytes: &[u8]) -> Value {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

fn absolute(dir: &Path) -> PathBuf {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned())
}

fn failure(program: &str, status: ExitStatus, stderr: &[u8]) -> String {
    let status = describe_status(status);
    let tail = tail(&String::from_utf8_lossy(stderr));
    if tail.is_empty() {
        format!("`{program}` {status} (no stderr)")
    } else {
        format!("`{program}` {status}; stderr:\n{tail}")
    }
}

fn describe_status(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("was killed by signal {signal}");
        }
    }
    format!("failed ({status})")
}

/// The last [`STDERR_LINES`] lines of `text`, at most [`STDERR_BYTES`] bytes, trimmed.
fn tail(text: &str) -> String {
    let text = text.trim_end();
    let lines: Vec<&str> = text.lines().collect();
    let kept = lines[lines.len().saturating_sub(STDERR_LINES)..].join("\n");
    if kept.len() <= STDERR_BYTES {
        return kept;
    }
    let mut start = kept.len() - STDERR_BYTES;
    while !kept.is_char_boundary(start) {
        start += 1;
    }
    format!("...{}", &kept[start..])
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::tail;
    use crate::ir::Implementation;
    use crate::tools::test_support::{program, tool_with};
    use crate::tools::{ToolError, Toolbox};

    fn exec(program: &str, args: &[&str]) -> Implementation {
        Implementation::Exec {
            program: program.to_owned(),
            args: args.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn script(dir: &Path, name: &str, body: &str) {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    async fn call(dir: &Path, imp: Implementation, args: Value) -> Result<Value, ToolError> {
        call_with(dir, imp, args, None).await
    }

    async fn call_with(
        dir: &Path,
        imp: Implementation,
        args: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, ToolError> {
        let mut t = tool_with("Child", &[("sku", "string?")], imp, dir);
        t.timeout = timeout;
        let p = program(vec![t]);
        Toolbox::new().call(&p, crate::ir::ToolId(0), args).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn json_result_from_args_on_stdin() {
        let dir = tempfile::tempdir().unwrap();
        script(
            dir.path(),
            "echo.py",
            "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'got': args}))\n",
        );
        let out = call(dir.path(), exec("python3", &["echo.py"]), json!({"sku": "A-1"})).await;
        assert_eq!(out, Ok(json!({"got": {"sku": "A-1"}})));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn text_result_trimmed_and_cwd_is_tool_dir() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        script(
            &dir.path().join("bin"),
            "where.sh",
            "#!/bin/sh\ncat > /dev/null\necho \"in $(pwd)\"\n",
        );
        let out = call(dir.path(), exec("bin/where.sh", &[]), json!({})).await.unwrap();
        let expected = format!("in {}", dir.path().canonicalize().unwrap().display());
        assert_eq!(out, Value::String(expected));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn non_zero_exit_carries_status_and_stderr_tail() {
        let dir = tempfile::tempdir().unwrap();
        script(
            dir.path(),
            "fail.sh",
            "#!/bin/sh\nfor i in $(seq 1 30); do echo \"line $i\" >&2; done\nexit 3\n",
        );
        let err = call(dir.path(), exec("./fail.sh", &[]), json!({})).await.unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("`./fail.sh` exited with status 3; stderr:\nline 11\n"), "{text}");
        assert!(text.ends_with("line 30"), "{text}");
    }

    /// Waits up to 2 s for the process whose pid is in `pid_file` to be gone
    /// (or a zombie), and fails if it is not.
    async fn assert_gone(pid_file: &Path) {
        let pid = std::fs::read_to_string(pid_file).unwrap();
        let status = Path::new("/proc").join(pid.trim()).join("status");
        for _ in 0..100 {
            let text = std::fs::read_to_string(&status).unwrap_or_default();
            if text.is_empty() || text.contains("State:\tZ") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("process {} still runs", pid.trim());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn timeout_kills_the_child() {
        let dir = tempfile::tempdir().unwrap();
        let out = call_with(
            dir.path(),
            exec("sh", &["-c", "echo $$ > pid; exec sleep 5"]),
            json!({}),
            Some(Duration::from_millis(200)),
        )
        .await;
        assert_eq!(out, Err(ToolError::Timeout(Duration::from_millis(200))));
        // The child is gone once the call has returned: no orphan keeps sleeping.
        assert_gone(&dir.path().join("pid")).await;
        assert_eq!(
            ToolError::Timeout(Duration::from_millis(200)).to_string(),
            "timed out after 200ms"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn done_when_the_child_exits_and_its_group_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        // The grandchild inherits stdout and would hold it open for 30 s.
        let out = call(
            dir.path(),
            exec("sh", &["-c", "sleep 30 & echo $! > gpid; echo done"]),
            json!({}),
        )
        .await;
        assert_eq!(out, Ok(json!("done")));
        assert_gone(&dir.path().join("gpid")).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn missing_program_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = call(dir.path(), exec("./nope.sh", &[]), json!({})).await.unwrap_err();
        assert!(err.to_string().starts_with("cannot start `./nope.sh` in `"), "{err}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn child_ignoring_stdin_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let out = call(dir.path(), exec("echo", &["[1, 2]"]), json!({"sku": "x"})).await;
        assert_eq!(out, Ok(json!([1, 2])));
    }

    /// A child writing more than the size limit is stopped at the limit,
    /// not read until it ends (`yes` never does).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stdout_over_the_limit_fails() {
        let dir = tempfile::tempdir().unwrap();
        let t = tool_with("Child", &[], exec("yes", &[]), dir.path());
        let toolbox = Toolbox::new().with_max_bytes(1000);
        let err = toolbox.call(&program(vec![t]), crate::ir::ToolId(0), json!({})).await;
        assert_eq!(
            err.unwrap_err().to_string(),
            "the stdout of `yes` is larger than the size limit of 1000 bytes; raise it with \
             `--max-bytes`"
        );
        let t = tool_with("Child", &[], exec("printf", &["%1000s"]), dir.path());
        let out = toolbox.call(&program(vec![t]), crate::ir::ToolId(0), json!({})).await;
        assert_eq!(out, Ok(json!("")), "exactly the limit is fine");
    }

    #[test]
    fn key_vars_by_name() {
        for name in ["OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "my_api_key"] {
            assert!(super::is_key_var(name), "{name}");
        }
        for name in ["PATH", "API_KEYS", "HOME", "OLLAMA_HOST"] {
            assert!(!super::is_key_var(name), "{name}");
        }
    }

    #[test]
    fn tail_limits_lines_and_bytes() {
        assert_eq!(tail("a\nb\n"), "a\nb");
        let long = "x".repeat(5000);
        let kept = tail(&long);
        assert_eq!(kept.len(), 2048 + 3);
        assert!(kept.starts_with("..."));
    }
}
