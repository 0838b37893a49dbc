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
//! The run itself is an [`Engine::sibling`] of the suite's engine with
//! these stores: the same path through the scheduler as `ignite run`.

use std::sync::Arc;

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
    /// Refuse model requests (no cassette): how to record one.
    offline: Option<String>,
}

impl TestStore {
    /// The stores of `test`: its mocks first, then its cassette (replayed,
    /// or recorded with `--record`).
    ///
    /// # Errors
    /// The cassette cannot be read or created.
    pub(crate) fn effects(
        suite: &Suite,
        test: &Test,
        mocks: Mocks,
        inputs: &serde_json::Map<String, Value>,
        options: &Options,
    ) -> Result<(Arc<Self>, Effects), String> {
        let record_hint =
            format!("ignite test {} --filter \"{}\" --record", suite.path().display(), test.name);
        let (offline, cassette): (_, Option<Arc<dyn EffectStore>>) = match &test.replay {
            None => (
                Some(format!(
                    "tests run offline and test `{}` has no cassette; add `replay \"cassettes/{}.json\"` to it and record it with `{record_hint}`",
                    test.name,
                    super::snapshot::slug(&test.name)
                )),
                None,
            ),
            Some(path) if options.record => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        format!("cannot create the cassette folder `{}`: {e}", dir.display())
                    })?;
                }
                let header = RunHeader {
                    contract: Some(suite.program()[test.contract].name.clone()),
                    inputs: inputs.clone(),
                };
                (None, Some(Arc::new(Recording::record(path, header)?)))
            }
            Some(path) => {
                let replay = Recording::replay(path).map_err(|e| {
                    format!("cannot replay the cassette: {e}; record it with `{record_hint}`")
                })?;
                (None, Some(Arc::new(replay)))
            }
        };
        let store = Arc::new(Self { mocks, offline });
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

impl EffectStore for TestStore {
    fn label(&self) -> &'static str {
        "mock"
    }

    /// Mocks answer `returns` tools too.
    fn answers_pure(&self) -> bool {
        true
    }

    fn lookup(&self, effect: &Effect<'_>) -> Lookup {
        match effect.kind {
            EffectKind::Tool => {
                let node = match effect.key.item {
                    Some(item) => format!("{}[{item}]", effect.key.node),
                    None => effect.key.node.clone(),
                };
                match self.mocks.answer(&node, effect.name, effect.request) {
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
            EffectKind::Agent => Lookup::Miss,
        }
    }

    fn record(&self, _: &Effect<'_>, _: &Outcome) -> Result<(), String> {
        Ok(())
    }

    fn offline(&self) -> bool {
        self.offline.is_some()
    }
}
