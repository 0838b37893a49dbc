//! Tools: params, description, capabilities, approval, timeout and exactly
//! one implementation; the `tool_name` models see, unique across the
//! program. A `requires_approval when COND` condition reads the params and
//! must be boolean.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Map, Value};

use super::Lowerer;
use super::expr::Scope;
use crate::ast;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, Builtin, HttpMethod, Implementation};
use crate::suggest::did_you_mean;

/// The name models see for a tool declared as `name`: snake_case, with
/// runs of capitals read as one word (`HTTPFetch` → `http_fetch`,
/// `getURLData` → `get_url_data`, `SendEmail2` → `send_email2`).
#[must_use]
pub fn tool_name(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).map(|p| chars[p]);
            let next = chars.get(i + 1);
            // A capital starts a word after a lower-case letter or digit,
            // and ends an acronym when a lower-case letter follows it.
            let starts_word = match prev {
                Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_ascii_uppercase() => next.is_some_and(char::is_ascii_lowercase),
                _ => false,
            };
            if starts_word && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl Lowerer<'_> {
    /// Lowers every tool, then reports `tool_name` clashes.
    pub(super) fn lower_tools(&mut self) -> Vec<ir::Tool> {
        let decls = self.decls;
        let tools: Vec<ir::Tool> = decls.tools.iter().map(|t| self.lower_tool(t)).collect();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, tool) in tools.iter().enumerate() {
            match seen.get(tool.tool_name.as_str()) {
                // Same declared name: already a duplicate declaration.
                Some(&first) if tools[first].name != tool.name => self.push(
                    Diagnostic::error(
                        Code::ToolNameClash,
                        decls.tools[i].name.span,
                        format!(
                            "tools `{}` and `{}` are both called `{}` by models",
                            tools[first].name, tool.name, tool.tool_name
                        ),
                    )
                    .label(format!("`{}` for models", tool.tool_name))
                    .note(decls.tools[first].name.span, "the first tool with that name")
                    .help("rename one of the tools"),
                ),
                Some(_) => {}
                None => {
                    seen.insert(&tool.tool_name, i);
                }
            }
        }
        tools
    }

    fn lower_tool(&mut self, tool: &ast::Tool) -> ir::Tool {
        let params = self.lower_params(&tool.params, "param");
        for description in &tool.descriptions {
            self.check_literal_interpolations(description, "a description");
        }
        let description = self
            .single(&tool.descriptions, |e| e.span, "description")
            .and_then(|d| self.expect_plain_string(d, "a description"))
            .unwrap_or_default();
        let timeout =
            self.single(&tool.timeouts, |e| e.span, "timeout").and_then(|t| self.timeout(t));
        let retries = self
            .single(&tool.retries, |e| e.span, "retries")
            .and_then(|r| self.whole_number(r, "retries", 0).map(|n| (n, r.span)));
        let mut capabilities: Vec<String> = Vec::new();
        for cap in &tool.capabilities {
            if !capabilities.iter().any(|c| *c == *cap.name) {
                capabilities.push(cap.name.to_string());
            }
        }
        let scope = Scope::new(
            params.iter().map(|p| p.name.as_str()).collect(),
            "param",
            format!("tool `{}`", tool.name.name),
        );
        let name = tool_name(&tool.name.name);
        let implementation = self.lower_implementation(tool, &scope, &name);
        let result =
            self.single(&tool.results, |s| s.span, "result").map(|s| self.lower_type(&s.value));
        let mut description = description;
        let (params, result) = match &implementation {
            Implementation::Mcp(mcp) => {
                if tool.descriptions.is_empty() {
                    description = mcp.locked.description.clone().unwrap_or_default();
                }
                self.mcp_signature(tool, mcp, params, result)
            }
            _ => (params, result),
        };
        // After the signature: an `mcp` tool's condition reads the params
        // the lock gives it.
        let approval = self.single(&tool.approvals, |s| s.span, "requires_approval").map(|s| {
            let scope = Scope::new(
                params.iter().map(|p| p.name.as_str()).collect(),
                "param",
                format!("tool `{}`", tool.name.name),
            );
            let when = s.value.as_ref().map(|condition| {
                let condition = self.lower_expr(condition, &scope);
                self.check_approval_condition(&condition, &params);
                condition
            });
            ir::Approval { when, span: s.span }
        });
        if let Implementation::Builtin { builtin, config } = &implementation {
            self.check_builtin(tool, *builtin, config, &params);
        }
        if let Some((_, span)) = retries {
            if !matches!(implementation, Implementation::Exec { .. } | Implementation::Http { .. })
            {
                self.push(
                    Diagnostic::error(
                        Code::BadSetting,
                        span,
                        format!(
                            "`retries` on tool `{}`, which is not `exec` or `http`",
                            tool.name.name
                        ),
                    )
                    .label("only `exec` and `http` tools are retried")
                    .help("remove `retries`; other tools do not fail in ways a retry helps"),
                );
            }
        }
        ir::Tool {
            name: tool.name.name.to_string(),
            tool_name: name,
            description,
            params,
            capabilities,
            approval,
            implementation,
            result,
            timeout,
            retries: retries.map_or(0, |(n, _)| n),
            cache: self.cache(&tool.caches),
            dir: self.sources[tool.span.file].dir().to_path_buf(),
            span: tool.span,
        }
    }

    /// The `cache` setting: `Some(None)` for `cache`, `Some(Some(d))` for
    /// `cache 7d` (units s, m, h, d).
    pub(super) fn cache(
        &mut self,
        caches: &[ast::Setting<Option<String>>],
    ) -> Option<Option<Duration>> {
        let setting = self.single(caches, |s| s.span, "cache")?;
        let Some(text) = &setting.value else { return Some(None) };
        let (digits, unit) = text.split_at(text.len() - 1);
        let seconds = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            _ => 86_400,
        };
        match digits.parse::<u64>().ok().and_then(|n| n.checked_mul(seconds)).filter(|&s| s > 0) {
            Some(total) => Some(Some(Duration::from_secs(total))),
            None => {
                let message = format!("`cache {text}` must last more than 0 seconds");
                let diagnostic = self.bad_value(setting.span, message).help(
                    "write `cache` to keep results for ever, or a duration such as `cache 7d`",
                );
                self.push(diagnostic);
                None
            }
        }
    }

    /// A positive number of seconds.
    pub(super) fn timeout(&mut self, expr: &ast::Expr) -> Option<Duration> {
        let seconds = Self::number(expr);
        match Duration::try_from_secs_f64(seconds) {
            Ok(d) if seconds > 0.0 => Some(d),
            _ => {
                self.push(
                    self.bad_value(expr.span, "`timeout` must be a positive number of seconds"),
                );
                None
            }
        }
    }

    /// The one implementation clause, reported when there is none or
    /// several. A placeholder stands in when it is missing.
    fn lower_implementation(
        &mut self,
        tool: &ast::Tool,
        scope: &Scope<'_>,
        name: &str,
    ) -> Implementation {
        let [first, rest @ ..] = tool.implementations.as_slice() else {
            self.push(
                Diagnostic::error(
                    Code::Implementation,
                    tool.name.span,
                    format!("tool `{}` has no implementation", tool.name.name),
                )
                .label("no implementation clause")
                .help("add one of `returns expr`, `exec \"program\"`, `http get \"url\"`, `builtin \"name\"` or `native`"),
            );
            return Implementation::Native { name: name.to_owned() };
        };
        for extra in rest {
            self.push(
                Diagnostic::error(
                    Code::Implementation,
                    extra.span(),
                    format!("tool `{}` has several implementations", tool.name.name),
                )
                .label("second implementation")
                .note(first.span(), "first implementation here")
                .help("keep exactly one implementation clause"),
            );
        }
        if !matches!(first, ast::Implementation::Http { .. }) {
            for (header, _) in &tool.headers {
                self.push(
                    Diagnostic::error(
                        Code::BadSetting,
                        header.span,
                        "`header` only applies to `http` tools",
                    )
                    .label("not an `http` tool"),
                );
            }
        }
        match first {
            ast::Implementation::Returns(expr, _) => {
                Implementation::Returns(self.lower_expr(expr, scope))
            }
            ast::Implementation::Exec(exprs, _) => {
                for word in exprs {
                    self.check_literal_interpolations(word, "an `exec` word");
                }
                let words: Vec<String> = exprs
                    .iter()
                    .map(|w| self.expect_plain_string(w, "an `exec` word").unwrap_or_default())
                    .collect();
                self.check_exec_files(self.sources[tool.span.file].dir(), exprs, &words);
                let mut words = words.into_iter();
                let program = words.next().unwrap_or_default();
                Implementation::Exec { program, args: words.collect() }
            }
            ast::Implementation::Http { post, url, .. } => {
                let url = self.lower_expr(url, scope);
                let headers = tool
                    .headers
                    .iter()
                    .map(|(name, value)| {
                        let name =
                            self.expect_plain_string(name, "a header name").unwrap_or_default();
                        (name, self.lower_expr(value, scope))
                    })
                    .collect();
                let method = if *post { HttpMethod::Post } else { HttpMethod::Get };
                Implementation::Http { method, url, headers }
            }
            ast::Implementation::Builtin { name: builtin, config, .. } => self
                .lower_builtin(builtin, config.as_ref())
                .unwrap_or(Implementation::Native { name: name.to_owned() }),
            ast::Implementation::Native(native, _) => Implementation::Native {
                name: native
                    .as_ref()
                    .and_then(|n| self.expect_plain_string(n, "a native name"))
                    .unwrap_or_else(|| name.to_owned()),
            },
            ast::Implementation::Mcp { server, tool: remote, .. } => {
                self.lower_mcp_implementation(server, remote).map_or_else(
                    || Implementation::Native { name: name.to_owned() },
                    Implementation::Mcp,
                )
            }
        }
    }

    fn lower_builtin(
        &mut self,
        name: &ast::Expr,
        config: Option<&ast::Expr>,
    ) -> Option<Implementation> {
        let text = self.expect_plain_string(name, "a builtin name")?;
        let config = match config {
            Some(expr) => match self.expect_constant(expr, "a builtin's config")? {
                Value::Object(map) => map,
                _ => Map::new(),
            },
            None => Map::new(),
        };
        let Some(builtin) = Builtin::named(&text) else {
            let names = Builtin::names();
            self.push(
                Diagnostic::error(
                    Code::UnknownBuiltin,
                    name.span,
                    format!("unknown builtin `{text}`"),
                )
                .label("not a builtin tool")
                .help(
                    did_you_mean(&text, names.iter().copied()).unwrap_or_else(|| {
                        format!("builtins are {}", crate::suggest::list(&names))
                    }),
                ),
            );
            return None;
        };
        Some(Implementation::Builtin { builtin, config })
    }
}

#[cfg(test)]
mod tests {
    use super::tool_name;

    #[test]
    fn snake_cases_declared_names() {
        assert_eq!(tool_name("DatabaseLookup"), "database_lookup");
        assert_eq!(tool_name("HTTPFetch"), "http_fetch");
        assert_eq!(tool_name("SendEmail2"), "send_email2");
        assert_eq!(tool_name("getURLData"), "get_url_data");
        assert_eq!(tool_name("Calculator"), "calculator");
        assert_eq!(tool_name("already_snake"), "already_snake");
        assert_eq!(tool_name("Send_Email"), "send_email");
        assert_eq!(tool_name("URL"), "url");
        assert_eq!(tool_name("Base64Encode"), "base64_encode");
    }
}
