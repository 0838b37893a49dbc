//! `test` blocks: the contract they run and its arguments, the tools they
//! mock, the cassette, and the names their `expect`s read (the contract's
//! outputs).
//!
//! A test needs exactly one `run`; `expect_error` excludes `expect` and
//! `snapshot` (a failed run has no outputs), not `snapshot calls` or
//! `expect_calls` (its calls). Arguments of `run`, `mock` and
//! `expect_calls` and mocked values are expressions without names; an
//! `expect_calls` count is a whole number. A mock of a tool the
//! contract can never call (directly, through an agent, or through a
//! composed contract) is a warning: it would silently do nothing. Two
//! tests of one file with a `snapshot` whose names give one snapshot file
//! name ([`ir::slug`], ignoring case as macOS and Windows do) are an error:
//! they would overwrite each other's snapshot. `approve Tool` and `deny
//! Tool "reason"` name a tool that `requires_approval`, once per tool.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use super::Lowerer;
use super::calls::Callee;
use super::expr::Scope;
use super::names::Decl;
use crate::ast::{self, MockAnswer, TestStmt};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, AgentId, ContractId, Snapshot, ToolId};
use crate::source::FileId;
use crate::suggest::did_you_mean;

/// The arguments of a `mock` or an `expect_calls`, by param name.
type ToolArgs = Vec<(String, ir::Expr)>;

/// A lowered `mock`: of a tool or of an agent.
enum Mocked {
    Tool(ir::Mock),
    Agent(ir::AgentMock),
}

impl Lowerer<'_> {
    /// Lowers every test block of the program.
    pub(super) fn lower_tests(&mut self, contracts: &[ir::Contract]) -> Vec<ir::Test> {
        let decls = self.decls;
        let mut seen: HashMap<(FileId, String), &ast::Test> = HashMap::new();
        let mut snapshots: HashMap<(FileId, String), (&ast::Test, String)> = HashMap::new();
        let mut tests = Vec::with_capacity(decls.tests.len());
        for &(file, test) in &decls.tests {
            let Some(name) = self.expect_plain_string(&test.name, "a test name") else { continue };
            if test.statements.iter().any(|s| matches!(s, TestStmt::Snapshot { .. })) {
                match snapshots.entry((file, ir::slug(&name).to_ascii_lowercase())) {
                    // The same name is a duplicate, reported below.
                    Entry::Occupied(first) if first.get().1 != name => {
                        let (first, first_name) = first.get();
                        self.snapshot_clash(file, (first, first_name), (test, &name));
                    }
                    Entry::Occupied(_) => {}
                    Entry::Vacant(slot) => {
                        slot.insert((test, name.clone()));
                    }
                }
            }
            if let Some(first) = seen.insert((file, name.clone()), test) {
                self.push(
                    Diagnostic::error(
                        Code::Duplicate,
                        test.name.span,
                        format!("test `{name}` is declared twice in this file"),
                    )
                    .label("declared again here")
                    .note(first.name.span, "first declared here")
                    .help("give each test its own name (its snapshot file is named after it)"),
                );
            }
            if let Some(lowered) = self.lower_test(file, name, test, contracts) {
                tests.push(lowered);
            }
        }
        tests
    }

    /// Reports two tests of `file` whose snapshots would be one file.
    fn snapshot_clash(
        &mut self,
        file: FileId,
        (first, first_name): (&ast::Test, &str),
        (test, name): (&ast::Test, &str),
    ) {
        let stem = self.sources[file]
            .path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        self.push(
            Diagnostic::error(
                Code::SnapshotClash,
                test.name.span,
                format!("tests `{first_name}` and `{name}` would share one snapshot file"),
            )
            .label(format!("its snapshot is `__snapshots__/{stem}.{}.snap`", ir::slug(name)))
            .note(first.name.span, format!("`{first_name}` has the same snapshot file"))
            .help(
                "rename one of them: a snapshot file is named after its test, each character other than ASCII letters, digits, `-` and `_` written `_`, and case is ignored (as on macOS and Windows)",
            ),
        );
    }

    fn lower_test(
        &mut self,
        file: FileId,
        name: String,
        test: &ast::Test,
        contracts: &[ir::Contract],
    ) -> Option<ir::Test> {
        let mut runs = Vec::new();
        let (mut replays, mut errors, mut snapshots, mut expects) =
            (vec![], vec![], vec![], vec![]);
        let (mut mocks, mut counts, mut decisions) = (Vec::new(), Vec::new(), Vec::new());
        for stmt in &test.statements {
            match stmt {
                TestStmt::Run { .. } => runs.push(stmt),
                TestStmt::Replay(..) => replays.push(stmt),
                TestStmt::ExpectError(..) => errors.push(stmt),
                TestStmt::Snapshot { .. } => snapshots.push(stmt),
                TestStmt::Expect(..) => expects.push(stmt),
                TestStmt::Mock { .. } => mocks.push(stmt),
                TestStmt::ExpectCalls { .. } => counts.push(stmt),
                TestStmt::Decide { .. } => decisions.push(stmt),
            }
        }
        let decisions = self.lower_decisions(&decisions);
        let none = Scope::new(Vec::new(), "name", format!("test `{name}`"));
        let (mut agent_mocks, mut tool_mocks) = (Vec::new(), Vec::new());
        for stmt in &mocks {
            match self.lower_mock(stmt, &none) {
                Some(Mocked::Tool(mock)) => tool_mocks.push(mock),
                Some(Mocked::Agent(mock)) => agent_mocks.push(mock),
                None => {}
            }
        }
        let mocks = tool_mocks;
        let expect_calls =
            counts.iter().filter_map(|c| self.lower_expect_calls(c, &none)).collect();
        let replay = self.single(&replays, |s| s.span(), "replay").and_then(|stmt| {
            let TestStmt::Replay(path, _) = stmt else { return None };
            let written = self.expect_plain_string(path, "a cassette path")?;
            let dir = self.sources[file].dir();
            let resolved = dir.join(written);
            self.check_cassette(path, &resolved, dir);
            Some(resolved)
        });
        let expect_error = self.single(&errors, |s| s.span(), "expect_error").and_then(|stmt| {
            let TestStmt::ExpectError(text, _) = stmt else { return None };
            self.expect_plain_string(text, "the expected error")
        });
        let snapshot = match self.single(&snapshots, |s| s.span(), "snapshot") {
            Some(TestStmt::Snapshot { calls: true, .. }) => Snapshot::Calls,
            Some(_) => Snapshot::Outputs,
            None => Snapshot::None,
        };
        // `snapshot calls` of a failed run shows the calls it made.
        let outputs_snapshot = snapshots.first().filter(|_| snapshot == Snapshot::Outputs);
        if let (Some(error), Some(other)) = (errors.first(), expects.first().or(outputs_snapshot)) {
            self.push(
                Diagnostic::error(
                    Code::TestStatement,
                    other.span(),
                    format!("test `{name}` expects an error and checks outputs"),
                )
                .label("a failed run has no outputs")
                .note(error.span(), "the run must fail here")
                .help("split it into two tests"),
            );
        }
        let Some(run) = self.single(&runs, |s| s.span(), "run") else {
            self.push(
                Diagnostic::error(
                    Code::TestStatement,
                    test.span,
                    format!("test `{name}` has no `run`"),
                )
                .label("nothing to test")
                .help("add `run Contract(input: value)`"),
            );
            return None;
        };
        let TestStmt::Run { contract, args, .. } = run else { return None };
        let id =
            self.expect_contract(contract, "a test runs a contract: `run Contract(input: value)`")?;
        let params = self.contract_inputs[id.index()].clone();
        let callee = Callee { ident: contract, what: "contract", params: &params, partial: false };
        let inputs = self.lower_args(&callee, args, &none);
        let declared = &contracts[id.index()];
        let outputs = Scope::new(
            declared.outputs.iter().map(|o| o.name.as_str()).collect(),
            "declared output",
            format!("contract `{}`", declared.name),
        );
        let expects = expects
            .iter()
            .filter_map(|stmt| match stmt {
                TestStmt::Expect(expr, _) => Some(self.lower_expr(expr, &outputs)),
                _ => None,
            })
            .collect();
        self.check_reachable_mocks(id, &mocks, contracts);
        Some(ir::Test {
            name,
            file,
            contract: id,
            inputs,
            mocks,
            agent_mocks,
            replay,
            expects,
            expect_error,
            expect_calls,
            decisions,
            snapshot,
            span: test.span,
        })
    }

    /// `approve Tool` / `deny Tool "reason"`: each of a tool that requires
    /// approval, at most one per tool.
    fn lower_decisions(&mut self, statements: &[&TestStmt]) -> Vec<ir::Decision> {
        let none = Scope::new(Vec::new(), "name", String::new());
        let mut decisions: Vec<ir::Decision> = Vec::new();
        for stmt in statements {
            let TestStmt::Decide { tool, denial, span } = stmt else { continue };
            let verb = if denial.is_some() { "deny" } else { "approve" };
            let Some((id, _)) = self.tool_and_args(tool, None, verb, &none) else { continue };
            let denial = match denial {
                Some(reason) => match self.expect_plain_string(reason, "a denial's reason") {
                    Some(reason) => Some(reason),
                    None => continue,
                },
                None => None,
            };
            if self.tools[id.index()].approval.is_none() {
                self.push(
                    Diagnostic::error(
                        Code::TestStatement,
                        tool.span,
                        format!(
                            "`{verb} {}`: tool `{}` does not require approval",
                            tool.name, tool.name
                        ),
                    )
                    .label("its calls never wait for a decision")
                    .help("remove the statement, or add `requires_approval` to the tool"),
                );
                continue;
            }
            if let Some(first) = decisions.iter().find(|d| d.tool == id) {
                self.push(
                    Diagnostic::error(
                        Code::Duplicate,
                        *span,
                        format!("the calls of `{}` are decided twice", tool.name),
                    )
                    .label("decided again here")
                    .note(first.span, "first decided here")
                    .help("keep one `approve` or `deny` per tool"),
                );
                continue;
            }
            decisions.push(ir::Decision { tool: id, denial, span: *span });
        }
        decisions
    }

    /// The contract `run` names, reported when it is not one (`usage`
    /// says how `run` is written).
    pub(super) fn expect_contract(
        &mut self,
        ident: &ast::Ident,
        usage: &str,
    ) -> Option<ContractId> {
        let decl = self.decls.get(&ident.name);
        if let Some(Decl::Contract(i)) = decl {
            return Some(ContractId::from_index(i));
        }
        let contracts = self.decls.names_where(|d| matches!(d, Decl::Contract(_)));
        let (message, help) = match decl {
            Some(decl) => {
                (format!("`run` of {} `{}`", decl.kind(), ident.name), Some(usage.to_owned()))
            }
            None => {
                (format!("unknown contract `{}`", ident.name), did_you_mean(&ident.name, contracts))
            }
        };
        self.push(
            Diagnostic::error(Code::UnknownContract, ident.span, message)
                .label("not a declared contract")
                .maybe_help(help),
        );
        None
    }

    fn lower_mock(&mut self, stmt: &TestStmt, none: &Scope<'_>) -> Option<Mocked> {
        let TestStmt::Mock { tool, args, answer, span } = stmt else { return None };
        let answer = match answer {
            MockAnswer::Returns(expr) => ir::MockAnswer::Returns(self.lower_expr(expr, none)),
            MockAnswer::Fails(text) => {
                ir::MockAnswer::Fails(self.expect_plain_string(text, "a mock's failure message")?)
            }
        };
        if let Some(Decl::Agent(index)) = self.decls.get(&tool.name) {
            let inputs = self.agents[index].inputs.clone();
            let args = args.as_deref().map(|args| {
                let callee = Callee { ident: tool, what: "agent", params: &inputs, partial: true };
                self.lower_args(&callee, args, none)
            });
            let agent = AgentId::from_index(index);
            return Some(Mocked::Agent(ir::AgentMock { agent, args, answer, span: *span }));
        }
        let (index, args) = self.tool_and_args(tool, args.as_deref(), "mock", none)?;
        Some(Mocked::Tool(ir::Mock { tool: index, args, answer, span: *span }))
    }

    fn lower_expect_calls(&mut self, stmt: &TestStmt, none: &Scope<'_>) -> Option<ir::ExpectCalls> {
        let TestStmt::ExpectCalls { tool, args, op, count, span } = stmt else { return None };
        let found = self.tool_and_args(tool, args.as_deref(), "expect_calls", none);
        let n = match count.kind {
            ast::ExprKind::Integer(n) => u64::try_from(n).ok(),
            _ => None,
        };
        let Some(n) = n else {
            self.push(
                Diagnostic::error(
                    Code::TestStatement,
                    count.span,
                    "`expect_calls` compares with a number of calls",
                )
                .label("not a count (a whole number, 0 or more)")
                .help(format!("write a count: `expect_calls {} == 1`", tool.name)),
            );
            return None;
        };
        let (tool, args) = found?;
        Some(ir::ExpectCalls { tool, args, op: *op, count: n, span: *span })
    }

    /// The tool `statement` (`mock`, `expect_calls`) names, reported when it
    /// is not one, and its arguments (a subset of the tool's params).
    fn tool_and_args(
        &mut self,
        tool: &ast::Ident,
        args: Option<&[ast::Arg]>,
        statement: &str,
        none: &Scope<'_>,
    ) -> Option<(ToolId, Option<ToolArgs>)> {
        let Some(Decl::Tool(index)) = self.decls.get(&tool.name) else {
            // A `mock` may also name an agent.
            let agents = statement == "mock";
            let known = self.decls.names_where(|d| {
                matches!(d, Decl::Tool(_)) || (agents && matches!(d, Decl::Agent(_)))
            });
            let what = if agents { "tool or agent" } else { "tool" };
            self.push(
                Diagnostic::error(
                    Code::UnknownTool,
                    tool.span,
                    format!("`{statement}` of unknown {what} `{}`", tool.name),
                )
                .label(format!("not a declared {what}"))
                .maybe_help(did_you_mean(&tool.name, known)),
            );
            return None;
        };
        let params = self.tools[index].params.clone();
        let args = args.map(|args| {
            let callee = Callee { ident: tool, what: "tool", params: &params, partial: true };
            self.lower_args(&callee, args, none)
        });
        Some((ToolId::from_index(index), args))
    }

    /// Warns about mocks of tools that `contract` can never call.
    fn check_reachable_mocks(
        &mut self,
        contract: ContractId,
        mocks: &[ir::Mock],
        contracts: &[ir::Contract],
    ) {
        let reachable = self.reachable_tools(contract, contracts);
        for mock in mocks {
            if reachable[mock.tool.index()] {
                continue;
            }
            let (tool, name) =
                (&self.tools[mock.tool.index()].name, &contracts[contract.index()].name);
            let diagnostic = Diagnostic::warning(
                Code::UnreachableMock,
                mock.span,
                format!("mock of tool `{tool}` is never used"),
            )
            .label(format!("contract `{name}` cannot call `{tool}`"))
            .help(
                "remove the mock, or run a contract that calls the tool or an agent that lists it",
            );
            self.push(diagnostic);
        }
    }

    /// Which tools `contract` may call: its tool nodes, the tools of its
    /// agents, and those of the contracts it composes.
    fn reachable_tools(&self, contract: ContractId, contracts: &[ir::Contract]) -> Vec<bool> {
        let mut tools = vec![false; self.tools.len()];
        let mut visited = vec![false; contracts.len()];
        let mut stack = vec![contract];
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut visited[id.index()], true) {
                continue;
            }
            for call in contracts[id.index()].nodes.iter().flat_map(|n| n.kind.calls()) {
                match call.callee {
                    ir::Callee::Tool(tool) => tools[tool.index()] = true,
                    ir::Callee::Agent(agent) => {
                        for tool in &self.agents[agent.index()].tools {
                            tools[tool.index()] = true;
                        }
                    }
                    ir::Callee::Contract(child) => stack.push(child),
                }
            }
        }
        tools
    }
}
