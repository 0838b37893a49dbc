//! Loading: a root `.ign` file and every file it `use`s, parsed.
//!
//! Input: a root path (or a name and a text). Output: [`Loaded`], the
//! [`Sources`] table, one [`ast::File`] per file that parsed, and the
//! diagnostics of reading and parsing: missing `use` files, import cycles,
//! unreadable files and every file's syntax errors.
//!
//! A `use` path is relative to the folder of the file that writes it, and
//! stays inside the root file's folder tree unless [`Options::allow_outside`]
//! (an absolute path is always an error), and names a `.ign` file, so a
//! program cannot read, and print in a syntax error, a file from elsewhere
//! by accident. Each
//! file is loaded once, keyed by its canonical path, so a diamond of uses
//! loads the shared file once; a `use` that reaches a file still being
//! loaded is an import cycle.

use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::ast;
use crate::diagnostic::{Code, Diagnostic, Diagnostics};
use crate::ir;
use crate::source::{FileId, Sources, Span};
use crate::syntax;

/// The files of one program, parsed.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Every file read, the root first.
    pub sources: Sources,
    /// The ASTs of the files that parsed, in load order.
    pub files: Vec<(FileId, ast::File)>,
    /// Read, import and syntax errors.
    pub diagnostics: Diagnostics,
    /// `ignite.lock` beside the root file: `None` when there is none (or
    /// the root is not on disk), the reason when it cannot be read.
    pub lock: Option<Result<ir::Lock, String>>,
    /// The limits of big files still being scanned ([`load_scanning`]).
    scans: Vec<(FileId, syntax::Scanning)>,
}

impl Loaded {
    /// Takes the verdicts of the limits still being scanned: a file that
    /// breaks one did not parse, so its tree goes and its diagnostic comes.
    pub fn settle(&mut self) {
        for (file, verdict) in self.take_scans() {
            if let Some(limit) = verdict {
                self.files.retain(|(f, _)| *f != file);
                self.diagnostics.push(limit);
            }
        }
    }

    /// True when the limits of a big file are still being scanned.
    pub(crate) fn has_scans(&self) -> bool {
        !self.scans.is_empty()
    }

    /// The verdicts of the limits still being scanned (waiting for them),
    /// by file; none are left.
    pub(crate) fn take_scans(&mut self) -> Vec<(FileId, Option<Diagnostic>)> {
        std::mem::take(&mut self.scans).into_iter().map(|(f, s)| (f, s.verdict())).collect()
    }
}

/// How far `use` may reach.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// `--allow-outside`: a `use` may name a file outside the root file's
    /// folder tree (`../shared/x.ign` from the top folder).
    pub allow_outside: bool,
}

/// Loads `root` and, transitively, every file it `use`s.
#[must_use]
pub fn load(root: &Path) -> Loaded {
    load_with(root, Options::default())
}

/// [`load`] with `options`.
#[must_use]
pub fn load_with(root: &Path, options: Options) -> Loaded {
    let mut loaded = load_scanning(root, options);
    loaded.settle();
    loaded
}

/// [`load_with`], except that the limits of a big file without `use`s may
/// still be being scanned when it returns ([`syntax::parse_scanning`]):
/// [`Loaded::settle`] or [`crate::finish`] takes their verdicts.
#[must_use]
pub fn load_scanning(root: &Path, options: Options) -> Loaded {
    load_root(root, Loader { options, scanning: true, ..Loader::default() }).loaded
}

/// Loads `root` like [`load_with`], taking the text of each file from
/// `open` (keyed by canonical path: an editor's unsaved buffers) when it
/// is there and from disk otherwise. A file the root `use`s whose text is
/// the one `cache` parsed before is not parsed again; `cache` keeps the
/// parses of this load's `use`d files, and only those. The other files,
/// the root among them, are parsed by [`syntax::parse_kept`]: only their
/// declarations that changed since the last parse on this thread.
#[must_use]
pub fn load_open(
    root: &Path,
    options: Options,
    open: HashMap<PathBuf, Arc<str>>,
    cache: &mut ParseCache,
) -> Loaded {
    let loader = Loader { options, open, cache: Some(std::mem::take(cache)), ..Loader::default() };
    let mut loader = load_root(root, loader);
    if let Some(mut used) = loader.cache.take() {
        used.entries.retain(|_, entry| entry.used);
        used.entries.values_mut().for_each(|entry| entry.used = false);
        *cache = used;
    }
    loader.loaded
}

/// Loads `root` and its uses with `loader`.
fn load_root(root: &Path, mut loader: Loader) -> Loader {
    let folder = root.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    loader.root_dir = Some((key(folder), folder.to_path_buf()));
    match loader.read(root) {
        Ok(text) => {
            loader.add(root.to_path_buf(), text);
        }
        Err(reason) => loader.unreadable_root(root, &reason),
    }
    loader.loaded.lock = read_lock(&folder.join(ir::LOCK_FILE));
    loader
}

/// The parses of `use`d files kept from one load to the next (the
/// language server's, per open root): a file is parsed again only when
/// its text or its place in the load ([`FileId`], which its spans carry)
/// changed. The root, edited between loads, is not kept here: its
/// declarations are, by [`syntax::parse_kept`].
#[derive(Debug, Default)]
pub struct ParseCache {
    /// By canonical path.
    entries: HashMap<PathBuf, Parsed>,
}

impl ParseCache {
    /// The syntax trees of the files `parsed` (of `sources`, the last load
    /// with this cache), in that order, taken again from the parses kept:
    /// a `use`d file's from this cache, the root's from its declarations
    /// kept by [`syntax::parse_kept`]. Nothing is parsed again unless the
    /// thread dropped a declaration since. A file that does not parse is
    /// left out.
    #[must_use]
    pub fn trees(&self, sources: &Sources, parsed: &[FileId]) -> Vec<(FileId, ast::File)> {
        parsed
            .iter()
            .filter_map(|&file| {
                let source = &sources[file];
                let kept = self.entries.get(&key(&source.path)).filter(|entry| {
                    entry.file == file
                        && (Arc::ptr_eq(&entry.text, &source.text) || entry.text == source.text)
                });
                let tree = match kept {
                    Some(entry) => entry.result.clone(),
                    None => syntax::parse_kept(file, &source.text),
                };
                Some((file, tree.ok()?))
            })
            .collect()
    }
}

/// One file's parse, for the text it was of.
#[derive(Debug)]
struct Parsed {
    text: Arc<str>,
    file: FileId,
    result: Result<ast::File, Diagnostics>,
    /// Read by the current load.
    used: bool,
}

/// The lock file at `path`: `None` when there is none.
fn read_lock(path: &Path) -> Option<Result<ir::Lock, String>> {
    if !path.exists() {
        return None;
    }
    Some(read(path).and_then(|text| ir::Lock::parse(&text)))
}

/// Loads one in-memory file named `name`; its `use`s resolve from the
/// folder of `name`.
#[must_use]
pub fn load_source(name: &str, text: &str) -> Loaded {
    let mut loaded = load_source_scanning(name, text);
    loaded.settle();
    loaded
}

/// [`load_source`] as [`load_scanning`] is [`load_with`].
#[must_use]
pub fn load_source_scanning(name: &str, text: &str) -> Loaded {
    let mut loader = Loader { scanning: true, ..Loader::default() };
    loader.add(PathBuf::from(name), text);
    loader.loaded
}

/// Reads a regular file as UTF-8 text, the reason in words when it cannot.
/// Anything else (a FIFO, `/dev/zero`, a folder) is refused before it is
/// opened: reading it could block or never end.
pub(crate) fn read(path: &Path) -> Result<String, String> {
    let mut bytes = Vec::new();
    open(path)?.read_to_end(&mut bytes).map_err(|e| lower(&e))?;
    String::from_utf8(bytes).map_err(|_| NOT_UTF8.to_owned())
}

/// Why a file's text cannot be read as source.
const NOT_UTF8: &str = "the file is not valid UTF-8";

/// [`read`] into the shared text of a source: the file is read into one
/// allocation of its size, never copied into another (a 32 MB file was
/// copied whole, and both were paged in).
fn read_shared(path: &Path) -> Result<Arc<str>, String> {
    let mut file = open(path)?;
    let len = file.metadata().map_err(|e| lower(&e))?.len();
    let Ok(len) = usize::try_from(len) else { return Err("the file is too large".to_owned()) };
    let mut bytes: Arc<[u8]> = std::iter::repeat_n(0, len).collect();
    let buffer = Arc::get_mut(&mut bytes).unwrap_or_else(|| unreachable!("a new `Arc` is unique"));
    let whole = file.read_exact(buffer).is_ok() && file.read(&mut [0]).is_ok_and(|n| n == 0);
    if !whole {
        // The file changed size while it was read: read it again as it is.
        return read(path).map(Arc::from);
    }
    if std::str::from_utf8(&bytes).is_err() {
        return Err(NOT_UTF8.to_owned());
    }
    // SAFETY: the bytes were just checked to be UTF-8, and `str` has the
    // layout of `[u8]` (what `Arc::<str>::from(String)` relies on too).
    Ok(unsafe { Arc::from_raw(Arc::into_raw(bytes) as *const str) })
}

/// The regular file at `path`, open for reading.
///
/// # Errors
/// It is missing, a folder or not a regular file, or cannot be opened,
/// said in lower case.
pub(crate) fn open(path: &Path) -> Result<std::fs::File, String> {
    let metadata = std::fs::metadata(path).map_err(|e| lower(&e))?;
    if metadata.is_dir() {
        return Err("it is a folder, not a file".to_owned());
    }
    if !metadata.is_file() {
        return Err("not a regular file".to_owned());
    }
    std::fs::File::open(path).map_err(|e| lower(&e))
}

fn lower(e: &std::io::Error) -> String {
    e.to_string().to_lowercase()
}

/// The canonical form of `path`, for telling files apart.
#[must_use]
pub fn key(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[derive(Default)]
struct Loader {
    loaded: Loaded,
    /// Files by canonical path.
    seen: HashMap<PathBuf, FileId>,
    /// Files being loaded, outermost first: a `use` of one is a cycle.
    stack: Vec<FileId>,
    options: Options,
    /// The root file's folder (canonical, and as given), which `use` stays
    /// inside unless [`Options::allow_outside`]; `None` for an in-memory root.
    root_dir: Option<(PathBuf, PathBuf)>,
    /// Texts that win over the disk, by canonical path.
    open: HashMap<PathBuf, Arc<str>>,
    /// The parses kept from the last load ([`load_open`]'s).
    cache: Option<ParseCache>,
    /// A big file's limits may be scanned after its parse returns
    /// ([`load_scanning`]).
    scanning: bool,
}

impl Loader {
    /// The text of `path`: the open one, else the file's.
    fn read(&self, path: &Path) -> Result<Arc<str>, String> {
        match self.open.get(&key(path)) {
            Some(text) => Ok(Arc::clone(text)),
            None => read_shared(path),
        }
    }

    /// A root that cannot be read has no text to point into: it is
    /// registered empty so the diagnostic still names the file.
    fn unreadable_root(&mut self, root: &Path, reason: &str) {
        let file = self.loaded.sources.add(root.to_path_buf(), "");
        self.loaded.diagnostics.push(
            Diagnostic::error(
                Code::Io,
                Span::new(file, 0, 0),
                format!("cannot read `{}`: {reason}", root.display()),
            )
            .label("this file"),
        );
    }

    /// Registers and parses a file, then loads its uses depth first.
    fn add(&mut self, path: PathBuf, text: impl Into<Arc<str>>) -> FileId {
        // The text moves into the table first: a big file is held once
        // while it parses.
        let file = self.loaded.sources.add(path.clone(), text);
        let canonical = key(&path);
        self.seen.insert(canonical.clone(), file);
        let text = Arc::clone(&self.loaded.sources[file].text);
        let ast = match self.parse(canonical, file, text) {
            Ok(ast) => ast,
            Err(errors) => {
                self.loaded.diagnostics.extend(errors);
                return file;
            }
        };
        self.stack.push(file);
        for item in &ast.items {
            if let ast::Item::Use(use_decl) = item {
                self.follow(file, use_decl);
            }
        }
        self.stack.pop();
        self.loaded.files.push((file, ast));
        file
    }

    /// The syntax tree of `text`, file `file` at canonical path `path`:
    /// the cached one when the cache has this text there, and with a
    /// cache, the declarations kept by [`syntax::parse_kept`].
    fn parse(
        &mut self,
        path: PathBuf,
        file: FileId,
        text: Arc<str>,
    ) -> Result<ast::File, Diagnostics> {
        let Some(cache) = self.cache.as_mut() else {
            if !self.scanning {
                return syntax::parse(file, &text);
            }
            let (tree, scan) = syntax::parse_scanning(file, &text)?;
            if let Some(scan) = scan {
                // The files a tree `use`s are loaded only if it parses.
                if tree.items.iter().any(|item| matches!(item, ast::Item::Use(_))) {
                    if let Some(limit) = scan.verdict() {
                        return Err(limit.into());
                    }
                } else {
                    self.loaded.scans.push((file, scan));
                }
            }
            return Ok(tree);
        };
        if file == FileId(0) {
            return syntax::parse_kept(file, &text);
        }
        if let Some(entry) = cache.entries.get_mut(&path) {
            if entry.file == file && (Arc::ptr_eq(&entry.text, &text) || entry.text == text) {
                entry.used = true;
                return entry.result.clone();
            }
        }
        let result = syntax::parse_kept(file, &text);
        let entry = Parsed { text, file, result: result.clone(), used: true };
        cache.entries.insert(path, entry);
        result
    }

    /// Loads the file a `use` names, reporting a missing file or a cycle.
    fn follow(&mut self, from: FileId, use_decl: &ast::Use) {
        let span = use_decl.path.span;
        let Some(relative) = use_decl.path.as_plain_string() else {
            self.loaded.diagnostics.push(
                Diagnostic::error(Code::NotConstant, span, "a `use` path cannot interpolate")
                    .label("not a plain string"),
            );
            return;
        };
        if Path::new(&relative).is_absolute() {
            self.loaded.diagnostics.push(
                Diagnostic::error(
                    Code::UseOutside,
                    span,
                    format!("a `use` path must be relative, not `{relative}`"),
                )
                .label("an absolute path")
                .help(format!(
                    "write it relative to the folder of `{}` (a program moves with its folder)",
                    self.name(from)
                )),
            );
            return;
        }
        let path = self.loaded.sources[from].dir().join(&relative);
        if path.extension().is_none_or(|e| e != "ign") {
            self.loaded.diagnostics.push(
                Diagnostic::error(
                    Code::UseOutside,
                    span,
                    format!("`{relative}` is not an `.ign` file"),
                )
                .label("only `.ign` files can be used")
                .help("a `use` names another file of the program, such as `shared.ign`"),
            );
            return;
        }
        let outside = self
            .root_dir
            .as_ref()
            .filter(|_| !self.options.allow_outside && path.exists())
            .filter(|(root, _)| !key(&path).starts_with(root));
        if let Some((_, shown)) = outside {
            self.loaded.diagnostics.push(
                Diagnostic::error(
                    Code::UseOutside,
                    span,
                    format!(
                        "`{relative}` is outside `{}`, the folder of the root file",
                        shown.display()
                    ),
                )
                .label("leaves the root file's folder tree")
                .help("move the file into the folder, or pass `--allow-outside` to use it"),
            );
            return;
        }
        if let Some(&file) = self.seen.get(&key(&path)) {
            if let Some(at) = self.stack.iter().position(|&f| f == file) {
                self.report_cycle(at, file, span);
            }
            return;
        }
        // Only a missing path is "does not exist"; a folder, a device or a
        // FIFO is refused by `read`, saying so.
        if !path.exists() && !self.open.contains_key(&key(&path)) {
            self.loaded.diagnostics.push(
                Diagnostic::error(
                    Code::MissingUse,
                    span,
                    format!("imported file `{}` does not exist", path.display()),
                )
                .label("no such file")
                .help(format!("paths are relative to the folder of `{}`", self.name(from))),
            );
            return;
        }
        match self.read(&path) {
            Ok(text) => {
                self.add(path, text);
            }
            Err(reason) => self.loaded.diagnostics.push(
                Diagnostic::error(
                    Code::Io,
                    span,
                    format!("cannot read `{}`: {reason}", path.display()),
                )
                .label("imported here"),
            ),
        }
    }

    /// An import cycle: the files on the stack from `at`, back to `file`.
    fn report_cycle(&mut self, at: usize, file: FileId, span: Span) {
        let mut names: Vec<String> =
            self.stack[at..].iter().map(|&f| format!("`{}`", self.name(f))).collect();
        names.push(format!("`{}`", self.name(file)));
        self.loaded.diagnostics.push(
            Diagnostic::error(
                Code::ImportCycle,
                span,
                format!("import cycle: {}", names.join(" → ")),
            )
            .label("this `use` closes the cycle")
            .help("move the shared declarations into a file both can `use`"),
        );
    }

    fn name(&self, file: FileId) -> String {
        self.loaded.sources[file].path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::{ParseCache, load_open};

    /// A big file's limits, scanned while it lowers, still decide: a file
    /// that breaks one reports that alone, not what lowering found in it,
    /// as when the scan comes first.
    #[test]
    fn a_big_file_s_limits_scanned_as_it_lowers_still_decide() {
        crate::on_big_stack(|| {
            // Over 1 MiB, the size from which the limits are scanned beside.
            let nodes: String =
                (0..40_000).map(|i| format!("  compute n{i} = x + {i}\n")).collect();
            let body = format!(
                "contract C {{\n  input x: integer\n{nodes}  compute z = unknown\n  output z\n"
            );
            let checked = |text: &str| {
                let scanning = super::load_source_scanning("big.ign", text);
                assert!(scanning.has_scans(), "the fast path read it; its scan came after");
                let later = crate::finish(scanning);
                let first = crate::finish(super::load_source("big.ign", text));
                assert_eq!(later.diagnostics, first.diagnostics);
                later.diagnostics.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
            };
            // A `for` nests 129 deep: within the fast path's depth, past the
            // limit of 256 `if` and `for` open at once (two each).
            let nested = format!("{body}  compute y = {}a\n}}\n", "for a in b if c: ".repeat(129));
            assert_eq!(checked(&nested), ["expression nests too deeply"]);
            assert_eq!(checked(&format!("{body}}}\n")), ["unknown name `unknown`"]);
        });
    }

    /// A `use`d file is parsed again when its text changes, and its parse
    /// is reused (with the same diagnostics) while it does not.
    #[test]
    fn the_parse_cache_follows_the_used_files_text() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let root = dir.path().join("main.ign");
        let used = dir.path().join("lib.ign");
        std::fs::write(&root, "use \"lib.ign\"\ncontract A {\n  input x: integer\n  output x\n}\n")
            .expect("writes");
        std::fs::write(&used, "type T {\n  a: integer\n}\n").expect("writes");
        let mut cache = ParseCache::default();
        let load = |cache: &mut ParseCache| {
            load_open(&root, super::Options::default(), HashMap::new(), cache)
        };
        let first = load(&mut cache);
        assert!(first.diagnostics.is_empty(), "{:?}", first.diagnostics);
        assert_eq!(cache.entries.len(), 1, "only the used file is kept");
        let again = load(&mut cache);
        assert_eq!(again.files, first.files);

        std::fs::write(&used, "type T {\n  a: integer\n").expect("writes");
        let broken = load(&mut cache);
        assert_eq!(broken.files.len(), 1, "the used file no longer parses");
        assert!(!broken.diagnostics.is_empty());
        let still = load(&mut cache);
        assert_eq!(still.diagnostics, broken.diagnostics);

        // An open buffer wins over the disk, and the cache follows it.
        let fixed: Arc<str> = Arc::from("type T {\n  a: integer\n}\n");
        let open = HashMap::from([(super::key(&used), fixed)]);
        let buffer = load_open(&root, super::Options::default(), open, &mut cache);
        assert!(buffer.diagnostics.is_empty(), "{:?}", buffer.diagnostics);
        assert_eq!(buffer.files.len(), 2);
    }
}
