//! Stopping a process cleanly (SIGINT, SIGTERM): no line half-written, no
//! child left running.
//!
//! Batch lines and the lines of journals and recordings are written inside
//! [`whole`]. [`halt`] waits for the writes in progress, blocks every later
//! one, runs the hooks given to [`before_kill`] (MCP calls in flight tell
//! their servers they are cancelled), and kills the process group of every
//! child still running (grandchildren too); no child starts after it. The caller then reports and exits: the
//! library installs no signal handler of its own (the CLI does, see
//! `cli::signals`).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock, RwLockWriteGuard};

static GATE: RwLock<()> = RwLock::new(());
static HALTED: AtomicBool = AtomicBool::new(false);
/// Process group ids of the `exec` children still running.
static CHILDREN: Mutex<Vec<i32>> = Mutex::new(Vec::new());
/// What [`halt`] runs before it kills the children.
static BEFORE_KILL: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

/// Runs `write` so that [`halt`] never cuts it in half.
pub(crate) fn whole<T>(write: impl FnOnce() -> T) -> T {
    let _open = GATE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    write()
}

/// True once [`halt`] was called: start no new work.
#[must_use]
pub(crate) fn halted() -> bool {
    HALTED.load(Ordering::SeqCst)
}

/// Stops new work and kills every child process group; returns once no
/// write is in progress. Writes stay blocked for the rest of the process,
/// which should exit soon.
pub(crate) fn halt() {
    HALTED.store(true, Ordering::SeqCst);
    let guard: RwLockWriteGuard<'static, ()> =
        GATE.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    std::mem::forget(guard);
    let hooks = std::mem::take(&mut *crate::sync::lock(&BEFORE_KILL));
    for hook in hooks {
        hook();
    }
    for pgid in children().drain(..) {
        kill_group(pgid);
    }
}

/// Makes [`halt`] run `hook` (once) before it kills the children: a hook
/// that waits must bound its wait, the process is stopping.
pub(crate) fn before_kill(hook: fn()) {
    crate::sync::lock(&BEFORE_KILL).push(hook);
}

/// Starts a child that leads its own process group (`start` spawns it and
/// names the group), unless [`halt`] was called; [`halt`] kills the group
/// until [`kill_child`] does.
///
/// # Errors
/// ignite is stopping, or `start` failed.
pub(crate) fn start_child<T>(
    start: impl FnOnce() -> io::Result<(T, Option<i32>)>,
) -> io::Result<(T, Option<i32>)> {
    let mut live = children();
    if halted() {
        return Err(io::Error::other("ignite is stopping"));
    }
    let (child, pgid) = start()?;
    live.extend(pgid);
    Ok((child, pgid))
}

/// Kills the process group `pgid` of a child started by [`start_child`].
pub(crate) fn kill_child(pgid: i32) {
    children().retain(|&p| p != pgid);
    kill_group(pgid);
}

fn children() -> MutexGuard<'static, Vec<i32>> {
    crate::sync::lock(&CHILDREN)
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
