//! What part of a run costs at worst: [`Count`]s that may be unbounded,
//! the calls of a tool, and [`Worst`], added for nodes that all run,
//! multiplied for the items of a `for`, and taken field by field at the
//! worse of two arms for a branch.

use std::collections::BTreeMap;

/// A count that may have no bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Count {
    /// At most this many.
    At(u64),
    /// No bound is known.
    Unbounded,
}

impl Count {
    pub(super) const ZERO: Count = Count::At(0);

    pub(super) fn add(self, other: Count) -> Count {
        match (self, other) {
            (Count::At(a), Count::At(b)) => Count::At(a.saturating_add(b)),
            _ => Count::Unbounded,
        }
    }

    pub(super) fn times(self, other: Count) -> Count {
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
#[derive(Debug, Clone, PartialEq)]
pub struct Worst {
    /// Model requests at worst.
    pub model_calls: Count,
    /// Model requests at least (when it runs to the end).
    pub least_model_calls: u64,
    /// Calls per tool, by declared name.
    pub tools: BTreeMap<String, ToolCalls>,
    /// Tool calls that may wait for a person's approval.
    pub approvals: Count,
    /// The cost bound in USD; `None` when some priced request has no bound
    /// (no `max_tokens`, or an unbounded count).
    pub usd: Option<f64>,
    /// True when some request it counts goes to a provider with a `price`.
    pub priced: bool,
}

impl Worst {
    pub(super) fn nothing() -> Worst {
        Worst {
            model_calls: Count::ZERO,
            least_model_calls: 0,
            tools: BTreeMap::new(),
            approvals: Count::ZERO,
            usd: Some(0.0),
            priced: false,
        }
    }

    pub(super) fn add(&mut self, other: &Worst) {
        self.model_calls = self.model_calls.add(other.model_calls);
        self.least_model_calls = self.least_model_calls.saturating_add(other.least_model_calls);
        self.approvals = self.approvals.add(other.approvals);
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

    pub(super) fn times(&self, count: Count, least: u64) -> Worst {
        let scale = |c: Count| c.times(count);
        Worst {
            model_calls: scale(self.model_calls),
            least_model_calls: self.least_model_calls.saturating_mul(least),
            tools: self
                .tools
                .iter()
                .map(|(name, t)| {
                    let t = ToolCalls { calls: scale(t.calls), agent_turns: scale(t.agent_turns) };
                    (name.clone(), t)
                })
                .collect(),
            approvals: scale(self.approvals),
            usd: match count {
                Count::At(n) => self.usd.map(|u| u * n as f64),
                Count::Unbounded if self.usd == Some(0.0) => Some(0.0),
                Count::Unbounded => None,
            },
            priced: self.priced,
        }
    }

    /// The worse of two arms, field by field; the least of the cheaper.
    pub(super) fn or(&self, other: &Worst) -> Worst {
        let mut out = self.clone();
        out.model_calls = self.model_calls.max(other.model_calls);
        out.least_model_calls = self.least_model_calls.min(other.least_model_calls);
        out.approvals = self.approvals.max(other.approvals);
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
