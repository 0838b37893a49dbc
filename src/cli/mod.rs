//! The command line: clap parsing, printing and exit codes. This is the
//! only module that prints; the library returns values.
//!
//! | exit code | meaning |
//! | --- | --- |
//! | 0 | success (warnings allowed) |
//! | 1 | the contracts have errors (or warnings with `--deny-warnings`); `test`: a test failed; `eval`: a `require` failed or a score is worse than the baseline |
//! | 2 | usage or I/O error (no such path, bad run inputs) |
//! | 3 | a run failed (a node failed) |
//! | 4 | a run paused: calls wait for approval (`ignite approvals`) |
//!
//! Each subcommand is a `*Args` struct in its own file with
//! `fn run(self, &GlobalArgs) -> ExitCode`; adding one means a file and a
//! [`Command`] variant.

// The CLI is where output goes to the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod approve;
mod batch;
mod cache;
mod check;
mod eval;
mod fmt;
mod graph;
mod lsp;
mod mcp;
mod mcp_lock;
mod media;
mod plan;
mod report;
mod run;
mod schema;
mod serve;
mod signals;
mod test;
mod tools;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

pub use approve::{ApprovalsArgs, ApproveArgs, DenyArgs};
pub use cache::{CacheAction, CacheArgs};
pub use check::{CheckArgs, Format};
pub use eval::{EvalArgs, EvalFormat};
pub use fmt::FmtArgs;
pub use graph::GraphArgs;
pub use lsp::LspArgs;
pub use mcp::McpArgs;
pub use plan::PlanArgs;
pub use report::ReportArgs;
pub use run::RunArgs;
pub use schema::SchemaArgs;
pub use serve::ServeArgs;
pub use test::{TestArgs, TestFormat};
pub use tools::ToolsArgs;

/// Width diagnostics wrap at.
const WIDTH: usize = 100;

/// `ignite`: check and run declarative contract graphs.
#[derive(Debug, Parser)]
#[command(name = "ignite", version, about)]
pub struct Cli {
    /// Options shared by every command.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command.
#[derive(Debug, clap::Args)]
pub struct GlobalArgs {
    /// When to colour diagnostics.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    /// Let `use` name files outside the root file's folder tree.
    #[arg(long, global = true)]
    pub allow_outside: bool,
}

/// When to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    /// When stderr is a terminal and `NO_COLOR` is unset.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl GlobalArgs {
    /// How far `use` may reach.
    #[must_use]
    pub fn load_options(&self) -> crate::load::Options {
        crate::load::Options { allow_outside: self.allow_outside }
    }

    /// True when diagnostics on stderr should be coloured.
    #[must_use]
    pub fn color_stderr(&self) -> bool {
        match self.color {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => {
                std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
            }
        }
    }
}

/// The subcommands. Each one's options are built only when it runs
/// (`defer`: building all seventeen cost a tenth of a one-line `check`);
/// its description is then its arguments' doc comment, the same text as
/// the variant's here, which `ignite --help` lists (a test keeps them
/// equal).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Check `.ign` files and report every problem.
    Check(CheckArgs),
    /// Run a contract and print its outputs as JSON.
    Run(Box<RunArgs>),
    /// Draw a contract's graph.
    Graph(GraphArgs),
    /// Show a contract's worst case (model calls, tool calls, cost) before it runs;
    /// with `--inputs`, a dry run listing its effects.
    Plan(PlanArgs),
    /// Print the JSON Schemas of the tools, as sent to models.
    Schema(SchemaArgs),
    /// List the tools in a table.
    Tools(ToolsArgs),
    /// Show or clear the result cache of tools and agents declared `cache`.
    Cache(CacheArgs),
    /// Run the `test` blocks of `.ign` files.
    Test(TestArgs),
    /// Run the `eval` blocks of `.ign` files: scores with intervals, baselines.
    Eval(EvalArgs),
    /// Write a self-contained HTML page of a run (journal, recording) or a saved eval.
    Report(ReportArgs),
    /// Serve every top-level contract over HTTP.
    Serve(ServeArgs),
    /// Format `.ign` files in the one canonical layout.
    Fmt(FmtArgs),
    /// Serve the tools and top-level contracts to MCP clients (stdio, or HTTP with `--http`).
    Mcp(McpArgs),
    /// Run the language server (LSP over standard input and output) for editors.
    Lsp(LspArgs),
    /// List the calls journaled runs wait for approval on.
    Approvals(ApprovalsArgs),
    /// Approve calls a journaled run waits for (all of them when none is named).
    Approve(ApproveArgs),
    /// Deny a call a journaled run waits for.
    Deny(DenyArgs),
}

/// Runs a parsed command line and returns the process exit code.
#[must_use]
pub fn run(cli: Cli) -> ExitCode {
    let Cli { global, command } = cli;
    let runs = matches!(
        command,
        Command::Run(_) | Command::Test(_) | Command::Eval(_) | Command::Serve(_) | Command::Mcp(_)
    );
    let exporting = runs
        && crate::telemetry::init().unwrap_or_else(|message| {
            eprintln!("warning: {message}; no spans are exported");
            false
        });
    let code = crate::on_big_stack(move || match command {
        Command::Check(args) => args.run(&global),
        Command::Run(args) => (*args).run(&global),
        Command::Graph(args) => args.run(&global),
        Command::Plan(args) => args.run(&global),
        Command::Schema(args) => args.run(&global),
        Command::Tools(args) => args.run(&global),
        Command::Cache(args) => args.run(&global),
        Command::Test(args) => args.run(&global),
        Command::Eval(args) => args.run(&global),
        Command::Report(args) => args.run(&global),
        Command::Serve(args) => args.run(&global),
        Command::Fmt(args) => args.run(&global),
        Command::Mcp(args) => args.run(&global),
        Command::Lsp(args) => args.run(&global),
        Command::Approvals(args) => args.run(&global),
        Command::Approve(args) => args.run(&global),
        Command::Deny(args) => args.run(&global),
    });
    // A signal halted the work (`signals::stop_on_signals`): its thread
    // reports, flushes and exits with the signal's code (130, 143). What the
    // halted work returned (a call failing as its child was killed) is not
    // the process's outcome, so wait for that exit.
    if crate::shutdown::halted() {
        loop {
            std::thread::park();
        }
    }
    // Spans still queued go out before the process ends, whatever the outcome.
    if exporting {
        if let Err(message) = crate::telemetry::shutdown() {
            eprintln!("warning: {message}");
        }
    }
    code
}

/// `cache: N hits, M misses` and a newline when the run consulted the
/// cache, else nothing.
fn cache_summary(cache: Option<&std::sync::Arc<crate::effects::Cache>>) -> String {
    match cache.map(|c| c.counts()) {
        Some((hits, misses)) if hits + misses > 0 => {
            format!("cache: {hits} hits, {misses} misses\n")
        }
        _ => String::new(),
    }
}

/// Prints `message` as an error; exit code 2.
fn usage(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

/// Writes `text` to standard output and returns `code`. A reader that
/// went away (`ignite run … | head`) is not an error: what is left is
/// dropped quietly, as Unix tools do. Any other failure (a full disk
/// behind a redirection) is reported and gives exit code 2, so output is
/// never lost in silence.
fn emit(text: &str, code: ExitCode) -> ExitCode {
    write_stdout(code, |out| out.write_all(text.as_bytes()))
}

/// Writes `value` as indented JSON and a newline to standard output, as it
/// is serialised (no copy of the whole text in memory), and returns
/// `code`; failures as for [`emit`].
fn emit_json(value: &impl serde::Serialize, code: ExitCode) -> ExitCode {
    write_stdout(code, |out| {
        serde_json::to_writer_pretty(&mut *out, value)?;
        out.write_all(b"\n")
    })
}

/// Runs `write` on buffered standard output, then flushes it.
fn write_stdout(
    code: ExitCode,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> ExitCode {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("error: cannot write to standard output: {e}");
            ExitCode::from(2)
        }
        _ => code,
    }
}

/// An engine over `program` with live providers (from the environment)
/// and tools, both capped at `max_bytes` per result, and `file(...)`
/// refusing files larger than it.
fn live_engine(program: crate::ir::Program, max_bytes: usize) -> crate::runtime::Engine {
    crate::media::set_file_limit(max_bytes);
    crate::runtime::Engine::new(program)
        .with_llm(crate::llm::Llm::from_env().with_max_bytes(max_bytes))
        .with_toolbox(crate::tools::Toolbox::new().with_max_bytes(max_bytes))
}

/// Compiles `file`, printing its diagnostics on stderr; the program, or
/// the exit code: 2 when there is no such file, 1 when it has errors.
fn compile(file: &std::path::Path, global: &GlobalArgs) -> Result<crate::ir::Program, ExitCode> {
    if !file.is_file() {
        let what = if file.exists() { "not a regular file" } else { "no such file" };
        eprintln!("error: {what} `{}`", file.display());
        return Err(ExitCode::from(2));
    }
    let compilation = crate::compile_with(file, global.load_options());
    let diagnostics = &compilation.diagnostics;
    if !diagnostics.is_empty() {
        eprint!("{}", diagnostics.render(&compilation.sources, global.color_stderr(), WIDTH));
    }
    compilation.program.ok_or_else(|| {
        use crate::diagnostic::Severity;
        let (errors, warnings) =
            (diagnostics.count(Severity::Error), diagnostics.count(Severity::Warning));
        eprintln!(
            "{}",
            check::summary(errors, warnings, compilation.sources.iter().count(), false)
        );
        ExitCode::from(1)
    })
}

/// Compiles `file` (as [`compile`] does) and picks its contract `name`, or
/// its only one: the engine and the contract, or the exit code (2 with the
/// message for a contract it does not have).
fn compile_contract(
    file: &std::path::Path,
    name: Option<&str>,
    global: &GlobalArgs,
) -> Result<(crate::runtime::Engine, crate::ir::ContractId), ExitCode> {
    let engine = crate::runtime::Engine::new(compile(file, global)?);
    let contract = engine.contract(name).map_err(|error| usage(&error.to_string()))?;
    Ok((engine, contract))
}

/// `a,b` from `--capabilities` as a list.
fn split_capabilities(list: Option<&str>) -> Option<Vec<String>> {
    list.map(|l| l.split(',').map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn a_subcommand_describes_itself_as_the_list_does() {
        let cli = super::Cli::command();
        for listed in cli.get_subcommands() {
            let mut built = listed.clone();
            built.build();
            assert_eq!(
                built.get_about().map(ToString::to_string),
                listed.get_about().map(ToString::to_string),
                "`ignite {} --help` and `ignite --help` describe it alike",
                listed.get_name()
            );
            assert_eq!(
                built.get_long_about().map(ToString::to_string),
                listed.get_long_about().map(ToString::to_string),
                "{}",
                listed.get_name()
            );
        }
    }
}
