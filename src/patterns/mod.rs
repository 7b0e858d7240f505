//! Request pattern files in both drnbench formats: plain text (one path or URL a line) and JSON groups; [`tools`]
//! makes them (drnbench's extract-searchterms and generate-select-patterns).
//!
//! JSON is read with serde visitors rather than through `serde_json::Value` so that every mistake, of syntax or of
//! shape, is reported with its line and column.

pub mod tools;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::base::secrets::{excerpt, excerpt_quoted};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

/// One request pattern with the fields its group gave it; command-line defaults fill the rest later.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pattern {
    /// A path with query (`/d/select?q=a`) or an absolute URL.
    pub path: String,
    /// The other fields, when the file gave any. Most patterns (every line of a plain file) give none, and most
    /// that do give the same as the pattern before them (a group's method and headers): shared, a pattern costs
    /// 32 bytes beside its path instead of 190 and more (a 19 MB file holds 400,000).
    more: Option<Arc<PatternFields>>,
}

/// What a pattern may give beside its path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PatternFields {
    pub method: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    /// Seconds.
    pub timeout: Option<f64>,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// The body when the file gave it as an object: a GET sends it as a form-encoded query string, as drnbench
    /// does; other methods send `body` (its JSON text).
    pub body_form: Option<Vec<(String, String)>>,
}

/// The fields of a pattern that gave none.
static NO_FIELDS: PatternFields = PatternFields {
    method: None,
    host: None,
    port: None,
    timeout: None,
    headers: Vec::new(),
    body: None,
    body_form: None,
};

impl Pattern {
    pub fn new(path: String, fields: PatternFields) -> Pattern {
        Pattern::shared(path, &mut None, fields)
    }

    /// A pattern whose fields are `last`'s when they are the same (and become `last` when not).
    fn shared(path: String, last: &mut Option<Arc<PatternFields>>, fields: PatternFields) -> Pattern {
        if fields == NO_FIELDS {
            return Pattern { path, more: None };
        }
        let more = match last {
            Some(l) if **l == fields => Arc::clone(l),
            _ => last.insert(Arc::new(fields)).clone(),
        };
        Pattern { path, more: Some(more) }
    }

    /// The fields beside the path (all empty when the file gave none).
    pub fn fields(&self) -> &PatternFields {
        self.more.as_deref().unwrap_or(&NO_FIELDS)
    }
}

/// Patterns drawn together, with the weight of the group.
#[derive(Clone, Debug, PartialEq)]
pub struct PatternGroup {
    pub name: String,
    pub frequency: f64,
    pub patterns: Vec<Pattern>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PatternSet {
    pub groups: Vec<PatternGroup>,
    /// Things the reader should know: keys drnbench would ignore, ignored here too.
    pub warnings: Vec<String>,
    /// Seconds each client waits after each answer, when the file gives `"wait"` (at its top level or in a
    /// group): a sweep without `--wait` uses it.
    pub wait: Option<f64>,
}

std::thread_local! {
    /// A `"wait"` read anywhere in the file being read.
    static FILE_WAIT: std::cell::Cell<Option<f64>> = const { std::cell::Cell::new(None) };
}

std::thread_local! {
    /// The fields of the pattern object read last, shared by the next one that gives the same.
    static LAST_READ: std::cell::RefCell<Option<Arc<PatternFields>>> = const { std::cell::RefCell::new(None) };
}

std::thread_local! {
    /// Keys of the file that no reader uses (`command`, `name`, a comment), gathered while one file is read.
    static IGNORED_KEYS: std::cell::RefCell<std::collections::BTreeSet<String>> = Default::default();
}

/// Reads a pattern file; the error names the file, the line and column where known, and the fix.
pub fn load(path: &Path) -> Result<PatternSet, String> {
    let text = crate::base::bounded::read_text(path, crate::base::bounded::PATTERNS)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}:{e}", path.display()))
}

/// Parses pattern text: JSON when it starts with `{` or `[`, plain text otherwise (as drnbench decides).
pub fn parse(text: &str) -> Result<PatternSet, String> {
    // Editors on Windows start UTF-8 files with a byte order mark; it is not part of the first path or brace.
    // Columns on the first line are then counted after it, as the editor shows them.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // A NUL is in no text file: whatever this is, none of it is quoted.
    if text.contains('\0') {
        return Err("1:1: this is not a text file (it holds NUL bytes); give a drnbench pattern file".into());
    }
    IGNORED_KEYS.with(|k| k.borrow_mut().clear());
    LAST_READ.with(|l| l.borrow_mut().take());
    FILE_WAIT.with(|w| w.set(None));
    let read = if text.trim_start().starts_with(['{', '[']) { parse_json(text) } else { parse_plain(text) };
    LAST_READ.with(|l| l.borrow_mut().take());
    let mut set = read?;
    set.wait = FILE_WAIT.with(|w| w.take());
    let ignored = IGNORED_KEYS.with(|k| std::mem::take(&mut *k.borrow_mut()));
    if !ignored.is_empty() {
        let keys: Vec<String> = ignored.into_iter().map(|k| format!("\"{k}\"")).collect();
        set.warnings.push(format!(
            "keys ignored, as drnbench ignores them: {} (a pattern reads path, method, host, port, timeout, \
             headers, body; a group also frequency and patterns)",
            keys.join(", ")
        ));
    }
    if set.groups.iter().all(|g| g.patterns.is_empty()) {
        return Err("1:1: the file holds no request patterns; add at least one path".into());
    }
    if let Some(g) = set.groups.iter().find(|g| !g.frequency.is_finite() || g.frequency < 0.0) {
        return Err(format!("1:1: group '{}' has frequency {}; use a number >= 0", excerpt(&g.name), g.frequency));
    }
    let total = set.groups.iter().map(|g| g.frequency).sum::<f64>();
    if !total.is_finite() {
        // Each frequency is finite but their sum is not: the draw would pick no group, or always the last.
        return Err("1:1: the frequencies add up to more than a number can hold; use shares such as 0.9 and 0.1".into());
    }
    if total <= 0.0 {
        return Err("1:1: every group has frequency 0; give at least one a positive frequency".into());
    }
    Ok(set)
}

fn parse_plain(text: &str) -> Result<PatternSet, String> {
    // At most a pattern a line: no doubling of a vector of 400,000.
    let mut patterns = Vec::with_capacity(text.lines().count());
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let lower = trimmed.to_ascii_lowercase();
        if !(trimmed.starts_with('/') || lower.starts_with("http://") || lower.starts_with("https://")) {
            let column = line.len() - line.trim_start().len() + 1;
            // A file whose first line is no pattern is some other file (`--patterns /etc/shadow`): said, not quoted.
            if patterns.is_empty() {
                return Err(format!(
                    "{}:{column}: the first line is neither a path nor a URL: this is not a drnbench pattern file \
                     (one path or URL a line, or JSON groups); give a pattern file",
                    i + 1
                ));
            }
            return Err(format!(
                "{}:{column}: '{}' is neither a path nor a URL; start the line with / or http://",
                i + 1,
                excerpt(trimmed)
            ));
        }
        // A space or control character would end the request line early (or start a second request); say
        // where it is rather than send something other than what the file means.
        if let Some(at) = trimmed.find(|c: char| c.is_whitespace() || c.is_control()) {
            let column = line.len() - line.trim_start().len() + at + 1;
            return Err(format!(
                "{}:{column}: '{}' holds a space or control character; percent-encode it (%20)",
                i + 1,
                excerpt(trimmed)
            ));
        }
        patterns.push(Pattern::new(trimmed.to_string(), PatternFields::default()));
    }
    Ok(PatternSet {
        groups: vec![PatternGroup { name: "default".into(), frequency: 1.0, patterns }],
        warnings: Vec::new(),
        wait: None,
    })
}

fn parse_json(text: &str) -> Result<PatternSet, String> {
    let position = |e: serde_json::Error| {
        let message = e.to_string();
        // serde_json appends " at line L column C"; put the position first, as compilers do.
        let message = excerpt_quoted(message.split(" at line ").next().unwrap_or(&message));
        format!(
            "{}:{}: {message}; see the drnbench pattern format in hakaru's docs/patterns-serve-demo.md",
            e.line(),
            e.column()
        )
    };
    // drnbench looks at the first element of a top-level list: a pattern (a path, or an object without
    // "patterns") makes the list one group of patterns; otherwise it is a list of groups.
    let top = if list_of_patterns(text) || one_group(text) {
        TopLevel(vec![(None, serde_json::from_str::<Group>(text).map_err(position)?)])
    } else {
        serde_json::from_str::<TopLevel>(text).map_err(position)?
    };
    let n = top.0.len().max(1) as f64;
    let groups = top
        .0
        .into_iter()
        .enumerate()
        .map(|(i, (name, g))| PatternGroup {
            name: name.unwrap_or_else(|| format!("group{}", i + 1)),
            frequency: g.frequency.unwrap_or(1.0 / n),
            patterns: g.patterns,
        })
        .collect();
    Ok(PatternSet { groups, warnings: Vec::new(), wait: None })
}

/// Whether the file is a top-level list whose first element is a pattern rather than a group.
fn list_of_patterns(text: &str) -> bool {
    let Ok(items) = serde_json::from_str::<Vec<&serde_json::value::RawValue>>(text) else { return false };
    let Some(first) = items.first() else { return false };
    match serde_json::from_str::<serde_json::Value>(first.get()) {
        Ok(serde_json::Value::String(_)) => true,
        Ok(serde_json::Value::Object(o)) => !o.contains_key("patterns") && !o.contains_key("pattern"),
        _ => false,
    }
}

/// Whether the file is one group: an object with "patterns" (drnbench's test), whatever its other keys.
fn one_group(text: &str) -> bool {
    serde_json::from_str::<std::collections::BTreeMap<String, &serde_json::value::RawValue>>(text)
        .is_ok_and(|m| m.contains_key("patterns") || m.contains_key("pattern"))
}

/// Remembers a key no reader uses, for the one warning line.
fn ignore_key<'de, A: MapAccess<'de>>(key: &str, map: &mut A) -> Result<(), A::Error> {
    IGNORED_KEYS.with(|k| k.borrow_mut().insert(key.to_string()));
    map.next_value::<de::IgnoredAny>()?;
    Ok(())
}

/// The fields a group passes down to its patterns.
#[derive(Default)]
struct GroupDefaults {
    path: Option<String>,
    fields: PatternFields,
}

/// A group as read: its frequency and its patterns with the group's fields already applied.
struct Group {
    frequency: Option<f64>,
    patterns: Vec<Pattern>,
}

/// A pattern as written: a bare path, or an object (fields missing there come from the group).
enum RawPattern {
    Path(String),
    /// The path (empty when the object gave none) and the other fields (shared with the pattern read before when
    /// they are the same).
    Full(String, Arc<PatternFields>),
}

/// The whole file: named groups (object of groups), unnamed groups (array), or one group.
struct TopLevel(Vec<(Option<String>, Group)>);

const GROUP_KEYS: &[&str] =
    &["frequency", "patterns", "pattern", "method", "path", "host", "port", "timeout", "headers", "body", "wait"];
const PATTERN_KEYS: &[&str] = &["path", "method", "body", "headers", "host", "port", "timeout"];

impl Group {
    fn from_parts(frequency: Option<f64>, defaults: GroupDefaults, raw: Vec<RawPattern>) -> Result<Group, String> {
        let d = &defaults.fields;
        let mut last = None;
        let patterns = raw
            .into_iter()
            .map(|r| {
                let (mut path, mut f) = match r {
                    RawPattern::Path(path) => (path, PatternFields::default()),
                    RawPattern::Full(path, f) => (path, Arc::unwrap_or_clone(f)),
                };
                if path.is_empty() {
                    path = defaults.path.clone().unwrap_or_else(|| "/".into());
                }
                f.method = f.method.or_else(|| d.method.clone());
                f.host = f.host.or_else(|| d.host.clone());
                f.port = f.port.or(d.port);
                f.timeout = f.timeout.or(d.timeout);
                if f.body.is_none() {
                    f.body = d.body.clone();
                    f.body_form = d.body_form.clone();
                }
                for (name, value) in &d.headers {
                    if !f.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                        f.headers.push((name.clone(), value.clone()));
                    }
                }
                Pattern::shared(path, &mut last, f)
            })
            .collect::<Vec<_>>();
        if patterns.is_empty() {
            return Err("a group has no patterns; give \"patterns\": [\"/path\", ...]".into());
        }
        Ok(Group { frequency, patterns })
    }
}

/// Reads the value of one group field (everything but frequency and patterns) into `defaults`.
fn read_group_field<'de, A: MapAccess<'de>>(key: &str, map: &mut A, g: &mut GroupDefaults) -> Result<(), A::Error> {
    let d = &mut g.fields;
    match key {
        "method" => d.method = Some(map.next_value::<String>()?.to_ascii_uppercase()),
        "path" => g.path = Some(map.next_value()?),
        "host" => d.host = Some(map.next_value()?),
        "port" => d.port = Some(map.next_value::<Port>()?.0),
        "timeout" => d.timeout = Some(map.next_value::<Seconds>()?.0),
        "headers" => d.headers = map.next_value::<Headers>()?.0,
        "body" => {
            let b = map.next_value::<Body>()?;
            (d.body, d.body_form) = (Some(b.text), b.form);
        }
        "wait" => {
            let w = map.next_value::<Number>()?.0;
            if !(0.0..=3600.0).contains(&w) {
                return Err(de::Error::custom(format!("wait {w} must be a number of seconds from 0 to 3600")));
            }
            FILE_WAIT.with(|c| c.set(Some(w)));
        }
        other => ignore_key(other, map)?,
    }
    Ok(())
}

/// Reads the rest of a group object whose first key was already read.
fn read_group_rest<'de, A: MapAccess<'de>>(first_key: String, mut map: A) -> Result<Group, A::Error> {
    let (mut frequency, mut defaults, mut raw) = (None, GroupDefaults::default(), Vec::new());
    let mut key = Some(first_key);
    while let Some(k) = key {
        match k.as_str() {
            "frequency" => {
                let f = map.next_value::<Number>()?.0;
                if !f.is_finite() || f < 0.0 {
                    return Err(de::Error::custom(format!("frequency {f} must be a number >= 0")));
                }
                frequency = Some(f);
            }
            "patterns" => raw.extend(map.next_value::<OneOrMany>()?.0),
            "pattern" => raw.push(map.next_value::<RawPattern>()?),
            other => read_group_field(other, &mut map, &mut defaults)?,
        }
        key = map.next_key()?;
    }
    Group::from_parts(frequency, defaults, raw).map_err(de::Error::custom)
}

impl<'de> Deserialize<'de> for Group {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Group;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a group: a list of patterns or an object with \"patterns\"")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Group, A::Error> {
                let mut raw = Vec::new();
                while let Some(p) = seq.next_element::<RawPattern>()? {
                    raw.push(p);
                }
                Group::from_parts(None, GroupDefaults::default(), raw).map_err(de::Error::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Group, A::Error> {
                match map.next_key::<String>()? {
                    Some(first) => read_group_rest(first, map),
                    None => Err(de::Error::custom("an empty group; give \"patterns\": [\"/path\", ...]")),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for RawPattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawPattern;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a pattern: a path string or an object with \"path\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RawPattern, E> {
                Ok(RawPattern::Path(s.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawPattern, A::Error> {
                let mut d = GroupDefaults::default();
                while let Some(key) = map.next_key::<String>()? {
                    if PATTERN_KEYS.contains(&key.as_str()) {
                        read_group_field(&key, &mut map, &mut d)?;
                    } else {
                        ignore_key(&key, &mut map)?;
                    }
                }
                let fields = LAST_READ.with(|l| {
                    let mut l = l.borrow_mut();
                    match &*l {
                        Some(last) if **last == d.fields => Arc::clone(last),
                        _ => l.insert(Arc::new(d.fields)).clone(),
                    }
                });
                Ok(RawPattern::Full(d.path.unwrap_or_default(), fields))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for TopLevel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TopLevel;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of named groups, a list of groups, or one group")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TopLevel, A::Error> {
                let mut groups = Vec::new();
                while let Some(g) = seq.next_element::<Group>()? {
                    groups.push((None, g));
                }
                Ok(TopLevel(groups))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopLevel, A::Error> {
                let Some(first) = map.next_key::<String>()? else {
                    return Err(de::Error::custom("no groups; see the drnbench pattern format"));
                };
                // A key that is a group field means the file is one group; otherwise keys name groups.
                if GROUP_KEYS.contains(&first.as_str()) && first != "wait" {
                    return Ok(TopLevel(vec![(None, read_group_rest(first, map)?)]));
                }
                // Beside named groups, a top-level "wait" is the clients' wait, not a group.
                let mut groups = Vec::new();
                let mut key = Some(first);
                while let Some(name) = key {
                    if name == "wait" {
                        let mut ignored = GroupDefaults::default();
                        read_group_field("wait", &mut map, &mut ignored)?;
                    } else {
                        groups.push((Some(name), map.next_value::<Group>()?));
                    }
                    key = map.next_key()?;
                }
                if groups.is_empty() {
                    return Err(de::Error::custom("no groups; see the drnbench pattern format"));
                }
                Ok(TopLevel(groups))
            }
        }
        d.deserialize_any(V)
    }
}

/// The shortest pattern timeout in seconds: the engine's timers count whole milliseconds.
pub const MIN_TIMEOUT_S: f64 = 0.001;
/// The longest, a day: a deadline much further away overflows the clock arithmetic (1e19 s hung the run).
pub const MAX_TIMEOUT_S: f64 = 86_400.0;

/// A timeout in seconds, given as a number from [`MIN_TIMEOUT_S`] to [`MAX_TIMEOUT_S`].
struct Seconds(f64);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Number::deserialize(d)?.0;
        if !(MIN_TIMEOUT_S..=MAX_TIMEOUT_S).contains(&s) {
            return Err(de::Error::custom(format!(
                "timeout {s} must be a number of seconds from 0.001 to 86400 (a day)"
            )));
        }
        Ok(Seconds(s))
    }
}

/// A port, 1 to 65535; read as any integer first so that 70000 or -1 is named as a port, not as "a u16".
struct Port(u16);

impl<'de> Deserialize<'de> for Port {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        // Ruby's loader takes "18181" for 18181; so does this one.
        let n = v.as_u64().or_else(|| v.as_str().and_then(|s| s.trim().parse::<u64>().ok()));
        match n {
            Some(p @ 1..=65535) => Ok(Port(p as u16)),
            _ => Err(de::Error::custom(format!("port {v} must be a number from 1 to 65535"))),
        }
    }
}

/// Headers as an object of name to string value, in file order.
struct Headers(Vec<(String, String)>);

impl<'de> Deserialize<'de> for Headers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Headers;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("headers as an object of name: value strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Headers, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, String>()? {
                    out.push((k, v));
                }
                Ok(Headers(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A body: a string is sent as it is; any other JSON value is sent as its JSON text, and an object is also kept
/// as form fields for a GET.
struct Body {
    text: String,
    form: Option<Vec<(String, String)>>,
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let form = v.as_object().map(|o| {
            o.iter()
                .map(|(k, v)| {
                    let value = match v {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), value)
                })
                .collect()
        });
        let text = match v {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        Ok(Body { text, form })
    }
}

/// A number, or a string holding one (`"0.5"`), as Ruby's `to_f` reads drnbench files.
struct Number(f64);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Number, E> {
                Ok(Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Number, E> {
                Ok(Number(v as f64))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Number, E> {
                Ok(Number(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Number, E> {
                v.trim().parse::<f64>().map(Number).map_err(|_| E::custom(format!("'{}' is not a number", excerpt(v))))
            }
        }
        d.deserialize_any(V)
    }
}

/// `"patterns"`: a list of patterns, or one pattern object.
struct OneOrMany(Vec<RawPattern>);

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OneOrMany;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of patterns, or one pattern")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OneOrMany, A::Error> {
                let mut out = Vec::new();
                while let Some(p) = seq.next_element::<RawPattern>()? {
                    out.push(p);
                }
                Ok(OneOrMany(out))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<OneOrMany, E> {
                Ok(OneOrMany(vec![RawPattern::Path(s.to_string())]))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<OneOrMany, A::Error> {
                let p = RawPattern::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(OneOrMany(vec![p]))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_one_group_of_paths_and_urls() {
        let set = parse("/a\n\n# comment\nhttp://127.0.0.1:81/b\n").unwrap();
        assert_eq!(set.groups.len(), 1);
        let paths: Vec<_> = set.groups[0].patterns.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["/a", "http://127.0.0.1:81/b"]);
    }

    #[test]
    fn plain_text_lines_that_are_not_paths_name_line_and_column() {
        let err = parse("/a\n  select?q=1\n").unwrap_err();
        assert!(err.starts_with("2:3: 'select?q=1' is neither a path nor a URL"), "{err}");
        let err = parse("/a\n /b c\n").unwrap_err();
        assert!(err.starts_with("2:4: '/b c' holds a space"), "{err}");
    }

    #[test]
    fn the_drnbench_example_reads_with_frequencies_and_methods() {
        let set = parse(
            r#"{
              "with-query":    {"frequency": 0.9, "method": "get", "patterns": [{"path": "/d/select?table=Pages&query=AAA"}]},
              "without-query": {"frequency": 0.1, "method": "get", "patterns": ["/d/select?table=Pages&limit=10"]}
            }"#,
        )
        .unwrap();
        assert_eq!(set.groups.len(), 2);
        assert_eq!(set.groups[0].name, "with-query");
        assert_eq!(set.groups[0].frequency, 0.9);
        assert_eq!(set.groups[0].patterns[0].fields().method.as_deref(), Some("GET"));
        assert_eq!(set.groups[1].patterns[0].path, "/d/select?table=Pages&limit=10");
    }

    #[test]
    fn pattern_fields_override_group_fields_and_missing_ones_are_inherited() {
        let set = parse(
            r#"[{"host": "a", "port": 81, "timeout": 2, "headers": {"X-A": "1", "X-B": "g"},
                 "patterns": [{"path": "/p", "host": "b", "headers": {"X-B": "p"}, "body": {"k": 1}}, "/q"]}]"#,
        )
        .unwrap();
        let g = &set.groups[0];
        assert_eq!(g.frequency, 1.0);
        let p = g.patterns[0].fields();
        assert_eq!((p.host.as_deref(), p.port, p.timeout), (Some("b"), Some(81), Some(2.0)));
        assert_eq!(p.headers, vec![("X-B".into(), "p".into()), ("X-A".into(), "1".into())]);
        assert_eq!(p.body.as_deref(), Some(r#"{"k":1}"#));
        assert_eq!(g.patterns[1].fields().host.as_deref(), Some("a"));
    }

    #[test]
    fn a_single_group_and_default_frequencies_are_accepted() {
        let set = parse(r#"{"pattern": "/only"}"#).unwrap();
        assert_eq!(set.groups[0].patterns[0].path, "/only");
        let set = parse(r#"[["/a"], ["/b"]]"#).unwrap();
        assert_eq!(set.groups.iter().map(|g| g.frequency).collect::<Vec<_>>(), [0.5, 0.5]);
    }

    #[test]
    fn malformed_json_names_line_and_column() {
        let err = parse("{\n  \"g\": {\"patterns\": [\"/a\",]}\n}").unwrap_err();
        assert!(err.starts_with("2:"), "{err}");
        let err = parse("{\"g\": {\"frequency\": \"high\", \"patterns\": [\"/a\"]}}").unwrap_err();
        assert!(err.starts_with("1:26:") && err.contains("'high' is not a number"), "{err}");
    }

    #[test]
    fn every_shape_drnbench_reads_is_read() {
        let paths = |set: &PatternSet| -> Vec<Vec<String>> {
            set.groups.iter().map(|g| g.patterns.iter().map(|p| p.path.clone()).collect()).collect()
        };
        // A top-level list of paths, or of pattern objects: one group.
        assert_eq!(paths(&parse(r#"["/a", "/b"]"#).unwrap()), [["/a", "/b"]]);
        assert_eq!(paths(&parse(r#"[{"path": "/a"}, {"path": "/b", "method": "post"}]"#).unwrap()), [["/a", "/b"]]);
        // A group whose "patterns" is one object; numbers written as strings, as Ruby's loader takes them.
        let set = parse(r#"{"g": {"frequency": "0.5", "port": "18181", "timeout": "2", "patterns": {"path": "/x"}}}"#)
            .unwrap();
        assert_eq!((set.groups[0].frequency, set.groups[0].patterns[0].fields().port), (0.5, Some(18181)));
        assert_eq!(set.groups[0].patterns[0].fields().timeout, Some(2.0));
        // Unknown keys (a comment, drnbench's "command" or a group name) are ignored, with one warning.
        let set = parse(
            r#"{"with-query": {"name": "q", "command": "select", "patterns": [{"path": "/q", "comment": "x"}]},
                "other": {"frequency": 0.1, "patterns": ["/o"]}}"#,
        )
        .unwrap();
        assert_eq!(paths(&set), [vec!["/q"], vec!["/o"]]);
        assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
        assert!(set.warnings[0].contains(r#""command", "comment", "name""#), "{:?}", set.warnings);
        // One group with extra keys at the top; a pattern without a path gets drnbench's "/".
        let set = parse(r#"{"name": "only", "patterns": [{"pth": "/a"}]}"#).unwrap();
        assert_eq!(paths(&set), [["/"]]);
        assert!(set.warnings[0].contains(r#""name", "pth""#), "{:?}", set.warnings);
        // A "wait" at the top or in a group is the clients' wait after each answer.
        let set = parse(r#"{"wait": "0.01", "a": ["/a"], "b": {"wait": 0.02, "patterns": ["/b"]}}"#).unwrap();
        assert_eq!(paths(&set), [["/a"], ["/b"]]);
        assert_eq!(set.wait, Some(0.02));
        assert!(set.warnings.is_empty(), "{:?}", set.warnings);
        assert_eq!(parse(r#"{"wait": 0.01, "patterns": ["/x"]}"#).unwrap().wait, Some(0.01));
        // A body object is kept as form fields too (a GET sends them as the query string).
        let set = parse(r#"[{"path": "/s", "body": {"q": "a b", "n": 10}}]"#).unwrap();
        let p = set.groups[0].patterns[0].fields();
        assert_eq!(p.body.as_deref(), Some(r#"{"n":10,"q":"a b"}"#));
        assert_eq!(p.body_form.as_deref(), Some(&[("n".into(), "10".into()), ("q".into(), "a b".into())][..]));
    }

    #[test]
    fn a_byte_order_mark_is_skipped() {
        let set = parse("\u{feff}/a\n").unwrap();
        assert_eq!(set.groups[0].patterns[0].path, "/a");
        let set = parse("\u{feff}{\"g\": {\"patterns\": [\"/a\"]}}").unwrap();
        assert_eq!(set.groups[0].name, "g");
    }

    #[test]
    fn out_of_range_ports_timeouts_and_frequencies_are_refused() {
        let err = parse(r#"{"port": 70000, "patterns": ["/a"]}"#).unwrap_err();
        assert!(err.starts_with("1:") && err.contains("port 70000 must be a number from 1 to 65535"), "{err}");
        for t in ["1e300", "1e19", "-1", "0", "0.0001"] {
            let err = parse(&format!(r#"{{"timeout": {t}, "patterns": ["/a"]}}"#)).unwrap_err();
            assert!(err.contains("must be a number of seconds from 0.001"), "{t}: {err}");
        }
        let err =
            parse(r#"{"a": {"frequency": 1e308, "patterns": ["/a"]}, "b": {"frequency": 1e308, "patterns": ["/b"]}}"#)
                .unwrap_err();
        assert!(err.contains("add up to more than a number can hold"), "{err}");
    }

    #[test]
    fn empty_and_zero_weight_sets_are_rejected() {
        assert!(parse("").is_err());
        assert!(parse(r#"{"g": {"patterns": []}}"#).is_err());
        assert!(parse(r#"{"g": {"frequency": 0, "patterns": ["/a"]}}"#).unwrap_err().contains("frequency 0"));
        assert!(parse(r#"{"g": {"frequency": -1, "patterns": ["/a"]}}"#).is_err());
    }
}
