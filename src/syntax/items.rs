//! Declarations and statements: pairs to [`ast`] items.

use pest::iterators::Pair;

use super::{Rule, span};
use crate::ast::{
    Agent, Budget, BudgetKind, BudgetLimit, Contract, EnumDecl, Eval, EvalStmt, File, Guard, Ident,
    Implementation, Item, McpServer, MockAnswer, Node, Output, Param, Price, Provider, ProviderRef,
    Rate, Runner, Setting, Test, TestStmt, Tool, TypeDecl, TypeExpr, Use,
};
use crate::diagnostic::{Code, Diagnostic, Diagnostics};
use crate::source::{FileId, Span};

/// Builds the AST of one file and collects the errors found on the way
/// (bad escapes, numbers out of range, statements sharing a line).
pub(super) struct Builder<'t> {
    pub(super) file: FileId,
    text: &'t str,
    pub(super) diagnostics: Diagnostics,
}

impl<'t> Builder<'t> {
    pub(super) fn new(file: FileId, text: &'t str) -> Self {
        Self { file, text, diagnostics: Diagnostics::default() }
    }

    pub(super) fn finish(self, file: File) -> Result<File, Diagnostics> {
        if self.diagnostics.is_empty() { Ok(file) } else { Err(self.diagnostics) }
    }

    pub(super) fn file(&mut self, pair: Pair<'_, Rule>) -> File {
        let mut items = Vec::new();
        let mut spans = Vec::new();
        for pair in pair.into_inner() {
            spans.push(span(self.file, &pair));
            items.push(match pair.as_rule() {
                Rule::use_decl => Item::Use(self.use_decl(pair)),
                Rule::tool_decl => Item::Tool(self.tool(pair)),
                Rule::agent_decl => Item::Agent(self.agent(pair)),
                Rule::provider_decl => Item::Provider(self.provider(pair)),
                Rule::contract_decl => Item::Contract(self.contract(pair)),
                Rule::type_decl => Item::Type(self.type_decl(pair)),
                Rule::enum_decl => Item::Enum(self.enum_decl(pair)),
                Rule::test_decl => Item::Test(self.test(pair)),
                Rule::mcp_decl => Item::Mcp(self.mcp(pair)),
                Rule::eval_decl => Item::Eval(self.eval(pair)),
                Rule::EOI => {
                    spans.pop();
                    continue;
                }
                rule => unreachable!("item {rule:?}"),
            });
        }
        self.check_lines(&spans);
        File { items }
    }

    /// Reports a statement that starts on the line where the previous ended.
    fn check_lines(&mut self, spans: &[Span]) {
        for pair in spans.windows(2) {
            let between = &self.text[pair[0].end as usize..pair[1].start as usize];
            if !between.contains('\n') {
                let word = self.text[pair[1].range()].split_whitespace().next().unwrap_or("");
                self.diagnostics.push(
                    Diagnostic::error(
                        Code::SameLine,
                        pair[1],
                        format!("`{word}` must start on a new line"),
                    )
                    .label("on the same line as the statement before")
                    .help("put each statement on a line of its own"),
                );
            }
        }
    }

    pub(super) fn ident(&mut self, pair: Pair<'_, Rule>) -> Ident {
        Ident { name: pair.as_str().into(), span: span(self.file, &pair) }
    }

    fn idents(&mut self, pair: Pair<'_, Rule>) -> Vec<Ident> {
        pair.into_inner().map(|p| self.ident(p)).collect()
    }

    /// The pairs of a block after its keyword and name, with their spans
    /// checked one per line.
    fn block<'i>(&mut self, pair: Pair<'i, Rule>) -> (Ident, Vec<Pair<'i, Rule>>) {
        let mut inner = pair.into_inner().skip(1);
        let name = self.ident(inner.next().unwrap_or_else(|| unreachable!("block name")));
        let statements: Vec<_> = inner.collect();
        let spans: Vec<Span> = statements.iter().map(|p| span(self.file, p)).collect();
        self.check_lines(&spans);
        (name, statements)
    }

    /// The children of a statement after its keyword.
    fn operands<'i>(pair: Pair<'i, Rule>) -> impl Iterator<Item = Pair<'i, Rule>> {
        pair.into_inner().filter(|p| !is_keyword(p.as_rule()))
    }

    fn first_expr(&mut self, pair: Pair<'_, Rule>) -> Expr {
        let operand = Self::operands(pair).next().unwrap_or_else(|| unreachable!("operand"));
        self.expr(operand)
    }

    fn setting(&mut self, pair: Pair<'_, Rule>) -> Setting<Expr> {
        let span = span(self.file, &pair);
        Setting { value: self.first_expr(pair), span }
    }

    /// `rate_limit N per UNIT` or `token_limit N per UNIT`.
    fn rate(&mut self, pair: Pair<'_, Rule>) -> Setting<Rate> {
        let span = span(self.file, &pair);
        let rate = Self::operands(pair).next().unwrap_or_else(|| unreachable!("rate"));
        let mut parts = Self::operands(rate);
        let count = self.expr(parts.next().unwrap_or_else(|| unreachable!("rate count")));
        let per = self.ident(parts.next().unwrap_or_else(|| unreachable!("rate unit")));
        Setting { value: Rate { count, per }, span }
    }

    /// `price input X output Y`.
    fn price(&mut self, pair: Pair<'_, Rule>) -> Setting<Price> {
        let span = span(self.file, &pair);
        let mut values = Self::operands(pair);
        let mut next = || values.next().unwrap_or_else(|| unreachable!("price"));
        let (input, output) = (next(), next());
        Setting { value: Price { input: self.expr(input), output: self.expr(output) }, span }
    }

    /// `budget usd X, model_calls N, tokens T`.
    fn budget(&mut self, pair: Pair<'_, Rule>, span: Span) -> Budget {
        let limits = Self::operands(pair)
            .map(|limit| {
                let limit_span = super::span(self.file, &limit);
                let mut inner = limit.into_inner();
                let kind = match inner.next().map(|p| p.as_rule()) {
                    Some(Rule::kw_usd) => BudgetKind::Usd,
                    Some(Rule::kw_model_calls) => BudgetKind::ModelCalls,
                    _ => BudgetKind::Tokens,
                };
                let value = self.expr(inner.next().unwrap_or_else(|| unreachable!("budget value")));
                BudgetLimit { kind, value, span: limit_span }
            })
            .collect();
        Budget { limits, span }
    }

    fn use_decl(&mut self, pair: Pair<'_, Rule>) -> Use {
        let span = span(self.file, &pair);
        Use { path: self.first_expr(pair), span }
    }

    fn type_expr(&mut self, pair: Pair<'_, Rule>) -> TypeExpr {
        let span = span(self.file, &pair);
        let mut inner = pair.into_inner();
        let name = self.ident(inner.next().unwrap_or_else(|| unreachable!("type name")));
        let mut item = None;
        let mut nullable = false;
        for part in inner {
            match part.as_rule() {
                Rule::type_expr => item = Some(Box::new(self.type_expr(part))),
                Rule::optional_mark => nullable = true,
                rule => unreachable!("type part {rule:?}"),
            }
        }
        TypeExpr { name, item, nullable, span }
    }

    /// `result Type` as a setting.
    fn cache(&self, pair: Pair<'_, Rule>) -> Setting<Option<String>> {
        let span = span(self.file, &pair);
        let duration = pair.into_inner().find(|p| p.as_rule() == Rule::duration);
        Setting { value: duration.map(|d| d.as_str().to_owned()), span }
    }

    fn result(&mut self, pair: Pair<'_, Rule>) -> Setting<TypeExpr> {
        let span = span(self.file, &pair);
        let ty = Self::operands(pair).next().unwrap_or_else(|| unreachable!("result type"));
        Setting { value: self.type_expr(ty), span }
    }

    fn type_decl(&mut self, pair: Pair<'_, Rule>) -> TypeDecl {
        let span = span(self.file, &pair);
        let (name, statements) = self.block(pair);
        let fields = statements.into_iter().map(|field| self.param(field)).collect();
        TypeDecl { name, fields, span }
    }

    fn enum_decl(&mut self, pair: Pair<'_, Rule>) -> EnumDecl {
        let span = span(self.file, &pair);
        let mut inner = pair.into_inner().skip(1);
        let name = self.ident(inner.next().unwrap_or_else(|| unreachable!("enum name")));
        let variants = inner.map(|p| self.ident(p)).collect();
        EnumDecl { name, variants, span }
    }

    fn param(&mut self, pair: Pair<'_, Rule>) -> Param {
        let span = span(self.file, &pair);
        let mut inner = Self::operands(pair);
        let name = self.ident(inner.next().unwrap_or_else(|| unreachable!("param name")));
        let ty = self.type_expr(inner.next().unwrap_or_else(|| unreachable!("param type")));
        let mut default = None;
        let mut description = None;
        for part in inner {
            match part.as_rule() {
                Rule::default_value => default = Some(self.first_expr(part)),
                _ => description = Some(self.expr(part)),
            }
        }
        Param { name, ty, default, description, span }
    }

    fn tool(&mut self, pair: Pair<'_, Rule>) -> Tool {
        let span = span(self.file, &pair);
        let (name, statements) = self.block(pair);
        let mut tool = Tool::new(name, span);
        for stmt in statements {
            let stmt_span = super::span(self.file, &stmt);
            match stmt.as_rule() {
                Rule::description_stmt => tool.descriptions.push(self.first_expr(stmt)),
                Rule::param_stmt => tool.params.push(self.param(stmt)),
                Rule::requires_stmt => {
                    let list = Self::operands(stmt).next().unwrap_or_else(|| unreachable!("list"));
                    tool.capabilities.extend(self.idents(list));
                }
                Rule::approval_stmt => {
                    let when = Self::operands(stmt).next().map(|p| self.expr(p));
                    tool.approvals.push(Setting { value: when, span: stmt_span });
                }
                Rule::timeout_stmt => tool.timeouts.push(self.first_expr(stmt)),
                Rule::retries_stmt => tool.retries.push(self.first_expr(stmt)),
                Rule::cache_stmt => tool.caches.push(self.cache(stmt)),
                Rule::header_stmt => {
                    let mut inner = Self::operands(stmt);
                    let mut next = || inner.next().unwrap_or_else(|| unreachable!("header part"));
                    let (header, value) = (next(), next());
                    tool.headers.push((self.expr(header), self.expr(value)));
                }
                Rule::returns_impl => {
                    let expr = self.first_expr(stmt);
                    tool.implementations.push(Implementation::Returns(expr, stmt_span));
                }
                Rule::exec_impl => {
                    let args = Self::operands(stmt).map(|p| self.expr(p)).collect();
                    tool.implementations.push(Implementation::Exec(args, stmt_span));
                }
                Rule::http_impl => {
                    let mut inner = Self::operands(stmt);
                    let method = inner.next().unwrap_or_else(|| unreachable!("http method"));
                    let post = method.as_str().trim() == "post";
                    let url = self.expr(inner.next().unwrap_or_else(|| unreachable!("http url")));
                    tool.implementations.push(Implementation::Http { post, url, span: stmt_span });
                }
                Rule::builtin_impl => {
                    let mut inner = Self::operands(stmt);
                    let name = self.expr(inner.next().unwrap_or_else(|| unreachable!("builtin")));
                    let config = inner.next().map(|p| self.expr(p));
                    tool.implementations.push(Implementation::Builtin {
                        name,
                        config,
                        span: stmt_span,
                    });
                }
                Rule::native_impl => {
                    let name = Self::operands(stmt).next().map(|p| self.expr(p));
                    tool.implementations.push(Implementation::Native(name, stmt_span));
                }
                Rule::mcp_impl => {
                    let mut inner = Self::operands(stmt);
                    let server = self.ident(inner.next().unwrap_or_else(|| unreachable!("server")));
                    let tool_name = self.expr(inner.next().unwrap_or_else(|| unreachable!("tool")));
                    tool.implementations.push(Implementation::Mcp {
                        server,
                        tool: tool_name,
                        span: stmt_span,
                    });
                }
                Rule::result_stmt => tool.results.push(self.result(stmt)),
                rule => unreachable!("tool statement {rule:?}"),
            }
        }
        tool
    }

    fn provider_ref(&mut self, pair: Pair<'_, Rule>) -> ProviderRef {
        let span = span(self.file, &pair);
        let mut inner = pair.into_inner();
        let name = self.ident(inner.next().unwrap_or_else(|| unreachable!("provider name")));
        let file = inner.next().map(|p| self.expr(p));
        ProviderRef { name, file, span }
    }

    fn agent(&mut self, pair: Pair<'_, Rule>) -> Agent {
        let span = span(self.file, &pair);
        let (name, statements) = self.block(pair);
        let mut agent = Agent::new(name, span);
        for stmt in statements {
            let stmt_span = super::span(self.file, &stmt);
            match stmt.as_rule() {
                Rule::provider_stmt => {
                    let refs = Self::operands(stmt).map(|p| self.provider_ref(p)).collect();
                    agent.providers.push(Setting { value: refs, span: stmt_span });
                }
                Rule::model_stmt => {
                    let models = Self::operands(stmt).map(|p| self.expr(p)).collect();
                    agent.models.push(Setting { value: models, span: stmt_span });
                }
                Rule::system_prompt_stmt => agent.system_prompts.push(self.setting(stmt)),
                Rule::tools_stmt | Rule::capabilities_stmt => {
                    let is_tools = stmt.as_rule() == Rule::tools_stmt;
                    let list = Self::operands(stmt).next().unwrap_or_else(|| unreachable!("list"));
                    let names = self.idents(list);
                    if is_tools {
                        agent.tools.extend(names);
                    } else {
                        agent.capabilities.extend(names);
                    }
                }
                Rule::max_tool_iterations_stmt => {
                    agent.max_tool_iterations.push(self.setting(stmt));
                }
                Rule::temperature_stmt => agent.temperatures.push(self.setting(stmt)),
                Rule::max_tokens_stmt => agent.max_tokens.push(self.setting(stmt)),
                Rule::input_stmt => agent.inputs.push(self.param(stmt)),
                Rule::prompt_stmt => agent.prompts.push(self.setting(stmt)),
                Rule::result_stmt => agent.results.push(self.result(stmt)),
                Rule::cache_stmt => agent.caches.push(self.cache(stmt)),
                Rule::result_retries_stmt => agent.result_retries.push(self.setting(stmt)),
                rule => unreachable!("agent statement {rule:?}"),
            }
        }
        agent
    }

    fn provider(&mut self, pair: Pair<'_, Rule>) -> Provider {
        let span = span(self.file, &pair);
        let (name, statements) = self.block(pair);
        let mut provider = Provider::new(name, span);
        for stmt in statements {
            match stmt.as_rule() {
                Rule::kind_stmt => {
                    let kind = Self::operands(stmt).next().unwrap_or_else(|| unreachable!("kind"));
                    provider.kinds.push(self.ident(kind));
                }
                Rule::base_url_stmt => provider.base_urls.push(self.setting(stmt)),
                Rule::api_key_stmt => provider.api_keys.push(self.setting(stmt)),
                Rule::timeout_stmt => provider.timeouts.push(self.setting(stmt)),
                Rule::retries_stmt => provider.retries.push(self.setting(stmt)),
                Rule::rate_limit_stmt => provider.rate_limits.push(self.rate(stmt)),
                Rule::token_limit_stmt => provider.token_limits.push(self.rate(stmt)),
                Rule::price_stmt => provider.prices.push(self.price(stmt)),
                rule => unreachable!("provider statement {rule:?}"),
            }
        }
        provider
    }

    fn mcp(&mut self, pair: Pair<'_, Rule>) -> McpServer {
        let span = span(self.file, &pair);
        let (name, statements) = self.block(pair);
        let mut server = McpServer::new(name, span);
        for stmt in statements {
            let stmt_span = super::span(self.file, &stmt);
            match stmt.as_rule() {
                Rule::command_stmt => {
                    let args = Self::operands(stmt).map(|p| self.expr(p)).collect();
                    server.commands.push(Setting { value: args, span: stmt_span });
                }
                Rule::url_stmt => server.urls.push(self.setting(stmt)),
                Rule::env_stmt => {
                    let mut inner = Self::operands(stmt);
                    let var = self.ident(inner.next().unwrap_or_else(|| unreachable!("env name")));
                    let value =
                        self.expr(inner.next().unwrap_or_else(|| unreachable!("env value")));
                    server.envs.push((var, value));
                }
                Rule::header_stmt => {
                    let mut inner = Self::operands(stmt);
                    let mut next = || inner.next().unwrap_or_else(|| unreachable!("header part"));
                    let (header, value) = (next(), next());
                    server.headers.push((self.expr(header), self.expr(value)));
                }
                Rule::timeout_stmt => server.timeouts.push(self.setting(stmt)),
                rule => unreachable!("mcp statement {rule:?}"),
            }
        }
        server
    }

    fn contract(&mut self, pair: Pair<'_, Rule>) -> Contract {
        let span = span(self.file, &pair);
        let (name, statements) = self.block(pair);
        let mut contract = Contract::new(name, span);
        for stmt in statements {
            let stmt_span = super::span(self.file, &stmt);
            match stmt.as_rule() {
                Rule::runner_stmt => contract.runners.push(self.runner(stmt)),
                Rule::budget_stmt => contract.budgets.push(self.budget(stmt, stmt_span)),
                Rule::input_stmt => {
                    contract.nodes.push(Node::Input(Box::new(self.param(stmt))));
                }
                Rule::compute_stmt | Rule::compose_stmt => {
                    let compose = stmt.as_rule() == Rule::compose_stmt;
                    let mut inner = Self::operands(stmt);
                    let name =
                        self.ident(inner.next().unwrap_or_else(|| unreachable!("node name")));
                    let expr = self.expr(inner.next().unwrap_or_else(|| unreachable!("node expr")));
                    contract.nodes.push(if compose {
                        Node::Compose(name, expr, stmt_span)
                    } else {
                        Node::Compute(name, expr, stmt_span)
                    });
                }
                Rule::guard_stmt => {
                    let mut inner = Self::operands(stmt);
                    let name =
                        self.ident(inner.next().unwrap_or_else(|| unreachable!("guard name")));
                    let condition =
                        self.expr(inner.next().unwrap_or_else(|| unreachable!("guard")));
                    let message = inner.next().map(|p| self.expr(p));
                    let guard = Guard { name, condition, message, span: stmt_span };
                    contract.nodes.push(Node::Guard(Box::new(guard)));
                }
                Rule::output_stmt => contract.outputs.push(self.output(stmt, stmt_span)),
                rule => unreachable!("contract statement {rule:?}"),
            }
        }
        contract
    }

    fn test(&mut self, pair: Pair<'_, Rule>) -> Test {
        let span = span(self.file, &pair);
        let mut inner = pair.into_inner().skip(1);
        let name = self.expr(inner.next().unwrap_or_else(|| unreachable!("test name")));
        let pairs: Vec<_> = inner.collect();
        let spans: Vec<Span> = pairs.iter().map(|p| super::span(self.file, p)).collect();
        self.check_lines(&spans);
        let statements = pairs.into_iter().map(|stmt| self.test_stmt(stmt)).collect();
        Test { name, statements, span }
    }

    fn test_stmt(&mut self, stmt: Pair<'_, Rule>) -> TestStmt {
        let span = span(self.file, &stmt);
        match stmt.as_rule() {
            Rule::run_stmt | Rule::mock_stmt => {
                let run = stmt.as_rule() == Rule::run_stmt;
                let mut inner = Self::operands(stmt).peekable();
                let name = self.ident(inner.next().unwrap_or_else(|| unreachable!("callee")));
                let args = inner
                    .next_if(|p| p.as_rule() == Rule::call_args)
                    .map(|p| p.into_inner().next().map(|a| self.args(a)).unwrap_or_default());
                if run {
                    let args = args.unwrap_or_else(|| unreachable!("run arguments"));
                    return TestStmt::Run { contract: name, args, span };
                }
                let answer = inner.next().unwrap_or_else(|| unreachable!("mock answer"));
                let answer = match answer.as_rule() {
                    Rule::mock_returns => MockAnswer::Returns(self.first_expr(answer)),
                    _ => MockAnswer::Fails(self.first_expr(answer)),
                };
                TestStmt::Mock { tool: name, args, answer, span }
            }
            Rule::expect_calls_stmt => {
                let mut inner = Self::operands(stmt).peekable();
                let tool = self.ident(inner.next().unwrap_or_else(|| unreachable!("tool")));
                let args = inner
                    .next_if(|p| p.as_rule() == Rule::call_args)
                    .map(|p| p.into_inner().next().map(|a| self.args(a)).unwrap_or_default());
                let op = inner.next().unwrap_or_else(|| unreachable!("comparison"));
                let op = super::binary_op(op.as_rule());
                let count = self.expr(inner.next().unwrap_or_else(|| unreachable!("count")));
                TestStmt::ExpectCalls { tool, args, op, count, span }
            }
            Rule::replay_stmt => TestStmt::Replay(self.first_expr(stmt), span),
            Rule::expect_stmt => TestStmt::Expect(self.first_expr(stmt), span),
            Rule::expect_error_stmt => TestStmt::ExpectError(self.first_expr(stmt), span),
            Rule::snapshot_stmt => TestStmt::Snapshot { calls: stmt.into_inner().len() == 2, span },
            Rule::approve_stmt | Rule::deny_stmt => {
                let mut inner = Self::operands(stmt);
                let tool = self.ident(inner.next().unwrap_or_else(|| unreachable!("decided tool")));
                let denial = inner.next().map(|p| self.expr(p));
                TestStmt::Decide { tool, denial, span }
            }
            rule => unreachable!("test statement {rule:?}"),
        }
    }

    fn eval(&mut self, pair: Pair<'_, Rule>) -> Eval {
        let span = span(self.file, &pair);
        let mut inner = pair.into_inner().skip(1);
        let name = self.expr(inner.next().unwrap_or_else(|| unreachable!("eval name")));
        let pairs: Vec<_> = inner.collect();
        let spans: Vec<Span> = pairs.iter().map(|p| super::span(self.file, p)).collect();
        self.check_lines(&spans);
        let statements = pairs.into_iter().map(|stmt| self.eval_stmt(stmt)).collect();
        Eval { name, statements, span }
    }

    fn eval_stmt(&mut self, stmt: Pair<'_, Rule>) -> EvalStmt {
        let span = span(self.file, &stmt);
        match stmt.as_rule() {
            Rule::eval_run_stmt => {
                let contract = Self::operands(stmt).next().unwrap_or_else(|| unreachable!("run"));
                EvalStmt::Run(self.ident(contract), span)
            }
            Rule::dataset_stmt => EvalStmt::Dataset(self.first_expr(stmt), span),
            Rule::repeat_stmt => EvalStmt::Repeat(self.first_expr(stmt), span),
            Rule::require_stmt => EvalStmt::Require(self.first_expr(stmt), span),
            Rule::score_stmt => {
                let mut inner = Self::operands(stmt);
                let name = self.ident(inner.next().unwrap_or_else(|| unreachable!("score name")));
                let value = self.expr(inner.next().unwrap_or_else(|| unreachable!("score value")));
                EvalStmt::Score { name, value, span }
            }
            rule => unreachable!("eval statement {rule:?}"),
        }
    }

    fn runner(&mut self, pair: Pair<'_, Rule>) -> Runner {
        let span = span(self.file, &pair);
        let mut inner = pair.into_inner().skip(1);
        match inner.next().map(|p| p.as_rule()) {
            Some(Rule::kw_inline) => Runner::Inline(span),
            _ => Runner::ThreadPool(inner.next().map(|a| self.args(a)).unwrap_or_default(), span),
        }
    }

    fn output(&mut self, pair: Pair<'_, Rule>, span: Span) -> Output {
        let mut path = Vec::new();
        let mut alias = None;
        let mut after_as = false;
        for part in pair.into_inner() {
            match part.as_rule() {
                Rule::kw_output => {}
                Rule::kw_as => after_as = true,
                _ if after_as => alias = Some(self.ident(part)),
                _ => path.push(self.ident(part)),
            }
        }
        Output { path, alias, span }
    }
}

use crate::ast::Expr;

/// True for the `kw_*` rules, which carry no data.
fn is_keyword(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::kw_use
            | Rule::kw_tool
            | Rule::kw_agent
            | Rule::kw_provider
            | Rule::kw_contract
            | Rule::kw_type
            | Rule::kw_enum
            | Rule::kw_result
            | Rule::kw_result_retries
            | Rule::kw_description
            | Rule::kw_param
            | Rule::kw_requires_capability
            | Rule::kw_requires_approval
            | Rule::kw_when
            | Rule::kw_returns
            | Rule::kw_exec
            | Rule::kw_http
            | Rule::kw_header
            | Rule::kw_builtin
            | Rule::kw_native
            | Rule::kw_timeout
            | Rule::kw_fallback
            | Rule::kw_model
            | Rule::kw_system_prompt
            | Rule::kw_tools
            | Rule::kw_capabilities
            | Rule::kw_max_tool_iterations
            | Rule::kw_temperature
            | Rule::kw_max_tokens
            | Rule::kw_input
            | Rule::kw_prompt
            | Rule::kw_kind
            | Rule::kw_base_url
            | Rule::kw_api_key
            | Rule::kw_retries
            | Rule::kw_rate_limit
            | Rule::kw_token_limit
            | Rule::kw_per
            | Rule::kw_price
            | Rule::kw_cache
            | Rule::kw_runner
            | Rule::kw_budget
            | Rule::kw_usd
            | Rule::kw_model_calls
            | Rule::kw_tokens
            | Rule::kw_compute
            | Rule::kw_compose
            | Rule::kw_guard
            | Rule::kw_output
            | Rule::kw_else
            | Rule::kw_test
            | Rule::kw_run
            | Rule::kw_mock
            | Rule::kw_fails
            | Rule::kw_replay
            | Rule::kw_expect
            | Rule::kw_expect_error
            | Rule::kw_expect_calls
            | Rule::kw_snapshot
            | Rule::kw_approve
            | Rule::kw_deny
            | Rule::kw_mcp
            | Rule::kw_command
            | Rule::kw_url
            | Rule::kw_env
            | Rule::kw_eval
            | Rule::kw_dataset
            | Rule::kw_repeat
            | Rule::kw_score
            | Rule::kw_require
    )
}
