//! The printer: a syntax tree and its comments to a [`Doc`].
//!
//! Input: an [`ast::File`], the text it was parsed from and its comments.
//! Output: the document of the canonical layout. Statements come out in
//! source order (the tree keeps each kind in its own list, so they are
//! sorted by place); literals are printed as written (strings byte for
//! byte); every comment is emitted once, in order, at the first place a
//! line may end after it: the end of the line of the code before it, or a
//! line of its own.

mod expr;

use super::comments::Comment;
use super::doc::{Doc, INDENT, Layout};
use crate::ast::{
    self, EvalStmt, Expr, Ident, Implementation, Item, MockAnswer, Node, Param, PatternKind,
    Runner, Setting, TestStmt, TypeExpr,
};

/// Prints `file`, parsed from `text`, with `comments`, laid out at
/// `width` columns into one string of `capacity` bytes (a guess).
pub(super) fn print(
    file: &ast::File,
    text: &str,
    comments: &[Comment],
    width: usize,
    capacity: usize,
) -> String {
    let mut printer = Printer { text, comments, next: 0, layout: Layout::new(width, capacity) };
    printer.file(file);
    printer.layout.finish()
}

struct Printer<'a> {
    text: &'a str,
    comments: &'a [Comment],
    /// The first comment not printed yet.
    next: usize,
    /// The text so far: the file is laid out a statement of a declaration
    /// at a time, never held whole as a document.
    layout: Layout<'a>,
}

/// Where a block's lines go.
enum Lines<'a> {
    /// Into the document (a block inside an expression, which a group
    /// around it may lay out flat), after its head.
    Kept(Doc<'a>, Vec<Doc<'a>>),
    /// Into the layout, one level deeper than the declaration.
    Laid,
}

/// A statement of a block, by reference, to be sorted by place.
enum Stmt<'a> {
    /// A keyword and an expression: `description "..."`, `timeout 3`.
    Keyed(&'static str, &'a Expr),
    /// `param`, `input` or a record field (keyword empty).
    Param(&'static str, &'a Param),
    /// `requires_capability a, b`, `tools A, B`.
    Names(&'static str, &'a [Ident]),
    /// `header "Name" = expr`.
    Header(&'a Expr, &'a Expr),
    /// `command "program" "arg" ...` of an `mcp` server.
    Command(&'a [Expr]),
    /// `env NAME = expr` of an `mcp` server.
    Env(&'a Ident, &'a Expr),
    /// `returns`, `exec`, `http`, `builtin`, `native`.
    Implementation(&'a Implementation),
    /// `result Type`.
    Result(&'a TypeExpr),
    /// `cache 7d`.
    Cache(Option<&'a str>),
    /// `requires_approval`, `requires_approval when COND`.
    Approval(Option<&'a Expr>),
    /// `provider a fallback b`.
    Providers(&'a [ast::ProviderRef]),
    /// `model "a" fallback "b"`.
    Models(&'a [Expr]),
    /// `rate_limit N per unit`, `token_limit N per unit`.
    Rate(&'static str, &'a ast::Rate),
    /// `price input X output Y`.
    Price(&'a ast::Price),
    /// `runner inline`.
    Runner(&'a Runner),
    /// `budget usd X, model_calls N`.
    Budget(&'a ast::Budget),
    /// `compute`, `compose`, `guard`, `input`.
    Node(&'a Node),
    /// `output a.b as c`.
    Output(&'a ast::Output),
    /// A statement of a test.
    Test(&'a TestStmt),
    /// A statement of an eval.
    Eval(&'a EvalStmt),
    /// A `match` arm.
    Arm(&'a ast::MatchArm),
}

fn start(span: crate::source::Span) -> usize {
    span.start as usize
}

fn concat<'a>(parts: impl IntoIterator<Item = Doc<'a>>) -> Doc<'a> {
    Doc::Concat(parts.into_iter().collect())
}

impl<'a> Printer<'a> {
    // ------------------------------------------------------------ comments

    /// Takes the comments before `at`: the first as an end-of-line comment
    /// (a space, the text and a forced break) when code came before it on
    /// its line; the others as lines of their own, each with whether a
    /// blank line came before it.
    fn comments_before(&mut self, at: usize) -> (Doc<'a>, Vec<(bool, &'a str)>) {
        let mut trailing = Doc::Concat(Vec::new());
        let mut own = Vec::new();
        let mut first = true;
        while let Some(comment) = self.comments.get(self.next).filter(|c| c.start < at) {
            self.next += 1;
            if first && !comment.own_line {
                trailing = concat([Doc::text(format!(" {}", comment.text)), Doc::BreakParent]);
            } else {
                own.push((self.blank_before(comment.start), comment.text.as_str()));
            }
            first = false;
        }
        (trailing, own)
    }

    /// True when the line before the line of `at` is empty and only spaces
    /// come before `at` on its own line.
    fn blank_before(&self, at: usize) -> bool {
        let before = &self.text[..at.min(self.text.len())];
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        if !before[line_start..].trim().is_empty() || line_start == 0 {
            return false;
        }
        let previous = &before[..line_start - 1];
        let previous_start = previous.rfind('\n').map_or(0, |n| n + 1);
        previous[previous_start..].trim().is_empty()
    }

    // ------------------------------------------------------------ file and blocks

    fn file(&mut self, file: &ast::File) {
        if self.text.starts_with('\u{feff}') {
            self.layout.push(0, Doc::text("\u{feff}"));
        }
        let mut previous: Option<&Item> = None;
        for item in &file.items {
            let at = item_start(item);
            let (trailing, own) = self.comments_before(at);
            self.layout.push(0, trailing);
            if let Some(previous) = previous {
                self.layout.line(0);
                // One blank line between declarations; `use` lines may
                // stand together.
                let uses = matches!((previous, item), (Item::Use(_), Item::Use(_)));
                let blank = own.first().map_or_else(|| self.blank_before(at), |c| c.0);
                if !uses || blank {
                    self.layout.line(0);
                }
            }
            let has_own = !own.is_empty();
            for (k, (blank, text)) in own.into_iter().enumerate() {
                if k > 0 && blank {
                    self.layout.line(0);
                }
                self.layout.push(0, Doc::text(text));
                self.layout.line(0);
            }
            if has_own && self.blank_before(at) {
                self.layout.line(0);
            }
            let doc = self.item(item);
            self.layout.push(0, doc);
            previous = Some(item);
        }
        let (trailing, own) = self.comments_before(usize::MAX);
        self.layout.push(0, trailing);
        if previous.is_some() {
            self.layout.line(0);
            if own.first().is_some_and(|c| c.0) {
                self.layout.line(0);
            }
        }
        for (k, (blank, text)) in own.into_iter().enumerate() {
            if k > 0 && blank {
                self.layout.line(0);
            }
            self.layout.push(0, Doc::text(text));
            self.layout.line(0);
        }
    }

    /// A declaration's body (`head {` statements `}`, see [`Self::block`]),
    /// laid out as it is printed, a statement at a time: nothing around it
    /// is ever flat. What is left of it (the `}`) is returned.
    fn body(&mut self, head: Doc<'a>, stmts: Vec<(usize, Stmt<'_>)>, close: usize) -> Doc<'a> {
        self.block_in(head, stmts, close, true)
    }

    /// `head {` statements `}`, statements sorted by place and each on a
    /// line of its own; `close` is where the `}` is.
    fn block(&mut self, head: Doc<'a>, stmts: Vec<(usize, Stmt<'_>)>, close: usize) -> Doc<'a> {
        self.block_in(head, stmts, close, false)
    }

    /// [`Self::block`], its lines kept in the document or, when `laid`
    /// (a declaration's body, at indentation 0), laid out at once.
    fn block_in(
        &mut self,
        head: Doc<'a>,
        mut stmts: Vec<(usize, Stmt<'_>)>,
        close: usize,
        laid: bool,
    ) -> Doc<'a> {
        let empty =
            stmts.is_empty() && self.comments.get(self.next).is_none_or(|c| c.start >= close);
        if empty {
            return concat([head, Doc::text(" {}")]);
        }
        stmts.sort_by_key(|(at, _)| *at);
        let head = concat([head, Doc::text(" {")]);
        let mut lines = if laid {
            self.layout.push(0, head);
            Lines::Laid
        } else {
            Lines::Kept(head, Vec::new())
        };
        // Whether a line was printed in the block yet: no blank line
        // right after `{`.
        let mut started = false;
        for (at, stmt) in &stmts {
            let (trailing, own) = self.comments_before(*at);
            self.put(&mut lines, trailing);
            self.own_lines(&mut lines, own, &mut started);
            if started && self.blank_before(*at) {
                self.put(&mut lines, Doc::HardLine);
            }
            self.put(&mut lines, Doc::HardLine);
            let stmt = self.stmt(stmt);
            self.put(&mut lines, stmt);
            started = true;
        }
        let (trailing, own) = self.comments_before(close);
        self.put(&mut lines, trailing);
        self.own_lines(&mut lines, own, &mut started);
        match lines {
            Lines::Kept(head, inner) => {
                concat([head, concat(inner).nest(), Doc::HardLine, Doc::text("}")])
            }
            Lines::Laid => {
                self.layout.line(0);
                Doc::text("}")
            }
        }
    }

    /// Adds `doc` to a block's lines.
    fn put(&mut self, lines: &mut Lines<'a>, doc: Doc<'a>) {
        match (lines, doc) {
            (Lines::Kept(_, inner), doc) => inner.push(doc),
            (Lines::Laid, Doc::HardLine) => self.layout.line(INDENT),
            (Lines::Laid, doc) => self.layout.push(INDENT, doc),
        }
    }

    /// Comments on lines of their own in a block, each after a blank line
    /// when one came before it (and not right after the `{`).
    fn own_lines(&mut self, lines: &mut Lines<'a>, own: Vec<(bool, &'a str)>, started: &mut bool) {
        for (blank, text) in own {
            if blank && *started {
                self.put(lines, Doc::HardLine);
            }
            self.put(lines, Doc::HardLine);
            self.put(lines, Doc::text(text));
            *started = true;
        }
    }

    /// `open` items `close`, flat when it fits, else one item per line
    /// with a trailing comma; `pad` puts spaces inside flat brackets.
    fn list<T>(
        &mut self,
        open: &'static str,
        items: &[T],
        at: impl Fn(&T) -> usize,
        print: impl Fn(&mut Self, &T) -> Doc<'a>,
        close: (usize, &'static str),
        pad: bool,
    ) -> Doc<'a> {
        let mut inner = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let (trailing, own) = self.comments_before(at(item));
            if i > 0 {
                inner.push(Doc::text(","));
            }
            inner.push(trailing);
            inner.push(if pad || i > 0 { Doc::Line } else { Doc::SoftLine });
            for (_, text) in own {
                inner.extend([Doc::text(text), Doc::HardLine]);
            }
            inner.push(print(self, item));
        }
        let (trailing, own) = self.comments_before(close.0);
        let has_comments = !own.is_empty() || !matches!(&trailing, Doc::Concat(v) if v.is_empty());
        if items.is_empty() && !has_comments {
            return Doc::text(format!("{open}{}", close.1));
        }
        let mut after = vec![if items.is_empty() { Doc::text("") } else { Doc::IfBreak(",") }];
        after.push(trailing);
        let mut closing = Vec::new();
        for (_, text) in own {
            closing.extend([Doc::HardLine, Doc::text(text)]);
        }
        after.push(concat(closing).nest());
        after.push(if pad { Doc::Line } else { Doc::SoftLine });
        after.push(Doc::text(close.1));
        concat([Doc::text(open), concat(inner).nest(), concat(after)]).group()
    }

    // ------------------------------------------------------------ items

    fn item(&mut self, item: &Item) -> Doc<'a> {
        match item {
            Item::Use(u) => concat([Doc::text("use "), self.expr(&u.path)]),
            Item::Tool(t) => self.tool(t),
            Item::Agent(a) => self.agent(a),
            Item::Provider(p) => self.provider(p),
            Item::Contract(c) => {
                let mut stmts: Vec<(usize, Stmt<'_>)> = Vec::new();
                stmts.extend(c.runners.iter().map(|r| (start(runner_span(r)), Stmt::Runner(r))));
                stmts.extend(c.budgets.iter().map(|b| (start(b.span), Stmt::Budget(b))));
                stmts.extend(c.nodes.iter().map(|n| (start(n.span()), Stmt::Node(n))));
                stmts.extend(c.outputs.iter().map(|o| (start(o.span), Stmt::Output(o))));
                let head = Doc::text(format!("contract {}", c.name.name));
                self.body(head, stmts, close_of(c.span))
            }
            Item::Type(t) => {
                let stmts = t.fields.iter().map(|f| (start(f.span), Stmt::Param("", f))).collect();
                self.body(Doc::text(format!("type {}", t.name.name)), stmts, close_of(t.span))
            }
            Item::Enum(e) => {
                let variants = self.list(
                    "{",
                    &e.variants,
                    |v| start(v.span),
                    |_, v| Doc::text(v.name.to_string()),
                    (close_of(e.span), "}"),
                    true,
                );
                concat([Doc::text(format!("enum {} ", e.name.name)), variants])
            }
            Item::Test(t) => {
                let head = concat([Doc::text("test "), self.expr(&t.name)]);
                let stmts = t.statements.iter().map(|s| (start(s.span()), Stmt::Test(s))).collect();
                self.body(head, stmts, close_of(t.span))
            }
            Item::Mcp(m) => self.mcp(m),
            Item::Eval(e) => {
                let head = concat([Doc::text("eval "), self.expr(&e.name)]);
                let stmts = e.statements.iter().map(|s| (start(s.span()), Stmt::Eval(s))).collect();
                self.body(head, stmts, close_of(e.span))
            }
        }
    }

    fn mcp(&mut self, m: &ast::McpServer) -> Doc<'a> {
        let mut stmts: Vec<(usize, Stmt<'_>)> = Vec::new();
        stmts.extend(m.commands.iter().map(|c| (start(c.span), Stmt::Command(&c.value))));
        stmts.extend(keyed_settings("url", &m.urls));
        stmts.extend(m.envs.iter().map(|(n, v)| (start(n.span), Stmt::Env(n, v))));
        stmts.extend(m.headers.iter().map(|(n, v)| (start(n.span), Stmt::Header(n, v))));
        stmts.extend(keyed_settings("timeout", &m.timeouts));
        self.body(Doc::text(format!("mcp {}", m.name.name)), stmts, close_of(m.span))
    }

    fn tool(&mut self, t: &ast::Tool) -> Doc<'a> {
        let mut stmts: Vec<(usize, Stmt<'_>)> = Vec::new();
        for (kw, exprs) in
            [("description", &t.descriptions), ("timeout", &t.timeouts), ("retries", &t.retries)]
        {
            stmts.extend(exprs.iter().map(|e| (start(e.span), Stmt::Keyed(kw, e))));
        }
        stmts.extend(t.params.iter().map(|p| (start(p.span), Stmt::Param("param", p))));
        for names in self.statements_of(&t.capabilities) {
            stmts.push((start(names[0].span), Stmt::Names("requires_capability", names)));
        }
        stmts.extend(t.approvals.iter().map(|a| (start(a.span), Stmt::Approval(a.value.as_ref()))));
        stmts.extend(t.headers.iter().map(|(n, v)| (start(n.span), Stmt::Header(n, v))));
        stmts.extend(t.implementations.iter().map(|i| (start(i.span()), Stmt::Implementation(i))));
        stmts.extend(t.results.iter().map(|r| (start(r.span), Stmt::Result(&r.value))));
        stmts.extend(t.caches.iter().map(|c| (start(c.span), Stmt::Cache(c.value.as_deref()))));
        self.body(Doc::text(format!("tool {}", t.name.name)), stmts, close_of(t.span))
    }

    fn agent(&mut self, a: &ast::Agent) -> Doc<'a> {
        let mut stmts: Vec<(usize, Stmt<'_>)> = Vec::new();
        stmts.extend(a.providers.iter().map(|p| (start(p.span), Stmt::Providers(&p.value))));
        stmts.extend(a.models.iter().map(|m| (start(m.span), Stmt::Models(&m.value))));
        for (kw, settings) in [
            ("system_prompt", &a.system_prompts),
            ("max_tool_iterations", &a.max_tool_iterations),
            ("temperature", &a.temperatures),
            ("max_tokens", &a.max_tokens),
            ("prompt", &a.prompts),
            ("result_retries", &a.result_retries),
        ] {
            stmts.extend(keyed_settings(kw, settings));
        }
        for names in self.statements_of(&a.tools) {
            stmts.push((start(names[0].span), Stmt::Names("tools", names)));
        }
        for names in self.statements_of(&a.capabilities) {
            stmts.push((start(names[0].span), Stmt::Names("capabilities", names)));
        }
        stmts.extend(a.inputs.iter().map(|p| (start(p.span), Stmt::Param("input", p))));
        stmts.extend(a.results.iter().map(|r| (start(r.span), Stmt::Result(&r.value))));
        stmts.extend(a.caches.iter().map(|c| (start(c.span), Stmt::Cache(c.value.as_deref()))));
        self.body(Doc::text(format!("agent {}", a.name.name)), stmts, close_of(a.span))
    }

    fn provider(&mut self, p: &ast::Provider) -> Doc<'a> {
        let mut stmts: Vec<(usize, Stmt<'_>)> = Vec::new();
        for kind in &p.kinds {
            stmts.push((start(kind.span), Stmt::Names("kind", std::slice::from_ref(kind))));
        }
        for (kw, settings) in [
            ("base_url", &p.base_urls),
            ("api_key", &p.api_keys),
            ("timeout", &p.timeouts),
            ("retries", &p.retries),
        ] {
            stmts.extend(keyed_settings(kw, settings));
        }
        stmts.extend(
            p.rate_limits.iter().map(|r| (start(r.span), Stmt::Rate("rate_limit", &r.value))),
        );
        stmts.extend(
            p.token_limits.iter().map(|r| (start(r.span), Stmt::Rate("token_limit", &r.value))),
        );
        stmts.extend(p.prices.iter().map(|r| (start(r.span), Stmt::Price(&r.value))));
        self.body(Doc::text(format!("provider {}", p.name.name)), stmts, close_of(p.span))
    }

    /// Names joined from several statements (`tools A` and `tools B`),
    /// split back into the statements they were written in: a name
    /// continues a statement when only a comma separates it from the last.
    fn statements_of<'n>(&self, names: &'n [Ident]) -> Vec<&'n [Ident]> {
        let mut groups = Vec::new();
        let mut first = 0;
        for i in 1..names.len() {
            let between = self.text.get(names[i - 1].span.end as usize..start(names[i].span));
            let code: String = between
                .unwrap_or("")
                .lines()
                .map(|line| line.split('#').next().unwrap_or(""))
                .collect::<String>();
            if code.trim() != "," {
                groups.push(&names[first..i]);
                first = i;
            }
        }
        if first < names.len() {
            groups.push(&names[first..]);
        }
        groups
    }

    // ------------------------------------------------------------ statements

    fn stmt(&mut self, stmt: &Stmt<'_>) -> Doc<'a> {
        match stmt {
            Stmt::Keyed(kw, e) => self.keyed(kw, e),
            Stmt::Param(kw, p) => self.param(kw, p),
            Stmt::Names(kw, names) => Doc::text(format!("{kw} {}", join_names(names))),
            Stmt::Command(words) => self.words("command", words),
            Stmt::Env(var, value) => {
                concat([Doc::text(format!("env {} = ", var.name)), self.expr(value)])
            }
            Stmt::Header(name, value) => {
                concat([Doc::text("header "), self.expr(name), Doc::text(" = "), self.expr(value)])
            }
            Stmt::Implementation(i) => self.implementation(i),
            Stmt::Result(ty) => Doc::text(format!("result {}", type_text(ty))),
            Stmt::Cache(None) => Doc::text("cache"),
            Stmt::Cache(Some(duration)) => Doc::text(format!("cache {duration}")),
            Stmt::Approval(None) => Doc::text("requires_approval"),
            Stmt::Approval(Some(condition)) => self.keyed("requires_approval when", condition),
            Stmt::Providers(refs) => {
                let mut parts = vec![Doc::text("provider ")];
                for (i, r) in refs.iter().enumerate() {
                    parts.push(Doc::text(match i {
                        0 => "",
                        1 => " fallback ",
                        _ => ", ",
                    }));
                    parts.push(Doc::text(r.name.name.to_string()));
                    if let Some(file) = &r.file {
                        parts.push(Doc::text(" "));
                        parts.push(self.expr(file));
                    }
                }
                concat(parts)
            }
            Stmt::Models(models) => {
                let mut parts = vec![Doc::text("model ")];
                for (i, m) in models.iter().enumerate() {
                    parts.push(Doc::text(match i {
                        0 => "",
                        1 => " fallback ",
                        _ => ", ",
                    }));
                    parts.push(self.expr(m));
                }
                concat(parts)
            }
            Stmt::Rate(kw, rate) => concat([
                Doc::text(format!("{kw} ")),
                self.expr(&rate.count),
                Doc::text(format!(" per {}", rate.per.name)),
            ]),
            Stmt::Price(price) => concat([
                Doc::text("price input "),
                self.expr(&price.input),
                Doc::text(" output "),
                self.expr(&price.output),
            ]),
            Stmt::Budget(budget) => {
                let mut parts = vec![Doc::text("budget ")];
                for (i, limit) in budget.limits.iter().enumerate() {
                    let comma = if i == 0 { "" } else { ", " };
                    parts.push(Doc::text(format!("{comma}{} ", limit.kind.keyword().as_str())));
                    parts.push(self.expr(&limit.value));
                }
                concat(parts)
            }
            Stmt::Runner(Runner::Inline(_)) => Doc::text("runner inline"),
            Stmt::Runner(Runner::ThreadPool(args, span)) if args.is_empty() => {
                // `thread_pool` and `thread_pool()` say the same; comments
                // inside the brackets keep them.
                let (trailing, own) = self.comments_before(span.end as usize);
                let own = own.into_iter().flat_map(|(_, text)| [Doc::HardLine, Doc::text(text)]);
                concat([Doc::text("runner thread_pool"), trailing, concat(own)])
            }
            Stmt::Runner(Runner::ThreadPool(args, span)) => {
                concat([Doc::text("runner thread_pool"), self.args(args, span.end as usize)])
            }
            Stmt::Node(node) => self.node(node),
            Stmt::Output(o) => {
                let path: Vec<&str> = o.path.iter().map(|p| &*p.name).collect();
                let alias = o.alias.as_ref().map(|a| format!(" as {}", a.name)).unwrap_or_default();
                Doc::text(format!("output {}{alias}", path.join(".")))
            }
            Stmt::Test(t) => self.test_stmt(t),
            Stmt::Eval(e) => self.eval_stmt(e),
            Stmt::Arm(arm) => {
                let pattern = match &arm.pattern.kind {
                    PatternKind::Wildcard => Doc::text("_"),
                    PatternKind::Literal(e) => self.expr(e),
                };
                concat([pattern, Doc::text(" => "), self.expr(&arm.body)])
            }
        }
    }

    fn keyed(&mut self, kw: &'static str, e: &Expr) -> Doc<'a> {
        concat([Doc::text(kw), Doc::text(" "), self.expr(e)])
    }

    /// `kw name = e`: `compute`, `compose`, `guard`, `score`.
    fn binding(&mut self, kw: &'static str, name: &Ident, e: &Expr) -> Doc<'a> {
        concat([Doc::text(kw), Doc::text(" "), self.name(name), Doc::text(" = "), self.expr(e)])
    }

    /// A name's text, borrowed from the source where it was read.
    pub(super) fn name(&self, ident: &Ident) -> Doc<'a> {
        match self.text.get(ident.span.range()) {
            Some(text) if *text == *ident.name => Doc::text(text),
            _ => Doc::text(ident.name.to_string()),
        }
    }

    fn param(&mut self, kw: &str, p: &Param) -> Doc<'a> {
        let kw = if kw.is_empty() { String::new() } else { format!("{kw} ") };
        let mut parts = vec![Doc::text(format!("{kw}{}: {}", p.name.name, type_text(&p.ty)))];
        if let Some(default) = &p.default {
            parts.push(Doc::text(" = "));
            parts.push(self.expr(default));
        }
        if let Some(description) = &p.description {
            parts.push(Doc::text(" "));
            parts.push(self.expr(description));
        }
        concat(parts)
    }

    fn implementation(&mut self, i: &Implementation) -> Doc<'a> {
        match i {
            Implementation::Returns(e, _) => self.keyed("returns", e),
            Implementation::Exec(args, _) => self.words("exec", args),
            Implementation::Http { post, url, .. } => {
                self.keyed(if *post { "http post" } else { "http get" }, url)
            }
            Implementation::Builtin { name, config, .. } => {
                let mut parts = vec![self.keyed("builtin", name)];
                if let Some(config) = config {
                    parts.push(Doc::text(" "));
                    parts.push(self.expr(config));
                }
                concat(parts)
            }
            Implementation::Native(None, _) => Doc::text("native"),
            Implementation::Native(Some(name), _) => self.keyed("native", name),
            Implementation::Mcp { server, tool, .. } => {
                concat([Doc::text("mcp "), self.name(server), Doc::text(" "), self.expr(tool)])
            }
        }
    }

    /// A keyword and its words: `exec "a" "b"`, `command "a" "b"`.
    fn words(&mut self, kw: &str, words: &[Expr]) -> Doc<'a> {
        let mut parts = vec![Doc::text(kw.to_owned())];
        for word in words {
            parts.push(Doc::text(" "));
            parts.push(self.expr(word));
        }
        concat(parts)
    }

    fn node(&mut self, node: &Node) -> Doc<'a> {
        match node {
            Node::Input(p) => self.param("input", p),
            Node::Compute(name, e, _) => self.binding("compute", name, e),
            Node::Compose(name, e, _) => self.binding("compose", name, e),
            Node::Guard(g) => {
                let condition = self.binding("guard", &g.name, &g.condition);
                match &g.message {
                    Some(message) => {
                        let message = concat([Doc::Line, Doc::text("else "), self.expr(message)]);
                        concat([condition, message.nest()]).group()
                    }
                    None => condition,
                }
            }
        }
    }

    fn test_stmt(&mut self, t: &TestStmt) -> Doc<'a> {
        match t {
            TestStmt::Run { contract, args, span } => concat([
                Doc::text(format!("run {}", contract.name)),
                self.args(args, span.end as usize),
            ]),
            TestStmt::Mock { tool, args, answer, .. } => {
                let mut parts = vec![Doc::text(format!("mock {}", tool.name))];
                let answer_at = match answer {
                    MockAnswer::Returns(e) | MockAnswer::Fails(e) => start(e.span),
                };
                if let Some(args) = args {
                    let close = self.text[..answer_at].rfind(')').unwrap_or(answer_at);
                    parts.push(self.args(args, close));
                }
                let answer = match answer {
                    MockAnswer::Returns(e) => self.keyed("returns", e),
                    MockAnswer::Fails(e) => self.keyed("fails", e),
                };
                parts.push(concat([Doc::Line, answer]).nest());
                concat(parts).group()
            }
            TestStmt::ExpectCalls { tool, args, op, count, .. } => {
                let mut parts = vec![Doc::text(format!("expect_calls {}", tool.name))];
                if let Some(args) = args {
                    let at = start(count.span);
                    let close = self.text[..at].rfind(')').unwrap_or(at);
                    parts.push(self.args(args, close));
                }
                parts.push(Doc::text(format!(" {} ", op.symbol())));
                parts.push(self.expr(count));
                concat(parts).group()
            }
            TestStmt::Replay(e, _) => self.keyed("replay", e),
            TestStmt::Expect(e, _) => self.keyed("expect", e),
            TestStmt::ExpectError(e, _) => self.keyed("expect_error", e),
            TestStmt::Snapshot { calls, .. } => {
                Doc::text(if *calls { "snapshot calls" } else { "snapshot" })
            }
            TestStmt::Decide { tool, denial: None, .. } => {
                Doc::text(format!("approve {}", tool.name))
            }
            TestStmt::Decide { tool, denial: Some(reason), .. } => {
                concat([Doc::text(format!("deny {} ", tool.name)), self.expr(reason)])
            }
        }
    }

    fn eval_stmt(&mut self, e: &EvalStmt) -> Doc<'a> {
        match e {
            EvalStmt::Run(contract, _) => Doc::text(format!("run {}", contract.name)),
            EvalStmt::Dataset(e, _) => self.keyed("dataset", e),
            EvalStmt::Repeat(e, _) => self.keyed("repeat", e),
            EvalStmt::Require(e, _) => self.keyed("require", e),
            EvalStmt::Score { name, value, .. } => self.binding("score", name, value),
        }
    }
}

fn keyed_settings<'a>(
    kw: &'static str,
    settings: &'a [Setting<Expr>],
) -> impl Iterator<Item = (usize, Stmt<'a>)> {
    settings.iter().map(move |s| (start(s.span), Stmt::Keyed(kw, &s.value)))
}

/// Where the closing bracket of a construct spanning `span` is.
fn close_of(span: crate::source::Span) -> usize {
    (span.end as usize).saturating_sub(1)
}

fn item_start(item: &Item) -> usize {
    start(match item {
        Item::Use(u) => u.span,
        Item::Tool(t) => t.span,
        Item::Agent(a) => a.span,
        Item::Provider(p) => p.span,
        Item::Contract(c) => c.span,
        Item::Type(t) => t.span,
        Item::Enum(e) => e.span,
        Item::Test(t) => t.span,
        Item::Mcp(m) => m.span,
        Item::Eval(e) => e.span,
    })
}

fn runner_span(runner: &Runner) -> crate::source::Span {
    match runner {
        Runner::Inline(span) | Runner::ThreadPool(_, span) => *span,
    }
}

fn join_names(names: &[Ident]) -> String {
    names.iter().map(|n| &*n.name).collect::<Vec<_>>().join(", ")
}

fn type_text(ty: &TypeExpr) -> String {
    let item = ty.item.as_ref().map(|i| format!("<{}>", type_text(i))).unwrap_or_default();
    format!("{}{item}{}", ty.name.name, if ty.nullable { "?" } else { "" })
}
