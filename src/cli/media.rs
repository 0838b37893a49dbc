//! Media inputs from files: `--input scan=@receipt.png` (from the current
//! folder) and `{"scan": {"path": "receipt.png"}}` in `--inputs` or a
//! `--batch` row (from that file's folder, and never outside it or the
//! current folder).
//!
//! Only places whose declared type is `image` or `document` (at any depth:
//! `array<image>`, a record's field, `T?`) read files; the value read is
//! checked against the type when the run admits its inputs. `--input
//! NAME=@FILE` reads an `image` or `document` input, or adds an item to an
//! `array<image>` one each time it is given; `{"path": ...}` inside an
//! `--input` JSON value is read from the current folder.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::eval::{Fields, Val, media_file};
use crate::ir::{Type, TypeKind};
use crate::media::Kind;
use crate::value::Object;

/// How an `--input NAME=@FILE` value is put among the inputs.
pub(super) enum AtFile {
    /// The input's value (an `image` or `document` input, `image?`).
    Value(Val),
    /// One more item of the input's array (`array<image>`): each
    /// `--input NAME=@FILE` of the same name adds one, in order.
    Item(Val),
}

/// An `--input NAME=@FILE` value: the file read as a media value when the
/// input is `image` or `document` (or `T?`), or an array of them; else
/// `None` (the text is read as usual).
///
/// # Errors
/// The file cannot be read, is too large or does not fit the kind.
pub(super) fn at_file(
    name: &str,
    ty: Option<&Type>,
    raw: &str,
    limit: usize,
) -> Option<Result<AtFile, String>> {
    let (kind, item) = match &ty?.kind {
        TypeKind::Media(kind) => (*kind, false),
        TypeKind::Array(Some(item)) => match item.kind {
            TypeKind::Media(kind) => (kind, true),
            _ => return None,
        },
        _ => return None,
    };
    let path = raw.strip_prefix('@')?;
    Some(
        media_file(Path::new(path), Some(kind), limit)
            .map(|object| {
                let value = Val::Object(object);
                if item { AtFile::Item(value) } else { AtFile::Value(value) }
            })
            .map_err(|e| format!("input `{name}`: {e}")),
    )
}

/// Where `{"path": ...}` values may be read from: the folder of the file
/// that names them and the current folder.
pub(super) struct Reach {
    base: PathBuf,
    roots: Vec<PathBuf>,
    limit: usize,
}

impl Reach {
    /// Paths of a file in `base` (its folder), files up to `limit` bytes.
    pub(super) fn new(base: &Path, limit: usize) -> Self {
        let roots = [base.to_path_buf(), PathBuf::from(".")]
            .iter()
            .filter_map(|root| std::fs::canonicalize(root).ok())
            .collect();
        Self { base: base.to_path_buf(), roots, limit }
    }

    /// Reads every `{"path": ...}` of the inputs `given` of the contract
    /// whose inputs are `declared`.
    ///
    /// # Errors
    /// The first input whose file cannot be used, named.
    pub(super) fn load<'a>(
        &self,
        declared: impl Iterator<Item = (&'a str, &'a Type)>,
        given: &mut Fields,
    ) -> Result<(), String> {
        for (name, ty) in declared {
            if let Some(value) = given.get_mut(name) {
                self.load_value(ty, value, name)?;
            }
        }
        Ok(())
    }

    /// [`Reach::load`] of one value of type `ty`, `at` naming it (a value
    /// just read, so changing it copies nothing).
    ///
    /// # Errors
    /// The first place whose file cannot be used, named.
    pub(super) fn load_value(&self, ty: &Type, value: &mut Val, at: &str) -> Result<(), String> {
        match (&ty.kind, value) {
            (TypeKind::Media(kind), Val::Object(fields)) if fields.len() == 1 => {
                let Some(Val::String(path)) = fields.get("path") else { return Ok(()) };
                let read = self.read(path, *kind).map_err(|e| format!("input `{at}`: {e}"))?;
                *fields = read;
                Ok(())
            }
            (TypeKind::Array(Some(item)), Val::Array(items)) => {
                for (i, v) in Arc::make_mut(items).iter_mut().enumerate() {
                    self.load_value(item, v, &format!("{at}[{i}]"))?;
                }
                Ok(())
            }
            (TypeKind::Record(record), Val::Object(fields)) => {
                for field in &record.fields {
                    let at = format!("{at}.{}", field.name);
                    fields
                        .update(&field.name, |v| self.load_value(&field.ty, v, &at))
                        .transpose()?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The file `path` (from the base folder) as a media value.
    fn read(&self, path: &str, kind: Kind) -> Result<Object, String> {
        let joined = self.base.join(path);
        let real = std::fs::canonicalize(&joined)
            .map_err(|e| format!("cannot read `{}`: {e}", joined.display()))?;
        if !self.roots.iter().any(|root| real.starts_with(root)) {
            return Err(format!(
                "`{path}` is outside the inputs file's folder and the current folder: \
                 copy the file under one of them"
            ));
        }
        media_file(&real, Some(kind), self.limit)
            .map_err(|e| e.replace(&real.display().to_string(), path))
    }
}
