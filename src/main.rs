//! The `ignite` command line; see `igniter::cli`.

use std::process::ExitCode;

use clap::Parser;

/// Compiling builds and frees many small nodes; mimalloc does that at
/// about half the cost of the system allocator (see BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" {
    /// Sets a mimalloc option (the C library the `mimalloc` crate links).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in `mimalloc.h` (the same number in mimalloc
/// 2 and 3): how many milliseconds freed pages wait before they are
/// returned to the system.
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// The purge delay ignite sets, in milliseconds (see `main`).
const PURGE_DELAY_MS: std::ffi::c_long = 100;

/// What `ignite --version` prints: clap's answer (a test checks it).
const VERSION: &str = concat!("ignite ", env!("CARGO_PKG_VERSION"), "\n");

fn main() -> ExitCode {
    if asks_version_only() {
        // As clap does: a failed write (a closed standard output) is ignored.
        let _ = std::io::Write::write_all(&mut std::io::stdout(), VERSION.as_bytes());
        return ExitCode::SUCCESS;
    }
    without_huge_pages();
    // Freed pages go back to the system 100 ms after they are freed instead
    // of mimalloc's 1 s: lowering frees the syntax tree while it builds the
    // checked program, and with a long delay both stay resident (a
    // 1,000,000-node chain checks at 281 MB peak instead of 355 MB), while
    // returning them at once (0) costs a page fault per reuse and made a
    // `check` of 10,000 declarations 1.24× slower (BENCHMARKS.md, "The
    // allocator's purge delay"). `MIMALLOC_PURGE_DELAY` in the environment
    // (mimalloc's own variable) still decides, for measuring and tuning.
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one integer option of the allocator; no memory is touched.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
    let code = igniter::cli::run(igniter::cli::Cli::parse());
    // The process ends: its pages go back with it, so freed ones are no
    // longer returned one range at a time as mimalloc cleans up at exit (a
    // `madvise` call each: 55 after a 1,000-node `run`, 223 after `check`
    // of 10,000 declarations; BENCHMARKS.md, "The agent loop and
    // small-graph execution won back").
    // SAFETY: sets one integer option of the allocator; no memory is touched.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, NEVER) };
    code
}

/// True for `ignite --version` or `ignite -V` and nothing else: answered
/// before clap builds the whole command line (every subcommand and its
/// options) only to print one line (BENCHMARKS.md, "Start-up").
fn asks_version_only() -> bool {
    let mut args = std::env::args_os().skip(1);
    matches!((args.next(), args.next()), (Some(arg), None) if arg == "--version" || arg == "-V")
}

/// A purge delay that never returns freed pages.
const NEVER: std::ffi::c_long = -1;

/// Turns transparent huge pages off for the process, unless
/// `MIMALLOC_ALLOW_THP` (mimalloc's own variable) decides. mimalloc is
/// built never to ask for huge pages (its `no_thp` feature: before `main`
/// runs, its first pages were huge ones, and `--version` spent a fifth of
/// its CPU time clearing them; BENCHMARKS.md, "Start-up"); this turns them
/// off for the rest of the process's memory too, where the system gives
/// them unasked (`always` mode). Measured in one run (BENCHMARKS.md,
/// "Transparent huge pages"), turning them off cuts the CPU time of an
/// agent's 21-request conversation by 18 % and of a 1,000-node chain by
/// 16 %, and a batch at `--jobs 256` from 254–270 MB to 61–68 MB; only
/// `check` of 10,000 declarations takes 10 % longer. If the call fails,
/// huge pages stay as the system decides.
fn without_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: PR_SET_THP_DISABLE only sets a flag on this process's memory
    // map; it reads no pointer.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    unsafe extern "C" {
        fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    }

    #[test]
    fn the_option_number_is_the_purge_delay() {
        // The purge delay is the option whose default is 1000 ms in
        // mimalloc 3 (the neighbouring options default to 0 or 1).
        // SAFETY: reads one integer option of the allocator.
        let delay = unsafe { mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, 1000);
    }

    #[test]
    fn the_early_version_is_clap_s() {
        assert_eq!(igniter::cli::Cli::command().render_version(), super::VERSION);
    }
}
