//! Stopping a process cleanly (SIGINT, SIGTERM): no line half-written, no
//! child left running.
//!
//! Batch lines are written inside [`whole`]; journals and recordings
//! register an [`AtHalt`] hook (their files take no lock per line). [`halt`]
//! waits for the writes in progress, blocks every later one, lets each
//! hook finish its file, and kills the process group of every `exec`
//! child still running (grandchildren too); no child starts after it. The caller then reports and exits: the
//! library installs no signal handler of its own (the CLI does, see
//! `cli::signals`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock, RwLockWriteGuard, Weak};

static GATE: RwLock<()> = RwLock::new(());
static HALTED: AtomicBool = AtomicBool::new(false);
static HOOKS: Mutex<Vec<Weak<dyn AtHalt>>> = Mutex::new(Vec::new());

/// A file that [`halt`] must finish itself: wait for its writes in
/// progress, block every later one, leave the file whole.
pub trait AtHalt: Send + Sync {
    /// Called once by [`halt`]; the process exits soon after.
    fn halt(&self);
}

/// Calls `hook` on [`halt`] while it is alive.
pub fn at_halt(hook: Weak<dyn AtHalt>) {
    let mut hooks = HOOKS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    hooks.retain(|h| h.strong_count() > 0);
    hooks.push(hook);
}

/// Runs `write` so that [`halt`] never cuts it in half.
pub fn whole<T>(write: impl FnOnce() -> T) -> T {
    let _open = GATE.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    write()
}

/// True once [`halt`] was called: start no new work.
#[must_use]
pub fn halted() -> bool {
    HALTED.load(Ordering::SeqCst)
}

/// Stops new work and kills every child process group; returns once no
/// write is in progress. Writes stay blocked for the rest of the process,
/// which should exit soon.
pub fn halt() {
    HALTED.store(true, Ordering::SeqCst);
    let guard: RwLockWriteGuard<'static, ()> =
        GATE.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    std::mem::forget(guard);
    let hooks = HOOKS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for hook in hooks.iter().filter_map(Weak::upgrade) {
        hook.halt();
    }
    crate::tools::kill_children();
}
