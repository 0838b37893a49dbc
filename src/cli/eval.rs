//! `ignite eval [PATH...]`: compile each `.ign` file under the paths, run
//! the `eval` blocks it declares over their datasets, print each score's
//! mean with its 95% interval (and the paired difference with a
//! `--baseline`), save every sample with `--save`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::ValueEnum;

use super::run::DEFAULT_CACHE_DIR;
use super::{GlobalArgs, WIDTH};
use crate::diagnostic::Severity;
use crate::effects::{Cache, EffectStore, Effects, Recording, RunHeader};
use crate::evals::compare::{Baseline, Comparison};
use crate::evals::report::{self, Outcome};
use crate::evals::{self, Options};
use crate::llm::Llm;
use crate::runtime::Engine;

/// Arguments of `ignite eval`.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// Files or folders whose evals to run (folders: every `*.ign` inside).
    #[arg(value_name = "PATH", default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Only evals whose name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Samples run at once (default 8).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: u16,
    /// Samples of each row, instead of each eval's `repeat`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,
    /// Write every sample (inputs, outputs, scores, usage, latency) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Compare with an earlier `--save`: paired differences, the samples that got worse.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Also write a self-contained HTML page of the results to FILE.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// How to report (on stdout).
    #[arg(long, value_enum, default_value_t = EvalFormat::Human)]
    pub format: EvalFormat,
    /// Save every model exchange and tool call to FILE, as each completes.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer model requests and tool calls from a recording made with `--record`, offline.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Where samples' results are kept (each sample has its own entries).
    #[arg(long, value_name = "DIR", default_value = DEFAULT_CACHE_DIR)]
    pub cache_dir: PathBuf,
    /// Take fresh samples: neither read nor write the cache.
    #[arg(long)]
    pub no_cache: bool,
}

/// How eval results are printed (on stdout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalFormat {
    /// Per eval and score: the mean, its interval, counts, usage, latency.
    Human,
    /// The `--save` document.
    Json,
    /// JUnit XML: a case per `require` and per score against the baseline.
    Junit,
    /// A Markdown table per eval, for a pull request.
    Markdown,
}

impl EvalArgs {
    /// Runs the evals and returns the exit code: 0 every `require` holds
    /// and no score is worse than the baseline, 1 one fails or is worse
    /// (or a file has errors), 2 usage or I/O errors (no eval found, a
    /// dataset with rows that cannot run, a baseline of another eval).
    #[must_use]
    pub fn run(self, global: &GlobalArgs) -> ExitCode {
        let files = match super::check::collect(&self.paths) {
            Ok(files) => files,
            Err(message) => return super::usage(&message),
        };
        let baseline = match self.baseline.as_deref().map(Baseline::read).transpose() {
            Ok(baseline) => baseline,
            Err(message) => return super::usage(&message),
        };
        let stores = match self.stores() {
            Ok(stores) => stores,
            Err(message) => return super::usage(&message),
        };
        super::signals::stop_on_signals(
            "; finished samples are in the cache: run the same command again to resume".to_owned(),
        );
        let llm = Llm::from_env();
        let mut outcomes: Vec<Outcome> = Vec::new();
        let mut broken = false;
        for file in files {
            let compilation = crate::compile_with(&file, global.load_options());
            let diagnostics = &compilation.diagnostics;
            if !diagnostics.is_empty() {
                eprint!(
                    "{}",
                    diagnostics.render(&compilation.sources, global.color_stderr(), WIDTH)
                );
            }
            let Some(program) = compilation.program else {
                let errors = diagnostics.count(Severity::Error);
                eprintln!(
                    "error: `{}` has {errors} error(s); its evals did not run",
                    file.display()
                );
                broken = true;
                continue;
            };
            let engine = Engine::new(program).with_llm(llm.clone());
            match self.run_file(&engine, &stores, baseline.as_ref()) {
                Ok(done) => outcomes.extend(done),
                Err(message) => return super::usage(&message),
            }
        }
        if outcomes.is_empty() && !broken {
            let what = match &self.filter {
                Some(filter) => format!("no eval name contains `{filter}`"),
                None => "no eval blocks found".to_owned(),
            };
            return super::usage(&what);
        }
        self.finish(&stores, &outcomes, broken)
    }

    /// Runs the selected evals of one program.
    fn run_file(
        &self,
        engine: &Engine,
        stores: &SampleStores,
        baseline: Option<&Baseline>,
    ) -> Result<Vec<Outcome>, String> {
        let bar_total = std::sync::Mutex::new(None);
        let progress = |done: usize, total: usize| {
            let mut bar = bar_total.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let bar =
                bar.get_or_insert_with(|| super::batch::progress(Some(total as u64), "samples"));
            if let Some(bar) = bar {
                bar.set_position(done as u64);
            }
        };
        let make = |sample| stores.for_sample(sample);
        let options = Options {
            filter: self.filter.clone(),
            jobs: usize::from(self.jobs),
            repeat: self.repeat,
            stores: &make,
            progress: &progress,
        };
        let mut outcomes = Vec::new();
        for eval in evals::selected(engine, &options) {
            *bar_total.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
            let run = evals::run(engine, eval, &options)
                .map_err(|e| format!("eval `{}`: {}", e.eval, e.message))?;
            if let Some(Some(bar)) =
                bar_total.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
            {
                bar.finish_and_clear();
            }
            let comparison = baseline.map(|b| b.compare(&run)).transpose()?;
            outcomes.push((run, comparison));
        }
        Ok(outcomes)
    }

    /// Saves and prints the outcomes; the exit code.
    fn finish(&self, stores: &SampleStores, outcomes: &[Outcome], broken: bool) -> ExitCode {
        if let Err(message) = stores.finish() {
            return super::usage(&message);
        }
        let document = report::document(outcomes);
        if let Some(path) = &self.save {
            let text = serde_json::to_string_pretty(&document).unwrap_or_default() + "\n";
            if let Err(e) = std::fs::write(path, text) {
                return super::usage(&format!("cannot write `{}`: {e}", path.display()));
            }
        }
        if let Some(path) = &self.report {
            if let Err(e) = std::fs::write(path, crate::report::eval_page(&document)) {
                return super::usage(&format!("cannot write `{}`: {e}", path.display()));
            }
        }
        let text = match self.format {
            EvalFormat::Human => report::human(outcomes),
            EvalFormat::Json => serde_json::to_string_pretty(&document).unwrap_or_default() + "\n",
            EvalFormat::Junit => report::junit(outcomes),
            EvalFormat::Markdown => report::markdown(outcomes),
        };
        let failed = broken
            || outcomes.iter().any(|(run, comparison)| {
                !run.passed() || comparison.as_ref().is_some_and(Comparison::worse)
            });
        super::emit(&text, if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
    }

    /// The stores every sample shares (a recording or replay) and where
    /// each sample's cache is.
    fn stores(&self) -> Result<SampleStores, String> {
        let mut shared: Vec<Arc<dyn EffectStore>> = Vec::new();
        if let Some(path) = &self.replay {
            shared.push(Arc::new(Recording::replay(path)?));
        }
        if let Some(path) = &self.record {
            let header = RunHeader::default();
            shared.push(Arc::new(Recording::record(path, header)?));
        }
        let cache = (!(self.no_cache || self.record.is_some() || self.replay.is_some()))
            .then(|| self.cache_dir.clone());
        Ok(SampleStores { shared, cache })
    }
}

/// The effect stores of the samples.
struct SampleStores {
    /// Stores every sample's run goes through (a recording, a replay).
    shared: Vec<Arc<dyn EffectStore>>,
    /// The cache folder, unless off.
    cache: Option<PathBuf>,
}

impl SampleStores {
    /// The stores of sample `sample`'s run.
    fn for_sample(&self, sample: u32) -> Effects {
        let mut effects = Effects::live();
        for store in &self.shared {
            effects = effects.with(Arc::clone(store));
        }
        if let Some(dir) = &self.cache {
            effects = effects.with(Arc::new(Cache::sampled(dir.clone(), sample)));
        }
        effects
    }

    /// Ends the shared stores (a recording sorts its file).
    fn finish(&self) -> Result<(), String> {
        self.shared.iter().try_for_each(|store| store.finish())
    }
}
