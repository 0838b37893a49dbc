//! A saved run (`ignite eval --save`) as a baseline: each score's paired
//! difference (this run minus the baseline, over the samples both have,
//! matched by row id and sample number) with a bootstrap 95% interval,
//! and the samples that got worse, the worst first.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::EvalRun;
use super::stats::{self, Estimate};

/// The version of the `--save` document (`ignite_eval`), which a
/// baseline must carry.
pub(crate) const SAVE_VERSION: u64 = 1;

/// One saved eval's samples' scores: by (row id, sample), by score name.
type SavedScores = HashMap<(String, u32), HashMap<String, f64>>;

/// A saved run, read back.
#[derive(Debug, Clone)]
pub(crate) struct Baseline {
    /// Where it was read from.
    path: String,
    /// Each eval's name and samples' scores.
    evals: Vec<(String, SavedScores)>,
}

/// One sample that scored lower than in the baseline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Worse {
    /// The row's id.
    pub id: String,
    /// The sample number.
    pub sample: u32,
    /// The baseline's value.
    pub before: f64,
    /// This run's value.
    pub after: f64,
}

/// One score compared with the baseline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Delta {
    /// The score.
    pub name: String,
    /// Samples compared (in both runs).
    pub pairs: usize,
    /// The mean difference (this run minus the baseline) and its interval.
    pub delta: Estimate,
    /// The interval lies below 0: worse with 95% confidence.
    pub worse: bool,
    /// The samples that scored lower, the largest drop first.
    pub worse_samples: Vec<Worse>,
}

/// An eval compared with the baseline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Comparison {
    /// Each score the baseline also has.
    pub deltas: Vec<Delta>,
    /// Scores the baseline does not have.
    pub new_scores: Vec<String>,
}

impl Comparison {
    /// True when a score is worse with 95% confidence.
    #[must_use]
    pub(crate) fn worse(&self) -> bool {
        self.deltas.iter().any(|d| d.worse)
    }
}

impl Baseline {
    /// Reads the saved run at `path`.
    ///
    /// # Errors
    /// The file cannot be read, or is not a file `--save` wrote.
    pub(crate) fn read(path: &Path) -> Result<Self, String> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read baseline `{shown}`: {e}"))?;
        let not_saved = |why: &str| {
            format!(
                "baseline `{shown}` is not a saved eval run ({why}): make one with `ignite eval --save FILE`"
            )
        };
        let value: Value =
            serde_json::from_str(&text).map_err(|e| not_saved(&format!("not JSON: {e}")))?;
        if value.get("ignite_eval") != Some(&Value::from(SAVE_VERSION)) {
            return Err(not_saved("no `ignite_eval` version 1"));
        }
        let Some(evals) = value.get("evals").and_then(Value::as_array) else {
            return Err(not_saved("no `evals` array"));
        };
        let stopped = evals.iter().find(|e| e.get("stopped") == Some(&Value::Bool(true)));
        if value.get("partial") == Some(&Value::Bool(true)) || stopped.is_some() {
            let what = stopped.map_or_else(String::new, |e| {
                format!(
                    ": eval `{}` stopped after {} of {} samples",
                    e.get("name").and_then(Value::as_str).unwrap_or_default(),
                    e.get("finished").unwrap_or(&Value::Null),
                    e.get("planned").unwrap_or(&Value::Null)
                )
            });
            return Err(format!(
                "baseline `{shown}` is partial (a stop cut its run short{what}): run the command that saved it again to finish it (what finished comes from the cache), then compare"
            ));
        }
        let mut read = Vec::with_capacity(evals.len());
        for eval in evals {
            let name = eval
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| not_saved("an eval without a `name`"))?;
            let samples = eval
                .get("samples")
                .and_then(Value::as_array)
                .ok_or_else(|| not_saved(&format!("eval `{name}` has no `samples` array")))?;
            let mut by_sample = HashMap::with_capacity(samples.len());
            for s in samples {
                let id = s.get("id").and_then(Value::as_str);
                let sample =
                    s.get("sample").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
                let scores = s.get("scores").and_then(Value::as_object);
                let (Some(id), Some(sample), Some(scores)) = (id, sample, scores) else {
                    return Err(not_saved(&format!(
                        "a sample of eval `{name}` lacks `id`, `sample` or `scores`"
                    )));
                };
                let values =
                    scores.iter().map(|(k, v)| (k.clone(), v.as_f64().unwrap_or(0.0))).collect();
                by_sample.insert((id.to_owned(), sample), values);
            }
            read.push((name.to_owned(), by_sample));
        }
        Ok(Self { path: shown, evals: read })
    }

    /// `run` compared with the same eval in the baseline.
    ///
    /// # Errors
    /// The baseline has no eval of that name, or none of its samples has
    /// an id and sample number of this run.
    pub(crate) fn compare(&self, run: &EvalRun) -> Result<Comparison, String> {
        let Some((_, base)) = self.evals.iter().find(|(name, _)| *name == run.name) else {
            let names: Vec<&str> = self.evals.iter().map(|(n, _)| n.as_str()).collect();
            return Err(format!(
                "baseline `{}` has no eval `{}` (it has {}): compare with a file saved from the same eval",
                self.path,
                run.name,
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    format!("`{}`", names.join("`, `"))
                }
            ));
        };
        let matched: Vec<(usize, &HashMap<String, f64>)> = run
            .samples
            .iter()
            .enumerate()
            .filter_map(|(i, s)| base.get(&(s.id.clone(), s.sample)).map(|b| (i, b)))
            .collect();
        if matched.is_empty() && !run.samples.is_empty() {
            return Err(format!(
                "baseline `{}` has no sample of eval `{}` with this run's row ids and sample numbers: it was saved from another dataset",
                self.path, run.name
            ));
        }
        let mut comparison = Comparison { deltas: Vec::new(), new_scores: Vec::new() };
        for (k, score) in run.scores.iter().enumerate() {
            if !matched.iter().any(|(_, b)| b.contains_key(&score.name)) {
                comparison.new_scores.push(score.name.clone());
                continue;
            }
            let mut diffs = Vec::with_capacity(matched.len());
            let mut worse_samples = Vec::new();
            for (i, before) in &matched {
                let Some(&before) = before.get(&score.name) else { continue };
                let sample = &run.samples[*i];
                let after = sample.value(k);
                diffs.push(after - before);
                if after < before {
                    let (id, sample) = (sample.id.clone(), sample.sample);
                    worse_samples.push(Worse { id, sample, before, after });
                }
            }
            worse_samples.sort_by(|a, b| {
                (a.after - a.before)
                    .total_cmp(&(b.after - b.before))
                    .then_with(|| a.id.cmp(&b.id))
                    .then(a.sample.cmp(&b.sample))
            });
            let delta = stats::bootstrap(&diffs, stats::SEED);
            comparison.deltas.push(Delta {
                name: score.name.clone(),
                pairs: diffs.len(),
                worse: delta.high < 0.0,
                delta,
                worse_samples,
            });
        }
        Ok(comparison)
    }
}
