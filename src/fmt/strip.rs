//! The syntax tree with its places taken out, so that two trees compare
//! equal when they say the same thing however they are laid out.
//!
//! Input: a parsed [`ast::File`] and its text. Output: the same tree with
//! every span zeroed and every name expression (whose text lives only in
//! the source) given its text, parentheses aside. The same walk, run
//! without changing the tree, finds the spans of every string literal,
//! which is where a `#` is not a comment.

use crate::ast::{
    Arg, Call, EvalStmt, Expr, ExprKind, File, Ident, Implementation, Item, MatchArm, MockAnswer,
    Node, Param, PatternKind, Runner, Setting, StringPart, TestStmt, TypeExpr,
};
use crate::source::{FileId, Span};

/// The span every place becomes.
const NOWHERE: Span = Span { file: FileId(0), start: 0, end: 0 };

/// Marks a name's text in a stripped tree: no callee can start with it.
const NAME_MARK: char = '\0';

/// Strips `file` (parsed from `text`) in place.
pub(super) fn strip(file: &mut File, text: &str) {
    walk(file, text, true);
}

/// The spans of the string literals of `file` (parsed from `text`), in no
/// particular order; `file` is left as it is (the walk is [`strip`]'s).
pub(super) fn strings(file: &mut File, text: &str) -> Vec<Span> {
    walk(file, text, false)
}

fn walk(file: &mut File, text: &str, strip: bool) -> Vec<Span> {
    let mut walk = Strip { text, strings: Vec::new(), strip };
    for item in &mut file.items {
        walk.item(item);
    }
    walk.strings
}

/// The text of a name expression at `span`, without the parentheses and
/// spaces a parenthesised name's span includes.
pub(super) fn name_text(text: &str, span: Span) -> &str {
    let mut name = text.get(span.range()).unwrap_or("").trim();
    while let Some(inner) = name.strip_prefix('(').and_then(|n| n.strip_suffix(')')) {
        name = inner.trim();
    }
    name
}

struct Strip<'a> {
    text: &'a str,
    strings: Vec<Span>,
    /// Zero the places (else only find the strings).
    strip: bool,
}

impl Strip<'_> {
    fn item(&mut self, item: &mut Item) {
        match item {
            Item::Use(u) => {
                self.expr(&mut u.path);
                self.clear(&mut u.span);
            }
            Item::Tool(t) => {
                self.ident(&mut t.name);
                self.exprs(&mut t.descriptions);
                self.params(&mut t.params);
                self.idents(&mut t.capabilities);
                for approval in &mut t.approvals {
                    approval.value.iter_mut().for_each(|e| self.expr(e));
                    self.clear(&mut approval.span);
                }
                self.exprs(&mut t.timeouts);
                self.exprs(&mut t.retries);
                for (name, value) in &mut t.headers {
                    self.expr(name);
                    self.expr(value);
                }
                t.implementations.iter_mut().for_each(|i| self.implementation(i));
                t.results.iter_mut().for_each(|s| self.type_setting(s));
                t.caches.iter_mut().for_each(|c| self.clear(&mut c.span));
                self.clear(&mut t.span);
            }
            Item::Agent(a) => {
                self.ident(&mut a.name);
                for setting in &mut a.providers {
                    for provider in &mut setting.value {
                        self.ident(&mut provider.name);
                        provider.file.iter_mut().for_each(|f| self.expr(f));
                        self.clear(&mut provider.span);
                    }
                    self.clear(&mut setting.span);
                }
                for setting in &mut a.models {
                    self.exprs(&mut setting.value);
                    self.clear(&mut setting.span);
                }
                self.idents(&mut a.tools);
                self.idents(&mut a.capabilities);
                for settings in [
                    &mut a.system_prompts,
                    &mut a.max_tool_iterations,
                    &mut a.temperatures,
                    &mut a.max_tokens,
                    &mut a.prompts,
                    &mut a.result_retries,
                ] {
                    self.settings(settings);
                }
                self.params(&mut a.inputs);
                a.results.iter_mut().for_each(|s| self.type_setting(s));
                a.caches.iter_mut().for_each(|c| self.clear(&mut c.span));
                self.clear(&mut a.span);
            }
            Item::Provider(p) => {
                self.ident(&mut p.name);
                self.idents(&mut p.kinds);
                for settings in [&mut p.base_urls, &mut p.api_keys, &mut p.timeouts, &mut p.retries]
                {
                    self.settings(settings);
                }
                for rate in p.rate_limits.iter_mut().chain(&mut p.token_limits) {
                    self.expr(&mut rate.value.count);
                    self.ident(&mut rate.value.per);
                    self.clear(&mut rate.span);
                }
                for price in &mut p.prices {
                    self.expr(&mut price.value.input);
                    self.expr(&mut price.value.output);
                    self.clear(&mut price.span);
                }
                self.clear(&mut p.span);
            }
            Item::Contract(c) => {
                self.ident(&mut c.name);
                c.runners.iter_mut().for_each(|r| self.runner(r));
                for budget in &mut c.budgets {
                    for limit in &mut budget.limits {
                        self.expr(&mut limit.value);
                        self.clear(&mut limit.span);
                    }
                    self.clear(&mut budget.span);
                }
                c.nodes.iter_mut().for_each(|n| self.node(n));
                for output in &mut c.outputs {
                    self.idents(&mut output.path);
                    output.alias.iter_mut().for_each(|i| self.ident(i));
                    self.clear(&mut output.span);
                }
                self.clear(&mut c.span);
            }
            Item::Type(t) => {
                self.ident(&mut t.name);
                self.params(&mut t.fields);
                self.clear(&mut t.span);
            }
            Item::Enum(e) => {
                self.ident(&mut e.name);
                self.idents(&mut e.variants);
                self.clear(&mut e.span);
            }
            Item::Test(t) => {
                self.expr(&mut t.name);
                t.statements.iter_mut().for_each(|s| self.test_stmt(s));
                self.clear(&mut t.span);
            }
            Item::Mcp(m) => {
                self.ident(&mut m.name);
                for command in &mut m.commands {
                    self.exprs(&mut command.value);
                    self.clear(&mut command.span);
                }
                self.settings(&mut m.urls);
                for (var, value) in &mut m.envs {
                    self.ident(var);
                    self.expr(value);
                }
                for (name, value) in &mut m.headers {
                    self.expr(name);
                    self.expr(value);
                }
                self.settings(&mut m.timeouts);
                self.clear(&mut m.span);
            }
            Item::Eval(e) => {
                self.expr(&mut e.name);
                e.statements.iter_mut().for_each(|s| self.eval_stmt(s));
                self.clear(&mut e.span);
            }
        }
    }

    fn implementation(&mut self, implementation: &mut Implementation) {
        match implementation {
            Implementation::Returns(e, span) => {
                self.expr(e);
                self.clear(span);
            }
            Implementation::Exec(args, span) => {
                self.exprs(args);
                self.clear(span);
            }
            Implementation::Http { url, span, .. } => {
                self.expr(url);
                self.clear(span);
            }
            Implementation::Builtin { name, config, span } => {
                self.expr(name);
                config.iter_mut().for_each(|c| self.expr(c));
                self.clear(span);
            }
            Implementation::Native(name, span) => {
                name.iter_mut().for_each(|n| self.expr(n));
                self.clear(span);
            }
            Implementation::Mcp { server, tool, span } => {
                self.ident(server);
                self.expr(tool);
                self.clear(span);
            }
        }
    }

    fn runner(&mut self, runner: &mut Runner) {
        match runner {
            Runner::Inline(span) => self.clear(span),
            Runner::ThreadPool(args, span) => {
                self.args(args);
                self.clear(span);
            }
        }
    }

    fn node(&mut self, node: &mut Node) {
        match node {
            Node::Input(param) => self.param(param),
            Node::Compute(name, e, span) | Node::Compose(name, e, span) => {
                self.ident(name);
                self.expr(e);
                self.clear(span);
            }
            Node::Guard(guard) => {
                self.ident(&mut guard.name);
                self.expr(&mut guard.condition);
                guard.message.iter_mut().for_each(|m| self.expr(m));
                self.clear(&mut guard.span);
            }
        }
    }

    fn test_stmt(&mut self, stmt: &mut TestStmt) {
        match stmt {
            TestStmt::Run { contract, args, span } => {
                self.ident(contract);
                self.args(args);
                self.clear(span);
            }
            TestStmt::Mock { tool, args, answer, span } => {
                self.ident(tool);
                args.iter_mut().for_each(|a| self.args(a));
                match answer {
                    MockAnswer::Returns(e) | MockAnswer::Fails(e) => self.expr(e),
                }
                self.clear(span);
            }
            TestStmt::ExpectCalls { tool, args, count, span, .. } => {
                self.ident(tool);
                args.iter_mut().for_each(|a| self.args(a));
                self.expr(count);
                self.clear(span);
            }
            TestStmt::Replay(e, span)
            | TestStmt::Expect(e, span)
            | TestStmt::ExpectError(e, span) => {
                self.expr(e);
                self.clear(span);
            }
            TestStmt::Snapshot { span, .. } => self.clear(span),
            TestStmt::Decide { tool, denial, span } => {
                self.ident(tool);
                denial.iter_mut().for_each(|e| self.expr(e));
                self.clear(span);
            }
        }
    }

    fn eval_stmt(&mut self, stmt: &mut EvalStmt) {
        match stmt {
            EvalStmt::Run(contract, span) => {
                self.ident(contract);
                self.clear(span);
            }
            EvalStmt::Score { name, value, span } => {
                self.ident(name);
                self.expr(value);
                self.clear(span);
            }
            EvalStmt::Dataset(e, span) | EvalStmt::Repeat(e, span) | EvalStmt::Require(e, span) => {
                self.expr(e);
                self.clear(span);
            }
        }
    }

    fn params(&mut self, params: &mut [Param]) {
        params.iter_mut().for_each(|p| self.param(p));
    }

    fn param(&mut self, param: &mut Param) {
        self.ident(&mut param.name);
        self.type_expr(&mut param.ty);
        param.default.iter_mut().for_each(|d| self.expr(d));
        param.description.iter_mut().for_each(|d| self.expr(d));
        self.clear(&mut param.span);
    }

    fn settings(&mut self, settings: &mut [Setting<Expr>]) {
        for setting in settings {
            self.expr(&mut setting.value);
            self.clear(&mut setting.span);
        }
    }

    fn exprs(&mut self, exprs: &mut [Expr]) {
        exprs.iter_mut().for_each(|e| self.expr(e));
    }

    fn args(&mut self, args: &mut [Arg]) {
        for arg in args {
            arg.name.iter_mut().for_each(|i| self.ident(i));
            self.expr(&mut arg.value);
        }
    }

    fn expr(&mut self, expr: &mut Expr) {
        match &mut expr.kind {
            ExprKind::Null | ExprKind::Bool(_) | ExprKind::Integer(_) | ExprKind::Float(_) => {}
            ExprKind::String(parts) => {
                self.strings.push(expr.span);
                for part in parts.iter_mut() {
                    if let StringPart::Expr(e) = part {
                        self.expr(e);
                    }
                }
            }
            ExprKind::Array(items) => self.exprs(items),
            ExprKind::Object(entries) => {
                for (key, value) in entries.iter_mut() {
                    // A quoted key is a string too: a `#` in it is text.
                    self.strings.push(key.span);
                    self.ident(key);
                    self.expr(value);
                }
            }
            ExprKind::Name if !self.strip => {}
            ExprKind::Name => {
                let name = format!("{NAME_MARK}{}", name_text(self.text, expr.span));
                let callee = Ident { name: name.into(), span: NOWHERE };
                expr.kind = ExprKind::Call(Box::new(Call { callee, args: Vec::new() }));
            }
            ExprKind::Field(field) => {
                self.expr(&mut field.0);
                self.ident(&mut field.1);
            }
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Call(call) => {
                self.ident(&mut call.callee);
                self.args(&mut call.args);
            }
            ExprKind::Unary(_, e) | ExprKind::Try(e) => self.expr(e),
            ExprKind::If(parts) => {
                self.expr(&mut parts.0);
                self.expr(&mut parts.1);
                self.expr(&mut parts.2);
            }
            ExprKind::Match(m) => {
                self.expr(&mut m.0);
                m.1.iter_mut().for_each(|arm| self.arm(arm));
            }
            ExprKind::For(f) => {
                self.ident(&mut f.name);
                self.expr(&mut f.items);
                f.filter.iter_mut().for_each(|e| self.expr(e));
                self.expr(&mut f.body);
            }
        }
        self.clear(&mut expr.span);
    }

    fn arm(&mut self, arm: &mut MatchArm) {
        if let PatternKind::Literal(e) = &mut arm.pattern.kind {
            self.expr(e);
        }
        self.clear(&mut arm.pattern.span);
        self.expr(&mut arm.body);
        self.clear(&mut arm.span);
    }

    /// Zeroes `span` (when stripping).
    fn clear(&self, span: &mut Span) {
        if self.strip {
            *span = NOWHERE;
        }
    }

    fn ident(&self, ident: &mut Ident) {
        self.clear(&mut ident.span);
    }

    fn idents(&self, idents: &mut [Ident]) {
        idents.iter_mut().for_each(|i| self.ident(i));
    }

    fn type_expr(&self, ty: &mut TypeExpr) {
        self.ident(&mut ty.name);
        ty.item.iter_mut().for_each(|item| self.type_expr(item));
        self.clear(&mut ty.span);
    }

    fn type_setting(&self, setting: &mut Setting<TypeExpr>) {
        self.type_expr(&mut setting.value);
        self.clear(&mut setting.span);
    }
}
