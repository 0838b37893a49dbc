//! `ignite tools FILE`: a table of the tools.

use std::path::PathBuf;
use std::process::ExitCode;

use super::GlobalArgs;
use crate::tools::{Registry, Toolbox, render_table};

/// List the tools in a table.
#[derive(Debug, clap::Args)]
pub struct ToolsArgs {
    /// The `.ign` file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Only tools whose required capabilities are all in this list (comma-separated).
    #[arg(long, value_name = "a,b")]
    pub capabilities: Option<String>,
}

impl ToolsArgs {
    /// Prints the table; exit 1 when the program has errors.
    #[must_use]
    pub fn run(self, global: &GlobalArgs) -> ExitCode {
        let program = match super::compile(&self.file, global) {
            Ok(program) => program,
            Err(code) => return code,
        };
        let registry = Registry::from_program(&program, &Toolbox::new());
        let capabilities = super::split_capabilities(self.capabilities.as_deref());
        super::emit(&render_table(&registry, capabilities.as_deref()), ExitCode::SUCCESS)
    }
}
