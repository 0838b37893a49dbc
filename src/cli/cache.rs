//! `ignite cache stats|clear`: the result cache of tools and agents
//! declared `cache`.

use std::path::PathBuf;
use std::process::ExitCode;

use super::GlobalArgs;
use crate::effects::Cache;

/// Show or clear the result cache of tools and agents declared `cache`.
#[derive(Debug, clap::Args)]
pub struct CacheArgs {
    /// What to do.
    #[arg(value_enum)]
    pub action: CacheAction,
    /// The cache folder.
    #[arg(long, value_name = "DIR", default_value = super::run::DEFAULT_CACHE_DIR)]
    pub cache_dir: PathBuf,
}

/// What `ignite cache` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CacheAction {
    /// Print the number of entries and their size.
    Stats,
    /// Remove every entry.
    Clear,
}

impl CacheArgs {
    /// Runs the action: 0 ok, 2 when the folder cannot be read or cleared.
    #[must_use]
    pub fn run(self, _global: &GlobalArgs) -> ExitCode {
        let dir = self.cache_dir.display();
        let done = match self.action {
            CacheAction::Stats => Cache::stats(&self.cache_dir)
                .map(|stats| format!("{dir}: {} entries, {} bytes\n", stats.entries, stats.bytes)),
            CacheAction::Clear => {
                Cache::clear(&self.cache_dir).map(|()| format!("{dir}: cleared\n"))
            }
        };
        match done {
            Ok(text) => super::emit(&text, ExitCode::SUCCESS),
            Err(message) => super::usage(&message),
        }
    }
}
