//! The VS Code extension's TextMate grammar
//! (`editors/vscode/syntaxes/ignite.tmLanguage.json`): the annotated
//! samples in `editors/vscode/tests/` pass `vscode-tmgrammar-test` (a
//! pinned Node peer), and the grammar names every keyword of
//! `ast::Keyword` and every reserved word, so the two cannot drift.

#![allow(clippy::unwrap_used)]
mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn extension() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/editors/vscode"))
}

#[test]
fn the_grammar_scopes_the_annotated_samples() {
    let tester = support::peers::peer("node", "vscode-tmgrammar-test");
    let output = Command::new(tester)
        .current_dir(extension())
        .args(["-g", "syntaxes/ignite.tmLanguage.json", "tests/*.ign"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("declarations.ign run successfuly"), "{stdout}");
}

/// Every word of a `\b(a|b|c)\b` alternation in the grammar's `match`
/// patterns.
fn grammar_words(value: &serde_json::Value, words: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::String(pattern)) = map.get("match") {
                for alternation in pattern.split("\\b(").skip(1) {
                    let inner = alternation.split(")\\b").next().unwrap();
                    words.extend(inner.split('|').map(str::to_owned));
                }
            }
            map.values().for_each(|v| grammar_words(v, words));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| grammar_words(v, words)),
        _ => {}
    }
}

#[test]
fn the_grammar_names_every_keyword() {
    let text =
        std::fs::read_to_string(extension().join("syntaxes/ignite.tmLanguage.json")).unwrap();
    let grammar: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut words = BTreeSet::new();
    grammar_words(&grammar, &mut words);
    let keywords = igniter::ast::Keyword::ALL.iter().map(|k| k.as_str());
    let missing: Vec<&str> = keywords
        .chain(igniter::ast::RESERVED.iter().copied())
        .filter(|w| !words.contains(*w))
        .collect();
    assert!(missing.is_empty(), "the TextMate grammar lacks the keywords {missing:?}");
}
