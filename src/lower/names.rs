//! The global declaration table: every tool, agent, provider, contract,
//! record type, enum and MCP server
//! of the program by name, and the duplicate-declaration check.
//!
//! Names are global across files and kinds: a tool and a contract may not
//! share a name. The first declaration of a name wins lookups; each later
//! one is reported with a note at the first.

use std::collections::HashMap;

use super::Lowerer;
use crate::ast::{self, Ident, Item};
use crate::diagnostic::{Code, Diagnostic};
use crate::source::FileId;

/// What a declared name refers to: a kind and an index into its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Decl {
    Tool(usize),
    Agent(usize),
    Provider(usize),
    Contract(usize),
    Type(usize),
    Enum(usize),
    Mcp(usize),
}

impl Decl {
    /// The kind in words: "tool", "agent", ...
    pub(super) fn kind(self) -> &'static str {
        match self {
            Decl::Tool(_) => "tool",
            Decl::Agent(_) => "agent",
            Decl::Provider(_) => "provider",
            Decl::Contract(_) => "contract",
            Decl::Type(_) => "type",
            Decl::Enum(_) => "enum",
            Decl::Mcp(_) => "MCP server",
        }
    }

    /// The kind with its article: "a tool", "an agent", ...
    pub(super) fn a_kind(self) -> String {
        crate::suggest::with_article(self.kind())
    }
}

/// Every declaration of the program, by kind in declaration order and by
/// name.
#[derive(Debug, Default)]
pub(super) struct Declarations<'a> {
    pub(super) tools: Vec<&'a ast::Tool>,
    pub(super) agents: Vec<&'a ast::Agent>,
    pub(super) providers: Vec<&'a ast::Provider>,
    pub(super) contracts: Vec<&'a ast::Contract>,
    pub(super) types: Vec<&'a ast::TypeDecl>,
    pub(super) enums: Vec<&'a ast::EnumDecl>,
    pub(super) mcp: Vec<&'a ast::McpServer>,
    /// `test` blocks with their files (tests have no global name).
    pub(super) tests: Vec<(FileId, &'a ast::Test)>,
    /// `eval` blocks with their files.
    pub(super) evals: Vec<(FileId, &'a ast::Eval)>,
    /// Every declaration name in declaration order, with what it is; the
    /// duplicates too.
    pub(super) all: Vec<(&'a Ident, Decl)>,
    /// The first declaration of each name.
    by_name: HashMap<&'a str, Decl>,
}

impl<'a> Declarations<'a> {
    /// The table of the files' declarations, files in load order.
    pub(super) fn collect(files: &'a [(FileId, ast::File)]) -> Self {
        let mut decls = Declarations::default();
        for (file_id, file) in files {
            for item in &file.items {
                let (name, decl) = match item {
                    Item::Use(_) => continue,
                    Item::Test(t) => {
                        decls.tests.push((*file_id, t));
                        continue;
                    }
                    Item::Eval(e) => {
                        decls.evals.push((*file_id, e));
                        continue;
                    }
                    Item::Tool(t) => {
                        decls.tools.push(t);
                        (&t.name, Decl::Tool(decls.tools.len() - 1))
                    }
                    Item::Agent(a) => {
                        decls.agents.push(a);
                        (&a.name, Decl::Agent(decls.agents.len() - 1))
                    }
                    Item::Provider(p) => {
                        decls.providers.push(p);
                        (&p.name, Decl::Provider(decls.providers.len() - 1))
                    }
                    Item::Contract(c) => {
                        decls.contracts.push(c);
                        (&c.name, Decl::Contract(decls.contracts.len() - 1))
                    }
                    Item::Type(t) => {
                        decls.types.push(t);
                        (&t.name, Decl::Type(decls.types.len() - 1))
                    }
                    Item::Enum(e) => {
                        decls.enums.push(e);
                        (&e.name, Decl::Enum(decls.enums.len() - 1))
                    }
                    Item::Mcp(m) => {
                        decls.mcp.push(m);
                        (&m.name, Decl::Mcp(decls.mcp.len() - 1))
                    }
                };
                decls.all.push((name, decl));
                decls.by_name.entry(&*name.name).or_insert(decl);
            }
        }
        decls
    }

    /// The declaration named `name`.
    pub(super) fn get(&self, name: &str) -> Option<Decl> {
        self.by_name.get(name).copied()
    }

    /// The name of a declaration.
    pub(super) fn ident(&self, decl: Decl) -> &'a Ident {
        match decl {
            Decl::Tool(i) => &self.tools[i].name,
            Decl::Agent(i) => &self.agents[i].name,
            Decl::Provider(i) => &self.providers[i].name,
            Decl::Contract(i) => &self.contracts[i].name,
            Decl::Type(i) => &self.types[i].name,
            Decl::Enum(i) => &self.enums[i].name,
            Decl::Mcp(i) => &self.mcp[i].name,
        }
    }

    /// The names of the declarations `keep` accepts, for "did you mean".
    pub(super) fn names_where(&self, keep: impl Fn(Decl) -> bool) -> Vec<&'a str> {
        self.all.iter().filter(|(_, d)| keep(*d)).map(|(n, _)| &*n.name).collect()
    }
}

impl Lowerer<'_> {
    /// Reports every declaration whose name an earlier one already took.
    pub(super) fn check_duplicate_declarations(&mut self) {
        let decls = self.decls;
        for &(name, decl) in &decls.all {
            let Some(first) = decls.get(&name.name) else { continue };
            if first == decl {
                continue;
            }
            let first_name = decls.ident(first);
            self.push(
                Diagnostic::error(
                    Code::Duplicate,
                    name.span,
                    format!("`{}` is declared twice", name.name),
                )
                .label(format!("this {} reuses the name", decl.kind()))
                .note(first_name.span, format!("first declared here as {}", first.a_kind()))
                .help("names are global across files and kinds; rename one"),
            );
        }
    }
}
