//! Run budgets at run time: a [`Meter`] counts what model calls spend
//! against one [`Budget`] (a contract's `budget`, or `--budget` for a run
//! or a whole batch) and refuses a request past it.
//!
//! Input: [`admit`] before each model request goes out (an HTTP
//! attempt that goes to the network, a scripted reply), [`Meter::spend`]
//! with what each reply used. Output: `Err(NodeError::Budget)` from
//! [`admit`] when the request would be model call number `model_calls + 1`,
//! or when `usd` or `tokens` are already spent; the request is then not
//! sent and its node fails. Requests admitted before are in flight and
//! finish: what they spend is still counted, so a run can end a little
//! past `usd` or `tokens` (never past `model_calls`). Replies answered by
//! a recording or a journal were spent by an earlier run and count nothing.

use std::sync::Mutex;

use crate::failure::NodeError;
use crate::ir::Budget;

/// What one budget allows and what was spent against it so far.
#[derive(Debug)]
pub struct Meter {
    budget: Budget,
    /// Whose budget: `contract \`Triage\``, `--budget`.
    owner: String,
    spent: Mutex<Spent>,
}

/// Spent so far.
#[derive(Debug, Clone, Copy, Default)]
struct Spent {
    requests: u64,
    tokens: u64,
    usd: f64,
}

impl Meter {
    /// A meter of `budget`, owned by `owner` (named in failures).
    #[must_use]
    pub fn new(budget: Budget, owner: impl Into<String>) -> Self {
        Self { budget, owner: owner.into(), spent: Mutex::new(Spent::default()) }
    }

    /// Why a request may not go out now, if it may not.
    fn refusal(&self, spent: &Spent) -> Option<NodeError> {
        let limit = match self.budget {
            Budget { model_calls: Some(n), .. } if spent.requests >= n => {
                format!("model_calls {n}")
            }
            Budget { tokens: Some(n), .. } if spent.tokens >= n => format!("tokens {n}"),
            Budget { usd: Some(usd), .. } if spent.usd >= usd => format!("usd {usd}"),
            _ => return None,
        };
        Some(NodeError::Budget {
            message: format!(
                "the budget `{limit}` of {} is spent: {} so far; the model request was not sent",
                self.owner,
                spent.describe(self.budget.usd.is_some())
            ),
        })
    }

    /// Adds the tokens of a reply and its cost (`None` when its provider
    /// declares no `price`).
    pub fn spend(&self, tokens: u64, usd: Option<f64>) {
        let mut spent = crate::sync::lock(&self.spent);
        spent.tokens += tokens;
        spent.usd += usd.unwrap_or(0.0);
    }
}

/// Lets one more model request go out under every meter of `meters`
/// (held together, so two requests racing for the last call cannot both
/// pass), counting it on each.
///
/// # Errors
/// [`NodeError::Budget`] of the first meter the request would pass;
/// nothing is counted then.
pub fn admit(meters: &[std::sync::Arc<Meter>]) -> Result<(), NodeError> {
    let mut held: Vec<_> = meters.iter().map(|m| crate::sync::lock(&m.spent)).collect();
    for (meter, spent) in meters.iter().zip(&held) {
        if let Some(refused) = meter.refusal(spent) {
            return Err(refused);
        }
    }
    for spent in &mut held {
        spent.requests += 1;
    }
    Ok(())
}

impl Spent {
    /// `3 model calls, 1200 tokens, $0.0042` (the cost when it is
    /// limited or something priced was spent).
    fn describe(&self, with_usd: bool) -> String {
        let calls = if self.requests == 1 { "call" } else { "calls" };
        let mut text = format!("{} model {calls}, {} tokens", self.requests, self.tokens);
        if with_usd || self.usd > 0.0 {
            text.push_str(&format!(", ${:.4}", self.usd));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn one(budget: Budget, owner: &str) -> Vec<Arc<Meter>> {
        vec![Arc::new(Meter::new(budget, owner))]
    }

    #[test]
    fn refuses_the_call_past_model_calls_and_counts_none_of_it() {
        let meters = one(Budget { model_calls: Some(2), ..Budget::default() }, "`--budget`");
        assert!(admit(&meters).is_ok());
        assert!(admit(&meters).is_ok());
        let refused = admit(&meters).expect_err("the third is past the budget");
        assert_eq!(refused.code(), crate::diagnostic::Code::RunBudget);
        assert_eq!(
            refused.to_string(),
            "the budget `model_calls 2` of `--budget` is spent: 2 model calls, 0 tokens so far; the model request was not sent"
        );
        assert!(admit(&meters).is_err(), "still refused");
    }

    #[test]
    fn a_refusal_of_one_meter_counts_on_none() {
        let run = Arc::new(Meter::new(Budget { model_calls: Some(1), ..Budget::default() }, "a"));
        let batch = Arc::new(Meter::new(Budget { model_calls: Some(5), ..Budget::default() }, "b"));
        let meters = [Arc::clone(&batch), Arc::clone(&run)];
        assert!(admit(&meters).is_ok());
        assert!(admit(&meters).is_err(), "the run's own budget is spent");
        let spent = batch.spent.lock().expect("unpoisoned").requests;
        assert_eq!(spent, 1, "the refused request is not counted on the batch's meter");
    }

    #[test]
    fn tokens_and_usd_refuse_once_spent() {
        let meters = one(Budget { tokens: Some(100), ..Budget::default() }, "contract `C`");
        assert!(admit(&meters).is_ok());
        meters[0].spend(99, None);
        assert!(admit(&meters).is_ok(), "99 of 100 tokens: not spent yet");
        meters[0].spend(5, None);
        assert!(admit(&meters).is_err(), "104 of 100");
        let meters = one(Budget { usd: Some(0.01), ..Budget::default() }, "contract `C`");
        meters[0].spend(1000, None);
        assert!(admit(&meters).is_ok(), "unpriced calls cost nothing");
        meters[0].spend(10, Some(0.01));
        let refused = admit(&meters).expect_err("spent");
        assert!(refused.to_string().contains("`usd 0.01`"), "{refused}");
    }
}
