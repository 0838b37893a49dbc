//! `json.lookup`: one record of a JSON file, found by key.
//!
//! Config: `file` (required, relative to the declaring file's folder) and `key`
//! (default `id`). The file holds either an array of records, searched for the one whose
//! `key` field equals the argument, or an object keyed by id, indexed by the argument.
//! A number and its text match (`1` finds `"1"` and the other way round). Output: the
//! record, or an error naming the key and the value. The file is read on every call, so
//! edits show up at once.

use std::path::PathBuf;

use serde_json::Value;

use super::Context;
use crate::eval::push_display;
use crate::tools::ToolError;

/// A configured lookup.
pub(super) struct Lookup {
    file: PathBuf,
    shown: String,
    /// The record field to match, and the param that carries the value.
    pub(super) key: String,
}

impl Lookup {
    /// Reads `file` and `key` from the tool's config.
    pub(super) fn from_config(context: &Context<'_>) -> Result<Self, ToolError> {
        let text = |name: &str| match context.config.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ToolError::Failed(format!(
                "config `{name}` of `json.lookup` must be a string, got {}",
                crate::eval::describe(other)
            ))),
        };
        let file = text("file")?.ok_or_else(|| {
            ToolError::Failed("builtin `json.lookup` needs a config `file`".to_owned())
        })?;
        let key = text("key")?.unwrap_or_else(|| "id".to_owned());
        Ok(Self { file: context.tool.dir.join(&file), shown: file, key })
    }

    /// The record whose key is `value`.
    pub(super) fn find(&self, value: &Value) -> Result<Value, ToolError> {
        let text = std::fs::read_to_string(&self.file)
            .map_err(|e| ToolError::Failed(format!("cannot read `{}`: {e}", self.shown)))?;
        let data: Value = serde_json::from_str(&text)
            .map_err(|e| ToolError::Failed(format!("`{}` is not valid JSON: {e}", self.shown)))?;
        let wanted = display(value);
        let found = match &data {
            Value::Array(records) => records
                .iter()
                .find(|r| r.get(&self.key).is_some_and(|k| k == value || display(k) == wanted)),
            Value::Object(map) => map.get(&wanted),
            _ => {
                return Err(ToolError::Failed(format!(
                    "`{}` must hold an array of records or an object keyed by id",
                    self.shown
                )));
            }
        };
        found.cloned().ok_or_else(|| {
            ToolError::Failed(format!(
                "no record with `{}` = {value} in `{}`",
                self.key, self.shown
            ))
        })
    }
}

fn display(value: &Value) -> String {
    let mut out = String::new();
    push_display(&mut out, value);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use crate::ir::{self, Builtin, Implementation};
    use crate::tools::test_support::{program, tool_with};
    use crate::tools::{ToolError, Toolbox};

    async fn lookup(data: &Value, key: Option<&str>, args: Value) -> Result<Value, ToolError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("data/products.json"), data.to_string()).unwrap();
        let mut config = Map::new();
        config.insert("file".into(), json!("data/products.json"));
        if let Some(key) = key {
            config.insert("key".into(), json!(key));
        }
        let imp = Implementation::Builtin { builtin: Builtin::JsonLookup, config };
        let p = program(vec![tool_with("Lookup", &[("sku", "any")], imp, dir.path())]);
        Toolbox::new().call(&p, ir::ToolId(0), args).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn array_of_records() {
        let data = json!([{"sku": "A-1", "price": 10}, {"sku": 7, "price": 3}]);
        assert_eq!(
            lookup(&data, Some("sku"), json!({"sku": "A-1"})).await,
            Ok(json!({"sku": "A-1", "price": 10}))
        );
        assert_eq!(
            lookup(&data, Some("sku"), json!({"sku": "7"})).await,
            Ok(json!({"sku": 7, "price": 3}))
        );
        assert_eq!(
            lookup(&data, Some("sku"), json!({"sku": "Z-9"})).await.unwrap_err().to_string(),
            "no record with `sku` = \"Z-9\" in `data/products.json`"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn object_keyed_by_id_and_first_param_fallback() {
        let data = json!({"A-1": {"price": 10}});
        assert_eq!(lookup(&data, None, json!({"sku": "A-1"})).await, Ok(json!({"price": 10})));
        let err = lookup(&json!(3), None, json!({"sku": "A-1"})).await.unwrap_err();
        assert!(err.to_string().contains("must hold an array"), "{err}");
    }
}
