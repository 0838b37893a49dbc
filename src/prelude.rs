//! What a Rust program that embeds ignite needs, in one import:
//! `use igniter::prelude::*;`.
//!
//! Compile a program ([`compile`], [`compile_source`]), build an
//! [`Engine`] over the checked [`Program`] (with a [`Toolbox`] holding
//! [`NativeTool`]s, an [`Llm`] and the run's [`Effects`] stores), run a
//! contract ([`Engine::run`] with [`RunOptions`]) and read its
//! [`RunOutput`], or its [`RunError`] (a failed node's cause is a
//! [`NodeError`], the one failure type of tools, providers and stores).
//! The stage modules (`syntax`, `lower`, `ir`, `runtime`, `tools`, `llm`,
//! `effects`, ...) stay public for tools that work on one stage.

pub use crate::diagnostic::{Code, Diagnostics};
pub use crate::effects::{Cache, Effects, Recording};
pub use crate::failure::NodeError;
pub use crate::ir::{ContractId, Program};
pub use crate::llm::Llm;
pub use crate::runtime::{Engine, RunError, RunOptions, RunOutput};
pub use crate::tools::{NativeTool, Registry, Toolbox, schema_for};
pub use crate::usage::UsageTotals;
pub use crate::{Compilation, compile, compile_source};
