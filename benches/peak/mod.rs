//! Peak memory of a child `ignite` process, for the memory benches.

use std::path::Path;
use std::process::{Command, Stdio};

/// Peak resident bytes of `ignite ARGS FILE`, which must succeed.
#[allow(dead_code, reason = "each bench uses one of the two")]
pub(crate) fn peak_rss(binary: &Path, args: &[&str], file: &Path) -> usize {
    let (command, rest) = args.split_first().unwrap();
    let mut ignite = Command::new(binary);
    ignite.arg(command).arg(file).args(rest);
    peak_rss_of(ignite)
}

/// Peak resident bytes of `command`, which must succeed.
#[allow(clippy::zombie_processes, reason = "`wait4` reaps the child")]
pub(crate) fn peak_rss_of(mut command: Command) -> usize {
    let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: a zeroed `rusage` is a valid value for `wait4` to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for; both pointers are valid.
    let waited = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    assert_eq!(waited, pid, "wait4");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{command:?} failed");
    // Linux reports kilobytes.
    usize::try_from(usage.ru_maxrss).unwrap() * 1024
}
