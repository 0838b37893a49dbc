//! JSON Schemas of tool parameters, in the three shapes the seed defines.
//!
//! Input: an [`ir::Tool`]. Output: `{"type":"object","properties":{..},"required":[..]}`
//! with properties in declaration order (`required` left out when empty), and the
//! [`ToolView`] (name, description, parameters) a model sees. The intermediate shape
//! `{name, description, parameters}` is [`ToolView::intermediate`]; each provider's
//! shape is its wire module's `tool` function (see `llm/providers.rs`).
//!
//! Each property carries its JSON type (none for `any`; `["T", "null"]` for `T?`),
//! `items` for `array<T>`, then `description` and `default` when declared.

use serde_json::{Map, Value, json};

use crate::ir;

/// What a model sees of a tool: the one view every provider format, `ignite schema`,
/// the registry and argument validation are built from
/// ([`Toolbox::view`](super::Toolbox::view) computes it).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolView {
    /// The name models call it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The parameters schema, `{"type":"object",...}`; calls are validated against it.
    pub parameters: Value,
}

impl ToolView {
    /// The view of an `.ign` tool from its declaration alone.
    #[must_use]
    pub fn declared(tool: &ir::Tool) -> Self {
        Self {
            name: tool.tool_name.clone(),
            description: tool.description.clone(),
            parameters: parameters_schema(tool),
        }
    }

    /// ignite's own provider-neutral shape: `{name, description, parameters}`.
    #[must_use]
    pub fn intermediate(&self) -> Value {
        json!({"name": self.name, "description": self.description, "parameters": self.parameters})
    }
}

/// The parameters object of `tool`: `{"type":"object","properties":{..},"required":[..]}`.
#[must_use]
pub fn parameters_schema(tool: &ir::Tool) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in &tool.params {
        properties.insert(param.name.clone(), Value::Object(param_schema(param)));
        if param.required() {
            required.push(Value::String(param.name.clone()));
        }
    }
    object_schema(properties, required)
}

/// `{"type":"object","properties":..,"required":..}`, `required` left out when empty.
pub(crate) fn object_schema(properties: Map<String, Value>, required: Vec<Value>) -> Value {
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    Value::Object(schema)
}

fn param_schema(param: &ir::Param) -> Map<String, Value> {
    let mut schema = type_schema(&param.ty);
    if let Some(description) = &param.description {
        schema.insert("description".into(), description.clone().into());
    }
    if let Some(default) = &param.default {
        schema.insert("default".into(), default.clone());
    }
    schema
}

/// The schema of a value of type `ty`: `type`, plus `items` for `array<T>`.
fn type_schema(ty: &ir::Type) -> Map<String, Value> {
    let mut schema = Map::new();
    if let Some(name) = ty.json_type() {
        let ty_value = if ty.nullable { json!([name, "null"]) } else { json!(name) };
        schema.insert("type".into(), ty_value);
    }
    if let ir::TypeKind::Array(Some(item)) = &ty.kind {
        schema.insert("items".into(), Value::Object(type_schema(item)));
    }
    schema
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::test_support::{param, tool, ty};

    fn lookup() -> ir::Tool {
        let mut t = tool("DatabaseLookup", "Look up a product by SKU in the catalog");
        t.params = vec![
            param("sku", ty("string"), None, Some("Product SKU identifier")),
            param("fields", ty("array<string>?"), None, Some("Fields to return (null = all)")),
            param("limit", ty("integer"), Some(json!(5)), Some("Max rows")),
            param("extra", ty("any"), None, None),
            param("matrix", ty("array<array<float?>>"), None, None),
        ];
        t.capabilities = vec!["database_read".into()];
        t
    }

    #[test]
    fn intermediate() {
        insta::assert_json_snapshot!(ToolView::declared(&lookup()).intermediate());
    }

    #[test]
    fn anthropic() {
        insta::assert_json_snapshot!(crate::llm::anthropic::tool(&ToolView::declared(&lookup())));
    }

    #[test]
    fn openai() {
        insta::assert_json_snapshot!(crate::llm::openai::tool(&ToolView::declared(&lookup())));
    }

    #[test]
    fn no_params_has_no_required() {
        let t = tool("Ping", "Ping");
        assert_eq!(parameters_schema(&t), json!({"type": "object", "properties": {}}));
    }
}
