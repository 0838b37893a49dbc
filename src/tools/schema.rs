//! JSON Schemas of tool parameters, in the three shapes the seed defines.
//!
//! Input: an [`ir::Tool`]. Output: `{"type":"object","properties":{..},"required":[..]}`
//! with properties in declaration order (`required` left out when empty), and the
//! [`ToolView`] (name, description, parameters) a model sees. The intermediate shape
//! `{name, description, parameters}` is [`ToolView::intermediate`]; each provider's
//! shape is its wire module's `tool` function (see `llm/providers.rs`).
//!
//! Each property carries its JSON type (none for `any`; `["T", "null"]` for `T?`),
//! `items` for `array<T>`, `enum` for enums, the object schema of a record
//! (`properties` with descriptions, `required`, `additionalProperties: false`), then
//! `description` and `default` when declared. An `image` or `document` is the
//! object `{media_type, data}`: `media_type` one of the kind's types, `data` a
//! base64 string (`contentEncoding: base64`). [`strict_schema`] rewrites any of
//! these for OpenAI's strict mode.

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
    params_schema(&tool.params)
}

/// The object schema of `params` (a tool's params, a contract's inputs).
pub(crate) fn params_schema<'a>(params: impl IntoIterator<Item = &'a ir::Param>) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in params {
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

/// The JSON Schema of a value of type `ty`: `type` (none for `any`), `items` for
/// `array<T>`, `enum` for enums, the object schema of a record.
#[must_use]
pub fn type_schema(ty: &ir::Type) -> Map<String, Value> {
    let mut schema = Map::new();
    if let Some(name) = ty.json_type() {
        let ty_value = if ty.nullable { json!([name, "null"]) } else { json!(name) };
        schema.insert("type".into(), ty_value);
    }
    match &ty.kind {
        ir::TypeKind::Array(Some(item)) => {
            schema.insert("items".into(), Value::Object(type_schema(item)));
        }
        ir::TypeKind::Enum(e) => {
            let mut variants: Vec<Value> = e.variants.iter().cloned().map(Value::String).collect();
            if ty.nullable {
                variants.push(Value::Null);
            }
            schema.insert("enum".into(), Value::Array(variants));
        }
        ir::TypeKind::Record(record) => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for field in &record.fields {
                let mut field_schema = type_schema(&field.ty);
                if let Some(description) = &field.description {
                    field_schema.insert("description".into(), description.clone().into());
                }
                properties.insert(field.name.clone(), Value::Object(field_schema));
                if field.required() {
                    required.push(Value::String(field.name.clone()));
                }
            }
            schema.insert("properties".into(), Value::Object(properties));
            if !required.is_empty() {
                schema.insert("required".into(), Value::Array(required));
            }
            schema.insert("additionalProperties".into(), Value::Bool(false));
        }
        ir::TypeKind::Media(kind) => {
            let types: Vec<&str> = kind.formats().map(|f| f.media_type).collect();
            schema.insert(
                "properties".into(),
                json!({
                    "media_type": {"type": "string", "enum": types},
                    "data": {"type": "string", "contentEncoding": "base64",
                        "description": format!("the bytes of the {}, in base64", kind.name())},
                }),
            );
            schema.insert("required".into(), json!(["media_type", "data"]));
            schema.insert("additionalProperties".into(), Value::Bool(false));
        }
        _ => {}
    }
    schema
}

/// `schema` rewritten for OpenAI's strict mode, and whether strict mode can take
/// it. Every object lists all its properties in `required` and says
/// `additionalProperties: false`; a property that was optional becomes nullable
/// (`null` means "absent": the default applies); `default` moves into the
/// description (strict mode has no `default`). A schema with no `type` (`any`), an
/// object without `properties` or an array without `items` cannot be strict.
#[must_use]
pub fn strict_schema(schema: &Value) -> (Value, bool) {
    let Value::Object(map) = schema else { return (schema.clone(), false) };
    let mut out = map.clone();
    let mut expressible = map.contains_key("type") || map.contains_key("enum");
    if let Some(items) = map.get("items") {
        let (items, ok) = strict_schema(items);
        out.insert("items".into(), items);
        expressible &= ok;
    } else if type_is(map, "array") {
        expressible = false;
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut strict_properties = Map::new();
        for (name, property) in properties {
            let (mut property, ok) = strict_schema(property);
            expressible &= ok;
            if let Value::Object(p) = &mut property {
                if !required.contains(&name.as_str()) {
                    make_nullable(p);
                }
                if let Some(default) = p.remove("default") {
                    let text = match p.get("description").and_then(Value::as_str) {
                        Some(d) => format!("{d} (default: {default})"),
                        None => format!("default: {default}"),
                    };
                    p.insert("description".into(), text.into());
                }
            }
            strict_properties.insert(name.clone(), property);
        }
        let all: Vec<Value> = strict_properties.keys().cloned().map(Value::String).collect();
        out.insert("properties".into(), Value::Object(strict_properties));
        out.insert("required".into(), Value::Array(all));
        out.insert("additionalProperties".into(), Value::Bool(false));
    } else if type_is(map, "object") {
        expressible = false;
    }
    (Value::Object(out), expressible)
}

/// True when the schema's `type` is `name` or a list holding it.
fn type_is(map: &Map<String, Value>, name: &str) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == name,
        Some(Value::Array(types)) => types.iter().any(|t| t == name),
        _ => false,
    }
}

/// Adds `null` to a schema's `type` (and `enum`), once.
fn make_nullable(schema: &mut Map<String, Value>) {
    match schema.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            schema.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
            types.push(json!("null"));
        }
        _ => {}
    }
    if let Some(Value::Array(variants)) = schema.get_mut("enum") {
        if !variants.contains(&Value::Null) {
            variants.push(Value::Null);
        }
    }
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

    /// `record(items: array<Product>, priority: Priority?)` where `Product` has a
    /// described field, a default, a nullable field and an enum field.
    fn record_tool() -> ir::Tool {
        use std::sync::Arc;
        let priority = ir::Type::new(ir::TypeKind::Enum(Arc::new(ir::Enum {
            name: "Priority".into(),
            variants: vec!["low".into(), "high".into()],
            span: crate::tools::test_support::span(),
        })));
        let product = ir::Type::new(ir::TypeKind::Record(Arc::new(ir::Record {
            name: "Product".into(),
            fields: vec![
                param("sku", ty("string"), None, Some("Catalog SKU")),
                param("tags", ty("array<string>"), Some(json!([])), None),
                param("stock", ty("integer?"), None, None),
                param("priority", priority.clone(), None, None),
            ],
            span: crate::tools::test_support::span(),
        })));
        let mut t = tool("Record", "Record products");
        let items = ir::Type::new(ir::TypeKind::Array(Some(std::sync::Arc::new(product))));
        t.params = vec![
            param("items", items, None, Some("What to record")),
            param("priority", ir::Type { nullable: true, ..priority }, None, None),
            param("note", ty("string"), Some(json!("none")), Some("A note")),
        ];
        t
    }

    #[test]
    fn records_and_enums_in_every_shape() {
        let view = ToolView::declared(&record_tool());
        insta::assert_json_snapshot!(json!({
            "intermediate": view.intermediate(),
            "anthropic": crate::llm::anthropic::tool(&view),
            "openai": crate::llm::openai::tool(&view),
        }));
    }

    #[test]
    fn strict_only_when_expressible() {
        let strict = |t: &str| {
            let mut tool = tool("T", "t");
            tool.params = vec![param("x", ty(t), None, None)];
            strict_schema(&parameters_schema(&tool)).1
        };
        assert!(strict_schema(&parameters_schema(&record_tool())).1);
        assert!(strict("array<string>?"));
        assert!(!strict("array<object>"));
        assert!(!strict("any"));
        assert!(!strict("array"));
    }

    #[test]
    fn no_params_has_no_required() {
        let t = tool("Ping", "Ping");
        assert_eq!(parameters_schema(&t), json!({"type": "object", "properties": {}}));
    }
}
