//! Locks that outlive a panic.
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
