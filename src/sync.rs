//! Locks that outlive a panic, and two pieces of work on two threads.
//!
//! A thread that panics while it holds one of the run's locks leaves the
//! data as it was at the panic: a trace, a counter, a list of waits. Each
//! such lock is taken through [`lock`], which takes the data anyway, so one
//! failed node never turns every later lock into a second panic.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, also when a thread panicked while it held it.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `there` on a second thread while `here` runs on this one, and
/// returns both results. When no thread can start, both run here. A panic
/// of `there` goes on on this thread.
pub(crate) fn beside<A: Send, B>(
    there: impl FnOnce() -> A + Send,
    here: impl FnOnce() -> B,
) -> (A, B) {
    // Shared, so that this thread still has `there` if the other one
    // cannot start.
    let there = Mutex::new(Some(there));
    let run = || lock(&there).take().map(|f| f());
    std::thread::scope(|s| {
        let started = std::thread::Builder::new().spawn_scoped(s, run);
        let b = here();
        let a = started
            .ok()
            .and_then(|t| t.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .or_else(run)
            .unwrap_or_else(|| unreachable!("`there` runs on one thread or the other"));
        (a, b)
    })
}

#[cfg(test)]
mod tests {
    use super::beside;

    #[test]
    fn both_results_come_back_and_a_panic_there_goes_on_here() {
        let here = std::thread::current().id();
        let (there, still) = beside(|| std::thread::current().id(), || std::thread::current().id());
        assert_eq!(still, here);
        assert_ne!(there, here, "`there` ran on another thread");
        let panicked = std::panic::catch_unwind(|| beside(|| panic!("there"), || 1));
        assert!(panicked.is_err());
    }
}
