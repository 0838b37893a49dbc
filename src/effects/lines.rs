//! [`LineFile`]: the file of a recording or journal, to which many threads
//! append lines at once, each line whole or absent however the process dies.
//!
//! The file is memory-mapped. An append reserves its bytes with one atomic
//! add (no lock between writers), copies the line without its `\n` into
//! the map, then stores the `\n` (release ordering). The stores are in the
//! page cache as soon as they are made: a process killed at any point
//! (SIGKILL too) leaves every finished line in the file, and the kernel
//! writes it out as for any other write. No system call is made per line:
//! one `madvise` makes the pages of the next 64 KiB writable at once, so
//! that appends take no page fault either.
//!
//! Room is allocated ahead (`posix_fallocate` on Linux, so a full disk is
//! an error here instead of a SIGBUS later), in segments that double in
//! size, each mapped once and never moved: segment 0 holds the first
//! [`FIRST`] bytes, segment `i` the bytes from `FIRST << (i - 1)` up to
//! `FIRST << i`. When the file is done with ([`LineFile::trim`]: a run's
//! end, a halt on SIGINT or SIGTERM, or the last handle dropped) it is cut
//! to the bytes written.
//!
//! What a killed process leaves: whole lines, then zeros (room not used
//! yet), and where a line was being written when the process died, its
//! reserved bytes in part or not at all and never its `\n` (so always a
//! zero last byte). [`whole_lines`] reads that back: every line that got
//! its `\n`, nothing else. JSON has no raw zero byte and no raw newline, so
//! both are unambiguous.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use memmap2::{MmapOptions, MmapRaw};
use serde::Serialize;

use crate::shutdown::AtHalt;

/// The size of the first segment; later ones double.
const FIRST: u64 = 1 << 20;

/// Pages are made writable ahead of the appends a window of this many
/// bytes at a time: one system call (`MADV_POPULATE_WRITE`) instead of a
/// page fault for each page.
const AHEAD: u64 = 1 << 16;

/// Segments: enough for `FIRST << (SEGMENTS - 1)` bytes (32 PiB).
const SEGMENTS: usize = 36;

/// An append-only file of lines shared by threads (see the module docs).
#[derive(Debug)]
pub(super) struct LineFile {
    path: PathBuf,
    file: File,
    /// The end of the bytes handed out to lines.
    end: AtomicU64,
    /// How far the file is allocated (and mapped): appends below it need
    /// no system call.
    room: AtomicU64,
    /// Below it the pages are mapped writable already (a hint: a page
    /// fault does the same, one page at a time).
    ready: AtomicU64,
    segments: [OnceLock<MmapRaw>; SEGMENTS],
    /// Taken by whoever makes room.
    growing: Mutex<()>,
    /// Appends hold it shared, [`LineFile::trim`] exclusively (a write into
    /// the map past the end of the file would be a SIGBUS). After a halt it
    /// stays taken: no line is written any more.
    gate: RwLock<()>,
}

impl LineFile {
    /// Appends to `file` (open for reading and writing), whose first `len`
    /// bytes are kept; [`crate::shutdown::halt`] trims it.
    ///
    /// # Errors
    /// Another process writes the file, or the first room cannot be
    /// allocated or mapped.
    pub(super) fn open(path: &Path, file: File, len: u64) -> Result<Arc<Self>, String> {
        exclusive(&file, path)?;
        let lines = Self {
            path: path.to_owned(),
            file,
            end: AtomicU64::new(len),
            room: AtomicU64::new(0),
            ready: AtomicU64::new(len),
            segments: std::array::from_fn(|_| OnceLock::new()),
            growing: Mutex::new(()),
            gate: RwLock::new(()),
        };
        lines.file.set_len(len).map_err(|e| lines.error(&e))?;
        lines.make_room(len.max(1))?;
        let lines = Arc::new(lines);
        crate::shutdown::at_halt(Arc::downgrade(&lines) as Weak<dyn AtHalt>);
        Ok(lines)
    }

    /// Appends `value` as one line of JSON.
    ///
    /// # Errors
    /// As [`LineFile::append`].
    pub(super) fn append_json(&self, value: &impl Serialize) -> Result<(), String> {
        thread_local! {
            /// The line being appended, kept for the next one.
            static LINE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        }
        LINE.with_borrow_mut(|line| {
            line.clear();
            json_line(value, line).map_err(|e| self.error(&e))?;
            let appended = self.append(line);
            if line.capacity() > 1 << 16 {
                *line = Vec::new();
            }
            appended
        })
    }

    /// Appends `line`, which ends with its only `\n`.
    ///
    /// # Errors
    /// No room can be allocated (a full disk), or the file has grown
    /// past what this ignite can map.
    pub(super) fn append(&self, line: &[u8]) -> Result<(), String> {
        let Some((&b'\n', body)) = line.split_last() else {
            return Err(self.error(&"a line must end with a newline"));
        };
        let _open = self.gate.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let start = self.end.fetch_add(line.len() as u64, Ordering::Relaxed);
        let stop = start + line.len() as u64;
        if self.room.load(Ordering::Acquire) < stop {
            self.make_room(stop)?;
        }
        if self.ready.load(Ordering::Relaxed) < stop {
            self.prepare(stop);
        }
        self.copy(start, body);
        // SAFETY: the byte at `stop - 1` was reserved by this append alone
        // and is mapped (`make_room`); it stays mapped while the gate is
        // held. Bytes are always aligned.
        let newline = unsafe { AtomicU8::from_ptr(self.at(stop - 1)) };
        // Release: whoever sees the `\n` sees the line (a dead process's
        // page cache included).
        newline.store(b'\n', Ordering::Release);
        Ok(())
    }

    /// Cuts the file to the bytes written. Waits for the appends in
    /// progress; a later append allocates room again.
    ///
    /// # Errors
    /// The file cannot be cut.
    pub(super) fn trim(&self) -> Result<(), String> {
        let _closed = self.gate.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.cut()
    }

    /// [`LineFile::trim`] with no append in progress.
    fn cut(&self) -> Result<(), String> {
        let end = self.end.load(Ordering::Relaxed);
        if self.room.load(Ordering::Relaxed) > end {
            self.file.set_len(end).map_err(|e| self.error(&e))?;
            self.room.store(end, Ordering::Release);
            self.ready.fetch_min(end, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Allocates and maps the file up to at least `stop`.
    fn make_room(&self, stop: u64) -> Result<(), String> {
        let _growing = self.growing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut room = self.room.load(Ordering::Acquire);
        while room < stop {
            let segment = segment(room);
            if segment >= SEGMENTS {
                return Err(
                    self.error(&format!("the file is larger than {} bytes", start(SEGMENTS)))
                );
            }
            let (from, to) = (start(segment), start(segment + 1));
            allocate(&self.file, room, to - room).map_err(|e| self.error(&e))?;
            if self.segments[segment].get().is_none() {
                // Written through raw pointers only where room was made:
                // the file is cut only by `cut`, with no append running,
                // and grown again before a later append writes past it.
                let map = MmapOptions::new()
                    .offset(from)
                    .len(usize::try_from(to - from).map_err(|e| self.error(&e))?)
                    .map_raw(&self.file)
                    .map_err(|e| self.error(&format!("cannot map it: {e}")))?;
                let _ = self.segments[segment].set(map);
            }
            room = to;
            self.room.store(room, Ordering::Release);
        }
        Ok(())
    }

    /// Maps the pages up to `stop` writable, a window at a time, within the
    /// room; skipped while another append does it (this one's page faults
    /// then do it).
    fn prepare(&self, stop: u64) {
        let Ok(_growing) = self.growing.try_lock() else { return };
        let room = self.room.load(Ordering::Acquire);
        let mut ready = self.ready.load(Ordering::Relaxed);
        while ready < stop.min(room) {
            // Windows are page-aligned (a window may be made ready twice).
            let from = ready / AHEAD * AHEAD;
            // Segments start at multiples of `FIRST`: a window is in one.
            let to = (from + AHEAD).min(room);
            populate(self.at(from), to - from);
            ready = to;
        }
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Copies `bytes` to offset `at`, across segments if need be.
    fn copy(&self, mut at: u64, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let n =
                bytes.len().min(usize::try_from(start(segment(at) + 1) - at).unwrap_or(usize::MAX));
            // SAFETY: `at .. at + n` was reserved by this append alone and
            // lies in one mapped segment (`make_room`).
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.at(at), n) };
            at += n as u64;
            bytes = &bytes[n..];
        }
    }

    /// The mapped byte at offset `at`, which `make_room` has mapped.
    fn at(&self, at: u64) -> *mut u8 {
        let segment = segment(at);
        let map = self.segments[segment].get().expect("appends write only where room was made");
        // `at` is inside the segment, whose length is a `usize`.
        let within = (at - start(segment)) as usize;
        map.as_mut_ptr().wrapping_add(within)
    }

    fn error(&self, error: &dyn std::fmt::Display) -> String {
        format!("cannot write `{}`: {error}", self.path.display())
    }
}

/// On a halt the file is trimmed and takes no line any more: appends wait
/// for ever (the process is about to exit).
impl AtHalt for LineFile {
    fn halt(&self) {
        let closed = self.gate.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Nobody to tell: the process is exiting, and a file that could not
        // be cut still reads back whole (its tail is zeros).
        let _ = self.cut();
        std::mem::forget(closed);
    }
}

/// The last handle gone: the file keeps the bytes written only.
impl Drop for LineFile {
    fn drop(&mut self) {
        // Nobody else can append now; a file that could not be cut still
        // reads back whole (its tail is zeros).
        let _ = self.cut();
    }
}

/// Benchmark switch (temporary, for `benches/effects.rs`): new files are
/// [`AppendFile`]s instead of memory-mapped [`LineFile`]s.
pub(super) static PLAIN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The file of a recording or journal: mapped, or plain appends.
#[derive(Debug)]
pub(super) enum Lines {
    Mapped(Arc<LineFile>),
    Plain(AppendFile),
}

impl Lines {
    pub(super) fn open(path: &Path, file: File, len: u64) -> Result<Self, String> {
        if PLAIN.load(Ordering::Relaxed) {
            AppendFile::open(path, file, len).map(Self::Plain)
        } else {
            LineFile::open(path, file, len).map(Self::Mapped)
        }
    }

    pub(super) fn append_json(&self, value: &impl Serialize) -> Result<(), String> {
        match self {
            Self::Mapped(f) => f.append_json(value),
            Self::Plain(f) => f.append_json(value),
        }
    }

    pub(super) fn trim(&self) -> Result<(), String> {
        match self {
            Self::Mapped(f) => f.trim(),
            Self::Plain(_) => Ok(()),
        }
    }
}

/// Plain appends: one `write` per line under a lock.
#[derive(Debug)]
pub(super) struct AppendFile {
    path: PathBuf,
    /// The file, positioned at the end of its whole lines, and that end.
    file: Mutex<(File, u64)>,
}

impl AppendFile {
    pub(super) fn open(path: &Path, mut file: File, len: u64) -> Result<Self, String> {
        use std::io::Seek as _;
        exclusive(&file, path)?;
        let error = |e: io::Error| format!("cannot write `{}`: {e}", path.display());
        file.set_len(len).map_err(error)?;
        file.seek(io::SeekFrom::Start(len)).map_err(error)?;
        Ok(Self { path: path.to_owned(), file: Mutex::new((file, len)) })
    }

    pub(super) fn append_json(&self, value: &impl Serialize) -> Result<(), String> {
        use std::io::{Seek as _, Write as _};
        let mut line = Vec::with_capacity(256);
        json_line(value, &mut line).map_err(|e| self.error(&e))?;
        crate::shutdown::whole(|| {
            let mut file = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let (file, end) = &mut *file;
            match file.write_all(&line) {
                Ok(()) => {
                    *end += line.len() as u64;
                    Ok(())
                }
                Err(e) => {
                    let _ = file.set_len(*end).and_then(|()| file.seek(io::SeekFrom::Start(*end)));
                    Err(self.error(&e))
                }
            }
        })
    }

    fn error(&self, error: &dyn std::fmt::Display) -> String {
        format!("cannot write `{}`: {error}", self.path.display())
    }
}

/// Takes `file` for this process alone: an advisory lock (`flock`) that
/// goes when the file is closed or the process ends, however it ends. Two
/// processes appending to one map would write over each other's lines,
/// and cutting a file another process maps would kill it (SIGBUS).
///
/// # Errors
/// Another process holds it.
pub(super) fn exclusive(file: &File, path: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd as _;
        // SAFETY: `flock` only locks our own descriptor.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let error = io::Error::last_os_error();
            return Err(if error.kind() == io::ErrorKind::WouldBlock {
                format!(
                    "`{}` is being written by another ignite process: wait for it to end, or use another file",
                    path.display()
                )
            } else {
                format!("cannot lock `{}`: {error}", path.display())
            });
        }
    }
    #[cfg(not(unix))]
    let _ = (file, path);
    Ok(())
}

/// The segment holding offset `at`.
fn segment(at: u64) -> usize {
    (u64::BITS - (at / FIRST).leading_zeros()) as usize
}

/// The first offset of `segment`.
fn start(segment: usize) -> u64 {
    match segment {
        0 => 0,
        i => FIRST << (i - 1),
    }
}

/// Reserves `len` bytes of disk from `offset` (the file grows to cover them).
#[cfg(target_os = "linux")]
fn allocate(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(io::Error::from(io::ErrorKind::FileTooLarge));
    };
    // SAFETY: `posix_fallocate` only changes the file; the descriptor is ours.
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), offset, len) } {
        0 => Ok(()),
        code => Err(io::Error::from_raw_os_error(code)),
    }
}

/// Elsewhere the file only grows (sparse): a full disk shows when the
/// kernel writes the pages out.
#[cfg(not(target_os = "linux"))]
fn allocate(file: &File, offset: u64, len: u64) -> io::Result<()> {
    file.set_len(offset + len)
}

/// Appends `value` as JSON and a `\n` to `line`.
///
/// # Errors
/// `value` cannot be written as JSON.
pub(super) fn json_line(value: &impl Serialize, line: &mut Vec<u8>) -> serde_json::Result<()> {
    serde_json::to_writer(&mut *line, value)?;
    line.push(b'\n');
    Ok(())
}

/// Maps `len` bytes of a file map from `at` writable (a hint: before
/// Linux 5.14 it does nothing, and page faults do it one page at a time).
#[cfg(target_os = "linux")]
fn populate(at: *mut u8, len: u64) {
    // SAFETY: `madvise` only changes the page tables of our own map.
    unsafe {
        libc::madvise(at.cast(), usize::try_from(len).unwrap_or(0), libc::MADV_POPULATE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn populate(_at: *mut u8, _len: u64) {}

/// The lines of `bytes` that got their `\n` (without it), each with its
/// 1-based line number: what a [`LineFile`] holds however its process
/// died. Between two newlines, bytes up to the last zero are what an
/// unfinished line left; the rest is the line that ended there.
pub(super) fn whole_lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let ended = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    bytes[..ended].split_inclusive(|&b| b == b'\n').enumerate().filter_map(|(i, piece)| {
        let line = &piece[..piece.len() - 1];
        let line = line.iter().rposition(|&b| b == 0).map_or(line, |z| &line[z + 1..]);
        (!line.trim_ascii().is_empty()).then_some((i + 1, line))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn new_file(dir: &Path) -> Arc<LineFile> {
        let path = lines_path(dir);
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("created");
        LineFile::open(&path, file, 0).expect("opened")
    }

    fn lines_path(dir: &Path) -> PathBuf {
        dir.join("lines.jsonl")
    }

    fn lines_of(bytes: &[u8]) -> Vec<String> {
        whole_lines(bytes).map(|(_, l)| String::from_utf8_lossy(l).into_owned()).collect()
    }

    #[test]
    fn a_killed_writer_leaves_whole_lines_then_zeros() {
        let dir = tempfile::tempdir().expect("temp dir");
        let lines = new_file(dir.path());
        lines.append(b"{\"a\":1}\n").expect("appended");
        lines.append(b"{\"b\":2}\n").expect("appended");
        // A kill: nothing trims the file.
        let path = lines_path(dir.path());
        std::mem::forget(lines);
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(bytes.len() as u64, FIRST);
        assert!(bytes[16..].iter().all(|&b| b == 0));
        assert_eq!(lines_of(&bytes), ["{\"a\":1}", "{\"b\":2}"]);
    }

    #[test]
    fn an_unfinished_line_is_skipped_wherever_it_is() {
        // Header; a line reserved before `b` but killed half-way (no `\n`,
        // a zero last byte); `b`, which ended; a line reserved and not
        // started; a last line killed half-way; the room not used.
        let mut bytes = b"{\"h\":0}\n{\"a\":\"par".to_vec();
        bytes.extend([0, 0, 0]);
        bytes.extend(b"{\"b\":2}\n");
        bytes.extend([0; 9]);
        bytes.extend(b"{\"c\":3}\n{\"d\":");
        bytes.extend([0; 100]);
        let found: Vec<_> = whole_lines(&bytes).map(|(n, l)| (n, l.to_vec())).collect();
        assert_eq!(
            found,
            [(1, b"{\"h\":0}".to_vec()), (2, b"{\"b\":2}".to_vec()), (3, b"{\"c\":3}".to_vec())]
        );
    }

    #[test]
    fn lines_cross_segments_from_many_threads_and_trim_to_what_was_written() {
        let dir = tempfile::tempdir().expect("temp dir");
        let lines = new_file(dir.path());
        // 4 threads × 1,600 lines of 1 KiB: past the first two segments
        // (1 + 1 MiB), lines straddling their ends.
        let line = |t: usize, i: usize| {
            format!("{{\"t\":{t},\"i\":{i:04},\"pad\":\"{}\"}}\n", "x".repeat(990))
        };
        std::thread::scope(|s| {
            for t in 0..4 {
                let lines = &lines;
                s.spawn(move || {
                    for i in 0..1_600 {
                        lines.append(line(t, i).as_bytes()).expect("appended");
                    }
                });
            }
        });
        lines.trim().expect("trimmed");
        let bytes = std::fs::read(lines_path(dir.path())).expect("read");
        let total: usize = (0..4).flat_map(|t| (0..1_600).map(move |i| line(t, i).len())).sum();
        assert_eq!(bytes.len(), total);
        assert!(total as u64 > start(2));
        let mut found = lines_of(&bytes);
        found.sort();
        let mut expected: Vec<String> = (0..4)
            .flat_map(|t| (0..1_600).map(move |i| line(t, i).trim_end().to_owned()))
            .collect();
        expected.sort();
        assert_eq!(found, expected);
        // Appending after a trim makes room again.
        lines.append(b"{\"late\":1}\n").expect("appended");
        lines.trim().expect("trimmed");
        let bytes = std::fs::read(lines_path(dir.path())).expect("read");
        assert_eq!(bytes.len(), total + 11);
        assert!(bytes.ends_with(b"}\n{\"late\":1}\n"));
    }

    #[test]
    fn a_halt_trims_the_file_and_dropping_it_too() {
        let dir = tempfile::tempdir().expect("temp dir");
        let lines = new_file(dir.path());
        lines.append(b"{\"a\":1}\n").expect("appended");
        let path = lines_path(dir.path());
        drop(lines);
        assert_eq!(std::fs::read(&path).expect("read"), b"{\"a\":1}\n");
        let file = File::options().read(true).write(true).open(&path).expect("opened");
        let lines = LineFile::open(&path, file, 8).expect("opened");
        lines.append(b"{\"b\":2}\n").expect("appended");
        AtHalt::halt(&*lines);
        assert_eq!(std::fs::read(&path).expect("read"), b"{\"a\":1}\n{\"b\":2}\n");
    }

    #[test]
    fn a_second_writer_of_a_file_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let lines = new_file(dir.path());
        let path = lines_path(dir.path());
        let again = File::options().read(true).write(true).open(&path).expect("opened");
        let refused = LineFile::open(&path, again, 0).expect_err("refused");
        assert!(refused.contains("being written by another ignite process"), "{refused}");
        lines.append(b"{\"a\":1}\n").expect("appended");
        drop(lines);
        assert_eq!(std::fs::read(&path).expect("read"), b"{\"a\":1}\n");
    }

    #[test]
    fn segments_double() {
        assert_eq!((segment(0), segment(FIRST - 1), segment(FIRST)), (0, 0, 1));
        assert_eq!((segment(2 * FIRST - 1), segment(2 * FIRST), segment(4 * FIRST)), (1, 2, 3));
        assert_eq!((start(1), start(2), start(3)), (FIRST, 2 * FIRST, 4 * FIRST));
    }

    /// A line as a dying writer may leave it: every byte, or some of them
    /// (the rest zero) and never the `\n`.
    fn written() -> impl Strategy<Value = (String, Option<Vec<bool>>)> {
        "[a-z{}:,\"0-9][a-z{}:,\" 0-9]{0,30}".prop_flat_map(|line| {
            let len = line.len();
            (Just(line), proptest::option::of(proptest::collection::vec(any::<bool>(), len)))
        })
    }

    proptest! {
        #[test]
        fn whole_lines_are_exactly_the_finished_ones(
            writes in proptest::collection::vec(written(), 0..12),
            zeros in 0usize..64,
        ) {
            let mut bytes = Vec::new();
            for (line, torn) in &writes {
                match torn {
                    None => {
                        bytes.extend(line.as_bytes());
                        bytes.push(b'\n');
                    }
                    Some(kept) => {
                        bytes.extend(line.bytes().zip(kept).map(|(b, &k)| if k { b } else { 0 }));
                        bytes.push(0);
                    }
                }
            }
            bytes.extend(std::iter::repeat_n(0, zeros));
            let finished: Vec<String> =
                writes.iter().filter(|(_, torn)| torn.is_none()).map(|(l, _)| l.clone()).collect();
            prop_assert_eq!(lines_of(&bytes), finished);
        }
    }
}
