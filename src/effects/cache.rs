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
//! A result of up to [`INLINE_LIMIT`] bytes (nearly all of them: media are
//! in `blobs/`) is kept inside its index line, so a write is one appended
//! line; a larger one goes to cacache's content store, which writes a
//! temporary file and renames it. Index lines carry their own hash, so
//! several ignite processes may share one cache folder: a reader sees a
//! whole entry or none.
//!
//! Kept inline because an eval caches every sample: with the content store,
//! each sample made a temporary file, a rename and a memory map, and 3,000
//! samples at `--jobs 64` spent about 2 s of system time on them (the same
//! eval with `--no-cache`: 0.1 s; BENCHMARKS.md, "eval").

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::blobs::Blobs;
use super::{CachePolicy, Effect, EffectStore, Lookup, Outcome};

/// Bumped when the key layout changes, so old entries stop matching.
const KEY_VERSION: u32 = 2;

/// The largest result, in bytes of JSON, kept inside its index line.
const INLINE_LIMIT: usize = 64 * 1024;

/// The field of an index line's metadata that holds an inline result
/// (entries written to the content store have no metadata).
const INLINE: &str = "inline";

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
            .and_then(|mut entry| match entry.metadata.get_mut(INLINE) {
                Some(inline) => Some(inline.take()),
                None => cacache::read_hash_sync(&self.dir, &entry.integrity)
                    .ok()
                    .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok()),
            })
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
        let stowed = self.blobs().stow(value)?;
        let value = stowed.as_ref().unwrap_or(value);
        let text = value.to_string();
        let write = || -> cacache::Result<()> {
            if text.len() <= INLINE_LIMIT {
                let opts = cacache::WriteOpts::new()
                    .integrity(cacache::Integrity::from(&text))
                    .size(text.len())
                    .metadata(json!({ (INLINE): value }));
                return cacache::index::insert(&self.dir, &key, opts).map(drop);
            }
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::{Cache, INLINE_LIMIT};
    use crate::effects::{
        CachePolicy, Effect, EffectKey, EffectKind, EffectStore, Lookup, Outcome,
    };

    /// Calls `f` with the effect of tool `name`, cached for `ttl`.
    fn with_effect<R>(name: &str, ttl: Option<Duration>, f: impl FnOnce(&Effect<'_>) -> R) -> R {
        let key = EffectKey { node: "Root > n".to_owned(), item: None, seq: 0 };
        let request = json!({"q": name});
        f(&Effect {
            key: &key,
            kind: EffectKind::Tool,
            name,
            route: "",
            request: &request,
            definition: Some("d"),
            cache: Some(CachePolicy { ttl }),
            work: None,
            media: &[],
        })
    }

    /// Records `value` as the result of tool `name` in `cache`, then looks it up.
    fn round_trip(cache: &Cache, name: &str, value: &Value) -> Option<Value> {
        with_effect(name, None, |effect| {
            cache.record(effect, &Outcome::Value(value.clone())).expect("recorded");
            match cache.lookup(effect) {
                Lookup::Hit(Outcome::Value(found)) => Some(found),
                _ => None,
            }
        })
    }

    /// How many files are under `dir`.
    fn files(dir: &Path) -> usize {
        std::fs::read_dir(dir).map_or(0, |entries| {
            let paths = entries.filter_map(Result::ok).map(|e| e.path());
            paths.map(|path| if path.is_dir() { files(&path) } else { 1 }).sum()
        })
    }

    #[test]
    fn small_results_live_in_their_index_line_and_large_ones_in_the_content_store() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = Cache::new(dir.path().to_path_buf());
        let small = json!({"answer": "a short one", "n": null});
        assert_eq!(round_trip(&cache, "small", &small), Some(small.clone()));
        assert_eq!(round_trip(&cache, "null", &Value::Null), Some(Value::Null));
        assert_eq!(files(&dir.path().join("content-v2")), 0, "small results have no content file");
        let large = json!({"text": "x".repeat(INLINE_LIMIT)});
        assert_eq!(round_trip(&cache, "large", &large), Some(large.clone()));
        assert_eq!(files(&dir.path().join("content-v2")), 1, "a large result is a content file");
        let stats = Cache::stats(dir.path()).expect("stats");
        assert_eq!(stats.entries, 3);
        let bytes = small.to_string().len() + "null".len() + large.to_string().len();
        assert_eq!(stats.bytes, bytes as u64);
    }

    #[test]
    fn an_inline_result_older_than_its_duration_is_a_miss() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = Cache::new(dir.path().to_path_buf());
        with_effect("fresh", Some(Duration::from_secs(3600)), |effect| {
            cache.record(effect, &Outcome::Value(json!(1))).expect("recorded");
            assert!(matches!(cache.lookup(effect), Lookup::Hit(_)));
        });
        with_effect("stale", Some(Duration::ZERO), |effect| {
            cache.record(effect, &Outcome::Value(json!(1))).expect("recorded");
            std::thread::sleep(Duration::from_millis(5));
            assert!(matches!(cache.lookup(effect), Lookup::Miss));
        });
    }
}
