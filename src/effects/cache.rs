//! [`Cache`]: the result cache of tools and agents declared `cache`, an
//! effect store over an embedded content-addressed store (cacache) in
//! `.ignite/cache` by default.
//!
//! The key is the SHA-256 of everything that shapes a result: the effect's
//! kind and name, its definition (see `definition.rs`: the declaration, its
//! resolved types, the bytes of an `exec` tool's scripts, an agent's tools)
//! and the request — for a tool its arguments, for an agent its provider
//! chain, models, rendered prompts (images and documents by their SHA-256)
//! and tools' schemas; a tool's arguments hold the bytes of any media they
//! pass. Only successes are stored, each image or document in them once, in
//! `blobs/` (see `blobs.rs`). An entry
//! older than the declaration's duration is a miss (and is overwritten).
//!
//! cacache writes content to a temporary file and renames it, and appends
//! index lines that carry their own hash, so several ignite processes may
//! share one cache folder: a reader sees a whole entry or none.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::blobs::Blobs;
use super::{CachePolicy, Effect, EffectStore, Lookup, Outcome};

/// Bumped when the key layout changes, so old entries stop matching.
const KEY_VERSION: u32 = 2;

/// A cache folder, with this process's hit and miss counts.
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
    /// An eval's sample number: part of every key, and every effect is
    /// cached (not only those declared `cache`), so each sample has its
    /// own answers and a re-run pays only for what changed.
    sample: Option<u32>,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// What a cache folder holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Entries.
    pub entries: u64,
    /// Bytes of stored results.
    pub bytes: u64,
}

impl Cache {
    /// The cache in `dir` (created on the first write).
    #[must_use]
    pub fn new(dir: PathBuf) -> Self {
        Self { dir, sample: None, hits: AtomicU64::new(0), misses: AtomicU64::new(0) }
    }

    /// The cache in `dir` for sample `sample` of an eval: every effect is
    /// kept (with no time limit unless declared), under keys that hold the
    /// sample number.
    #[must_use]
    pub fn sampled(dir: PathBuf, sample: u32) -> Self {
        Self { sample: Some(sample), ..Self::new(dir) }
    }

    /// Hits and misses of this process so far.
    #[must_use]
    pub fn counts(&self) -> (u64, u64) {
        (self.hits.load(Ordering::Relaxed), self.misses.load(Ordering::Relaxed))
    }

    /// Counts the entries of the cache in `dir` (none when it does not exist).
    ///
    /// # Errors
    /// The index cannot be read.
    pub fn stats(dir: &Path) -> Result<CacheStats, String> {
        let mut stats = CacheStats { entries: 0, bytes: 0 };
        if !dir.exists() {
            return Ok(stats);
        }
        for entry in cacache::list_sync(dir) {
            let entry =
                entry.map_err(|e| format!("cannot read the cache `{}`: {e}", dir.display()))?;
            stats.entries += 1;
            stats.bytes += entry.size as u64;
        }
        Ok(stats)
    }

    /// Removes the cache in `dir` (the whole folder).
    ///
    /// # Errors
    /// The folder cannot be emptied.
    pub fn clear(dir: &Path) -> Result<(), String> {
        if !dir.exists() {
            return Ok(());
        }
        std::fs::remove_dir_all(dir)
            .map_err(|e| format!("cannot clear the cache `{}`: {e}", dir.display()))
    }

    /// Where the media of cached values are kept.
    fn blobs(&self) -> Blobs {
        Blobs::in_dir(self.dir.join("blobs"))
    }

    fn key(&self, effect: &Effect<'_>) -> String {
        let mut material = json!({
            "v": KEY_VERSION,
            "kind": effect.kind,
            "name": effect.name,
            "definition": effect.definition,
            "request": effect.request,
        });
        if let Some(sample) = self.sample {
            material["sample"] = sample.into();
        }
        super::definition::digest(material.to_string().as_bytes())
    }
}

impl Cache {
    /// How `effect` is cached: as declared, or (for an eval's sample)
    /// always.
    fn policy(&self, effect: &Effect<'_>) -> Option<CachePolicy> {
        match (effect.cache, self.sample) {
            (Some(policy), _) => Some(policy),
            (None, Some(_)) => Some(CachePolicy { ttl: None }),
            (None, None) => None,
        }
    }
}

impl EffectStore for Cache {
    fn label(&self) -> &'static str {
        "cache"
    }

    fn lookup(&self, effect: &Effect<'_>) -> Lookup {
        let Some(policy) = self.policy(effect) else { return Lookup::Miss };
        let key = self.key(effect);
        let found = cacache::metadata_sync(&self.dir, &key).ok().flatten().filter(|entry| {
            policy.ttl.is_none_or(|ttl| {
                let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
                now.saturating_sub(entry.time) <= ttl.as_millis()
            })
        });
        let value = found
            .and_then(|entry| cacache::read_hash_sync(&self.dir, &entry.integrity).ok())
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .and_then(|mut value| {
                self.blobs().restore(&mut value, &self.dir).ok()?;
                Some(value)
            });
        match value {
            Some(value) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Lookup::Hit(Outcome::Value(value))
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                Lookup::Miss
            }
        }
    }

    fn record(&self, effect: &Effect<'_>, outcome: &Outcome) -> Result<(), String> {
        let (Some(_), Outcome::Value(value)) = (self.policy(effect), outcome) else {
            return Ok(());
        };
        let key = self.key(effect);
        let text = match self.blobs().stow(value)? {
            Some(stowed) => stowed.to_string(),
            None => value.to_string(),
        };
        let write = || -> cacache::Result<()> {
            let mut writer =
                cacache::WriteOpts::new().size(text.len()).open_sync(&self.dir, &key)?;
            writer
                .write_all(text.as_bytes())
                .map_err(|e| cacache::Error::IoError(e, key.clone()))?;
            writer.commit().map(drop)
        };
        write().map_err(|e| format!("cannot write the cache `{}`: {e}", self.dir.display()))
    }
}
