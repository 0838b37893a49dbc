//! Declared types: `type` records and `enum`s, lowered on first use.
//!
//! A record is lowered when a type expression first names it (or, for
//! records nothing names, by [`Lowerer::lower_declared_types`]), its
//! fields lowered like params. A record that is still being lowered when
//! one of its fields names it again is recursive: reported at that field,
//! which is read as `any` so one pass reports everything. Records are JSON
//! trees; a reference to another record is written as its id.

use std::collections::HashMap;
use std::sync::Arc;

use super::Lowerer;
use super::types::TYPE_NAMES;
use crate::ast;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Enum, Record, TypeKind};

/// The lowering state of one record declaration.
#[derive(Debug, Clone, Default)]
pub(super) enum Slot {
    /// Not looked at yet.
    #[default]
    Todo,
    /// Its fields are being lowered.
    InProgress,
    /// Lowered.
    Done(Arc<Record>),
}

impl Lowerer<'_> {
    /// Lowers every record and enum, so that unused ones are checked too.
    pub(super) fn lower_declared_types(&mut self) {
        self.check_builtin_type_names();
        self.records = vec![Slot::Todo; self.decls.types.len()];
        self.enums = vec![None; self.decls.enums.len()];
        for i in 0..self.decls.types.len() {
            let _ = self.record(i, &self.decls.types[i].name);
        }
        for i in 0..self.decls.enums.len() {
            let _ = self.enum_type(i);
        }
    }

    /// Reports each `type` or `enum` named like a built-in type (`image`,
    /// `string`, ...): every use of the name means the built-in, so the
    /// declaration would be silently unused.
    fn check_builtin_type_names(&mut self) {
        let names = self.decls.types.iter().map(|t| (&t.name, "type"));
        let names = names.chain(self.decls.enums.iter().map(|e| (&e.name, "enum")));
        let shadowed: Vec<_> = names.filter(|(n, _)| TYPE_NAMES.contains(&&*n.name)).collect();
        for (name, what) in shadowed {
            let builtin = &name.name;
            self.push(
                Diagnostic::error(
                    Code::BuiltinTypeName,
                    name.span,
                    format!("{what} `{builtin}` has the name of a built-in type"),
                )
                .label(format!(
                    "every `{builtin}` written as a type means the built-in `{builtin}`"
                ))
                .help(format!(
                    "rename the {what} (`{}`, say): the built-in types are {}",
                    capitalized(builtin),
                    crate::suggest::list(&TYPE_NAMES)
                )),
            );
        }
    }

    /// The type of record `index`, named at `used` (recursion is reported there).
    pub(super) fn record(&mut self, index: usize, used: &ast::Ident) -> TypeKind {
        match &self.records[index] {
            Slot::Done(record) => return TypeKind::Record(Arc::clone(record)),
            Slot::InProgress => {
                let decl = self.decls.types[index];
                self.push(
                    Diagnostic::error(
                        Code::RecursiveType,
                        used.span,
                        format!("type `{}` contains itself", decl.name.name),
                    )
                    .label("refers back to the record being declared")
                    .note(decl.name.span, "declared here")
                    .help("records are JSON trees: refer to another record by its id (`string`)"),
                );
                return TypeKind::Any;
            }
            Slot::Todo => {}
        }
        self.records[index] = Slot::InProgress;
        let decl = self.decls.types[index];
        let fields = self.lower_params(&decl.fields, "field");
        let record =
            Arc::new(Record { name: decl.name.name.to_string(), fields, span: decl.name.span });
        self.records[index] = Slot::Done(Arc::clone(&record));
        TypeKind::Record(record)
    }

    /// The type of enum `index`; repeated variants are reported once.
    pub(super) fn enum_type(&mut self, index: usize) -> TypeKind {
        if let Some(e) = &self.enums[index] {
            return TypeKind::Enum(Arc::clone(e));
        }
        let decl = self.decls.enums[index];
        let mut seen: HashMap<&str, &ast::Ident> = HashMap::new();
        let mut variants = Vec::with_capacity(decl.variants.len());
        for variant in &decl.variants {
            if let Some(first) = seen.insert(&variant.name, variant) {
                self.push(
                    Diagnostic::error(
                        Code::Duplicate,
                        variant.span,
                        format!(
                            "variant `{}` is declared twice in enum `{}`",
                            variant.name, decl.name.name
                        ),
                    )
                    .label("declared again here")
                    .note(first.span, "first declared here"),
                );
            } else {
                variants.push(variant.name.to_string());
            }
        }
        if variants.is_empty() {
            self.push(
                Diagnostic::error(
                    Code::BadSetting,
                    decl.name.span,
                    format!("enum `{}` has no variants", decl.name.name),
                )
                .label("no value would fit")
                .help(format!("list the values: `enum {} {{ a, b }}`", decl.name.name)),
            );
        }
        let e = Arc::new(Enum { name: decl.name.name.to_string(), variants, span: decl.name.span });
        self.enums[index] = Some(Arc::clone(&e));
        TypeKind::Enum(e)
    }
}

/// `name` with its first letter upper-case, as declared types are
/// written: `image` → `Image`.
fn capitalized(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map(|c| c.to_ascii_uppercase()).into_iter().chain(chars).collect()
}
