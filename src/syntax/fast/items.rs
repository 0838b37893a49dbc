//! The declarations other than contracts: tools, agents, providers, MCP
//! servers, types, enums, tests and evals, and their params and types.

use super::{Lines, Parser, is_word_byte};
use crate::ast::{
    Agent, EnumDecl, Eval, EvalStmt, Expr, Ident, Implementation, Keyword as K, McpServer,
    MockAnswer, Param, Price, Provider, ProviderRef, RESERVED, Rate, Setting, Test, TestStmt, Tool,
    TypeDecl, TypeExpr,
};
use crate::source::Span;

impl<'t> Parser<'t> {
    /// A declaration `Name { ... }`: made by `new` with a placeholder name
    /// and span, its statements read into it by `statement` (see
    /// [`Parser::block`]), then its name and span set where `place` says.
    fn declaration<T>(
        &mut self,
        start: usize,
        new: fn(Ident, Span) -> T,
        place: fn(&mut T) -> (&mut Ident, &mut Span),
        mut statement: impl FnMut(&mut Self, &mut T, &'t str, usize) -> Option<()>,
    ) -> Option<T> {
        let dummy = Span::new(self.file, 0, 0);
        let mut declared = new(Ident { name: Box::default(), span: dummy }, dummy);
        let name = self.block(|p, word, s| statement(p, &mut declared, word, s))?;
        let span = self.span_from(start);
        let (name_at, span_at) = place(&mut declared);
        (*name_at, *span_at) = (name, span);
        Some(declared)
    }

    pub(super) fn tool(&mut self, start: usize) -> Option<Tool> {
        self.declaration(
            start,
            Tool::new,
            |d| (&mut d.name, &mut d.span),
            |p, tool, word, s| {
                match K::of(word)? {
                    K::Description => tool.descriptions.push(p.string()?),
                    K::Param => tool.params.push(p.param(s)?),
                    K::RequiresCapability => tool.capabilities.extend(p.idents()?),
                    K::RequiresApproval => {
                        let when = if p.keyword(K::When) { Some(p.expr()?) } else { None };
                        tool.approvals.push(Setting { value: when, span: p.span_from(s) });
                    }
                    K::Timeout => tool.timeouts.push(p.number()?),
                    K::Retries => tool.retries.push(p.number()?),
                    K::Cache => tool.caches.push(p.setting(s, Self::cache)?),
                    K::Header => {
                        let name = p.string()?;
                        p.expect(b'=')?;
                        tool.headers.push((name, p.expr()?));
                    }
                    K::Returns => {
                        let expr = p.expr()?;
                        tool.implementations.push(Implementation::Returns(expr, p.span_from(s)));
                    }
                    K::Exec => {
                        let mut args = vec![p.string()?];
                        while p.at_string() {
                            args.push(p.string()?);
                        }
                        tool.implementations.push(Implementation::Exec(args, p.span_from(s)));
                    }
                    K::Http => {
                        let post = match p.take_keyword()? {
                            K::Get => false,
                            K::Post => true,
                            _ => return None,
                        };
                        let url = p.string()?;
                        tool.implementations.push(Implementation::Http {
                            post,
                            url,
                            span: p.span_from(s),
                        });
                    }
                    K::Builtin => {
                        let name = p.string()?;
                        let config = if p.peek() == Some(b'{') { Some(p.primary()?) } else { None };
                        tool.implementations.push(Implementation::Builtin {
                            name,
                            config,
                            span: p.span_from(s),
                        });
                    }
                    K::Native => {
                        let name = if p.at_string() { Some(p.string()?) } else { None };
                        tool.implementations.push(Implementation::Native(name, p.span_from(s)));
                    }
                    K::Mcp => {
                        let server = p.ident()?;
                        let tool_name = p.string()?;
                        tool.implementations.push(Implementation::Mcp {
                            server,
                            tool: tool_name,
                            span: p.span_from(s),
                        });
                    }
                    K::Result => tool.results.push(p.setting(s, Self::type_expr)?),
                    _ => return None,
                }
                Some(())
            },
        )
    }

    pub(super) fn agent(&mut self, start: usize) -> Option<Agent> {
        self.declaration(
            start,
            Agent::new,
            |d| (&mut d.name, &mut d.span),
            |p, agent, word, s| {
                match K::of(word)? {
                    K::Provider => {
                        let mut refs = vec![p.provider_ref()?];
                        if p.keyword(K::Fallback) {
                            refs.push(p.provider_ref()?);
                            while p.eat(b',') {
                                refs.push(p.provider_ref()?);
                            }
                        }
                        agent.providers.push(Setting { value: refs, span: p.span_from(s) });
                    }
                    K::Model => {
                        let mut models = vec![p.expr()?];
                        if p.keyword(K::Fallback) {
                            models.push(p.expr()?);
                            while p.eat(b',') {
                                models.push(p.expr()?);
                            }
                        }
                        agent.models.push(Setting { value: models, span: p.span_from(s) });
                    }
                    K::SystemPrompt => agent.system_prompts.push(p.setting(s, Self::string)?),
                    K::Tools => agent.tools.extend(p.idents()?),
                    K::Capabilities => agent.capabilities.extend(p.idents()?),
                    K::MaxToolIterations => {
                        agent.max_tool_iterations.push(p.setting(s, Self::number)?);
                    }
                    K::Temperature => agent.temperatures.push(p.setting(s, Self::number)?),
                    K::MaxTokens => agent.max_tokens.push(p.setting(s, Self::number)?),
                    K::Input => agent.inputs.push(p.param(s)?),
                    K::Prompt => agent.prompts.push(p.setting(s, Self::string)?),
                    K::Result => agent.results.push(p.setting(s, Self::type_expr)?),
                    K::ResultRetries => agent.result_retries.push(p.setting(s, Self::number)?),
                    K::Cache => agent.caches.push(p.setting(s, Self::cache)?),
                    _ => return None,
                }
                Some(())
            },
        )
    }

    pub(super) fn provider(&mut self, start: usize) -> Option<Provider> {
        self.declaration(
            start,
            Provider::new,
            |d| (&mut d.name, &mut d.span),
            |p, provider, word, s| {
                match K::of(word)? {
                    K::Kind => provider.kinds.push(p.ident()?),
                    K::BaseUrl => provider.base_urls.push(p.setting(s, Self::expr)?),
                    K::ApiKey => provider.api_keys.push(p.setting(s, Self::expr)?),
                    K::Timeout => provider.timeouts.push(p.setting(s, Self::number)?),
                    K::Retries => provider.retries.push(p.setting(s, Self::number)?),
                    K::RateLimit => provider.rate_limits.push(p.setting(s, Self::rate)?),
                    K::TokenLimit => provider.token_limits.push(p.setting(s, Self::rate)?),
                    K::Price => {
                        let price = p.setting(s, |p| {
                            p.keyword(K::Input).then_some(())?;
                            let input = p.expr()?;
                            p.keyword(K::Output).then_some(())?;
                            Some(Price { input, output: p.expr()? })
                        })?;
                        provider.prices.push(price);
                    }
                    _ => return None,
                }
                Some(())
            },
        )
    }

    pub(super) fn mcp(&mut self, start: usize) -> Option<McpServer> {
        self.declaration(
            start,
            McpServer::new,
            |d| (&mut d.name, &mut d.span),
            |p, server, word, s| {
                match K::of(word)? {
                    K::Command => {
                        let mut args = vec![p.string()?];
                        while p.at_string() {
                            args.push(p.string()?);
                        }
                        server.commands.push(Setting { value: args, span: p.span_from(s) });
                    }
                    K::Url => server.urls.push(p.setting(s, Self::string)?),
                    K::Env => {
                        let var = p.ident()?;
                        p.expect(b'=')?;
                        server.envs.push((var, p.expr()?));
                    }
                    K::Header => {
                        let name = p.string()?;
                        p.expect(b'=')?;
                        server.headers.push((name, p.expr()?));
                    }
                    K::Timeout => server.timeouts.push(p.setting(s, Self::number)?),
                    _ => return None,
                }
                Some(())
            },
        )
    }

    pub(super) fn type_decl(&mut self, start: usize) -> Option<TypeDecl> {
        let mut fields = Vec::new();
        let name = self.block(|p, word, s| {
            // A field starts with its name, which `block` has already taken.
            if word.is_empty() || RESERVED.contains(&word) {
                return None;
            }
            let name = Ident { name: word.into(), span: p.span_from(s) };
            fields.push(p.param_after_name(name, s)?);
            Some(())
        })?;
        Some(TypeDecl { name, fields, span: self.span_from(start) })
    }

    pub(super) fn enum_decl(&mut self, start: usize) -> Option<EnumDecl> {
        let name = self.ident()?;
        self.expect(b'{')?;
        let variants = self.list(b'}', Self::ident)?;
        Some(EnumDecl { name, variants, span: self.span_from(start) })
    }

    /// The `"name" { ... }` of a test or an eval: its name, then each
    /// statement, read by `statement` from its keyword and its start, one
    /// a line.
    fn keyword_block<S>(
        &mut self,
        mut statement: impl FnMut(&mut Self, K, usize) -> Option<S>,
    ) -> Option<(Expr, Vec<S>)> {
        let name = self.string()?;
        self.expect(b'{')?;
        let mut statements = Vec::new();
        let mut lines = Lines::default();
        while !self.eat(b'}') {
            let s = self.pos_after_ws();
            let keyword = self.take_keyword()?;
            statements.push(statement(self, keyword, s)?);
            lines.add(self.text, s, self.last)?;
        }
        Some((name, statements))
    }

    pub(super) fn test(&mut self, start: usize) -> Option<Test> {
        let (name, statements) = self.keyword_block(|p, keyword, s| {
            Some(match keyword {
                K::Run => {
                    let contract = p.ident()?;
                    p.expect(b'(')?;
                    let args = p.list(b')', Self::arg)?;
                    TestStmt::Run { contract, args, span: p.span_from(s) }
                }
                K::Mock => {
                    let tool = p.ident()?;
                    let args = if p.eat(b'(') { Some(p.list(b')', Self::arg)?) } else { None };
                    let answer = match p.take_keyword()? {
                        K::Returns => MockAnswer::Returns(p.expr()?),
                        K::Fails => MockAnswer::Fails(p.string()?),
                        _ => return None,
                    };
                    TestStmt::Mock { tool, args, answer, span: p.span_from(s) }
                }
                K::Replay => TestStmt::Replay(p.string()?, p.span_from(s)),
                K::Expect => TestStmt::Expect(p.expr()?, p.span_from(s)),
                K::ExpectError => TestStmt::ExpectError(p.string()?, p.span_from(s)),
                K::ExpectCalls => {
                    let tool = p.ident()?;
                    let args = if p.eat(b'(') { Some(p.list(b')', Self::arg)?) } else { None };
                    let op = p.infix().filter(|op| op.is_comparison())?;
                    let count = p.expr()?;
                    TestStmt::ExpectCalls { tool, args, op, count, span: p.span_from(s) }
                }
                K::Snapshot => {
                    let calls = p.keyword(K::Calls);
                    TestStmt::Snapshot { calls, span: p.span_from(s) }
                }
                K::Approve => {
                    TestStmt::Decide { tool: p.ident()?, denial: None, span: p.span_from(s) }
                }
                K::Deny => {
                    let tool = p.ident()?;
                    let denial = Some(p.string()?);
                    TestStmt::Decide { tool, denial, span: p.span_from(s) }
                }
                _ => return None,
            })
        })?;
        Some(Test { name, statements, span: self.span_from(start) })
    }

    pub(super) fn eval(&mut self, start: usize) -> Option<Eval> {
        let (name, statements) = self.keyword_block(|p, keyword, s| {
            Some(match keyword {
                K::Run => {
                    let contract = p.ident()?;
                    EvalStmt::Run(contract, p.span_from(s))
                }
                K::Dataset => EvalStmt::Dataset(p.string()?, p.span_from(s)),
                K::Repeat => EvalStmt::Repeat(p.expr()?, p.span_from(s)),
                K::Require => EvalStmt::Require(p.expr()?, p.span_from(s)),
                K::Score => {
                    let name = p.ident()?;
                    p.expect(b'=')?;
                    let value = p.expr()?;
                    EvalStmt::Score { name, value, span: p.span_from(s) }
                }
                _ => return None,
            })
        })?;
        Some(Eval { name, statements, span: self.span_from(start) })
    }

    /// `ident (, ident)*`.
    pub(super) fn idents(&mut self) -> Option<Vec<Ident>> {
        let mut names = vec![self.ident()?];
        while self.eat(b',') {
            names.push(self.ident()?);
        }
        Some(names)
    }

    /// `N per UNIT` of `rate_limit` and `token_limit`.
    pub(super) fn rate(&mut self) -> Option<Rate> {
        let count = self.expr()?;
        self.keyword(K::Per).then_some(())?;
        Some(Rate { count, per: self.ident()? })
    }

    pub(super) fn provider_ref(&mut self) -> Option<ProviderRef> {
        let start = self.pos_after_ws();
        let name = self.ident()?;
        let file = if self.at_string() { Some(self.string()?) } else { None };
        Some(ProviderRef { name, file, span: self.span_from(start) })
    }

    /// A `param` or `input` statement after its keyword at `start`.
    pub(super) fn param(&mut self, start: usize) -> Option<Param> {
        let name = self.ident()?;
        self.param_after_name(name, start)
    }

    /// The rest of a param, input or record field after its name.
    pub(super) fn param_after_name(&mut self, name: Ident, start: usize) -> Option<Param> {
        self.expect(b':')?;
        let ty = self.type_expr()?;
        let default = if self.eat(b'=') { Some(self.expr()?) } else { None };
        let description = if self.at_string() { Some(self.string()?) } else { None };
        Some(Param { name, ty, default, description, span: self.span_from(start) })
    }

    pub(super) fn type_expr(&mut self) -> Option<TypeExpr> {
        self.enter()?;
        let start = self.pos_after_ws();
        let name = self.ident()?;
        let item = if self.eat(b'<') {
            let item = self.type_expr()?;
            self.expect(b'>')?;
            Some(Box::new(item))
        } else {
            None
        };
        let nullable = self.eat(b'?');
        self.depth -= 1;
        Some(TypeExpr { name, item, nullable, span: self.span_from(start) })
    }

    // ------------------------------------------------------------ expressions

    /// The optional duration of `cache`: digits and a unit (`7d`), or none
    /// when the next token is not a number.
    pub(super) fn cache(&mut self) -> Option<Option<String>> {
        let start = self.pos_after_ws();
        let bytes = self.bytes;
        let mut end = start;
        while bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        if end == start {
            return Some(None);
        }
        let unit = matches!(bytes.get(end), Some(b's' | b'm' | b'h' | b'd'));
        if !unit || bytes.get(end + 1).is_some_and(|&b| is_word_byte(b)) {
            return None;
        }
        self.advance(end + 1 - self.pos);
        Some(Some(self.text[start..=end].to_owned()))
    }
}
