//! `ignite plan FILE`: a contract's worst case before anything runs (see
//! [`crate::plan`]); with `--inputs`, a dry run that lists the effects the
//! run would perform, performing none.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;

use super::GlobalArgs;
use crate::plan::{self, Options};

/// Show a contract's worst case (model calls, tool calls, cost) before it runs;
/// with `--inputs`, a dry run listing its effects.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// The `.ign` file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The contract to plan; needed when the program declares several.
    #[arg(long, value_name = "NAME")]
    pub contract: Option<String>,
    /// A JSON object of inputs (a file, or `-` for stdin): a dry run that
    /// evaluates the pure nodes and lists every effect the run would perform.
    #[arg(long = "inputs", value_name = "FILE|-")]
    pub inputs: Option<String>,
    /// The most input tokens one model request is assumed to send, for the cost bound.
    #[arg(long, value_name = "N", default_value_t = Options::default().input_tokens)]
    pub input_tokens: u64,
    /// Text for people, or JSON.
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    pub format: PlanFormat,
}

/// Output formats of `ignite plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// A table.
    Text,
    /// One JSON document.
    Json,
}

impl PlanArgs {
    /// Prints the plan; exit 1 when the program has errors, 2 on a bad
    /// contract name or unreadable inputs.
    #[must_use]
    pub fn run(self, global: &GlobalArgs) -> ExitCode {
        let (engine, contract) =
            match super::compile_contract(&self.file, self.contract.as_deref(), global) {
                Ok(chosen) => chosen,
                Err(code) => return code,
            };
        let program = engine.program();
        let options = Options { input_tokens: self.input_tokens };
        if let Some(source) = &self.inputs {
            let inputs = match super::run::read_json_object(source) {
                Ok(inputs) => {
                    inputs.into_iter().map(|(name, value)| (name, value.into_json())).collect()
                }
                Err(message) => return super::usage(&message),
            };
            let dry = plan::dry::dry_run(program, contract, &inputs);
            return match self.format {
                PlanFormat::Text => super::emit(&dry.render(), ExitCode::SUCCESS),
                PlanFormat::Json => super::emit_json(&dry.to_json(), ExitCode::SUCCESS),
            };
        }
        let plan = plan::plan(program, contract, options);
        match self.format {
            PlanFormat::Text => super::emit(&plan.render(), ExitCode::SUCCESS),
            PlanFormat::Json => super::emit_json(&plan.to_json(), ExitCode::SUCCESS),
        }
    }
}
