//! Stopping a process cleanly (SIGINT, SIGTERM): no line half-written, no
//! child left running.
//!
//! Batch lines and the lines of journals and recordings are written inside
//! [`whole`]. [`halt`] waits for the writes in progress, blocks every later
//! one, and kills the process group of every `exec` child still running
//! (grandchildren too); no child starts after it. The caller then reports and exits: the
//! library installs no signal handler of its own (the CLI does, see
//! `cli::signals`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{RwLock, RwLockWriteGuard};

static GATE: RwLock<()> = RwLock::new(());
static HALTED: AtomicBool = AtomicBool::new(false);

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
    crate::tools::kill_children();
}
