//! Argument validation, and default filling.
//!
//! Input: a tool and the arguments a caller sent. Output: `Ok` or
//! [`ToolError::InvalidArguments`] with one message per problem, each naming the
//! param: "`sku`: missing required field (string)", "`limit`: expected integer,
//! got string \"five\"", "`foo`: unknown field of `Lookup` (did you mean `fo`?)".
//!
//! A tool that declares its params is checked against them by the one check of
//! declared types ([`ir::field_problems`], what inputs and results get too). A
//! registered native's own JSON Schema (a `native` tool that declares no params)
//! is checked with the `jsonschema` crate: this file compiles (and caches) those
//! validators and words their errors alike ("`sku`: missing required property").
//! Unknown properties are rejected: the validator's schema is the published one
//! plus `additionalProperties: false` (unless the schema says otherwise itself).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::{Map, Value};

use super::ToolError;
use crate::eval::describe;
use crate::ir;

/// Checks the arguments of a tool that declares its params (filled by
/// [`ir::fill_fields`] first).
pub(crate) fn validate_declared(tool: &ir::Tool, args: &Value) -> Result<(), ToolError> {
    let problems = if args.is_object() {
        ir::field_problems(&tool.params, &tool.name, args)
    } else {
        vec![format!("arguments: expected an object, got {}", describe(args))]
    };
    if problems.is_empty() { Ok(()) } else { Err(ToolError::InvalidArguments(problems)) }
}

/// Compiled validators by tool name; a changed schema under the same name recompiles.
#[derive(Default)]
pub(crate) struct Validators {
    cache: Mutex<HashMap<String, (Value, Arc<Validator>)>>,
}

impl Validators {
    /// Validates `args` for tool `name` whose parameters schema is `parameters`.
    pub(crate) fn validate(
        &self,
        name: &str,
        parameters: &Value,
        args: &Value,
    ) -> Result<(), ToolError> {
        let validator = self.get(name, parameters)?;
        let messages: Vec<String> =
            validator.iter_errors(args).flat_map(|e| messages(&e, parameters)).collect();
        if messages.is_empty() { Ok(()) } else { Err(ToolError::InvalidArguments(messages)) }
    }

    fn get(&self, name: &str, parameters: &Value) -> Result<Arc<Validator>, ToolError> {
        let mut cache = crate::sync::lock(&self.cache);
        if let Some((schema, validator)) = cache.get(name) {
            if schema == parameters {
                return Ok(Arc::clone(validator));
            }
        }
        let validator = Arc::new(compile(parameters).map_err(|e| {
            ToolError::Failed(format!("the parameters schema of tool `{name}` is invalid: {e}"))
        })?);
        cache.insert(name.to_owned(), (parameters.clone(), Arc::clone(&validator)));
        Ok(validator)
    }
}

fn compile(parameters: &Value) -> Result<Validator, ValidationError<'static>> {
    let mut schema = parameters.clone();
    if let Value::Object(map) = &mut schema {
        if map.contains_key("properties") && !map.contains_key("additionalProperties") {
            map.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
    jsonschema::validator_for(&schema)
}

/// The model-facing messages for one validation error.
fn messages(error: &ValidationError<'_>, parameters: &Value) -> Vec<String> {
    let path = render_path(error.instance_path().as_str());
    let at = |name: &str| if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") };
    match error.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().map_or_else(|| property.to_string(), str::to_owned);
            vec![format!("`{}`: missing required property", at(&name))]
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => unexpected
            .iter()
            .map(|name| {
                let hint =
                    if path.is_empty() { suggestion(name, parameters) } else { String::new() };
                format!("`{}`: unknown property{hint}", at(name))
            })
            .collect(),
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => {
                    // `null` last: "expected number or null" reads as the declared `float?`.
                    let mut names: Vec<String> = set.iter().map(|t| t.to_string()).collect();
                    names.sort_by_key(|n| n == "null");
                    names.join(" or ")
                }
            };
            let got = describe(error.instance().as_ref());
            if path.is_empty() {
                vec![format!("arguments: expected an object, got {got}")]
            } else {
                vec![format!("`{path}`: expected {expected}, got {got}")]
            }
        }
        _ if path.is_empty() => vec![format!("arguments: {error}")],
        _ => vec![format!("`{path}`: {error}")],
    }
}

/// `/tags/1/name` → `tags[1].name`.
fn render_path(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    out
}

/// " (did you mean `sku`?)" when a declared property is close to `name`.
fn suggestion(name: &str, parameters: &Value) -> String {
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    crate::suggest::closest(name, properties.keys().map(String::as_str))
        .map_or_else(String::new, |k| format!(" (did you mean `{k}`?)"))
}

/// Orders `args` by declaration and fills absent params: the default, else `null`.
/// Each is conformed to its type ([`ir::Type::conform`]: `5.0` for an `integer` is 5).
pub(crate) fn fill_declared(
    params: &[ir::Param],
    mut args: Map<String, Value>,
) -> Map<String, Value> {
    let mut out = Map::with_capacity(params.len());
    for param in params {
        let mut value =
            args.remove(&param.name).or_else(|| param.default.clone()).unwrap_or(Value::Null);
        param.ty.conform(&mut value);
        out.insert(param.name.clone(), value);
    }
    // Only reachable when a schema allowed extra properties; keep them, after the params.
    out.extend(args);
    out
}

/// Fills `default`s from a schema's properties for absent arguments (native tools).
pub(crate) fn fill_from_schema(
    parameters: &Value,
    mut args: Map<String, Value>,
) -> Map<String, Value> {
    if let Some(properties) = parameters.get("properties").and_then(Value::as_object) {
        for (name, schema) in properties {
            if let (false, Some(default)) = (args.contains_key(name), schema.get("default")) {
                args.insert(name.clone(), default.clone());
            }
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::parameters_schema;
    use crate::tools::test_support::{param, tool, ty};

    fn schema() -> Value {
        parameters_schema(&lookup())
    }

    fn lookup() -> ir::Tool {
        let mut t = tool("DatabaseLookup", "Look up");
        t.params = vec![
            param("sku", ty("string"), None, None),
            param("limit", ty("integer"), Some(json!(5)), None),
            param("fields", ty("array<string>?"), None, None),
            param("ratio", ty("float?"), None, None),
        ];
        t
    }

    fn check(args: Value) -> String {
        let mut args = args;
        ir::fill_fields(&lookup().params, &mut args);
        match validate_declared(&lookup(), &args) {
            Ok(()) => "ok".to_owned(),
            Err(ToolError::InvalidArguments(m)) => m.join("\n"),
            Err(other) => format!("other: {other}"),
        }
    }

    #[test]
    fn messages_snapshot() {
        let cases = [
            json!({"sku": "A-1"}),
            json!({"sku": "A-1", "limit": 5.0, "fields": null, "ratio": 2}),
            json!({}),
            json!({"sku": "A-1", "limit": "five"}),
            json!({"sku": 42, "limit": 1.5}),
            json!({"sku": "A-1", "foo": 1, "skus": "x"}),
            json!({"sku": "A-1", "fields": ["a", 3]}),
            json!({"sku": "A-1", "ratio": "x"}),
            json!("just a string"),
            json!({"limit": true, "bar": null}),
        ];
        let out: Vec<String> =
            cases.iter().map(|c| format!("{c}\n  => {}", check(c.clone()))).collect();
        insta::assert_snapshot!(out.join("\n"));
    }

    #[test]
    fn cache_recompiles_on_schema_change() {
        let validators = Validators::default();
        let args = json!({"sku": "A"});
        assert!(validators.validate("t", &schema(), &args).is_ok());
        let other = json!({"type": "object", "properties": {"id": {"type": "integer"}}});
        assert!(validators.validate("t", &other, &args).is_err());
    }

    #[test]
    fn fills_defaults_in_declaration_order() {
        let mut t = tool("T", "t");
        t.params = vec![
            param("a", ty("integer"), Some(json!(5)), None),
            param("b", ty("string?"), None, None),
            param("c", ty("integer"), None, None),
        ];
        let Value::Object(args) = json!({"c": 3.0}) else { unreachable!() };
        let filled = fill_declared(&t.params, args);
        assert_eq!(Value::Object(filled).to_string(), r#"{"a":5,"b":null,"c":3}"#);
    }

    #[test]
    fn paths() {
        assert_eq!(render_path(""), "");
        assert_eq!(render_path("/tags/1/a~1b"), "tags[1].a/b");
    }
}
