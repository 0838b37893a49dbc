//! Binding inputs: caller values checked against declared params.
//!
//! Used for a contract's inputs, a composed child's inputs and an agent
//! node's inputs. Every problem is reported, each naming the input.

use crate::eval::{Fields, Val};
use crate::ir::Param;
use crate::source::Span;
use crate::suggest::closest;

/// Where a run's inputs come from, so that the help for a missing one
/// says how to give it there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InputsFrom {
    /// `--input NAME=VALUE` and `--inputs FILE` on the command line.
    #[default]
    Flags,
    /// The JSON object of a request's body (`ignite serve`, Restate).
    Body,
    /// A row of `ignite run --batch`.
    Row,
    /// The arguments of an MCP `tools/call` (`ignite mcp`).
    Arguments,
}

impl InputsFrom {
    /// How to give the missing input `name`.
    fn missing_help(self, name: &str) -> String {
        match self {
            InputsFrom::Flags => format!("pass it with `--input {name}=VALUE`"),
            InputsFrom::Body => format!("add `\"{name}\": VALUE` to the request's JSON body"),
            InputsFrom::Row => format!("add `\"{name}\": VALUE` to the row"),
            InputsFrom::Arguments => format!("add `\"{name}\": VALUE` to the call's arguments"),
        }
    }
}

/// One wrong input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputProblem {
    /// What is wrong, naming the input.
    pub message: String,
    /// The declaration it concerns (the contract's name for unknown inputs).
    pub span: Span,
    /// The text under the span.
    pub label: &'static str,
    /// How to fix it, when known.
    pub help: Option<String>,
}

/// Every problem's message, as one line.
#[must_use]
pub fn one_line(problems: &[InputProblem]) -> String {
    problems.iter().map(|p| p.message.as_str()).collect::<Vec<_>>().join("; ")
}

/// The values of `params` in order: given (shared, not copied),
/// defaulted, or `null` for an absent nullable param.
///
/// # Errors
/// Every unknown, missing and wrongly typed input (every wrong field of a
/// record input, each naming its path); `owner` is the span
/// unknown inputs point at; `from`, when the inputs come from the user,
/// words the help for missing ones.
pub fn bind(
    params: &[Param],
    given: &Fields,
    owner: Span,
    from: Option<InputsFrom>,
) -> Result<Vec<Val>, Vec<InputProblem>> {
    let mut problems = Vec::new();
    for name in given.keys() {
        if !params.iter().any(|p| &p.name == name) {
            let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
            // A row's line holds only the message: it says how to keep the field.
            let keep = if from == Some(InputsFrom::Row) {
                " (`--keep-fields` passes fields the contract does not take through under `row_data`)"
            } else {
                ""
            };
            problems.push(InputProblem {
                message: format!("unknown input `{name}`{keep}"),
                span: owner,
                label: "has no input of that name",
                help: Some(match closest(name, names.iter().copied()) {
                    Some(close) => format!("did you mean `{close}`?"),
                    None if names.is_empty() => "this takes no inputs".to_owned(),
                    None => format!("the inputs are `{}`", names.join("`, `")),
                }),
            });
        }
    }
    let mut values = Vec::with_capacity(params.len());
    for param in params {
        let mut value = match (given.get(&param.name), &param.default) {
            (Some(value), _) => value.clone(),
            (None, Some(default)) => Val::from(default),
            (None, None) if param.ty.nullable => Val::Null,
            (None, None) => {
                problems.push(InputProblem {
                    message: format!("missing required input `{}` ({})", param.name, param.ty),
                    span: param.span,
                    label: "declared here",
                    help: from.map(|from| from.missing_help(&param.name)),
                });
                continue;
            }
        };
        if let Err(found) = param.ty.admit(&mut value, &param.name) {
            problems.extend(found.into_iter().map(|problem| InputProblem {
                message: format!("input {problem}"),
                span: param.span,
                label: "declared here",
                help: None,
            }));
        }
        values.push(value);
    }
    if problems.is_empty() { Ok(values) } else { Err(problems) }
}
