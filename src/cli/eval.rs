//! `ignite eval [PATH...]`: compile each `.ign` file under the paths, run
//! the `eval` blocks it declares over their datasets, print each score's
//! mean with its 95% interval (and the paired difference with a
//! `--baseline`), save every sample with `--save`.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use clap::ValueEnum;

use super::run::DEFAULT_CACHE_DIR;
use super::{GlobalArgs, WIDTH};
use crate::diagnostic::Severity;
use crate::effects::{Cache, EffectStore, Effects, Recording, RunHeader};
use crate::evals::compare::{Baseline, Comparison};
use crate::evals::report::{self, Outcome};
use crate::evals::{self, Options, Running};
use crate::llm::Llm;
use crate::runtime::Engine;

/// Run the `eval` blocks of `.ign` files: scores with intervals, baselines.
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
        let stop = Arc::new(Mutex::new(Stop::default()));
        super::signals::stop_on_signals(
            "; finished samples are in the cache: run the same command again to resume".to_owned(),
        );
        let baseline = baseline.map(Arc::new);
        super::signals::report_on_stop({
            let (stop, saving, baseline) = (Arc::clone(&stop), self.saving(), baseline.clone());
            move || stop_report(&stop, &saving, baseline.as_deref())
        });
        let llm = Llm::from_env();
        let mut broken = false;
        for file in files {
            if crate::shutdown::halted() {
                break;
            }
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
            if let Err(message) = self.run_file(&engine, &stores, baseline.as_deref(), &stop) {
                return super::usage(&message);
            }
        }
        let mut stop = crate::sync::lock(&stop);
        if stop.done.is_empty() && !broken {
            let what = match &self.filter {
                Some(filter) => format!("no eval name contains `{filter}`"),
                None => "no eval blocks found".to_owned(),
            };
            return super::usage(&what);
        }
        // A stop from now on finds this run's files whole (it waits for the lock).
        stop.finished = true;
        self.finish(&stores, &stop.done, broken)
    }

    /// Runs the selected evals of one program, each one added to `stop`
    /// as it finishes.
    fn run_file(
        &self,
        engine: &Engine,
        stores: &SampleStores,
        baseline: Option<&Baseline>,
        stop: &Mutex<Stop>,
    ) -> Result<(), String> {
        let bar_total = Mutex::new(None);
        let progress = |done: usize, total: usize| {
            let mut bar = crate::sync::lock(&bar_total);
            let bar =
                bar.get_or_insert_with(|| super::batch::progress(Some(total as u64), "samples"));
            if let Some(bar) = bar {
                bar.set_position(done as u64);
            }
        };
        let started = |running| {
            crate::sync::lock(stop).running = Some(running);
        };
        let make = |sample| stores.for_sample(sample);
        let options = Options {
            filter: self.filter.clone(),
            jobs: usize::from(self.jobs),
            repeat: self.repeat,
            details: self.saving().details(),
            stores: &make,
            progress: &progress,
            started: &started,
        };
        for eval in evals::selected(engine, &options) {
            if crate::shutdown::halted() {
                break;
            }
            *crate::sync::lock(&bar_total) = None;
            let run = evals::run(engine, eval, &options)
                .map_err(|e| format!("eval `{}`: {}", e.eval, e.message))?;
            if let Some(Some(bar)) = crate::sync::lock(&bar_total).take() {
                bar.finish_and_clear();
            }
            let comparison = baseline.map(|b| b.compare(&run)).transpose()?;
            let mut stop = crate::sync::lock(stop);
            stop.running = None;
            stop.done.push((run, comparison));
        }
        Ok(())
    }

    /// Saves and prints the outcomes; the exit code.
    fn finish(&self, stores: &SampleStores, outcomes: &[Outcome], broken: bool) -> ExitCode {
        if let Err(message) = stores.finish() {
            return super::usage(&message);
        }
        let partial = crate::shutdown::halted() || outcomes.iter().any(|(run, _)| run.stopped);
        if let Err(message) = self.saving().write(outcomes, partial) {
            return super::usage(&message);
        }
        let failed = broken
            || outcomes.iter().any(|(run, comparison)| {
                !run.passed() || comparison.as_ref().is_some_and(Comparison::worse)
            });
        let code = if failed { ExitCode::from(1) } else { ExitCode::SUCCESS };
        let text = match self.format {
            EvalFormat::Human => report::human(outcomes),
            EvalFormat::Json => {
                return super::write_stdout(code, |out| {
                    report::write_document(out, outcomes, partial)
                });
            }
            EvalFormat::Junit => report::junit(outcomes),
            EvalFormat::Markdown => report::markdown(outcomes),
        };
        super::emit(&text, code)
    }

    /// Where the samples' details go.
    fn saving(&self) -> Saving {
        Saving {
            save: self.save.clone(),
            report: self.report.clone(),
            stdout: self.format == EvalFormat::Json,
        }
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

/// What a stop (Ctrl-C) saves: the evals that finished and the one running.
#[derive(Default)]
struct Stop {
    /// The evals done, with their comparisons with the baseline.
    done: Vec<Outcome>,
    /// The eval whose samples are running.
    running: Option<Arc<Running>>,
    /// True once the run writes its own files: a stop leaves them be.
    finished: bool,
}

/// Where the samples' details go: `--save`, `--report`, `--format json`.
struct Saving {
    save: Option<PathBuf>,
    report: Option<PathBuf>,
    stdout: bool,
}

impl Saving {
    /// True when something shows every sample's details.
    fn details(&self) -> bool {
        self.save.is_some() || self.report.is_some() || self.stdout
    }

    /// Writes the `--save` document and the `--report` page of `outcomes`
    /// (`partial`: a stop cut them short).
    fn write(&self, outcomes: &[Outcome], partial: bool) -> Result<(), String> {
        if let Some(path) = &self.save {
            write_file(path, |out| report::write_document(out, outcomes, partial))?;
        }
        if let Some(path) = &self.report {
            write_file(path, |out| report::write_page(out, outcomes, partial))?;
        }
        Ok(())
    }
}

/// Writes the file at `path` with `write`, buffered.
fn write_file(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), String> {
    let written = File::create(path).and_then(|file| {
        let mut out = BufWriter::new(file);
        write(&mut out)?;
        out.flush()
    });
    written.map_err(|e| format!("cannot write `{}`: {e}", path.display()))
}

/// What a stop prints after its `stopped by` line, once it saved the
/// finished samples (the evals done and what finished of the one
/// running) to `--save` and `--report`, marked partial: their usage and
/// where they are.
fn stop_report(stop: &Mutex<Stop>, saving: &Saving, baseline: Option<&Baseline>) -> String {
    let mut stop = crate::sync::lock(stop);
    if stop.finished {
        return String::new();
    }
    let mut outcomes = std::mem::take(&mut stop.done);
    if let Some(running) = stop.running.take() {
        let run = running.partial();
        let comparison = baseline.and_then(|b| b.compare(&run).ok());
        outcomes.push((run, comparison));
    }
    let mut usage = crate::usage::UsageTotals::default();
    outcomes.iter().for_each(|(run, _)| usage.merge(&run.usage));
    let mut out = usage.render();
    let (finished, planned) =
        outcomes.iter().fold((0, 0), |(f, p), (run, _)| (f + run.samples.len(), p + run.planned));
    let files: Vec<String> = [&saving.save, &saving.report]
        .into_iter()
        .flatten()
        .map(|p| format!("`{}`", p.display()))
        .collect();
    if files.is_empty() {
        return out;
    }
    match saving.write(&outcomes, true) {
        Ok(()) => {
            out += &format!(
                "saved the {finished} finished samples (of {planned}) to {}, marked partial\n",
                files.join(" and ")
            );
        }
        Err(message) => out += &format!("error: {message}\n"),
    }
    out
}
