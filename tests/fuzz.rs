//! A bounded fuzz test of `check` and `run`: generated programs (mostly
//! plausible, often wrong) are compiled, and those that compile are run
//! with generated inputs, so a panic anywhere in the pipeline fails the
//! test. Programs use only pure tools (`returns`), so nothing leaves the
//! process. Each case is generated from one seed; a failure prints the
//! program and its inputs.

#![allow(clippy::unwrap_used)]
use std::fmt::Write as _;

use igniter::runtime::{Engine, RunOptions};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Type names, some wrong on purpose.
const TYPES: [&str; 11] = [
    "integer",
    "float",
    "string",
    "boolean",
    "array<integer>",
    "array<string>",
    "object",
    "any",
    "string?",
    "integer?",
    "bool",
];

/// Built-ins with a plausible argument count (sometimes wrong).
const FUNCTIONS: [(&str, usize); 26] = [
    ("len", 1),
    ("upper", 1),
    ("lower", 1),
    ("trim", 1),
    ("split", 2),
    ("join", 2),
    ("contains", 2),
    ("starts_with", 2),
    ("ends_with", 2),
    ("replace", 3),
    ("round", 2),
    ("floor", 1),
    ("ceil", 1),
    ("abs", 1),
    ("min", 2),
    ("max", 3),
    ("sum", 1),
    ("keys", 1),
    ("values", 1),
    ("get", 3),
    ("to_string", 1),
    ("to_number", 1),
    ("to_json", 1),
    ("from_json", 1),
    ("matches", 2),
    ("env", 2),
];

/// Binary operators.
const OPERATORS: [&str; 13] =
    ["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "and", "or"];

/// Literals of every kind, some awkward (non-ASCII text included).
const LITERALS: [&str; 19] = [
    "0",
    "1",
    "-7",
    "2.5",
    "9223372036854775807",
    "1e308",
    "true",
    "false",
    "null",
    "\"\"",
    "\"a,b\"",
    "\"{1 + 1}\"",
    "[1, 2, 3]",
    "[]",
    "{a: 1, \"b c\": [true]}",
    "\"^[a-z]+$\"",
    "\"café ✓\"",
    "\"日本語 {1}\"",
    "\"\u{fffd}\u{1f525}\"",
];

/// Comments ending lines, in several scripts and with a replacement
/// character (U+FFFD, three bytes) last.
const COMMENTS: [&str; 4] = ["", " # caf\u{fffd}", " # 日本語", " # ünïcödé ✓ \u{1f525}"];

/// Names that are not ASCII: a name is ASCII, so these are syntax errors
/// whose spans must still land on character boundaries.
const ODD_NAMES: [&str; 3] = ["café", "名前", "x\u{fffd}"];

struct Gen {
    rng: fastrand::Rng,
    text: String,
    /// Each contract's inputs: name and type.
    inputs: Vec<Vec<(String, &'static str)>>,
}

impl Gen {
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.rng.usize(..items.len())]
    }

    /// An expression over `names`, at most `depth` deep.
    fn expr(&mut self, names: &[String], depth: usize) -> String {
        let choice = if depth == 0 { self.rng.usize(..2) } else { self.rng.usize(..9) };
        match choice {
            0 if !names.is_empty() => names[self.rng.usize(..names.len())].clone(),
            0 | 1 => self.pick(&LITERALS).to_owned(),
            2 | 3 => {
                let op = self.pick(&OPERATORS);
                format!("{} {op} {}", self.expr(names, depth - 1), self.expr(names, depth - 1))
            }
            4 => {
                let (name, mut arity) = FUNCTIONS[self.rng.usize(..FUNCTIONS.len())];
                if self.rng.u8(..40) == 0 {
                    arity += 1;
                }
                let args: Vec<String> = (0..arity).map(|_| self.expr(names, depth - 1)).collect();
                format!("{name}({})", args.join(", "))
            }
            5 => format!(
                "if {} then {} else {}",
                self.expr(names, depth - 1),
                self.expr(names, depth - 1),
                self.expr(names, depth - 1)
            ),
            6 => format!("({}).{}", self.expr(names, depth - 1), self.pick(&["a", "b", "x"])),
            7 => format!(
                "{}[{}]",
                self.expr(names, depth - 1),
                self.pick(&["0", "-1", "5", "\"a\""])
            ),
            _ => format!("{}{}", self.pick(&["-", "not ", "- -"]), self.expr(names, depth - 1)),
        }
    }

    fn tool(&mut self, i: usize) {
        let ty = self.pick(&TYPES);
        let _ = writeln!(self.text, "tool Tool{i} {{\n  param p: {ty}");
        let body = self.expr(&["p".to_owned()], 2);
        let _ = writeln!(self.text, "  returns {body}\n}}");
    }

    /// A contract; it may call tools `0..tools` and compose contracts `0..i`.
    fn contract(&mut self, i: usize, tools: usize) {
        let _ = writeln!(self.text, "contract C{i} {{");
        match self.rng.u8(..6) {
            0 => self.text.push_str("  runner inline\n"),
            1 => {
                let size = self.pick(&["1", "3", "0", "70000"]);
                let _ = writeln!(self.text, "  runner thread_pool(pool_size: {size})");
            }
            _ => {}
        }
        if self.rng.u8(..5) == 0 {
            let limit = self.pick(&["usd 0.5", "model_calls 3", "tokens 100", "model_calls 0"]);
            let _ = writeln!(self.text, "  budget {limit}, tokens 9");
        }
        let mut names = Vec::new();
        let mut inputs = Vec::new();
        for k in 0..self.rng.usize(1..4) {
            let ty = if self.rng.u8(..20) == 0 { "bool" } else { self.pick(&TYPES[..10]) };
            inputs.push((format!("in{k}"), ty));
            let default = if self.rng.bool() {
                format!(" = {}", self.pick(&LITERALS))
            } else {
                String::new()
            };
            let _ = writeln!(self.text, "  input in{k}: {ty}{default}");
            names.push(format!("in{k}"));
        }
        for k in 0..self.rng.usize(0..6) {
            let line = match self.rng.u8(..8) {
                0 if tools > 0 => {
                    let arg = self.expr(&names, 1);
                    format!("compute n{k} = Tool{}(p: {arg})", self.rng.usize(..tools))
                }
                1 if i > 0 => {
                    let arg = self.expr(&names, 1);
                    format!("compose n{k} = C{}(in0: {arg})", self.rng.usize(..i))
                }
                2 => {
                    let cond = self.expr(&names, 2);
                    format!("guard n{k} = {cond} else \"failed {{in0}}\"")
                }
                _ => format!("compute n{k} = {}", self.expr(&names, 3)),
            };
            let comment = self.pick(&COMMENTS);
            let _ = writeln!(self.text, "  {line}{comment}");
            names.push(if self.rng.u8(..30) == 0 {
                self.pick(&ODD_NAMES).to_owned()
            } else {
                format!("n{k}")
            });
        }
        self.inputs.push(inputs);
        for _ in 0..self.rng.usize(1..3) {
            let name = names[self.rng.usize(..names.len())].clone();
            let field = if self.rng.u8(..4) == 0 { ".a" } else { "" };
            let _ = writeln!(self.text, "  output {name}{field}");
        }
        self.text.push_str("}\n");
    }
}

/// A JSON value of type `ty` most of the time, else of any kind.
fn value(rng: &mut fastrand::Rng, ty: &str) -> Value {
    if rng.u8(..5) > 0 {
        match ty.trim_end_matches('?') {
            "integer" => return json!(rng.i64(-5..50)),
            "float" => return json!(rng.f64() * 10.0),
            "string" => return json!(["abc", "A-12", "", "x,y"][rng.usize(..4)]),
            "boolean" => return json!(rng.bool()),
            "array<integer>" => return json!([3, 1, 2]),
            "array<string>" => return json!(["b", "a"]),
            "object" => return json!({"a": 1, "b": "x"}),
            _ => {}
        }
    }
    match rng.u8(..8) {
        0 => json!(rng.i64(-5..5)),
        1 => json!(rng.f64() * 10.0),
        2 => json!(["a", "b"][rng.usize(..2)]),
        3 => json!(rng.bool()),
        4 => json!([1, 2, 3]),
        5 => json!({"a": 1, "b": "x"}),
        6 => json!(["x", "y"]),
        _ => Value::Null,
    }
}

fn program(seed: u64) -> Gen {
    let mut g =
        Gen { rng: fastrand::Rng::with_seed(seed), text: String::new(), inputs: Vec::new() };
    let tools = g.rng.usize(0..3);
    for i in 0..tools {
        g.tool(i);
    }
    for i in 0..g.rng.usize(1..4) {
        g.contract(i, tools);
    }
    if g.rng.u8(..8) == 0 {
        // A damaged file: cut at a character boundary (an unclosed `{`,
        // a comment or string that ends the file, ...).
        let at = g.rng.usize(..=g.text.len());
        let at = (0..=at).rev().find(|&i| g.text.is_char_boundary(i)).unwrap_or(0);
        g.text.truncate(at);
    }
    g
}

/// Files that once panicked `check`, rendered on every run.
const KNOWN: [&str; 1] = [
    // A span's neighbouring line ended inside a multi-byte character (the
    // excerpt cut its context at a byte, not a character): 53 bytes.
    "contract Bad{\n  input x: string\n  output x\n\n# caf\u{fffd}\n",
];

/// `check` of each [`KNOWN`] file reports without panicking.
#[test]
fn known_panics_stay_fixed() {
    for text in KNOWN {
        let compilation = igniter::compile_source("known.ign", text);
        assert!(!compilation.diagnostics.is_empty(), "{text}");
        let rendered = compilation.diagnostics.render(&compilation.sources, false, 80);
        assert!(rendered.contains("known.ign:"), "{rendered}");
        let _ = compilation.diagnostics.to_json(&compilation.sources);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// `check` and `run` never panic on generated programs and inputs.
    #[test]
    fn check_and_run_never_panic(seed in any::<u64>()) {
        let Gen { text, inputs: declared, .. } = program(seed);
        let compilation = igniter::compile_source("fuzz.ign", &text);
        // Rendering touches every span: it must not panic either.
        let _ = compilation.diagnostics.render(&compilation.sources, false, 80);
        let _ = compilation.diagnostics.to_json(&compilation.sources);
        let Some(program) = compilation.program else { return Ok(()) };
        let engine = Engine::new(program);
        let mut rng = fastrand::Rng::with_seed(seed);
        for (contract, declared) in declared.iter().enumerate() {
            let Ok(id) = engine.contract(Some(&format!("C{contract}"))) else { continue };
            let inputs: Map<String, Value> =
                declared.iter().map(|(name, ty)| (name.clone(), value(&mut rng, ty))).collect();
            let options = RunOptions { jobs: Some(2), trace: true, ..RunOptions::default() };
            if let Err(error) = engine.run(id, &inputs, &options) {
                // Errors render without panicking too.
                let _ = error.to_string();
                if let Some(diagnostics) = error.diagnostics() {
                    let _ = diagnostics.render(&engine.program().sources, false, 80);
                }
            }
        }
    }
}

/// `text` made messy the way people write: lines indented at random,
/// blank lines doubled, comments on lines of their own and after code.
fn messy(text: &str, seed: u64) -> String {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut out = String::new();
    for (n, line) in text.lines().enumerate() {
        if rng.u8(..6) == 0 {
            let _ = writeln!(out, "{}# note {n}", " ".repeat(rng.usize(..5)));
        }
        if rng.u8(..8) == 0 {
            out.push('\n');
        }
        out.push_str(&" ".repeat(rng.usize(..7)));
        out.push_str(line.trim_start());
        if rng.u8(..4) == 0 {
            let _ = write!(out, "  # after {n}");
        }
        out.push('\n');
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// `fmt` on generated programs, laid out and commented at random: it
    /// answers (so the tree and the comments survived, which `format`
    /// checks), and its answer is a fixed point. A file the generator cut
    /// short is reported as a syntax error, as `check` reports it.
    #[test]
    fn fmt_keeps_generated_programs(seed in any::<u64>()) {
        let text = messy(&program(seed).text, seed);
        let formatted = match igniter::fmt::format(&text) {
            Ok(formatted) => formatted,
            Err(igniter::fmt::FmtError::Syntax(_)) => {
                let file = igniter::source::FileId(0);
                prop_assert!(igniter::syntax::parse(file, &text).is_err(), "refused a valid file:\n{}", text);
                return Ok(());
            }
            Err(e) => panic!("{e}\n{text}"),
        };
        let again = igniter::fmt::format(&formatted).unwrap_or_else(|e| panic!("{e}\n{formatted}"));
        prop_assert_eq!(&again, &formatted, "not stable for\n{}", text);
        let comments = |t: &str| t.lines().filter(|l| l.contains("# note") || l.contains("# after")).count();
        prop_assert_eq!(comments(&formatted), comments(&text));
    }
}
