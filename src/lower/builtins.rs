//! `builtin "name" {config}` declarations against the builtin's descriptor
//! (`ir/builtin.rs`): every config key known (else "did you mean"), a
//! string, required ones present; every param the builtin reads declared
//! (by name or position) with a type it accepts.

use serde_json::{Map, Value};

use super::Lowerer;
use crate::ast;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, Builtin, ParamKind, TypeKind};
use crate::suggest::{did_you_mean, list};

impl Lowerer<'_> {
    /// Checks a builtin tool's config and params against the builtin's descriptor.
    pub(super) fn check_builtin(
        &mut self,
        tool: &ast::Tool,
        builtin: Builtin,
        config: &Map<String, Value>,
        params: &[ir::Param],
    ) {
        let spec = builtin.spec();
        let config_expr = tool.implementations.iter().find_map(|i| match i {
            ast::Implementation::Builtin { config, span, .. } => Some((config.as_ref(), *span)),
            _ => None,
        });
        let (config_expr, clause) = config_expr.unwrap_or((None, tool.span));
        let known: Vec<&str> = spec.config.iter().map(|k| k.name).collect();
        if let Some(ast::ExprKind::Object(entries)) = config_expr.map(|e| &e.kind) {
            for (key, value) in entries {
                if !known.contains(&&*key.name) {
                    let help =
                        did_you_mean(&key.name, known.iter().copied()).unwrap_or_else(|| {
                            if known.is_empty() {
                                format!("`{}` takes no config; remove it", spec.name)
                            } else {
                                format!("`{}` accepts {}", spec.name, list(&known))
                            }
                        });
                    self.push(
                        Diagnostic::error(
                            Code::BuiltinConfig,
                            key.span,
                            format!("builtin `{}` has no config key `{}`", spec.name, key.name),
                        )
                        .label("unknown config key")
                        .help(help),
                    );
                } else if config.get(&*key.name).is_some_and(|v| !v.is_string()) {
                    self.push(
                        Diagnostic::error(
                            Code::BuiltinConfig,
                            value.span,
                            format!(
                                "config `{}` of builtin `{}` must be a string",
                                key.name, spec.name
                            ),
                        )
                        .label("not a string"),
                    );
                }
            }
        }
        for key in spec.config.iter().filter(|k| k.required && !config.contains_key(k.name)) {
            self.push(
                Diagnostic::error(
                    Code::BuiltinConfig,
                    clause,
                    format!("builtin `{}` needs a config `{}`", spec.name, key.name),
                )
                .label(format!("no `{}` in the config", key.name))
                .help(format!("add it: `builtin \"{}\" {{{}: \"...\"}}`", spec.name, key.name)),
            );
        }
        let names = params.iter().map(|p| p.name.as_str());
        for (position, wanted) in spec.params.iter().enumerate() {
            let name = wanted.name_in(config);
            let Some(index) = spec.resolve(position, config, names.clone()) else {
                let ty = match wanted.kind {
                    ParamKind::String => "string",
                    ParamKind::Any => "any",
                };
                self.push(
                    Diagnostic::error(
                        Code::BuiltinParam,
                        tool.name.span,
                        format!(
                            "tool `{}` declares no param for `{name}`, which builtin `{}` reads",
                            tool.name.name, spec.name
                        ),
                    )
                    .label(format!("no param `{name}`"))
                    .help(format!("declare `param {name}: {ty}`")),
                );
                continue;
            };
            let param = &params[index];
            let fits = match wanted.kind {
                ParamKind::String => param.ty.kind == TypeKind::String && !param.ty.nullable,
                ParamKind::Any => true,
            };
            if !fits {
                self.push(
                    Diagnostic::error(
                        Code::BuiltinParam,
                        param.span,
                        format!(
                            "param `{}` of tool `{}` is `{}`, but builtin `{}` reads `{name}` as a \
                             `string`",
                            param.name, tool.name.name, param.ty, spec.name
                        ),
                    )
                    .label("not `string`")
                    .help(format!("declare it `param {}: string`", param.name)),
                );
            }
        }
    }
}
