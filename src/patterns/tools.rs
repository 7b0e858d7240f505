//! Makers of drnbench pattern files: `extract` pulls search terms out of Groonga select results (as
//! drnbench-extract-searchterms does) and `generate` turns terms into a JSON pattern file (as
//! drnbench-generate-select-patterns does), optionally sized for an expected cache hit rate.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};
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
pub fn extract(opts: &ExtractOptions, stdin: &mut dyn Read, out: &mut dyn Write) -> Result<usize, UsageError> {
    if let Some(p) = &opts.pointer
        && !p.is_empty()
        && !p.starts_with('/')
    {
        return Err(UsageError::new(format!("--pointer '{p}': a JSON pointer starts with '/'; write --pointer /{p}")));
    }
    let stdin_only = [PathBuf::from("-")];
    let files: &[PathBuf] = if opts.files.is_empty() { &stdin_only } else { &opts.files };
    let mut out = BufWriter::new(out);
    let mut written = 0;
    for file in files {
        let (name, bytes) = read_input(file, stdin)?;
        for term in terms_of_input(&name, &bytes, opts)? {
            writeln!(out, "{term}").map_err(write_failed)?;
            written += 1;
        }
    }
    out.flush().map_err(write_failed)?;
    Ok(written)
}

fn write_failed(e: std::io::Error) -> UsageError {
    UsageError::runtime(format!("cannot write the terms: {e}"))
}

/// Reads a whole input; `-` is stdin. Returns the name to use in messages and the bytes.
fn read_input(file: &Path, stdin: &mut dyn Read) -> Result<(String, Vec<u8>), UsageError> {
    let mut bytes = Vec::new();
    if file.as_os_str() == "-" {
        stdin.read_to_end(&mut bytes).map_err(|e| UsageError::runtime(format!("stdin: cannot read: {e}")))?;
        return Ok(("stdin".into(), bytes));
    }
    let name = file.display().to_string();
    bytes = std::fs::read(file)
        .map_err(|e| UsageError::new(format!("{name}: cannot read: {e}; give an existing file, or - for stdin")))?;
    Ok((name, bytes))
}

/// The terms of every JSON document in one input.
fn terms_of_input(name: &str, bytes: &[u8], opts: &ExtractOptions) -> Result<Vec<String>, UsageError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut stream = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
    let (mut terms, mut documents) = (Vec::new(), 0);
    loop {
        let start =
            stream.byte_offset() + bytes[stream.byte_offset()..].iter().take_while(|b| b.is_ascii_whitespace()).count();
        let doc = match stream.next() {
            None => break,
            Some(Ok(doc)) => doc,
            Some(Err(e)) => return Err(syntax_error(name, &e, opts.pointer.is_some())),
        };
        documents += 1;
        let (line, column) = line_column(bytes, start);
        let at = |message: String| UsageError::new(format!("{name}:{line}:{column}: {message}"));
        match &opts.pointer {
            Some(pointer) => terms_by_pointer(&doc, pointer, opts, &mut terms).map_err(at)?,
            None => terms_of_select(&doc, opts, &mut terms).map_err(at)?,
        }
    }
    if documents == 0 {
        return Err(UsageError::new(format!(
            "{name}: no JSON in it; give the output of a Groonga select, e.g. \
             curl 'http://HOST:10041/d/select?table=Pages&output_columns=title&limit=1000'"
        )));
    }
    Ok(terms)
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

/// Appends the chosen column of every record of the first result set of one select result.
fn terms_of_select(doc: &Value, opts: &ExtractOptions, terms: &mut Vec<String>) -> Result<(), String> {
    let (names, records) = select_records(doc)?;
    for (i, record) in records.iter().enumerate() {
        let Value::Array(record) = record else {
            return Err(format!(
                "record {} is {}, not an array of column values; is this a Groonga select result?",
                i + 1,
                kind(record)
            ));
        };
        let Some(value) = record.get(opts.column) else {
            return Err(format!(
                "--column {} is beyond the records, which have {}; {}",
                opts.column,
                describe_columns(&names, record.len()),
                column_fix(record.len())
            ));
        };
        push_terms(value, opts.escape, terms);
    }
    Ok(())
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

/// The column names and the records of the first result set of a select result in any of its forms.
fn select_records(doc: &Value) -> Result<(Vec<String>, &[Value]), String> {
    const SHAPE: &str = "not a Groonga select result (expected [[status, start, elapsed], \
                         [[[hits], [[name, type], ...], record, ...]]]); use --pointer for other JSON";
    match doc {
        Value::Array(top) => {
            let Some(Value::Array(first)) = top.first() else {
                return Err(SHAPE.into());
            };
            // A bare result set starts with [hit_count]; a whole response with [status, start, elapsed, ...].
            if first.len() == 1 && first[0].is_number() {
                return result_set(top);
            }
            if !first.first().is_some_and(Value::is_number) {
                return Err(SHAPE.into());
            }
            let status = first[0].as_i64().unwrap_or(0);
            if status != 0 {
                let message = first.get(3).and_then(Value::as_str).unwrap_or("no message");
                return Err(format!(
                    "Groonga returned error {status} ({message}); fix the select and fetch the result again"
                ));
            }
            match top.get(1) {
                Some(Value::Array(body)) => match body.first() {
                    Some(Value::Array(set)) => result_set(set),
                    _ => Err(SHAPE.into()),
                },
                _ => Err(SHAPE.into()),
            }
        }
        Value::Object(top) => {
            // Groonga's command_version=3: {"header": {"return_code": 0, ...}, "body": {"columns", "records"}}.
            let header = top.get("header");
            let code = header.and_then(|h| h.get("return_code")).and_then(Value::as_i64).unwrap_or(0);
            if code != 0 {
                let message =
                    header.and_then(|h| h.pointer("/error/message")).and_then(Value::as_str).unwrap_or("no message");
                return Err(format!(
                    "Groonga returned error {code} ({message}); fix the select and fetch the result again"
                ));
            }
            let body = top.get("body").ok_or(SHAPE)?;
            let records = body.get("records").and_then(Value::as_array).ok_or(SHAPE)?;
            let names = body
                .get("columns")
                .and_then(Value::as_array)
                .map(|cols| cols.iter().map(|c| c.get("name").and_then(Value::as_str).unwrap_or("?").into()).collect())
                .unwrap_or_default();
            Ok((names, records))
        }
        _ => Err(SHAPE.into()),
    }
}

/// `[[hits], [[name, type], ...], record, ...]`.
fn result_set(set: &[Value]) -> Result<(Vec<String>, &[Value]), String> {
    let names = match set.get(1) {
        Some(Value::Array(columns)) => columns
            .iter()
            .map(|c| match c {
                Value::Array(c) => c.first().and_then(Value::as_str).unwrap_or("?").into(),
                _ => "?".into(),
            })
            .collect(),
        _ => {
            return Err("a result set without its column list ([[hits], [[name, type], ...], record, ...]); \
                 is this a Groonga select result?"
                .into());
        }
    };
    Ok((names, &set[2..]))
}

/// Appends the terms of every element the pointer names.
fn terms_by_pointer(doc: &Value, pointer: &str, opts: &ExtractOptions, terms: &mut Vec<String>) -> Result<(), String> {
    for (i, item) in resolve_pointer(doc, pointer)?.into_iter().enumerate() {
        match item {
            Value::Array(items) => {
                let Some(value) = items.get(opts.column) else {
                    return Err(format!(
                        "--column {}: element {i} of --pointer {pointer} has {} item{}; {}",
                        opts.column,
                        items.len(),
                        if items.len() == 1 { "" } else { "s" },
                        match items.len() {
                            0 => "point at arrays that are not empty".into(),
                            1 => "use --column 0".into(),
                            n => format!("use --column 0 to {}", n - 1),
                        }
                    ));
                };
                push_terms(value, opts.escape, terms);
            }
            Value::Object(fields) => {
                let base = pointer.trim_end_matches("/*");
                let example = fields.keys().next().map_or("name", String::as_str);
                return Err(format!(
                    "element {i} of --pointer {pointer} is an object, not a term; \
                     name its field, e.g. --pointer '{base}/*/{}'",
                    example.replace('~', "~0").replace('/', "~1")
                ));
            }
            other => push_terms(other, opts.escape, terms),
        }
    }
    Ok(())
}

/// The values a pointer names: with no `*` segment it must name an array, whose elements are the values;
/// each `*` segment stands for every element of the array reached so far.
fn resolve_pointer<'a>(doc: &'a Value, pointer: &str) -> Result<Vec<&'a Value>, String> {
    let mut segments: Vec<&str> = pointer.split('/').skip(1).collect();
    if !segments.contains(&"*") {
        segments.push("*");
    }
    let mut current = vec![doc];
    let mut path = String::new();
    for segment in segments {
        let mut next = Vec::new();
        for value in current {
            if segment == "*" {
                match value {
                    Value::Array(items) => next.extend(items),
                    other => {
                        return Err(format!(
                            "--pointer {pointer}: '{}' is {}, not an array; point at an array",
                            display_path(&path),
                            kind(other)
                        ));
                    }
                }
            } else {
                next.push(step(value, segment, &path, pointer)?);
            }
        }
        path.push('/');
        path.push_str(segment);
        current = next;
    }
    Ok(current)
}

/// One pointer step from `value` (found at `path`) by `segment` (still escaped with ~0 and ~1).
fn step<'a>(value: &'a Value, segment: &str, path: &str, pointer: &str) -> Result<&'a Value, String> {
    let key = segment.replace("~1", "/").replace("~0", "~");
    let here = display_path(path);
    match value {
        Value::Object(map) => map.get(&key).ok_or_else(|| {
            let keys: Vec<&str> = map.keys().map(String::as_str).take(10).collect();
            format!(
                "--pointer {pointer}: no key '{key}' at '{here}'; the keys there are: {}",
                if keys.is_empty() { "(none)".into() } else { keys.join(", ") }
            )
        }),
        Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)).ok_or_else(|| {
            format!(
                "--pointer {pointer}: '{here}' is an array of {} elements; use an index below {} or *",
                items.len(),
                items.len()
            )
        }),
        other => Err(format!("--pointer {pointer}: '{here}' is {}, which has no '{key}'", kind(other))),
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

/// Appends the term(s) of one value: a vector value gives one term per element (as drnbench's `puts` does).
fn push_terms(value: &Value, escape: bool, terms: &mut Vec<String>) {
    let text = match value {
        Value::Array(items) => {
            for item in items {
                let text = match item {
                    Value::Array(_) | Value::Object(_) => item.to_string(),
                    scalar => scalar_text(scalar),
                };
                terms.push(finish_term(text, escape));
            }
            return;
        }
        Value::Object(_) => value.to_string(),
        scalar => scalar_text(scalar),
    };
    terms.push(finish_term(text, escape));
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
        assert_eq!(uri_escape("AZaz09-._~"), "AZaz09-._~");
        assert_eq!(uri_escape("a b&c=d/e?f#g+h%"), "a%20b%26c%3Dd%2Fe%3Ff%23g%2Bh%25");
        assert_eq!(uri_escape("東京"), "%E6%9D%B1%E4%BA%AC");
        assert_eq!(uri_escape(""), "");
    }

    #[test]
    fn substitution_replaces_every_placeholder() {
        assert_eq!(substitute("/d/select?table=Pages&query={term}", "Kyoto"), "/d/select?table=Pages&query=Kyoto");
        assert_eq!(substitute("/s/{term}?q={term}", "x%20y"), "/s/x%20y?q=x%20y");
        assert_eq!(substitute("/static", "x"), "/static");
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

    #[test]
    fn positions_are_one_based_lines_and_columns() {
        assert_eq!(line_column(b"ab\ncd", 0), (1, 1));
        assert_eq!(line_column(b"ab\ncd", 4), (2, 2));
    }
}
