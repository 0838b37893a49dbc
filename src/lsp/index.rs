//! The symbol index: every declaration of a program's syntax trees and
//! every name that refers to one, with spans.
//!
//! Built from the files that parsed (the syntax trees of [`crate::load`]),
//! so it exists while lowering still reports errors. Names resolve as
//! lowering resolves them: declarations are global across the files of a
//! program, nodes belong to their contract, params to their tool, inputs to
//! their agent, a `for` variable to its body, and a test's `expect` sees the
//! outputs of the contract it runs. With the checked program, a field
//! (`a.b.c`, `items[0].name`) refers to its record type's field whatever
//! the chain starts from (a node, a param, an input, a `for` variable), and
//! a string pattern of a `match` on an enum to its variant. Definition,
//! references, rename, the outline, semantic tokens and hover all read
//! this one table.

use std::collections::HashMap;

use crate::ast::{self, EvalStmt, ExprKind, Item, Node, PatternKind, StringPart, TestStmt};
use crate::ir::{Program, Type, TypeKind};
use crate::source::{FileId, Sources, Span};

/// What a declaration declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A whole file (the target of a `use`).
    File,
    /// `tool Name`.
    Tool,
    /// `agent Name`.
    Agent,
    /// `provider Name`.
    Provider,
    /// `contract Name`.
    Contract,
    /// `type Name`.
    Type,
    /// `enum Name`.
    Enum,
    /// A variant of an enum.
    Variant,
    /// A field of a record type.
    Field,
    /// A tool's `param`.
    Param,
    /// An agent's `input`.
    Input,
    /// A node of a contract (its inputs included).
    Node,
    /// The variable of a `for`.
    Local,
    /// An `output … as alias` or an output of a field path.
    Output,
    /// A `test` block.
    Test,
    /// `mcp Name`: an MCP server.
    Mcp,
    /// An `eval` block.
    Eval,
}

impl Kind {
    /// The word a hover or an outline names it by.
    #[must_use]
    pub(crate) fn word(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Tool => "tool",
            Kind::Agent => "agent",
            Kind::Provider => "provider",
            Kind::Contract => "contract",
            Kind::Type => "type",
            Kind::Enum => "enum",
            Kind::Variant => "variant",
            Kind::Field => "field",
            Kind::Param => "param",
            Kind::Input => "input",
            Kind::Node => "node",
            Kind::Local => "item",
            Kind::Output => "output",
            Kind::Test => "test",
            Kind::Mcp => "MCP server",
            Kind::Eval => "eval",
        }
    }
}

/// One declaration.
#[derive(Debug, Clone)]
pub(crate) struct Def {
    /// What it declares.
    pub kind: Kind,
    /// Its name (a test's name string, a file's path).
    pub name: String,
    /// The name in the declaration (empty at 0 for a file).
    pub span: Span,
    /// The whole declaration.
    pub full: Span,
    /// The declaration it belongs to (a node's contract, a tool's file).
    pub parent: Option<usize>,
}

/// Every declaration and reference of a program.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// Declarations, in source order per file.
    pub defs: Vec<Def>,
    /// References: a name's span and the declaration it names.
    pub refs: Vec<(Span, usize)>,
    /// Top-level declarations by name (the first of duplicates).
    pub globals: HashMap<String, usize>,
    /// The members of a declaration by name: a tool's params, an agent's
    /// inputs, a contract's nodes (and, under `outputs`, its outputs), a
    /// type's fields, an enum's variants.
    members: HashMap<(usize, String), usize>,
    /// A contract's outputs by name, keyed by the contract.
    outputs: HashMap<(usize, String), usize>,
    /// The declarations of each declaration's members, in source order.
    kids: HashMap<usize, Vec<usize>>,
    /// Every capability named (by tools and agents), sorted, once each.
    pub capabilities: Vec<String>,
}

impl Index {
    /// Indexes the parsed `files` of a program; with the checked
    /// `program`, a field read from a node of a record type (`item.price`)
    /// refers to the record's field.
    #[must_use]
    pub(crate) fn build(
        sources: &Sources,
        files: &[(FileId, ast::File)],
        program: Option<&Program>,
    ) -> Index {
        let mut builder = Builder {
            sources,
            program,
            index: Index::default(),
            current: None,
            types: HashMap::new(),
        };
        let mut file_defs = HashMap::new();
        for (file, _) in sources.iter() {
            let whole = Span::new(file, 0, sources[file].text.len());
            let id = builder.def(
                Kind::File,
                sources[file].path.display().to_string(),
                Span::new(file, 0, 0),
                whole,
                None,
            );
            file_defs.insert(file, id);
        }
        for (file, ast) in files {
            for item in &ast.items {
                builder.declare(item, file_defs.get(file).copied());
            }
        }
        for (file, ast) in files {
            for item in &ast.items {
                builder.resolve(*file, item, &file_defs);
            }
        }
        let mut index = builder.index;
        index.capabilities.sort();
        index.capabilities.dedup();
        index
    }

    /// The member `name` of declaration `owner`.
    #[must_use]
    pub(crate) fn member(&self, owner: usize, name: &str) -> Option<usize> {
        self.members.get(&(owner, name.to_owned())).copied()
    }

    /// The outputs of contract `contract` by name (what a test's `expect`
    /// reads), sorted.
    #[must_use]
    pub(crate) fn outputs_of(&self, contract: usize) -> Vec<(&str, usize)> {
        let mut found: Vec<(&str, usize)> = self
            .outputs
            .iter()
            .filter(|((owner, _), _)| *owner == contract)
            .map(|((_, name), &id)| (name.as_str(), id))
            .collect();
        found.sort_unstable();
        found
    }

    /// The declarations that belong to `owner`, in source order.
    pub(crate) fn children(&self, owner: usize) -> impl Iterator<Item = (usize, &Def)> {
        self.kids.get(&owner).into_iter().flatten().map(|&i| (i, &self.defs[i]))
    }

    /// The declaration named at byte `offset` of `file`: a declaration's
    /// name or a reference (a cursor just after a name counts).
    #[must_use]
    pub(crate) fn at(&self, file: FileId, offset: usize) -> Option<(usize, Span)> {
        let touches =
            |s: &Span| s.file == file && (s.start as usize) <= offset && offset <= s.end as usize;
        let decl = self
            .defs
            .iter()
            .enumerate()
            .filter(|(_, d)| d.kind != Kind::File && touches(&d.span))
            .map(|(i, d)| (i, d.span));
        let refs = self.refs.iter().filter(|(s, _)| touches(s)).map(|&(s, d)| (d, s));
        // The innermost (shortest) wins: `use "a.ign"` names the file, not the whole statement.
        decl.chain(refs).min_by_key(|(_, s)| s.end - s.start)
    }

    /// The references to declaration `id`.
    pub(crate) fn refs_to(&self, id: usize) -> impl Iterator<Item = Span> + '_ {
        self.refs.iter().filter(move |(_, d)| *d == id).map(|&(s, _)| s)
    }
}

/// The builder's state: the index so far, the declaration whose body is
/// being resolved (a `for` variable belongs to it) and the checked types
/// of the declarations looked up so far (a `for` variable's when its
/// array's item type is known).
struct Builder<'a> {
    sources: &'a Sources,
    program: Option<&'a Program>,
    index: Index,
    current: Option<usize>,
    types: HashMap<usize, Option<Type>>,
}

/// The names an expression can see: locals (innermost last) over a table.
struct Scope<'m> {
    base: &'m HashMap<String, usize>,
    locals: Vec<(String, usize)>,
}

impl Scope<'_> {
    fn get(&self, name: &str) -> Option<usize> {
        self.locals
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|&(_, id)| id)
            .or_else(|| self.base.get(name).copied())
    }
}

impl Builder<'_> {
    fn def(
        &mut self,
        kind: Kind,
        name: String,
        span: Span,
        full: Span,
        parent: Option<usize>,
    ) -> usize {
        let id = self.index.defs.len();
        self.index.defs.push(Def { kind, name, span, full, parent });
        if let Some(parent) = parent {
            self.index.kids.entry(parent).or_default().push(id);
        }
        id
    }

    /// Declares a member of `owner` named by `ident`.
    fn member(&mut self, kind: Kind, ident: &ast::Ident, full: Span, owner: usize) -> usize {
        let id = self.def(kind, ident.name.to_string(), ident.span, full, Some(owner));
        self.index.members.entry((owner, ident.name.to_string())).or_insert(id);
        id
    }

    fn global(&mut self, kind: Kind, ident: &ast::Ident, full: Span, file: Option<usize>) -> usize {
        let id = self.def(kind, ident.name.to_string(), ident.span, full, file);
        self.index.globals.entry(ident.name.to_string()).or_insert(id);
        id
    }

    /// First pass: the declarations of `item` and their members.
    fn declare(&mut self, item: &Item, file: Option<usize>) {
        match item {
            Item::Use(_) => {}
            Item::Tool(tool) => {
                let id = self.global(Kind::Tool, &tool.name, tool.span, file);
                for param in &tool.params {
                    self.member(Kind::Param, &param.name, param.span, id);
                }
                self.index
                    .capabilities
                    .extend(tool.capabilities.iter().map(|c| c.name.to_string()));
            }
            Item::Agent(agent) => {
                let id = self.global(Kind::Agent, &agent.name, agent.span, file);
                for input in &agent.inputs {
                    self.member(Kind::Input, &input.name, input.span, id);
                }
                self.index
                    .capabilities
                    .extend(agent.capabilities.iter().map(|c| c.name.to_string()));
            }
            Item::Provider(provider) => {
                self.global(Kind::Provider, &provider.name, provider.span, file);
            }
            Item::Contract(contract) => {
                let id = self.global(Kind::Contract, &contract.name, contract.span, file);
                for node in &contract.nodes {
                    self.member(Kind::Node, node.name(), node.span(), id);
                }
                for output in &contract.outputs {
                    self.declare_output(output, id);
                }
            }
            Item::Type(decl) => {
                let id = self.global(Kind::Type, &decl.name, decl.span, file);
                for field in &decl.fields {
                    self.member(Kind::Field, &field.name, field.span, id);
                }
            }
            Item::Enum(decl) => {
                let id = self.global(Kind::Enum, &decl.name, decl.span, file);
                for variant in &decl.variants {
                    self.member(Kind::Variant, variant, variant.span, id);
                }
            }
            Item::Test(test) => {
                let name = test.name.as_plain_string().unwrap_or_default();
                self.def(Kind::Test, name, test.name.span, test.span, file);
            }
            Item::Mcp(server) => {
                self.global(Kind::Mcp, &server.name, server.span, file);
            }
            Item::Eval(eval) => {
                let name = eval.name.as_plain_string().unwrap_or_default();
                self.def(Kind::Eval, name, eval.name.span, eval.span, file);
            }
        }
    }

    /// An output's name: its alias, or the last name of its path (a
    /// single name is the node itself).
    fn declare_output(&mut self, output: &ast::Output, contract: usize) {
        let (id, name) = match (&output.alias, output.path.as_slice()) {
            (Some(alias), _) => (
                self.def(
                    Kind::Output,
                    alias.name.to_string(),
                    alias.span,
                    output.span,
                    Some(contract),
                ),
                &alias.name,
            ),
            (None, [node]) => match self.index.member(contract, &node.name) {
                Some(id) => (id, &node.name),
                None => return,
            },
            (None, [.., last]) => (
                self.def(
                    Kind::Output,
                    last.name.to_string(),
                    last.span,
                    output.span,
                    Some(contract),
                ),
                &last.name,
            ),
            (None, []) => return,
        };
        self.index.outputs.entry((contract, name.to_string())).or_insert(id);
    }

    fn reference(&mut self, span: Span, id: Option<usize>) {
        if let Some(id) = id {
            self.index.refs.push((span, id));
        }
    }

    fn global_of(&self, name: &str, kinds: &[Kind]) -> Option<usize> {
        self.index
            .globals
            .get(name)
            .copied()
            .filter(|&id| kinds.contains(&self.index.defs[id].kind))
    }

    /// Second pass: the references of `item`.
    fn resolve(&mut self, file: FileId, item: &Item, file_defs: &HashMap<FileId, usize>) {
        match item {
            Item::Use(use_decl) => {
                let target = use_decl.path.as_plain_string().and_then(|relative| {
                    let wanted = crate::load::key(&self.sources[file].dir().join(relative));
                    self.sources
                        .iter()
                        .find(|(_, f)| crate::load::key(&f.path) == wanted)
                        .map(|(f, _)| f)
                });
                self.reference(use_decl.path.span, target.and_then(|f| file_defs.get(&f).copied()));
            }
            Item::Tool(tool) => self.resolve_tool(tool),
            Item::Agent(agent) => self.resolve_agent(agent),
            Item::Provider(_) | Item::Mcp(_) => {}
            Item::Contract(contract) => self.resolve_contract(contract),
            Item::Type(decl) => {
                for field in &decl.fields {
                    self.type_expr(&field.ty);
                }
            }
            Item::Enum(_) => {}
            Item::Test(test) => self.resolve_test(test),
            Item::Eval(eval) => self.resolve_eval(eval),
        }
    }

    fn scope_of(&self, owner: Option<usize>) -> HashMap<String, usize> {
        owner
            .map(|owner| self.index.children(owner).map(|(i, d)| (d.name.clone(), i)).collect())
            .unwrap_or_default()
    }

    fn resolve_tool(&mut self, tool: &ast::Tool) {
        let owner = self
            .global_of(&tool.name.name, &[Kind::Tool])
            .filter(|&id| self.index.defs[id].span == tool.name.span);
        self.current = owner;
        let base = self.scope_of(owner);
        let mut scope = Scope { base: &base, locals: Vec::new() };
        for param in &tool.params {
            self.type_expr(&param.ty);
        }
        for result in &tool.results {
            self.type_expr(&result.value);
        }
        for (name, value) in &tool.headers {
            self.expr(name, &mut scope);
            self.expr(value, &mut scope);
        }
        for condition in tool.approvals.iter().filter_map(|a| a.value.as_ref()) {
            self.expr(condition, &mut scope);
        }
        for implementation in &tool.implementations {
            match implementation {
                ast::Implementation::Returns(e, _) => self.expr(e, &mut scope),
                ast::Implementation::Exec(args, _) => {
                    for e in args {
                        self.expr(e, &mut scope);
                    }
                }
                ast::Implementation::Http { url, .. } => self.expr(url, &mut scope),
                ast::Implementation::Builtin { .. } | ast::Implementation::Native(..) => {}
                ast::Implementation::Mcp { server, .. } => {
                    let target = self.global_of(&server.name, &[Kind::Mcp]);
                    self.reference(server.span, target);
                }
            }
        }
    }

    fn resolve_agent(&mut self, agent: &ast::Agent) {
        for setting in &agent.providers {
            for provider in &setting.value {
                let target = self.global_of(&provider.name.name, &[Kind::Provider]);
                self.reference(provider.name.span, target);
            }
        }
        for tool in &agent.tools {
            let target = self.global_of(&tool.name, &[Kind::Tool]);
            self.reference(tool.span, target);
        }
        for input in &agent.inputs {
            self.type_expr(&input.ty);
        }
        for result in &agent.results {
            self.type_expr(&result.value);
        }
        let owner = self
            .global_of(&agent.name.name, &[Kind::Agent])
            .filter(|&id| self.index.defs[id].span == agent.name.span);
        self.current = owner;
        let base = self.scope_of(owner);
        let mut scope = Scope { base: &base, locals: Vec::new() };
        for prompt in agent.prompts.iter().chain(&agent.system_prompts) {
            self.expr(&prompt.value, &mut scope);
        }
    }

    fn resolve_contract(&mut self, contract: &ast::Contract) {
        let owner = self
            .global_of(&contract.name.name, &[Kind::Contract])
            .filter(|&id| self.index.defs[id].span == contract.name.span);
        self.current = owner;
        let base: HashMap<String, usize> = owner
            .map(|owner| {
                self.index
                    .children(owner)
                    .filter(|(_, d)| d.kind == Kind::Node)
                    .map(|(i, d)| (d.name.clone(), i))
                    .collect()
            })
            .unwrap_or_default();
        let mut scope = Scope { base: &base, locals: Vec::new() };
        for node in &contract.nodes {
            match node {
                Node::Input(param) => {
                    self.type_expr(&param.ty);
                    if let Some(default) = &param.default {
                        self.expr(default, &mut scope);
                    }
                }
                Node::Compute(_, e, _) | Node::Compose(_, e, _) => self.expr(e, &mut scope),
                Node::Guard(guard) => {
                    self.expr(&guard.condition, &mut scope);
                    if let Some(message) = &guard.message {
                        self.expr(message, &mut scope);
                    }
                }
            }
        }
        for output in &contract.outputs {
            if let Some(first) = output.path.first() {
                self.reference(first.span, scope.get(&first.name));
            }
        }
    }

    fn resolve_test(&mut self, test: &ast::Test) {
        self.current = None;
        let empty = HashMap::new();
        let mut contract = None;
        for statement in &test.statements {
            match statement {
                TestStmt::Run { contract: name, args, .. } => {
                    contract = self.global_of(&name.name, &[Kind::Contract]);
                    self.reference(name.span, contract);
                    self.args(contract, args, &mut Scope { base: &empty, locals: Vec::new() });
                }
                TestStmt::Mock { tool, args, answer, .. } => {
                    let target = self.global_of(&tool.name, &[Kind::Tool, Kind::Agent]);
                    self.reference(tool.span, target);
                    let mut scope = Scope { base: &empty, locals: Vec::new() };
                    if let Some(args) = args {
                        self.args(target, args, &mut scope);
                    }
                    match answer {
                        ast::MockAnswer::Returns(e) | ast::MockAnswer::Fails(e) => {
                            self.expr(e, &mut scope);
                        }
                    }
                }
                TestStmt::ExpectCalls { tool, args, count, .. } => {
                    let target = self.global_of(&tool.name, &[Kind::Tool]);
                    self.reference(tool.span, target);
                    let mut scope = Scope { base: &empty, locals: Vec::new() };
                    if let Some(args) = args {
                        self.args(target, args, &mut scope);
                    }
                    self.expr(count, &mut scope);
                }
                TestStmt::Expect(e, _) => {
                    let outputs: HashMap<String, usize> = contract
                        .map(|c| {
                            self.index
                                .outputs_of(c)
                                .into_iter()
                                .map(|(name, id)| (name.to_owned(), id))
                                .collect()
                        })
                        .unwrap_or_default();
                    self.expr(e, &mut Scope { base: &outputs, locals: Vec::new() });
                }
                TestStmt::Decide { tool, .. } => {
                    let target = self.global_of(&tool.name, &[Kind::Tool]);
                    self.reference(tool.span, target);
                }
                TestStmt::Replay(..) | TestStmt::ExpectError(..) | TestStmt::Snapshot { .. } => {}
            }
        }
    }

    fn resolve_eval(&mut self, eval: &ast::Eval) {
        self.current = None;
        let mut outputs = HashMap::new();
        for statement in &eval.statements {
            match statement {
                EvalStmt::Run(name, _) => {
                    let contract = self.global_of(&name.name, &[Kind::Contract]);
                    self.reference(name.span, contract);
                    if let Some(c) = contract {
                        outputs = self
                            .index
                            .outputs_of(c)
                            .into_iter()
                            .map(|(name, id)| (name.to_owned(), id))
                            .collect();
                    }
                }
                EvalStmt::Score { value: e, .. }
                | EvalStmt::Require(e, _)
                | EvalStmt::Repeat(e, _)
                | EvalStmt::Dataset(e, _) => {
                    self.expr(e, &mut Scope { base: &outputs, locals: Vec::new() });
                }
            }
        }
    }

    /// The field `name` of the record type of `on`, when the checked
    /// program says `on` is a record.
    fn field_of(&mut self, on: &ast::Expr, name: &str, scope: &Scope<'_>) -> Option<usize> {
        let ty = self.type_of(on, scope)?;
        let TypeKind::Record(record) = &ty.kind else { return None };
        let owner = self.global_of(&record.name, &[Kind::Type])?;
        self.index.member(owner, name)
    }

    /// The checked type of `e` where it is a chain of names, fields and
    /// indexes.
    fn type_of(&mut self, e: &ast::Expr, scope: &Scope<'_>) -> Option<Type> {
        match &e.kind {
            ExprKind::Name => {
                let id = scope.get(self.sources.try_slice(e.span)?)?;
                self.declared_type(id)
            }
            ExprKind::Field(field) => {
                let ty = self.type_of(&field.0, scope)?;
                let TypeKind::Record(record) = &ty.kind else { return None };
                Some(record.field(&field.1.name)?.ty.clone())
            }
            ExprKind::Index(on, _) => match self.type_of(on, scope)?.kind {
                TypeKind::Array(Some(item)) => Some((*item).clone()),
                _ => None,
            },
            _ => None,
        }
    }

    /// The checked type of declaration `id`: a node's, a param's, an
    /// input's (a `for` variable's is recorded when it is declared).
    fn declared_type(&mut self, id: usize) -> Option<Type> {
        if let Some(known) = self.types.get(&id) {
            return known.clone();
        }
        let program = self.program?;
        let def = &self.index.defs[id];
        let owner = &self.index.defs[def.parent?];
        let ty = match (def.kind, owner.kind) {
            (Kind::Node, Kind::Contract) => {
                let checked = &program[program.contract_named(&owner.name)?];
                checked.types.get(checked.node_named(&def.name)?.index()).cloned()
            }
            (Kind::Param, Kind::Tool) => {
                let tool = program.tools.iter().find(|t| t.name == owner.name)?;
                tool.params.iter().find(|p| p.name == def.name).map(|p| p.ty.clone())
            }
            (Kind::Input, Kind::Agent) => {
                let agent = program.agents.iter().find(|a| a.name == owner.name)?;
                agent.inputs.iter().find(|p| p.name == def.name).map(|p| p.ty.clone())
            }
            _ => None,
        };
        self.types.insert(id, ty.clone());
        ty
    }

    /// The patterns of a `match` on an enum that name its variants.
    fn variants(&mut self, parts: &(ast::Expr, Vec<ast::MatchArm>), scope: &Scope<'_>) {
        let Some(ty) = self.type_of(&parts.0, scope) else { return };
        let TypeKind::Enum(decl) = &ty.kind else { return };
        let Some(owner) = self.global_of(&decl.name, &[Kind::Enum]) else { return };
        for arm in &parts.1 {
            let PatternKind::Literal(literal) = &arm.pattern.kind else { continue };
            let Some(variant) = literal.as_plain_string() else { continue };
            // The name inside the quotes: what a rename replaces.
            let quoted = self.sources.try_slice(literal.span).unwrap_or_default();
            if !(quoted.len() == variant.len() + 2 && quoted.starts_with('"')) {
                continue;
            }
            let inner = Span {
                file: literal.span.file,
                start: literal.span.start + 1,
                end: literal.span.end - 1,
            };
            let target = self.index.member(owner, &variant);
            self.reference(inner, target);
        }
    }

    fn type_expr(&mut self, ty: &ast::TypeExpr) {
        let target = self.global_of(&ty.name.name, &[Kind::Type, Kind::Enum]);
        self.reference(ty.name.span, target);
        if let Some(item) = &ty.item {
            self.type_expr(item);
        }
    }

    fn args(&mut self, callee: Option<usize>, args: &[ast::Arg], scope: &mut Scope<'_>) {
        for arg in args {
            if let (Some(name), Some(callee)) = (&arg.name, callee) {
                let target = self.index.member(callee, &name.name);
                self.reference(name.span, target);
            }
            self.expr(&arg.value, scope);
        }
    }

    fn expr(&mut self, e: &ast::Expr, scope: &mut Scope<'_>) {
        match &e.kind {
            ExprKind::Null | ExprKind::Bool(_) | ExprKind::Integer(_) | ExprKind::Float(_) => {}
            ExprKind::String(parts) => {
                for part in &**parts {
                    if let StringPart::Expr(inner) = part {
                        self.expr(inner, scope);
                    }
                }
            }
            ExprKind::Array(items) => {
                for item in &**items {
                    self.expr(item, scope);
                }
            }
            ExprKind::Object(fields) => {
                for (_, value) in &**fields {
                    self.expr(value, scope);
                }
            }
            ExprKind::Name => {
                let name = self.sources.try_slice(e.span).unwrap_or_default();
                let target = scope.get(name);
                self.reference(e.span, target);
            }
            ExprKind::Field(field) => {
                self.expr(&field.0, scope);
                let target = self.field_of(&field.0, &field.1.name, scope);
                self.reference(field.1.span, target);
            }
            ExprKind::Index(on, at) => {
                self.expr(on, scope);
                self.expr(at, scope);
            }
            ExprKind::Call(call) => {
                let callee =
                    self.global_of(&call.callee.name, &[Kind::Tool, Kind::Agent, Kind::Contract]);
                self.reference(call.callee.span, callee);
                self.args(callee, &call.args, scope);
            }
            ExprKind::Unary(_, inner) | ExprKind::Try(inner) => self.expr(inner, scope),
            ExprKind::Binary(_, left, right) => {
                self.expr(left, scope);
                self.expr(right, scope);
            }
            ExprKind::If(parts) => {
                self.expr(&parts.0, scope);
                self.expr(&parts.1, scope);
                self.expr(&parts.2, scope);
            }
            ExprKind::Match(parts) => {
                self.expr(&parts.0, scope);
                self.variants(parts, scope);
                for arm in &parts.1 {
                    self.expr(&arm.body, scope);
                }
            }
            ExprKind::For(each) => {
                self.expr(&each.items, scope);
                let item = match self.type_of(&each.items, scope).map(|t| t.kind) {
                    Some(TypeKind::Array(Some(item))) => Some((*item).clone()),
                    _ => None,
                };
                let id = self.def(
                    Kind::Local,
                    each.name.name.to_string(),
                    each.name.span,
                    e.span,
                    self.current,
                );
                self.types.insert(id, item);
                scope.locals.push((each.name.name.to_string(), id));
                if let Some(filter) = &each.filter {
                    self.expr(filter, scope);
                }
                self.expr(&each.body, scope);
                scope.locals.pop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(text: &str) -> (Sources, Index) {
        let loaded = crate::load::load_source("case.ign", text);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        let index = Index::build(&loaded.sources, &loaded.files, None);
        (loaded.sources, index)
    }

    #[test]
    fn outputs_refer_to_their_nodes() {
        let text = "contract C {\n  input t: string\n  compute level = match t {\n    \"a\" => 1\n    _ => 2\n  }\n  output level\n}\n";
        let (sources, index) = index(text);
        let named: Vec<&str> = index.refs.iter().map(|(s, _)| sources.slice(*s)).collect();
        assert_eq!(named, ["t", "level"]);
    }
}
