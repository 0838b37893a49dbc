//! [`Registry`]: every tool a program can offer, with capability filtering.
//!
//! Input: a checked program and a [`Toolbox`]. Output: the `.ign` tools in declaration
//! order, then the registered natives no `.ign` tool names (in registration order; a
//! native whose name is already a tool name is left out). Each entry carries the
//! schema models see, its required capabilities and labels for `ignite tools`.

use serde_json::Value;

use super::capability::{CapabilityError, check_required, covers};
use super::{NativeTool, ToolView, Toolbox};
use crate::ir::{self, Implementation, Part};

/// Where a registered tool's implementation lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSource {
    /// A tool of the program.
    Declared(ir::ToolId),
    /// A native registered on the toolbox and not declared in `.ign`.
    Native,
}

/// One tool as models and `ignite tools` see it.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisteredTool {
    /// The name models call it by: the `tool_name`, or the native's name.
    pub name: String,
    /// The `.ign` declaration name (the native's name for undeclared natives).
    pub declared_name: String,
    /// What it does.
    pub description: String,
    /// The parameters schema, `{"type":"object",...}`.
    pub parameters: Value,
    /// Capabilities a calling agent must hold.
    pub capabilities: Vec<String>,
    /// Where it is implemented.
    pub source: ToolSource,
    /// The params as text: `sku: string, limit: integer = 5`.
    pub signature: String,
    /// The implementation as text: `exec python3 tools/catalog.py`.
    pub implementation: String,
}

impl RegisteredTool {
    /// What a model sees of it.
    #[must_use]
    pub fn view(&self) -> ToolView {
        ToolView {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
        }
    }

    /// The capability guard for this tool (see [`check_capabilities`](super::check_capabilities)).
    ///
    /// # Errors
    /// When `held` lacks a capability the tool requires.
    pub fn check_capabilities(&self, agent: &str, held: &[String]) -> Result<(), CapabilityError> {
        check_required(&self.name, &self.capabilities, agent, held)
    }

    fn declared(id: ir::ToolId, tool: &ir::Tool, toolbox: &Toolbox) -> Self {
        let view = toolbox.view(tool);
        let signature = if tool.params.is_empty() {
            schema_signature(&view.parameters)
        } else {
            tool.params.iter().map(param_signature).collect::<Vec<_>>().join(", ")
        };
        Self::new(
            view,
            tool.name.clone(),
            tool.capabilities.clone(),
            ToolSource::Declared(id),
            signature,
            implementation_label(tool, &tool.implementation),
        )
    }

    fn native(native: &dyn NativeTool) -> Self {
        let view = Toolbox::native_view(native);
        let signature = schema_signature(&view.parameters);
        Self::new(
            view,
            native.name().to_owned(),
            native.capabilities(),
            ToolSource::Native,
            signature,
            "native (registered)".to_owned(),
        )
    }

    fn new(
        view: ToolView,
        declared_name: String,
        capabilities: Vec<String>,
        source: ToolSource,
        signature: String,
        implementation: String,
    ) -> Self {
        let ToolView { name, description, parameters } = view;
        Self {
            name,
            declared_name,
            description,
            parameters,
            capabilities,
            source,
            signature,
            implementation,
        }
    }
}

/// The tools of a program and a toolbox.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Registry {
    tools: Vec<RegisteredTool>,
}

impl Registry {
    /// The `.ign` tools in declaration order, then natives not declared in `.ign`.
    #[must_use]
    pub fn from_program(program: &ir::Program, toolbox: &Toolbox) -> Registry {
        let mut tools: Vec<RegisteredTool> = program
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| RegisteredTool::declared(ir::ToolId::from_index(i), t, toolbox))
            .collect();
        let declared_natives: Vec<&str> = program
            .tools
            .iter()
            .filter_map(|t| match &t.implementation {
                Implementation::Native { name } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        for native in toolbox.natives() {
            let name = native.name();
            if !declared_natives.contains(&name) && !tools.iter().any(|t| t.name == name) {
                tools.push(RegisteredTool::native(native));
            }
        }
        Registry { tools }
    }

    /// The tool models call `name`, or declared as `name`.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools
            .iter()
            .find(|t| t.name == name)
            .or_else(|| self.tools.iter().find(|t| t.declared_name == name))
    }

    /// Every tool, in registry order.
    #[must_use]
    pub fn all(&self) -> &[RegisteredTool] {
        &self.tools
    }

    /// The tools an agent holding `capabilities` may call; a tool that requires none is
    /// always included.
    #[must_use]
    pub fn tools_for(&self, capabilities: &[String]) -> Vec<&RegisteredTool> {
        self.tools.iter().filter(|t| covers(&t.capabilities, capabilities)).collect()
    }

    /// The definitions in `format` (a provider's `tool` function, or
    /// [`ToolView::intermediate`]) as a JSON array: all tools, or those `capabilities`
    /// cover.
    #[must_use]
    pub fn schemas(
        &self,
        format: impl Fn(&ToolView) -> Value,
        capabilities: Option<&[String]>,
    ) -> Value {
        let tools = match capabilities {
            Some(held) => self.tools_for(held),
            None => self.tools.iter().collect(),
        };
        Value::Array(tools.into_iter().map(|t| format(&t.view())).collect())
    }
}

fn param_signature(param: &ir::Param) -> String {
    match &param.default {
        Some(default) => format!("{}: {} = {default}", param.name, param.ty),
        None => format!("{}: {}", param.name, param.ty),
    }
}

/// Params text from a JSON Schema: `name: type`, `?` when optional, `= default`.
fn schema_signature(parameters: &Value) -> String {
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let required = parameters.get("required").and_then(Value::as_array);
    let is_required = |name: &str| required.is_some_and(|r| r.iter().any(|v| v == name));
    properties
        .iter()
        .map(|(name, schema)| {
            let ty = match schema.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(ts)) => {
                    ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("|")
                }
                _ => "any".to_owned(),
            };
            let optional = if is_required(name) { "" } else { "?" };
            match schema.get("default") {
                Some(d) => format!("{name}: {ty}{optional} = {d}"),
                None => format!("{name}: {ty}{optional}"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn implementation_label(tool: &ir::Tool, implementation: &Implementation) -> String {
    match implementation {
        Implementation::Returns(_) => "returns".to_owned(),
        Implementation::Exec { program, args } => {
            std::iter::once(program).chain(args).fold("exec".to_owned(), |mut s, a| {
                s.push(' ');
                s.push_str(a);
                s
            })
        }
        Implementation::Http { method, url, .. } => {
            let method = match method {
                ir::HttpMethod::Get => "get",
                ir::HttpMethod::Post => "post",
            };
            format!("http {method} {}", url_label(tool, url))
        }
        Implementation::Builtin { builtin, .. } => format!("builtin {}", builtin.name()),
        Implementation::Native { name } => format!("native {name}"),
        Implementation::Mcp(mcp) => format!("mcp {} {}", mcp.server.name, mcp.tool),
    }
}

/// The URL with `{param}` holes; other interpolated expressions show as `{...}`.
fn url_label(tool: &ir::Tool, url: &ir::Expr) -> String {
    let hole = |e: &ir::Expr| match &e.kind {
        ir::ExprKind::Var(i) => {
            tool.params.get(*i as usize).map_or("{...}".to_owned(), |p| format!("{{{}}}", p.name))
        }
        _ => "{...}".to_owned(),
    };
    match &url.kind {
        ir::ExprKind::Literal(crate::eval::Val::String(s)) => s.to_string(),
        ir::ExprKind::Interpolate(parts) => parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.clone(),
                Part::Expr(e) => hole(e),
            })
            .collect(),
        _ => hole(url),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::tools::test_support::{hole, lit, param, program, template, text, tool, ty};

    pub(crate) struct Stock;

    impl NativeTool for Stock {
        fn name(&self) -> &str {
            "stock_level"
        }
        fn description(&self) -> &str {
            "Units in stock for a SKU"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]})
        }
        fn capabilities(&self) -> Vec<String> {
            vec!["inventory_read".into()]
        }
        fn call(&self, args: Value) -> Result<Value, String> {
            Ok(json!({"sku": args["sku"], "units": 12}))
        }
    }

    /// Calculator (no caps), DatabaseLookup (database_read), SendEmail (email_send),
    /// FetchPage (http, web_access + database_read).
    pub(crate) fn sample() -> ir::Program {
        let mut calc = tool("Calculator", "Evaluate arithmetic");
        calc.params = vec![param("expression", ty("string"), None, Some("e.g. 2 * (3 + 4)"))];
        calc.implementation = Implementation::Builtin {
            builtin: ir::Builtin::MathEval,
            config: serde_json::Map::new(),
        };
        let mut lookup = tool("DatabaseLookup", "Look up a product by SKU in the catalog");
        lookup.params = vec![
            param("sku", ty("string"), None, Some("Product SKU identifier")),
            param("fields", ty("array<string>?"), None, None),
            param("limit", ty("integer"), Some(json!(5)), None),
        ];
        lookup.capabilities = vec!["database_read".into()];
        lookup.implementation = Implementation::Exec {
            program: "python3".into(),
            args: vec!["tools/catalog.py".into()],
        };
        let mut email = tool("SendEmail", "Send an email to a recipient");
        email.params =
            ["to", "subject", "body"].iter().map(|n| param(n, ty("string"), None, None)).collect();
        email.capabilities = vec!["email_send".into()];
        email.implementation = Implementation::Native { name: "send_email".into() };
        let mut fetch = tool("FetchPage", "Fetch a catalog page");
        fetch.params = vec![param("page", ty("integer"), None, None)];
        fetch.capabilities = vec!["web_access".into(), "database_read".into()];
        fetch.implementation = Implementation::Http {
            method: ir::HttpMethod::Get,
            url: template(vec![text("https://shop.example/pages/"), hole(0)]),
            headers: vec![("Accept".into(), lit(json!("application/json")))],
        };
        program(vec![calc, lookup, email, fetch])
    }

    fn caps(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    pub(crate) fn toolbox() -> Toolbox {
        let mut toolbox = Toolbox::new();
        toolbox.register_native(Stock);
        toolbox
    }

    fn names(tools: &[&RegisteredTool]) -> Vec<String> {
        tools.iter().map(|t| t.name.clone()).collect()
    }

    #[test]
    fn declaration_order_then_natives() {
        let registry = Registry::from_program(&sample(), &toolbox());
        let all: Vec<&RegisteredTool> = registry.all().iter().collect();
        assert_eq!(
            names(&all),
            ["calculator", "database_lookup", "send_email", "fetch_page", "stock_level"]
        );
        assert_eq!(
            registry.find("DatabaseLookup").map(|t| t.name.as_str()),
            Some("database_lookup")
        );
        assert_eq!(registry.find("stock_level").map(|t| t.source), Some(ToolSource::Native));
        assert!(registry.find("nope").is_none());
    }

    #[test]
    fn tools_for_filters_by_capability() {
        let registry = Registry::from_program(&sample(), &toolbox());
        assert_eq!(names(&registry.tools_for(&[])), ["calculator"]);
        assert_eq!(
            names(&registry.tools_for(&caps(&["database_read"]))),
            ["calculator", "database_lookup"]
        );
        assert_eq!(
            names(&registry.tools_for(&caps(&["database_read", "web_access", "inventory_read"]))),
            ["calculator", "database_lookup", "fetch_page", "stock_level"]
        );
    }

    #[test]
    fn schemas_filtered_anthropic() {
        let registry = Registry::from_program(&sample(), &toolbox());
        let held = caps(&["database_read", "inventory_read"]);
        insta::assert_json_snapshot!(registry.schemas(crate::llm::anthropic::tool, Some(&held)));
    }

    #[test]
    fn schemas_all_openai() {
        let registry = Registry::from_program(&sample(), &Toolbox::new());
        let schemas = registry.schemas(crate::llm::openai::tool, None);
        assert_eq!(schemas.as_array().map(Vec::len), Some(4));
        assert_eq!(schemas[3]["function"]["name"], "fetch_page");
    }

    #[test]
    fn registered_guard() {
        let registry = Registry::from_program(&sample(), &toolbox());
        let stock = registry.find("stock_level").unwrap();
        assert!(stock.check_capabilities("Bot", &caps(&["inventory_read"])).is_ok());
        assert_eq!(
            stock.check_capabilities("Bot", &[]).unwrap_err().to_string(),
            "tool `stock_level` requires capability `inventory_read`, which agent `Bot` does not \
             hold (it holds none)"
        );
    }
}
