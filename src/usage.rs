//! Model usage: what the model calls of a run (or of a whole batch) spent,
//! per provider and model, with the cost where the provider declaration
//! has a `price`.
//!
//! Input: one [`ModelCall`] per model call that answered, handed to
//! [`Trace::record_model`](crate::trace::Trace::record_model) by the code
//! that received the reply (`llm/http.rs`, `llm/script.rs`); that call is
//! the one place a call's tokens are known. Output: [`UsageTotals`], rows
//! sorted by provider then model, on [`RunOutput`](crate::runtime::RunOutput),
//! in `--trace` and at the end of `ignite run` on stderr.
//!
//! What counts as spent: calls that went to the provider (and scripted
//! replies, with the usage their script gives). A reply answered by a
//! recording (`--replay`) or a journal (`--resume`) was paid for by an
//! earlier run: it is counted apart, as reused, and adds no tokens or cost.
//! An agent answered from the cache makes no model call and adds nothing.

use std::fmt::Write as _;

use serde::Serialize;

use crate::ir::Price;

/// Tokens used by one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Of the input, tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// Of the input, tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Of the output, the model's thinking (reasoning) tokens, where the
    /// provider counts them apart (Gemini `thoughtsTokenCount`, OpenAI
    /// `reasoning_tokens`). They are billed as output and counted in it.
    pub thinking_tokens: u64,
}

impl Usage {
    /// `, cache W write / R read` when part of the input went through the
    /// provider's prompt cache, else nothing (the totals include it).
    #[must_use]
    pub fn cache_note(&self) -> String {
        if self.cache_write_tokens + self.cache_read_tokens == 0 {
            return String::new();
        }
        format!(", cache {} write / {} read", self.cache_write_tokens, self.cache_read_tokens)
    }

    /// `, thinking T` when part of the output was the model's thinking,
    /// else nothing (the output total includes it).
    #[must_use]
    pub fn thinking_note(&self) -> String {
        if self.thinking_tokens == 0 {
            return String::new();
        }
        format!(", thinking {}", self.thinking_tokens)
    }
}

/// One model call that answered.
#[derive(Debug, Clone, Copy)]
pub struct ModelCall<'a> {
    /// The provider's label: a kind (`openai`), a declaration name or `script`.
    pub provider: &'a str,
    /// The model asked.
    pub model: &'a str,
    /// The tokens the reply reports.
    pub usage: Usage,
    /// The declaration's `price`, when it has one.
    pub price: Option<Price>,
    /// True when a recording or journal answered: no new spend.
    pub reused: bool,
}

/// The totals of one provider and model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelUsage {
    /// The provider's label.
    pub provider: String,
    /// The model.
    pub model: String,
    /// Calls that spent tokens.
    pub calls: u64,
    /// Their input tokens (cached prompt tokens included).
    pub input_tokens: u64,
    /// Their output tokens.
    pub output_tokens: u64,
    /// Their cost in USD; `None` without a `price`.
    pub cost_usd: Option<f64>,
    /// Calls answered by a recording or journal, not counted above.
    pub reused_calls: u64,
    /// The input tokens those reused calls' replies report (spent when
    /// they were recorded).
    #[serde(skip_serializing_if = "is_zero")]
    pub reused_input_tokens: u64,
    /// Their output tokens.
    #[serde(skip_serializing_if = "is_zero")]
    pub reused_output_tokens: u64,
    /// Their cost in USD at today's `price`; `None` without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reused_cost_usd: Option<f64>,
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Adds `cost` to `total`, which stays `None` without a price.
fn add_cost(total: &mut Option<f64>, cost: Option<f64>) {
    if let Some(cost) = cost {
        *total = Some(total.unwrap_or(0.0) + cost);
    }
}

/// Usage per provider and model, sorted by provider then model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageTotals {
    models: Vec<ModelUsage>,
}

impl UsageTotals {
    /// Adds one call.
    pub fn add(&mut self, call: &ModelCall<'_>) {
        let row = self.row(call.provider, call.model);
        let (input, output) = (call.usage.input_tokens, call.usage.output_tokens);
        let cost = call.price.map(|price| price.cost(input, output));
        if call.reused {
            row.reused_calls += 1;
            row.reused_input_tokens += input;
            row.reused_output_tokens += output;
            add_cost(&mut row.reused_cost_usd, cost);
            return;
        }
        row.calls += 1;
        row.input_tokens += input;
        row.output_tokens += output;
        add_cost(&mut row.cost_usd, cost);
    }

    /// Adds every row of `other` (a batch sums its rows' runs).
    pub fn merge(&mut self, other: &UsageTotals) {
        for theirs in &other.models {
            let row = self.row(&theirs.provider, &theirs.model);
            row.calls += theirs.calls;
            row.input_tokens += theirs.input_tokens;
            row.output_tokens += theirs.output_tokens;
            row.reused_calls += theirs.reused_calls;
            row.reused_input_tokens += theirs.reused_input_tokens;
            row.reused_output_tokens += theirs.reused_output_tokens;
            add_cost(&mut row.cost_usd, theirs.cost_usd);
            add_cost(&mut row.reused_cost_usd, theirs.reused_cost_usd);
        }
    }

    /// The row of `provider` and `model`, added in order when new.
    fn row(&mut self, provider: &str, model: &str) -> &mut ModelUsage {
        let at = self
            .models
            .binary_search_by(|r| (r.provider.as_str(), r.model.as_str()).cmp(&(provider, model)));
        let i = at.unwrap_or_else(|i| {
            let row = ModelUsage {
                provider: provider.into(),
                model: model.into(),
                ..ModelUsage::default()
            };
            self.models.insert(i, row);
            i
        });
        &mut self.models[i]
    }

    /// The rows, by provider then model.
    #[must_use]
    pub fn models(&self) -> &[ModelUsage] {
        &self.models
    }

    /// True when no model call answered (spent or reused).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// All input and output tokens spent.
    #[must_use]
    pub fn tokens(&self) -> (u64, u64) {
        self.models.iter().fold((0, 0), |(i, o), r| (i + r.input_tokens, o + r.output_tokens))
    }

    /// The cost in USD of the models with a `price`; `None` when none has one.
    #[must_use]
    pub fn cost_usd(&self) -> Option<f64> {
        self.models.iter().filter_map(|r| r.cost_usd).reduce(|a, b| a + b)
    }

    /// The input and output tokens the calls a recording or journal
    /// answered had spent when they were recorded.
    #[must_use]
    pub fn reused_tokens(&self) -> (u64, u64) {
        self.models
            .iter()
            .fold((0, 0), |(i, o), r| (i + r.reused_input_tokens, o + r.reused_output_tokens))
    }

    /// Their cost in USD at the models' `price`s; `None` when none has one.
    #[must_use]
    pub fn reused_cost_usd(&self) -> Option<f64> {
        self.models.iter().filter_map(|r| r.reused_cost_usd).reduce(|a, b| a + b)
    }

    /// A table: one line per provider and model (calls, tokens in and out,
    /// cost), a total line when there are several, and the reused calls.
    /// Empty when no model call answered.
    #[must_use]
    pub fn render(&self) -> String {
        if self.is_empty() {
            return String::new();
        }
        let names: Vec<String> =
            self.models.iter().map(|r| format!("{} {}", r.provider, r.model)).collect();
        let width = names.iter().map(String::len).chain([5]).max().unwrap_or(5);
        let mut out = format!("{:<width$}  calls  tokens in  tokens out  cost USD\n", "usage");
        let line = |out: &mut String, name: &str, calls, (input, output), cost: Option<f64>| {
            let cost = cost.map_or_else(|| "-".to_owned(), |c| format!("{c:.6}"));
            let _ =
                writeln!(out, "{name:<width$}  {calls:>5}  {input:>9}  {output:>10}  {cost:>8}");
        };
        for (row, name) in self.models.iter().zip(&names) {
            line(&mut out, name, row.calls, (row.input_tokens, row.output_tokens), row.cost_usd);
        }
        if self.models.len() > 1 {
            let calls: u64 = self.models.iter().map(|r| r.calls).sum();
            line(&mut out, "total", calls, self.tokens(), self.cost_usd());
        }
        let reused: u64 = self.models.iter().map(|r| r.reused_calls).sum();
        if reused > 0 {
            let calls = if reused == 1 { "call" } else { "calls" };
            let (input, output) = self.reused_tokens();
            let cost = self.reused_cost_usd().map_or_else(String::new, |c| format!(", {c:.6} USD"));
            let _ = writeln!(
                out,
                "and {reused} model {calls} answered by a recording or journal (spent before: {input} tokens in, {output} out{cost})"
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(provider: &'static str, model: &'static str, tokens: (u64, u64)) -> ModelCall<'static> {
        ModelCall {
            provider,
            model,
            usage: Usage { input_tokens: tokens.0, output_tokens: tokens.1, ..Usage::default() },
            price: None,
            reused: false,
        }
    }

    #[test]
    fn totals_per_model_with_costs_where_priced() {
        let price = Some(Price { input: 3.0, output: 15.0 });
        let mut totals = UsageTotals::default();
        totals.add(&ModelCall { price, ..call("Paid", "big", (1_000, 100)) });
        totals.add(&ModelCall { price, ..call("Paid", "big", (2_000, 200)) });
        totals.add(&call("Free", "small", (10, 1)));
        totals.add(&ModelCall { reused: true, ..call("Free", "small", (50, 5)) });
        let rows = totals.models();
        assert_eq!(rows.iter().map(|r| r.provider.as_str()).collect::<Vec<_>>(), ["Free", "Paid"]);
        assert_eq!((rows[0].calls, rows[0].input_tokens, rows[0].reused_calls), (1, 10, 1));
        assert_eq!((rows[0].reused_input_tokens, rows[0].reused_output_tokens), (50, 5));
        assert_eq!(totals.reused_tokens(), (50, 5));
        assert_eq!(rows[0].cost_usd, None);
        // 3,000 in at $3/M and 300 out at $15/M.
        let cost = rows[1].cost_usd.expect("priced");
        assert!((cost - 0.0135).abs() < 1e-12, "{cost}");
        assert_eq!(totals.tokens(), (3_010, 301));
        let mut twice = totals.clone();
        twice.merge(&totals);
        assert_eq!(twice.tokens(), (6_020, 602));
        assert_eq!(twice.models()[0].reused_calls, 2);
        insta::assert_snapshot!(totals.render(), @r"
        usage       calls  tokens in  tokens out  cost USD
        Free small      1         10           1         -
        Paid big        2       3000         300  0.013500
        total           3       3010         301  0.013500
        and 1 model call answered by a recording or journal (spent before: 50 tokens in, 5 out)
        ");
    }

    #[test]
    fn nothing_to_show_without_model_calls() {
        assert_eq!(UsageTotals::default().render(), "");
        assert_eq!(UsageTotals::default().cost_usd(), None);
    }
}
