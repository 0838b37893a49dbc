//! The builtin tools' descriptors: what each builtin reads from its `.ign`
//! declaration (params and config keys), declared once.
//!
//! `check` validates every `builtin "name" {config}` declaration against its
//! descriptor (unknown or mistyped config keys, missing required ones,
//! params the builtin reads that the tool does not declare or declares with
//! the wrong type), and the runtime reads arguments and config through the
//! same descriptor, so the two cannot disagree.
//!
//! A builtin reads each of its params by name, else the declared param at
//! the same position (so `param expr: string` feeds `math.eval`). Config
//! values are all strings.

use serde_json::{Map, Value};

/// The tools shipped with ignite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// `math.eval`: arithmetic on numbers, never code.
    MathEval,
    /// `fs.read`: a file under the configured `root`.
    FsRead,
    /// `fs.write`: a file under the configured `root`.
    FsWrite,
    /// `http.get`: a URL, returns JSON or text.
    HttpGet,
    /// `json.lookup`: a record from a JSON file by key.
    JsonLookup,
}

/// What a builtin reads from its declaration.
#[derive(Debug)]
pub struct BuiltinSpec {
    /// The builtin.
    pub builtin: Builtin,
    /// Its name in `.ign`.
    pub name: &'static str,
    /// The params it reads, in position order.
    pub params: &'static [BuiltinParam],
    /// The config keys it accepts.
    pub config: &'static [ConfigKey],
}

/// A param a builtin reads.
#[derive(Debug)]
pub struct BuiltinParam {
    /// Its name; see `name_from_config`.
    pub name: &'static str,
    /// When set, the param is named by this config key (its value, else
    /// `name`): `json.lookup` reads the param named like its `key`.
    pub name_from_config: Option<&'static str>,
    /// The type the declaration must give it.
    pub kind: ParamKind,
}

/// The declared type a builtin param needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A non-nullable `string`.
    String,
    /// Any type.
    Any,
}

/// A config key a builtin accepts (a string value).
#[derive(Debug)]
pub struct ConfigKey {
    /// The key.
    pub name: &'static str,
    /// Whether a declaration must set it.
    pub required: bool,
}

const fn param(name: &'static str, kind: ParamKind) -> BuiltinParam {
    BuiltinParam { name, name_from_config: None, kind }
}

const ROOT: ConfigKey = ConfigKey { name: "root", required: false };

/// Every builtin's descriptor.
pub static BUILTINS: &[BuiltinSpec] = &[
    BuiltinSpec {
        builtin: Builtin::MathEval,
        name: "math.eval",
        params: &[param("expression", ParamKind::String)],
        config: &[],
    },
    BuiltinSpec {
        builtin: Builtin::FsRead,
        name: "fs.read",
        params: &[param("path", ParamKind::String)],
        config: &[ROOT],
    },
    BuiltinSpec {
        builtin: Builtin::FsWrite,
        name: "fs.write",
        params: &[param("path", ParamKind::String), param("content", ParamKind::Any)],
        config: &[ROOT],
    },
    BuiltinSpec {
        builtin: Builtin::HttpGet,
        name: "http.get",
        params: &[param("url", ParamKind::String)],
        config: &[],
    },
    BuiltinSpec {
        builtin: Builtin::JsonLookup,
        name: "json.lookup",
        params: &[BuiltinParam { name: "id", name_from_config: Some("key"), kind: ParamKind::Any }],
        config: &[
            ConfigKey { name: "file", required: true },
            ConfigKey { name: "key", required: false },
        ],
    },
];

impl Builtin {
    /// The builtin called `name` in `.ign`.
    #[must_use]
    pub fn named(name: &str) -> Option<Builtin> {
        BUILTINS.iter().find(|s| s.name == name).map(|s| s.builtin)
    }

    /// Every builtin's name.
    #[must_use]
    pub fn names() -> Vec<&'static str> {
        BUILTINS.iter().map(|s| s.name).collect()
    }

    /// The builtin's descriptor.
    #[must_use]
    pub fn spec(self) -> &'static BuiltinSpec {
        BUILTINS.iter().find(|s| s.builtin == self).expect("every builtin has a row in BUILTINS")
    }

    /// The builtin's name in `.ign`.
    #[must_use]
    pub fn name(self) -> &'static str {
        self.spec().name
    }
}

impl BuiltinParam {
    /// The param name the builtin looks for, given the tool's config.
    #[must_use]
    pub fn name_in<'a>(&'a self, config: &'a Map<String, Value>) -> &'a str {
        self.name_from_config
            .and_then(|key| config.get(key))
            .and_then(Value::as_str)
            .unwrap_or(self.name)
    }
}

impl BuiltinSpec {
    /// The index among `declared` (param names in declaration order) of the
    /// param feeding the builtin's `position`-th param: the one named like
    /// it, else the one at the same position.
    #[must_use]
    pub fn resolve<'a>(
        &self,
        position: usize,
        config: &Map<String, Value>,
        declared: impl ExactSizeIterator<Item = &'a str> + Clone,
    ) -> Option<usize> {
        let wanted = self.params.get(position)?.name_in(config);
        let count = declared.len();
        declared.clone().position(|n| n == wanted).or((position < count).then_some(position))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_has_one_descriptor() {
        for spec in BUILTINS {
            assert_eq!(spec.builtin.spec().name, spec.name);
            assert_eq!(Builtin::named(spec.name), Some(spec.builtin));
            assert_eq!(BUILTINS.iter().filter(|s| s.builtin == spec.builtin).count(), 1);
        }
    }

    #[test]
    fn params_resolve_by_name_then_position() {
        let config = Map::new();
        let write = Builtin::FsWrite.spec();
        let names = ["content", "path"];
        assert_eq!(write.resolve(0, &config, names.iter().copied()), Some(1));
        assert_eq!(write.resolve(1, &config, names.iter().copied()), Some(0));
        assert_eq!(write.resolve(1, &config, ["p"].iter().copied()), None);
        let lookup = Builtin::JsonLookup.spec();
        let mut config = Map::new();
        config.insert("key".into(), "sku".into());
        assert_eq!(lookup.resolve(0, &config, ["x", "sku"].iter().copied()), Some(1));
        assert_eq!(lookup.resolve(0, &config, ["x"].iter().copied()), Some(0));
    }
}
