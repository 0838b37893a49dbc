//! `ignite lsp`: the language server, on standard input and output.

use std::process::ExitCode;

use super::GlobalArgs;

/// Run the language server (LSP over standard input and output) for editors.
#[derive(Debug, clap::Args)]
pub struct LspArgs {
    /// Talk over standard input and output (the only transport; accepted
    /// because editors' clients pass it).
    #[arg(long)]
    pub stdio: bool,
}

impl LspArgs {
    /// Serves until the editor exits or closes standard input.
    #[must_use]
    pub fn run(self, _global: &GlobalArgs) -> ExitCode {
        match crate::lsp::serve_stdio(std::env::current_exe().ok()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("error: the language server stopped: {message}");
                ExitCode::from(2)
            }
        }
    }
}
