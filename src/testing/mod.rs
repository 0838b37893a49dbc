//! Running `test` blocks: the library side of `ignite test`.
//!
//! Input: checked programs ([`Suite`]s, one per root file) and
//! [`Options`]. Output: one [`TestResult`] per selected test, in file and
//! declaration order, each with every [`Failure`] found.
//!
//! A test runs its contract on the ordinary runtime ([`Engine`]); its
//! mocks, its cassette and the offline rule are effect stores of that run
//! (see [`crate::effects`]), so tool calls of tool nodes and of agents are
//! answered the same way, by the seam every effect passes through. Tests run concurrently on `jobs` threads; each run uses the
//! runtime's own scheduling inside.
//!
//! | file | concept |
//! | --- | --- |
//! | `mocks.rs` | which calls the mocks answer, the calls seen |
//! | `store.rs` | the effect store of a test run: mocks, offline agents |
//! | `expect.rs` | `expect` conditions and their explanations |
//! | `snapshot.rs` | snapshot files and diffs |
//! | `report.rs` | human, JSON and JUnit reports |

pub(crate) mod expect;
mod mocks;
/// Reports: human, JSON, JUnit.
pub(crate) mod report;
pub(crate) mod snapshot;
mod store;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::eval;
use crate::ir::{BinaryOp, ExpectCalls, Expr, MockAnswer, Program, Snapshot, Test};
use crate::runtime::{Engine, RunError, RunOptions};
use crate::source::FileId;
use expect::Unmet;

/// How to run the tests.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    /// Only tests whose name contains this text.
    pub filter: Option<String>,
    /// Write snapshots (new or changed) instead of failing on them.
    pub update: bool,
    /// Run agents against their live providers and write the cassettes.
    pub record: bool,
    /// Tests run at once (at least 1).
    pub jobs: usize,
}

/// The tests of one root file, with the engine of its program.
pub(crate) struct Suite {
    /// Runs the program (each test on a sibling with its own effect stores).
    engine: Engine,
    /// The root file: only the tests it declares belong to this suite.
    root: FileId,
}

impl Suite {
    /// The suite of `root`, a file of `engine`'s program.
    #[must_use]
    pub(crate) fn new(engine: Engine, root: FileId) -> Self {
        Self { engine, root }
    }

    /// The program.
    #[must_use]
    pub(crate) fn program(&self) -> &Program {
        self.engine.program()
    }

    /// The path of the root file.
    #[must_use]
    pub(crate) fn path(&self) -> &Path {
        &self.program().sources[self.root].path
    }

    /// The suite's tests, in declaration order.
    pub(crate) fn tests(&self) -> impl Iterator<Item = &Test> {
        self.program().tests.iter().filter(|t| t.file == self.root)
    }

    /// Snapshot files beside the root file that none of its tests (with a
    /// `snapshot` statement) owns.
    #[must_use]
    pub(crate) fn unused_snapshots(&self) -> Vec<PathBuf> {
        let owned: Vec<PathBuf> = self
            .tests()
            .filter(|t| t.snapshot != Snapshot::None)
            .map(|t| snapshot::path(self.path(), &t.name))
            .collect();
        snapshot::of_file(self.path()).into_iter().filter(|p| !owned.contains(p)).collect()
    }
}

/// The result of one test.
#[derive(Debug, Clone)]
pub(crate) struct TestResult {
    /// The file that declares it.
    pub file: PathBuf,
    /// Its name.
    pub name: String,
    /// Its line in the file.
    pub line: usize,
    /// How long it took.
    pub duration: Duration,
    /// Everything that went wrong; passed when empty.
    pub failures: Vec<Failure>,
    /// A snapshot written by `--update` (new or changed).
    pub wrote: Option<PathBuf>,
}

impl TestResult {
    /// True when nothing went wrong.
    #[must_use]
    pub(crate) fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// One way a test failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The test could not start: an input or mock value, the cassette.
    Setup(String),
    /// The run failed, and the test expected outputs.
    Run(String),
    /// `expect_error`: the run succeeded.
    NoError {
        /// The text the error should contain.
        expected: String,
    },
    /// `expect_error`: the run failed with another message.
    WrongError {
        /// The text the error should contain.
        expected: String,
        /// The error it failed with.
        actual: String,
    },
    /// An `expect` did not hold.
    Expect(Unmet),
    /// No stored snapshot (and no `--update`).
    SnapshotMissing(PathBuf),
    /// The outputs differ from the stored snapshot.
    SnapshotDiffers {
        /// The snapshot file.
        path: PathBuf,
        /// Stored (`-`) to actual (`+`).
        diff: String,
    },
    /// A call of a mocked tool that no mock matched.
    Unmatched(String),
    /// A call that needs approval, which the test neither approves nor
    /// denies: what it says.
    Undecided(String),
    /// An `expect_calls` did not hold.
    Calls {
        /// The statement as written.
        statement: String,
        /// The calls it counted.
        counted: usize,
        /// Every call of the tool, one line each.
        calls: Vec<String>,
    },
}

impl Failure {
    /// The failure in one line.
    #[must_use]
    pub(crate) fn summary(&self) -> String {
        match self {
            Failure::Setup(m) | Failure::Unmatched(m) | Failure::Undecided(m) => m.clone(),
            Failure::Run(m) => format!("the run failed: {m}"),
            Failure::NoError { expected } => {
                format!("expected an error containing \"{expected}\", but the run succeeded")
            }
            Failure::WrongError { expected, .. } => {
                format!("expected an error containing \"{expected}\", but the run failed otherwise")
            }
            Failure::Expect(unmet) => format!("expect {} did not hold", unmet.condition),
            Failure::SnapshotMissing(path) => {
                format!("no snapshot `{}`: run with `--update` to write it", path.display())
            }
            Failure::SnapshotDiffers { path, .. } => format!(
                "the outputs differ from `{}` (run with `--update` to accept)",
                path.display()
            ),
            Failure::Calls { statement, counted, .. } => {
                let s = if *counted == 1 { "" } else { "s" };
                format!("{statement} did not hold: {counted} matching call{s}")
            }
        }
    }

    /// The failure in full: the summary, then details (diffs, values).
    #[must_use]
    pub(crate) fn lines(&self) -> Vec<String> {
        match self {
            Failure::Expect(unmet) => unmet.lines(),
            Failure::WrongError { expected, actual } => vec![
                format!("expected an error containing \"{expected}\""),
                format!("  but the run failed with: {actual}"),
            ],
            Failure::SnapshotDiffers { diff, .. } => {
                let mut lines = vec![self.summary(), "  --- stored  +++ actual".to_owned()];
                lines.extend(diff.lines().map(|l| format!("  {l}")));
                lines
            }
            Failure::Calls { calls, .. } if calls.is_empty() => {
                vec![self.summary(), "  the tool was not called".to_owned()]
            }
            Failure::Calls { calls, .. } => {
                let mut lines = vec![self.summary(), "  calls of the tool:".to_owned()];
                lines.extend(calls.iter().map(|c| format!("    {c}")));
                lines
            }
            _ => vec![self.summary()],
        }
    }
}

/// Runs the selected tests of `suites` on `options.jobs` threads; results
/// in suite and declaration order.
#[must_use]
pub(crate) fn run(suites: &[Suite], options: &Options) -> Vec<TestResult> {
    let selected: Vec<(&Suite, &Test)> = suites
        .iter()
        .flat_map(|s| s.tests().map(move |t| (s, t)))
        .filter(|(_, t)| options.filter.as_ref().is_none_or(|f| t.name.contains(f.as_str())))
        .collect();
    let cassettes = store::Cassettes::new(&selected);
    let results = std::sync::Mutex::new(vec![None; selected.len()]);
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.clamp(1, selected.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(suite, test)) = selected.get(i) else { break };
                    let result = run_test(suite, test, options, &cassettes);
                    if let Ok(mut results) = results.lock() {
                        results[i] = Some(result);
                    }
                }
            });
        }
    });
    let unfinished = cassettes.finish();
    let results = results.into_inner().unwrap_or_default();
    let results = results.into_iter().zip(&selected).filter_map(|(result, (_, test))| {
        let mut result = result?;
        result.failures.extend(unfinished(test).map(Failure::Setup));
        Some(result)
    });
    results.collect()
}

/// Runs one test and compares what it did with what it expects.
fn run_test<'a>(
    suite: &'a Suite,
    test: &'a Test,
    options: &Options,
    cassettes: &store::Cassettes<'a>,
) -> TestResult {
    let started = Instant::now();
    let (line, _) = suite.program().sources[test.file].line_col(test.span.start as usize);
    let mut result = TestResult {
        file: suite.path().to_path_buf(),
        name: test.name.clone(),
        line,
        duration: Duration::ZERO,
        failures: Vec::new(),
        wrote: None,
    };
    match prepare(suite, test, options, cassettes) {
        Err(why) => result.failures.push(Failure::Setup(why)),
        Ok(Prepared { engine, inputs, store }) => {
            let span = crate::telemetry::RunSpan::default()
                .with(|| vec![opentelemetry::KeyValue::new("ignite.test", test.name.clone())]);
            let run =
                engine.run(test.contract, &inputs, &RunOptions { span, ..RunOptions::default() });
            if let Err(why) = engine.effects().finish() {
                result.failures.push(Failure::Setup(why));
            }
            let unmatched = store.mocks().unmatched();
            match run {
                // The undecided calls are why the run did not end.
                Err(RunError::Paused { calls }) => {
                    result.failures.extend(calls.iter().map(|call| undecided(suite, call)));
                }
                run if unmatched.is_empty() => {
                    judge(suite, test, options, run.map(|o| o.outputs), &store, &mut result);
                }
                _ => {}
            }
            // The unmatched call is the cause of whatever else went wrong.
            result.failures.extend(unmatched.into_iter().map(Failure::Unmatched));
        }
    }
    result.duration = started.elapsed();
    result
}

/// A call the test did not decide, named with the statement that would.
fn undecided(suite: &Suite, call: &crate::failure::PendingCall) -> Failure {
    let name = suite
        .program()
        .tools
        .iter()
        .find(|t| t.tool_name == call.tool)
        .map_or(call.tool.as_str(), |t| t.name.as_str());
    Failure::Undecided(format!(
        "the call {call} needs approval, which the test does not give: add `approve {name}` or `deny {name} \"reason\"`"
    ))
}

/// A test's `approve Tool` and `deny Tool "reason"`: calls of other tools
/// that need approval wait, and the test fails naming them.
#[derive(Debug)]
struct Decisions(std::collections::BTreeMap<String, Option<String>>);

impl crate::effects::Approver for Decisions {
    fn decide(
        &self,
        call: &crate::failure::PendingCall,
        _resend_safe: bool,
    ) -> Result<crate::effects::Verdict, String> {
        use crate::effects::Verdict;
        Ok(match self.0.get(&call.tool) {
            Some(None) => Verdict::Approved,
            Some(Some(reason)) => Verdict::Denied(reason.clone()),
            None => Verdict::Pending(call.clone()),
        })
    }
}

/// What a test run needs.
struct Prepared {
    engine: Engine,
    inputs: Map<String, Value>,
    store: Arc<store::TestStore>,
}

/// The engine, inputs and store of a test run.
fn prepare<'a>(
    suite: &'a Suite,
    test: &'a Test,
    options: &Options,
    cassettes: &store::Cassettes<'a>,
) -> Result<Prepared, String> {
    let inputs = inputs(suite, test)?;
    let mut mocks = Vec::with_capacity(test.mocks.len());
    for mock in &test.mocks {
        let args = constant_args(suite, mock.args.as_deref())?;
        let answer = match &mock.answer {
            MockAnswer::Returns(e) => Ok(constant(suite, e)?),
            MockAnswer::Fails(message) => Err(message.clone()),
        };
        let tool = &suite.program()[mock.tool];
        mocks.push(mocks::Mock {
            tool: tool.tool_name.clone(),
            name: tool.name.clone(),
            defaults: defaults(tool),
            args,
            answer,
        });
    }
    let mut agents = Vec::with_capacity(test.agent_mocks.len());
    for mock in &test.agent_mocks {
        let args = constant_args(suite, mock.args.as_deref())?;
        let answer = match &mock.answer {
            MockAnswer::Returns(e) => Ok(constant(suite, e)?),
            MockAnswer::Fails(message) => Err(message.clone()),
        };
        let agent = &suite.program()[mock.agent];
        let defaults = agent
            .inputs
            .iter()
            .filter_map(|p| Some((p.name.clone(), p.default.clone()?)))
            .collect();
        agents.push(mocks::Mock {
            tool: agent.name.clone(),
            name: agent.name.clone(),
            defaults,
            args,
            answer,
        });
    }
    let mocks = (mocks::Mocks::new(mocks), mocks::Mocks::of_agents(agents));
    let (store, effects) = store::TestStore::effects(suite, test, mocks, cassettes, options)?;
    let decisions = test
        .decisions
        .iter()
        .map(|d| (suite.program()[d.tool].tool_name.clone(), d.denial.clone()))
        .collect();
    let effects = effects.with_approver(Arc::new(Decisions(decisions)));
    let engine = store::TestStore::engine(suite, effects);
    Ok(Prepared { engine, inputs, store })
}

/// The values of a `mock`'s or an `expect_calls`'s arguments.
fn constant_args(
    suite: &Suite,
    args: Option<&[(String, Expr)]>,
) -> Result<Option<Map<String, Value>>, String> {
    args.map(|args| args.iter().map(|(name, e)| Ok((name.clone(), constant(suite, e)?))).collect())
        .transpose()
}

/// The params of `tool` with defaults: a call that leaves one out has it.
fn defaults(tool: &crate::ir::Tool) -> Map<String, Value> {
    tool.params.iter().filter_map(|p| Some((p.name.clone(), p.default.clone()?))).collect()
}

/// The inputs `test` runs its contract with.
fn inputs(suite: &Suite, test: &Test) -> Result<Map<String, Value>, String> {
    test.inputs.iter().map(|(name, expr)| Ok((name.clone(), constant(suite, expr)?))).collect()
}

/// The value of an expression without variables (a test argument or a
/// mocked value).
fn constant(suite: &Suite, expr: &Expr) -> Result<Value, String> {
    eval::eval_json(expr, &[])
        .map_err(|e| format!("`{}`: {}", suite.program().sources.slice(e.span), e.message))
}

/// Compares a run's result with the test's expectations.
fn judge(
    suite: &Suite,
    test: &Test,
    options: &Options,
    run: Result<Map<String, Value>, RunError>,
    store: &store::TestStore,
    result: &mut TestResult,
) {
    let calls = store.mocks().calls();
    for expected in &test.expect_calls {
        match count_calls(suite, expected, &calls) {
            Ok(None) => {}
            Ok(Some(failure)) => result.failures.push(failure),
            Err(why) => result.failures.push(Failure::Setup(why)),
        }
    }
    let calls = (test.snapshot == Snapshot::Calls).then_some(calls.as_slice());
    let outputs = match (run, &test.expect_error) {
        (Ok(_), Some(expected)) => {
            result.failures.push(Failure::NoError { expected: expected.clone() });
            return;
        }
        (Err(error), Some(expected)) => {
            let actual = error_text(&error);
            if !actual.contains(expected.as_str()) {
                result.failures.push(Failure::WrongError { expected: expected.clone(), actual });
            } else if calls.is_some() {
                // `snapshot calls` of a failed run: no outputs, the calls.
                let text = snapshot::render(&test.name, &Map::new(), calls);
                compare_snapshot(suite, test, options, &text, result);
            }
            return;
        }
        (Err(error), None) => {
            result.failures.push(Failure::Run(error_text(&error)));
            return;
        }
        (Ok(outputs), None) => outputs,
    };
    let values: Vec<Value> = outputs.values().cloned().collect();
    for condition in &test.expects {
        if let Some(unmet) = expect::check(condition, &values, &suite.program().sources) {
            result.failures.push(Failure::Expect(unmet));
        }
    }
    if test.snapshot != Snapshot::None {
        compare_snapshot(
            suite,
            test,
            options,
            &snapshot::render(&test.name, &outputs, calls),
            result,
        );
    }
}

/// Checks one `expect_calls` against the `calls` the run made: the
/// failure when the count does not compare as written.
fn count_calls(
    suite: &Suite,
    expected: &ExpectCalls,
    calls: &[Value],
) -> Result<Option<Failure>, String> {
    let program = suite.program();
    let tool = &program[expected.tool];
    let wanted = constant_args(suite, expected.args.as_deref())?;
    let defaults = defaults(tool);
    let of_tool: Vec<&Value> =
        calls.iter().filter(|c| c["tool"].as_str() == Some(tool.tool_name.as_str())).collect();
    let counted = of_tool
        .iter()
        .filter(|c| wanted.as_ref().is_none_or(|w| mocks::matches(&defaults, w, &c["args"])))
        .count();
    let (n, count) = (counted as u64, expected.count);
    let holds = match expected.op {
        BinaryOp::Eq => n == count,
        BinaryOp::Ne => n != count,
        BinaryOp::Lt => n < count,
        BinaryOp::Le => n <= count,
        BinaryOp::Gt => n > count,
        _ => n >= count,
    };
    if holds {
        return Ok(None);
    }
    let calls = of_tool
        .iter()
        .map(|c| format!("`{}` with {}", c["node"].as_str().unwrap_or_default(), c["args"]))
        .collect();
    let statement = program.sources.slice(expected.span).to_owned();
    Ok(Some(Failure::Calls { statement, counted, calls }))
}

/// Compares (or, with `--update`, writes) the test's snapshot.
fn compare_snapshot(
    suite: &Suite,
    test: &Test,
    options: &Options,
    actual: &str,
    result: &mut TestResult,
) {
    let path = snapshot::path(suite.path(), &test.name);
    let stored = std::fs::read_to_string(&path).ok();
    if stored.as_deref() == Some(actual) {
        return;
    }
    if options.update {
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, actual));
        match written {
            Ok(()) => result.wrote = Some(path),
            Err(e) => result
                .failures
                .push(Failure::Setup(format!("cannot write `{}`: {e}", path.display()))),
        }
        return;
    }
    result.failures.push(match stored {
        None => Failure::SnapshotMissing(path),
        Some(stored) => Failure::SnapshotDiffers { diff: snapshot::diff(&stored, actual), path },
    });
}

/// A run error as one text: every input problem, or the message.
fn error_text(error: &RunError) -> String {
    match error {
        RunError::Inputs { problems, .. } => crate::runtime::inputs::one_line(problems),
        other => other.to_string(),
    }
}
