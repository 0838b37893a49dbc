//! `ignite mcp lock PATH`: connects to every MCP server `PATH` declares
//! (`mcp Name { ... }`, in it and the files it `use`s), reads each one's
//! `tools/list` and writes `ignite.lock` beside `PATH`: per server and
//! tool, the description, `inputSchema`, `outputSchema`, annotations and
//! a hash. `check` types `mcp` tools from it; a run fails when a server's
//! live tools differ from it. The folder's other files share the lock:
//! servers `PATH` does not declare are kept, unless `--prune`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use super::GlobalArgs;
use crate::ir::{LOCK_FILE, Lock, LockedServer, McpServer};
use crate::tools::Toolbox;

/// Arguments of `ignite mcp lock`.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// The root `.ign` file; the lock is written beside it.
    #[arg(value_name = "PATH")]
    pub file: PathBuf,
    /// Drop the servers `PATH` does not declare (other files of the folder
    /// may use them: they are kept without this).
    #[arg(long)]
    pub prune: bool,
}

impl LockArgs {
    /// Exit 0 with the lock written; 1 when a declaration has errors or a
    /// server cannot be reached or listed (nothing is written then); 2
    /// when there is no such file or the lock cannot be written.
    #[must_use]
    pub fn run(self, global: &GlobalArgs) -> ExitCode {
        if !self.file.is_file() {
            eprintln!("error: no such file `{}`", self.file.display());
            return ExitCode::from(2);
        }
        let loaded = crate::load::load_with(&self.file, global.load_options());
        let (servers, found) = if loaded.diagnostics.has_errors() {
            (None, crate::diagnostic::Diagnostics::default())
        } else {
            crate::lower::mcp_servers(&loaded.sources, &loaded.files)
        };
        let mut diagnostics = loaded.diagnostics;
        diagnostics.extend(found);
        diagnostics.sort(&loaded.sources);
        if !diagnostics.is_empty() {
            eprint!("{}", diagnostics.render(&loaded.sources, global.color_stderr(), super::WIDTH));
        }
        let Some(servers) = servers else { return ExitCode::from(1) };
        if servers.is_empty() {
            eprintln!(
                "error: `{}` declares no MCP server (`mcp Name {{ command \"program\" }}`)",
                self.file.display()
            );
            return ExitCode::from(1);
        }
        let folder = self.file.parent().filter(|p| !p.as_os_str().is_empty());
        let path = folder.map_or_else(|| PathBuf::from(LOCK_FILE), |f| f.join(LOCK_FILE));
        let mut lock = self.kept(&path, &servers);
        let Some(runtime) = super::serve::runtime() else { return ExitCode::from(2) };
        let toolbox = Toolbox::new();
        let listed = runtime.block_on(async {
            let mut failed = false;
            for server in &servers {
                match toolbox.list_mcp(server).await {
                    Ok(tools) => {
                        eprintln!(
                            "locked {} tool(s) of `{}` ({}): {}",
                            tools.len(),
                            server.name,
                            server.transport,
                            tools.keys().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
                        );
                        lock.servers.insert(server.name.clone(), LockedServer { tools });
                    }
                    Err(error) => {
                        eprintln!("error: {error}");
                        failed = true;
                    }
                }
            }
            // The connections (and their children) go while the runtime runs.
            drop(toolbox);
            (!failed).then_some(lock)
        });
        drop(runtime);
        let Some(lock) = listed else {
            eprintln!("error: `{LOCK_FILE}` not written: a server could not be listed");
            return ExitCode::from(1);
        };
        if let Err(e) = std::fs::write(&path, lock.to_text()) {
            eprintln!("error: cannot write `{}`: {e}", path.display());
            return ExitCode::from(2);
        }
        eprintln!("wrote `{}`", path.display());
        ExitCode::SUCCESS
    }

    /// What the lock at `path` keeps of other files' servers: every server
    /// `servers` does not hold (none with `--prune`, each dropped one
    /// named). A lock that cannot be read keeps nothing.
    fn kept(&self, path: &std::path::Path, servers: &[Arc<McpServer>]) -> Lock {
        let Ok(text) = std::fs::read_to_string(path) else { return Lock::new() };
        let mut lock = match Lock::parse(&text) {
            Ok(lock) => lock,
            Err(reason) => {
                eprintln!("note: `{}` is replaced: {reason}", path.display());
                return Lock::new();
            }
        };
        if self.prune {
            lock.servers.retain(|name, _| {
                let declared = servers.iter().any(|s| s.name == *name);
                if !declared {
                    eprintln!("pruned `{name}`: `{}` does not declare it", self.file.display());
                }
                declared
            });
        }
        lock
    }
}
