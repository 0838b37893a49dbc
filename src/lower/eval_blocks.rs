//! `eval` blocks: the contract each row runs, the dataset, the number of
//! samples, the scores and the `require`d means.
//!
//! An eval needs exactly one `run` and one `dataset` (a missing file is a
//! warning: it may be made before the eval runs); `repeat` is a whole
//! number, 1 or more. A score reads the contract's outputs by name, the
//! row's `inputs` (typed as the contract's inputs) and `expected` (`any`),
//! and must be a boolean (a rate) or a number (a mean). A score that is a
//! call of an agent or a contract is a judge: an agent's `result` must be
//! a number, a boolean or a record with a numeric or boolean `score`; a
//! contract must have such a `score` output. `require` conditions read the
//! scores' means by name and must be boolean.

use std::collections::HashMap;
use std::sync::Arc;

use super::Lowerer;
use super::calls::Callee;
use super::expr::Scope;
use super::names::Decl;
use crate::ast::{self, EvalStmt};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, AgentId, ContractId, Judge, ScoreKind, ScoreValue, Type, TypeKind};
use crate::source::{FileId, Span};

impl Lowerer<'_> {
    /// Lowers every eval block of the program.
    pub(super) fn lower_evals(&mut self, contracts: &[ir::Contract]) -> Vec<ir::Eval> {
        let decls = self.decls;
        let mut seen: HashMap<String, &ast::Eval> = HashMap::new();
        let mut evals = Vec::with_capacity(decls.evals.len());
        for &(file, eval) in &decls.evals {
            let Some(name) = self.expect_plain_string(&eval.name, "an eval name") else { continue };
            if let Some(first) = seen.insert(name.clone(), eval) {
                self.push(
                    Diagnostic::error(
                        Code::Duplicate,
                        eval.name.span,
                        format!("eval `{name}` is declared twice"),
                    )
                    .label("declared again here")
                    .note(first.name.span, "first declared here")
                    .help("give each eval its own name (saved results and baselines are matched by it)"),
                );
            }
            if let Some(lowered) = self.lower_eval(file, name, eval, contracts) {
                evals.push(lowered);
            }
        }
        evals
    }

    fn lower_eval(
        &mut self,
        file: FileId,
        name: String,
        eval: &ast::Eval,
        contracts: &[ir::Contract],
    ) -> Option<ir::Eval> {
        let (mut runs, mut datasets, mut repeats) = (vec![], vec![], vec![]);
        let (mut scores, mut requires) = (vec![], vec![]);
        for stmt in &eval.statements {
            match stmt {
                EvalStmt::Run(..) => runs.push(stmt),
                EvalStmt::Dataset(..) => datasets.push(stmt),
                EvalStmt::Repeat(..) => repeats.push(stmt),
                EvalStmt::Score { .. } => scores.push(stmt),
                EvalStmt::Require(..) => requires.push(stmt),
            }
        }
        let repeat = match self.single(&repeats, |s| s.span(), "repeat") {
            Some(EvalStmt::Repeat(count, _)) => self.expect_repeat(count),
            _ => Some(1),
        };
        let dataset = self.single(&datasets, |s| s.span(), "dataset").and_then(|stmt| {
            let EvalStmt::Dataset(path, _) = stmt else { return None };
            let written = self.expect_plain_string(path, "a dataset path")?;
            let dir = self.sources[file].dir();
            let resolved = dir.join(written);
            if !resolved.exists() {
                let message = format!("dataset `{}` does not exist", resolved.display());
                self.missing_file(path, &message, dir);
            }
            Some(resolved)
        });
        let run = self.single(&runs, |s| s.span(), "run");
        for (what, present, help) in [
            ("run", run.is_some(), "add `run Contract`: each row's `inputs` are its inputs"),
            ("dataset", !datasets.is_empty(), "add `dataset \"rows.jsonl\"`: one row a line"),
        ] {
            if !present {
                self.push(
                    Diagnostic::error(
                        Code::EvalStatement,
                        eval.span,
                        format!("eval `{name}` has no `{what}`"),
                    )
                    .label(format!("no `{what}`"))
                    .help(help),
                );
            }
        }
        let Some(EvalStmt::Run(contract, _)) = run else { return None };
        let id = self.expect_contract(contract, "an eval runs a contract: `run Contract`")?;
        let scores = self.lower_scores(&name, id, &scores, contracts);
        let requires = self.lower_requires(&name, &scores, &requires);
        Some(ir::Eval {
            name,
            file,
            contract: id,
            dataset: dataset?,
            repeat: repeat?,
            scores,
            requires,
            span: eval.span,
        })
    }

    /// `repeat N`: a whole number, 1 or more.
    fn expect_repeat(&mut self, count: &ast::Expr) -> Option<u32> {
        let n = match count.kind {
            ast::ExprKind::Integer(n) => u32::try_from(n).ok().filter(|&n| n >= 1),
            _ => None,
        };
        if n.is_none() {
            self.push(
                Diagnostic::error(Code::EvalStatement, count.span, "`repeat` takes a count")
                    .label("not a whole number, 1 or more")
                    .help("write the samples of each row: `repeat 3`"),
            );
        }
        n
    }

    fn lower_scores(
        &mut self,
        eval: &str,
        contract: ContractId,
        stmts: &[&EvalStmt],
        contracts: &[ir::Contract],
    ) -> Vec<ir::Score> {
        let declared = &contracts[contract.index()];
        let mut names: Vec<&str> = declared.outputs.iter().map(|o| o.name.as_str()).collect();
        names.extend(["inputs", "expected"]);
        let scope = Scope::new(names, "output", format!("contract `{}`", declared.name));
        let mut types: Vec<Type> =
            declared.outputs.iter().map(|o| output_type(declared, o)).collect();
        let inputs = ir::Record {
            name: format!("{} inputs", declared.name),
            fields: self.contract_inputs[contract.index()].clone(),
            span: self.decls.contracts[contract.index()].name.span,
        };
        types.push(Type::new(TypeKind::Record(Arc::new(inputs))));
        types.push(Type::any());
        let types: ir::Types = types.into_iter().collect();
        let mut seen: HashMap<&str, Span> = HashMap::new();
        let mut scores = Vec::with_capacity(stmts.len());
        for stmt in stmts {
            let EvalStmt::Score { name, value, span } = stmt else { continue };
            if let Some(first) = seen.insert(&name.name, name.span) {
                self.push(
                    Diagnostic::error(
                        Code::Duplicate,
                        name.span,
                        format!("eval `{eval}` has two scores `{}`", name.name),
                    )
                    .label("declared again here")
                    .note(first, "first declared here")
                    .help("give each score its own name"),
                );
            }
            let (value, ty) = match self.judge_of(value) {
                Some(judge) => self.lower_judge(judge, value, &scope),
                None => {
                    let expr = self.lower_expr(value, &scope);
                    let ty = self.infer(&expr, &types);
                    (ScoreValue::Expr(expr), ty)
                }
            };
            // A wrong score is reported and kept: `require`s may name it.
            let kind = self
                .score_kind(&name.name, &ty, value_span(&value, *span))
                .unwrap_or(ScoreKind::Unknown);
            scores.push(ir::Score { name: name.name.to_string(), value, kind, span: *span });
        }
        scores
    }

    /// The agent or contract a score's whole expression calls, if any.
    fn judge_of(&self, value: &ast::Expr) -> Option<Judge> {
        let ast::ExprKind::Call(call) = &value.kind else { return None };
        match self.decls.get(&call.callee.name)? {
            Decl::Agent(i) => Some(Judge::Agent(AgentId::from_index(i))),
            Decl::Contract(i) => Some(Judge::Contract(ContractId::from_index(i))),
            _ => None,
        }
    }

    /// A judge's call: its arguments, and the type of the score it gives.
    fn lower_judge(
        &mut self,
        judge: Judge,
        value: &ast::Expr,
        scope: &Scope<'_>,
    ) -> (ScoreValue, Type) {
        let ast::ExprKind::Call(call) = &value.kind else { unreachable!("a judge is a call") };
        let (params, what) = match judge {
            Judge::Agent(id) => (self.agents[id.index()].inputs.clone(), "agent"),
            Judge::Contract(id) => (self.contract_inputs[id.index()].clone(), "contract"),
        };
        let callee = Callee { ident: &call.callee, what, params: &params, partial: false };
        let args = self.lower_args(&callee, &call.args, scope);
        let ty = match judge {
            Judge::Agent(id) => score_field(
                self.agents[id.index()]
                    .result
                    .clone()
                    .unwrap_or_else(|| Type::new(TypeKind::String)),
            ),
            Judge::Contract(_) => self.contract_score(judge, &call.callee),
        };
        (ScoreValue::Judge { judge, args }, ty)
    }

    /// The type of a contract judge's `score` output (reported when it has none).
    fn contract_score(&mut self, judge: Judge, callee: &ast::Ident) -> Type {
        let Judge::Contract(id) = judge else { return Type::any() };
        let body = &self.decls.contracts[id.index()];
        let has_score = body
            .outputs
            .iter()
            .any(|o| o.alias.as_ref().or(o.path.last()).is_some_and(|name| &*name.name == "score"));
        if !has_score {
            self.push(
                Diagnostic::error(
                    Code::ScoreType,
                    callee.span,
                    format!("judge contract `{}` has no `score` output", callee.name),
                )
                .label("its outputs have no `score`")
                .help("add `output ... as score`: a number in [0, 1] or a boolean"),
            );
            return Type::any();
        }
        // The output's type is known once the contract is typed; the run
        // checks the value.
        Type::any()
    }

    /// What a score of type `ty` is, reported when it is neither a boolean
    /// nor a number.
    fn score_kind(&mut self, name: &str, ty: &Type, span: Span) -> Option<ScoreKind> {
        match ty.kind {
            TypeKind::Boolean => Some(ScoreKind::Rate),
            TypeKind::Integer | TypeKind::Float => Some(ScoreKind::Number),
            TypeKind::Any => Some(ScoreKind::Unknown),
            _ => {
                self.push(
                    Diagnostic::error(
                        Code::ScoreType,
                        span,
                        format!("score `{name}` is `{ty}`, not a boolean or a number"),
                    )
                    .label(format!("`{ty}`"))
                    .help(
                        "a score is a boolean (a rate), a number in [0, 1], or a judge whose result is one of those or a record with a `score` field",
                    ),
                );
                None
            }
        }
    }

    /// `require` conditions over the scores' means.
    fn lower_requires(
        &mut self,
        eval: &str,
        scores: &[ir::Score],
        stmts: &[&EvalStmt],
    ) -> Vec<ir::Require> {
        let names = scores.iter().map(|s| s.name.as_str()).collect();
        let scope = Scope::new(names, "score", format!("eval `{eval}`"));
        let types: ir::Types =
            std::iter::repeat_n(Type::new(TypeKind::Float), scores.len()).collect();
        stmts
            .iter()
            .filter_map(|stmt| {
                let EvalStmt::Require(written, _) = stmt else { return None };
                let condition = self.lower_expr(written, &scope);
                self.expect_boolean(&condition, &types, "a `require` condition");
                let text = self.sources[written.span.file].text[written.span.range()].to_owned();
                Some(ir::Require { condition, text })
            })
            .collect()
    }
}

/// The type an output of `contract` reads: its node's, descended through
/// record fields (`any` past what is known).
fn output_type(contract: &ir::Contract, output: &ir::Output) -> Type {
    let mut ty = contract.types.get(output.node.index()).cloned().unwrap_or_else(Type::any);
    for field in &output.fields {
        ty = ty.record().and_then(|r| r.field(field)).map_or_else(Type::any, |f| f.ty.clone());
    }
    ty
}

/// An agent judge's score type from its result: the `score` field of a
/// record that has one, else the result itself.
fn score_field(ty: Type) -> Type {
    match ty.record().and_then(|r| r.field("score")) {
        Some(field) => field.ty.clone(),
        None => ty,
    }
}

/// Where a score's value is written (its whole statement when unknown).
fn value_span(value: &ScoreValue, statement: Span) -> Span {
    match value {
        ScoreValue::Expr(expr) => expr.span,
        ScoreValue::Judge { .. } => statement,
    }
}
