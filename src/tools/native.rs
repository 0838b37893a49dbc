//! Tools implemented in Rust by a program that embeds ignite.
//!
//! Input: a [`NativeTool`] registered on a [`Toolbox`](super::Toolbox). Output: its result
//! or its error text. A `.ign` file refers to one with `native "name"`; a registered
//! native that no `.ign` tool names is still offered through the
//! [`Registry`](super::Registry). Calls run on tokio's blocking pool, so an
//! implementation may do blocking I/O.

use serde_json::Value;

use super::schema::object_schema;

/// A tool implemented in Rust.
///
/// ```
/// use igniter::tools::{NativeTool, schema_for};
/// use serde_json::{Value, json};
///
/// #[derive(schemars::JsonSchema, serde::Deserialize)]
/// struct Args { sku: String }
///
/// struct Stock;
/// impl NativeTool for Stock {
///     fn name(&self) -> &str { "stock_level" }
///     fn description(&self) -> &str { "Units in stock for a SKU" }
///     fn parameters(&self) -> Value { schema_for::<Args>() }
///     fn call(&self, args: Value) -> Result<Value, String> {
///         let args: Args = serde_json::from_value(args).map_err(|e| e.to_string())?;
///         Ok(json!({"sku": args.sku, "units": 12}))
///     }
/// }
/// ```
pub trait NativeTool: Send + Sync + 'static {
    /// The name `.ign` uses in `native "name"` and models see when it is not declared.
    fn name(&self) -> &str;
    /// What it does, for the model.
    fn description(&self) -> &str;
    /// The parameters as a JSON Schema object (see [`schema_for`]).
    fn parameters(&self) -> Value;
    /// Capabilities a calling agent must hold when the tool is not declared in `.ign`
    /// (a declared tool uses its `requires_capability` line). None by default.
    fn capabilities(&self) -> Vec<String> {
        Vec::new()
    }
    /// Runs the tool on validated arguments; the error text goes back to the model.
    ///
    /// # Errors
    /// Whatever the tool reports; it is sent to the model as the tool result.
    fn call(&self, args: Value) -> Result<Value, String>;
}

/// The parameters schema of a [`schemars::JsonSchema`] type, reshaped to ignite's
/// `{"type":"object","properties":{..},"required":[..]}`: subschemas are inlined and the
/// root's `$schema`, `title` and `description` dropped.
#[must_use]
pub fn schema_for<T: schemars::JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let root = generator.into_root_schema_for::<T>().to_value();
    let properties = root.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let required = root.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut schema = object_schema(properties, required);
    if let (Value::Object(out), Some(extra)) = (&mut schema, root.get("additionalProperties")) {
        out.insert("additionalProperties".into(), extra.clone());
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arguments of a test tool.
    #[allow(dead_code)]
    #[derive(schemars::JsonSchema)]
    struct Args {
        /// Product SKU identifier
        sku: String,
        /// Max rows
        limit: Option<u32>,
        tags: Vec<String>,
        nested: Inner,
    }

    #[allow(dead_code)]
    #[derive(schemars::JsonSchema)]
    struct Inner {
        flag: bool,
    }

    #[test]
    fn schema_from_schemars() {
        insta::assert_json_snapshot!(schema_for::<Args>());
    }
}
