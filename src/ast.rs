//! The abstract syntax tree: what a file says, with spans, before any
//! name is resolved.
//!
//! Produced by [`crate::syntax::parse`], consumed by [`crate::lower`]. Names
//! are plain strings with spans; nothing here knows about other files.

pub mod walk;

use crate::source::Span;

/// A name as written, with its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    /// The text: exactly the source at `span` (lowering relies on it).
    pub name: Box<str>,
    /// Where it is.
    pub span: Span,
}

/// One parsed file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct File {
    /// Top-level declarations in source order.
    pub items: Vec<Item>,
}

/// A top-level declaration.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// `use "path"`.
    Use(Use),
    /// `tool Name { ... }`.
    Tool(Tool),
    /// `agent Name { ... }`.
    Agent(Agent),
    /// `provider Name { ... }`.
    Provider(Provider),
    /// `contract Name { ... }`.
    Contract(Contract),
    /// `type Name { ... }`: a record.
    Type(TypeDecl),
    /// `enum Name { ... }`.
    Enum(EnumDecl),
    /// `test "name" { ... }`.
    Test(Test),
    /// `eval "name" { ... }`.
    Eval(Eval),
    /// `mcp Name { ... }`: an MCP server whose tools the program uses.
    Mcp(McpServer),
}

/// `mcp Name { command ... | url ...; env ...; header ...; timeout N }`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    /// Declared name.
    pub name: Ident,
    /// `command "program" "arg" ...` statements (a child over stdio).
    pub commands: Vec<Setting<Vec<Expr>>>,
    /// `url "..."` statements (Streamable HTTP).
    pub urls: Vec<Setting<Expr>>,
    /// `env NAME = expr` statements: the child's extra variables.
    pub envs: Vec<(Ident, Expr)>,
    /// `header "Name" = expr` statements (HTTP only).
    pub headers: Vec<(Expr, Expr)>,
    /// `timeout N` statements.
    pub timeouts: Vec<Setting<Expr>>,
    /// The whole declaration.
    pub span: Span,
}

impl McpServer {
    /// A server named `name` with no statements yet.
    #[must_use]
    pub fn new(name: Ident, span: Span) -> Self {
        Self {
            name,
            commands: Vec::new(),
            urls: Vec::new(),
            envs: Vec::new(),
            headers: Vec::new(),
            timeouts: Vec::new(),
            span,
        }
    }
}

/// `type Name { field: type ... }`: a record type.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDecl {
    /// Declared name.
    pub name: Ident,
    /// Fields in declaration order (a field is written like a param
    /// without the keyword).
    pub fields: Vec<Param>,
    /// The whole declaration.
    pub span: Span,
}

/// `enum Name { a, b }`: a string that is one of the variants.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumDecl {
    /// Declared name.
    pub name: Ident,
    /// The variants in declaration order.
    pub variants: Vec<Ident>,
    /// The whole declaration.
    pub span: Span,
}

/// `use "path"`.
#[derive(Debug, Clone, PartialEq)]
pub struct Use {
    /// The path expression (a string literal).
    pub path: Expr,
    /// The whole statement.
    pub span: Span,
}

/// A type as written: `array<string>?`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeExpr {
    /// `string`, `array`, ...
    pub name: Ident,
    /// `T` of `array<T>`.
    pub item: Option<Box<TypeExpr>>,
    /// Written with `?`.
    pub nullable: bool,
    /// The whole type.
    pub span: Span,
}

/// A typed parameter: a tool `param` or an agent/contract `input`.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Its name.
    pub name: Ident,
    /// Its type.
    pub ty: TypeExpr,
    /// `= expr`.
    pub default: Option<Expr>,
    /// The trailing description string.
    pub description: Option<Expr>,
    /// The whole statement.
    pub span: Span,
}

/// `tool Name { ... }`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// Declared name.
    pub name: Ident,
    /// `description "..."` statements (more than one is reported).
    pub descriptions: Vec<Expr>,
    /// `param` statements.
    pub params: Vec<Param>,
    /// `requires_capability` names, all statements joined.
    pub capabilities: Vec<Ident>,
    /// `requires_approval` / `requires_approval when COND` statements
    /// (more than one is reported): the condition, if any.
    pub approvals: Vec<Setting<Option<Expr>>>,
    /// `timeout N` statements.
    pub timeouts: Vec<Expr>,
    /// `retries N` statements.
    pub retries: Vec<Expr>,
    /// `header "Name" = expr` statements.
    pub headers: Vec<(Expr, Expr)>,
    /// Implementation clauses (exactly one is valid).
    pub implementations: Vec<Implementation>,
    /// `result Type` statements (more than one is reported).
    pub results: Vec<Setting<TypeExpr>>,
    /// `cache` / `cache 7d` statements: the duration as written.
    pub caches: Vec<Setting<Option<String>>>,
    /// The whole declaration.
    pub span: Span,
}

impl Tool {
    /// A tool named `name` with no statements yet.
    #[must_use]
    pub fn new(name: Ident, span: Span) -> Self {
        Self {
            name,
            descriptions: Vec::new(),
            params: Vec::new(),
            capabilities: Vec::new(),
            approvals: Vec::new(),
            timeouts: Vec::new(),
            retries: Vec::new(),
            headers: Vec::new(),
            implementations: Vec::new(),
            results: Vec::new(),
            caches: Vec::new(),
            span,
        }
    }
}

/// How a tool is implemented.
#[derive(Debug, Clone, PartialEq)]
pub enum Implementation {
    /// `returns expr`.
    Returns(Expr, Span),
    /// `exec "program" "arg" ...`.
    Exec(Vec<Expr>, Span),
    /// `http get|post "url"`.
    Http {
        /// `post` when true, `get` otherwise.
        post: bool,
        /// The URL string.
        url: Expr,
        /// The clause.
        span: Span,
    },
    /// `builtin "name" {config}`.
    Builtin {
        /// The builtin's name string.
        name: Expr,
        /// The config object.
        config: Option<Expr>,
        /// The clause.
        span: Span,
    },
    /// `native "name"`.
    Native(Option<Expr>, Span),
    /// `mcp Server "tool"`: a tool of a declared MCP server.
    Mcp {
        /// The `mcp` declaration's name.
        server: Ident,
        /// The remote tool's name string.
        tool: Expr,
        /// The clause.
        span: Span,
    },
}

impl Implementation {
    /// The whole clause.
    #[must_use]
    pub fn span(&self) -> Span {
        match self {
            Implementation::Returns(_, span)
            | Implementation::Exec(_, span)
            | Implementation::Http { span, .. }
            | Implementation::Builtin { span, .. }
            | Implementation::Native(_, span)
            | Implementation::Mcp { span, .. } => *span,
        }
    }
}

/// A provider named in an agent: a kind (`anthropic`), a declared
/// `provider`, or `script "file.json"`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderRef {
    /// The kind or declaration name.
    pub name: Ident,
    /// The file of `script "file.json"`.
    pub file: Option<Expr>,
    /// The whole reference.
    pub span: Span,
}

/// An agent setting with its value and place.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting<T> {
    /// The value as written.
    pub value: T,
    /// The whole statement.
    pub span: Span,
}

/// `agent Name { ... }`.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    /// Declared name.
    pub name: Ident,
    /// `provider a fallback b, c` statements.
    pub providers: Vec<Setting<Vec<ProviderRef>>>,
    /// `model "x" fallback "y"` statements.
    pub models: Vec<Setting<Vec<Expr>>>,
    /// `system_prompt` statements.
    pub system_prompts: Vec<Setting<Expr>>,
    /// `tools` names, all statements joined.
    pub tools: Vec<Ident>,
    /// `capabilities` names, all statements joined.
    pub capabilities: Vec<Ident>,
    /// `max_tool_iterations` statements.
    pub max_tool_iterations: Vec<Setting<Expr>>,
    /// `temperature` statements.
    pub temperatures: Vec<Setting<Expr>>,
    /// `max_tokens` statements.
    pub max_tokens: Vec<Setting<Expr>>,
    /// `input` statements.
    pub inputs: Vec<Param>,
    /// `prompt` statements.
    pub prompts: Vec<Setting<Expr>>,
    /// `result Type` statements.
    pub results: Vec<Setting<TypeExpr>>,
    /// `cache` / `cache 7d` statements: the duration as written.
    pub caches: Vec<Setting<Option<String>>>,
    /// `result_retries N` statements.
    pub result_retries: Vec<Setting<Expr>>,
    /// The whole declaration.
    pub span: Span,
}

impl Agent {
    /// An agent named `name` with no statements yet.
    #[must_use]
    pub fn new(name: Ident, span: Span) -> Self {
        Self {
            name,
            providers: Vec::new(),
            models: Vec::new(),
            system_prompts: Vec::new(),
            tools: Vec::new(),
            capabilities: Vec::new(),
            max_tool_iterations: Vec::new(),
            temperatures: Vec::new(),
            max_tokens: Vec::new(),
            inputs: Vec::new(),
            prompts: Vec::new(),
            results: Vec::new(),
            caches: Vec::new(),
            result_retries: Vec::new(),
            span,
        }
    }
}

/// `provider Name { ... }`.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    /// Declared name.
    pub name: Ident,
    /// `kind` statements.
    pub kinds: Vec<Ident>,
    /// `base_url` statements.
    pub base_urls: Vec<Setting<Expr>>,
    /// `api_key` statements.
    pub api_keys: Vec<Setting<Expr>>,
    /// `timeout` statements.
    pub timeouts: Vec<Setting<Expr>>,
    /// `retries` statements.
    pub retries: Vec<Setting<Expr>>,
    /// `rate_limit N per UNIT` statements.
    pub rate_limits: Vec<Setting<Rate>>,
    /// `token_limit N per UNIT` statements.
    pub token_limits: Vec<Setting<Rate>>,
    /// `price input X output Y` statements.
    pub prices: Vec<Setting<Price>>,
    /// The whole declaration.
    pub span: Span,
}

/// `N per UNIT` of `rate_limit` and `token_limit`, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// How many.
    pub count: Expr,
    /// The unit after `per` (`second`, `minute`, `hour`), checked by lowering.
    pub per: Ident,
}

/// `input X output Y` of `price`: USD per million tokens, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    /// The price of a million input tokens.
    pub input: Expr,
    /// The price of a million output tokens.
    pub output: Expr,
}

impl Provider {
    /// A provider declaration named `name` with no statements yet.
    #[must_use]
    pub fn new(name: Ident, span: Span) -> Self {
        Self {
            name,
            kinds: Vec::new(),
            base_urls: Vec::new(),
            api_keys: Vec::new(),
            timeouts: Vec::new(),
            retries: Vec::new(),
            rate_limits: Vec::new(),
            token_limits: Vec::new(),
            prices: Vec::new(),
            span,
        }
    }
}

/// `contract Name { ... }`.
#[derive(Debug, Clone, PartialEq)]
pub struct Contract {
    /// Declared name.
    pub name: Ident,
    /// `runner` statements.
    pub runners: Vec<Runner>,
    /// `budget` statements.
    pub budgets: Vec<Budget>,
    /// Inputs, computes, composes and guards in source order. Lowering
    /// turns this vector into the checked nodes in place (a checked node
    /// is no larger), so a contract's nodes take their room once.
    pub nodes: Vec<Node>,
    /// `output` statements.
    pub outputs: Vec<Output>,
    /// The whole declaration.
    pub span: Span,
}

impl Contract {
    /// A contract named `name` with no statements yet.
    #[must_use]
    pub fn new(name: Ident, span: Span) -> Self {
        Self {
            name,
            runners: Vec::new(),
            budgets: Vec::new(),
            nodes: Vec::new(),
            outputs: Vec::new(),
            span,
        }
    }
}

/// `test "name" { ... }`: a run of a contract with mocks and expectations.
#[derive(Debug, Clone, PartialEq)]
pub struct Test {
    /// The name string (a plain string is required by lowering).
    pub name: Expr,
    /// The statements in source order.
    pub statements: Vec<TestStmt>,
    /// The whole declaration.
    pub span: Span,
}

/// A statement of a `test` block.
#[derive(Debug, Clone, PartialEq)]
pub enum TestStmt {
    /// `run Contract(args)`.
    Run {
        /// The contract.
        contract: Ident,
        /// Its inputs.
        args: Vec<Arg>,
        /// The statement.
        span: Span,
    },
    /// `mock Tool returns EXPR`, `mock Tool(args) fails "msg"`.
    Mock {
        /// The tool.
        tool: Ident,
        /// `(args)`: only calls with these arguments; any call when absent.
        args: Option<Vec<Arg>>,
        /// What the call gives.
        answer: MockAnswer,
        /// The statement.
        span: Span,
    },
    /// `replay "cassette.json"`.
    Replay(Expr, Span),
    /// `expect EXPR`.
    Expect(Expr, Span),
    /// `expect_error "text"`.
    ExpectError(Expr, Span),
    /// `expect_calls Tool(args) == N`: how many calls (with these arguments).
    ExpectCalls {
        /// The tool.
        tool: Ident,
        /// `(args)`: only calls with these arguments; every call when absent.
        args: Option<Vec<Arg>>,
        /// The comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`).
        op: BinaryOp,
        /// The count compared with.
        count: Expr,
        /// The statement.
        span: Span,
    },
    /// `snapshot` or `snapshot calls`.
    Snapshot {
        /// `snapshot calls`: the effect calls too.
        calls: bool,
        /// The statement.
        span: Span,
    },
    /// `approve Tool` or `deny Tool "reason"`: the test's decision for
    /// every call of the tool that needs approval.
    Decide {
        /// The tool.
        tool: Ident,
        /// `deny`'s reason; `None` for `approve`.
        denial: Option<Expr>,
        /// The statement.
        span: Span,
    },
}

impl TestStmt {
    /// The whole statement.
    #[must_use]
    pub fn span(&self) -> Span {
        match self {
            TestStmt::Run { span, .. }
            | TestStmt::Mock { span, .. }
            | TestStmt::ExpectCalls { span, .. }
            | TestStmt::Replay(_, span)
            | TestStmt::Expect(_, span)
            | TestStmt::ExpectError(_, span)
            | TestStmt::Snapshot { span, .. }
            | TestStmt::Decide { span, .. } => *span,
        }
    }
}

/// `eval "name" { ... }`: a contract run over a dataset, scored.
#[derive(Debug, Clone, PartialEq)]
pub struct Eval {
    /// The name string (a plain string is required by lowering).
    pub name: Expr,
    /// The statements in source order.
    pub statements: Vec<EvalStmt>,
    /// The whole declaration.
    pub span: Span,
}

/// A statement of an `eval` block.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalStmt {
    /// `run Contract`: the contract each row runs.
    Run(Ident, Span),
    /// `dataset "rows.jsonl"`.
    Dataset(Expr, Span),
    /// `repeat N`: samples of each row.
    Repeat(Expr, Span),
    /// `score name = EXPR`.
    Score {
        /// The score's name.
        name: Ident,
        /// Its value: a boolean, a number, or a judge's call.
        value: Expr,
        /// The statement.
        span: Span,
    },
    /// `require EXPR`: a condition over the scores' means.
    Require(Expr, Span),
}

impl EvalStmt {
    /// The whole statement.
    #[must_use]
    pub fn span(&self) -> Span {
        match self {
            EvalStmt::Run(_, span)
            | EvalStmt::Dataset(_, span)
            | EvalStmt::Repeat(_, span)
            | EvalStmt::Score { span, .. }
            | EvalStmt::Require(_, span) => *span,
        }
    }
}

/// What a mocked tool call gives.
#[derive(Debug, Clone, PartialEq)]
pub enum MockAnswer {
    /// `returns EXPR`: this value.
    Returns(Expr),
    /// `fails "message"`: a tool error with this message.
    Fails(Expr),
}

/// `budget usd X, model_calls N, tokens T` (any of the three, in any
/// order): what a run of the contract may spend.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    /// The limits as written.
    pub limits: Vec<BudgetLimit>,
    /// The statement.
    pub span: Span,
}

/// One limit of a [`Budget`]: `usd 0.5`.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetLimit {
    /// What it limits.
    pub kind: BudgetKind,
    /// The number, checked by lowering.
    pub value: Expr,
    /// The limit.
    pub span: Span,
}

/// What a [`BudgetLimit`] limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetKind {
    /// `usd`: the cost of model calls, by the providers' `price`.
    Usd,
    /// `model_calls`: model requests sent.
    ModelCalls,
    /// `tokens`: input and output tokens of model calls.
    Tokens,
}

impl BudgetKind {
    /// The keyword that writes it.
    #[must_use]
    pub fn keyword(self) -> Keyword {
        match self {
            BudgetKind::Usd => Keyword::Usd,
            BudgetKind::ModelCalls => Keyword::ModelCalls,
            BudgetKind::Tokens => Keyword::Tokens,
        }
    }

    /// The kind a keyword writes.
    #[must_use]
    pub fn of(keyword: Keyword) -> Option<Self> {
        match keyword {
            Keyword::Usd => Some(BudgetKind::Usd),
            Keyword::ModelCalls => Some(BudgetKind::ModelCalls),
            Keyword::Tokens => Some(BudgetKind::Tokens),
            _ => None,
        }
    }
}

/// `runner inline` or `runner thread_pool(args)`.
#[derive(Debug, Clone, PartialEq)]
pub enum Runner {
    /// One node at a time.
    Inline(Span),
    /// A pool with named arguments (`pool_size`).
    ThreadPool(Vec<Arg>, Span),
}

/// A node of a contract. The rarer, larger parts are boxed, so a node
/// takes the room of a `compute` (a contract can hold a million of them).
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// `input name: type = default`.
    Input(Box<Param>),
    /// `compute name = expr`.
    Compute(Ident, Expr, Span),
    /// `compose name = Contract(...)`.
    Compose(Ident, Expr, Span),
    /// `guard name = cond else "message"`, boxed: the largest node.
    Guard(Box<Guard>),
}

// A node's size, asserted where the layout is known (64-bit).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Node>() == 88);

/// `guard name = cond else "message"`.
#[derive(Debug, Clone, PartialEq)]
pub struct Guard {
    /// Node name.
    pub name: Ident,
    /// The condition.
    pub condition: Expr,
    /// The message when false.
    pub message: Option<Expr>,
    /// The statement.
    pub span: Span,
}

impl Node {
    /// The node's name.
    #[must_use]
    pub fn name(&self) -> &Ident {
        match self {
            Node::Input(param) => &param.name,
            Node::Compute(name, ..) | Node::Compose(name, ..) => name,
            Node::Guard(guard) => &guard.name,
        }
    }

    /// The whole statement.
    #[must_use]
    pub fn span(&self) -> Span {
        match self {
            Node::Input(param) => param.span,
            Node::Compute(_, _, span) | Node::Compose(_, _, span) => *span,
            Node::Guard(guard) => guard.span,
        }
    }
}

/// `output node.field as alias`.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The node, then fields.
    pub path: Vec<Ident>,
    /// `as alias`.
    pub alias: Option<Ident>,
    /// The statement.
    pub span: Span,
}

/// A call argument: `name: expr` or a bare `expr`.
#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    /// The name, when given.
    pub name: Option<Ident>,
    /// The value.
    pub value: Expr,
}

/// An expression with its span.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it is.
    pub span: Span,
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    /// `-x`.
    Neg,
    /// `not x`.
    Not,
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `or`.
    Or,
    /// `and`.
    And,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `%`.
    Mod,
}

/// Words that cannot name anything because expressions give them a
/// meaning. The one list: the fast parser reads it, and a test checks that
/// the grammar's `ident` rule excludes exactly these, and that each is an
/// [`Keyword`] of [`KeywordRole::Expression`] or an operator or literal of
/// the grammar.
pub const RESERVED: &[&str] = &[
    "if", "then", "else", "and", "or", "not", "true", "false", "null", "match", "for", "in", "try",
];

/// What a [`Keyword`] starts, as syntax errors and recovery tell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeywordRole {
    /// A top-level declaration, in column 0 (`contract`).
    Item,
    /// A statement of a tool, agent, provider or contract body (`compute`).
    Statement,
    /// A statement of a test body (`mock`).
    Test,
    /// A statement of an eval body (`score`).
    Eval,
    /// A part of a statement (`fallback`, `as`, `per`).
    Part,
    /// A part of an expression (`if`, `then`): also in [`RESERVED`].
    Expression,
}

/// Defines [`Keyword`] from one list of variant, spelling and role.
macro_rules! keywords {
    ($($variant:ident $word:literal $role:ident,)*) => {
        /// A word the grammar gives a meaning: one `kw_*` rule of
        /// `grammar/ignite.pest` each (a test keeps the two equal). The one
        /// list of keywords: the fast parser matches these variants, and
        /// syntax errors name statements by their role.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Keyword {
            $(
                #[doc = concat!("`", $word, "`.")]
                $variant,
            )*
        }

        impl Keyword {
            /// Every keyword, in the grammar's order.
            pub const ALL: &'static [Keyword] = &[$(Keyword::$variant,)*];

            /// How the keyword is spelt.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Keyword::$variant => $word,)*
                }
            }

            /// What the keyword starts.
            #[must_use]
            pub fn role(self) -> KeywordRole {
                match self {
                    $(Keyword::$variant => KeywordRole::$role,)*
                }
            }

            /// The keyword spelt `word`, if it is one.
            #[must_use]
            pub fn of(word: &str) -> Option<Keyword> {
                match word {
                    $($word => Some(Keyword::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

keywords! {
    Use "use" Item,
    Tool "tool" Item,
    Agent "agent" Item,
    Provider "provider" Item,
    Contract "contract" Item,
    Type "type" Item,
    Enum "enum" Item,
    Result "result" Statement,
    ResultRetries "result_retries" Statement,
    Description "description" Statement,
    Param "param" Statement,
    RequiresCapability "requires_capability" Statement,
    RequiresApproval "requires_approval" Statement,
    When "when" Part,
    Returns "returns" Statement,
    Exec "exec" Statement,
    Http "http" Statement,
    Get "get" Part,
    Post "post" Part,
    Header "header" Statement,
    Builtin "builtin" Statement,
    Native "native" Statement,
    Timeout "timeout" Statement,
    Fallback "fallback" Part,
    Model "model" Statement,
    SystemPrompt "system_prompt" Statement,
    Tools "tools" Statement,
    Capabilities "capabilities" Statement,
    MaxToolIterations "max_tool_iterations" Statement,
    Temperature "temperature" Statement,
    MaxTokens "max_tokens" Statement,
    Input "input" Statement,
    Prompt "prompt" Statement,
    Kind "kind" Statement,
    BaseUrl "base_url" Statement,
    ApiKey "api_key" Statement,
    Retries "retries" Statement,
    RateLimit "rate_limit" Statement,
    TokenLimit "token_limit" Statement,
    Per "per" Part,
    Price "price" Statement,
    Cache "cache" Statement,
    Runner "runner" Statement,
    Inline "inline" Part,
    ThreadPool "thread_pool" Part,
    Budget "budget" Statement,
    Usd "usd" Part,
    ModelCalls "model_calls" Part,
    Tokens "tokens" Part,
    Compute "compute" Statement,
    Compose "compose" Statement,
    Guard "guard" Statement,
    Output "output" Statement,
    As "as" Part,
    Test "test" Item,
    Mcp "mcp" Item,
    Command "command" Statement,
    Url "url" Statement,
    Env "env" Statement,
    Run "run" Test,
    Mock "mock" Test,
    Fails "fails" Part,
    Replay "replay" Test,
    Expect "expect" Test,
    ExpectError "expect_error" Test,
    ExpectCalls "expect_calls" Test,
    Snapshot "snapshot" Test,
    Approve "approve" Test,
    Deny "deny" Test,
    Calls "calls" Part,
    Eval "eval" Item,
    Dataset "dataset" Eval,
    Repeat "repeat" Eval,
    Score "score" Eval,
    Require "require" Eval,
    If "if" Expression,
    Then "then" Expression,
    Else "else" Expression,
    Match "match" Expression,
    For "for" Expression,
    In "in" Expression,
    Try "try" Expression,
}

/// Binding power of the prefix `not` (between `and` and `==`).
pub const NOT_PRECEDENCE: u8 = 3;
/// Binding power of the prefix `-` (above `*`).
pub const NEG_PRECEDENCE: u8 = 8;
/// Binding power of `.field` and `[index]` (the tightest).
pub const POSTFIX_PRECEDENCE: u8 = 9;

impl BinaryOp {
    /// Every binary operator.
    pub const ALL: [BinaryOp; 13] = [
        BinaryOp::Or,
        BinaryOp::And,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Mod,
    ];

    /// Binding power: higher binds tighter. All binary operators are
    /// left-associative. The one precedence table of both parsers.
    #[must_use]
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq | BinaryOp::Ne => 4,
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => 5,
            BinaryOp::Add | BinaryOp::Sub => 6,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => 7,
        }
    }

    /// True for `==`, `!=`, `<`, `<=`, `>`, `>=`.
    #[must_use]
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }

    /// The operator as written.
    #[must_use]
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "or",
            BinaryOp::And => "and",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
        }
    }
}

/// A piece of a string literal.
#[derive(Debug, Clone, PartialEq)]
pub enum StringPart {
    /// Literal text, escapes already applied.
    Text(String),
    /// `{expr}`.
    Expr(Expr),
}

/// The kinds of expression. Every kind holds at most 16 bytes beside its
/// tag (lists as boxed slices, the rare wide kinds boxed whole), so an
/// expression is 40 bytes: a program holds millions of them.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// `null`.
    Null,
    /// `true`, `false`.
    Bool(bool),
    /// `42`.
    Integer(i64),
    /// `0.5`.
    Float(f64),
    /// A string, maybe interpolated.
    String(Box<[StringPart]>),
    /// `[a, b]`.
    Array(Box<[Expr]>),
    /// `{key: value}` with keys as written.
    Object(Box<[(Ident, Expr)]>),
    /// A name: the source text at the expression's span (kept nowhere
    /// else, so a name costs no allocation).
    Name,
    /// `a.b`, boxed whole: with its name inline it would be the largest
    /// kind, and every expression as large.
    Field(Box<(Expr, Ident)>),
    /// `a[i]`.
    Index(Box<Expr>, Box<Expr>),
    /// `Name(args)`, boxed: the largest kind, and rarer than names and
    /// operators.
    Call(Box<Call>),
    /// `-a`, `not a`.
    Unary(UnaryOp, Box<Expr>),
    /// `a + b`.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `if c then a else b`: the condition and the two values.
    If(Box<(Expr, Expr, Expr)>),
    /// `match x { pattern => body ... }`: the value matched and the arms.
    Match(Box<(Expr, Vec<MatchArm>)>),
    /// `for name in items if cond: body`.
    For(Box<For>),
    /// `try Call(...)`.
    Try(Box<Expr>),
}

// An expression's size, asserted where the layout is known (64-bit).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Expr>() == 40);

/// `Name(args)`: a call of a function, tool, agent or contract.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// What is called.
    pub callee: Ident,
    /// The arguments.
    pub args: Vec<Arg>,
}

/// One arm of a `match`: `pattern => body`.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchArm {
    /// What the value must be.
    pub pattern: Pattern,
    /// What the node is when it is.
    pub body: Expr,
    /// The whole arm.
    pub span: Span,
}

/// A `match` pattern with its place.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    /// What it matches.
    pub kind: PatternKind,
    /// Where it is.
    pub span: Span,
}

/// The kinds of pattern. Enum variants join this list when declared
/// types do.
#[derive(Debug, Clone, PartialEq)]
pub enum PatternKind {
    /// `_`: anything.
    Wildcard,
    /// A literal: a string without interpolation, an integer, `true`,
    /// `false` or `null` (the expression is one of those kinds).
    Literal(Expr),
}

/// `for name in items if cond: body`.
#[derive(Debug, Clone, PartialEq)]
pub struct For {
    /// The item's name inside the filter and the body.
    pub name: Ident,
    /// The array to go through.
    pub items: Expr,
    /// `if cond`: only items for which it is true.
    pub filter: Option<Expr>,
    /// What to compute per item.
    pub body: Expr,
}

impl Expr {
    /// The text of a string literal with no interpolation.
    #[must_use]
    pub fn as_plain_string(&self) -> Option<String> {
        match &self.kind {
            ExprKind::String(parts) => parts
                .iter()
                .map(|p| match p {
                    StringPart::Text(t) => Some(t.as_str()),
                    StringPart::Expr(_) => None,
                })
                .collect::<Option<Vec<_>>>()
                .map(|v| v.concat()),
            _ => None,
        }
    }
}
