//! `ignite schema FILE`: the tools' JSON Schemas as a JSON array.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::PossibleValuesParser;

use super::GlobalArgs;
use crate::ir::ProviderKind;
use crate::tools::{Registry, ToolView, Toolbox};

/// Print the JSON Schemas of the tools, as sent to models.
#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// The `.ign` file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// A provider kind's format; the intermediate `{name, description, parameters}` when absent.
    #[arg(long, value_name = "KIND", value_parser = PossibleValuesParser::new(ProviderKind::names()))]
    pub provider: Option<String>,
    /// Only tools whose required capabilities are all in this list (comma-separated).
    #[arg(long, value_name = "a,b")]
    pub capabilities: Option<String>,
}

impl SchemaArgs {
    /// Prints the schemas; exit 1 when the program has errors.
    #[must_use]
    pub fn run(self, global: &GlobalArgs) -> ExitCode {
        let program = match super::compile(&self.file, global) {
            Ok(program) => program,
            Err(code) => return code,
        };
        let format = match self.provider.as_deref().and_then(ProviderKind::named) {
            Some(kind) => kind.spec().tool,
            None => ToolView::intermediate,
        };
        let registry = Registry::from_program(&program, &Toolbox::new());
        let capabilities = super::split_capabilities(self.capabilities.as_deref());
        let schemas = registry.schemas(format, capabilities.as_deref());
        super::emit_json(&schemas, ExitCode::SUCCESS)
    }
}
