//! Dry runs (`ignite plan FILE --inputs FILE`): the pure nodes of a
//! contract evaluated on given inputs, and every effect the run would
//! perform listed in the order the graph starts them, with its arguments
//! where they are known, and `after NODE` where an argument waits on an
//! effect's result.
//!
//! Nothing here can perform an effect: the module reads the checked
//! program and calls only the pure evaluator (`eval`); it has no
//! toolbox, no model client and no store to call (a test runs it over
//! every example and fixture against a counting server and a tool that
//! writes a marker file).
//!
//! What a value that waits on an effect decides is not known: a `guard`,
//! an `if`/`match` or a `for` over such a value lists what it would do
//! for each outcome it cannot rule out (every arm; the body once, for each
//! item). A guard known to fail stops the run: the effects it gates are
//! not listed.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::eval::{self, Val};
use crate::ir::{Body, Call, Callee, ContractId, NodeKind, Pattern, Program};

/// An argument of an effect.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// Known before anything runs.
    Known(Value),
    /// Waits on the results of these effect nodes.
    After(Vec<String>),
}

/// One effect the run would perform.
#[derive(Debug, Clone, PartialEq)]
pub struct Effect {
    /// Where: `Triage.answer`, `Triage.lines[2]`, `Parent.child > Child.node`.
    pub path: String,
    /// `tool` or `agent`.
    pub kind: &'static str,
    /// The tool or agent.
    pub callee: String,
    /// Arguments by name.
    pub args: Vec<(String, Arg)>,
    /// When only some outcome of a value not yet known leads here: which.
    pub condition: Option<String>,
}

/// What a dry run found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DryRun {
    /// The contract.
    pub contract: String,
    /// The effects, in the order the run would start them.
    pub effects: Vec<Effect>,
    /// What would fail or stop the run (a missing input, a failing guard).
    pub problems: Vec<String>,
}

/// The dry run of `contract` on `inputs`.
#[must_use]
pub fn dry_run(program: &Program, contract: ContractId, inputs: &Map<String, Value>) -> DryRun {
    let given: Vec<(String, Known)> =
        inputs.iter().map(|(k, v)| (k.clone(), Known::Value(Val::from(v)))).collect();
    let mut dry = Dry { program, out: DryRun::default() };
    dry.out.contract = program[contract].name.clone();
    dry.contract(contract, &given, &program[contract].name, None);
    dry.out
}

/// A value in a dry run.
#[derive(Debug, Clone)]
enum Known {
    /// Known.
    Value(Val),
    /// Waits on these effect nodes.
    After(BTreeSet<String>),
}

impl Known {
    fn waits(&self) -> BTreeSet<String> {
        match self {
            Known::Value(_) => BTreeSet::new(),
            Known::After(nodes) => nodes.clone(),
        }
    }
}

struct Dry<'p> {
    program: &'p Program,
    out: DryRun,
}

impl Dry<'_> {
    /// Walks `id` with `inputs` at `path`; `condition` when only some
    /// outcome leads here. Returns the value of each node.
    fn contract(
        &mut self,
        id: ContractId,
        inputs: &[(String, Known)],
        path: &str,
        condition: Option<&str>,
    ) -> Vec<Known> {
        let contract = &self.program[id];
        let mut values = vec![Known::Value(Val::Null); contract.nodes.len()];
        let mut stopped: Option<String> = None;
        for &node_id in contract.graph.order() {
            let node = &contract[node_id];
            let at = format!("{path}.{}", node.name);
            let gated = contract.gated.contains(&node_id);
            let value = match &node.kind {
                NodeKind::Input(param) => self.input(param, inputs, &at),
                NodeKind::Compute(expr) => self.eval(expr, &values, None, &at),
                NodeKind::Guard { condition: test, message } => {
                    if stopped.is_none() && self.guard_fails(test, message.as_deref(), &values, &at)
                    {
                        stopped = Some(at.clone());
                    }
                    Known::Value(Val::Bool(true))
                }
                _ if gated && stopped.is_some() => Known::After(BTreeSet::from([at.clone()])),
                NodeKind::Call(call) => self.call(call, &values, None, &at, condition),
                NodeKind::Branch(branch) => self.branch(branch, &values, &at, condition),
                NodeKind::For(each) => self.collection(each, &values, &at, condition),
            };
            values[node_id.index()] = value;
        }
        values
    }

    /// An input's value: given, else its default.
    fn input(&mut self, param: &crate::ir::Param, inputs: &[(String, Known)], at: &str) -> Known {
        if let Some((_, value)) = inputs.iter().find(|(n, _)| *n == param.name) {
            return value.clone();
        }
        match &param.default {
            Some(default) => Known::Value(Val::from(default)),
            None => {
                if param.required() {
                    self.out.problems.push(format!("input `{at}` is missing"));
                }
                Known::Value(Val::Null)
            }
        }
    }

    /// True (and a problem noted) when the guard's condition is known
    /// and not `true`.
    fn guard_fails(
        &mut self,
        test: &crate::ir::Expr,
        message: Option<&crate::ir::Expr>,
        values: &[Known],
        at: &str,
    ) -> bool {
        match self.eval(test, values, None, at) {
            Known::Value(Val::Bool(true)) | Known::After(_) => false,
            Known::Value(_) => {
                let said = message
                    .map(|m| self.eval(m, values, None, at))
                    .and_then(|m| match m {
                        Known::Value(v) => v.as_str().map(str::to_owned),
                        Known::After(_) => None,
                    })
                    .unwrap_or_else(|| "its condition is false".to_owned());
                let text = format!("guard `{at}` fails ({said}): the effects it gates do not run");
                self.out.problems.push(text);
                true
            }
        }
    }

    /// The chosen arm of a branch on a known value; every arm, each with
    /// its condition, on a value that waits on an effect.
    fn branch(
        &mut self,
        branch: &crate::ir::Branch,
        values: &[Known],
        at: &str,
        condition: Option<&str>,
    ) -> Known {
        match self.eval(&branch.on, values, None, at) {
            Known::Value(on) => {
                let arm = branch.arms.iter().find(|arm| match &arm.pattern {
                    Pattern::Wildcard => true,
                    Pattern::Literal(v) => eval::equal(&Val::from(v), &on),
                });
                if let Some(arm) = arm {
                    return self.body(&arm.body, values, None, at, condition);
                }
                self.out.problems.push(format!("`{at}`: no arm fits {}", on.to_json()));
                Known::Value(Val::Null)
            }
            Known::After(waits) => {
                let mut all = waits.clone();
                let on = after_text(&waits);
                for (i, arm) in branch.arms.iter().enumerate() {
                    let when =
                        join_condition(condition, &format!("if arm {} is chosen ({on})", i + 1));
                    all.extend(self.body(&arm.body, values, None, at, Some(&when)).waits());
                }
                Known::After(all)
            }
        }
    }

    fn collection(
        &mut self,
        each: &crate::ir::Collection,
        values: &[Known],
        at: &str,
        condition: Option<&str>,
    ) -> Known {
        match self.eval(&each.items, values, None, at) {
            Known::Value(items) => {
                let Some(items) = items.as_array().map(<[Val]>::to_vec) else {
                    self.out
                        .problems
                        .push(format!("`{at}` iterates over a value that is not an array"));
                    return Known::Value(Val::Null);
                };
                let mut results = Vec::new();
                let mut waits = BTreeSet::new();
                for (i, item) in items.into_iter().enumerate() {
                    let item = Known::Value(item);
                    let keep = match &each.filter {
                        Some(filter) => self.eval(filter, values, Some(&item), at),
                        None => Known::Value(Val::Bool(true)),
                    };
                    let item_at = format!("{at}[{i}]");
                    let result = match keep {
                        Known::Value(Val::Bool(false)) => continue,
                        Known::Value(_) => {
                            self.body(&each.body, values, Some(&item), &item_at, condition)
                        }
                        Known::After(w) => {
                            let when = join_condition(
                                condition,
                                &format!("if its filter holds ({})", after_text(&w)),
                            );
                            self.body(&each.body, values, Some(&item), &item_at, Some(&when))
                        }
                    };
                    match result {
                        Known::Value(v) => results.push(v),
                        Known::After(w) => waits.extend(w),
                    }
                }
                if waits.is_empty() {
                    Known::Value(Val::Array(std::sync::Arc::new(results)))
                } else {
                    Known::After(waits)
                }
            }
            Known::After(w) => {
                let when =
                    join_condition(condition, &format!("once per item ({})", after_text(&w)));
                let item = Known::After(w.clone());
                let mut waits = w;
                waits.extend(
                    self.body(&each.body, values, Some(&item), &format!("{at}[]"), Some(&when))
                        .waits(),
                );
                Known::After(waits)
            }
        }
    }

    fn body(
        &mut self,
        body: &Body,
        values: &[Known],
        item: Option<&Known>,
        at: &str,
        condition: Option<&str>,
    ) -> Known {
        match body {
            Body::Pure(expr) => self.eval(expr, values, item, at),
            Body::Call(call) => self.call(call, values, item, at, condition),
        }
    }

    /// Lists the effect of `call` at `at` (a compose: its child's effects).
    fn call(
        &mut self,
        call: &Call,
        values: &[Known],
        item: Option<&Known>,
        at: &str,
        condition: Option<&str>,
    ) -> Known {
        let args: Vec<(String, Known)> = call
            .args
            .iter()
            .map(|(name, expr)| (name.clone(), self.eval(expr, values, item, at)))
            .collect();
        let (kind, callee) = match call.callee {
            Callee::Tool(t) => ("tool", self.program[t].name.clone()),
            Callee::Agent(a) => ("agent", self.program[a].name.clone()),
            Callee::Contract(c) => {
                let child = &self.program[c];
                let path = format!("{at} > {}", child.name);
                let values = self.contract(c, &args, &path, condition);
                let mut waits: BTreeSet<String> = values.iter().flat_map(Known::waits).collect();
                waits.extend(args.iter().flat_map(|(_, a)| a.waits()));
                return if waits.is_empty() {
                    let outputs: Map<String, Value> = child
                        .outputs
                        .iter()
                        .map(|o| (o.name.clone(), self.output(&values[o.node.index()], &o.fields)))
                        .collect();
                    Known::Value(Val::from(&Value::Object(outputs)))
                } else {
                    Known::After(waits)
                };
            }
        };
        let args = args
            .into_iter()
            .map(|(name, value)| {
                let arg = match value {
                    Known::Value(v) => Arg::Known(v.to_json()),
                    Known::After(w) => Arg::After(w.into_iter().collect()),
                };
                (name, arg)
            })
            .collect();
        self.out.effects.push(Effect {
            path: at.to_owned(),
            kind,
            callee,
            args,
            condition: condition.map(str::to_owned),
        });
        Known::After(BTreeSet::from([at.to_owned()]))
    }

    /// An output of a known child: the node's value, down `fields`.
    fn output(&self, value: &Known, fields: &[String]) -> Value {
        let Known::Value(v) = value else { return Value::Null };
        let mut json = v.to_json();
        for field in fields {
            json = json.get(field).cloned().unwrap_or(Value::Null);
        }
        json
    }

    /// `expr` over the nodes (and the item, one past them) when all it
    /// reads is known; what it waits on otherwise. A failure is a problem.
    fn eval(
        &mut self,
        expr: &crate::ir::Expr,
        values: &[Known],
        item: Option<&Known>,
        at: &str,
    ) -> Known {
        let slot = |v: u32| if v as usize == values.len() { item } else { values.get(v as usize) };
        let mut waits = BTreeSet::new();
        expr.visit_vars(&mut |v| {
            if let Some(known) = slot(v) {
                waits.extend(known.waits());
            }
        });
        if !waits.is_empty() {
            return Known::After(waits);
        }
        let scope: Vec<Val> = values
            .iter()
            .chain(item)
            .map(|k| match k {
                Known::Value(v) => v.clone(),
                Known::After(_) => Val::Null,
            })
            .collect();
        match eval::eval(expr, scope.as_slice()) {
            Ok(value) => Known::Value(value),
            Err(e) => {
                self.out.problems.push(format!("`{at}` would fail: {}", e.message));
                Known::Value(Val::Null)
            }
        }
    }
}

/// `after Triage.lookup, Triage.answer`.
fn after_text(waits: &BTreeSet<String>) -> String {
    format!("after {}", waits.iter().map(String::as_str).collect::<Vec<_>>().join(", "))
}

fn join_condition(outer: Option<&str>, inner: &str) -> String {
    match outer {
        Some(outer) => format!("{outer}, {inner}"),
        None => inner.to_owned(),
    }
}

impl DryRun {
    /// One line per effect (`tool Lookup at Triage.lookup(sku: "A1")`),
    /// then the problems; says so when there is no effect.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = format!(
            "dry run of contract `{}`: {} effect(s), none performed\n",
            self.contract,
            self.effects.len()
        );
        for (i, effect) in self.effects.iter().enumerate() {
            let args: Vec<String> = effect
                .args
                .iter()
                .map(|(name, arg)| match arg {
                    Arg::Known(v) => format!("{name}: {v}"),
                    Arg::After(nodes) => format!("{name}: <after {}>", nodes.join(", ")),
                })
                .collect();
            let when = effect.condition.as_deref().map(|c| format!("  [{c}]")).unwrap_or_default();
            out.push_str(&format!(
                "{:>3}. {} {}({}) at {}{when}\n",
                i + 1,
                effect.kind,
                effect.callee,
                args.join(", "),
                effect.path
            ));
        }
        for problem in &self.problems {
            out.push_str(&format!("problem: {problem}\n"));
        }
        out
    }

    /// `{contract, effects: [{path, kind, callee, args, after, condition}], problems}`:
    /// a known argument under `args`, one that waits under `after` with the
    /// nodes it waits on.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let effects: Vec<Value> = self
            .effects
            .iter()
            .map(|e| {
                let mut known = Map::new();
                let mut after = Map::new();
                for (name, arg) in &e.args {
                    match arg {
                        Arg::Known(v) => known.insert(name.clone(), v.clone()),
                        Arg::After(nodes) => after.insert(name.clone(), json!(nodes)),
                    };
                }
                json!({"path": e.path, "kind": e.kind, "callee": e.callee, "args": known,
                       "after": after, "condition": e.condition})
            })
            .collect();
        json!({"contract": self.contract, "effects": effects, "problems": self.problems})
    }
}
