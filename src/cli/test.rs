//! `ignite test [PATH...]`: compile each `.ign` file under the paths, run
//! the `test` blocks it declares, print one line per test (or JSON, or
//! JUnit XML) and `N passed, M failed` last.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;

use super::{GlobalArgs, WIDTH};
use crate::diagnostic::Severity;
use crate::llm::Llm;
use crate::runtime::Engine;
use crate::testing::report::Report;
use crate::testing::{self, Options, Suite};

/// Run the `test` blocks of `.ign` files.
#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// Files or folders whose tests to run (folders: every `*.ign` inside).
    #[arg(value_name = "PATH", default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Only tests whose name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Write new and changed snapshots instead of failing.
    #[arg(long)]
    pub update: bool,
    /// Run agents against their live providers and write the tests' cassettes.
    #[arg(long)]
    pub record: bool,
    /// How to report.
    #[arg(long, value_enum, default_value_t = TestFormat::Human)]
    pub format: TestFormat,
    /// Tests run at once (default: the number of cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

/// How test results are printed (on stdout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TestFormat {
    /// One line per test, failures explained, a summary last.
    Human,
    /// One JSON object.
    Json,
    /// JUnit XML, for CI systems.
    Junit,
}

impl TestArgs {
    /// Runs the tests and returns the exit code: 0 all passed, 1 a test
    /// failed (or a file has errors), 2 usage or I/O error (no such path,
    /// no test found).
    #[must_use]
    pub fn run(self, global: &GlobalArgs) -> ExitCode {
        let files = match super::check::collect(&self.paths) {
            Ok(files) => files,
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::from(2);
            }
        };
        let llm = Llm::from_env();
        let mut report = Report::default();
        let mut suites = Vec::new();
        for file in files {
            let compilation = crate::compile_with(&file, global.load_options());
            let diagnostics = &compilation.diagnostics;
            let Some(program) = compilation.program else {
                eprint!(
                    "{}",
                    diagnostics.render(&compilation.sources, global.color_stderr(), WIDTH)
                );
                let errors = diagnostics.count(Severity::Error);
                report.broken.push((file, format!("{errors} error(s); its tests did not run")));
                continue;
            };
            let engine = Engine::new(program).with_llm(llm.clone());
            let suite = Suite::new(engine, crate::source::FileId(0));
            if suite.tests().next().is_none() {
                continue;
            }
            if !diagnostics.is_empty() {
                eprint!(
                    "{}",
                    diagnostics.render(&compilation.sources, global.color_stderr(), WIDTH)
                );
            }
            report.unused.extend(suite.unused_snapshots());
            suites.push(suite);
        }
        let jobs = self.jobs.map_or_else(
            || std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            usize::from,
        );
        let options =
            Options { filter: self.filter.clone(), update: self.update, record: self.record, jobs };
        report.results = testing::run(&suites, &options);
        if report.results.is_empty() && report.broken.is_empty() {
            let what = match &self.filter {
                Some(filter) => format!("no test name contains `{filter}`"),
                None => "no test blocks found".to_owned(),
            };
            eprintln!("error: {what}");
            return ExitCode::from(2);
        }
        let text = match self.format {
            TestFormat::Human => report.human(),
            TestFormat::Json => {
                let json = serde_json::to_string_pretty(&report.json());
                json.unwrap_or_else(|_| "{}".to_owned()) + "\n"
            }
            TestFormat::Junit => report.junit(),
        };
        super::emit(&text, if report.failed() == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
    }
}
