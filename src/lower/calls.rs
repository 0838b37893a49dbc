//! Node calls: `compute x = Tool(...)`, `compute x = Agent(...)`,
//! `compose x = Contract(...)`, and their arguments.
//!
//! A call of a tool, agent or contract must be a node's whole expression,
//! so each effect is one node of the graph. Arguments are named; a bare
//! name `sku` is short for `sku: sku`. Unknown and missing arguments are
//! reported, and a constant argument must be of the param's type.

use std::collections::HashMap;

use super::Lowerer;
use super::expr::Scope;
use super::names::Decl;
use super::types::{a_kind, constant, show};
use crate::ast::{self, ExprKind};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, AgentId, ContractId, Function, ToolId};
use crate::source::Span;
use crate::suggest::{did_you_mean, list};

/// What is being called, for messages: "tool `DatabaseLookup`".
pub(super) struct Callee<'c> {
    pub(super) ident: &'c ast::Ident,
    pub(super) what: &'static str,
    pub(super) params: &'c [ir::Param],
    /// Required params may be left out (a test's `mock Tool(args)` pattern).
    pub(super) partial: bool,
}

/// The statement a call is in: `compute` calls tools and agents,
/// `compose` calls contracts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stmt {
    /// `compute`.
    Compute,
    /// `compose`.
    Compose,
}

/// What [`Lowerer::lower_call`] made of an expression.
pub(super) enum Lowered {
    /// Not a call of a tool, agent or contract: a pure expression.
    NotACall,
    /// A call the statement allows.
    Call(ir::Call),
    /// A call of the wrong kind, already reported.
    Reported,
}

impl Lowerer<'_> {
    /// A call of a tool, agent or contract that `stmt` may make. Contracts
    /// met while lowering are pushed to `composes` with the call's place.
    pub(super) fn lower_call(
        &mut self,
        expr: &ast::Expr,
        scope: &Scope<'_>,
        stmt: Stmt,
        composes: &mut Vec<(usize, Span)>,
    ) -> Lowered {
        let ExprKind::Call(call) = &expr.kind else { return Lowered::NotACall };
        let (ident, args) = (&call.callee, &call.args);
        let decl =
            self.decls.get(&ident.name).filter(|_| Function::from_name(&ident.name).is_none());
        match (stmt, decl) {
            (Stmt::Compute, Some(Decl::Tool(i))) => {
                let tools = std::mem::take(&mut self.tools);
                let callee =
                    Callee { ident, what: "tool", params: &tools[i].params, partial: false };
                let args = self.lower_args(&callee, args, scope);
                self.tools = tools;
                Lowered::Call(ir::Call {
                    callee: ir::Callee::Tool(ToolId::from_index(i)),
                    args,
                    catch: false,
                })
            }
            (Stmt::Compute, Some(Decl::Agent(i))) => {
                let agents = std::mem::take(&mut self.agents);
                let callee =
                    Callee { ident, what: "agent", params: &agents[i].inputs, partial: false };
                let args = self.lower_args(&callee, args, scope);
                self.agents = agents;
                Lowered::Call(ir::Call {
                    callee: ir::Callee::Agent(AgentId::from_index(i)),
                    args,
                    catch: false,
                })
            }
            (Stmt::Compose, Some(Decl::Contract(i))) => {
                composes.push((i, ident.span));
                let inputs = std::mem::take(&mut self.contract_inputs);
                let callee = Callee { ident, what: "contract", params: &inputs[i], partial: false };
                let args = self.lower_args(&callee, args, scope);
                self.contract_inputs = inputs;
                Lowered::Call(ir::Call {
                    callee: ir::Callee::Contract(ContractId::from_index(i)),
                    args,
                    catch: false,
                })
            }
            (Stmt::Compute, Some(Decl::Contract(_))) => {
                self.push(
                    Diagnostic::error(
                        Code::ComputeContract,
                        ident.span,
                        format!("`compute` of contract `{}`", ident.name),
                    )
                    .label("a contract runs as a child execution")
                    .help("use `compose` to run a contract: `compose x = Contract(...)`"),
                );
                Lowered::Reported
            }
            (Stmt::Compute, _) => Lowered::NotACall,
            (Stmt::Compose, decl) => {
                self.compose_non_contract(ident, decl);
                Lowered::Reported
            }
        }
    }

    /// `compose` of a tool, agent, function or unknown name.
    fn compose_non_contract(&mut self, ident: &ast::Ident, decl: Option<Decl>) {
        let contracts = self.decls.names_where(|d| matches!(d, Decl::Contract(_)));
        let (message, label, help) = match decl {
            Some(decl) => (
                format!("`compose` of {} `{}`", decl.kind(), ident.name),
                format!("{}, not a contract", decl.a_kind()),
                Some(format!("use `compute` to call {}", decl.a_kind())),
            ),
            None if Function::from_name(&ident.name).is_some() => (
                format!("`compose` of function `{}`", ident.name),
                "a function, not a contract".to_owned(),
                Some("use `compute` for an expression".to_owned()),
            ),
            None => (
                format!("`compose` of unknown contract `{}`", ident.name),
                "not a declared contract".to_owned(),
                did_you_mean(&ident.name, contracts),
            ),
        };
        self.push(
            Diagnostic::error(Code::ComposeNonContract, ident.span, message)
                .label(label)
                .maybe_help(help),
        );
    }

    /// `compose x = expr` where `expr` is not a call.
    pub(super) fn compose_needs_call(&mut self, span: Span) {
        self.push(
            Diagnostic::error(Code::ComposeNonContract, span, "`compose` needs a contract call")
                .label("not a call of a contract")
                .help("write `compose x = Contract(input: value)`, or use `compute` for an expression"),
        );
    }

    /// Named arguments checked against the callee's params, returned in
    /// param order.
    pub(super) fn lower_args(
        &mut self,
        callee: &Callee<'_>,
        args: &[ast::Arg],
        scope: &Scope<'_>,
    ) -> Vec<(String, ir::Expr)> {
        let mut given: HashMap<&str, (usize, Span)> = HashMap::new();
        let mut values: Vec<Option<ir::Expr>> = vec![None; callee.params.len()];
        for arg in args {
            let value = self.lower_expr(&arg.value, scope);
            // `name: value`, or a bare name standing for `name: name`.
            let (name, span): (&str, Span) = match (&arg.name, &arg.value.kind) {
                (Some(name), _) => (&name.name, name.span),
                (None, ExprKind::Name) => (self.sources.slice(arg.value.span), arg.value.span),
                _ => {
                    self.positional_argument(callee, arg);
                    continue;
                }
            };
            let Some(index) = callee.params.iter().position(|p| *p.name == *name) else {
                self.unknown_argument(callee, name, span);
                continue;
            };
            if let Some((_, first)) = given.insert(name, (index, span)) {
                self.push(
                    Diagnostic::error(
                        Code::Duplicate,
                        span,
                        format!("argument `{name}` is given twice"),
                    )
                    .label("given again")
                    .note(first, "first given here"),
                );
                continue;
            }
            self.check_argument_type(callee, &callee.params[index], &arg.value);
            values[index] = Some(value);
        }
        let missing: Vec<&str> = callee
            .params
            .iter()
            .zip(&values)
            .filter(|(p, v)| v.is_none() && p.required() && !given.contains_key(p.name.as_str()))
            .map(|(p, _)| p.name.as_str())
            .collect();
        if !missing.is_empty() && !callee.partial {
            let plural = if missing.len() == 1 { "" } else { "s" };
            self.push(
                Diagnostic::error(
                    Code::MissingArgument,
                    callee.ident.span,
                    format!(
                        "{} `{}` is missing argument{plural} {}",
                        callee.what,
                        callee.ident.name,
                        list(&missing)
                    ),
                )
                .label(format!("missing {}", list(&missing)))
                .help(format!(
                    "pass {}",
                    missing.iter().map(|m| format!("`{m}: ...`")).collect::<Vec<_>>().join(", ")
                )),
            );
        }
        callee.params.iter().zip(values).filter_map(|(p, v)| Some((p.name.clone(), v?))).collect()
    }

    fn positional_argument(&mut self, callee: &Callee<'_>, arg: &ast::Arg) {
        let names: Vec<&str> = callee.params.iter().map(|p| p.name.as_str()).collect();
        self.push(
            Diagnostic::error(
                Code::PositionalArgument,
                arg.value.span,
                format!("argument to {} `{}` has no name", callee.what, callee.ident.name),
            )
            .label("positional argument")
            .help(if names.is_empty() {
                format!("{} `{}` takes no arguments", callee.what, callee.ident.name)
            } else {
                format!("name it: `{}: ...` (params are {})", names[0], list(&names))
            }),
        );
    }

    fn unknown_argument(&mut self, callee: &Callee<'_>, name: &str, span: Span) {
        let names: Vec<&str> = callee.params.iter().map(|p| p.name.as_str()).collect();
        let help = did_you_mean(name, names.iter().copied()).unwrap_or_else(|| {
            if names.is_empty() {
                format!("{} `{}` takes no arguments", callee.what, callee.ident.name)
            } else {
                format!("{} `{}` takes {}", callee.what, callee.ident.name, list(&names))
            }
        });
        self.push(
            Diagnostic::error(
                Code::UnknownArgument,
                span,
                format!("{} `{}` has no param `{name}`", callee.what, callee.ident.name),
            )
            .label("unknown argument")
            .help(help),
        );
    }

    /// A constant argument must be of the param's type.
    fn check_argument_type(&mut self, callee: &Callee<'_>, param: &ir::Param, value: &ast::Expr) {
        let Some(literal) = constant(value) else { return };
        if param.ty.accepts(&literal) {
            return;
        }
        self.push(
            Diagnostic::error(
                Code::ArgumentType,
                value.span,
                format!(
                    "argument `{}` of {} `{}` must be `{}`, not {}",
                    param.name,
                    callee.what,
                    callee.ident.name,
                    param.ty,
                    a_kind(&literal)
                ),
            )
            .label(format!("`{}`", show(&literal)))
            .note(param.span, format!("`{}` is declared `{}` here", param.name, param.ty)),
        );
    }
}
