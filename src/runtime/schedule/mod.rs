//! The scheduler: runs the needed nodes of a contract (and of the child
//! contracts it composes) as their dependencies complete.
//!
//! One concept per file:
//!
//! | file | what |
//! | --- | --- |
//! | `core.rs` | the dependency-counting core: counts, ready queues, bounds, branches, `for`, `try`, abandonment, the deadline, which failure is reported |
//! | `core/calls.rs` | the core's calls: composing, starting waiting calls, their answers, `try`, where a failure goes |
//! | `exec.rs` | an execution's table and counts, and the paths of its nodes |
//! | `nodes.rs` | what the core asks of a graph (the `Nodes` trait) and the types it speaks in |
//! | `program.rs` | the checked program as `Nodes`: evaluating expressions, binding arguments, starting tool and agent tasks through the effects seam |
//! | `observer.rs` | the one `Observer` interface and the run's three observers: the timeline, OpenTelemetry spans, the journal's activity tokens (what Restate waits on) |
//! | `failure.rs` | what a failure holds, a `try` value, the run's error |
//! | `tests.rs` | the core on fake nodes |
//!
//! This file puts them together for one run: it binds the inputs, picks
//! the bounds from the runner (or `--jobs`), and opens and closes the run
//! for the observers.

mod core;
mod exec;
mod failure;
mod job;
mod nodes;
mod observer;
mod program;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde_json::{Map, Value};

use self::core::{Bounds, Core};
use self::observer::{Observer, Watchers};
use self::program::{Ir, json};
use super::{Engine, RunError, RunOptions, inputs};
use crate::eval::Fields;
use crate::ir::{ContractId, Program, Runner};
use crate::trace::Trace;

/// Runs `contract` and returns its requested outputs, in a run span.
pub(super) fn run(
    engine: &Engine,
    contract: ContractId,
    given: Fields,
    options: &RunOptions,
    trace: &Arc<Trace>,
) -> Result<Map<String, Value>, RunError> {
    let root = &engine.program()[contract];
    // The shared budget first, then the contract's: every request locks
    // the meters in this order.
    if let Some(meter) = &options.budget {
        trace.add_meter(Arc::clone(meter));
    }
    if !root.budget.is_empty() {
        let owner = format!("contract `{}`", root.name);
        trace.add_meter(Arc::new(crate::budget::Meter::new(root.budget, owner)));
    }
    let watchers = observer::watchers(trace, &options.span, engine.effects.activity());
    let scope = watchers.run_started(&engine.program()[contract].name);
    let result = run_in(engine, contract, given, options, &watchers, scope.clone());
    watchers.run_ended(&scope, result.as_ref().err());
    result
}

fn run_in(
    engine: &Engine,
    contract: ContractId,
    given: Fields,
    options: &RunOptions,
    watchers: &Watchers<'_>,
    scope: <Watchers<'_> as Observer>::Scope,
) -> Result<Map<String, Value>, RunError> {
    let program = engine.program();
    let root = &program[contract];
    let outputs = requested_outputs(program, contract, &options.outputs)?;
    let params: Vec<_> = root.inputs().map(|(_, p)| p.clone()).collect();
    let values = inputs::bind(&params, &given, root.name_span, Some(options.inputs_from))
        .map_err(|problems| RunError::Inputs { contract: root.name.clone(), problems })?;
    super::mcp_check::check(engine, contract)?;
    let runner = options.jobs.map_or(root.runner, Runner::Pool);
    let limit = match runner {
        Runner::Default => usize::MAX,
        Runner::Inline => 1,
        Runner::Pool(n) => n.max(1),
    };
    let bounds = Bounds {
        limit,
        inline: runner == Runner::Inline,
        pool: match runner {
            Runner::Pool(n) => engine.pool(n),
            _ => None,
        },
        deadline: options.deadline,
        cancel: options.cancel.clone(),
    };
    let mut core = Core::new(Ir::new(engine, limit), watchers, bounds);
    let result = core.run(contract, values, outputs, scope);
    // Dropping the core stops the calls still in flight.
    drop(core);
    engine.settle_calls();
    result.map(json)
}

/// The output indexes asked for: all when `names` is empty.
fn requested_outputs(
    program: &Program,
    contract: ContractId,
    names: &[String],
) -> Result<Vec<usize>, RunError> {
    let c = &program[contract];
    if names.is_empty() {
        return Ok((0..c.outputs.len()).collect());
    }
    names
        .iter()
        .map(|name| {
            c.outputs.iter().position(|o| &o.name == name).ok_or_else(|| {
                let all: Vec<&str> = c.outputs.iter().map(|o| o.name.as_str()).collect();
                RunError::Output {
                    contract: c.name.clone(),
                    output: name.clone(),
                    suggestion: crate::suggest::closest(name, all.iter().copied())
                        .map(str::to_owned),
                    span: c.name_span,
                }
            })
        })
        .collect()
}
