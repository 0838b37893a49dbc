//! SIGINT and SIGTERM: stop new work, kill the children, leave every
//! written line whole, say so and exit (130 for SIGINT, 143 for SIGTERM).

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// From now on, the first SIGINT or SIGTERM halts the process (see
/// [`crate::shutdown::halt`]), prints `stopped by SIGNAL{note}` on stderr
/// and exits. When the handler cannot be installed the default action
/// (exit at once) stays.
pub(super) fn stop_on_signals(note: String) {
    let Ok(mut signals) = Signals::new([SIGINT, SIGTERM]) else { return };
    let spawned = std::thread::Builder::new().name("ignite-signals".to_owned()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            crate::shutdown::halt();
            let name = if signal == SIGINT { "SIGINT" } else { "SIGTERM" };
            eprintln!("ignite: stopped by {name}{note}");
            // The spans that ended (finished calls) still go out.
            crate::telemetry::flush();
            std::process::exit(128 + signal);
        }
    });
    drop(spawned);
}
