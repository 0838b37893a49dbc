//! `provider Name { ... }` declarations: a wire protocol (`kind`), a base
//! URL, the environment variable of the API key, timeout and retries, the
//! process-wide `rate_limit` and `token_limit`, and the `price` of tokens.

use std::time::Duration;

use super::Lowerer;
use crate::ast::{self, ExprKind};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, ProviderKind};
use crate::suggest::{did_you_mean, list};

/// The units of `rate_limit` and `token_limit`.
const UNITS: [&str; 3] = ["second", "minute", "hour"];

impl Lowerer<'_> {
    /// Lowers every `provider` declaration.
    pub(super) fn lower_providers(&mut self) -> Vec<ir::Provider> {
        let decls = self.decls;
        decls.providers.iter().map(|p| self.lower_provider(p)).collect()
    }

    fn lower_provider(&mut self, provider: &ast::Provider) -> ir::Provider {
        let kind = match self.single(&provider.kinds, |k| k.span, "kind") {
            Some(kind) => self.provider_kind(kind),
            None => {
                self.push(
                    Diagnostic::error(
                        Code::BadSetting,
                        provider.name.span,
                        format!("provider `{}` has no `kind`", provider.name.name),
                    )
                    .label("no `kind` line")
                    .help(format!("add `kind NAME`; kinds are {}", list(&ProviderKind::names()))),
                );
                ProviderKind::first()
            }
        };
        let base_url = self
            .single(&provider.base_urls, |s| s.span, "base_url")
            .and_then(|s| self.setting_text(&s.value, "base_url", "\"http://localhost:8000/v1\""));
        let api_key_env = self
            .single(&provider.api_keys, |s| s.span, "api_key")
            .and_then(|s| self.api_key(&s.value));
        let timeout =
            self.single(&provider.timeouts, |s| s.span, "timeout").and_then(|s| {
                let seconds = Self::number(&s.value);
                let duration = Duration::try_from_secs_f64(seconds).ok();
                if duration.is_none() {
                    self.push(self.bad_value(
                        s.value.span,
                        "`timeout` must be a non-negative number of seconds",
                    ));
                }
                duration
            });
        let retries = self
            .single(&provider.retries, |s| s.span, "retries")
            .and_then(|s| self.whole_number(&s.value, "retries", 0));
        let rate_limit = self
            .single(&provider.rate_limits, |s| s.span, "rate_limit")
            .and_then(|s| self.rate(&s.value, "rate_limit"));
        let token_limit = self
            .single(&provider.token_limits, |s| s.span, "token_limit")
            .and_then(|s| self.rate(&s.value, "token_limit"));
        let price = self.single(&provider.prices, |s| s.span, "price").and_then(|s| {
            let input = self.price(&s.value.input, "input");
            let output = self.price(&s.value.output, "output");
            Some(ir::Price { input: input?, output: output? })
        });
        ir::Provider {
            name: provider.name.name.to_string(),
            kind,
            base_url,
            api_key_env,
            timeout,
            retries,
            rate_limit,
            token_limit,
            price,
            span: provider.span,
        }
    }

    /// `N per UNIT` of `rate_limit` or `token_limit`.
    fn rate(&mut self, rate: &ast::Rate, what: &str) -> Option<ir::Rate> {
        let count = match rate.count.kind {
            ExprKind::Integer(n) => u32::try_from(n).ok().filter(|&n| n > 0),
            _ => None,
        };
        if count.is_none() {
            let counted = if what == "rate_limit" { "requests" } else { "tokens" };
            self.push(
                self.bad_value(
                    rate.count.span,
                    format!("`{what}` must be a positive whole number"),
                )
                .help(format!(
                    "count the {counted} allowed in each {}: `{what} 60 per minute`",
                    rate.per.name
                )),
            );
        }
        let period = match &*rate.per.name {
            "second" => Some(Duration::from_secs(1)),
            "minute" => Some(Duration::from_secs(60)),
            "hour" => Some(Duration::from_secs(3600)),
            other => {
                self.push(
                    self.bad_value(rate.per.span, format!("unknown unit `{other}` of `{what}`"))
                        .help(did_you_mean(other, UNITS).unwrap_or_else(|| {
                            format!("the units are {}: `{what} 60 per minute`", list(&UNITS))
                        })),
                );
                None
            }
        };
        Some(ir::Rate { count: count?, period: period? })
    }

    /// One price of `price`: USD per million tokens, not negative.
    fn price(&mut self, expr: &ast::Expr, what: &str) -> Option<f64> {
        let usd = Self::number(expr);
        if usd.is_finite() && usd >= 0.0 {
            return Some(usd);
        }
        self.push(
            self.bad_value(
                expr.span,
                format!("the `{what}` price must be a number of USD, not negative"),
            )
            .help("write USD per million tokens: `price input 3.0 output 15.0`"),
        );
        None
    }

    /// A wire protocol name.
    fn provider_kind(&mut self, kind: &ast::Ident) -> ProviderKind {
        if let Some(k) = ProviderKind::named(&kind.name) {
            return k;
        }
        let names = ProviderKind::names();
        self.push(
            Diagnostic::error(
                Code::UnknownProvider,
                kind.span,
                format!("unknown provider kind `{}`", kind.name),
            )
            .label("not a wire protocol")
            .help(
                did_you_mean(&kind.name, names.iter().copied())
                    .unwrap_or_else(|| format!("kinds are {}", list(&names))),
            ),
        );
        ProviderKind::first()
    }

    /// `env("VAR")`: the variable's name; the key itself is never written.
    fn api_key(&mut self, expr: &ast::Expr) -> Option<String> {
        if let Some((var, None)) = env_call(expr) {
            return Some(var);
        }
        self.push(
            Diagnostic::error(Code::BadSetting, expr.span, "`api_key` must be `env(\"VAR\")`")
                .label("not an environment variable")
                .help("keep keys out of `.ign` files: `api_key env(\"MY_API_KEY\")`"),
        );
        None
    }

    /// The text of `setting` (`model`, `base_url`): a constant string, or
    /// `env("VAR")` / `env("VAR", "default")` read when a run starts;
    /// `example` is a constant for the help.
    pub(super) fn setting_text(
        &mut self,
        expr: &ast::Expr,
        setting: &str,
        example: &str,
    ) -> Option<ir::SettingText> {
        if let Some(text) = expr.as_plain_string() {
            return Some(ir::SettingText::Literal(text));
        }
        if let Some((var, default)) = env_call(expr) {
            return Some(ir::SettingText::Env { var, default });
        }
        self.push(
            Diagnostic::error(
                Code::NotConstant,
                expr.span,
                format!("`{setting}` must be a constant string or `env(\"VAR\")`"),
            )
            .label("not a plain string or `env(...)`")
            .help(format!(
                "write `{setting} {example}`, or `{setting} env(\"VAR\")` (`env(\"VAR\", \"default\")` for a default) to read it when the run starts"
            )),
        );
        None
    }
}

/// `env("VAR")` or `env("VAR", "default")` with constant strings: the
/// variable and the default.
fn env_call(expr: &ast::Expr) -> Option<(String, Option<String>)> {
    let ExprKind::Call(call) = &expr.kind else { return None };
    if &*call.callee.name != "env" || call.args.iter().any(|a| a.name.is_some()) {
        return None;
    }
    match call.args.as_slice() {
        [var] => Some((var.value.as_plain_string()?, None)),
        [var, default] => {
            Some((var.value.as_plain_string()?, Some(default.value.as_plain_string()?)))
        }
        _ => None,
    }
}
