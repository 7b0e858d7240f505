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

use crate::error::UsageError;

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
pub fn extract(opts: &ExtractOptions, stdin: &mut dyn Read, out: &mut dyn Write) -> Result<usize, UsageError> {
    if let Some(p) = &opts.pointer
        && !p.is_empty()
        && !p.starts_with('/')
    {
        return Err(UsageError::new(format!("--pointer '{p}': a JSON pointer starts with '/'; write --pointer /{p}")));
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

fn write_failed(e: std::io::Error) -> UsageError {
    UsageError::runtime(format!("cannot write the terms: {e}"))
}

/// One input of `extract`: its name in messages, and whether it is stdin (whose read errors are not the user's).
struct Source {
    name: String,
    stdin: bool,
}

impl Source {
    fn read_failed(&self, e: std::io::Error) -> UsageError {
        if self.stdin {
            UsageError::runtime(format!("stdin: cannot read: {e}"))
        } else {
            UsageError::new(format!("{}: cannot read: {e}; give an existing file, or - for stdin", self.name))
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
) -> Result<(), UsageError> {
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
                Some(Stop::Shape(message)) => UsageError::new(format!("{}:{line}:{column}: {message}", source.name)),
                Some(Stop::Write(e)) => write_failed(e),
                None if e.is_io() => source.read_failed(e.into()),
                None => syntax_error(&source.name, &e, pointer.is_some()),
            });
        }
    }
    if documents == 0 {
        return Err(UsageError::new(format!(
            "{}: no JSON in it; give the output of a Groonga select, e.g. \
             curl 'http://HOST:10041/d/select?table=Pages&output_columns=title&limit=1000'",
            source.name
        )));
    }
    Ok(())
}

fn syntax_error(name: &str, e: &serde_json::Error, pointer: bool) -> UsageError {
    let message = e.to_string();
    // serde_json appends " at line L column C"; the position goes first, as compilers put it.
    let message = message.split(" at line ").next().unwrap_or(&message);
    let fix = if pointer {
        "give a JSON document"
    } else {
        "give the JSON output of a Groonga select (or use --pointer for other JSON)"
    };
    // At the end of the input serde_json says column 0; columns are counted from 1.
    UsageError::new(format!("{name}:{}:{}: not valid JSON: {message}; {fix}", e.line(), e.column().max(1)))
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

/// The segments of a pointer, still escaped with ~0 and ~1; with no `*` segment, one is added at the end (the
/// pointer then names an array whose elements are the terms).
fn pointer_segments(pointer: &str) -> Vec<String> {
    let mut segments: Vec<String> = pointer.split('/').skip(1).map(String::from).collect();
    if !segments.iter().any(|s| s == "*") {
        segments.push("*".into());
    }
    segments
}

/// The value at `segments[..depth]` of a pointer, walked as it is read: a key or an index descends into one
/// member and skips the others unread, a `*` descends into every element in turn, and only the elements the
/// whole pointer names are read whole (one at a time). So memory is bounded by the largest such element, never
/// by the document, and the terms come out in document order.
///
/// A pointer is walked depth first, as the document is read; the whole-document reader walked it breadth
/// first, so when a document holds several mistakes for the pointer the one reported may be another.
/// Where an object repeats a key, the first member is walked and the others skipped.
struct Walk<'s, 'o, 'p> {
    sink: &'s mut Sink<'o>,
    pointer: &'p str,
    segments: &'p [String],
    depth: usize,
}

impl<'s, 'o, 'p> Walk<'s, 'o, 'p> {
    /// The walk one segment further down.
    fn deeper(&mut self) -> Walk<'_, 'o, 'p> {
        Walk { sink: &mut *self.sink, pointer: self.pointer, segments: self.segments, depth: self.depth + 1 }
    }

    /// Where this value is, as the pointer's first `depth` segments.
    fn here(&self) -> String {
        let path: String = self.segments[..self.depth].iter().map(|s| format!("/{s}")).collect();
        display_path(&path).to_string()
    }

    fn segment(&self) -> &'p str {
        &self.segments[self.depth]
    }

    /// The segment as an object key or array index (unescaped).
    fn key(&self) -> String {
        self.segment().replace("~1", "/").replace("~0", "~")
    }

    fn other<E: de::Error>(self, kind: &str) -> Result<(), E> {
        let message = if self.segment() == "*" {
            format!("--pointer {}: '{}' is {kind}, not an array; point at an array", self.pointer, self.here())
        } else {
            format!("--pointer {}: '{}' is {kind}, which has no '{}'", self.pointer, self.here(), self.key())
        };
        Err(self.sink.refuse(message))
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.depth == self.segments.len() {
            let item = Value::deserialize(d)?;
            return self.sink.pointer_item(self.pointer, item);
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "the JSON --pointer {} walks through", self.pointer)
    }

    scalars_to_other!();

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        if self.segment() == "*" {
            while seq.next_element_seed(self.deeper())?.is_some() {}
            return Ok(());
        }
        let wanted = self.key().parse::<usize>().ok();
        let (mut len, mut found) = (0, false);
        loop {
            let more = if wanted == Some(len) {
                found = seq.next_element_seed(self.deeper())?.is_some();
                found
            } else {
                seq.next_element::<IgnoredAny>()?.is_some()
            };
            if !more {
                break;
            }
            len += 1;
        }
        if !found {
            let message = format!(
                "--pointer {}: '{}' is an array of {len} elements; use an index below {len} or *",
                self.pointer,
                self.here()
            );
            return Err(self.sink.refuse(message));
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        if self.segment() == "*" {
            // Refused before the object is read: the message needs nothing from it.
            return self.other("an object");
        }
        let wanted = self.key();
        let mut found = false;
        // The first keys in sorted order, for the message when the key is not there (as serde_json's map
        // lists them); at most ten are kept, however many the object has.
        let mut first_keys = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !found && key == wanted {
                map.next_value_seed(self.deeper())?;
                found = true;
                continue;
            }
            map.next_value::<IgnoredAny>()?;
            if !found {
                first_keys.insert(key);
                if first_keys.len() > 10 {
                    first_keys.pop_last();
                }
            }
        }
        if !found {
            let keys: Vec<&str> = first_keys.iter().map(String::as_str).collect();
            let message = format!(
                "--pointer {}: no key '{wanted}' at '{}'; the keys there are: {}",
                self.pointer,
                self.here(),
                if keys.is_empty() { "(none)".into() } else { keys.join(", ") }
            );
            return Err(self.sink.refuse(message));
        }
        Ok(())
    }
}

fn display_path(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
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
fn read_input(file: &Path, stdin: &mut dyn Read) -> Result<(String, Vec<u8>), UsageError> {
    let mut bytes = Vec::new();
    if file.as_os_str() == "-" {
        // Standard input has no size to look at first: read at most one byte more than the cap.
        stdin
            .take(crate::bounded::TERMS + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| UsageError::runtime(format!("stdin: cannot read: {e}")))?;
        if bytes.len() as u64 > crate::bounded::TERMS {
            return Err(UsageError::new("stdin: more than the 64 MiB it may have; give a smaller input"));
        }
        return Ok(("stdin".into(), bytes));
    }
    let name = file.display().to_string();
    bytes = crate::bounded::read(file, crate::bounded::TERMS)
        .map_err(|e| UsageError::new(format!("{name}: {e} (or - for stdin)")))?;
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

/// The placeholder a template must hold.
pub const TERM_PLACEHOLDER: &str = "{term}";

/// The template with every `{term}` replaced by `term` (already escaped if it should be).
pub fn substitute(template: &str, term: &str) -> String {
    template.replace(TERM_PLACEHOLDER, term)
}

/// What `hakaru patterns generate` was asked to do.
#[derive(Clone, Debug)]
pub struct GenerateOptions {
    /// `--template`: the path (or URL) of each request; every `{term}` is replaced by a term.
    pub template: String,
    /// `--terms FILE`: one term per line (trimmed; blank lines skipped); `-` is stdin.
    pub terms: PathBuf,
    /// `--hosts a,b`: one group per host, named `with-query-HOST`, each with `"host"` (and `"port"` for
    /// `host:port`) set and frequency 1/n, as drnbench-generate-select-patterns does. Empty: one group.
    pub hosts: Vec<String>,
    /// `--hit-rate`: the expected cache hit rate, 0 < r <= 1 (see [`parse_hit_rate`] for `50%`).
    pub hit_rate: Option<f64>,
    /// `--cache-size`: how many results the server caches (Groonga and droonga-http-server: 100).
    pub cache_size: usize,
    /// Percent-encode each term before substitution (on by default on the command line).
    pub escape: bool,
    /// The method of every request (GET by default).
    pub method: String,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            template: String::new(),
            terms: PathBuf::from("-"),
            hosts: Vec::new(),
            hit_rate: None,
            cache_size: 100,
            escape: true,
            method: "GET".into(),
        }
    }
}

/// A generated pattern file.
#[derive(Clone, Debug)]
pub struct Generated {
    /// The drnbench JSON pattern file, ending with a newline.
    pub json: String,
    /// How many distinct requests each group holds.
    pub unique_requests: usize,
    /// One line each, for stderr: the file is usable but not quite what was asked for.
    pub warnings: Vec<String>,
}

/// Reads `--hit-rate`: a fraction (`0.5`) or a percentage (`50%`), more than 0 and at most 1 (100 %).
pub fn parse_hit_rate(text: &str) -> Result<f64, UsageError> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    };
    match value {
        Ok(r) if r.is_finite() && r > 0.0 && r <= 1.0 => Ok(r),
        Ok(r) if r > 1.0 && r <= 100.0 && !t.ends_with('%') => Err(UsageError::new(format!(
            "--hit-rate '{text}': a fraction is at most 1; write --hit-rate {} or {t}%",
            r / 100.0
        ))),
        _ => Err(UsageError::new(format!(
            "--hit-rate '{text}': give a fraction above 0 and at most 1 (0.5) or a percentage (50%)"
        ))),
    }
}

/// drnbench-generate-select-patterns: a drnbench JSON pattern file of one request per term.
///
/// With `hit_rate`, the first round(cache_size / hit_rate) distinct terms are used (the Droonga tutorial's rule:
/// 100 cached results at 50 % need 200 unique requests); without it, every term in order, repeats included.
pub fn generate(opts: &GenerateOptions, stdin: &mut dyn Read) -> Result<Generated, UsageError> {
    check_template(&opts.template)?;
    let method = check_method(&opts.method)?;
    let hosts = parse_hosts(&opts.hosts)?;
    if let Some(r) = opts.hit_rate
        && !(r.is_finite() && r > 0.0 && r <= 1.0)
    {
        return Err(UsageError::new(format!(
            "--hit-rate {r}: give a fraction above 0 and at most 1 (0.5) or a percentage (50%)"
        )));
    }
    let (name, text) = read_terms(&opts.terms, stdin)?;
    let all: Vec<&str> = text.lines().map(str::trim).filter(|t| !t.is_empty()).collect();
    if all.is_empty() {
        return Err(UsageError::new(format!(
            "--terms {name}: no terms in it; give one search term per line \
             (hakaru patterns extract prints them from a Groonga select result)"
        )));
    }
    let mut warnings = Vec::new();
    let (terms, unique_requests) = match opts.hit_rate {
        None => {
            let unique = all.iter().collect::<HashSet<_>>().len();
            (all, unique)
        }
        Some(rate) => {
            if opts.cache_size == 0 {
                return Err(UsageError::new(
                    "--cache-size 0: with --hit-rate the cache must hold at least 1 result; \
                     give the server's cache size (Groonga: 100)",
                ));
            }
            let needed = ((opts.cache_size as f64 / rate).round() as usize).max(1);
            let mut seen = HashSet::new();
            let distinct: Vec<&str> = all.into_iter().filter(|t| seen.insert(*t)).take(needed).collect();
            if distinct.len() < needed {
                let expected = (opts.cache_size as f64 / distinct.len() as f64).min(1.0);
                warnings.push(format!(
                    "--hit-rate {}: {name} has only {} distinct terms, but {needed} are needed for that hit rate \
                     with --cache-size {}; this file will give a hit rate of about {:.0}%; \
                     extract more terms or lower --hit-rate",
                    percent(rate),
                    distinct.len(),
                    opts.cache_size,
                    expected * 100.0
                ));
            }
            let unique = distinct.len();
            (distinct, unique)
        }
    };
    warnings.extend(escaping_warning(&terms, opts.escape));
    let patterns: Vec<PatternJson> = terms
        .iter()
        .map(|t| PatternJson {
            path: if opts.escape { substitute(&opts.template, &uri_escape(t)) } else { substitute(&opts.template, t) },
        })
        .collect();
    let groups = if hosts.is_empty() {
        vec![(
            "with-query".to_string(),
            GroupJson { frequency: 1.0, method: &method, host: None, port: None, patterns: &patterns },
        )]
    } else {
        let frequency = 1.0 / hosts.len() as f64;
        hosts
            .iter()
            .map(|h| {
                (
                    format!("with-query-{}", h.name),
                    GroupJson { frequency, method: &method, host: Some(&h.host), port: h.port, patterns: &patterns },
                )
            })
            .collect()
    };
    let mut json = serde_json::to_string_pretty(&GroupsJson(groups))
        .map_err(|e| UsageError::runtime(format!("cannot write the pattern file: {e}")))?;
    json.push('\n');
    Ok(Generated { json, unique_requests, warnings })
}

// The JSON is written through serde with these structs rather than through serde_json::Map (which sorts keys
// without the `preserve_order` feature) or a hand-written formatter: derived structs serialize their fields in
// declaration order and `GroupsJson` keeps the groups in the order given, while serde_json's pretty printer
// (2 spaces, one key per line) lays the file out as drnbench's Ruby `JSON.pretty_generate` does, escaping
// strings correctly for free. drnbench puts "host" after "patterns"; here it comes first so it can be seen.

/// One group: `{"frequency": .., "method": .., "host"?: .., "port"?: .., "patterns": [..]}`.
#[derive(Serialize)]
struct GroupJson<'a> {
    frequency: f64,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    host: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    port: Option<u16>,
    patterns: &'a [PatternJson],
}

#[derive(Serialize)]
struct PatternJson {
    path: String,
}

/// Named groups, serialized as one JSON object in this order.
struct GroupsJson<'a>(Vec<(String, GroupJson<'a>)>);

impl Serialize for GroupsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(name, group)| (name, group)))
    }
}

/// "50%", "33.3%".
fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if (p - p.round()).abs() < 0.05 { format!("{p:.0}%") } else { format!("{p:.1}%") }
}

fn check_template(template: &str) -> Result<(), UsageError> {
    let example = "e.g. --template '/d/select?table=Pages&query={term}'";
    if !template.contains(TERM_PLACEHOLDER) {
        return Err(UsageError::new(format!(
            "--template '{template}': no {TERM_PLACEHOLDER} in it; put {TERM_PLACEHOLDER} where each term goes, {example}"
        )));
    }
    let lower = template.to_ascii_lowercase();
    if !(template.starts_with('/') || lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(UsageError::new(format!(
            "--template '{template}': not a path or URL; start it with / or http://, {example}"
        )));
    }
    if template.contains(|c: char| c.is_whitespace() || c.is_control()) {
        return Err(UsageError::new(format!(
            "--template '{template}': spaces and control characters are not allowed in a request path; \
             percent-encode them (%20)"
        )));
    }
    Ok(())
}

/// The method as drnbench writes it (lower case; hakaru reads either case).
fn check_method(method: &str) -> Result<String, UsageError> {
    let m = method.trim();
    if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(UsageError::new(format!("--method '{method}': not an HTTP method; use GET or POST")));
    }
    Ok(m.to_ascii_lowercase())
}

/// A `--hosts` entry: the group name as given, and the host and port it holds.
struct HostEntry {
    name: String,
    host: String,
    port: Option<u16>,
}

fn parse_hosts(hosts: &[String]) -> Result<Vec<HostEntry>, UsageError> {
    let mut out: Vec<HostEntry> = Vec::new();
    for raw in hosts {
        let entry = parse_host(raw)?;
        if out.iter().any(|h| h.name == entry.name) {
            return Err(UsageError::new(format!("--hosts: '{}' is given twice; name each host once", entry.name)));
        }
        out.push(entry);
    }
    Ok(out)
}

/// `name`, `name:port`, `[v6]`, `[v6]:port` or a bare IPv6 address.
fn parse_host(raw: &str) -> Result<HostEntry, UsageError> {
    let name = raw.trim();
    let bad = |why: &str| {
        UsageError::new(format!(
            "--hosts '{raw}': {why}; write host names or host:port, separated by commas (--hosts node1,node2:10041)"
        ))
    };
    if name.is_empty() {
        return Err(bad("an empty host name"));
    }
    if name.contains("://") || name.contains(['/', '?', '#', '@', ' ', ',']) {
        return Err(bad("not a host name"));
    }
    let (host, port) = if let Some(rest) = name.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(|| bad("no closing ']'"))?;
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':').ok_or_else(|| bad("junk after ']'"))?)),
        }
    } else {
        match name.matches(':').count() {
            0 => (name, None),
            1 => {
                let (h, p) = name.split_once(':').unwrap_or((name, ""));
                (h, Some(p))
            }
            _ => (name, None), // a bare IPv6 address
        }
    };
    if host.is_empty() {
        return Err(bad("an empty host name"));
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(p) if p > 0 => Some(p),
            _ => return Err(bad("the port is not a number from 1 to 65535")),
        },
    };
    Ok(HostEntry { name: name.into(), host: host.into(), port })
}

/// Reads the terms file (`-` is stdin) as UTF-8. Returns the name to use in messages and the text.
fn read_terms(path: &Path, stdin: &mut dyn Read) -> Result<(String, String), UsageError> {
    let (name, bytes) = read_input(path, stdin)
        .map_err(|e| if path.as_os_str() == "-" { e } else { UsageError::new(format!("--terms {e}")) })?;
    let bytes = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) => rest.to_vec(),
        None => bytes,
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        let (line, column) = line_column(e.as_bytes(), e.utf8_error().valid_up_to());
        UsageError::new(format!(
            "--terms {name}:{line}:{column}: not UTF-8 text; convert the file to UTF-8 (iconv -t UTF-8)"
        ))
    })?;
    Ok((name, text))
}

/// A warning when the terms will not make good request paths as they are escaped (or not).
fn escaping_warning(terms: &[&str], escape: bool) -> Option<String> {
    if escape {
        // Output of `extract --escape` escaped again: %E6 would become %25E6 and match nothing.
        let escaped: Vec<&&str> = terms.iter().filter(|t| looks_escaped(t)).collect();
        let first = escaped.first()?;
        Some(format!(
            "{} of the terms look percent-encoded already (e.g. '{first}') and are encoded again; \
             extract them without --escape, or turn off escaping here",
            escaped.len()
        ))
    } else {
        let unsafe_terms: Vec<&&str> =
            terms.iter().filter(|t| t.contains(|c: char| c.is_whitespace() || c.is_control() || c == '#')).collect();
        let first = unsafe_terms.first()?;
        Some(format!(
            "{} of the terms hold spaces, '#' or control characters (e.g. '{first}') and are not escaped, \
             so their requests are malformed; turn escaping on",
            unsafe_terms.len()
        ))
    }
}

/// Has a %XX sequence and nothing else that would need escaping.
fn looks_escaped(term: &str) -> bool {
    let b = term.as_bytes();
    let has_sequence = b.windows(3).any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit());
    has_sequence && b.iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'%' | b'+'))
}

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
