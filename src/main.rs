//! The `ignite` command line; see `igniter::cli`.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    igniter::cli::run(igniter::cli::Cli::parse())
}
