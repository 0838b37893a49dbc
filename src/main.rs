//! The `ignite` command line; see `igniter::cli`.

fn main() {}
