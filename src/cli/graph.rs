//! `ignite graph FILE`: draw a contract's DAG as text, Mermaid or dot.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;

use super::GlobalArgs;
use crate::render::{GraphFormat, render_graph};

/// Draw a contract's graph.
#[derive(Debug, clap::Args)]
pub struct GraphArgs {
    /// The `.ign` file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The contract to draw; needed when the program declares several.
    #[arg(long, value_name = "NAME")]
    pub contract: Option<String>,
    /// The drawing format.
    #[arg(long, value_enum, default_value_t = Drawing::Text)]
    pub format: Drawing,
    /// Label each node that asks models with its worst-case model calls (see `ignite plan`).
    #[arg(long)]
    pub calls: bool,
}

/// Drawing formats on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Drawing {
    /// One line per node.
    Text,
    /// A Mermaid flowchart.
    Mermaid,
    /// A Graphviz digraph.
    Dot,
}

impl GraphArgs {
    /// Prints the drawing; exit 1 when the program has errors, 2 on a bad contract name.
    #[must_use]
    pub fn run(self, global: &GlobalArgs) -> ExitCode {
        let (engine, contract) =
            match super::compile_contract(&self.file, self.contract.as_deref(), global) {
                Ok(chosen) => chosen,
                Err(code) => return code,
            };
        let format = match self.format {
            Drawing::Text => GraphFormat::Text,
            Drawing::Mermaid => GraphFormat::Mermaid,
            Drawing::Dot => GraphFormat::Dot,
        };
        let program = engine.program();
        let notes =
            if self.calls { crate::plan::call_notes(program, contract) } else { Vec::new() };
        super::emit(&render_graph(program, &program[contract], format, &notes), ExitCode::SUCCESS)
    }
}
