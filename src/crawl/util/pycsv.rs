//! Python's `csv.reader` (the `excel` dialect with a delimiter and quote character of
//! choice; `doublequote`, not `strict`) over text read line by line as `StringIO`
//! gives it, and Scrapy's `csviter` on top: a dict per row keyed by the headers (the
//! first row unless given), rows of another length skipped with Scrapy's warning.
//!
//! The state machine is CPython's `Modules/_csv.c` `parse_process_char`, one
//! character at a time: linear in the text.

use serde_json::{Map, Value};

/// A row Python's reader refuses (`csv.Error`'s message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvError(pub String);

impl std::fmt::Display for CsvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "csv.Error: {}", self.0)
    }
}

impl std::error::Error for CsvError {}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    StartRecord,
    StartField,
    InField,
    InQuotedField,
    QuoteInQuotedField,
    EatCrnl,
}

/// Python's `csv.reader(io.StringIO(text), delimiter=..., quotechar=...)`.
#[derive(Debug)]
pub struct CsvReader<'a> {
    text: &'a str,
    rest: &'a str,
    delimiter: char,
    quotechar: char,
    /// `line_num`: the lines read so far.
    line_num: usize,
    failed: bool,
}

impl<'a> CsvReader<'a> {
    /// A reader of `text` (`,` and `"` are Python's defaults).
    pub fn new(text: &'a str, delimiter: char, quotechar: char) -> Self {
        Self {
            text,
            rest: text,
            delimiter,
            quotechar,
            line_num: 0,
            failed: false,
        }
    }

    /// The bytes of the text read so far (the rows returned end there).
    pub fn consumed(&self) -> usize {
        self.text.len() - self.rest.len()
    }

    /// The lines read so far (Python's `reader.line_num`).
    pub fn line_num(&self) -> usize {
        self.line_num
    }

    /// The next line as `StringIO` iterates: up to and with its `\n`.
    fn next_line(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let end = self.rest.find('\n').map_or(self.rest.len(), |i| i + 1);
        let (line, rest) = self.rest.split_at(end);
        self.rest = rest;
        self.line_num += 1;
        Some(line)
    }

    /// One character (`None`: the end of a line), as `parse_process_char`.
    fn process(
        &self,
        state: &mut State,
        c: Option<char>,
        field: &mut String,
        fields: &mut Vec<String>,
    ) -> Result<(), CsvError> {
        let newline = matches!(c, Some('\n' | '\r'));
        let mut s = *state;
        if s == State::StartRecord {
            match c {
                None => return Ok(()),
                Some('\n' | '\r') => {
                    *state = State::EatCrnl;
                    return Ok(());
                }
                _ => s = State::StartField,
            }
        }
        let save = |field: &mut String, fields: &mut Vec<String>| {
            fields.push(std::mem::take(field));
        };
        let end_of = |c: Option<char>| {
            if c.is_none() {
                State::StartRecord
            } else {
                State::EatCrnl
            }
        };
        *state = match s {
            State::StartField => {
                if c.is_none() || newline {
                    save(field, fields);
                    end_of(c)
                } else if c == Some(self.quotechar) {
                    State::InQuotedField
                } else if c == Some(self.delimiter) {
                    save(field, fields);
                    State::StartField
                } else {
                    field.extend(c);
                    State::InField
                }
            }
            State::InField => {
                if c.is_none() || newline {
                    save(field, fields);
                    end_of(c)
                } else if c == Some(self.delimiter) {
                    save(field, fields);
                    State::StartField
                } else {
                    field.extend(c);
                    State::InField
                }
            }
            State::InQuotedField => match c {
                None => State::InQuotedField,
                Some(q) if q == self.quotechar => State::QuoteInQuotedField,
                Some(ch) => {
                    field.push(ch);
                    State::InQuotedField
                }
            },
            State::QuoteInQuotedField => {
                if c == Some(self.quotechar) {
                    field.extend(c);
                    State::InQuotedField
                } else if c == Some(self.delimiter) {
                    save(field, fields);
                    State::StartField
                } else if c.is_none() || newline {
                    save(field, fields);
                    end_of(c)
                } else {
                    field.extend(c);
                    State::InField
                }
            }
            State::EatCrnl => match c {
                Some('\n' | '\r') => State::EatCrnl,
                None => State::StartRecord,
                Some(_) => {
                    return Err(CsvError(
                        "new-line character seen in unquoted field - do you need to open the \
                         file in universal-newline mode?"
                            .into(),
                    ));
                }
            },
            State::StartRecord => State::StartRecord,
        };
        Ok(())
    }
}

impl Iterator for CsvReader<'_> {
    type Item = Result<Vec<String>, CsvError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let mut state = State::StartRecord;
        let mut field = String::new();
        let mut fields = Vec::new();
        loop {
            let Some(line) = self.next_line() else {
                // The end of the text inside a field (a quote never closed): the row
                // as it is (Python's non-strict reader).
                if !field.is_empty() || state == State::InQuotedField {
                    fields.push(field);
                    return Some(Ok(fields));
                }
                return None;
            };
            for c in line.chars() {
                if let Err(e) = self.process(&mut state, Some(c), &mut field, &mut fields) {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
            if let Err(e) = self.process(&mut state, None, &mut field, &mut fields) {
                self.failed = true;
                return Some(Err(e));
            }
            if state == State::StartRecord {
                return Some(Ok(fields));
            }
        }
    }
}

/// Scrapy's `csviter(text, delimiter, headers, quotechar=...)`: each row as a map
/// from header to value (a repeated header keeps its first place and its last
/// value); a row of another length than the headers is skipped with Scrapy's
/// warning (`skipped` gets its line number).
///
/// # Errors
///
/// The reader's error, after the rows before it.
pub fn csviter(
    text: &str,
    delimiter: Option<char>,
    headers: Option<&[String]>,
    quotechar: Option<char>,
    mut row: impl FnMut(Map<String, Value>),
    mut skipped: impl FnMut(usize),
) -> Result<(), CsvError> {
    let mut reader = CsvReader::new(text, delimiter.unwrap_or(','), quotechar.unwrap_or('"'));
    let headers: Vec<String> = match headers {
        Some(h) if !h.is_empty() => h.to_vec(),
        _ => match reader.next() {
            None => return Ok(()),
            Some(first) => first?,
        },
    };
    while let Some(fields) = reader.next() {
        let fields = fields?;
        if fields.len() != headers.len() {
            log::warn!(
                "ignoring row {} (length: {}, should be: {})",
                reader.line_num(),
                fields.len(),
                headers.len()
            );
            skipped(reader.line_num());
            continue;
        }
        let mut map = Map::new();
        for (h, v) in headers.iter().zip(fields) {
            map.insert(h.clone(), Value::String(v));
        }
        row(map);
    }
    Ok(())
}
