//! What a child `ignite` process used, read from `wait4`: its peak memory for
//! the memory benches; its wall time, CPU time and page faults for the
//! benches that time whole processes.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one run of a command used.
#[derive(Clone, Copy)]
#[allow(dead_code, reason = "each bench reads some of the fields")]
pub(crate) struct Usage {
    /// From its start to its end, seen from outside.
    pub(crate) wall: Duration,
    /// User and system time, its threads together.
    pub(crate) cpu: Duration,
    /// Minor page faults (fresh pages touched).
    pub(crate) faults: u64,
    /// Peak resident bytes.
    pub(crate) peak: usize,
}

/// Peak resident bytes of `ignite ARGS FILE`, which must succeed.
#[allow(dead_code, reason = "each bench uses some of the three")]
pub(crate) fn peak_rss(binary: &Path, args: &[&str], file: &Path) -> usize {
    let (command, rest) = args.split_first().expect("a command");
    let mut ignite = Command::new(binary);
    ignite.arg(command).arg(file).args(rest);
    peak_rss_of(ignite)
}

/// Peak resident bytes of `command`, which must succeed.
#[allow(dead_code, reason = "each bench uses some of the three")]
pub(crate) fn peak_rss_of(mut command: Command) -> usize {
    usage_of(command.stderr(Stdio::null())).peak
}

/// Runs `command` to its end, its output thrown away; what it used. It must
/// succeed.
#[allow(clippy::zombie_processes, reason = "`wait4` reaps the child")]
pub(crate) fn usage_of(command: &mut Command) -> Usage {
    let start = Instant::now();
    let child = command.stdout(Stdio::null()).spawn().expect("the command starts");
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    let mut status = 0;
    // SAFETY: a zeroed `rusage` is a valid value for `wait4` to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for; both pointers are valid.
    let waited = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    let wall = start.elapsed();
    assert_eq!(waited, pid, "wait4");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{command:?} failed");
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.unsigned_abs())
            + Duration::from_micros(t.tv_usec.unsigned_abs())
    };
    Usage {
        wall,
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
        faults: usage.ru_minflt.unsigned_abs(),
        // Linux reports kilobytes.
        peak: usize::try_from(usage.ru_maxrss).expect("a size") * 1024,
    }
}
