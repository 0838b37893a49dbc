//! Process groups of `exec` children.
//!
//! Every child is started as the leader of a new process group and
//! registered here until its [`Group`] guard kills the group (when the
//! child exits, times out or is dropped). [`kill_children`] kills every
//! registered group at once, for a process that is stopping; once
//! [`crate::shutdown::halted`] is true no child starts.

use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::process::{Child, Command};

/// Process group ids of the children still running.
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Kills its child's process group once, at the latest when dropped.
pub(crate) struct Group {
    pgid: Option<i32>,
    killed: AtomicBool,
}

/// Spawns `command` (set up to lead a new process group) and registers its group.
pub(crate) fn spawn(command: &mut Command) -> io::Result<(Child, Group)> {
    let mut live = lock();
    if crate::shutdown::halted() {
        return Err(io::Error::other("ignite is stopping"));
    }
    let child = command.spawn()?;
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    live.extend(pgid);
    Ok((child, Group { pgid, killed: AtomicBool::new(false) }))
}

impl Group {
    /// Kills the group (the child and every process it started that stayed in it).
    pub(crate) fn kill(&self) {
        let Some(pgid) = self.pgid else { return };
        if self.killed.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut live = lock();
        live.retain(|&p| p != pgid);
        kill_group(pgid);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Kills the process group of every `exec` child still running.
pub fn kill_children() {
    let mut live = lock();
    for pgid in live.drain(..) {
        kill_group(pgid);
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<i32>> {
    LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(unix)]
fn kill_group(pgid: i32) {
    // SAFETY: `killpg` only sends a signal; a group that is already gone
    // makes it fail with ESRCH, which is fine.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_pgid: i32) {}
