//! An eval's finished samples, kept small: per sample only what the
//! statistics, the baseline and the reports' summaries need (row id and
//! line, sample number, scores, latency) stays in memory; the rest (inputs,
//! expected value, outputs, errors, usage) is a JSON line of a
//! [`SampleFile`], an unnamed temporary file read back one sample at a time
//! when a document or a page is written. A dataset of any size costs a few
//! dozen bytes a sample.

use std::fs::File;
use std::io::{self, BufWriter, Read as _, Seek as _, SeekFrom, Write as _};
use std::time::Duration;

use serde_json::{Map, Value};

/// One finished sample of one row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sample {
    /// The row's line in the dataset.
    pub line: usize,
    /// The row's `id`.
    pub id: String,
    /// The sample number (from 0).
    pub sample: u32,
    /// True when the run failed (its error is in the details).
    pub failed: bool,
    /// Each score's value in the eval's order; `None` where it could not
    /// be computed (every score of a failed run).
    pub scores: Vec<Option<f64>>,
    /// How long the run and its judges took.
    pub latency: Duration,
    /// Where its details are in the eval's [`SampleFile`] (offset, length).
    pub details: Option<(u64, u64)>,
}

impl Sample {
    /// Score `i` as a number: 0 when it failed (a failed run scores 0).
    #[must_use]
    pub(crate) fn value(&self, i: usize) -> f64 {
        self.scores.get(i).copied().flatten().unwrap_or(0.0)
    }
}

/// The details of an eval's samples: a JSON object a line, in the order
/// the samples finished, in a temporary file the system removes when it
/// is closed (or the process ends).
#[derive(Debug)]
pub(crate) struct SampleFile {
    writer: BufWriter<File>,
    /// Bytes written so far: where the next line starts.
    end: u64,
}

impl SampleFile {
    /// A new, empty file in the system's temporary folder.
    ///
    /// # Errors
    /// The file cannot be created.
    pub(crate) fn new() -> io::Result<Self> {
        Ok(Self { writer: BufWriter::new(tempfile::tempfile()?), end: 0 })
    }

    /// Appends `details`; where they are (offset, length).
    ///
    /// # Errors
    /// The file cannot be written.
    pub(crate) fn append(&mut self, details: &Map<String, Value>) -> io::Result<(u64, u64)> {
        let mut line = serde_json::to_vec(details)?;
        line.push(b'\n');
        self.writer.write_all(&line)?;
        let at = (self.end, line.len() as u64);
        self.end += at.1;
        Ok(at)
    }

    /// The details appended at `at`.
    ///
    /// # Errors
    /// The file cannot be read, or not what [`SampleFile::append`] wrote there.
    pub(crate) fn read(&mut self, (offset, len): (u64, u64)) -> io::Result<Map<String, Value>> {
        self.writer.flush()?;
        let file = self.writer.get_mut();
        file.seek(SeekFrom::Start(offset))?;
        let mut line = vec![0; usize::try_from(len).map_err(io::Error::other)?];
        let read = file.read_exact(&mut line);
        // Later lines go at the end again, whatever the read did.
        file.seek(SeekFrom::Start(self.end))?;
        read?;
        Ok(serde_json::from_slice(&line)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_read_back_in_any_order_between_appends() {
        let mut file = SampleFile::new().expect("a temporary file");
        let line = |n: u64| {
            let mut m = Map::new();
            m.insert("n".to_owned(), Value::from(n));
            m
        };
        let first = file.append(&line(1)).expect("appended");
        let second = file.append(&line(22)).expect("appended");
        assert_eq!(file.read(second).expect("read"), line(22));
        let third = file.append(&line(333)).expect("appended after a read");
        assert_eq!(file.read(first).expect("read"), line(1));
        assert_eq!(file.read(third).expect("read"), line(333));
    }
}
