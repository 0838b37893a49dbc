//! The `ignite` command line; see `igniter::cli`.

use std::process::ExitCode;

use clap::Parser;

/// Compiling builds and frees many small nodes; mimalloc does that at
/// about half the cost of the system allocator (see BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    igniter::cli::run(igniter::cli::Cli::parse())
}
