//! Process groups of the children tools start (`exec` tools, MCP servers).
//!
//! Every child is started as the leader of a new process group, which
//! [`crate::shutdown`] keeps until the child's [`Group`] guard kills it
//! (when the child exits, times out or is dropped); a process that stops
//! kills every group still kept ([`crate::shutdown::halt`]), and no child
//! starts after that.

use std::io;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::process::{Child, Command};

use crate::shutdown;

/// Kills its child's process group once, at the latest when dropped.
pub(crate) struct Group {
    pgid: Option<i32>,
    killed: AtomicBool,
}

/// Spawns `command` with its three standard streams piped, killed when
/// its handle is dropped, as the leader of a new process group, and
/// registers that group.
pub(crate) fn spawn(command: &mut Command) -> io::Result<(Child, Group)> {
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let (child, pgid) = shutdown::start_child(|| {
        let child = command.spawn()?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        Ok((child, pgid))
    })?;
    Ok((child, Group { pgid, killed: AtomicBool::new(false) }))
}

impl Group {
    /// Kills the group (the child and every process it started that stayed in it).
    pub(crate) fn kill(&self) {
        let Some(pgid) = self.pgid else { return };
        if self.killed.swap(true, Ordering::SeqCst) {
            return;
        }
        shutdown::kill_child(pgid);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}
