//! Makers of drnbench pattern files: `extract` pulls search terms out of Groonga select results (as
//! drnbench-extract-searchterms does) and `generate` turns terms into a JSON pattern file (as
//! drnbench-generate-select-patterns does), optionally sized for an expected cache hit rate.

use std::collections::{BTreeSet, HashSet};
use std::fmt::{self, Write as _};
use std::io::{BufReader, BufWriter, Chain, Cursor, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::error::CliError;
pub use generate::*;
use walk::*;

/// What `hakaru patterns extract` was asked to do.
#[derive(Clone, Debug, Default)]
pub struct ExtractOptions {
    /// `--column N`: the column of each Groonga record to print (drnbench's `--column-index`, default 0); with
    /// `--pointer`, the item taken from elements that are arrays.
    pub column: usize,
    /// `--pointer P`: read any JSON instead of Groonga results. P is a JSON pointer to an array whose elements are
    /// the terms; a `*` segment means "every element here", so `/hits/*/title` takes the title of every hit.
    pub pointer: Option<String>,
    /// `--escape`: percent-encode every term (all but `A-Z a-z 0-9 - . _ ~`).
    pub escape: bool,
    /// Input files, read in order; empty (or `-`) means stdin.
    pub files: Vec<PathBuf>,
}

/// drnbench-extract-searchterms: prints one term per line and returns how many lines it wrote.
///
/// Input: Groonga select results (`[[status, start, elapsed], [[[hits], [[name, type], ...], record, ...]]]`),
/// bare result sets (`[[hits], [[name, type], ...], record, ...]`) or command-version-3 results
/// (`{"header": ..., "body": {"columns": ..., "records": ...}}`), several documents per stream allowed. Only the
/// first result set is read (the others are drilldowns). Strings are printed as they are, numbers and booleans as
/// their JSON text, null as an empty line, and a vector value as one line per element; nothing is deduplicated.
/// Without `--escape` a line break inside a term becomes a space so that every term stays on one line.
///
/// Inputs are streamed: a select result of millions of records is read one record at a time and each term is
/// written as soon as its record is read, so memory does not grow with the input. The terms written before a
/// mistake in the input are therefore already out when the error is returned.
pub fn extract(opts: &ExtractOptions, stdin: &mut dyn Read, out: &mut dyn Write) -> Result<usize, CliError> {
    if let Some(p) = &opts.pointer
        && !p.is_empty()
        && !p.starts_with('/')
    {
        return Err(CliError::new(format!("--pointer '{p}': a JSON pointer starts with '/'; write --pointer /{p}")));
    }
    let segments = opts.pointer.as_deref().map(pointer_segments);
    let stdin_only = [PathBuf::from("-")];
    let files: &[PathBuf] = if opts.files.is_empty() { &stdin_only } else { &opts.files };
    let mut out = BufWriter::new(out);
    let mut sink = Sink { column: opts.column, escape: opts.escape, out: &mut out, written: 0, items: 0, stop: None };
    for file in files {
        let (source, raw): (Source, Box<dyn Read + '_>) = if file.as_os_str() == "-" {
            (Source { name: "stdin".into(), stdin: true }, Box::new(&mut *stdin))
        } else {
            let source = Source { name: file.display().to_string(), stdin: false };
            let raw = std::fs::File::open(file).map_err(|e| source.read_failed(e))?;
            (source, Box::new(raw))
        };
        let input = without_bom(raw).map_err(|e| source.read_failed(e))?;
        let pointer = opts.pointer.as_deref().zip(segments.as_deref());
        extract_input(&source, input, pointer, &mut sink)?;
    }
    let written = sink.written;
    out.flush().map_err(write_failed)?;
    Ok(written)
}

fn write_failed(e: std::io::Error) -> CliError {
    CliError::runtime(format!("cannot write the terms: {e}"))
}

/// One input of `extract`: its name in messages, and whether it is stdin (whose read errors are not the user's).
struct Source {
    name: String,
    stdin: bool,
}

impl Source {
    fn read_failed(&self, e: std::io::Error) -> CliError {
        if self.stdin {
            CliError::runtime(format!("stdin: cannot read: {e}"))
        } else {
            CliError::new(format!("{}: cannot read: {e}; give an existing file, or - for stdin", self.name))
        }
    }
}

/// An input as serde_json reads it: what came before the byte order mark check, then the rest, buffered.
type Input<'a> = BufReader<Chain<Cursor<Vec<u8>>, Box<dyn Read + 'a>>>;

/// The input without a leading UTF-8 byte order mark (editors on Windows write one; it is no part of the JSON,
/// and columns on the first line are counted after it). The first three bytes are read until there are three
/// (a pipe may deliver fewer at first) and handed back in front when they are not the mark.
/// The buffer sits on top so that serde_json, which reads a byte at a time, takes them from memory.
fn without_bom<'a>(mut raw: Box<dyn Read + 'a>) -> std::io::Result<Input<'a>> {
    let mut head = [0u8; 3];
    let mut n = 0;
    while n < head.len() {
        match raw.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let head = if head[..n] == *b"\xEF\xBB\xBF" { Vec::new() } else { head[..n].to_vec() };
    Ok(BufReader::with_capacity(64 * 1024, Cursor::new(head).chain(raw)))
}

/// The terms of every JSON document in one input, written as they are read.
fn extract_input(
    source: &Source,
    input: impl Read,
    pointer: Option<(&str, &[String])>,
    sink: &mut Sink,
) -> Result<(), CliError> {
    let mut de = serde_json::Deserializer::from_reader(input);
    let mut documents = 0;
    loop {
        // `end` succeeds when only whitespace is left; otherwise it stops at the first byte of the next document
        // and its error carries that byte's line and column, where a mistake in the document's shape is reported.
        let (line, column) = match de.end() {
            Ok(()) => break,
            Err(e) if e.is_io() => return Err(source.read_failed(e.into())),
            Err(e) => (e.line(), e.column()),
        };
        documents += 1;
        sink.items = 0;
        let done = match pointer {
            Some((text, segments)) => Walk { sink: &mut *sink, pointer: text, segments, depth: 0 }.deserialize(&mut de),
            None => SelectResult { sink: &mut *sink }.deserialize(&mut de),
        };
        if let Err(e) = done {
            return Err(match sink.stop.take() {
                Some(Stop::Shape(message)) => CliError::new(format!("{}:{line}:{column}: {message}", source.name)),
                Some(Stop::Write(e)) => write_failed(e),
                None if e.is_io() => source.read_failed(e.into()),
                None => syntax_error(&source.name, &e, pointer.is_some()),
            });
        }
    }
    if documents == 0 {
        return Err(CliError::new(format!(
            "{}: no JSON in it; give the output of a Groonga select, e.g. \
             curl 'http://HOST:10041/d/select?table=Pages&output_columns=title&limit=1000'",
            source.name
        )));
    }
    Ok(())
}

fn syntax_error(name: &str, e: &serde_json::Error, pointer: bool) -> CliError {
    let message = e.to_string();
    // serde_json appends " at line L column C"; the position goes first, as compilers put it.
    let message = message.split(" at line ").next().unwrap_or(&message);
    let fix = if pointer {
        "give a JSON document"
    } else {
        "give the JSON output of a Groonga select (or use --pointer for other JSON)"
    };
    // At the end of the input serde_json says column 0; columns are counted from 1.
    CliError::new(format!("{name}:{}:{}: not valid JSON: {message}; {fix}", e.line(), e.column().max(1)))
}

/// 1-based line and column (in bytes, as serde_json counts) of a byte offset.
fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = before.len() - before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// Where the terms go while the visitors below walk a document, and why a document was given up when that is
/// not serde_json's to say.
struct Sink<'o> {
    /// `--column`.
    column: usize,
    /// `--escape`.
    escape: bool,
    out: &'o mut dyn Write,
    /// Lines written so far, over all inputs.
    written: usize,
    /// Elements a pointer has named so far in this document (messages count them from 0).
    items: usize,
    /// Set when a visitor gives up for a reason of its own; the error serde_json then returns only unwinds.
    stop: Option<Stop>,
}

enum Stop {
    /// The document is not of the expected shape: reported at the document's start, with this message.
    Shape(String),
    /// The terms could not be written.
    Write(std::io::Error),
}

impl Sink<'_> {
    /// Gives up on the document: `message` is reported at its start (line and column of its first byte).
    fn refuse<E: de::Error>(&mut self, message: impl Into<String>) -> E {
        self.stop = Some(Stop::Shape(message.into()));
        E::custom("the document was refused")
    }

    /// Writes the term(s) of one value at once: a vector value gives one term per element (as drnbench's `puts`
    /// does).
    fn emit<E: de::Error>(&mut self, value: &Value) -> Result<(), E> {
        let written = write_terms(value, self.escape, &mut *self.out);
        match written {
            Ok(n) => {
                self.written += n;
                Ok(())
            }
            Err(e) => {
                self.stop = Some(Stop::Write(e));
                Err(E::custom("the terms could not be written"))
            }
        }
    }

    /// The message for a record that has no `--column`: it has `n` columns, named by `names` where known.
    fn beyond(&self, names: &[String], n: usize) -> String {
        format!(
            "--column {} is beyond the records, which have {}; {}",
            self.column,
            describe_columns(names, n),
            column_fix(n)
        )
    }

    /// Handles one element a pointer names: an array gives its `--column` item, an object is refused (the
    /// pointer should name its field), anything else is a term.
    fn pointer_item<E: de::Error>(&mut self, pointer: &str, item: Value) -> Result<(), E> {
        let i = self.items;
        self.items += 1;
        match item {
            Value::Array(items) => {
                let Some(value) = items.get(self.column) else {
                    let message = format!(
                        "--column {}: element {i} of --pointer {pointer} has {} item{}; {}",
                        self.column,
                        items.len(),
                        if items.len() == 1 { "" } else { "s" },
                        match items.len() {
                            0 => "point at arrays that are not empty".into(),
                            1 => "use --column 0".into(),
                            n => format!("use --column 0 to {}", n - 1),
                        }
                    );
                    return Err(self.refuse(message));
                };
                self.emit(value)
            }
            Value::Object(fields) => {
                let base = pointer.trim_end_matches("/*");
                let example = fields.keys().next().map_or("name", String::as_str);
                let message = format!(
                    "element {i} of --pointer {pointer} is an object, not a term; \
                     name its field, e.g. --pointer '{base}/*/{}'",
                    example.replace('~', "~0").replace('/', "~1")
                );
                Err(self.refuse(message))
            }
            other => self.emit(&other),
        }
    }
}

/// "2 columns: 0 _id, 1 title" (names from the result set's column list, where it has them).
fn describe_columns(names: &[String], n: usize) -> String {
    let list: Vec<String> = (0..n)
        .map(|i| match names.get(i) {
            Some(name) => format!("{i} {name}"),
            None => i.to_string(),
        })
        .collect();
    let plural = if n == 1 { "" } else { "s" };
    format!("{n} column{plural}: {}", list.join(", "))
}

fn column_fix(n: usize) -> String {
    match n {
        0 => "select some columns (output_columns=title)".into(),
        1 => "use --column 0".into(),
        n => format!("use --column 0 to {}", n - 1),
    }
}

const SHAPE: &str = "not a Groonga select result (expected [[status, start, elapsed], \
                     [[[hits], [[name, type], ...], record, ...]]]); use --pointer for other JSON";

const NO_COLUMN_LIST: &str = "a result set without its column list ([[hits], [[name, type], ...], record, ...]); \
                              is this a Groonga select result?";

/// The visitor methods of values that are neither arrays nor objects: each hands the kind of value found (as
/// [`kind`] names it) to the visitor's `other`. serde's defaults would fail with a type error that reads as a
/// syntax error; these let every visitor say what it wanted instead.
macro_rules! scalars_to_other {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            self.other("a boolean")
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            self.other("a number")
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            self.other("a number")
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            self.other("a number")
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            self.other("a string")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            self.other("null")
        }
    };
}

/// One part of a select result read by its own visitor that holds the sink: the part's struct, its seed (any
/// value is handed to the visitor), its `other` (anything but the part is not a select result) and the visitor
/// around the methods given, with what it expects and [`scalars_to_other`].
macro_rules! select_part {
    ($(#[$doc:meta])* $part:ident -> $value:ty, $expecting:literal; $($methods:tt)*) => {
        $(#[$doc])*
        struct $part<'s, 'o> {
            sink: &'s mut Sink<'o>,
        }

        impl<'de> DeserializeSeed<'de> for $part<'_, '_> {
            type Value = $value;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<$value, D::Error> {
                d.deserialize_any(self)
            }
        }

        impl $part<'_, '_> {
            fn other<E: de::Error>(self, _kind: &str) -> Result<$value, E> {
                Err(self.sink.refuse(SHAPE))
            }
        }

        impl<'de> Visitor<'de> for $part<'_, '_> {
            type Value = $value;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str($expecting)
            }

            scalars_to_other!();

            $($methods)*
        }
    };
}

/// Skips what is left of an array.
fn drain<'de, A: SeqAccess<'de>>(seq: &mut A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Streams the records of a result set from `seq`, writing each one's term as it is read. A record too short for
/// `--column` stops the stream: with `names` (the column list was read) it is refused here; without (a version 3
/// body whose "columns" come after its "records") the rest is skipped and its width returned, so that the
/// message can name the columns once they have been read.
fn stream_records<'de, A: SeqAccess<'de>>(
    sink: &mut Sink,
    seq: &mut A,
    names: Option<&[String]>,
) -> Result<Option<usize>, A::Error> {
    let mut i = 0;
    while let Some(record) = seq.next_element::<Value>()? {
        i += 1;
        let Value::Array(record) = record else {
            let message = format!(
                "record {i} is {}, not an array of column values; is this a Groonga select result?",
                kind(&record)
            );
            return Err(sink.refuse(message));
        };
        match (record.get(sink.column), names) {
            (Some(value), _) => sink.emit(value)?,
            (None, Some(names)) => {
                let message = sink.beyond(names, record.len());
                return Err(sink.refuse(message));
            }
            (None, None) => {
                drain(seq)?;
                return Ok(Some(record.len()));
            }
        }
    }
    Ok(None)
}

select_part! {
    /// One select result in any of its forms. The header (`[status, ...]` or `[hits]`) and the column list are read
    /// whole, being small; records one at a time; drilldowns and everything else are skipped unread.
    SelectResult -> (), "a Groonga select result";

    fn visit_seq<A: SeqAccess<'de>>(self, mut top: A) -> Result<(), A::Error> {
        let Some(Value::Array(first)) = top.next_element::<Value>()? else {
            return Err(self.sink.refuse(SHAPE));
        };
        // A bare result set starts with [hit_count]; a whole response with [status, start, elapsed, ...].
        if first.len() == 1 && first[0].is_number() {
            result_set_rest(self.sink, &mut top)?;
            return drain(&mut top);
        }
        if !first.first().is_some_and(Value::is_number) {
            return Err(self.sink.refuse(SHAPE));
        }
        let status = first[0].as_i64().unwrap_or(0);
        if status != 0 {
            let message = first.get(3).and_then(Value::as_str).unwrap_or("no message");
            return Err(self.sink.refuse(format!(
                "Groonga returned error {status} ({message}); fix the select and fetch the result again"
            )));
        }
        if top.next_element_seed(Body { sink: &mut *self.sink })?.is_none() {
            return Err(self.sink.refuse(SHAPE));
        }
        drain(&mut top)
    }

    /// Groonga's command_version=3: `{"header": {"return_code": 0, ...}, "body": {"columns", "records"}}`.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (mut header_checked, mut body_read, mut early_body) = (false, false, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "header" => {
                    let header: Value = map.next_value()?;
                    v3_header(&header).map_err(|message| self.sink.refuse(message))?;
                    header_checked = true;
                }
                "body" if header_checked => {
                    map.next_value_seed(V3Body { sink: &mut *self.sink })?;
                    body_read = true;
                }
                // Groonga writes the header first. A body before it is kept whole (bounded by this one document)
                // until the header, if any, has been checked: a failed select's error comes first and none of
                // its body is printed.
                "body" => early_body = Some(map.next_value::<Value>()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if let Some(body) = early_body {
            // Only a refusal (already in the sink) or a write error can fail here: the value is valid JSON.
            V3Body { sink: &mut *self.sink }.deserialize(body).map_err(de::Error::custom)?;
            body_read = true;
        }
        if !body_read {
            return Err(self.sink.refuse(SHAPE));
        }
        Ok(())
    }
}

/// A version 3 header's verdict: an error unless `return_code` is 0 (or absent).
fn v3_header(header: &Value) -> Result<(), String> {
    let code = header.get("return_code").and_then(Value::as_i64).unwrap_or(0);
    if code == 0 {
        return Ok(());
    }
    let message = header.pointer("/error/message").and_then(Value::as_str).unwrap_or("no message");
    Err(format!("Groonga returned error {code} ({message}); fix the select and fetch the result again"))
}

/// The rest of a result set once its first element (the hit count) has been read: the column list, then the
/// records.
fn result_set_rest<'de, A: SeqAccess<'de>>(sink: &mut Sink, set: &mut A) -> Result<(), A::Error> {
    let Some(Value::Array(columns)) = set.next_element::<Value>()? else {
        return Err(sink.refuse(NO_COLUMN_LIST));
    };
    let names: Vec<String> = columns
        .iter()
        .map(|c| match c {
            Value::Array(c) => c.first().and_then(Value::as_str).unwrap_or("?").into(),
            _ => "?".into(),
        })
        .collect();
    stream_records(sink, set, Some(&names))?;
    Ok(())
}

select_part! {
    /// The body of a whole select response, `[result_set, drilldown, ...]`: the first result set is read, the
    /// drilldowns skipped.
    Body -> (), "the body of a Groonga select result";

    fn visit_seq<A: SeqAccess<'de>>(self, mut body: A) -> Result<(), A::Error> {
        if body.next_element_seed(ResultSet { sink: &mut *self.sink })?.is_none() {
            return Err(self.sink.refuse(SHAPE));
        }
        drain(&mut body)
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        self.other("an object")
    }
}

select_part! {
    /// `[[hits], [[name, type], ...], record, ...]` inside a whole response.
    ResultSet -> (), "a Groonga result set";

    fn visit_seq<A: SeqAccess<'de>>(self, mut set: A) -> Result<(), A::Error> {
        // The hit count is not needed.
        if set.next_element::<IgnoredAny>()?.is_none() {
            return Err(self.sink.refuse(NO_COLUMN_LIST));
        }
        result_set_rest(self.sink, &mut set)
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        self.other("an object")
    }
}

select_part! {
    /// A version 3 body, `{"n_hits": .., "columns": [{"name": .., "type": ..}, ...], "records": [record, ...]}`.
    V3Body -> (), "the body of a Groonga select result";

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        self.other("an array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (mut names, mut records_read, mut short): (Option<Vec<String>>, _, _) = (None, false, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "columns" => {
                    let columns: Value = map.next_value()?;
                    let list = columns.as_array().map(|cols| {
                        cols.iter().map(|c| c.get("name").and_then(Value::as_str).unwrap_or("?").into()).collect()
                    });
                    names = Some(list.unwrap_or_default());
                }
                "records" => {
                    short = map.next_value_seed(V3Records { sink: &mut *self.sink, names: names.as_deref() })?;
                    records_read = true;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !records_read {
            return Err(self.sink.refuse(SHAPE));
        }
        if let Some(n) = short {
            let message = self.sink.beyond(&names.unwrap_or_default(), n);
            return Err(self.sink.refuse(message));
        }
        Ok(())
    }
}

/// A version 3 body's "records"; see [`stream_records`] for what it returns.
struct V3Records<'s, 'o, 'n> {
    sink: &'s mut Sink<'o>,
    names: Option<&'n [String]>,
}

impl<'de> DeserializeSeed<'de> for V3Records<'_, '_, '_> {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_any(self)
    }
}

impl V3Records<'_, '_, '_> {
    fn other<E: de::Error>(self, _kind: &str) -> Result<Option<usize>, E> {
        Err(self.sink.refuse(SHAPE))
    }
}

impl<'de> Visitor<'de> for V3Records<'_, '_, '_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of records")
    }

    scalars_to_other!();

    fn visit_seq<A: SeqAccess<'de>>(self, mut records: A) -> Result<Option<usize>, A::Error> {
        stream_records(self.sink, &mut records, self.names)
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Option<usize>, A::Error> {
        self.other("an object")
    }
}

/// Writes the term(s) of one value, one a line, and returns how many: a vector value gives one term per element
/// (as drnbench's `puts` does).
fn write_terms(value: &Value, escape: bool, out: &mut dyn Write) -> std::io::Result<usize> {
    match value {
        Value::Array(items) => {
            for item in items {
                let text = match item {
                    Value::Array(_) | Value::Object(_) => item.to_string(),
                    scalar => scalar_text(scalar),
                };
                writeln!(out, "{}", finish_term(text, escape))?;
            }
            Ok(items.len())
        }
        Value::Object(_) => {
            writeln!(out, "{}", finish_term(value.to_string(), escape))?;
            Ok(1)
        }
        scalar => {
            writeln!(out, "{}", finish_term(scalar_text(scalar), escape))?;
            Ok(1)
        }
    }
}

/// Reads a whole input; `-` is stdin. Returns the name to use in messages and the bytes.
fn read_input(file: &Path, stdin: &mut dyn Read) -> Result<(String, Vec<u8>), CliError> {
    let mut bytes = Vec::new();
    if file.as_os_str() == "-" {
        // Standard input has no size to look at first: read at most one byte more than the cap.
        stdin
            .take(crate::base::bounded::TERMS + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| CliError::runtime(format!("stdin: cannot read: {e}")))?;
        if bytes.len() as u64 > crate::base::bounded::TERMS {
            return Err(CliError::new("stdin: more than the 64 MiB it may have; give a smaller input"));
        }
        return Ok(("stdin".into(), bytes));
    }
    let name = file.display().to_string();
    bytes = crate::base::bounded::read(file, crate::base::bounded::TERMS)
        .map_err(|e| CliError::new(format!("{name}: {e} (or - for stdin)")))?;
    Ok((name, bytes))
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn finish_term(text: String, escape: bool) -> String {
    if escape {
        uri_escape(&text)
    } else if text.contains(['\n', '\r']) {
        text.replace(['\n', '\r'], " ")
    } else {
        text
    }
}

/// Percent-encodes every byte of the UTF-8 text but the unreserved characters `A-Z a-z 0-9 - . _ ~` (RFC 3986),
/// so the result is safe in a path or a query value. Spaces become `%20`.
pub fn uri_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

// After the macros above, which they use.
mod generate;
mod walk;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_unreserved_characters_and_encodes_the_rest_as_utf8() {
        for (input, want) in [
            ("AZaz09-._~", "AZaz09-._~"),
            ("a b&c=d/e?f#g+h%", "a%20b%26c%3Dd%2Fe%3Ff%23g%2Bh%25"),
            ("東京", "%E6%9D%B1%E4%BA%AC"),
            ("", ""),
        ] {
            assert_eq!(uri_escape(input), want, "uri_escape({input:?})");
        }
    }

    #[test]
    fn substitution_replaces_every_placeholder() {
        for (template, term, want) in [
            ("/d/select?table=Pages&query={term}", "Kyoto", "/d/select?table=Pages&query=Kyoto"),
            ("/s/{term}?q={term}", "x%20y", "/s/x%20y?q=x%20y"),
            ("/static", "x", "/static"),
        ] {
            assert_eq!(substitute(template, term), want, "substitute({template:?}, {term:?})");
        }
    }

    #[test]
    fn hit_rates_read_as_fractions_or_percentages() {
        assert_eq!(parse_hit_rate("0.5").unwrap(), 0.5);
        assert_eq!(parse_hit_rate("50%").unwrap(), 0.5);
        assert_eq!(parse_hit_rate(" 100 % ").unwrap(), 1.0);
        assert!(parse_hit_rate("50").unwrap_err().to_string().contains("50%"));
        for bad in ["0", "-0.1", "1.5%x", "abc", "NaN", "101%"] {
            assert!(parse_hit_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hosts_may_carry_ports() {
        let h = parse_host("node2:10041").unwrap();
        assert_eq!((h.name.as_str(), h.host.as_str(), h.port), ("node2:10041", "node2", Some(10041)));
        let h = parse_host("[::1]:8080").unwrap();
        assert_eq!((h.host.as_str(), h.port), ("::1", Some(8080)));
        let h = parse_host("::1").unwrap();
        assert_eq!((h.host.as_str(), h.port), ("::1", None));
        assert!(parse_host("http://a").is_err());
        assert!(parse_host("a:0").is_err());
        assert!(parse_host("").is_err());
    }

    #[test]
    fn percent_escaped_terms_are_recognised() {
        assert!(looks_escaped("%E6%9D%B1"));
        assert!(looks_escaped("a+b%20c"));
        assert!(!looks_escaped("100%"));
        assert!(!looks_escaped("東京 %20"));
    }

    /// Hands out its bytes one at a time, as a slow pipe may.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some((&first, rest)) = self.0.split_first() else { return Ok(0) };
            if buf.is_empty() {
                return Ok(0);
            }
            buf[0] = first;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn a_byte_order_mark_is_dropped_even_when_it_arrives_a_byte_at_a_time() {
        let mut text = Vec::new();
        without_bom(Box::new(Trickle(b"\xEF\xBB\xBF[1]"))).unwrap().read_to_end(&mut text).unwrap();
        assert_eq!(text, b"[1]");
        for input in [&b"[1]"[..], b"1", b"", b"\xEF\xBB[1]"] {
            let mut text = Vec::new();
            without_bom(Box::new(Trickle(input))).unwrap().read_to_end(&mut text).unwrap();
            assert_eq!(text, input);
        }
    }

    #[test]
    fn positions_are_one_based_lines_and_columns() {
        assert_eq!(line_column(b"ab\ncd", 0), (1, 1));
        assert_eq!(line_column(b"ab\ncd", 4), (2, 2));
    }
}
