//! The pest parser generated from `grammar/ignite.pest`, the grammar of
//! record of `.ign` files.
//!
//! It lives in a crate of its own so that debug builds can optimise it (a
//! parser derived by `pest_derive` compiles at the opt-level of the crate
//! that derives it; the workspace's manifest sets this crate's). Only
//! `igniter::syntax` uses it: the pairs it yields never leave that module.

#![allow(missing_docs)]

/// The pest parser generated from `ignite.pest`.
#[derive(pest_derive::Parser)]
#[grammar = "../ignite.pest"]
pub struct IgnParser;
