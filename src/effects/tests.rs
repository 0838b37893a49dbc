//! Values a store answers get the check live ones get: a cached, a
//! journaled and a replayed answer that does not fit its `result` fail the
//! run exactly as the live answer does (same message, code and rendering).
//!
//! Each store is filled by a real run whose live answer fits, through a
//! wrapper that hands the store an answer that does not fit under the very
//! key and definition the seam used; a miss would then run the live tool
//! and succeed, so the tests cannot pass by accident.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Cache, Effect, EffectStore, Effects, Lookup, Outcome, Recording, RunHeader};
use crate::runtime::{Engine, RunOptions};

/// Passes lookups and records on to a store, recording `answer` instead
/// of what the live work gave.
struct Seeding<S> {
    store: S,
    answer: Value,
}

impl<S: EffectStore> EffectStore for Seeding<S> {
    fn lookup(&self, effect: &Effect<'_>) -> Lookup {
        self.store.lookup(effect)
    }

    fn record(&self, effect: &Effect<'_>, outcome: &Outcome) -> Result<(), String> {
        match outcome {
            Outcome::Value(_) => self.store.record(effect, &Outcome::Value(self.answer.clone())),
            Outcome::Failed(_) => self.store.record(effect, outcome),
        }
    }

    fn finish(&self) -> Result<(), String> {
        self.store.finish()
    }
}

const TOOL: &str = r#"
type Quote {
  sku: string
  price: float
}

tool Price {
  description "Quote a price"
  param sku: string
  result Quote
  cache
  returns {sku: sku, price: PRICE}
}

contract Quoting {
  input sku: string
  compute quote = Price(sku: sku)
  output quote
}
"#;

const AGENT: &str = r#"
type Review {
  stars: integer
}

agent Reader {
  provider script "reader.json"
  model "scripted"
  input text: string
  result Review
  result_retries 0
  cache
}

contract Reviews {
  input text: string
  compute review = Reader(text: text)
  output review
}
"#;

/// Compiles `text` as `dir/program.ign` (always the same file, so that
/// errors render alike) and runs it through `effects`: its outputs, or its
/// error as rendered with its code.
fn run(dir: &Path, text: &str, effects: Effects, inputs: &Value) -> Result<Value, String> {
    let file = dir.join("program.ign");
    std::fs::write(&file, text).expect("written");
    let program = crate::compile(&file).program.expect("compiles");
    let engine = Engine::new(program).with_effects(effects.clone());
    let inputs: Map<String, Value> = inputs.as_object().cloned().unwrap_or_default();
    let contract = engine.contract(None).expect("one contract");
    let result = engine.run(contract, &inputs, &RunOptions::default());
    effects.finish().expect("finished");
    match result {
        Ok(output) => Ok(Value::Object(output.outputs)),
        Err(error) => {
            let rendered = error
                .diagnostics()
                .map(|d| d.render(&engine.program().sources, false, 80))
                .unwrap_or_default();
            Err(format!("{error}\n{:?}\n{rendered}", error.code()))
        }
    }
}

fn seeding(store: impl EffectStore + 'static, answer: Value) -> Effects {
    Effects::live().with(Arc::new(Seeding { store, answer }))
}

#[test]
fn stored_tool_answers_that_do_not_fit_fail_like_live_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dir = dir.path();
    let inputs = json!({"sku": "A1"});
    let bad = json!({"sku": "A1", "price": "cheap"});
    let good = TOOL.replace("PRICE", "1.5");
    let live = run(dir, &TOOL.replace("PRICE", r#""cheap""#), Effects::live(), &inputs)
        .expect_err("the live answer does not fit");
    assert!(live.contains("`result.price`: expected float, got string \"cheap\""), "{live}");
    assert!(live.contains("ignite::tools::bad_result"), "{live}");

    // The cache.
    let cache = dir.join("cache");
    let seeded = run(dir, &good, seeding(Cache::new(cache.clone()), bad.clone()), &inputs);
    assert_eq!(seeded, Ok(json!({"quote": {"sku": "A1", "price": 1.5}})));
    let cached = Effects::live().with(Arc::new(Cache::new(cache)));
    assert_eq!(run(dir, &good, cached, &inputs), Err(live.clone()), "cached");

    // A journal, resumed.
    let runs = dir.join("runs");
    let (journal, id) = Recording::journal(&runs, RunHeader::default()).expect("journal");
    run(dir, &good, seeding(journal, bad.clone()), &inputs).expect("the live answer fits");
    let resumed = Effects::live().with(Arc::new(Recording::resume(&runs, &id).expect("resumed")));
    assert_eq!(run(dir, &good, resumed, &inputs), Err(live.clone()), "journaled");

    // A recording, replayed.
    let file = dir.join("run.jsonl");
    let recording = Recording::record(&file, RunHeader::default()).expect("recording");
    run(dir, &good, seeding(recording, bad), &inputs).expect("the live answer fits");
    let replayed = Effects::live().with(Arc::new(Recording::replay(&file).expect("replay")));
    assert_eq!(run(dir, &good, replayed, &inputs), Err(live), "replayed");
}

#[test]
fn a_cached_agent_answer_that_does_not_fit_fails_like_a_live_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dir = dir.path();
    let inputs = json!({"text": "great"});
    let script = |answer: &str| {
        let reply = json!([{ "text": answer }]);
        std::fs::write(dir.join("reader.json"), reply.to_string()).expect("written");
    };
    script(r#"{"stars":5.5}"#);
    let live = run(dir, AGENT, Effects::live(), &inputs).expect_err("5.5 is no integer");
    assert!(live.contains("`result.stars`: expected integer, got float 5.5"), "{live}");
    assert!(live.contains("ignite::llm::bad_result"), "{live}");

    // `5.0` is an integer: accepted from an agent as it is from a tool.
    script(r#"{"stars":5.0}"#);
    assert_eq!(run(dir, AGENT, Effects::live(), &inputs), Ok(json!({"review": {"stars": 5}})));

    let cache = dir.join("cache");
    let seeded = seeding(Cache::new(cache.clone()), json!({"stars": 5.5}));
    assert_eq!(run(dir, AGENT, seeded, &inputs), Ok(json!({"review": {"stars": 5}})));
    let cached = Effects::live().with(Arc::new(Cache::new(cache)));
    assert_eq!(run(dir, AGENT, cached, &inputs), Err(live), "cached");
}

#[test]
fn pure_tools_are_no_effects_unless_cached() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dir = dir.path();
    let inputs = json!({"sku": "A1"});
    let lines = |file: &Path| std::fs::read_to_string(file).expect("read").lines().count();
    let file = dir.join("pure.jsonl");
    let recording = Recording::record(&file, RunHeader::default()).expect("recording");
    let effects = Effects::live().with(Arc::new(recording));
    let pure = TOOL.replace("PRICE", "1.5").replace("  cache\n", "");
    assert_eq!(
        run(dir, &pure, effects, &inputs),
        Ok(json!({"quote": {"sku": "A1", "price": 1.5}}))
    );
    assert_eq!(lines(&file), 1, "the header only: the pure call is not recorded");
    let file = dir.join("cached.jsonl");
    let recording = Recording::record(&file, RunHeader::default()).expect("recording");
    let effects = Effects::live().with(Arc::new(recording));
    run(dir, &TOOL.replace("PRICE", "1.5"), effects, &inputs).expect("runs");
    assert_eq!(lines(&file), 2, "a cached pure tool's call is an effect");
}
