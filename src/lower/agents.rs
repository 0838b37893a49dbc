//! Agents: the provider and model chains, tools and the capabilities they
//! need, sampling settings, inputs and the prompt templates.
//!
//! A listed tool whose required capabilities the agent lacks is a warning,
//! not an error: the program runs, but that tool call would be refused.

use std::collections::HashMap;

use super::Lowerer;
use super::expr::Scope;
use super::names::Decl;
use crate::ast;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, ExprKind, ProviderChoice, ProviderId, ProviderKind, ToolId};
use crate::media::Kind;
use crate::suggest::{did_you_mean, list};

/// Tool turns allowed when `max_tool_iterations` is not written.
const DEFAULT_MAX_TOOL_ITERATIONS: u32 = 10;
/// Repair attempts after a structured answer that does not fit, when not set.
const DEFAULT_RESULT_RETRIES: u32 = 1;

impl Lowerer<'_> {
    /// Lowers every agent against the lowered tools.
    pub(super) fn lower_agents(
        &mut self,
        tools: &[ir::Tool],
        providers: &[ir::Provider],
    ) -> Vec<ir::Agent> {
        let decls = self.decls;
        decls.agents.iter().map(|a| self.lower_agent(a, tools, providers)).collect()
    }

    fn lower_agent(
        &mut self,
        agent: &ast::Agent,
        tools: &[ir::Tool],
        providers: &[ir::Provider],
    ) -> ir::Agent {
        let name = &agent.name.name;
        let providers_chosen = match self.single(&agent.providers, |s| s.span, "provider") {
            Some(setting) => setting.value.iter().filter_map(|r| self.provider_choice(r)).collect(),
            None => {
                self.missing_setting(agent, "provider", "provider anthropic");
                Vec::new()
            }
        };
        let models = match self.single(&agent.models, |s| s.span, "model") {
            Some(setting) => setting
                .value
                .iter()
                .filter_map(|m| self.setting_text(m, "model", "\"claude-haiku-4-5\""))
                .collect(),
            None => {
                self.missing_setting(agent, "model", "model \"claude-haiku-4-5\"");
                Vec::new()
            }
        };
        let mut capabilities: Vec<String> = Vec::new();
        for cap in &agent.capabilities {
            if !capabilities.iter().any(|c| *c == *cap.name) {
                capabilities.push(cap.name.to_string());
            }
        }
        let agent_tools = self.agent_tools(agent, tools, &capabilities);
        let max_tool_iterations = self
            .single(&agent.max_tool_iterations, |s| s.span, "max_tool_iterations")
            .map_or(Some(DEFAULT_MAX_TOOL_ITERATIONS), |s| {
                self.whole_number(&s.value, "max_tool_iterations", 1)
            })
            .unwrap_or(DEFAULT_MAX_TOOL_ITERATIONS);
        let temperature =
            self.single(&agent.temperatures, |s| s.span, "temperature").and_then(|s| {
                let t = Self::number(&s.value);
                if (0.0..=2.0).contains(&t) {
                    return Some(t);
                }
                self.push(self.bad_value(s.value.span, "`temperature` must be between 0 and 2"));
                None
            });
        if let Some(setting) = agent.temperatures.first() {
            self.ignored_setting(&providers_chosen, providers, "temperature", setting.span);
        }
        let max_tokens = self
            .single(&agent.max_tokens, |s| s.span, "max_tokens")
            .and_then(|s| self.whole_number(&s.value, "max_tokens", 1));
        let inputs = self.lower_params(&agent.inputs, "input");
        self.unsent_media(&providers_chosen, providers, &inputs);
        let scope = Scope::new(
            inputs.iter().map(|p| p.name.as_str()).collect(),
            "input",
            format!("agent `{name}`"),
        );
        let system_prompt = self
            .single(&agent.system_prompts, |s| s.span, "system_prompt")
            .map(|s| self.lower_expr(&s.value, &scope));
        if let Some(system) = &system_prompt {
            self.media_in_system_prompt(system, &inputs);
        }
        let prompt = self.prompt(agent, &inputs, &scope);
        let result =
            self.single(&agent.results, |s| s.span, "result").map(|s| self.lower_type(&s.value));
        let result_retries = self
            .single(&agent.result_retries, |s| s.span, "result_retries")
            .and_then(|s| self.whole_number(&s.value, "result_retries", 0))
            .unwrap_or(DEFAULT_RESULT_RETRIES);
        ir::Agent {
            name: name.to_string(),
            providers: providers_chosen,
            models,
            system_prompt,
            tools: agent_tools,
            capabilities,
            max_tool_iterations,
            temperature,
            max_tokens,
            inputs,
            prompt,
            result,
            result_retries,
            cache: self.cache(&agent.caches),
            span: agent.span,
        }
    }

    /// Warns that `setting` (written at `span`) is not sent to the kinds
    /// among `chosen` whose API does not take it.
    fn ignored_setting(
        &mut self,
        chosen: &[ProviderChoice],
        providers: &[ir::Provider],
        setting: &str,
        span: crate::source::Span,
    ) {
        let mut kinds: Vec<&str> = Vec::new();
        for choice in chosen {
            let kind = match choice {
                ProviderChoice::Kind(kind) => *kind,
                ProviderChoice::Declared(id) => providers[id.index()].kind,
                ProviderChoice::Script(_) => continue,
            };
            if kind.ignores(setting) && !kinds.contains(&kind.name()) {
                kinds.push(kind.name());
            }
        }
        if kinds.is_empty() {
            return;
        }
        let named: Vec<String> = kinds.iter().map(|k| format!("`{k}`")).collect();
        self.push(
            Diagnostic::warning(
                Code::IgnoredSetting,
                span,
                format!(
                    "`{setting}` is not sent to {} (its API no longer takes it)",
                    named.join(", ")
                ),
            )
            .label("ignored for this provider kind")
            .help(format!("remove `{setting}`, or use a kind that takes it")),
        );
    }

    /// Reports each input holding media (an `image`, a `document`, at any
    /// depth) that a provider kind among `chosen` does not take.
    fn unsent_media(
        &mut self,
        chosen: &[ProviderChoice],
        providers: &[ir::Provider],
        inputs: &[ir::Param],
    ) {
        for input in inputs {
            let mut kinds = Vec::new();
            media_in(&input.ty, &mut kinds);
            for choice in chosen {
                let kind = match choice {
                    ProviderChoice::Kind(kind) => *kind,
                    ProviderChoice::Declared(id) => providers[id.index()].kind,
                    ProviderChoice::Script(_) => continue,
                };
                if let Some(media) = kinds.iter().find(|&&m| !kind.takes(m)) {
                    let takes: Vec<&str> = [Kind::Image, Kind::Document]
                        .into_iter()
                        .filter(|&m| kind.takes(m))
                        .map(Kind::name)
                        .collect();
                    self.push(
                        Diagnostic::error(
                            Code::UnsentMedia,
                            input.span,
                            format!(
                                "input `{}` holds a `{}`, which provider kind `{kind}` does not take",
                                input.name,
                                media.name()
                            ),
                        )
                        .label(format!("`{}` here", input.ty))
                        .help(format!(
                            "`{kind}` takes {}; use `anthropic`, `openai` or `gemini` for a `{}`",
                            list(&takes),
                            media.name()
                        )),
                    );
                    break;
                }
            }
        }
    }

    /// Reports each image or document the system prompt `system` would
    /// interpolate: the system prompt is text for every provider, so the
    /// value would be sent as JSON, its base64 and all.
    fn media_in_system_prompt(&mut self, system: &ir::Expr, inputs: &[ir::Param]) {
        let ExprKind::Interpolate(parts) = &system.kind else { return };
        for part in parts {
            let ir::Part::Expr(part) = part else { continue };
            let Some(ty) = place_type(part, inputs) else { continue };
            let mut kinds = Vec::new();
            media_in(&ty, &mut kinds);
            let Some(media) = kinds.first() else { continue };
            let what = match ty.kind {
                ir::TypeKind::Media(_) => crate::media::a_kind(*media),
                _ => format!("`{ty}`, which holds {}", crate::media::a_kind(*media)),
            };
            self.push(
                Diagnostic::error(
                    Code::SystemMedia,
                    part.span,
                    format!("the system prompt interpolates {what}"),
                )
                .label("sent as text: JSON with the bytes in base64")
                .help(
                    "interpolate it in `prompt`, where it becomes the provider's own content block",
                ),
            );
        }
    }

    fn missing_setting(&mut self, agent: &ast::Agent, what: &str, example: &str) {
        self.push(
            Diagnostic::error(
                Code::BadSetting,
                agent.name.span,
                format!("agent `{}` has no `{what}`", agent.name.name),
            )
            .label(format!("no `{what}` line"))
            .help(format!("add `{example}`")),
        );
    }

    /// The prompt: the `prompt` template, or the only input when there is
    /// no `prompt` line.
    fn prompt(&mut self, agent: &ast::Agent, inputs: &[ir::Param], scope: &Scope<'_>) -> ir::Expr {
        if let Some(setting) = self.single(&agent.prompts, |s| s.span, "prompt") {
            return self.lower_expr(&setting.value, scope);
        }
        if let [only] = inputs {
            return ir::Expr { kind: ExprKind::Var(0), span: only.span };
        }
        self.push(
            Diagnostic::error(
                Code::BadSetting,
                agent.name.span,
                format!("agent `{}` has no `prompt`", agent.name.name),
            )
            .label(format!("{} inputs and no `prompt` line", inputs.len()))
            .help(
                "add `prompt \"...{input}...\"`; only an agent with exactly one input may omit it",
            ),
        );
        ir::Expr { kind: ExprKind::Literal(crate::value::Val::Null), span: agent.name.span }
    }

    /// One provider of the chain: a kind, `script "file"` or a declaration.
    fn provider_choice(&mut self, reference: &ast::ProviderRef) -> Option<ProviderChoice> {
        let name = &*reference.name.name;
        if name == "script" {
            let Some(file) = &reference.file else {
                self.push(
                    Diagnostic::error(Code::BadSetting, reference.span, "`script` needs a file")
                        .label("no file")
                        .help("write `provider script \"replies.json\"`"),
                );
                return None;
            };
            let path = self.expect_plain_string(file, "a script file")?;
            let dir = self.sources[file.span.file].dir();
            let path = dir.join(path);
            self.check_script_file(file, &path, dir);
            return Some(ProviderChoice::Script(path));
        }
        if let Some(file) = &reference.file {
            self.push(
                Diagnostic::error(
                    Code::BadSetting,
                    file.span,
                    format!("provider `{name}` takes no file"),
                )
                .label("only `script` takes a file"),
            );
        }
        if let Some(kind) = ProviderKind::named(name) {
            return Some(ProviderChoice::Kind(kind));
        }
        if let Some(Decl::Provider(i)) = self.decls.get(name) {
            return Some(ProviderChoice::Declared(ProviderId::from_index(i)));
        }
        let mut candidates = ProviderKind::names();
        candidates.push("script");
        let declared = self.decls.names_where(|d| matches!(d, Decl::Provider(_)));
        let help =
            did_you_mean(name, candidates.iter().chain(&declared).copied()).unwrap_or_else(|| {
                let kinds: Vec<String> =
                    ProviderKind::names().iter().map(|n| format!("`{n}`")).collect();
                format!("use {}, `script \"file.json\"` or a declared `provider`", kinds.join(", "))
            });
        self.push(
            Diagnostic::error(
                Code::UnknownProvider,
                reference.name.span,
                format!("unknown provider `{name}`"),
            )
            .label("not a provider kind or declaration")
            .help(help),
        );
        None
    }

    /// The listed tools, each declared; a tool needing capabilities the
    /// agent lacks is a warning.
    fn agent_tools(
        &mut self,
        agent: &ast::Agent,
        tools: &[ir::Tool],
        held: &[String],
    ) -> Vec<ToolId> {
        let mut out = Vec::new();
        let mut seen: HashMap<&str, &ast::Ident> = HashMap::new();
        for ident in &agent.tools {
            if let Some(first) = seen.insert(&ident.name, ident) {
                self.push(
                    Diagnostic::error(
                        Code::Duplicate,
                        ident.span,
                        format!("tool `{}` is listed twice", ident.name),
                    )
                    .label("listed again")
                    .note(first.span, "first listed here"),
                );
                continue;
            }
            let Some(Decl::Tool(i)) = self.decls.get(&ident.name) else {
                self.unknown_tool(ident);
                continue;
            };
            out.push(ToolId::from_index(i));
            let Some(tool) = tools.get(i) else { continue };
            let missing: Vec<&String> =
                tool.capabilities.iter().filter(|c| !held.contains(c)).collect();
            if missing.is_empty() {
                continue;
            }
            let has = if held.is_empty() { "no capabilities".to_owned() } else { list(held) };
            self.push(
                Diagnostic::warning(
                    Code::MissingCapability,
                    ident.span,
                    format!(
                        "agent `{}` lists tool `{}` but lacks capabilit{} {}",
                        agent.name.name,
                        tool.name,
                        if missing.len() == 1 { "y" } else { "ies" },
                        list(&missing)
                    ),
                )
                .label(format!("the agent holds {has}"))
                .note(
                    self.decls.tools[i].name.span,
                    format!("`{}` requires {}", tool.name, list(&tool.capabilities)),
                )
                .help(format!(
                    "add `capabilities {}` to the agent, or remove the tool",
                    missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                )),
            );
        }
        out
    }

    fn unknown_tool(&mut self, ident: &ast::Ident) {
        let name = &ident.name;
        let mut diagnostic =
            Diagnostic::error(Code::UnknownTool, ident.span, format!("unknown tool `{name}`"))
                .label("not a declared tool");
        diagnostic = match self.decls.get(name) {
            Some(decl) => diagnostic.help(format!("`{name}` is {}, not a tool", decl.a_kind())),
            None => diagnostic.maybe_help(did_you_mean(
                name,
                self.decls.names_where(|d| matches!(d, Decl::Tool(_))),
            )),
        };
        self.push(diagnostic);
    }
}

/// Pushes the media kinds a value of type `ty` may hold, once each.
/// The declared type of `expr` when it is an input or a place in one
/// (`receipt.scan`, `pages[0]`), from the agent's `inputs`.
fn place_type(expr: &ir::Expr, inputs: &[ir::Param]) -> Option<ir::Type> {
    match &expr.kind {
        ExprKind::Var(var) => inputs.get(*var as usize).map(|p| p.ty.clone()),
        ExprKind::Field(field) => {
            let target = place_type(&field.0, inputs)?;
            target.record()?.field(&field.1).map(|f| f.ty.clone())
        }
        ExprKind::Index(target, _) => match place_type(target, inputs)?.kind {
            ir::TypeKind::Array(Some(item)) => Some((*item).clone()),
            _ => None,
        },
        _ => None,
    }
}

fn media_in(ty: &ir::Type, out: &mut Vec<Kind>) {
    match &ty.kind {
        ir::TypeKind::Media(kind) if !out.contains(kind) => out.push(*kind),
        ir::TypeKind::Array(Some(item)) => media_in(item, out),
        ir::TypeKind::Record(record) => record.fields.iter().for_each(|f| media_in(&f.ty, out)),
        _ => {}
    }
}
