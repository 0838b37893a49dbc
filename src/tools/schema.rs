//! JSON Schemas of tool parameters, in the three shapes the seed defines.
//!
//! Input: an [`ir::Tool`]. Output: `{"type":"object","properties":{..},"required":[..]}`
//! with properties in declaration order (`required` left out when empty), wrapped as the
//! intermediate `{name, description, parameters}`, Anthropic `{name, description,
//! input_schema}` or OpenAI `{type: "function", function: {..}}` object.
//!
//! Each property carries its JSON type (none for `any`; `["T", "null"]` for `T?`),
//! `items` for `array<T>`, then `description` and `default` when declared.

use serde_json::{Map, Value, json};

use crate::ir;

/// The shape of a tool definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SchemaFormat {
    /// `{name, description, parameters}`: ignite's own, provider-neutral shape.
    #[default]
    Intermediate,
    /// `{name, description, input_schema}` for the Anthropic Messages API.
    Anthropic,
    /// `{type: "function", function: {name, description, parameters}}` for OpenAI.
    OpenAi,
}

impl SchemaFormat {
    /// The format called `name` on the command line: `intermediate`, `anthropic`, `openai`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "intermediate" => Some(Self::Intermediate),
            "anthropic" => Some(Self::Anthropic),
            "openai" => Some(Self::OpenAi),
            _ => None,
        }
    }
}

/// The tool definition of `tool` in `format`.
#[must_use]
pub fn tool_schema(tool: &ir::Tool, format: SchemaFormat) -> Value {
    wrap(&tool.tool_name, &tool.description, parameters_schema(tool), format)
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

/// Wraps a parameters object as a tool definition in `format`.
pub(crate) fn wrap(
    name: &str,
    description: &str,
    parameters: Value,
    format: SchemaFormat,
) -> Value {
    match format {
        SchemaFormat::Intermediate => {
            json!({"name": name, "description": description, "parameters": parameters})
        }
        SchemaFormat::Anthropic => {
            json!({"name": name, "description": description, "input_schema": parameters})
        }
        SchemaFormat::OpenAi => json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters},
        }),
    }
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
        insta::assert_json_snapshot!(tool_schema(&lookup(), SchemaFormat::Intermediate));
    }

    #[test]
    fn anthropic() {
        insta::assert_json_snapshot!(tool_schema(&lookup(), SchemaFormat::Anthropic));
    }

    #[test]
    fn openai() {
        insta::assert_json_snapshot!(tool_schema(&lookup(), SchemaFormat::OpenAi));
    }

    #[test]
    fn no_params_has_no_required() {
        let t = tool("Ping", "Ping");
        assert_eq!(parameters_schema(&t), json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn format_names() {
        assert_eq!(SchemaFormat::from_name("openai"), Some(SchemaFormat::OpenAi));
        assert_eq!(SchemaFormat::from_name("gemini"), None);
    }
}
