//! MCP servers and the tools they implement: `mcp Name { ... }`
//! declarations (exactly one of `command` and `url`, `env`, `header`,
//! `timeout`) and each `mcp Server "tool"` tool's signature from
//! `ignite.lock` (params from the locked `inputSchema`, `result` from its
//! `outputSchema`); a tool's own params and `result` must agree with the
//! lock. `check` never connects: without a lock it says to make one.

use std::sync::Arc;
use std::time::Duration;

use super::Lowerer;
use super::names::Decl;
use crate::ast;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, McpTool, McpTransport, Type, TypeKind};
use crate::source::Span;
use crate::suggest::did_you_mean;

/// A server's connection and call limit when it sets no `timeout`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl Lowerer<'_> {
    /// Lowers every `mcp` declaration, in declaration order.
    pub(super) fn lower_mcp_servers(&mut self) -> Vec<Arc<ir::McpServer>> {
        let decls = self.decls;
        decls.mcp.iter().map(|server| Arc::new(self.lower_mcp_server(server))).collect()
    }

    fn lower_mcp_server(&mut self, server: &ast::McpServer) -> ir::McpServer {
        let name = server.name.name.to_string();
        let transport = match (server.commands.as_slice(), server.urls.as_slice()) {
            ([command, ..], [url, ..]) => {
                self.push(
                    Diagnostic::error(
                        Code::BadSetting,
                        url.span,
                        format!("MCP server `{name}` has both `command` and `url`"),
                    )
                    .label("second way to reach it")
                    .note(command.span, "`command` here")
                    .help("keep `command` for a child over stdio or `url` for HTTP, not both"),
                );
                None
            }
            ([], []) => {
                self.push(
                    Diagnostic::error(
                        Code::BadSetting,
                        server.name.span,
                        format!("MCP server `{name}` has no `command` or `url`"),
                    )
                    .label("nothing says how to reach it")
                    .help("add `command \"program\" \"arg\"` (stdio) or `url \"http://...\"`"),
                );
                None
            }
            ([_, ..], []) => {
                let command = self.single(&server.commands, |s| s.span, "command");
                command.map(|command| {
                    let words: Vec<String> = command
                        .value
                        .iter()
                        .map(|w| {
                            self.expect_plain_string(w, "a `command` word").unwrap_or_default()
                        })
                        .collect();
                    let mut words = words.into_iter();
                    let program = words.next().unwrap_or_default();
                    McpTransport::Command { program, args: words.collect() }
                })
            }
            ([], [_, ..]) => {
                let url = self.single(&server.urls, |s| s.span, "url");
                url.and_then(|url| self.expect_plain_string(&url.value, "a `url`")).map(|url| {
                    let span = server.urls[0].value.span;
                    if !url.starts_with("http://") && !url.starts_with("https://") {
                        self.push(
                            self.bad_value(span, format!("`url` of `{name}` is not an HTTP URL"))
                                .help(
                                    "write the endpoint, e.g. `url \"http://127.0.0.1:8090/mcp\"`",
                                ),
                        );
                    }
                    McpTransport::Url(url)
                })
            }
        };
        let env = server
            .envs
            .iter()
            .filter_map(|(var, value)| {
                let text = self.setting_text(value, &format!("env {} =", var.name), "\"value\"")?;
                Some((var.name.to_string(), text))
            })
            .collect();
        if matches!(transport, Some(McpTransport::Url(_))) {
            for (var, _) in &server.envs {
                self.push(
                    Diagnostic::error(
                        Code::BadSetting,
                        var.span,
                        "`env` only applies to a server started with `command`",
                    )
                    .label("an HTTP server's environment is not ignite's to set"),
                );
            }
        }
        if matches!(transport, Some(McpTransport::Command { .. })) {
            for (header, _) in &server.headers {
                self.push(
                    Diagnostic::error(
                        Code::BadSetting,
                        header.span,
                        "`header` only applies to a server reached by `url`",
                    )
                    .label("a child over stdio has no headers"),
                );
            }
        }
        let headers = server
            .headers
            .iter()
            .filter_map(|(header, value)| {
                let header = self.expect_plain_string(header, "a header name")?;
                let value =
                    self.setting_text(value, &format!("header {header:?} ="), "\"value\"")?;
                Some((header, value))
            })
            .collect();
        let timeout = self
            .single(&server.timeouts, |s| s.span, "timeout")
            .and_then(|t| self.timeout(&t.value))
            .unwrap_or(DEFAULT_TIMEOUT);
        ir::McpServer {
            name,
            transport: transport
                .unwrap_or(McpTransport::Command { program: String::new(), args: Vec::new() }),
            env,
            headers,
            timeout,
            dir: self.sources[server.span.file].dir().to_path_buf(),
            span: server.span,
        }
    }

    /// The `mcp Server "tool"` of `tool`: the server, and the tool as
    /// the lock has it. `None` (reported) when either is unknown.
    pub(super) fn lower_mcp_implementation(
        &mut self,
        server: &ast::Ident,
        remote: &ast::Expr,
    ) -> Option<McpTool> {
        let remote_name = self.expect_plain_string(remote, "an MCP tool name")?;
        let Some(Decl::Mcp(index)) = self.decls.get(&server.name) else {
            let servers = self.decls.names_where(|d| matches!(d, Decl::Mcp(_)));
            let help = did_you_mean(&server.name, servers.iter().copied()).unwrap_or_else(|| {
                format!("declare it: `mcp {} {{ command \"program\" }}`", server.name)
            });
            self.push(
                Diagnostic::error(
                    Code::UnknownName,
                    server.span,
                    format!("unknown MCP server `{}`", server.name),
                )
                .label("no `mcp` declaration has this name")
                .help(help),
            );
            return None;
        };
        let server_ir = Arc::clone(self.mcp.get(index)?);
        let locked = match self.lock {
            None => {
                self.push(
                    Diagnostic::error(
                        Code::McpLock,
                        remote.span,
                        format!("no `{}` to type MCP tool `{remote_name}` from", ir::LOCK_FILE),
                    )
                    .label("its params and result come from the lock")
                    .help("run `ignite mcp lock FILE` to record the servers' tools beside FILE"),
                );
                return None;
            }
            Some(Err(reason)) => {
                self.push(
                    Diagnostic::error(
                        Code::McpLock,
                        remote.span,
                        format!("`{}` cannot be read: {reason}", ir::LOCK_FILE),
                    )
                    .label("its params and result come from the lock")
                    .help("run `ignite mcp lock FILE` again to rewrite it"),
                );
                return None;
            }
            Some(Ok(lock)) => lock,
        };
        let Some(locked_server) = locked.servers.get(&*server.name) else {
            self.push(
                Diagnostic::error(
                    Code::McpLock,
                    server.span,
                    format!("MCP server `{}` is not in `{}`", server.name, ir::LOCK_FILE),
                )
                .label("not locked yet")
                .help("run `ignite mcp lock FILE` to add it"),
            );
            return None;
        };
        let Some(tool) = locked_server.tools.get(&remote_name) else {
            let names = locked_server.tools.keys().map(String::as_str);
            let help = did_you_mean(&remote_name, names).unwrap_or_else(|| {
                let names: Vec<&String> = locked_server.tools.keys().collect();
                format!("`{}` lists {}", server.name, crate::suggest::list(&names))
            });
            self.push(
                Diagnostic::error(
                    Code::UnknownMcpTool,
                    remote.span,
                    format!("MCP server `{}` has no tool `{remote_name}`", server.name),
                )
                .label(format!("not in the tools `{}` lists in the lock", server.name))
                .help(help),
            );
            return None;
        };
        Some(McpTool { server: server_ir, tool: remote_name, locked: Arc::new(tool.clone()) })
    }

    /// The params and result of an `mcp` tool: the lock's, or the
    /// declared ones when they agree with it (each disagreement reported).
    pub(super) fn mcp_signature(
        &mut self,
        tool: &ast::Tool,
        mcp: &McpTool,
        declared: Vec<ir::Param>,
        result: Option<Type>,
    ) -> (Vec<ir::Param>, Option<Type>) {
        let locked_params = mcp.locked.params(tool.span);
        let params = if tool.params.is_empty() {
            locked_params
        } else {
            self.check_declared_params(tool, mcp, &declared, &locked_params);
            declared
        };
        let locked_result = mcp.locked.result();
        let result = match (result, tool.results.first()) {
            (Some(declared), Some(setting)) => {
                if mcp.locked.says_result() && !refines(&declared, &locked_result) {
                    let disagreement = self.disagreement(
                        setting.span,
                        mcp,
                        format!(
                            "`result {declared}` of tool `{}` disagrees with the lock: `{}` returns {locked_result}",
                            tool.name.name, mcp.tool
                        ),
                    );
                    self.push(disagreement);
                }
                declared
            }
            _ => locked_result,
        };
        (params, Some(result))
    }

    fn check_declared_params(
        &mut self,
        tool: &ast::Tool,
        mcp: &McpTool,
        declared: &[ir::Param],
        locked: &[ir::Param],
    ) {
        for (param, written) in declared.iter().zip(&tool.params) {
            let Some(remote) = locked.iter().find(|p| p.name == param.name) else {
                let names = locked.iter().map(|p| p.name.as_str());
                let mut diagnostic = self.disagreement(
                    written.name.span,
                    mcp,
                    format!("param `{}` is not a param of MCP tool `{}`", param.name, mcp.tool),
                );
                if let Some(help) = did_you_mean(&param.name, names) {
                    diagnostic = diagnostic.help(help);
                }
                self.push(diagnostic);
                continue;
            };
            if !refines(&param.ty, &remote.ty) || (!param.required() && remote.required()) {
                let remote_ty = if remote.required() {
                    format!("a required {}", remote.ty)
                } else {
                    format!("an optional {}", remote.ty)
                };
                let message = format!(
                    "param `{}: {}` disagrees with the lock: `{}` takes {remote_ty}",
                    param.name, param.ty, mcp.tool
                );
                let diagnostic = self.disagreement(written.ty.span, mcp, message);
                self.push(diagnostic);
            }
        }
        for remote in locked.iter().filter(|p| p.required()) {
            if !declared.iter().any(|p| p.name == remote.name) {
                let message = format!(
                    "tool `{}` does not declare `{}`, a required param of MCP tool `{}`",
                    tool.name.name, remote.name, mcp.tool
                );
                let diagnostic = self.disagreement(tool.name.span, mcp, message).help(format!(
                    "add `param {}: {}`, or declare no params",
                    remote.name, remote.ty
                ));
                self.push(diagnostic);
            }
        }
    }

    fn disagreement(&self, span: Span, mcp: &McpTool, message: String) -> Diagnostic {
        Diagnostic::error(Code::McpSignature, span, message)
            .label(format!("not what `{}` of `{}` says in the lock", mcp.tool, mcp.server.name))
            .help("leave it out to take the lock's, or run `ignite mcp lock FILE` if the server changed")
    }
}

/// True when `declared` says no less than `locked` allows: the same type,
/// or a narrower one (a record for an object, an enum for a string, an
/// integer for a number, an item type for an array).
fn refines(declared: &Type, locked: &Type) -> bool {
    let kinds = match (&declared.kind, &locked.kind) {
        (_, TypeKind::Any) => return true,
        (TypeKind::Record(_) | TypeKind::Object, TypeKind::Object)
        | (TypeKind::Enum(_) | TypeKind::String, TypeKind::String)
        | (TypeKind::Integer | TypeKind::Float, TypeKind::Float)
        | (TypeKind::Integer, TypeKind::Integer)
        | (TypeKind::Boolean, TypeKind::Boolean)
        | (TypeKind::Array(_), TypeKind::Array(None)) => true,
        (TypeKind::Array(Some(a)), TypeKind::Array(Some(b))) => refines(a, b),
        _ => false,
    };
    kinds && (locked.nullable || !declared.nullable)
}

#[cfg(test)]
mod tests {
    #[test]
    fn without_a_lock_check_says_to_make_one() {
        let text = "mcp S {\n  command \"srv\"\n}\ntool T {\n  mcp S \"t\"\n}\n";
        let compilation = crate::compile_source("nolock.ign", text);
        assert!(compilation.program.is_none());
        let messages: Vec<String> =
            compilation.diagnostics.iter().map(|d| format!("{} {:?}", d.message, d.help)).collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].contains("no `ignite.lock` to type MCP tool `t` from"), "{messages:?}");
        assert!(messages[0].contains("run `ignite mcp lock FILE`"), "{messages:?}");
    }
}
