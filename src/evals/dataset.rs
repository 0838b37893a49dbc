//! Datasets: JSON Lines files of rows `{"id": .., "inputs": {..},
//! "expected": ..}`, read a line at a time (a dataset is never loaded
//! whole).
//!
//! [`check`] reads the whole file once before anything runs and reports
//! every row that cannot run, by line number: a line that is not a JSON
//! object, a missing or repeated `id`, `inputs` that do not fit the
//! contract's inputs. [`Rows`] then reads it again, one row at a time.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fs::File;
use std::io::{BufRead, BufReader, Lines};
use std::path::Path;

use serde_json::{Map, Value};

use crate::ir::Param;
use crate::runtime::InputsFrom;
use crate::source::Span;
use crate::value::{Fields, Val};

/// One row of a dataset.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// Its line number (from 1).
    pub line: usize,
    /// Its `id` as text (a number's digits, a string's text).
    pub id: String,
    /// The contract's inputs.
    pub inputs: Map<String, Value>,
    /// What the answer should be (`null` when absent).
    pub expected: Value,
}

/// A row that cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// Its line number (from 1).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Why a dataset cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DatasetError {
    /// The file cannot be read.
    Io(String),
    /// The file has no rows.
    Empty,
    /// Rows that cannot run, every one.
    Rows(Vec<Problem>),
}

/// The rows of the dataset at `path`, one at a time.
pub(crate) struct Rows {
    lines: Lines<BufReader<File>>,
    line: usize,
}

impl Rows {
    /// Opens the dataset at `path`.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub(crate) fn open(path: &Path) -> Result<Self, String> {
        let file = File::open(path)
            .map_err(|e| format!("cannot read dataset `{}`: {e}", path.display()))?;
        Ok(Self { lines: BufReader::new(file).lines(), line: 0 })
    }
}

impl Iterator for Rows {
    /// A row, or the problem of its line.
    type Item = Result<Row, Problem>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let text = self.lines.next()?;
            self.line += 1;
            let line = self.line;
            let text = match text {
                Ok(text) => text,
                Err(e) => return Some(Err(Problem { line, message: format!("cannot read: {e}") })),
            };
            if text.trim().is_empty() {
                continue;
            }
            return Some(parse(line, &text).map_err(|message| Problem { line, message }));
        }
    }
}

/// The row on line `line`.
fn parse(line: usize, text: &str) -> Result<Row, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not a JSON object: {e}"))?;
    let Value::Object(mut row) = value else {
        return Err(format!("a row is a JSON object, not {}", crate::ir::value_kind(&value)));
    };
    let id = match row.remove("id") {
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => {
            return Err(format!(
                "`id` is a string or a number, not {}",
                crate::ir::value_kind(&other)
            ));
        }
        None => return Err("no `id`: every row needs one (baselines pair rows by it)".to_owned()),
    };
    let inputs = match row.remove("inputs") {
        Some(Value::Object(inputs)) => inputs,
        Some(other) => {
            return Err(format!("`inputs` is an object, not {}", crate::ir::value_kind(&other)));
        }
        None => Map::new(),
    };
    let expected = row.remove("expected").unwrap_or(Value::Null);
    if let Some(key) = row.keys().next() {
        return Err(format!("unknown field `{key}`: a row has `id`, `inputs` and `expected`"));
    }
    Ok(Row { line, id, inputs, expected })
}

/// Reads the whole dataset at `path` once and reports every row that
/// cannot run with `params`; the number of rows when all can.
///
/// # Errors
/// The file cannot be read, has no rows, or has rows that cannot run.
pub(crate) fn check(path: &Path, params: &[Param], owner: Span) -> Result<usize, DatasetError> {
    let rows = Rows::open(path).map_err(DatasetError::Io)?;
    let mut problems = Vec::new();
    // Each id's first line.
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut count = 0;
    for row in rows {
        count += 1;
        let row = match row {
            Ok(row) => row,
            Err(problem) => {
                problems.push(problem);
                continue;
            }
        };
        match ids.entry(row.id.clone()) {
            Entry::Occupied(first) => problems.push(Problem {
                line: row.line,
                message: format!("id `{}` is also the id of line {}", row.id, first.get()),
            }),
            Entry::Vacant(slot) => {
                slot.insert(row.line);
            }
        }
        let fields: Fields = row.inputs.into_iter().map(|(k, v)| (k, Val::from(v))).collect();
        if let Err(found) =
            crate::runtime::inputs::bind(params, &fields, owner, Some(InputsFrom::Row))
        {
            problems.extend(
                found
                    .into_iter()
                    .map(|p| Problem { line: row.line, message: format!("inputs: {}", p.message) }),
            );
        }
    }
    match (count, problems.is_empty()) {
        (0, _) => Err(DatasetError::Empty),
        (_, true) => Ok(count),
        (_, false) => Err(DatasetError::Rows(problems)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOWHERE: Span = Span { file: crate::source::FileId(0), start: 0, end: 0 };

    fn text_param(name: &str) -> Param {
        Param {
            name: name.to_owned(),
            ty: crate::ir::Type::new(crate::ir::TypeKind::String),
            default: None,
            description: None,
            span: NOWHERE,
        }
    }

    fn dataset(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        std::io::Write::write_all(&mut file, text.as_bytes()).expect("written");
        file
    }

    #[test]
    fn every_row_that_cannot_run_is_reported_by_line() {
        let file = dataset(concat!(
            "{\"id\": 1, \"inputs\": {\"text\": \"a\"}}\n",
            "\n",
            "{\"id\": 1, \"inputs\": {\"text\": \"b\"}}\n",
            "{\"inputs\": {\"text\": \"c\"}}\n",
            "[1, 2]\n",
            "{\"id\": \"x\", \"inputs\": {\"text\": 5, \"extra\": true}}\n",
            "{\"id\": \"y\", \"inputs\": {\"text\": \"ok\"}, \"expect\": 1}\n",
            "not json\n",
        ));
        let Err(DatasetError::Rows(problems)) = check(file.path(), &[text_param("text")], NOWHERE)
        else {
            panic!("problems expected")
        };
        let lines: Vec<(usize, &str)> =
            problems.iter().map(|p| (p.line, p.message.as_str())).collect();
        assert_eq!(lines[0], (3, "id `1` is also the id of line 1"));
        assert!(lines[1].0 == 4 && lines[1].1.contains("no `id`"), "{lines:?}");
        assert!(lines[2].0 == 5 && lines[2].1.contains("not array"), "{lines:?}");
        assert!(lines.iter().any(|(l, m)| *l == 6 && m.contains("unknown input `extra`")));
        assert!(lines.iter().any(|(l, m)| *l == 6 && m.contains("`text`")));
        assert!(lines.iter().any(|(l, m)| *l == 7 && m.contains("unknown field `expect`")));
        assert!(lines.iter().any(|(l, m)| *l == 8 && m.contains("not a JSON object")));
    }

    #[test]
    fn an_empty_dataset_is_its_own_error() {
        let file = dataset("\n\n");
        assert_eq!(check(file.path(), &[], NOWHERE), Err(DatasetError::Empty));
    }

    #[test]
    fn rows_are_read_one_line_at_a_time() {
        let file =
            dataset("{\"id\": \"a\", \"inputs\": {}, \"expected\": {\"n\": 1}}\n{\"id\": 2}\n");
        let rows: Vec<Row> =
            Rows::open(file.path()).expect("opens").map(|r| r.expect("row")).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].line, rows[0].id.as_str()), (1, "a"));
        assert_eq!(rows[0].expected, serde_json::json!({"n": 1}));
        assert_eq!((rows[1].line, rows[1].id.as_str(), &rows[1].expected), (2, "2", &Value::Null));
    }
}
