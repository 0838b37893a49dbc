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

mod bounds;
mod check;
pub mod dry;
mod render;
mod worst;

use crate::ir::{
    Agent, Body, Branch, Call, Callee, Collection, ContractId, NodeId, NodeKind, Program,
    ProviderChoice, Tool,
};
use bounds::{Bound, describe_path, expr_text, items_bound, needed};

pub use check::check;
pub use worst::{Count, ToolCalls, Worst};

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

/// Whether a call of `tool` may wait for a person's approval: it declares
/// `requires_approval` (at worst, its `when` holds).
fn asks_approval(tool: &Tool) -> bool {
    tool.approval.is_some()
}

/// The worst case of `contract` under `options`.
#[must_use]
pub fn plan(program: &Program, contract: ContractId, options: Options) -> Plan {
    let mut planner = Planner {
        program,
        options,
        assumptions: Vec::new(),
        unbounded: Vec::new(),
        composed: std::collections::HashMap::new(),
    };
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
        .filter(|n| n.worst.model_calls != Count::ZERO)
        .map(|n| (n.id, format!("at worst {} model calls", n.worst.model_calls)))
        .collect()
}

/// The walk over a contract and what it composes.
struct Planner<'p> {
    program: &'p Program,
    options: Options,
    assumptions: Vec<String>,
    unbounded: Vec<String>,
    /// The totals of the contracts composed so far.
    composed: std::collections::HashMap<ContractId, Worst>,
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
                worst.approvals = Count::At(u64::from(asks_approval(tool)));
                worst
            }
            Callee::Agent(a) => self.agent(&self.program[a]),
            // Planned once per contract: a diamond of compositions stays linear.
            Callee::Contract(c) => {
                if let Some(worst) = self.composed.get(&c) {
                    return worst.clone();
                }
                let worst = self.contract(c, false).1;
                self.composed.insert(c, worst.clone());
                worst
            }
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
                if body.model_calls != Count::ZERO || !body.tools.is_empty() {
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
        worst.model_calls = Count::At(requests);
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
                worst.approvals = Count::Unbounded;
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

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::{Count, Options, plan};

    /// 40 levels, each composing the next twice: 2^40 runs of an agent
    /// of one reply, planned in linear time.
    #[test]
    fn a_diamond_of_compositions_is_planned_once_per_contract() {
        let mut text = String::from(
            "agent A {\n  provider script \"s.json\"\n  model \"m\"\n  max_tool_iterations 1\n  input q: string\n}\n",
        );
        let _ = writeln!(
            text,
            "contract L40 {{\n  input q: string\n  compute a = A(q: q)\n  output a\n}}"
        );
        for level in (0..40).rev() {
            let next = level + 1;
            let _ = writeln!(
                text,
                "contract L{level} {{\n  input q: string\n  compose x = L{next}(q: q)\n  compose y = L{next}(q: q)\n  output x\n  output y\n}}"
            );
        }
        let program = crate::compile_source("diamond.ign", &text).program.expect("compiles");
        let root = program.contract_named("L0").expect("L0");
        let planned = plan(&program, root, Options::default());
        // One agent run: 1 tool turn + 1 answer, one attempt each.
        assert_eq!(planned.total.model_calls, Count::At(2 << 40));
        assert_eq!(planned.total.least_model_calls, 1 << 40);
    }
}
