//! `check`'s budget diagnostics, from each contract's plan: an error when
//! a `budget model_calls N` is certainly exceeded (even the least run
//! makes more requests), a warning when a contract with a budget has no
//! bound on its worst case (a `for` over items of no known number).

use super::{Count, Options, plan};
use crate::diagnostic::{Code, Diagnostic, Diagnostics};
use crate::ir::{ContractId, Program};

/// The budget diagnostics of every contract of `program` with a budget.
#[must_use]
pub fn check(program: &Program) -> Diagnostics {
    let mut out = Diagnostics::default();
    for (i, contract) in program.contracts.iter().enumerate() {
        let Some(span) = contract.budget_span else { continue };
        let plan = plan(program, ContractId::from_index(i), Options::default());
        let worst = plan.total.model_calls;
        let least = plan.total.least_model_calls;
        if let Some(limit) = contract.budget.model_calls.filter(|&n| least > n) {
            out.push(
                Diagnostic::error(
                    Code::PlanOverBudget,
                    span,
                    format!(
                        "contract `{}` makes at least {least} model calls, past its budget `model_calls {limit}`",
                        contract.name
                    ),
                )
                .label(format!("at worst {worst} model calls"))
                .help(format!(
                    "raise the budget to at least `model_calls {least}`, or call fewer agents; `ignite plan` shows each node"
                )),
            );
        }
        if worst == Count::Unbounded {
            let why = plan.unbounded.first().cloned().unwrap_or_default();
            out.push(
                Diagnostic::warning(
                    Code::PlanUnbounded,
                    span,
                    format!("the worst case of contract `{}` has no bound", contract.name),
                )
                .label("the budget stops the run, but its worst case is unknown")
                .help(why),
            );
        }
    }
    out
}
