//! Expressions: names resolved to variables, pure functions resolved and
//! their argument counts checked, calls of tools, agents and contracts
//! refused (they may only be a node's whole expression, see `calls.rs`).
//!
//! Every expression lowers to an [`ir::Expr`], even a wrong one (a `null`
//! literal stands in), so one pass reports every problem.

use std::cell::Cell;
use std::hash::BuildHasher;
use std::rc::Rc;

use hashbrown::DefaultHashBuilder;
use serde_json::Number;

use super::Lowerer;
use super::names::Decl;
use super::vars::Vars;
use crate::ast::{self, ExprKind, StringPart};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, Function, Part};
use crate::source::Span;
use crate::suggest::{did_you_mean, list, with_article};
use crate::value::Val;

/// The names an expression may read: nodes of a contract, params of a
/// tool or inputs of an agent, each with its variable number; inside a
/// `for`, also its item. The names are shared by a `for`'s scope, not
/// copied, so lowering stays linear in the number of `for` nodes.
pub(super) struct Scope<'s> {
    /// Names in declaration order: variable `i` is the `i`-th.
    names: Rc<Names<'s>>,
    /// The variable of each name (the first when repeated), found by the
    /// name's hash: four bytes a name, its text being in `names` (a
    /// contract may have a million nodes).
    vars: Rc<Vars>,
    hasher: DefaultHashBuilder,
    /// A `for`'s item: its name (hiding a node of that name) and variable.
    item: Option<(&'s str, u32)>,
    /// What the names are: "node", "param", "input".
    pub(super) what: &'static str,
    /// Whose they are: "contract `Checkout`".
    pub(super) owner: String,
    /// Whether a name was read at or after the node being lowered.
    order: Rc<Order>,
}

/// What [`Scope::entering`] and [`Scope::var`] tell of a contract's order:
/// when every node reads only nodes declared before it, the declaration
/// order is one the graph allows (see `Lowerer::lower_contracts`).
#[derive(Default)]
struct Order {
    /// The variable of the node being lowered.
    node: Cell<u32>,
    /// A name read was that node's or a later one's.
    ahead: Cell<bool>,
}

/// The names of a [`Scope`]: a list, or the text at each name's span (a
/// contract's nodes: a million names are not listed a second time).
enum Names<'s> {
    List(Vec<&'s str>),
    Spans(&'s str, &'s [Span]),
}

impl<'s> Names<'s> {
    fn len(&self) -> usize {
        match self {
            Names::List(names) => names.len(),
            Names::Spans(_, spans) => spans.len(),
        }
    }

    fn get(&self, i: usize) -> &'s str {
        match *self {
            Names::List(ref names) => names[i],
            Names::Spans(text, spans) => &text[spans[i].range()],
        }
    }
}

impl<'s> Scope<'s> {
    /// A scope of `names`, numbered in order; a repeated name keeps its
    /// first number.
    pub(super) fn new(names: Vec<&'s str>, what: &'static str, owner: String) -> Self {
        Self::of(Names::List(names), what, owner).0
    }

    /// A scope of the names written at `spans` of `text`, numbered in
    /// order, and the repeated names: the place of each repetition with
    /// the variable of its first (found while the scope is built, so a
    /// million names are not looked up a second time).
    pub(super) fn of_spans(
        text: &'s str,
        spans: &'s [Span],
        what: &'static str,
        owner: String,
    ) -> (Self, Vec<(usize, u32)>) {
        Self::of(Names::Spans(text, spans), what, owner)
    }

    fn of(names: Names<'s>, what: &'static str, owner: String) -> (Self, Vec<(usize, u32)>) {
        let hasher = DefaultHashBuilder::default();
        let (vars, repeated) = Vars::of(
            names.len(),
            |i| hasher.hash_one(names.get(i)),
            |v, i| names.get(v as usize) == names.get(i),
        );
        let scope = Self {
            names: Rc::new(names),
            vars: Rc::new(vars),
            hasher,
            item: None,
            what,
            owner,
            order: Rc::default(),
        };
        (scope, repeated)
    }

    /// This node-level scope with a `for`'s item `name` as the next
    /// variable, and that variable (a `for` is a node's whole expression,
    /// so `for`s do not nest).
    pub(super) fn with_item(&self, name: &'s str) -> (Self, u32) {
        let var = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let scope = Self {
            names: Rc::clone(&self.names),
            vars: Rc::clone(&self.vars),
            hasher: self.hasher.clone(),
            item: Some((name, var)),
            what: self.what,
            owner: self.owner.clone(),
            order: Rc::clone(&self.order),
        };
        (scope, var)
    }

    /// The variable `name` refers to.
    pub(super) fn var(&self, name: &str) -> Option<u32> {
        match self.item {
            Some((item, var)) if item == name => Some(var),
            _ => {
                let var = self
                    .vars
                    .find(self.hasher.hash_one(name), |v| self.names.get(v as usize) == name)?;
                if var >= self.order.node.get() {
                    self.order.ahead.set(true);
                }
                Some(var)
            }
        }
    }

    /// Notes that the names read next are read by variable `var`'s node.
    pub(super) fn entering(&self, var: u32) {
        self.order.node.set(var);
    }

    /// True when no name read since the scope was made was that of the
    /// node reading it or of a later one (names read outside nodes, from
    /// variable 0, count as later).
    pub(super) fn read_in_order(&self) -> bool {
        !self.order.ahead.get()
    }

    /// Notes that variable `var`, the first of its name, is being
    /// lowered: the names read next are likely to be its (see `vars.rs`).
    pub(super) fn note(&self, var: u32) {
        let name = self.names.get(var as usize);
        self.vars.note(self.hasher.hash_one(name), var);
    }

    /// The name of variable `i` (a name of the scope's list).
    pub(super) fn name(&self, i: usize) -> &'s str {
        self.names.get(i)
    }

    /// Every name, for "did you mean".
    pub(super) fn names(&self) -> impl Iterator<Item = &'s str> + '_ {
        (0..self.names.len()).map(|i| self.names.get(i)).chain(self.item.map(|(name, _)| name))
    }
}

impl Lowerer<'_> {
    /// Lowers an expression over `scope`, reporting every problem in it.
    pub(super) fn lower_expr(&mut self, expr: &ast::Expr, scope: &Scope<'_>) -> ir::Expr {
        let span = expr.span;
        let kind = match &expr.kind {
            ExprKind::Null => ir::ExprKind::Literal(Val::Null),
            ExprKind::Bool(b) => ir::ExprKind::Literal(Val::Bool(*b)),
            ExprKind::Integer(n) => ir::ExprKind::Literal(Val::int(*n)),
            ExprKind::Float(x) => {
                ir::ExprKind::Literal(Number::from_f64(*x).map_or(Val::Null, Val::Number))
            }
            ExprKind::String(parts) => self.lower_string(parts, scope),
            ExprKind::Array(items) => {
                ir::ExprKind::Array(items.iter().map(|e| self.lower_expr(e, scope)).collect())
            }
            ExprKind::Object(entries) => ir::ExprKind::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.name.to_string(), self.lower_expr(v, scope)))
                    .collect(),
            ),
            ExprKind::Name => {
                let sources = self.sources;
                self.lower_name(sources.slice(expr.span), expr.span, scope)
            }
            ExprKind::Field(field) => {
                let (inner, name) = &**field;
                ir::ExprKind::Field(Box::new((self.lower_expr(inner, scope), name.name.clone())))
            }
            ExprKind::Index(a, b) => ir::ExprKind::Index(
                Box::new(self.lower_expr(a, scope)),
                Box::new(self.lower_expr(b, scope)),
            ),
            ExprKind::Unary(op, inner) => {
                ir::ExprKind::Unary(*op, Box::new(self.lower_expr(inner, scope)))
            }
            ExprKind::Binary(op, a, b) => ir::ExprKind::Binary(
                *op,
                Box::new(self.lower_expr(a, scope)),
                Box::new(self.lower_expr(b, scope)),
            ),
            ExprKind::If(parts) => {
                let (c, a, b) = &**parts;
                ir::ExprKind::If(Box::new([
                    self.lower_expr(c, scope),
                    self.lower_expr(a, scope),
                    self.lower_expr(b, scope),
                ]))
            }
            ExprKind::Call(call) => self.lower_function_call(&call.callee, &call.args, scope),
            ExprKind::Match(..) | ExprKind::For(_) | ExprKind::Try(_) => {
                self.nested_control(expr);
                ir::ExprKind::Literal(Val::Null)
            }
        };
        ir::Expr { kind, span }
    }

    /// A string: a literal when it has no `{...}`, else an interpolation.
    fn lower_string(&mut self, parts: &[StringPart], scope: &Scope<'_>) -> ir::ExprKind {
        if parts.iter().all(|p| matches!(p, StringPart::Text(_))) {
            let text: String = parts
                .iter()
                .map(|p| match p {
                    StringPart::Text(t) => t.as_str(),
                    StringPart::Expr(_) => "",
                })
                .collect();
            return ir::ExprKind::Literal(Val::string(text));
        }
        ir::ExprKind::Interpolate(
            parts
                .iter()
                .map(|p| match p {
                    StringPart::Text(t) => Part::Text(t.clone()),
                    StringPart::Expr(e) => Part::Expr(self.lower_expr(e, scope)),
                })
                .collect(),
        )
    }

    /// A name: the variable it refers to, or an unknown-name error.
    fn lower_name(&mut self, name: &str, span: Span, scope: &Scope<'_>) -> ir::ExprKind {
        if let Some(var) = scope.var(name) {
            return ir::ExprKind::Var(var);
        }
        let mut diagnostic =
            Diagnostic::error(Code::UnknownName, span, format!("unknown name `{name}`"))
                .label(format!("not {} of {}", with_article(scope.what), scope.owner));
        diagnostic = match self.decls.get(name) {
            Some(Decl::Type(_)) => diagnostic.help(format!("`{name}` is a type, not a value")),
            Some(Decl::Enum(_)) => diagnostic.help(format!(
                "`{name}` is an enum, not a value; compare with a variant's text: `x == \"high\"`"
            )),
            Some(decl) => diagnostic.help(format!(
                "`{name}` is {}; it can only be called as a node's whole expression",
                decl.a_kind()
            )),
            None => diagnostic
                .maybe_help(literal_spelling(name).or_else(|| did_you_mean(name, scope.names()))),
        };
        self.push(diagnostic);
        ir::ExprKind::Literal(Val::Null)
    }

    /// A call inside an expression: a pure function with positional
    /// arguments. Tools, agents and contracts are refused here.
    fn lower_function_call(
        &mut self,
        callee: &ast::Ident,
        args: &[ast::Arg],
        scope: &Scope<'_>,
    ) -> ir::ExprKind {
        let mut values: Box<[ir::Expr]> =
            args.iter().map(|a| self.lower_expr(&a.value, scope)).collect();
        let name = &callee.name;
        let Some(function) = Function::from_name(name) else {
            self.report_bad_callee(callee);
            return ir::ExprKind::Literal(Val::Null);
        };
        for arg in args {
            if let Some(arg_name) = &arg.name {
                self.push(
                    Diagnostic::error(
                        Code::UnknownArgument,
                        arg_name.span,
                        format!("function `{name}` takes no named arguments"),
                    )
                    .label("named argument")
                    .help(format!("pass the value alone: `{name}(...)` arguments are positional")),
                );
            }
        }
        let (min, max) = function.arity();
        if args.len() < min || args.len() > max {
            let expected = match (min, max) {
                (a, b) if a == b => format!("{a} argument{}", if a == 1 { "" } else { "s" }),
                (a, b) if b >= 255 => {
                    format!("at least {a} argument{}", if a == 1 { "" } else { "s" })
                }
                (a, b) => format!("{a} to {b} arguments"),
            };
            self.push(
                Diagnostic::error(
                    Code::Arity,
                    callee.span,
                    format!("`{name}` takes {expected}, but {} were given", args.len()),
                )
                .label(format!("called with {}", args.len())),
            );
        }
        if function == Function::Matches {
            self.check_pattern(args);
        }
        if let (Function::File, Some(arg), Some(value)) =
            (function, args.first(), values.first_mut())
        {
            self.media_file(&arg.value, value);
        }
        ir::ExprKind::Call(function, values)
    }

    /// A `matches` pattern written as a plain string must be a valid
    /// regular expression; other patterns are checked when they run.
    fn check_pattern(&mut self, args: &[ast::Arg]) {
        let Some(arg) = args.get(1) else { return };
        self.check_literal_interpolations(&arg.value, "a `matches` pattern");
        let Some(text) = arg.value.as_plain_string() else { return };
        if let Err(reason) = ir::pattern(&text) {
            self.push(
                Diagnostic::error(Code::BadPattern, arg.value.span, "invalid regular expression")
                    .label(reason)
                    .help("the syntax is the `regex` crate's; write `\\\\.` for a literal dot"),
            );
        }
    }

    /// Warns about each interpolation of a literal in the string `expr`
    /// (`what`: "a `matches` pattern", "a description"): `"\\d{4}"` is
    /// `\d` and `4`, not the repetition `{4}` its writer meant.
    pub(super) fn check_literal_interpolations(&mut self, expr: &ast::Expr, what: &str) {
        let ExprKind::String(parts) = &expr.kind else { return };
        for part in parts {
            let ast::StringPart::Expr(inner) = part else { continue };
            let text = match &inner.kind {
                ExprKind::Integer(n) => n.to_string(),
                ExprKind::Float(x) => x.to_string(),
                ExprKind::Bool(b) => b.to_string(),
                ExprKind::Null => "null".to_owned(),
                ExprKind::String(_) => match inner.as_plain_string() {
                    Some(text) => text,
                    None => continue,
                },
                _ => continue,
            };
            self.push(
                Diagnostic::warning(
                    Code::LiteralInterpolation,
                    inner.span,
                    format!("`{{{text}}}` in {what} is an interpolation, not text"),
                )
                .label(format!("this becomes `{text}`, without the braces"))
                .help(format!(
                    "for the braces (a regular expression's repetition), write `\\{{{text}}}`, \
                     or use a raw string `r\"...\"` (no escapes, no interpolation), \
                     e.g. `r\"\\d{{4}}\"`"
                )),
            );
        }
    }

    /// A call of something that is not a pure function.
    fn report_bad_callee(&mut self, callee: &ast::Ident) {
        let name = &callee.name;
        let diagnostic = match self.decls.get(name) {
            Some(decl @ (Decl::Provider(_) | Decl::Type(_) | Decl::Enum(_))) => Diagnostic::error(
                Code::UnknownFunction,
                callee.span,
                format!("`{name}` is {}, not something to call", decl.a_kind()),
            )
            .label("not callable"),
            Some(decl) => Diagnostic::error(
                Code::CallPosition,
                callee.span,
                format!("{} `{name}` is called inside an expression", decl.kind()),
            )
            .label("not a node's whole expression")
            .help(format!(
                "give the call its own node, e.g. `{} result = {name}(...)`, and use `result` here",
                if decl.kind() == "contract" { "compose" } else { "compute" }
            )),
            None => {
                // A misspelt tool, agent or contract is as likely as a
                // misspelt function.
                let functions: Vec<&str> = Function::ALL.iter().map(|f| f.name()).collect();
                let callables = self.decls.names_where(|d| !matches!(d, Decl::Provider(_)));
                Diagnostic::error(
                    Code::UnknownFunction,
                    callee.span,
                    format!("unknown function `{name}`"),
                )
                .label("not a function, tool, agent or contract")
                .maybe_help(
                    did_you_mean(name, functions.iter().chain(&callables).copied())
                        .or_else(|| Some(format!("functions are {}", list(&functions)))),
                )
            }
        };
        self.push(diagnostic);
    }
}

/// The spelling of `true`, `false` or `null` that `name` was probably
/// meant to be (`True`, `None`, `nil`), as help.
fn literal_spelling(name: &str) -> Option<String> {
    let literal = match name.to_lowercase().as_str() {
        "true" => "true",
        "false" => "false",
        "null" | "none" | "nil" => "null",
        _ => return None,
    };
    Some(format!("write `{literal}` (literals are lower case)"))
}
