//! SIGINT and SIGTERM: stop new work, kill the children, leave every
//! written line whole, say so, print what was spent, and exit (130 for
//! SIGINT, 143 for SIGTERM).

use std::sync::Mutex;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// What a stopped process prints after `stopped by ...`: the usage and
/// cache counts of the work done so far.
type Report = Box<dyn Fn() -> String + Send>;

/// The report of the command running, set by [`report_on_stop`].
static REPORT: Mutex<Option<Report>> = Mutex::new(None);

/// From now on, the first SIGINT or SIGTERM halts the process (see
/// [`crate::shutdown::halt`]), prints `stopped by SIGNAL{note}` and the
/// [`report_on_stop`] report on stderr and exits. When the handler cannot
/// be installed the default action (exit at once) stays.
pub(super) fn stop_on_signals(note: String) {
    let Ok(mut signals) = Signals::new([SIGINT, SIGTERM]) else { return };
    let spawned = std::thread::Builder::new().name("ignite-signals".to_owned()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            crate::shutdown::halt();
            let name = if signal == SIGINT { "SIGINT" } else { "SIGTERM" };
            eprintln!("ignite: stopped by {name}{note}");
            if let Some(report) = &*crate::sync::lock(&REPORT) {
                eprint!("{}", report());
            }
            // The spans that ended (finished calls) still go out.
            crate::telemetry::flush();
            std::process::exit(128 + signal);
        }
    });
    drop(spawned);
}

/// Sets what a stop prints after its `stopped by` line.
pub(super) fn report_on_stop(report: impl Fn() -> String + Send + 'static) {
    *crate::sync::lock(&REPORT) = Some(Box::new(report));
}
