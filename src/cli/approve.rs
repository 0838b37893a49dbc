//! `ignite approvals [RUN_ID]`, `ignite approve RUN_ID [CALL...]`,
//! `ignite deny RUN_ID CALL --reason TEXT`: the calls a journaled run
//! waits for and the decisions that let it go on (`ignite run FILE
//! --resume RUN_ID`). Also the inline prompt of `ignite run` on a terminal
//! without `--journal`, and what a paused run prints.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Mutex;

use super::{GlobalArgs, usage};
use crate::effects::{Approver, Decision, JOURNAL_DIR, Recording, Verdict};
use crate::failure::PendingCall;

/// Exit code of a run that paused for approvals.
pub(super) const PAUSED: u8 = 4;

/// List the calls journaled runs wait for approval on.
#[derive(Debug, clap::Args)]
pub struct ApprovalsArgs {
    /// The run; every journaled run with waiting calls when absent.
    #[arg(value_name = "RUN_ID")]
    pub run: Option<String>,
}

/// Approve calls a journaled run waits for (all of them when none is named).
#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    /// The run, as `ignite run --journal` printed it.
    #[arg(value_name = "RUN_ID")]
    pub run: String,
    /// The calls to approve; every waiting call of the run when absent.
    #[arg(value_name = "CALL")]
    pub calls: Vec<String>,
    /// A note kept with the decision in the journal.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
}

/// Deny a call a journaled run waits for.
#[derive(Debug, clap::Args)]
pub struct DenyArgs {
    /// The run, as `ignite run --journal` printed it.
    #[arg(value_name = "RUN_ID")]
    pub run: String,
    /// The call to deny.
    #[arg(value_name = "CALL", required = true)]
    pub calls: Vec<String>,
    /// Why: an agent reads it as the tool result `Error: denied: REASON`.
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
}

impl ApprovalsArgs {
    /// Lists the waiting calls; exit code 0, 2 when the run is unknown.
    #[must_use]
    pub fn run(self, _global: &GlobalArgs) -> ExitCode {
        let dir = Path::new(JOURNAL_DIR);
        let named = self.run.is_some();
        let runs = match self.run {
            Some(run) => vec![run],
            None => journaled_runs(dir),
        };
        let mut out = String::new();
        for run in &runs {
            match Recording::waiting(dir, run) {
                Ok(calls) if calls.is_empty() && !named => {}
                Ok(calls) if calls.is_empty() => {
                    out.push_str(&format!("run {run}: no call waits for approval\n"));
                }
                Ok(calls) => out.push_str(&listing(run, &calls)),
                Err(message) if named => return usage(&message),
                Err(message) => eprintln!("warning: {message}"),
            }
        }
        if out.is_empty() {
            out = "no journaled run waits for approval\n".to_owned();
        }
        print!("{out}");
        ExitCode::SUCCESS
    }
}

impl ApproveArgs {
    /// Records the approvals; exit code 0, 2 when a call cannot be approved.
    #[must_use]
    pub fn run(self, _global: &GlobalArgs) -> ExitCode {
        record(&self.run, &self.calls, &Decision::Approve(self.note), "approved")
    }
}

impl DenyArgs {
    /// Records the denials; exit code 0, 2 when a call cannot be denied.
    #[must_use]
    pub fn run(self, _global: &GlobalArgs) -> ExitCode {
        record(&self.run, &self.calls, &Decision::Deny(self.reason), "denied")
    }
}

fn record(run: &str, calls: &[String], decision: &Decision, done: &str) -> ExitCode {
    match Recording::decide(Path::new(JOURNAL_DIR), run, calls, decision) {
        Ok(decided) => {
            for call in &decided {
                println!("{done} {} ({call})", call.call);
            }
            println!("continue with `ignite run FILE --resume {run}`");
            ExitCode::SUCCESS
        }
        Err(message) => usage(&message),
    }
}

/// The IDs of the journals in `dir`, oldest first.
fn journaled_runs(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut runs: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".jsonl").map(str::to_owned))
        .collect();
    runs.sort();
    runs
}

/// `run ID: N call(s) wait for approval`, then one line per call.
fn listing(run: &str, calls: &[PendingCall]) -> String {
    let mut out = format!("run {run}: {} call(s) wait for approval\n", calls.len());
    for call in calls {
        out.push_str(&format!("  {}  {call}\n", call.call));
        if call.interrupted {
            out.push_str(
                "      an approved run of it was cut off and may have acted: approve it again to run it again\n",
            );
        }
    }
    out
}

/// What a paused run prints on stderr: the waiting calls and the commands
/// that decide them.
pub(super) fn paused(run: &str, file: &Path, calls: &[PendingCall]) -> String {
    let mut out = format!("paused: {}", listing(run, calls));
    let first = calls.first().map_or("CALL", |c| c.call.as_str());
    out.push_str(&format!(
        "approve: ignite approve {run} [CALL...] [--note TEXT]   (no CALL: all of them)\n\
         deny:    ignite deny {run} {first} --reason TEXT\n\
         then:    ignite run {} --resume {run}\n",
        file.display()
    ));
    out
}

/// The person at the terminal decides, one call at a time.
#[derive(Debug, Default)]
pub(super) struct Prompt {
    asking: Mutex<()>,
}

impl Prompt {
    /// A prompt when standard input and error are a terminal.
    pub(super) fn on_terminal() -> Option<Self> {
        (std::io::stdin().is_terminal() && std::io::stderr().is_terminal()).then(Self::default)
    }
}

impl Approver for Prompt {
    fn decide(&self, call: &PendingCall, _resend_safe: bool) -> Result<Verdict, String> {
        let _one = crate::sync::lock(&self.asking);
        let mut err = std::io::stderr();
        let _ = write!(err, "approve {call}? [y/N] ");
        let _ = err.flush();
        let mut answer = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut answer)
            .map_err(|e| format!("cannot read the answer: {e}"))?;
        Ok(if matches!(answer.trim(), "y" | "Y" | "yes") {
            Verdict::Approved
        } else {
            Verdict::Denied("declined at the prompt".to_owned())
        })
    }
}
