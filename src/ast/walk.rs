//! A walk over every place of a syntax tree: each [`Span`] it holds, and
//! each expression before its parts.
//!
//! Two passes read a whole tree this way: the syntax layer moves a
//! declaration parsed alone to where it stands in its file
//! (`syntax::shift`), and the formatter takes a tree's places out to
//! compare two layouts (`fmt::strip`). The walk is written once, so a new
//! place in the tree is added for both.

use super::{
    Arg, EvalStmt, Expr, ExprKind, Ident, Implementation, Item, MatchArm, MockAnswer, Node, Param,
    PatternKind, Runner, Setting, StringPart, TestStmt, TypeExpr,
};
use crate::source::Span;

/// What a walk does at each place of the tree.
pub trait Places {
    /// Each span of the tree, after the places inside it.
    fn span(&mut self, span: &mut Span);

    /// Each expression, before its parts and its span are walked (it may
    /// change the expression: the walk goes on into what it becomes).
    fn expr(&mut self, _expr: &mut Expr) {}
}

/// Walks every place of `items` in order, telling `places` of each.
pub fn walk<P: Places>(items: &mut [Item], places: &mut P) {
    let mut walk = Walk(places);
    for item in items {
        walk.item(item);
    }
}

/// The walk's position: the visitor it tells.
struct Walk<'p, P>(&'p mut P);

impl<P: Places> Walk<'_, P> {
    fn item(&mut self, item: &mut Item) {
        match item {
            Item::Use(u) => {
                self.expr(&mut u.path);
                self.0.span(&mut u.span);
            }
            Item::Tool(t) => {
                self.ident(&mut t.name);
                self.exprs(&mut t.descriptions);
                self.params(&mut t.params);
                self.idents(&mut t.capabilities);
                for approval in &mut t.approvals {
                    approval.value.iter_mut().for_each(|e| self.expr(e));
                    self.0.span(&mut approval.span);
                }
                self.exprs(&mut t.timeouts);
                self.exprs(&mut t.retries);
                for (name, value) in &mut t.headers {
                    self.expr(name);
                    self.expr(value);
                }
                t.implementations.iter_mut().for_each(|i| self.implementation(i));
                t.results.iter_mut().for_each(|s| self.type_setting(s));
                t.caches.iter_mut().for_each(|c| self.0.span(&mut c.span));
                self.0.span(&mut t.span);
            }
            Item::Agent(a) => {
                self.ident(&mut a.name);
                for setting in &mut a.providers {
                    for provider in &mut setting.value {
                        self.ident(&mut provider.name);
                        provider.file.iter_mut().for_each(|f| self.expr(f));
                        self.0.span(&mut provider.span);
                    }
                    self.0.span(&mut setting.span);
                }
                for setting in &mut a.models {
                    self.exprs(&mut setting.value);
                    self.0.span(&mut setting.span);
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
                a.caches.iter_mut().for_each(|c| self.0.span(&mut c.span));
                self.0.span(&mut a.span);
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
                    self.0.span(&mut rate.span);
                }
                for price in &mut p.prices {
                    self.expr(&mut price.value.input);
                    self.expr(&mut price.value.output);
                    self.0.span(&mut price.span);
                }
                self.0.span(&mut p.span);
            }
            Item::Contract(c) => {
                self.ident(&mut c.name);
                c.runners.iter_mut().for_each(|r| self.runner(r));
                for budget in &mut c.budgets {
                    for limit in &mut budget.limits {
                        self.expr(&mut limit.value);
                        self.0.span(&mut limit.span);
                    }
                    self.0.span(&mut budget.span);
                }
                c.nodes.iter_mut().for_each(|n| self.node(n));
                for output in &mut c.outputs {
                    self.idents(&mut output.path);
                    output.alias.iter_mut().for_each(|i| self.ident(i));
                    self.0.span(&mut output.span);
                }
                self.0.span(&mut c.span);
            }
            Item::Type(t) => {
                self.ident(&mut t.name);
                self.params(&mut t.fields);
                self.0.span(&mut t.span);
            }
            Item::Enum(e) => {
                self.ident(&mut e.name);
                self.idents(&mut e.variants);
                self.0.span(&mut e.span);
            }
            Item::Test(t) => {
                self.expr(&mut t.name);
                t.statements.iter_mut().for_each(|s| self.test_stmt(s));
                self.0.span(&mut t.span);
            }
            Item::Mcp(m) => {
                self.ident(&mut m.name);
                for command in &mut m.commands {
                    self.exprs(&mut command.value);
                    self.0.span(&mut command.span);
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
                self.0.span(&mut m.span);
            }
            Item::Eval(e) => {
                self.expr(&mut e.name);
                e.statements.iter_mut().for_each(|s| self.eval_stmt(s));
                self.0.span(&mut e.span);
            }
        }
    }

    fn implementation(&mut self, implementation: &mut Implementation) {
        match implementation {
            Implementation::Returns(e, span) => {
                self.expr(e);
                self.0.span(span);
            }
            Implementation::Exec(args, span) => {
                self.exprs(args);
                self.0.span(span);
            }
            Implementation::Http { url, span, .. } => {
                self.expr(url);
                self.0.span(span);
            }
            Implementation::Builtin { name, config, span } => {
                self.expr(name);
                config.iter_mut().for_each(|c| self.expr(c));
                self.0.span(span);
            }
            Implementation::Native(name, span) => {
                name.iter_mut().for_each(|n| self.expr(n));
                self.0.span(span);
            }
            Implementation::Mcp { server, tool, span } => {
                self.ident(server);
                self.expr(tool);
                self.0.span(span);
            }
        }
    }

    fn runner(&mut self, runner: &mut Runner) {
        match runner {
            Runner::Inline(span) => self.0.span(span),
            Runner::ThreadPool(args, span) => {
                self.args(args);
                self.0.span(span);
            }
        }
    }

    fn node(&mut self, node: &mut Node) {
        match node {
            Node::Input(param) => self.param(param),
            Node::Compute(name, e, span) | Node::Compose(name, e, span) => {
                self.ident(name);
                self.expr(e);
                self.0.span(span);
            }
            Node::Guard(guard) => {
                self.ident(&mut guard.name);
                self.expr(&mut guard.condition);
                guard.message.iter_mut().for_each(|m| self.expr(m));
                self.0.span(&mut guard.span);
            }
        }
    }

    fn test_stmt(&mut self, stmt: &mut TestStmt) {
        match stmt {
            TestStmt::Run { contract, args, span } => {
                self.ident(contract);
                self.args(args);
                self.0.span(span);
            }
            TestStmt::Mock { tool, args, answer, span } => {
                self.ident(tool);
                args.iter_mut().for_each(|a| self.args(a));
                match answer {
                    MockAnswer::Returns(e) | MockAnswer::Fails(e) => self.expr(e),
                }
                self.0.span(span);
            }
            TestStmt::ExpectCalls { tool, args, count, span, .. } => {
                self.ident(tool);
                args.iter_mut().for_each(|a| self.args(a));
                self.expr(count);
                self.0.span(span);
            }
            TestStmt::Replay(e, span)
            | TestStmt::Expect(e, span)
            | TestStmt::ExpectError(e, span) => {
                self.expr(e);
                self.0.span(span);
            }
            TestStmt::Snapshot { span, .. } => self.0.span(span),
            TestStmt::Decide { tool, denial, span } => {
                self.ident(tool);
                denial.iter_mut().for_each(|e| self.expr(e));
                self.0.span(span);
            }
        }
    }

    fn eval_stmt(&mut self, stmt: &mut EvalStmt) {
        match stmt {
            EvalStmt::Run(contract, span) => {
                self.ident(contract);
                self.0.span(span);
            }
            EvalStmt::Score { name, value, span } => {
                self.ident(name);
                self.expr(value);
                self.0.span(span);
            }
            EvalStmt::Dataset(e, span) | EvalStmt::Repeat(e, span) | EvalStmt::Require(e, span) => {
                self.expr(e);
                self.0.span(span);
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
        self.0.span(&mut param.span);
    }

    fn settings(&mut self, settings: &mut [Setting<Expr>]) {
        for setting in settings {
            self.expr(&mut setting.value);
            self.0.span(&mut setting.span);
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
        self.0.expr(expr);
        match &mut expr.kind {
            ExprKind::Null
            | ExprKind::Bool(_)
            | ExprKind::Integer(_)
            | ExprKind::Float(_)
            | ExprKind::Name => {}
            ExprKind::String(parts) => {
                for part in parts.iter_mut() {
                    if let StringPart::Expr(e) = part {
                        self.expr(e);
                    }
                }
            }
            ExprKind::Array(items) => self.exprs(items),
            ExprKind::Object(entries) => {
                for (key, value) in entries.iter_mut() {
                    self.ident(key);
                    self.expr(value);
                }
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
        self.0.span(&mut expr.span);
    }

    fn arm(&mut self, arm: &mut MatchArm) {
        if let PatternKind::Literal(e) = &mut arm.pattern.kind {
            self.expr(e);
        }
        self.0.span(&mut arm.pattern.span);
        self.expr(&mut arm.body);
        self.0.span(&mut arm.span);
    }

    fn ident(&mut self, ident: &mut Ident) {
        self.0.span(&mut ident.span);
    }

    fn idents(&mut self, idents: &mut [Ident]) {
        idents.iter_mut().for_each(|i| self.ident(i));
    }

    fn type_expr(&mut self, ty: &mut TypeExpr) {
        self.ident(&mut ty.name);
        ty.item.iter_mut().for_each(|item| self.type_expr(item));
        self.0.span(&mut ty.span);
    }

    fn type_setting(&mut self, setting: &mut Setting<TypeExpr>) {
        self.type_expr(&mut setting.value);
        self.0.span(&mut setting.span);
    }
}
