//! `ignite run FILE`: compile, bind inputs, run one contract, print its
//! outputs as JSON on stdout. Diagnostics, errors and the trace go to
//! stderr.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::media::AtFile;
use super::{GlobalArgs, WIDTH, usage};
use crate::effects::{Cache, Effects, JOURNAL_DIR, ProgramMark, Recording, RunHeader};
use crate::eval::{Fields, Val};
use crate::runtime::{Engine, RunError, RunOptions};
use crate::trace::{Timeline, Trace};

/// Run a contract and print its outputs as JSON.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The `.ign` file to run.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The contract to run; needed when the program declares several.
    #[arg(long, value_name = "NAME")]
    pub contract: Option<String>,
    /// An input as `NAME=VALUE`: the text itself for a `string` or enum input, else
    /// JSON when it parses, else the text.
    #[arg(long = "input", value_name = "NAME=VALUE")]
    pub inputs: Vec<String>,
    /// A JSON object of inputs, from a file or `-` for stdin; `--input` wins.
    #[arg(long = "inputs", value_name = "FILE|-")]
    pub inputs_file: Option<String>,
    /// Compute only these outputs (and what they need).
    #[arg(long = "output", value_name = "NAME")]
    pub outputs: Vec<String>,
    /// How many nodes may run at once; overrides the contract's runner.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=crate::ir::MAX_POOL_SIZE))]
    pub jobs: Option<u16>,
    /// Print a per-node timeline on stderr.
    #[arg(long)]
    pub trace: bool,
    /// Save every model exchange and tool call of the run to FILE, as each completes.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer model requests and tool calls from a recording made with `--record`, offline.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["journal", "resume"])]
    pub replay: Option<PathBuf>,
    /// Append every completed effect to `.ignite/runs/RUN_ID.jsonl` and print the run ID.
    #[arg(long, conflicts_with = "resume")]
    pub journal: bool,
    /// Resume the run RUN_ID: reuse its journaled effects and run the rest.
    #[arg(long, value_name = "RUN_ID")]
    pub resume: Option<String>,
    /// Run once per line of FILE (`-`: stdin), each a JSON object of inputs;
    /// `--jobs` rows at once (default 8).
    #[arg(
        long,
        value_name = "FILE|-",
        conflicts_with_all = ["inputs", "inputs_file", "journal", "resume"]
    )]
    pub batch: Option<String>,
    /// Where the results of tools and agents declared `cache` are kept.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_CACHE_DIR)]
    pub cache_dir: PathBuf,
    /// Neither read nor write the cache (it is also off with `--record` and `--replay`).
    #[arg(long)]
    pub no_cache: bool,
    /// With `--batch`: fields of a row that the contract does not take are
    /// not an error but copied to its result line under `row_data`.
    #[arg(long, requires = "batch")]
    pub keep_fields: bool,
    /// With `--batch`: append results here (one JSON line per row) and skip
    /// the rows already here; stdout when absent.
    #[arg(long, value_name = "FILE", requires = "batch")]
    pub out: Option<PathBuf>,
    /// The most one tool call or provider reply may bring in (`exec` stdout,
    /// `http` bodies, `fs.read` files, provider replies): bytes, or a number
    /// with `K`, `M` or `G` (powers of 1024).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "8M")]
    pub max_bytes: usize,
    /// The most the run's model calls may spend, as `usd=2,model_calls=100,tokens=50000`
    /// (any of the three): tightens the contract's `budget`; with `--batch`,
    /// for all rows together.
    #[arg(long, value_name = "LIMITS", value_parser = parse_budget)]
    pub budget: Option<crate::ir::Budget>,
}

/// `usd=2,model_calls=100,tokens=50000`: any of the three, each once.
pub(super) fn parse_budget(text: &str) -> Result<crate::ir::Budget, String> {
    let mut budget = crate::ir::Budget::default();
    for part in text.split(',') {
        let Some((name, value)) = part.split_once('=') else {
            return Err(format!("`{part}` is not `NAME=VALUE`: write `usd=2,model_calls=100`"));
        };
        let (name, value) = (name.trim(), value.trim());
        let twice = || format!("`{name}` is given twice");
        let whole = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("`{name}` must be a whole number, not `{value}`"))
        };
        match name {
            "usd" => {
                let usd = value.parse::<f64>().ok().filter(|u| u.is_finite() && *u >= 0.0);
                let usd =
                    usd.ok_or_else(|| format!("`usd` must be a number of USD, not `{value}`"))?;
                if budget.usd.replace(usd).is_some() {
                    return Err(twice());
                }
            }
            "model_calls" => {
                if budget.model_calls.replace(whole()?).is_some() {
                    return Err(twice());
                }
            }
            "tokens" => {
                if budget.tokens.replace(whole()?).is_some() {
                    return Err(twice());
                }
            }
            _ => {
                return Err(format!(
                    "unknown budget `{name}`: the limits are `usd`, `model_calls` and `tokens`"
                ));
            }
        }
    }
    Ok(budget)
}

/// `1048576`, `512K`, `8M`, `1G`.
pub(super) fn parse_size(text: &str) -> Result<usize, String> {
    let (digits, unit) = match text.trim().char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&text.trim()[..i], c.to_ascii_uppercase()),
        _ => (text.trim(), 'B'),
    };
    let n: usize = digits.parse().map_err(|_| format!("`{text}` is not a size such as 8M"))?;
    let shift = match unit {
        'B' => 0,
        'K' => 10,
        'M' => 20,
        'G' => 30,
        other => return Err(format!("unknown unit `{other}`: use K, M or G")),
    };
    n.checked_mul(1 << shift)
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("`{text}` is not a usable size (more than 0 bytes)"))
}

use super::approve::{PAUSED, Prompt};

/// A run's effects, its cache when it is on, its journal's run ID, and
/// the files that keep its timeline (the recording's, the journal's).
type RunEffects = (Effects, Option<Arc<Cache>>, Option<String>, Vec<Arc<dyn Timeline>>);

/// The cache folder without `--cache-dir`, from the current folder.
pub(super) const DEFAULT_CACHE_DIR: &str = ".ignite/cache";

/// Rows run at once by `--batch` without `--jobs`.
const DEFAULT_BATCH_JOBS: usize = 8;

impl RunArgs {
    /// Runs the contract and returns the exit code: 0 ok, 1 the program
    /// has errors, 2 usage or I/O error (bad inputs included), 3 the run
    /// failed; 130 / 143 when stopped by SIGINT / SIGTERM.
    #[must_use]
    pub fn run(self, global: &GlobalArgs) -> ExitCode {
        let (mut given, pairs) = match self.read_inputs() {
            Ok(read) => read,
            Err(message) => return usage(&message),
        };
        let mut contract = self.contract.clone();
        let resumed = match &self.resume {
            Some(id) => match Recording::resume(Path::new(JOURNAL_DIR), id) {
                Ok(journal) => {
                    let header = journal.header().clone();
                    contract = contract.or(header.contract);
                    for (name, value) in header.inputs {
                        given.entry(name).or_insert_with(|| Val::from(value));
                    }
                    Some(journal)
                }
                Err(message) => return usage(&message),
            },
            None => None,
        };
        let program = match super::compile(&self.file, global) {
            Ok(program) => program,
            Err(code) => return code,
        };
        let engine = super::live_engine(program, self.max_bytes);
        let options = RunOptions {
            outputs: self.outputs.clone(),
            jobs: if self.batch.is_some() { None } else { self.jobs.map(usize::from) },
            trace: self.trace,
            budget: self.budget.map(|b| Arc::new(crate::budget::Meter::new(b, "`--budget`"))),
            ..RunOptions::default()
        };
        let chosen = engine.contract(contract.as_deref());
        if let Ok(chosen) = chosen {
            // `--input` values are read by the declared type of the input they name.
            let params = &engine.program()[chosen];
            let base = self.inputs_folder();
            let reach = super::media::Reach::new(&base, self.max_bytes);
            if let Err(message) =
                reach.load(params.inputs().map(|(_, p)| (&*p.name, &p.ty)), &mut given)
            {
                return usage(&message);
            }
            // `{"path": ...}` in an `--input` JSON value: from the current folder.
            let here = super::media::Reach::new(Path::new("."), self.max_bytes);
            // The array inputs `--input NAME=@FILE` has started: the next adds to it.
            let mut started = std::collections::HashSet::new();
            for (name, raw) in pairs {
                let ty = params.inputs().find(|(_, p)| p.name == name).map(|(_, p)| &p.ty);
                let value = match super::media::at_file(&name, ty, &raw, self.max_bytes) {
                    Some(Ok(AtFile::Value(value))) => value,
                    Some(Ok(AtFile::Item(item))) => {
                        let mut items = match given.shift_remove(&name) {
                            Some(Val::Array(items)) if started.contains(&name) => {
                                Arc::unwrap_or_clone(items)
                            }
                            _ => Vec::new(),
                        };
                        items.push(item);
                        started.insert(name.clone());
                        Val::array(items)
                    }
                    Some(Err(message)) => return usage(&message),
                    None => {
                        let mut value = input_value(ty, raw);
                        if let Some(ty) = ty
                            && let Err(message) = here.load_value(ty, &mut value, &name)
                        {
                            return usage(&message);
                        }
                        value
                    }
                };
                given.insert(name, value);
            }
        }
        // The inputs as JSON only for a recording or a journal that keeps them.
        let header = || RunHeader {
            program: Some(ProgramMark::of(&self.file, engine.program())),
            contract,
            inputs: given.iter().map(|(name, value)| (name.clone(), value.to_json())).collect(),
        };
        let (engine, cache, run_id, timelines) = match self.effects(header, resumed) {
            Ok((effects, cache, run_id, timelines)) => {
                (engine.with_effects(effects), cache, run_id, timelines)
            }
            Err(message) => return usage(&message),
        };
        let trace = Arc::new(Trace::new(self.trace).onto(timelines));
        if let Some(rows) = &self.batch {
            let chosen = match chosen {
                Ok(chosen) => chosen,
                Err(error) => return report(Err(error), &engine, global.color_stderr()),
            };
            let jobs = self.jobs.map_or(DEFAULT_BATCH_JOBS, usize::from);
            let batch = super::batch::Batch {
                rows,
                out: self.out.as_deref(),
                jobs,
                keep_fields: self.keep_fields,
                cache: cache.as_ref(),
                max_bytes: self.max_bytes,
            };
            let code = super::batch::run(&engine, chosen, &batch, &options);
            return match engine.effects().finish() {
                Ok(()) => code,
                Err(message) => usage(&message),
            };
        }
        let stopped = (Arc::clone(&trace), cache.clone());
        super::signals::report_on_stop(move || {
            stopped.0.usage().render() + &super::cache_summary(stopped.1.as_ref())
        });
        // One run, then the process ends: its calls run on its thread while it
        // waits (a batch keeps the I/O threads: BENCHMARKS.md, "Bursts").
        let engine = engine.with_calls_on_run_thread();
        let result = chosen.and_then(|chosen| engine.run_values(chosen, given, &options, &trace));
        let saved = engine.effects().finish();
        // The timeline (which ends with the usage and the cache hits) or
        // the usage and the cache hits alone, whether the run succeeded or not.
        if self.trace {
            eprint!("{}", trace.render());
        } else {
            eprint!("{}{}", trace.usage().render(), super::cache_summary(cache.as_ref()));
        }
        let code = match (result, run_id) {
            (Err(RunError::Paused { calls }), Some(run)) => {
                eprint!("{}", super::approve::paused(&run, &self.file, &calls));
                ExitCode::from(PAUSED)
            }
            (result, _) => report(result, &engine, global.color_stderr()),
        };
        if let Err(message) = saved {
            return usage(&message);
        }
        code
    }

    /// The stores of `--record`, `--replay`, `--journal` and `--resume`,
    /// the cache when it is on, and who decides approvals (the journal, else
    /// the person at the terminal); installs the signal handler that names
    /// the journal. Also the journal's run ID.
    fn effects(
        &self,
        header: impl FnOnce() -> RunHeader,
        resumed: Option<Recording>,
    ) -> Result<RunEffects, String> {
        let header = std::cell::LazyCell::new(header);
        let mut effects = Effects::live();
        let mut timelines: Vec<Arc<dyn Timeline>> = Vec::new();
        let mut stop_note = String::new();
        if let Some(path) = &self.replay {
            effects = effects.with(Arc::new(Recording::replay(path)?));
        }
        if let Some(path) = &self.record {
            let recording = Arc::new(Recording::record(path, RunHeader::clone(&header))?);
            timelines.push(Arc::clone(&recording) as _);
            effects = effects.with(recording);
        }
        let journal = match resumed {
            Some(journal) => self.resume.clone().map(|id| (journal, id)),
            None if self.journal => {
                Some(Recording::journal(Path::new(JOURNAL_DIR), RunHeader::clone(&header))?)
            }
            None => None,
        };
        let run_id = journal.as_ref().map(|(_, id)| id.clone());
        if let Some((journal, id)) = journal {
            eprintln!("run ID {id} (journal `{}`)", journal.path().display());
            stop_note = format!(
                "; finished effects are in `{}`: resume with `ignite run {} --resume {id}`",
                journal.path().display(),
                self.file.display()
            );
            let journal = Arc::new(journal);
            timelines.push(Arc::clone(&journal) as _);
            effects = effects.with(Arc::clone(&journal) as _).with_approver(journal);
        } else if let Some(prompt) = Prompt::on_terminal() {
            effects = effects.with_approver(Arc::new(prompt));
        }
        let mut cache = None;
        if !(self.no_cache || self.record.is_some() || self.replay.is_some()) {
            let store = Arc::new(Cache::new(self.cache_dir.clone()));
            effects = effects.with(Arc::clone(&store) as _);
            cache = Some(store);
        }
        if let Some(out) = &self.out {
            stop_note = format!(
                "; `{}` holds whole lines: run the same command again to resume",
                out.display()
            );
        }
        super::signals::stop_on_signals(stop_note);
        Ok((effects, cache, run_id, timelines))
    }

    /// The folder `{"path": ...}` inputs are read from: the `--inputs`
    /// file's, else (stdin, no file) the current one.
    fn inputs_folder(&self) -> PathBuf {
        self.inputs_file
            .as_deref()
            .filter(|&source| source != "-")
            .and_then(|source| Path::new(source).parent())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }

    /// The `--inputs` object and the `--input` pairs (which win), still text.
    fn read_inputs(&self) -> Result<RawInputs, String> {
        let given = match &self.inputs_file {
            Some(source) => read_json_object(source)?,
            None => Fields::new(),
        };
        let mut pairs = Vec::with_capacity(self.inputs.len());
        for pair in &self.inputs {
            let Some((name, raw)) = pair.split_once('=') else {
                return Err(format!("`--input {pair}` must be NAME=VALUE"));
            };
            pairs.push((name.trim().to_owned(), raw.to_owned()));
        }
        Ok((given, pairs))
    }
}

/// The JSON object of inputs in file `source` (`-`: stdin), read as it
/// streams in straight into values (neither the text nor a
/// `serde_json::Value` is held beside them).
///
/// # Errors
/// It cannot be read, or is not a JSON object.
pub(super) fn read_json_object(source: &str) -> Result<Fields, String> {
    let read = if source == "-" {
        serde_json::from_reader(std::io::BufReader::new(std::io::stdin().lock()))
    } else {
        let file = crate::load::open(std::path::Path::new(source))
            .map_err(|e| format!("cannot read inputs file `{source}`: {e}"))?;
        serde_json::from_reader(std::io::BufReader::with_capacity(1 << 16, file))
    };
    match read {
        Ok(Val::Object(fields)) => Ok(fields.into_fields()),
        Ok(other) => {
            Err(format!("inputs in `{source}` must be a JSON object, got {}", other.kind()))
        }
        Err(e) => Err(format!("inputs in `{source}` are not valid JSON: {e}")),
    }
}

/// The `--inputs` object and the `--input` `(name, text)` pairs.
type RawInputs = (Fields, Vec<(String, String)>);

/// An `--input` value by the input's declared type: the text itself for a
/// `string` or enum input, else JSON when it parses, else the text.
fn input_value(ty: Option<&crate::ir::Type>, raw: String) -> Val {
    let text = ty.is_some_and(|t| {
        matches!(t.kind, crate::ir::TypeKind::String | crate::ir::TypeKind::Enum(_))
    });
    if text {
        return Val::string(raw);
    }
    serde_json::from_str(&raw).unwrap_or(Val::string(raw))
}

/// Prints the outputs or the error; the exit code.
fn report(result: Result<Map<String, Value>, RunError>, engine: &Engine, color: bool) -> ExitCode {
    match result {
        Ok(outputs) => super::emit_json(&Value::Object(outputs), ExitCode::SUCCESS),
        Err(error) => {
            match error.diagnostics() {
                Some(diagnostics) => {
                    eprint!("{}", diagnostics.render(&engine.program().sources, color, WIDTH));
                }
                None => eprintln!("error: {error}"),
            }
            match error {
                RunError::Inputs { .. } | RunError::Contract { .. } | RunError::Output { .. } => {
                    ExitCode::from(2)
                }
                RunError::Node { .. } | RunError::Deadline => ExitCode::from(3),
                // Without a journal nothing is kept to resume from.
                RunError::Paused { .. } => ExitCode::from(PAUSED),
            }
        }
    }
}
