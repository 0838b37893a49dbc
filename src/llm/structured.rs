//! Structured answers: an agent's `result T`.
//!
//! Input: the declared type and the final text of a model turn. Output:
//! the value, or every way it does not fit (to send back for another
//! attempt, or to fail the node with).
//!
//! Providers want an object at the root of a structured answer, so a
//! record type is asked for as it is and any other type (`array<Line>`,
//! an enum, `Ticket?`) as `{"value": T}`, unwrapped here. Each wire module
//! turns [`ResultSchema`] into its provider's native request field.
//!
//! The reply is read tolerantly (surrounding whitespace and a Markdown code
//! fence are dropped), then admitted by the one check every value entering
//! a run gets ([`Type::admit`]): field defaults are filled in (`null` for
//! a field with a default means the default), `5.0` for an integer is 5,
//! and every problem names its field (`result.stars`).

use serde_json::{Value, json};

use crate::ir::{Type, TypeKind};
use crate::tools::type_schema;

/// What a model is asked for: a name and the JSON Schema of the answer
/// (always an object), in the plain shape of `tools::type_schema`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultSchema {
    /// The type's name (`Ticket`), or `result` for types without one;
    /// OpenAI wants it (`[A-Za-z0-9_-]`).
    pub name: String,
    /// The answer's schema.
    pub schema: Value,
}

/// A declared result type and how it is asked for.
pub(crate) struct Structured<'a> {
    ty: &'a Type,
    /// Asked for as `{"value": T}`.
    wrapped: bool,
    pub(crate) schema: ResultSchema,
}

impl<'a> Structured<'a> {
    pub(crate) fn new(ty: &'a Type) -> Self {
        let (name, wrapped) = match &ty.kind {
            TypeKind::Record(r) if !ty.nullable => (r.name.clone(), false),
            TypeKind::Record(r) => (r.name.clone(), true),
            TypeKind::Enum(e) => (e.name.clone(), true),
            _ => ("result".to_owned(), true),
        };
        let inner = Value::Object(type_schema(ty));
        let schema = if wrapped {
            json!({
                "type": "object",
                "properties": {"value": inner},
                "required": ["value"],
                "additionalProperties": false,
            })
        } else {
            inner
        };
        Self { ty, wrapped, schema: ResultSchema { name, schema } }
    }

    /// The value of a reply's text, or every problem with it.
    pub(crate) fn read(&self, text: &str) -> Result<Value, Vec<String>> {
        let json = strip_fence(text);
        let answer: Value =
            serde_json::from_str(json).map_err(|e| vec![format!("the reply is not JSON ({e})")])?;
        let mut value = if self.wrapped { unwrap(answer)? } else { answer };
        self.ty.admit(&mut value, "result")?;
        Ok(value)
    }

    /// The user message asking for another attempt.
    pub(crate) fn repair_prompt(&self, problems: &[String]) -> String {
        let mut text =
            format!("Your answer does not fit the required JSON schema `{}`:\n", self.schema.name);
        for problem in problems {
            text.push_str("- ");
            text.push_str(problem);
            text.push('\n');
        }
        text.push_str("Reply again with only the corrected JSON.");
        text
    }
}

/// The `value` of a wrapped answer, `{"value": T}`.
fn unwrap(answer: Value) -> Result<Value, Vec<String>> {
    match answer {
        Value::Object(mut map) if map.len() == 1 && map.contains_key("value") => {
            Ok(map.remove("value").unwrap_or(Value::Null))
        }
        other => Err(vec![format!(
            "expected an object with the one field `value`, got {}",
            crate::ir::describe(&other)
        )]),
    }
}

/// `text` without surrounding whitespace and a Markdown code fence
/// (```` ```json ... ``` ````) around it.
pub(crate) fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else { return trimmed };
    // The fence's first line may name a language.
    let body = rest.split_once('\n').map_or("", |(_, body)| body);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// The start of a reply, for error messages.
pub(crate) fn excerpt(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() > 200 {
        format!("{}...", text.chars().take(197).collect::<String>())
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_dropped() {
        assert_eq!(strip_fence("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(strip_fence("  ```\n[1]\n```  \n"), "[1]");
        assert_eq!(strip_fence("{\"a\": 1}"), "{\"a\": 1}");
        assert_eq!(strip_fence("```json\n{\"a\": 1}"), "{\"a\": 1}");
    }
}
