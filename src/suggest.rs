//! "Did you mean `x`?": the closest known name to a misspelt one.
//!
//! Only ever called on the error path, so a linear scan of the candidates
//! is fine even for contracts with many nodes.

/// The help text suggesting the candidate closest to `name`, when one is
/// close enough to be a likely typo.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    closest(name, candidates).map(|best| format!("did you mean `{best}`?"))
}

/// The candidate closest to `name` by edit distance, if within a third of
/// its length (at least one edit); the first wins ties.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == name {
            continue;
        }
        // A case-only difference counts as one edit.
        let distance = if candidate.to_lowercase() == lower {
            1
        } else {
            strsim::damerau_levenshtein(name, candidate)
        };
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// `word` after "a" or "an": "a tool", "an agent", "an input".
pub fn with_article(word: &str) -> String {
    let vowel = word.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {word}", if vowel { "an" } else { "a" })
}

/// "`a`", "`a` and `b`", "`a`, `b` and `c`".
pub fn list<S: AsRef<str>>(names: &[S]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{}`", n.as_ref())).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(closest("totl", ["total", "tax"]), Some("total"));
        assert_eq!(closest("x", ["total", "tax"]), None);
        assert_eq!(closest("Price", ["price"]), Some("price"));
        assert_eq!(closest("zzzzzz", ["total"]), None);
    }

    #[test]
    fn articles_fit_the_word() {
        assert_eq!(with_article("agent"), "an agent");
        assert_eq!(with_article("input"), "an input");
        assert_eq!(with_article("tool"), "a tool");
    }

    #[test]
    fn lists_names() {
        assert_eq!(list(&["a"]), "`a`");
        assert_eq!(list(&["a", "b", "c"]), "`a`, `b` and `c`");
    }
}
