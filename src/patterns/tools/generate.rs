//! `generate`: terms turned into a drnbench JSON pattern file (as drnbench-generate-select-patterns does): the path
//! template filled per term, hosts, methods, groups sized for an expected cache hit rate.

use super::*;

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
pub fn parse_hit_rate(text: &str) -> Result<f64, CliError> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    };
    match value {
        Ok(r) if r.is_finite() && r > 0.0 && r <= 1.0 => Ok(r),
        Ok(r) if r > 1.0 && r <= 100.0 && !t.ends_with('%') => Err(CliError::new(format!(
            "--hit-rate '{text}': a fraction is at most 1; write --hit-rate {} or {t}%",
            r / 100.0
        ))),
        _ => Err(CliError::new(format!(
            "--hit-rate '{text}': give a fraction above 0 and at most 1 (0.5) or a percentage (50%)"
        ))),
    }
}

/// drnbench-generate-select-patterns: a drnbench JSON pattern file of one request per term.
///
/// With `hit_rate`, the first round(cache_size / hit_rate) distinct terms are used (the Droonga tutorial's rule:
/// 100 cached results at 50 % need 200 unique requests); without it, every term in order, repeats included.
pub fn generate(opts: &GenerateOptions, stdin: &mut dyn Read) -> Result<Generated, CliError> {
    check_template(&opts.template)?;
    let method = check_method(&opts.method)?;
    let hosts = parse_hosts(&opts.hosts)?;
    if let Some(r) = opts.hit_rate
        && !(r.is_finite() && r > 0.0 && r <= 1.0)
    {
        return Err(CliError::new(format!(
            "--hit-rate {r}: give a fraction above 0 and at most 1 (0.5) or a percentage (50%)"
        )));
    }
    let (name, text) = read_terms(&opts.terms, stdin)?;
    let all: Vec<&str> = text.lines().map(str::trim).filter(|t| !t.is_empty()).collect();
    if all.is_empty() {
        return Err(CliError::new(format!(
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
                return Err(CliError::new(
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
        .map_err(|e| CliError::runtime(format!("cannot write the pattern file: {e}")))?;
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
pub(super) struct GroupJson<'a> {
    pub(super) frequency: f64,
    pub(super) method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) host: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) port: Option<u16>,
    pub(super) patterns: &'a [PatternJson],
}

#[derive(Serialize)]
pub(super) struct PatternJson {
    pub(super) path: String,
}

/// Named groups, serialized as one JSON object in this order.
pub(super) struct GroupsJson<'a>(Vec<(String, GroupJson<'a>)>);

impl Serialize for GroupsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(name, group)| (name, group)))
    }
}

/// "50%", "33.3%".
pub(super) fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if (p - p.round()).abs() < 0.05 { format!("{p:.0}%") } else { format!("{p:.1}%") }
}

pub(super) fn check_template(template: &str) -> Result<(), CliError> {
    let example = "e.g. --template '/d/select?table=Pages&query={term}'";
    if !template.contains(TERM_PLACEHOLDER) {
        return Err(CliError::new(format!(
            "--template '{template}': no {TERM_PLACEHOLDER} in it; put {TERM_PLACEHOLDER} where each term goes, {example}"
        )));
    }
    let lower = template.to_ascii_lowercase();
    if !(template.starts_with('/') || lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(CliError::new(format!(
            "--template '{template}': not a path or URL; start it with / or http://, {example}"
        )));
    }
    if template.contains(|c: char| c.is_whitespace() || c.is_control()) {
        return Err(CliError::new(format!(
            "--template '{template}': spaces and control characters are not allowed in a request path; \
             percent-encode them (%20)"
        )));
    }
    Ok(())
}

/// The method as drnbench writes it (lower case; hakaru reads either case).
pub(super) fn check_method(method: &str) -> Result<String, CliError> {
    let m = method.trim();
    if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(CliError::new(format!("--method '{method}': not an HTTP method; use GET or POST")));
    }
    Ok(m.to_ascii_lowercase())
}

/// A `--hosts` entry: the group name as given, and the host and port it holds.
pub(super) struct HostEntry {
    pub(super) name: String,
    pub(super) host: String,
    pub(super) port: Option<u16>,
}

pub(super) fn parse_hosts(hosts: &[String]) -> Result<Vec<HostEntry>, CliError> {
    let mut out: Vec<HostEntry> = Vec::new();
    for raw in hosts {
        let entry = parse_host(raw)?;
        if out.iter().any(|h| h.name == entry.name) {
            return Err(CliError::new(format!("--hosts: '{}' is given twice; name each host once", entry.name)));
        }
        out.push(entry);
    }
    Ok(out)
}

/// `name`, `name:port`, `[v6]`, `[v6]:port` or a bare IPv6 address.
pub(super) fn parse_host(raw: &str) -> Result<HostEntry, CliError> {
    let name = raw.trim();
    let bad = |why: &str| {
        CliError::new(format!(
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
pub(super) fn read_terms(path: &Path, stdin: &mut dyn Read) -> Result<(String, String), CliError> {
    let (name, bytes) = read_input(path, stdin)
        .map_err(|e| if path.as_os_str() == "-" { e } else { CliError::new(format!("--terms {e}")) })?;
    let bytes = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) => rest.to_vec(),
        None => bytes,
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        let (line, column) = line_column(e.as_bytes(), e.utf8_error().valid_up_to());
        CliError::new(format!(
            "--terms {name}:{line}:{column}: not UTF-8 text; convert the file to UTF-8 (iconv -t UTF-8)"
        ))
    })?;
    Ok((name, text))
}

/// A warning when the terms will not make good request paths as they are escaped (or not).
pub(super) fn escaping_warning(terms: &[&str], escape: bool) -> Option<String> {
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
pub(super) fn looks_escaped(term: &str) -> bool {
    let b = term.as_bytes();
    let has_sequence = b.windows(3).any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit());
    has_sequence && b.iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'%' | b'+'))
}
