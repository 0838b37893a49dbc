//! The mocks of one test run: which tool calls they answer, and every tool
//! call the run made (for `snapshot calls`). Pure bookkeeping: the test's
//! effect store (`store.rs`) asks it about each tool call.
//!
//! A call is answered by the first mock of its tool whose arguments it
//! matches: a mock without arguments matches every call; a mock with
//! arguments matches a call that has equal values for each of them (a
//! param the call leaves out counts as its default; numbers compare by
//! value). A call of a tool that has mocks, none of which matches, is
//! refused and remembered: the test fails and shows the arguments. A tool
//! without mocks runs as usual.

use std::sync::Mutex;

use serde_json::{Map, Value, json};

use crate::eval;

/// One `mock` statement with its values computed.
#[derive(Debug, Clone)]
pub(crate) struct Mock {
    /// The tool's `tool_name` (what calls carry).
    pub(crate) tool: String,
    /// Its declared name, for messages.
    pub(crate) name: String,
    /// The tool's params with defaults: a call that leaves one out has it.
    pub(crate) defaults: Map<String, Value>,
    pub(crate) args: Option<Map<String, Value>>,
    pub(crate) answer: Result<Value, String>,
}

/// What the mocks say about a call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// A mock answers: this value, or this tool error.
    Mocked(Result<Value, String>),
    /// The tool has no mock: it runs.
    Unmocked,
    /// The tool has mocks but none for these arguments: why.
    Unmatched(String),
}

/// Where a call was made: node path, `for` item, its number among the
/// node's effects (handed out in call order).
pub(crate) type Place = (String, Option<u32>, u32);

/// The mocks of a run and what they saw.
#[derive(Debug, Default)]
pub(crate) struct Mocks {
    mocks: Vec<Mock>,
    /// What is mocked, in messages: `tool` or `agent`.
    what: &'static str,
    /// Every tool call: its place (node path, `for` item, number among the
    /// node's effects) and `{"node", "tool", "args"}`.
    calls: Mutex<Vec<(Place, Value)>>,
    /// Calls no mock matched, explained.
    unmatched: Mutex<Vec<String>>,
}

impl Mocks {
    pub(crate) fn new(mocks: Vec<Mock>) -> Self {
        Self { mocks, what: "tool", ..Self::default() }
    }

    /// The mocks of agents (`tool` is then the agent's name).
    pub(crate) fn of_agents(mocks: Vec<Mock>) -> Self {
        Self { mocks, what: "agent", ..Self::default() }
    }

    /// True when there is a mock.
    pub(crate) fn any(&self) -> bool {
        !self.mocks.is_empty()
    }

    /// Answers a call of `tool` (its `tool_name`) with `args` by node
    /// `node` (shown as such) at `place`, and logs it.
    pub(crate) fn answer(&self, node: &str, place: Place, tool: &str, args: &Value) -> Answer {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push((place, json!({ "node": node, "tool": tool, "args": args })));
        }
        let mut patterns = Vec::new();
        let mut name = tool;
        for mock in self.mocks.iter().filter(|m| m.tool == tool) {
            name = &mock.name;
            match &mock.args {
                None => return Answer::Mocked(mock.answer.clone()),
                Some(wanted) if matches(&mock.defaults, wanted, args) => {
                    return Answer::Mocked(mock.answer.clone());
                }
                Some(wanted) => patterns.push(Value::Object(wanted.clone()).to_string()),
            }
        }
        if patterns.is_empty() {
            return Answer::Unmocked;
        }
        let why = format!(
            "{} `{name}` was called by `{node}` with {args}, but it is mocked only for {}",
            self.what,
            patterns.join(", ")
        );
        if let Ok(mut unmatched) = self.unmatched.lock() {
            unmatched.push(why.clone());
        }
        Answer::Unmatched(why)
    }

    /// Every call made, sorted by node, `for` item and the call's number in
    /// its node (so the order does not depend on scheduling, and the calls
    /// of one agent run stay in the order the model made them).
    pub(crate) fn calls(&self) -> Vec<Value> {
        let mut calls = self.calls.lock().map(|c| c.clone()).unwrap_or_default();
        calls.sort_by(|a, b| a.0.cmp(&b.0));
        calls.into_iter().map(|(_, call)| call).collect()
    }

    /// The calls no mock matched.
    pub(crate) fn unmatched(&self) -> Vec<String> {
        self.unmatched.lock().map(|u| u.clone()).unwrap_or_default()
    }
}

/// True when `args` has the `wanted` value for each wanted param (a param
/// left out counts as its default).
pub(crate) fn matches(
    defaults: &Map<String, Value>,
    wanted: &Map<String, Value>,
    args: &Value,
) -> bool {
    wanted.iter().all(|(name, value)| {
        let given = args.get(name).or_else(|| defaults.get(name));
        given.is_some_and(|given| eval::equal(&given.into(), &value.into()))
    })
}
