//! Contract budgets: `budget usd X, model_calls N, tokens T` to an
//! [`ir::Budget`], each limit once, `usd` a finite non-negative number,
//! `model_calls` and `tokens` whole non-negative numbers. A contract has at
//! most one `budget` statement.

use super::Lowerer;
use crate::ast::{self, BudgetKind, ExprKind};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir;

impl Lowerer<'_> {
    /// The contract's budget; empty without a `budget` statement.
    pub(super) fn budget(&mut self, contract: &ast::Contract) -> ir::Budget {
        let mut budget = ir::Budget::default();
        let Some(statement) = self.single(&contract.budgets, |b| b.span, "budget") else {
            return budget;
        };
        let mut seen: Vec<(BudgetKind, crate::source::Span)> = Vec::new();
        for limit in &statement.limits {
            let word = limit.kind.keyword().as_str();
            if let Some((_, first)) = seen.iter().find(|(k, _)| *k == limit.kind) {
                self.push(
                    Diagnostic::error(
                        Code::Duplicate,
                        limit.span,
                        format!("the budget sets `{word}` twice"),
                    )
                    .label("set again here")
                    .note(*first, "first set here")
                    .help(format!("keep one `{word}` limit")),
                );
                continue;
            }
            seen.push((limit.kind, limit.span));
            match limit.kind {
                BudgetKind::Usd => budget.usd = self.usd_limit(&limit.value),
                BudgetKind::ModelCalls => budget.model_calls = self.count_limit(&limit.value, word),
                BudgetKind::Tokens => budget.tokens = self.count_limit(&limit.value, word),
            }
        }
        budget
    }

    /// `usd X`: a finite number, not negative.
    fn usd_limit(&mut self, value: &ast::Expr) -> Option<f64> {
        let usd = Self::number(value);
        if usd.is_finite() && usd >= 0.0 {
            return Some(usd);
        }
        self.push(
            self.bad_value(value.span, "the `usd` budget must be a number of USD, not negative")
                .help("write `budget usd 0.50`"),
        );
        None
    }

    /// `model_calls N`, `tokens N`: a whole number, not negative.
    fn count_limit(&mut self, value: &ast::Expr, word: &str) -> Option<u64> {
        if let ExprKind::Integer(n) = value.kind {
            if let Ok(n) = u64::try_from(n) {
                return Some(n);
            }
        }
        self.push(
            self.bad_value(value.span, format!("the `{word}` budget must be a whole number"))
                .help(format!("write `budget {word} 40`")),
        );
        None
    }
}
