//! A plan as text (`ignite plan`) and as JSON (`--format json`).

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::{Count, Plan, ToolCalls, Worst};

impl Plan {
    /// The plan as a table: a line per node that calls something, the
    /// total, the tool calls per tool, the cost, the budget, then what is
    /// unbounded and what the numbers assume.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = format!("plan of contract `{}` (worst case)\n", self.contract);
        let width = self.nodes.iter().map(|n| n.name.len()).chain([5]).max().unwrap_or(5);
        let _ = writeln!(out, "{:<width$}  {:<7}  model calls  calls", "node", "kind");
        for node in &self.nodes {
            let _ = writeln!(
                out,
                "{:<width$}  {:<7}  {:>11}  {}",
                node.name,
                node.kind,
                node.worst.model_calls.to_string(),
                node.what
            );
        }
        let _ = writeln!(
            out,
            "{:<width$}  {:<7}  {:>11}",
            "total",
            "",
            self.total.model_calls.to_string()
        );
        let _ = writeln!(out, "least model calls: {}", self.total.least_model_calls);
        if !self.total.tools.is_empty() {
            out.push_str("tool calls:\n");
            for (name, calls) in &self.total.tools {
                let _ = writeln!(out, "  {name}: {}", tool_text(*calls));
            }
        }
        let _ = writeln!(out, "approvals that may be asked: {}", self.total.approvals);
        let cost = match self.total.usd {
            _ if !self.total.priced => {
                "none known (no provider it calls declares a `price`)".to_owned()
            }
            Some(usd) => format!("${usd:.4}"),
            None => "unbounded".to_owned(),
        };
        let _ = writeln!(out, "cost bound: {cost}");
        if !self.budget.is_empty() {
            let _ = writeln!(out, "budget: {}{}", self.budget, self.budget_note());
        }
        for line in &self.unbounded {
            let _ = writeln!(out, "unbounded: {line}");
        }
        for line in &self.assumptions {
            let _ = writeln!(out, "assumes: {line}");
        }
        out
    }

    /// How the worst case stands against the `model_calls` budget.
    fn budget_note(&self) -> String {
        let Some(limit) = self.budget.model_calls else { return String::new() };
        match self.total.model_calls {
            Count::At(n) if n <= limit => " (the worst case fits)".to_owned(),
            Count::At(n) => format!(" (the worst case, {n} model calls, may stop at the budget)"),
            Count::Unbounded => {
                " (the worst case has no bound: the budget may stop the run)".to_owned()
            }
        }
    }

    /// The plan as JSON: `contract`, `nodes` (each with its worst case),
    /// `total`, `budget`, `unbounded` and `assumptions`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let nodes: Vec<Value> = self
            .nodes
            .iter()
            .map(|n| json!({"node": n.name, "kind": n.kind, "calls": n.what, "worst": worst_json(&n.worst)}))
            .collect();
        let budget = json!({
            "usd": self.budget.usd,
            "model_calls": self.budget.model_calls,
            "tokens": self.budget.tokens,
        });
        json!({
            "contract": self.contract,
            "nodes": nodes,
            "total": worst_json(&self.total),
            "budget": budget,
            "unbounded": self.unbounded,
            "assumptions": self.assumptions,
        })
    }
}

/// `3 by nodes; by agents: any number in each of up to 24 turns`.
fn tool_text(calls: ToolCalls) -> String {
    let mut parts = Vec::new();
    if calls.calls != Count::At(0) {
        parts.push(format!("{} by nodes", calls.calls));
    }
    if calls.agent_turns != Count::At(0) {
        parts.push(format!(
            "by agents, any number in each of up to {} tool turns",
            calls.agent_turns
        ));
    }
    if parts.is_empty() {
        parts.push("0".to_owned());
    }
    parts.join("; ")
}

/// A count as JSON: the number, or `null` when unbounded.
fn count_json(count: Count) -> Value {
    count.bound().map_or(Value::Null, Value::from)
}

fn worst_json(worst: &Worst) -> Value {
    let tools: Map<String, Value> = worst
        .tools
        .iter()
        .map(|(name, t)| {
            let calls =
                json!({"calls": count_json(t.calls), "agent_turns": count_json(t.agent_turns)});
            (name.clone(), calls)
        })
        .collect();
    json!({
        "model_calls": count_json(worst.model_calls),
        "least_model_calls": worst.least_model_calls,
        "tools": tools,
        "approvals": count_json(worst.approvals),
        "usd": if worst.priced { json!(worst.usd) } else { Value::Null },
        "priced": worst.priced,
    })
}
