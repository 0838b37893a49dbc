//! Diagnostics: every user mistake the compiler finds, with a stable code,
//! and the one table of every code, compile-time and run-time (the codes of
//! [`crate::failure::NodeError`], of a run and of `ignite serve`).
//!
//! Input: spans and messages pushed by the stages. Output: a sorted
//! [`Diagnostics`] list, rendered as miette reports (human) or JSON.
//!
//! One [`Diagnostic`] type serves every stage instead of one derive enum per
//! stage: codes live in a single table ([`Code`]) that tests iterate to prove
//! every code has a fixture, and a diagnostic can point into several files
//! (a duplicate declared in another file), which a derive with one
//! `#[source_code]` cannot express.

use std::fmt;

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, SourceCode, SourceSpan};
use serde::Serialize;

use crate::source::{Sources, Span};

mod excerpt;

use excerpt::Excerpt;

macro_rules! codes {
    ($($variant:ident => $code:literal,)*) => {
        /// The stable code of a diagnostic, `ignite::<stage>::<name>`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code { $(#[doc = $code] $variant,)* }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The code as printed: `ignite::lower::unknown_name`.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code,)* }
            }

            /// The code printed as `text`, if it is one.
            #[must_use]
            pub fn parse(text: &str) -> Option<Code> {
                match text { $($code => Some(Code::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    Io => "ignite::io::read",
    Syntax => "ignite::syntax::parse",
    BadEscape => "ignite::syntax::bad_escape",
    SameLine => "ignite::syntax::same_line",
    MissingUse => "ignite::import::missing_file",
    UseOutside => "ignite::import::outside",
    ImportCycle => "ignite::import::cycle",
    Duplicate => "ignite::lower::duplicate",
    UnknownName => "ignite::lower::unknown_name",
    UnknownType => "ignite::lower::unknown_type",
    RecursiveType => "ignite::lower::recursive_type",
    BuiltinTypeName => "ignite::lower::builtin_type_name",
    UnknownField => "ignite::lower::unknown_field",
    OperatorType => "ignite::lower::operator_type",
    ConditionType => "ignite::lower::condition_type",
    EnumVariant => "ignite::lower::enum_variant",
    UnknownFunction => "ignite::lower::unknown_function",
    Arity => "ignite::lower::arity",
    UnknownArgument => "ignite::lower::unknown_argument",
    PositionalArgument => "ignite::lower::positional_argument",
    MissingArgument => "ignite::lower::missing_argument",
    ArgumentType => "ignite::lower::argument_type",
    DefaultType => "ignite::lower::default_type",
    NotConstant => "ignite::lower::not_constant",
    BadPattern => "ignite::lower::bad_pattern",
    LiteralInterpolation => "ignite::lower::literal_interpolation",
    CallPosition => "ignite::lower::call_position",
    ComposeNonContract => "ignite::lower::compose_non_contract",
    ComputeContract => "ignite::lower::compute_contract",
    RecursiveCompose => "ignite::lower::recursive_compose",
    Cycle => "ignite::lower::cycle",
    UnknownOutput => "ignite::lower::unknown_output",
    NoOutputs => "ignite::lower::no_outputs",
    Implementation => "ignite::lower::implementation",
    UnknownBuiltin => "ignite::lower::unknown_builtin",
    BuiltinConfig => "ignite::lower::builtin_config",
    BuiltinParam => "ignite::lower::builtin_param",
    BadSetting => "ignite::lower::bad_setting",
    UnknownTool => "ignite::lower::unknown_tool",
    MissingCapability => "ignite::lower::missing_capability",
    UnknownProvider => "ignite::lower::unknown_provider",
    ToolNameClash => "ignite::lower::tool_name_clash",
    UnusedNode => "ignite::lower::unused_node",
    MissingFile => "ignite::lower::missing_file",
    IgnoredSetting => "ignite::lower::ignored_setting",
    UnsentMedia => "ignite::lower::unsent_media",
    SystemMedia => "ignite::lower::system_media",
    TryNonCall => "ignite::lower::try_non_call",
    ForNonArray => "ignite::lower::for_non_array",
    NotExhaustive => "ignite::lower::not_exhaustive",
    NestedControl => "ignite::lower::nested_control",
    UnknownContract => "ignite::lower::unknown_contract",
    TestStatement => "ignite::lower::test_statement",
    UnreachableMock => "ignite::lower::unreachable_mock",
    EvalStatement => "ignite::lower::eval_statement",
    ScoreType => "ignite::lower::score_type",
    SnapshotClash => "ignite::lower::snapshot_clash",
    McpLock => "ignite::lower::mcp_lock",
    UnknownMcpTool => "ignite::lower::unknown_mcp_tool",
    McpSignature => "ignite::lower::mcp_signature",
    PlanOverBudget => "ignite::plan::over_budget",
    PlanUnbounded => "ignite::plan::unbounded",
    RunInput => "ignite::run::input",
    RunOutput => "ignite::run::unknown_output",
    NodeFailed => "ignite::run::node_failed",
    GuardFailed => "ignite::run::guard_failed",
    ToolFailed => "ignite::run::tool_failed",
    AgentFailed => "ignite::run::agent_failed",
    RunDeadline => "ignite::run::deadline",
    RunDenied => "ignite::run::denied",
    RunApprovalRequired => "ignite::run::approval_required",
    RunAwaitingApproval => "ignite::run::awaiting_approval",
    RunBudget => "ignite::run::budget",
    ToolInvalidArguments => "ignite::tools::invalid_arguments",
    ToolFailedRun => "ignite::tools::failed",
    ToolUnreachable => "ignite::tools::unreachable",
    ToolBadResult => "ignite::tools::bad_result",
    ToolHttpStatus => "ignite::tools::http_status",
    ToolTimeout => "ignite::tools::timeout",
    ToolNotRegistered => "ignite::tools::not_registered",
    McpDrift => "ignite::tools::mcp_drift",
    LlmConfig => "ignite::llm::config",
    LlmProvider => "ignite::llm::provider",
    LlmMalformed => "ignite::llm::malformed",
    LlmToolLoop => "ignite::llm::tool_loop",
    LlmCapability => "ignite::llm::capability",
    LlmTruncated => "ignite::llm::truncated",
    LlmStopped => "ignite::llm::stopped",
    LlmEmpty => "ignite::llm::empty",
    LlmBadResult => "ignite::llm::bad_result",
    LlmScript => "ignite::llm::script",
    LlmPrompt => "ignite::llm::prompt",
    EffectReplay => "ignite::effects::replay",
    EffectStore => "ignite::effects::store",
    EffectJournal => "ignite::effects::journal",
    ServeUnknownContract => "ignite::serve::unknown_contract",
    ServeBadBody => "ignite::serve::bad_body",
    ServeTooLarge => "ignite::serve::too_large",
    ServeInternal => "ignite::serve::internal",
    ServeShuttingDown => "ignite::serve::shutting_down",
    ServeApproval => "ignite::serve::approval",
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The program is wrong; it will not run.
    Error,
    /// The program runs but probably not as meant.
    Warning,
}

/// One finding: a code, a message naming the thing, where, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Stable code.
    pub code: Code,
    /// Error or warning.
    pub severity: Severity,
    /// Lower-case, the fact first, identifiers in backticks.
    pub message: String,
    /// Where the problem is.
    pub span: Span,
    /// Text under the primary span.
    pub label: Option<String>,
    /// Other places that explain it ("first declared here").
    pub notes: Vec<(Span, String)>,
    /// How to fix it, when known.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error with `code` at `span`.
    #[must_use]
    pub fn error(code: Code, span: Span, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Error, span, message.into())
    }

    /// A warning with `code` at `span`.
    #[must_use]
    pub fn warning(code: Code, span: Span, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Warning, span, message.into())
    }

    fn new(code: Code, severity: Severity, span: Span, message: String) -> Self {
        Self { code, severity, message, span, label: None, notes: Vec::new(), help: None }
    }

    /// Sets the text under the primary span.
    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Adds a secondary place.
    #[must_use]
    pub fn note(mut self, span: Span, text: impl Into<String>) -> Self {
        self.notes.push((span, text.into()));
        self
    }

    /// Sets the help text.
    #[must_use]
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Sets the help text when there is one.
    #[must_use]
    pub fn maybe_help(mut self, help: Option<String>) -> Self {
        self.help = help.or(self.help);
        self
    }
}

/// The diagnostics of one compilation, in a deterministic order once sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// Adds one.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.items.push(diagnostic);
    }

    /// Adds all of `other`.
    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }

    /// The same diagnostics with every span moved `by` bytes later: for
    /// diagnostics found in a slice of a file that starts at `by`.
    #[must_use]
    pub fn shifted(mut self, by: usize) -> Self {
        let by = u32::try_from(by).unwrap_or(u32::MAX);
        let shift = |span: &mut Span| {
            span.start = span.start.saturating_add(by);
            span.end = span.end.saturating_add(by);
        };
        for diagnostic in &mut self.items {
            shift(&mut diagnostic.span);
            diagnostic.notes.iter_mut().for_each(|(span, _)| shift(span));
        }
        self
    }

    /// True when any is an error.
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }

    /// How many there are of `severity`.
    #[must_use]
    pub fn count(&self, severity: Severity) -> usize {
        self.items.iter().filter(|d| d.severity == severity).count()
    }

    /// True when there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// All of them.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }

    /// Sorts by file path, position, then code, so output never depends on
    /// the order checks ran in.
    pub fn sort(&mut self, sources: &Sources) {
        self.items.sort_by(|a, b| {
            let key =
                |d: &Diagnostic| (sources[d.span.file].path.clone(), d.span.start, d.span.end);
            key(a).cmp(&key(b)).then(a.code.cmp(&b.code)).then(a.message.cmp(&b.message))
        });
        self.items.dedup();
    }

    /// Renders every diagnostic as a miette report. `color` picks the theme;
    /// `width` wraps the text.
    #[must_use]
    pub fn render(&self, sources: &Sources, color: bool, width: usize) -> String {
        let theme =
            if color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
        let handler = GraphicalReportHandler::new_themed(theme)
            .with_width(width)
            .with_links(false)
            .without_syntax_highlighting();
        let mut out = String::new();
        for diagnostic in &self.items {
            let report = Report::new(diagnostic, sources);
            // Writing into a String cannot fail.
            let _ = handler.render_report(&mut out, &report);
        }
        out
    }

    /// Every diagnostic as a JSON value: code, severity, message, file,
    /// line, column, end_line, end_column, help.
    #[must_use]
    pub fn to_json(&self, sources: &Sources) -> serde_json::Value {
        let items = self.items.iter().map(|d| {
            let file = &sources[d.span.file];
            let (line, column) = file.line_col(d.span.start as usize);
            let (end_line, end_column) = file.line_col(d.span.end as usize);
            serde_json::json!({
                "code": d.code.as_str(),
                "severity": d.severity,
                "message": d.message,
                "file": file.path.display().to_string(),
                "line": line,
                "column": column,
                "end_line": end_line,
                "end_column": end_column,
                "label": d.label,
                "help": d.help,
            })
        });
        serde_json::Value::Array(items.collect())
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(diagnostic: Diagnostic) -> Self {
        Self { items: vec![diagnostic] }
    }
}

/// A diagnostic joined with its source, in the shape miette renders.
/// Notes in other files become related reports with their own source.
struct Report<'a> {
    diagnostic: &'a Diagnostic,
    message: String,
    source: Excerpt,
    labels: Vec<LabeledSpan>,
    related: Vec<Report<'a>>,
    code: Option<&'static str>,
    help: Option<&'a str>,
    severity: miette::Severity,
}

impl<'a> Report<'a> {
    fn new(diagnostic: &'a Diagnostic, sources: &Sources) -> Self {
        let file = diagnostic.span.file;
        let mut labels = vec![(diagnostic.label.clone(), diagnostic.span)];
        let mut related = Vec::new();
        for (span, text) in &diagnostic.notes {
            if span.file == file {
                labels.push((Some(text.clone()), *span));
            } else {
                let (source, labels) = excerpt(sources, vec![(None, *span)]);
                related.push(Report {
                    diagnostic,
                    message: text.clone(),
                    source,
                    labels,
                    related: Vec::new(),
                    code: None,
                    help: None,
                    severity: miette::Severity::Advice,
                });
            }
        }
        let (source, labels) = excerpt(sources, labels);
        Report {
            diagnostic,
            message: diagnostic.message.clone(),
            source,
            labels,
            related,
            code: Some(diagnostic.code.as_str()),
            help: diagnostic.help.as_deref(),
            severity: match diagnostic.severity {
                Severity::Error => miette::Severity::Error,
                Severity::Warning => miette::Severity::Warning,
            },
        }
    }
}

/// The excerpt of the file of `labels` (all in one file, the first
/// primary) and the labels placed in it.
/// A file that is not `.ign` (a root file named on the command line) shows
/// no text: its lines could hold anything (keys, private data); the header
/// still names the file.
fn excerpt(sources: &Sources, labels: Vec<(Option<String>, Span)>) -> (Excerpt, Vec<LabeledSpan>) {
    let file = &sources[labels[0].1.file];
    let mut spans: Vec<SourceSpan> = labels.iter().map(|(_, span)| (*span).into()).collect();
    let shown = file.path.extension().is_some_and(|e| e == "ign");
    let excerpt =
        if shown { Excerpt::new(file, &mut spans) } else { Excerpt::hidden(file, &mut spans) };
    let placed = labels
        .into_iter()
        .zip(spans)
        .enumerate()
        .map(|(i, ((text, _), span))| {
            if i == 0 {
                LabeledSpan::new_primary_with_span(text, span)
            } else {
                LabeledSpan::new_with_span(text, span)
            }
        })
        .collect();
    (excerpt, placed)
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.diagnostic, f)
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Report<'_> {}

impl miette::Diagnostic for Report<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.code.map(|c| Box::new(c) as Box<dyn fmt::Display>)
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(self.severity)
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.help.map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(self.labels.iter().cloned()))
    }

    fn related<'b>(&'b self) -> Option<Box<dyn Iterator<Item = &'b dyn miette::Diagnostic> + 'b>> {
        if self.related.is_empty() {
            return None;
        }
        Some(Box::new(self.related.iter().map(|r| r as &dyn miette::Diagnostic)))
    }
}
