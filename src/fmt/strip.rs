//! The syntax tree with its places taken out, so that two trees compare
//! equal when they say the same thing however they are laid out.
//!
//! Input: a parsed [`ast::File`] and its text. Output: the same tree with
//! every span zeroed and every name expression (whose text lives only in
//! the source) given its text, parentheses aside; on the way, the spans of
//! every string literal, which is where a `#` is not a comment.

use crate::ast::{
    Arg, Call, EvalStmt, Expr, ExprKind, File, Ident, Implementation, Item, MatchArm, MockAnswer,
    Node, Param, PatternKind, Runner, Setting, StringPart, TestStmt, TypeExpr,
};
use crate::source::{FileId, Span};

/// The span every place becomes.
const NOWHERE: Span = Span { file: FileId(0), start: 0, end: 0 };

/// Marks a name's text in a stripped tree: no callee can start with it.
const NAME_MARK: char = '\0';

/// Strips `file` (parsed from `text`) in place; returns the spans of its
/// string literals, in no particular order.
pub(super) fn strip(file: &mut File, text: &str) -> Vec<Span> {
    let mut strip = Strip { text, strings: Vec::new() };
    for item in &mut file.items {
        strip.item(item);
    }
    strip.strings
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
}

impl Strip<'_> {
    fn item(&mut self, item: &mut Item) {
        match item {
            Item::Use(u) => {
                self.expr(&mut u.path);
                u.span = NOWHERE;
            }
            Item::Tool(t) => {
                ident(&mut t.name);
                self.exprs(&mut t.descriptions);
                self.params(&mut t.params);
                idents(&mut t.capabilities);
                for approval in &mut t.approvals {
                    approval.value.iter_mut().for_each(|e| self.expr(e));
                    approval.span = NOWHERE;
                }
                self.exprs(&mut t.timeouts);
                self.exprs(&mut t.retries);
                for (name, value) in &mut t.headers {
                    self.expr(name);
                    self.expr(value);
                }
                t.implementations.iter_mut().for_each(|i| self.implementation(i));
                t.results.iter_mut().for_each(type_setting);
                t.caches.iter_mut().for_each(|c| c.span = NOWHERE);
                t.span = NOWHERE;
            }
            Item::Agent(a) => {
                ident(&mut a.name);
                for setting in &mut a.providers {
                    for provider in &mut setting.value {
                        ident(&mut provider.name);
                        provider.file.iter_mut().for_each(|f| self.expr(f));
                        provider.span = NOWHERE;
                    }
                    setting.span = NOWHERE;
                }
                for setting in &mut a.models {
                    self.exprs(&mut setting.value);
                    setting.span = NOWHERE;
                }
                idents(&mut a.tools);
                idents(&mut a.capabilities);
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
                a.results.iter_mut().for_each(type_setting);
                a.caches.iter_mut().for_each(|c| c.span = NOWHERE);
                a.span = NOWHERE;
            }
            Item::Provider(p) => {
                ident(&mut p.name);
                idents(&mut p.kinds);
                for settings in [&mut p.base_urls, &mut p.api_keys, &mut p.timeouts, &mut p.retries]
                {
                    self.settings(settings);
                }
                for rate in p.rate_limits.iter_mut().chain(&mut p.token_limits) {
                    self.expr(&mut rate.value.count);
                    ident(&mut rate.value.per);
                    rate.span = NOWHERE;
                }
                for price in &mut p.prices {
                    self.expr(&mut price.value.input);
                    self.expr(&mut price.value.output);
                    price.span = NOWHERE;
                }
                p.span = NOWHERE;
            }
            Item::Contract(c) => {
                ident(&mut c.name);
                c.runners.iter_mut().for_each(|r| self.runner(r));
                for budget in &mut c.budgets {
                    for limit in &mut budget.limits {
                        self.expr(&mut limit.value);
                        limit.span = NOWHERE;
                    }
                    budget.span = NOWHERE;
                }
                c.nodes.iter_mut().for_each(|n| self.node(n));
                for output in &mut c.outputs {
                    idents(&mut output.path);
                    output.alias.iter_mut().for_each(ident);
                    output.span = NOWHERE;
                }
                c.span = NOWHERE;
            }
            Item::Type(t) => {
                ident(&mut t.name);
                self.params(&mut t.fields);
                t.span = NOWHERE;
            }
            Item::Enum(e) => {
                ident(&mut e.name);
                idents(&mut e.variants);
                e.span = NOWHERE;
            }
            Item::Test(t) => {
                self.expr(&mut t.name);
                t.statements.iter_mut().for_each(|s| self.test_stmt(s));
                t.span = NOWHERE;
            }
            Item::Mcp(m) => {
                ident(&mut m.name);
                for command in &mut m.commands {
                    self.exprs(&mut command.value);
                    command.span = NOWHERE;
                }
                self.settings(&mut m.urls);
                for (var, value) in &mut m.envs {
                    ident(var);
                    self.expr(value);
                }
                for (name, value) in &mut m.headers {
                    self.expr(name);
                    self.expr(value);
                }
                self.settings(&mut m.timeouts);
                m.span = NOWHERE;
            }
            Item::Eval(e) => {
                self.expr(&mut e.name);
                e.statements.iter_mut().for_each(|s| self.eval_stmt(s));
                e.span = NOWHERE;
            }
        }
    }

    fn implementation(&mut self, implementation: &mut Implementation) {
        match implementation {
            Implementation::Returns(e, span) => {
                self.expr(e);
                *span = NOWHERE;
            }
            Implementation::Exec(args, span) => {
                self.exprs(args);
                *span = NOWHERE;
            }
            Implementation::Http { url, span, .. } => {
                self.expr(url);
                *span = NOWHERE;
            }
            Implementation::Builtin { name, config, span } => {
                self.expr(name);
                config.iter_mut().for_each(|c| self.expr(c));
                *span = NOWHERE;
            }
            Implementation::Native(name, span) => {
                name.iter_mut().for_each(|n| self.expr(n));
                *span = NOWHERE;
            }
            Implementation::Mcp { server, tool, span } => {
                ident(server);
                self.expr(tool);
                *span = NOWHERE;
            }
        }
    }

    fn runner(&mut self, runner: &mut Runner) {
        match runner {
            Runner::Inline(span) => *span = NOWHERE,
            Runner::ThreadPool(args, span) => {
                self.args(args);
                *span = NOWHERE;
            }
        }
    }

    fn node(&mut self, node: &mut Node) {
        match node {
            Node::Input(param) => self.param(param),
            Node::Compute(name, e, span) | Node::Compose(name, e, span) => {
                ident(name);
                self.expr(e);
                *span = NOWHERE;
            }
            Node::Guard(guard) => {
                ident(&mut guard.name);
                self.expr(&mut guard.condition);
                guard.message.iter_mut().for_each(|m| self.expr(m));
                guard.span = NOWHERE;
            }
        }
    }

    fn test_stmt(&mut self, stmt: &mut TestStmt) {
        match stmt {
            TestStmt::Run { contract, args, span } => {
                ident(contract);
                self.args(args);
                *span = NOWHERE;
            }
            TestStmt::Mock { tool, args, answer, span } => {
                ident(tool);
                args.iter_mut().for_each(|a| self.args(a));
                match answer {
                    MockAnswer::Returns(e) | MockAnswer::Fails(e) => self.expr(e),
                }
                *span = NOWHERE;
            }
            TestStmt::ExpectCalls { tool, args, count, span, .. } => {
                ident(tool);
                args.iter_mut().for_each(|a| self.args(a));
                self.expr(count);
                *span = NOWHERE;
            }
            TestStmt::Replay(e, span)
            | TestStmt::Expect(e, span)
            | TestStmt::ExpectError(e, span) => {
                self.expr(e);
                *span = NOWHERE;
            }
            TestStmt::Snapshot { span, .. } => *span = NOWHERE,
            TestStmt::Decide { tool, denial, span } => {
                ident(tool);
                denial.iter_mut().for_each(|e| self.expr(e));
                *span = NOWHERE;
            }
        }
    }

    fn eval_stmt(&mut self, stmt: &mut EvalStmt) {
        match stmt {
            EvalStmt::Run(contract, span) => {
                ident(contract);
                *span = NOWHERE;
            }
            EvalStmt::Score { name, value, span } => {
                ident(name);
                self.expr(value);
                *span = NOWHERE;
            }
            EvalStmt::Dataset(e, span) | EvalStmt::Repeat(e, span) | EvalStmt::Require(e, span) => {
                self.expr(e);
                *span = NOWHERE;
            }
        }
    }

    fn params(&mut self, params: &mut [Param]) {
        params.iter_mut().for_each(|p| self.param(p));
    }

    fn param(&mut self, param: &mut Param) {
        ident(&mut param.name);
        type_expr(&mut param.ty);
        param.default.iter_mut().for_each(|d| self.expr(d));
        param.description.iter_mut().for_each(|d| self.expr(d));
        param.span = NOWHERE;
    }

    fn settings(&mut self, settings: &mut [Setting<Expr>]) {
        for setting in settings {
            self.expr(&mut setting.value);
            setting.span = NOWHERE;
        }
    }

    fn exprs(&mut self, exprs: &mut [Expr]) {
        exprs.iter_mut().for_each(|e| self.expr(e));
    }

    fn args(&mut self, args: &mut [Arg]) {
        for arg in args {
            arg.name.iter_mut().for_each(ident);
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
                    ident(key);
                    self.expr(value);
                }
            }
            ExprKind::Name => {
                let name = format!("{NAME_MARK}{}", name_text(self.text, expr.span));
                let callee = Ident { name: name.into(), span: NOWHERE };
                expr.kind = ExprKind::Call(Box::new(Call { callee, args: Vec::new() }));
            }
            ExprKind::Field(field) => {
                self.expr(&mut field.0);
                ident(&mut field.1);
            }
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Call(call) => {
                ident(&mut call.callee);
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
                ident(&mut f.name);
                self.expr(&mut f.items);
                f.filter.iter_mut().for_each(|e| self.expr(e));
                self.expr(&mut f.body);
            }
        }
        expr.span = NOWHERE;
    }

    fn arm(&mut self, arm: &mut MatchArm) {
        if let PatternKind::Literal(e) = &mut arm.pattern.kind {
            self.expr(e);
        }
        arm.pattern.span = NOWHERE;
        self.expr(&mut arm.body);
        arm.span = NOWHERE;
    }
}

fn ident(ident: &mut Ident) {
    ident.span = NOWHERE;
}

fn idents(idents: &mut [Ident]) {
    idents.iter_mut().for_each(ident);
}

fn type_expr(ty: &mut TypeExpr) {
    ident(&mut ty.name);
    ty.item.iter_mut().for_each(|item| type_expr(item));
    ty.span = NOWHERE;
}

fn type_setting(setting: &mut Setting<TypeExpr>) {
    type_expr(&mut setting.value);
    setting.span = NOWHERE;
}
