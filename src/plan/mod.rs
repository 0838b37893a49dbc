//! Plans: what a run of a contract would do at worst, before it does it.
//!
//! Input: a checked [`Program`] and a contract. Output: a [`Plan`] with,
//! per node that calls something and in total, the worst-case number of
//! model requests, the tool calls per tool, the approvals that may be
//! asked, a cost bound where providers declare a `price`, and the
//! assumptions behind the numbers. Nothing runs: the analysis reads the
//! program only (`dry.rs` evaluates pure nodes on given inputs, `check.rs`
//! turns plans into `check`'s budget diagnostics, `render.rs` prints them).
//!
//! How the worst case is counted:
//! - one run of an agent is at most `max_tool_iterations + 1` replies,
//!   plus `result_retries` repairs when it has a `result` (a repair does
//!   not give the tool turns back: the loop counts both apart);
//! - each reply is a request to a link of the fallback chain, with
//!   `retries + 1` attempts per link (a `script` link: one); the chain only
//!   moves forward, so `L` replies cost at most `sum(attempts) + (L - 1) *
//!   max(attempts)` requests (every link exhausted once, the rest of the
//!   replies on the link with the most attempts);
//! - a branch costs its costliest arm (per tool, the most calls of any arm);
//! - a `for` costs its body once per item: the item count is bounded by a
//!   guard `len(ITEMS) <= N` (or `<`) of the same contract over the same
//!   node path, or by a literal array; otherwise it is unbounded and the
//!   plan names the input to bound;
//! - a `compose` costs its contract's whole plan;
//! - only the nodes that the outputs and guards need are counted.
//!
//! The least number of requests (every agent answering at its first
//! request, every branch taking its cheapest arm, every `for` over no items
//! unless its size is fixed) is kept too: `check` fails a contract whose
//! `budget model_calls` even that exceeds.

mod check;
pub mod dry;
mod render;

use std::collections::BTreeMap;

use crate::ir::{
    Agent, BinaryOp, Body, Branch, Call, Callee, Collection, ContractId, Expr, ExprKind, Function,
    NodeId, NodeKind, Program, ProviderChoice, Tool,
};
use crate::value::Val;

pub use check::check;

/// A count that may have no bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Count {
    /// At most this many.
    At(u64),
    /// No bound is known.
    Unbounded,
}

impl Count {
    const ZERO: Count = Count::At(0);

    fn add(self, other: Count) -> Count {
        match (self, other) {
            (Count::At(a), Count::At(b)) => Count::At(a.saturating_add(b)),
            _ => Count::Unbounded,
        }
    }

    fn times(self, other: Count) -> Count {
        match (self, other) {
            (Count::At(0), _) | (_, Count::At(0)) => Count::ZERO,
            (Count::At(a), Count::At(b)) => Count::At(a.saturating_mul(b)),
            _ => Count::Unbounded,
        }
    }

    /// The number, when bounded.
    #[must_use]
    pub fn bound(self) -> Option<u64> {
        match self {
            Count::At(n) => Some(n),
            Count::Unbounded => None,
        }
    }
}

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Count::At(n) => write!(f, "{n}"),
            Count::Unbounded => f.write_str("unbounded"),
        }
    }
}

/// The calls of one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolCalls {
    /// Calls by tool nodes.
    pub calls: Count,
    /// Tool turns of agents offered the tool: a model may call it any
    /// number of times in each.
    pub agent_turns: Count,
}

/// What some part of a run costs at worst.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Worst {
    /// Model requests at worst.
    pub model_calls: Option<Count>,
    /// Model requests at least (when it runs to the end).
    pub least_model_calls: u64,
    /// Calls per tool, by declared name.
    pub tools: BTreeMap<String, ToolCalls>,
    /// Tool calls that may wait for a person's approval.
    pub approvals: Option<Count>,
    /// The cost bound in USD; `None` when some priced request has no bound
    /// (no `max_tokens`, or an unbounded count).
    pub usd: Option<f64>,
    /// True when some request it counts goes to a provider with a `price`.
    pub priced: bool,
}

impl Worst {
    fn nothing() -> Worst {
        Worst {
            model_calls: Some(Count::ZERO),
            least_model_calls: 0,
            tools: BTreeMap::new(),
            approvals: Some(Count::ZERO),
            usd: Some(0.0),
            priced: false,
        }
    }

    /// Model requests at worst.
    #[must_use]
    pub fn model_calls(&self) -> Count {
        self.model_calls.unwrap_or(Count::Unbounded)
    }

    /// Approvals that may be asked at worst.
    #[must_use]
    pub fn approvals(&self) -> Count {
        self.approvals.unwrap_or(Count::Unbounded)
    }

    fn add(&mut self, other: &Worst) {
        self.model_calls = Some(self.model_calls().add(other.model_calls()));
        self.least_model_calls = self.least_model_calls.saturating_add(other.least_model_calls);
        self.approvals = Some(self.approvals().add(other.approvals()));
        for (name, calls) in &other.tools {
            let mine = self
                .tools
                .entry(name.clone())
                .or_insert(ToolCalls { calls: Count::ZERO, agent_turns: Count::ZERO });
            mine.calls = mine.calls.add(calls.calls);
            mine.agent_turns = mine.agent_turns.add(calls.agent_turns);
        }
        self.usd = self.usd.zip(other.usd).map(|(a, b)| a + b);
        self.priced |= other.priced;
    }

    fn times(&self, count: Count, least: u64) -> Worst {
        let scale = |c: Count| c.times(count);
        Worst {
            model_calls: Some(scale(self.model_calls())),
            least_model_calls: self.least_model_calls.saturating_mul(least),
            tools: self
                .tools
                .iter()
                .map(|(name, t)| {
                    let t = ToolCalls { calls: scale(t.calls), agent_turns: scale(t.agent_turns) };
                    (name.clone(), t)
                })
                .collect(),
            approvals: Some(scale(self.approvals())),
            usd: match count {
                Count::At(n) => self.usd.map(|u| u * n as f64),
                Count::Unbounded if self.usd == Some(0.0) => Some(0.0),
                Count::Unbounded => None,
            },
            priced: self.priced,
        }
    }

    /// The worse of two arms, field by field; the least of the cheaper.
    fn or(&self, other: &Worst) -> Worst {
        let mut out = self.clone();
        out.model_calls = Some(self.model_calls().max(other.model_calls()));
        out.least_model_calls = self.least_model_calls.min(other.least_model_calls);
        out.approvals = Some(self.approvals().max(other.approvals()));
        for (name, calls) in &other.tools {
            let zero = ToolCalls { calls: Count::ZERO, agent_turns: Count::ZERO };
            let mine = out.tools.entry(name.clone()).or_insert(zero);
            mine.calls = mine.calls.max(calls.calls);
            mine.agent_turns = mine.agent_turns.max(calls.agent_turns);
        }
        out.usd = self.usd.zip(other.usd).map(|(a, b)| a.max(b));
        out.priced |= other.priced;
        out
    }
}

/// One node of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct NodePlan {
    /// The node.
    pub id: NodeId,
    /// The node's name.
    pub name: String,
    /// `tool`, `agent`, `compose`, `branch`, `for`.
    pub kind: &'static str,
    /// What it calls, as `Ask × 3 items`.
    pub what: String,
    /// Its worst case.
    pub worst: Worst,
}

/// The worst case of one contract.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The contract.
    pub contract: String,
    /// Its nodes that call something, in graph order.
    pub nodes: Vec<NodePlan>,
    /// The whole run.
    pub total: Worst,
    /// Every `for` with no bound: what to bound, and how.
    pub unbounded: Vec<String>,
    /// What the numbers assume.
    pub assumptions: Vec<String>,
    /// The contract's own budget.
    pub budget: crate::ir::Budget,
}

/// What a plan assumes that the program does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The most input tokens of one model request, for the cost bound.
    pub input_tokens: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options { input_tokens: 10_000 }
    }
}

/// Whether a call of `tool` may wait for a person's approval. The hook for
/// `requires_approval` (issue 25, approvals): the declaration does not exist
/// on this branch yet, so no call does; the approvals work answers here.
fn asks_approval(_tool: &Tool) -> bool {
    false
}

/// The worst case of `contract` under `options`.
#[must_use]
pub fn plan(program: &Program, contract: ContractId, options: Options) -> Plan {
    let mut planner = Planner { program, options, assumptions: Vec::new(), unbounded: Vec::new() };
    let (nodes, total) = planner.contract(contract, true);
    let c = &program[contract];
    Plan {
        contract: c.name.clone(),
        nodes,
        total,
        unbounded: planner.unbounded,
        assumptions: planner.assumptions,
        budget: c.budget,
    }
}

/// `at worst N model calls` for each node of `contract` that may ask a
/// model (what `ignite graph --calls` and the editor's inlay hints show).
#[must_use]
pub fn call_notes(program: &Program, contract: ContractId) -> Vec<(NodeId, String)> {
    plan(program, contract, Options::default())
        .nodes
        .into_iter()
        .filter(|n| n.worst.model_calls() != Count::ZERO)
        .map(|n| (n.id, format!("at worst {} model calls", n.worst.model_calls())))
        .collect()
}

/// The walk over a contract and what it composes.
struct Planner<'p> {
    program: &'p Program,
    options: Options,
    assumptions: Vec<String>,
    unbounded: Vec<String>,
}

impl Planner<'_> {
    fn note(&mut self, text: String) {
        if !self.assumptions.contains(&text) {
            self.assumptions.push(text);
        }
    }

    /// The nodes of `id` that call something (when `keep`) and the total.
    fn contract(&mut self, id: ContractId, keep: bool) -> (Vec<NodePlan>, Worst) {
        let contract = &self.program[id];
        let needed = needed(contract);
        let mut nodes = Vec::new();
        let mut total = Worst::nothing();
        for &node_id in contract.graph.order() {
            if !needed[node_id.index()] {
                continue;
            }
            let node = &contract[node_id];
            let (what, worst) = match &node.kind {
                NodeKind::Call(call) => (self.callee_name(call), self.call(call)),
                NodeKind::Branch(branch) => self.branch(branch),
                NodeKind::For(each) => self.collection(id, node_id, each),
                NodeKind::Input(_) | NodeKind::Compute(_) | NodeKind::Guard { .. } => continue,
            };
            total.add(&worst);
            if keep {
                let kind = node.kind.label();
                nodes.push(NodePlan {
                    id: node_id,
                    name: node.name.to_string(),
                    kind,
                    what,
                    worst,
                });
            }
        }
        (nodes, total)
    }

    fn callee_name(&self, call: &Call) -> String {
        match call.callee {
            Callee::Tool(t) => self.program[t].name.clone(),
            Callee::Agent(a) => self.program[a].name.clone(),
            Callee::Contract(c) => self.program[c].name.clone(),
        }
    }

    fn call(&mut self, call: &Call) -> Worst {
        match call.callee {
            Callee::Tool(t) => {
                let tool = &self.program[t];
                let mut worst = Worst::nothing();
                let one = ToolCalls { calls: Count::At(1), agent_turns: Count::ZERO };
                worst.tools.insert(tool.name.clone(), one);
                worst.approvals = Some(Count::At(u64::from(asks_approval(tool))));
                worst
            }
            Callee::Agent(a) => self.agent(&self.program[a]),
            Callee::Contract(c) => self.contract(c, false).1,
        }
    }

    fn body(&mut self, body: &Body) -> (String, Worst) {
        match body {
            Body::Call(call) => (self.callee_name(call), self.call(call)),
            Body::Pure(_) => ("a pure expression".to_owned(), Worst::nothing()),
        }
    }

    fn branch(&mut self, branch: &Branch) -> (String, Worst) {
        let mut names = Vec::new();
        let mut worst: Option<Worst> = None;
        for arm in &branch.arms {
            let (name, arm_worst) = self.body(&arm.body);
            if !names.contains(&name) {
                names.push(name);
            }
            worst = Some(match worst {
                Some(w) => w.or(&arm_worst),
                None => arm_worst,
            });
        }
        (format!("the costliest of {}", names.join(", ")), worst.unwrap_or_else(Worst::nothing))
    }

    fn collection(&mut self, id: ContractId, node: NodeId, each: &Collection) -> (String, Worst) {
        let (name, body) = self.body(&each.body);
        let contract = &self.program[id];
        let (count, least, how) = match items_bound(contract, &each.items) {
            Some((n, how)) => (Count::At(n), if how == Bound::Literal { n } else { 0 }, how),
            None => (Count::Unbounded, 0, Bound::None),
        };
        let what = match how {
            Bound::Guard(guard) => format!("{name} × {count} items (guard `{guard}`)"),
            Bound::Literal => format!("{name} × {count} items"),
            Bound::None => {
                if body.model_calls() != Count::ZERO || !body.tools.is_empty() {
                    let items = describe_path(contract, &each.items);
                    let at = format!("{}.{}", contract.name, contract[node].name);
                    self.unbounded.push(format!(
                        "`{at}` calls {name} once per item of {items}, which has no bound: add `guard {}_bounded = len({}) <= N`",
                        contract[node].name,
                        expr_text(contract, &each.items).unwrap_or_else(|| "ITEMS".to_owned()),
                    ));
                }
                format!("{name} × any number of items")
            }
        };
        // A filter may drop items: none is certain to run.
        let least = if each.filter.is_some() { 0 } else { least };
        (what, body.times(count, least))
    }

    fn agent(&mut self, agent: &Agent) -> Worst {
        let repairs = if agent.result.is_some() { agent.result_retries } else { 0 };
        let replies = u64::from(agent.max_tool_iterations) + u64::from(repairs) + 1;
        let links = self.links(agent);
        let attempts: Vec<u64> = links.iter().map(|l| l.attempts).collect();
        let most = attempts.iter().copied().max().unwrap_or(1);
        let requests = attempts.iter().sum::<u64>() + (replies - 1) * most;
        let mut worst = Worst::nothing();
        worst.model_calls = Some(Count::At(requests));
        worst.least_model_calls = 1;
        worst.usd = self.agent_cost(agent, &links, replies);
        worst.priced = links.iter().any(|l| l.price.is_some());
        let turns = Count::At(u64::from(agent.max_tool_iterations));
        for &tool in &agent.tools {
            let tool = &self.program[tool];
            worst
                .tools
                .insert(tool.name.clone(), ToolCalls { calls: Count::ZERO, agent_turns: turns });
            if asks_approval(tool) {
                worst.approvals = Some(Count::Unbounded);
            }
        }
        worst
    }

    /// The cost bound of one run of `agent`: each link's requests at its
    /// price, input at the assumed bound, output at `max_tokens`.
    fn agent_cost(&mut self, agent: &Agent, links: &[Link], replies: u64) -> Option<f64> {
        let input = self.options.input_tokens;
        let costs: Vec<Option<f64>> = links
            .iter()
            .map(|l| {
                let price = l.price?;
                let output = agent.max_tokens.map(u64::from);
                Some(price.cost(input, output.unwrap_or(0)) * l.attempts as f64)
            })
            .collect();
        for link in links {
            if link.price.is_none() {
                self.note(format!(
                    "agent `{}`: provider `{}` declares no `price`, so its requests are not costed",
                    agent.name, link.label
                ));
            }
        }
        if links.iter().any(|l| l.price.is_some()) {
            if agent.max_tokens.is_none() {
                self.note(format!(
                    "agent `{}` sets no `max_tokens`: its output, so its cost, has no bound",
                    agent.name
                ));
                return None;
            }
            self.note(format!(
                "every model request's input is at most {input} tokens (`--input-tokens`); output at the agent's `max_tokens`"
            ));
        }
        let per_link: Vec<f64> = costs.iter().map(|c| c.unwrap_or(0.0)).collect();
        let most = per_link.iter().copied().fold(0.0, f64::max);
        Some(per_link.iter().sum::<f64>() + (replies - 1) as f64 * most)
    }

    /// The links of `agent`'s fallback chain.
    fn links(&self, agent: &Agent) -> Vec<Link> {
        let len = agent.providers.len().max(agent.models.len()).max(1);
        (0..len)
            .filter_map(|i| agent.providers.get(i.min(agent.providers.len().saturating_sub(1))))
            .map(|choice| match choice {
                ProviderChoice::Script(_) => {
                    Link { label: "script".to_owned(), attempts: 1, price: None }
                }
                ProviderChoice::Kind(kind) => Link {
                    label: kind.name().to_owned(),
                    attempts: u64::from(crate::ir::DEFAULT_RETRIES) + 1,
                    price: None,
                },
                ProviderChoice::Declared(id) => {
                    let decl = &self.program[*id];
                    let retries = decl.retries.unwrap_or(crate::ir::DEFAULT_RETRIES);
                    Link {
                        label: decl.name.clone(),
                        attempts: u64::from(retries) + 1,
                        price: decl.price,
                    }
                }
            })
            .collect()
    }
}

/// One link of a fallback chain, as the plan counts it.
struct Link {
    label: String,
    attempts: u64,
    price: Option<crate::ir::Price>,
}

/// What bounds a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Bound {
    /// A guard, as `len(tickets) <= 3`.
    Guard(String),
    /// A literal array.
    Literal,
    /// Nothing.
    None,
}

/// Which nodes of `contract` run: what the outputs and the guards need.
fn needed(contract: &crate::ir::Contract) -> Vec<bool> {
    let mut needed = vec![false; contract.nodes.len()];
    let mut stack: Vec<NodeId> = contract.outputs.iter().map(|o| o.node).collect();
    stack.extend(
        contract
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(n.kind, NodeKind::Guard { .. }))
            .map(|(i, _)| NodeId::from_index(i)),
    );
    while let Some(node) = stack.pop() {
        if std::mem::replace(&mut needed[node.index()], true) {
            continue;
        }
        stack.extend(contract.graph.deps(node).iter().copied());
    }
    needed
}

/// A node and the fields below it: `order.items` is `(order, ["items"])`.
fn path(expr: &Expr) -> Option<(u32, Vec<&str>)> {
    match &expr.kind {
        ExprKind::Var(v) => Some((*v, Vec::new())),
        ExprKind::Field(field) => {
            let (mut at, name) = (path(&field.0)?, &field.1);
            at.1.push(name);
            Some(at)
        }
        _ => None,
    }
}

/// The text of a node path: `order.items`.
fn expr_text(contract: &crate::ir::Contract, expr: &Expr) -> Option<String> {
    let (var, fields) = path(expr)?;
    let node = contract.nodes.get(var as usize)?;
    Some(std::iter::once(&*node.name).chain(fields).collect::<Vec<_>>().join("."))
}

/// `input \`tickets\``, `\`order.items\` (of input \`order\`)`, `the items`.
fn describe_path(contract: &crate::ir::Contract, expr: &Expr) -> String {
    let Some((var, fields)) = path(expr) else { return "its items".to_owned() };
    let Some(node) = contract.nodes.get(var as usize) else { return "its items".to_owned() };
    let what = if matches!(node.kind, NodeKind::Input(_)) { "input" } else { "node" };
    if fields.is_empty() {
        format!("{what} `{}`", node.name)
    } else {
        let text = expr_text(contract, expr).unwrap_or_default();
        format!("`{text}` (of {what} `{}`)", node.name)
    }
}

/// The most items `items` can have: a literal array's length, or the
/// smallest `N` of the guards `len(items) <= N` (`< N`: `N - 1`).
fn items_bound(contract: &crate::ir::Contract, items: &Expr) -> Option<(u64, Bound)> {
    if let ExprKind::Array(elements) = &items.kind {
        return Some((elements.len() as u64, Bound::Literal));
    }
    if let ExprKind::Literal(Val::Array(elements)) = &items.kind {
        return Some((elements.len() as u64, Bound::Literal));
    }
    let wanted = path(items)?;
    // The value of a `for` has as many items as it iterates over at most.
    if let (var, []) = (wanted.0, wanted.1.as_slice()) {
        if let Some(NodeKind::For(each)) = contract.nodes.get(var as usize).map(|n| &n.kind) {
            return items_bound(contract, &each.items);
        }
    }
    let mut best: Option<(u64, Bound)> = None;
    for node in &contract.nodes {
        let NodeKind::Guard { condition, .. } = &node.kind else { continue };
        for (of, n) in len_limits(condition) {
            if path(of).as_ref() == Some(&wanted) && best.as_ref().is_none_or(|(b, _)| n < *b) {
                let text = format!("{} = len({}) <= {n}", node.name, expr_text(contract, of)?);
                best = Some((n, Bound::Guard(text)));
            }
        }
    }
    best
}

/// `E` of `len(E)`.
fn of_len(e: &Expr) -> Option<&Expr> {
    match &e.kind {
        ExprKind::Call(Function::Len, args) if args.len() == 1 => Some(&args[0]),
        _ => None,
    }
}

/// The limits `len(E) <= N` a condition sets (through `and`).
fn len_limits(condition: &Expr) -> Vec<(&Expr, u64)> {
    let ExprKind::Binary(op, a, b) = &condition.kind else { return Vec::new() };
    let number = |e: &Expr| -> Option<u64> {
        match &e.kind {
            ExprKind::Literal(v) => v.as_i64().and_then(|n| u64::try_from(n).ok()),
            _ => None,
        }
    };
    let limit = match op {
        BinaryOp::And => {
            let mut all = len_limits(a);
            all.extend(len_limits(b));
            return all;
        }
        BinaryOp::Le => of_len(a).zip(number(b)),
        BinaryOp::Lt => of_len(a).zip(number(b).and_then(|n| n.checked_sub(1))),
        BinaryOp::Ge => of_len(b).zip(number(a)),
        BinaryOp::Gt => of_len(b).zip(number(a).and_then(|n| n.checked_sub(1))),
        _ => None,
    };
    limit.into_iter().collect()
}
