//! [`LineFile`]: the file of a recording or journal, to which many threads
//! append lines at once, each line whole or absent however the process dies.
//!
//! The file is open for appending and taken by this process alone
//! ([`exclusive`]). An append writes its line, `\n` included, with one
//! `write` under a lock, inside [`crate::shutdown::whole`] (a halt on
//! SIGINT or SIGTERM waits for it, and blocks later ones). A line is in the
//! page cache as soon as its `write` returns: a process killed at any point
//! (SIGKILL too) leaves every finished line in the file, and at most the
//! start of the line being written, last and without its `\n`; the kernel
//! writes the file out as for any other write. A write that fails (a full
//! disk) is cut off again, so the next line starts clean (and when it
//! cannot be, no line follows it).
//!
//! [`whole_lines`] reads a file back: every line that got its `\n`,
//! nothing else. It also reads what the memory-mapped files of earlier
//! versions left when killed: zeros (room not used yet), and lines cut
//! short (in part or not at all, never their `\n`) between whole ones.
//! JSON has no raw zero byte and no raw newline, so both are unambiguous.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

/// An append-only file of lines shared by threads (see the module docs).
#[derive(Debug)]
pub(super) struct LineFile {
    path: PathBuf,
    file: File,
    /// The end of the whole lines, held while a line is written; `None`
    /// once a failed write could not be cut off (no line is written after
    /// it, so that it stays last, where reading skips it).
    end: Mutex<Option<u64>>,
}

impl LineFile {
    /// Appends to `file` (open for appending), whose first `len` bytes are
    /// kept: what follows them is cut off.
    ///
    /// # Errors
    /// Another process writes the file, or it cannot be cut.
    pub(super) fn open(path: &Path, file: File, len: u64) -> Result<Self, String> {
        exclusive(&file, path)?;
        let lines = Self { path: path.to_owned(), file, end: Mutex::new(Some(len)) };
        lines.file.set_len(len).map_err(|e| lines.error(&e))?;
        Ok(lines)
    }

    /// Appends `value` as one line of JSON.
    ///
    /// # Errors
    /// `value` cannot be written as JSON, or the write failed (a full disk).
    pub(super) fn append_json(&self, value: &impl Serialize) -> Result<(), String> {
        let mut line = Vec::new();
        json_line(value, &mut line).map_err(|e| self.error(&e))?;
        crate::shutdown::whole(|| {
            let mut end = crate::sync::lock(&self.end);
            let Some(whole) = *end else {
                return Err(self.error(&"an earlier line could not be written"));
            };
            if let Err(e) = (&self.file).write_all(&line) {
                // What the failed write left would run into the next line.
                if self.file.set_len(whole).is_err() {
                    *end = None;
                }
                return Err(self.error(&e));
            }
            *end = Some(whole + line.len() as u64);
            Ok(())
        })
    }

    fn error(&self, error: &dyn std::fmt::Display) -> String {
        format!("cannot write `{}`: {error}", self.path.display())
    }
}

/// Takes `file` for this process alone: an advisory lock (`flock`) that
/// goes when the file is closed or the process ends, however it ends. Two
/// processes appending to one file would interleave their runs' lines, and
/// `--resume` cutting a file another process appends to would lose lines.
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

/// Appends `value` as JSON and a `\n` to `line`.
///
/// # Errors
/// `value` cannot be written as JSON.
pub(super) fn json_line(value: &impl Serialize, line: &mut Vec<u8>) -> serde_json::Result<()> {
    serde_json::to_writer(&mut *line, value)?;
    line.push(b'\n');
    Ok(())
}

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
    use serde_json::json;

    fn new_file(dir: &Path) -> LineFile {
        let path = lines_path(dir);
        let file = File::options().append(true).create(true).open(&path).expect("created");
        LineFile::open(&path, file, 0).expect("opened")
    }

    fn lines_path(dir: &Path) -> PathBuf {
        dir.join("lines.jsonl")
    }

    fn lines_of(bytes: &[u8]) -> Vec<String> {
        whole_lines(bytes).map(|(_, l)| String::from_utf8_lossy(l).into_owned()).collect()
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
    fn lines_from_many_threads_are_whole_and_nothing_else() {
        let dir = tempfile::tempdir().expect("temp dir");
        let lines = new_file(dir.path());
        let line = |t: usize, i: usize| json!({"t": t, "i": i, "pad": "x".repeat(990)});
        std::thread::scope(|s| {
            for t in 0..4 {
                let lines = &lines;
                s.spawn(move || {
                    for i in 0..400 {
                        lines.append_json(&line(t, i)).expect("appended");
                    }
                });
            }
        });
        let bytes = std::fs::read(lines_path(dir.path())).expect("read");
        let mut expected: Vec<String> =
            (0..4).flat_map(|t| (0..400).map(move |i| line(t, i).to_string())).collect();
        assert_eq!(bytes.len(), expected.iter().map(|l| l.len() + 1).sum::<usize>());
        let mut found = lines_of(&bytes);
        found.sort();
        expected.sort();
        assert_eq!(found, expected);
    }

    #[test]
    fn a_reopened_file_keeps_its_first_bytes_and_appends_after_them() {
        let dir = tempfile::tempdir().expect("temp dir");
        let lines = new_file(dir.path());
        lines.append_json(&json!({"a": 1})).expect("appended");
        drop(lines);
        // A kill cut the next line short.
        let path = lines_path(dir.path());
        let mut file = File::options().append(true).open(&path).expect("opened");
        file.write_all(b"{\"b\":").expect("written");
        assert_eq!(lines_of(&std::fs::read(&path).expect("read")), ["{\"a\":1}"]);
        let lines = LineFile::open(&path, file, 8).expect("opened");
        lines.append_json(&json!({"c": 3})).expect("appended");
        assert_eq!(std::fs::read(&path).expect("read"), b"{\"a\":1}\n{\"c\":3}\n");
    }

    #[test]
    fn a_second_writer_of_a_file_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let lines = new_file(dir.path());
        let path = lines_path(dir.path());
        let again = File::options().append(true).open(&path).expect("opened");
        let refused = LineFile::open(&path, again, 0).expect_err("refused");
        assert!(refused.contains("being written by another ignite process"), "{refused}");
        lines.append_json(&json!({"a": 1})).expect("appended");
        drop(lines);
        assert_eq!(std::fs::read(&path).expect("read"), b"{\"a\":1}\n");
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
