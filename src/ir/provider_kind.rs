//! [`ProviderKind`]: a wire protocol an agent speaks, named by its index.
//!
//! The IR only names a kind: lowering resolves `provider NAME` and `kind
//! NAME` against [`ProviderKind::named`], and the agent runtime looks up
//! what the kind does (its variables, URL, request and reply functions) in
//! `llm::PROVIDERS`, whose rows stand in the order of [`ProviderKind::all`]
//! (the table's length is [`ProviderKind::COUNT`], so a kind without a row
//! does not compile).

use std::fmt;

use crate::media::Kind;

/// Every kind's name in `.ign`, in the order help text lists them.
const NAMES: [&str; 4] = ["anthropic", "openai", "ollama", "gemini"];

/// The agent settings each kind's API no longer takes, in [`NAMES`] order:
/// its wire module does not send them and `check` warns that they are
/// ignored. Anthropic's Messages API (SDK 2.x) dropped `temperature`.
const IGNORED_SETTINGS: [&[&str]; 4] = [&["temperature"], &[], &[], &[]];

/// The media each kind's API takes in a user message, in [`NAMES`] order:
/// Ollama's chat takes images alone.
const MEDIA: [&[Kind]; 4] = [
    &[Kind::Image, Kind::Document],
    &[Kind::Image, Kind::Document],
    &[Kind::Image],
    &[Kind::Image, Kind::Document],
];

/// A provider kind: an index into the kind table.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProviderKind(u8);

impl ProviderKind {
    /// Anthropic's Messages API.
    pub const ANTHROPIC: Self = Self(0);
    /// OpenAI's Chat Completions API.
    pub const OPENAI: Self = Self(1);
    /// Ollama's chat API.
    pub const OLLAMA: Self = Self(2);
    /// Google's Gemini `generateContent` API.
    pub const GEMINI: Self = Self(3);
    /// How many kinds there are.
    pub const COUNT: usize = NAMES.len();

    /// The kind called `name` in `.ign`.
    #[must_use]
    pub fn named(name: &str) -> Option<Self> {
        Self::all().find(|kind| kind.name() == name)
    }

    /// Every kind, in table order.
    pub fn all() -> impl Iterator<Item = ProviderKind> {
        (0..NAMES.len()).filter_map(|i| u8::try_from(i).ok()).map(ProviderKind)
    }

    /// Every kind's name, in table order.
    #[must_use]
    pub fn names() -> Vec<&'static str> {
        NAMES.to_vec()
    }

    /// The first kind: what lowering records after an unknown kind was reported.
    #[must_use]
    pub fn first() -> Self {
        Self(0)
    }

    /// The kind's name in `.ign`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        NAMES[self.0 as usize]
    }

    /// True when the kind's API does not take the agent setting `setting`
    /// (so it is not sent).
    #[must_use]
    pub fn ignores(self, setting: &str) -> bool {
        IGNORED_SETTINGS[self.index()].contains(&setting)
    }

    /// True when the kind's API takes media of `kind` (`image`, `document`)
    /// in a prompt.
    #[must_use]
    pub fn takes(self, kind: Kind) -> bool {
        MEDIA[self.index()].contains(&kind)
    }

    /// The kind's index in the kind table.
    #[must_use]
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Debug for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        let names = ProviderKind::names();
        for name in &names {
            assert_eq!(ProviderKind::named(name).map(ProviderKind::name), Some(*name));
            assert_eq!(names.iter().filter(|n| *n == name).count(), 1, "{name}");
        }
        assert!(ProviderKind::named("script").is_none());
        assert_eq!(ProviderKind::all().count(), ProviderKind::COUNT);
    }
}
