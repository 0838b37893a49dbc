//! The effect store of a test run: the one place a test meets the
//! runtime. It sits first among the run's stores (see [`crate::effects`]):
//!
//! - a tool call (of a tool node or of an agent) that a mock answers is a
//!   hit: the tool does not run; a call of a mocked tool that no mock fits
//!   is a hit with a tool error that shows the arguments;
//! - a model request goes on to the test's cassette (a [`Recording`]
//!   replayed, or recorded with `--record`); with no cassette it is
//!   refused, naming how to record one, so tests are offline.
//!
//! Tests may share a cassette. Replaying, each test reads it on its own;
//! recording, [`Cassettes`] holds one [`Recording`] per file, which every
//! test naming it appends to and which is finished once, after the last
//! test (the file is taken by one writer: a second `Recording` of it would
//! be refused, and would truncate what the first wrote).
//!
//! The run itself is an [`Engine::sibling`] of the suite's engine with
//! these stores: the same path through the scheduler as `ignite run`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::mocks::{Answer, Mocks};
use super::{Options, Suite};
use crate::effects::{
    Effect, EffectKind, EffectStore, Effects, Lookup, Outcome, Recording, RunHeader,
};
use crate::ir::Test;
use crate::runtime::Engine;

/// The mocks of one test run and its rule for model requests.
pub(crate) struct TestStore {
    mocks: Mocks,
    /// The mocks of agents (by agent name); their calls are not tool calls.
    agents: Mocks,
    /// Refuse model requests (no cassette): how to record one.
    offline: Option<String>,
}

impl TestStore {
    /// The stores of `test`: its mocks first, then its cassette (replayed,
    /// or recorded with `--record`).
    ///
    /// # Errors
    /// The cassette cannot be read or created.
    pub(crate) fn effects<'a>(
        suite: &'a Suite,
        test: &'a Test,
        (mocks, agents): (Mocks, Mocks),
        cassettes: &Cassettes<'a>,
        options: &Options,
    ) -> Result<(Arc<Self>, Effects), String> {
        let filter = format!(" --filter \"{}\"", test.name);
        let record_hint =
            |filter: &str| format!("ignite test {}{filter} --record", suite.path().display());
        let (offline, cassette): (_, Option<Arc<dyn EffectStore>>) = match &test.replay {
            None => (
                Some(format!(
                    "tests run offline and test `{}` has no cassette; add `replay \"cassettes/{}.json\"` to it and record it with `{}`",
                    test.name,
                    super::snapshot::slug(&test.name),
                    record_hint(&filter)
                )),
                None,
            ),
            Some(path) if options.record => {
                (None, Some(Arc::new(cassettes.open(suite, test, path)?)))
            }
            Some(path) => {
                let replay = Recording::replay(path).map_err(|e| {
                    // A shared cassette is recorded whole: by every test
                    // that names it.
                    let key = cassette_key(path);
                    let tests = &suite.program().tests;
                    let sharing = tests
                        .iter()
                        .filter(|t| t.replay.as_deref().map(cassette_key).as_ref() == Some(&key));
                    let filter = if sharing.count() > 1 { "" } else { &filter };
                    format!(
                        "cannot replay the cassette: {e}; record it with `{}`",
                        record_hint(filter)
                    )
                })?;
                (None, Some(Arc::new(replay)))
            }
        };
        let store = Arc::new(Self { mocks, agents, offline });
        let mut effects = Effects::live().with(Arc::clone(&store) as Arc<dyn EffectStore>);
        if let Some(cassette) = cassette {
            effects = effects.with(cassette);
        }
        Ok((store, effects))
    }

    /// An engine for a run through `effects`.
    pub(crate) fn engine(suite: &Suite, effects: Effects) -> Engine {
        suite.engine.sibling(effects)
    }

    /// The mocks and the calls they saw.
    pub(crate) fn mocks(&self) -> &Mocks {
        &self.mocks
    }
}

/// The cassettes a `--record` run writes, each opened by the first test
/// that runs with it and finished by [`Cassettes::finish`].
pub(crate) struct Cassettes<'a> {
    /// By [`cassette_key`]: the first selected test that names the file,
    /// whose contract and inputs are its header (whichever test runs
    /// first, the file reads the same).
    first: HashMap<PathBuf, (&'a Suite, &'a Test)>,
    /// By [`cassette_key`]: the files opened.
    open: Mutex<HashMap<PathBuf, Arc<Recording>>>,
}

impl<'a> Cassettes<'a> {
    /// The cassettes of `selected`, in selection order.
    pub(crate) fn new(selected: &[(&'a Suite, &'a Test)]) -> Self {
        let mut first = HashMap::new();
        for &(suite, test) in selected {
            if let Some(path) = &test.replay {
                first.entry(cassette_key(path)).or_insert((suite, test));
            }
        }
        Self { first, open: Mutex::new(HashMap::new()) }
    }

    /// The cassette `path` of `test`, created (with its folder) on first use.
    fn open(&self, suite: &'a Suite, test: &'a Test, path: &Path) -> Result<Shared, String> {
        let key = cassette_key(path);
        let mut open = crate::sync::lock(&self.open);
        if let Some(recording) = open.get(&key) {
            return Ok(Shared(Arc::clone(recording)));
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                format!("cannot create the cassette folder `{}`: {e}", dir.display())
            })?;
        }
        let (suite, test) = self.first.get(&key).copied().unwrap_or((suite, test));
        let header = RunHeader {
            program: None,
            contract: Some(suite.program()[test.contract].name.clone()),
            inputs: super::inputs(suite, test).unwrap_or_default(),
        };
        let recording = Arc::new(Recording::record(path, header)?);
        open.insert(key, Arc::clone(&recording));
        Ok(Shared(recording))
    }

    /// Finishes every cassette opened (sorts it). Returns the error of a
    /// test's cassette that could not be finished.
    pub(crate) fn finish(self) -> impl Fn(&Test) -> Option<String> {
        let open = self.open.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        let failed: HashMap<PathBuf, String> = open
            .into_iter()
            .filter_map(|(key, recording)| recording.finish().err().map(|why| (key, why)))
            .collect();
        move |test| test.replay.as_deref().and_then(|p| failed.get(&cassette_key(p)).cloned())
    }
}

/// One key for every spelling of a cassette's path: absolute, without `.`
/// and `..` (`a/../b/x.json` is `b/x.json`).
fn cassette_key(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut key = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                key.pop();
            }
            other => key.push(other),
        }
    }
    key
}

/// A cassette that several tests record into: each test's run finishes
/// nothing, [`Cassettes::finish`] finishes it once they all ran.
struct Shared(Arc<Recording>);

impl EffectStore for Shared {
    fn lookup(&self, effect: &Effect<'_>) -> Lookup {
        self.0.lookup(effect)
    }

    fn record(&self, effect: &Effect<'_>, outcome: &Outcome) -> Result<(), String> {
        self.0.record(effect, outcome)
    }

    fn label(&self) -> &'static str {
        self.0.label()
    }

    fn offline(&self) -> bool {
        self.0.offline()
    }
}

impl EffectStore for TestStore {
    fn label(&self) -> &'static str {
        "mock"
    }

    /// Mocks answer `returns` tools too.
    fn answers_pure(&self) -> bool {
        true
    }

    /// Mocks stand in for the tools: a call is decided before they answer.
    fn stands_in(&self) -> bool {
        true
    }

    fn lookup(&self, effect: &Effect<'_>) -> Lookup {
        match effect.kind {
            EffectKind::Tool => {
                let node = match effect.key.item {
                    Some(item) => format!("{}[{item}]", effect.key.node),
                    None => effect.key.node.clone(),
                };
                let place = (effect.key.node.clone(), effect.key.item, effect.key.seq);
                match self.mocks.answer(&node, place, effect.name, effect.request) {
                    Answer::Mocked(Ok(value)) => Lookup::Hit(Outcome::Value(value)),
                    Answer::Mocked(Err(message)) | Answer::Unmatched(message) => {
                        Lookup::Hit(Outcome::Failed(Value::String(message)))
                    }
                    Answer::Unmocked => Lookup::Miss,
                }
            }
            EffectKind::Model => match &self.offline {
                Some(why) => Lookup::Refuse(why.clone()),
                None => Lookup::Miss,
            },
            EffectKind::Agent => {
                let place = (effect.key.node.clone(), effect.key.item, effect.key.seq);
                match self.agents.answer(&effect.key.node, place, effect.name, effect.request) {
                    Answer::Mocked(Ok(value)) => Lookup::Hit(Outcome::Value(value)),
                    Answer::Mocked(Err(message)) | Answer::Unmatched(message) => {
                        Lookup::Hit(Outcome::Failed(Value::String(message)))
                    }
                    Answer::Unmocked => Lookup::Miss,
                }
            }
        }
    }

    fn answers_agents(&self) -> bool {
        self.agents.any()
    }

    fn record(&self, _: &Effect<'_>, _: &Outcome) -> Result<(), String> {
        Ok(())
    }

    fn offline(&self) -> bool {
        self.offline.is_some()
    }
}
