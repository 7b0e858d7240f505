//! What hakaru never shows: secret header values, passwords in URLs, secret query parameters, wherever they stand
//! (a flag, a message, a document). The lists are documented in docs/counting.md, "Safety"; a user adds names
//! with `--redact-header` and `--redact-param`, which reach every process of a run through the environment.

/// Headers whose values must not end up in anything hakaru prints or writes (README, "Safety"); more with
/// `--redact-header NAME` (or `HAKARU_REDACT_HEADERS=a,b`).
pub const SECRET_HEADERS: [&str; 11] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "x-api-token",
    "x-auth-token",
    "x-access-token",
    "x-csrf-token",
    "api-key",
    "x-amz-security-token",
];

/// Query parameters whose values are hidden the same way; more with `--redact-param NAME` (or
/// `HAKARU_REDACT_PARAMS=a,b`).
pub const SECRET_PARAMS: [&str; 20] = [
    "api_key",
    "apikey",
    "api-key",
    "access_token",
    "refresh_token",
    "id_token",
    "token",
    "auth",
    "auth_token",
    "sig",
    "signature",
    "secret",
    "client_secret",
    "password",
    "passwd",
    "jwt",
    "session",
    "sessionid",
    "x-amz-signature",
    "x-amz-credential",
];

/// The environment variables that carry the user's own secret names to every process of a run (agents, a
/// study's cases inherit them): set from `--redact-header` and `--redact-param` before anything runs.
pub const REDACT_HEADERS_VAR: &str = "HAKARU_REDACT_HEADERS";
pub const REDACT_PARAMS_VAR: &str = "HAKARU_REDACT_PARAMS";

/// The arguments of a child's command line that hold secrets, as a JSON array of strings: the child appends them to
/// its own arguments (`main.rs`), so they never stand in a process list or a manifest's args.
pub const SECRET_ARGS_VAR: &str = "HAKARU_SECRET_ARGS";
/// The same list in a file this variable names: an orchestrator's secret mounted as a file (a Docker secret under
/// `/run/secrets/`), which no `docker inspect` or environment listing shows.
pub const SECRET_ARGS_FILE_VAR: &str = "HAKARU_SECRET_ARGS_FILE";

/// The arguments holding secrets handed to this process ([`SECRET_ARGS_VAR`], then the file
/// [`SECRET_ARGS_FILE_VAR`] names), both variables taken out of the environment so they reach no further child.
/// The error names the variable (or the file) and what it should hold; it never quotes the content.
///
/// Call it before any other thread exists: it changes the environment.
pub fn take_secret_args() -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let list = |text: &str, from: &str| {
        serde_json::from_str::<Vec<String>>(text)
            .map_err(|e| format!("{from}: not a JSON list of arguments (line {}, column {})", e.line(), e.column()))
    };
    if let Some(extra) = std::env::var_os(SECRET_ARGS_VAR) {
        // SAFETY: the caller runs this before any other thread exists.
        unsafe { std::env::remove_var(SECRET_ARGS_VAR) };
        args.extend(list(&extra.to_string_lossy(), SECRET_ARGS_VAR)?);
    }
    if let Some(path) = std::env::var_os(SECRET_ARGS_FILE_VAR) {
        // SAFETY: as above.
        unsafe { std::env::remove_var(SECRET_ARGS_FILE_VAR) };
        let path = std::path::PathBuf::from(path);
        let from = format!("{SECRET_ARGS_FILE_VAR} '{}'", path.display());
        let text =
            crate::base::bounded::read_text(&path, crate::base::bounded::SMALL).map_err(|e| format!("{from}: {e}"))?;
        args.extend(list(&text, &from)?);
    }
    Ok(args)
}

/// Whether one argument holds a secret that [`redact_arg`] would hide.
pub fn holds_secret(arg: &str) -> bool {
    redact_arg(arg) != arg
}

/// [`holds_secret`], or a secret by the names of another process's `--redact-header`/`--redact-param` (a Kubernetes
/// agent's command, whose names this process's environment does not hold).
pub fn holds_secret_named(arg: &str, headers: &[String], params: &[String]) -> bool {
    if holds_secret(arg) {
        return true;
    }
    let header =
        arg.split_once(':').is_some_and(|(name, _)| headers.iter().any(|h| name.trim().eq_ignore_ascii_case(h)));
    let param = arg.split_once('?').is_some_and(|(_, query)| {
        query
            .split(['&', '#'])
            .filter_map(|p| p.split_once('='))
            .any(|(n, _)| params.iter().any(|x| n.eq_ignore_ascii_case(x)))
    });
    header || param
}

/// The user's secret names of one list, from its variable (`REDACT_HEADERS_VAR` or `REDACT_PARAMS_VAR`), lower case.
pub fn user_names(var: &str) -> &'static [String] {
    static HEADERS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    static PARAMS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let cell = if var == REDACT_HEADERS_VAR { &HEADERS } else { &PARAMS };
    cell.get_or_init(|| {
        std::env::var(var)
            .unwrap_or_default()
            .split(',')
            .map(|n| n.trim().to_ascii_lowercase())
            .filter(|n| !n.is_empty())
            .collect()
    })
}

/// Whether a header's value is a secret.
pub fn is_secret_header(name: &str) -> bool {
    let name = name.trim();
    SECRET_HEADERS.iter().any(|s| name.eq_ignore_ascii_case(s))
        || user_names(REDACT_HEADERS_VAR).iter().any(|s| name.eq_ignore_ascii_case(s))
}

fn is_secret_param(name: &str) -> bool {
    SECRET_PARAMS.iter().any(|s| name.eq_ignore_ascii_case(s))
        || user_names(REDACT_PARAMS_VAR).iter().any(|s| name.eq_ignore_ascii_case(s))
}

/// Every query in `text` (after each `?`, up to `#`, a space or a quote) with the values of secret parameters
/// replaced by `***`: `/?q=a&token=abc` -> `/?q=a&token=***`.
fn redact_query(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(q) = rest.find('?') {
        out.push_str(&rest[..=q]);
        rest = &rest[q + 1..];
        let end = rest.find(|c: char| c == '#' || c == '"' || c == '\'' || c.is_whitespace()).unwrap_or(rest.len());
        for (k, pair) in rest[..end].split('&').enumerate() {
            if k > 0 {
                out.push('&');
            }
            match pair.split_once('=') {
                Some((name, value)) if !value.is_empty() && is_secret_param(name) => {
                    out.push_str(name);
                    out.push_str("=***");
                }
                _ => out.push_str(pair),
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// A key-value command's words with a password hidden: `AUTH pw` -> `AUTH <redacted>`, `HELLO 3 AUTH u pw` ->
/// `HELLO 3 AUTH <redacted>`, `MIGRATE ... AUTH pw` (or `AUTH2 u pw`) the same; `CONFIG SET requirepass pw` ->
/// `CONFIG SET requirepass <redacted>` (and `masterauth`, the TLS key passphrases); `ACL SETUSER bob on >pw` ->
/// `ACL SETUSER bob on ><redacted>` (and `<pw`, `#hash`, `!hash`). In any case. None when the command holds no
/// password.
pub fn redact_command(words: &[String]) -> Option<String> {
    let is = |i: usize, w: &str| words.get(i).is_some_and(|x| x.trim_matches('"').eq_ignore_ascii_case(w));
    let migrate = is(0, "migrate");
    let auth = (0..words.len()).find(|&i| is(i, "auth") || (migrate && is(i, "auth2")));
    if let Some(auth) = auth
        && words.len() > auth + 1
        && (auth == 0 || is(0, "hello") || migrate)
    {
        return Some(format!("{} <redacted>", words[..=auth].join(" ")));
    }
    let mut out = words.to_vec();
    if is(0, "config") && is(1, "set") {
        // Parameter and value pairs (Redis 7 takes several in one CONFIG SET).
        let secret = ["requirepass", "masterauth", "tls-key-file-pass", "tls-client-key-file-pass"];
        for i in (2..words.len().saturating_sub(1)).step_by(2) {
            if secret.iter().any(|s| is(i, s)) {
                out[i + 1] = "<redacted>".to_string();
            }
        }
    } else if is(0, "acl") && is(1, "setuser") {
        for w in out.iter_mut().skip(3) {
            let rule = w.trim_start_matches('"');
            if let Some(kind) = rule.chars().next().filter(|c| matches!(c, '>' | '<' | '#' | '!')) {
                *w = format!("{kind}<redacted>");
            }
        }
    }
    (out != words).then(|| out.join(" "))
}

/// `Authorization: Bearer abc` -> `Authorization: <redacted>`, `redis://user:pw@host` -> `redis://user:***@host`,
/// `http://h/?token=abc` -> `http://h/?token=***`; anything else is returned as it is.
pub fn redact_secret(arg: &str) -> String {
    // A secret header first: a URL inside its value must not decide how it is shown.
    if let Some((name, _)) = arg.split_once(':')
        && !name.contains(' ')
        && is_secret_header(name)
    {
        return format!("{}: <redacted>", name.trim());
    }
    // A key-value command given whole (`--command "AUTH pw"`).
    let words: Vec<String> = arg.split_whitespace().map(String::from).collect();
    if let Some(hidden) = redact_command(&words) {
        return hidden;
    }
    // A bare `name=value` (a `--label`, a form field) named as a secret parameter or header, as in a query.
    if let Some((name, value)) = arg.split_once('=')
        && !value.is_empty()
        && !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && (is_secret_param(name) || is_secret_header(name))
    {
        return format!("{name}=***");
    }
    // A JSON object (gRPC's `--metadata '{"authorization": "..."}'`): its secret keys' values hidden.
    if arg.trim_start().starts_with('{')
        && let Ok(serde_json::Value::Object(mut map)) = serde_json::from_str::<serde_json::Value>(arg)
    {
        let mut hidden = false;
        for (_, value) in map.iter_mut().filter(|(k, _)| is_secret_header(k)) {
            *value = "<redacted>".into();
            hidden = true;
        }
        if hidden {
            return serde_json::Value::Object(map).to_string();
        }
    }
    redact_userinfo(&redact_query(arg))
}

/// Every URL's password in `text` hidden, however many URLs it holds (`a,b` lists, quoted, after a `name=`).
fn redact_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        // The scheme: the letters right before `://` (a quote or `name=` before them is not part of it).
        let scheme_start = rest[..at]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
            .last()
            .map_or(at, |(i, _)| i);
        let scheme = rest[scheme_start..at].to_ascii_lowercase();
        out.push_str(&rest[..at + 3]);
        let after = &rest[at + 3..];
        // This URL ends where a list, a quote or a space begins; key-value URLs have no '@' after their host, so up
        // to their last '@' is the user and password (which may hold '/', as base64 passwords do); an HTTP URL's
        // authority ends at '/', '?' or '#'.
        let end = after.find([',', ' ', '\'', '"']).unwrap_or(after.len());
        let url = &after[..end];
        let kv = ["redis", "memcache", "memcached"].contains(&scheme.as_str());
        let authority = if kv { url } else { &url[..url.find(['/', '?', '#']).unwrap_or(url.len())] };
        match authority.rfind('@') {
            Some(amp) => {
                let user = url[..amp].split_once(':').map_or("", |(u, _)| u);
                out.push_str(&if user.is_empty() { "***".to_string() } else { format!("{user}:***") });
                out.push_str(&url[amp..]);
            }
            None => out.push_str(url),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Replaces secrets in every string of a JSON value (a result document, a manifest): secret header values,
/// passwords in URLs, secret query parameters, and the same inside flags (`--header=Authorization: x`,
/// `-HCookie: y`) and longer texts, whatever the value already redacted. Every file hakaru writes goes through it.
pub fn scrub_value(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            let clean = scrub_text(s);
            if clean != *s {
                *s = clean;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(scrub_value),
        serde_json::Value::Object(o) => o.values_mut().for_each(scrub_value),
        _ => {}
    }
}

/// A document (a result, a study's manifest) scrubbed: its `settings.labels` without a secret label
/// ([`is_secret_label`]), its `provenance.command_line` without a script's arguments ([`redact_line`]), then every
/// string ([`scrub_value`]). The history and every result file go through it.
pub fn scrub_document(v: &mut serde_json::Value) {
    use serde_json::Value;
    if let Some(labels) = v.pointer_mut("/settings/labels").and_then(Value::as_object_mut) {
        labels.retain(|k, v| !is_secret_label(k, v.as_str().unwrap_or_default()));
    }
    if let Some(line) = v.pointer_mut("/provenance/command_line").and_then(Value::as_array_mut) {
        let words: Vec<&str> = line.iter().map(|w| w.as_str().unwrap_or_default()).collect();
        *line = redact_line(&words).into_iter().map(Value::String).collect();
    }
    scrub_value(v);
}

/// A document (a result, a study's manifest) as pretty JSON, scrubbed ([`scrub_document`]): read
/// back into its own type first so its fields keep their order (a JSON value's map would sort them), the scrubbed
/// value itself if it no longer reads as its type.
pub fn scrubbed_json<T: serde::Serialize + serde::de::DeserializeOwned>(doc: &T) -> serde_json::Result<String> {
    let mut v = serde_json::to_value(doc)?;
    scrub_document(&mut v);
    match serde_json::from_value::<T>(v.clone()) {
        Ok(clean) => serde_json::to_string_pretty(&clean),
        Err(_) => serde_json::to_string_pretty(&v),
    }
}

/// The secret values this process was given (secret headers' values, `--metadata`'s): a server that echoes one
/// back (`invalid token Bearer SECRET` in a grpc-message) has it hidden wherever it stands, not only beside its name.
static KNOWN: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());
/// Values shorter than this are not hunted in texts: they would hide common words (a secret that short is no secret).
const SHORTEST_KNOWN: usize = 8;

/// Remembers the value of a secret header line (`Authorization: Bearer abc`) given to this process, and its token
/// without the scheme word, so [`scrub_text`] hides either wherever a peer echoes it. Lines of other headers are
/// left alone. Returns how many values were new.
pub fn remember_header(line: &str) -> usize {
    let Some((name, value)) = line.split_once(':').filter(|(n, _)| is_secret_header(n.trim())) else { return 0 };
    let value = value.trim();
    let token = value.split_once(' ').map(|(_, t)| t.trim());
    // A cookie header's each value (`session=abc; theme=x`): a server may echo one alone.
    let cookies: Vec<&str> = match name.trim().eq_ignore_ascii_case("cookie") {
        true => value.split(';').filter_map(|pair| pair.split_once('=')).map(|(_, v)| v.trim()).collect(),
        false => Vec::new(),
    };
    remember_values([Some(value), token].into_iter().flatten().chain(cookies))
}

/// The most secret header values a script may add to those remembered: a script that signs each request makes a
/// new value each time, and hunting an ever longer list in every text (and sorting it under a lock each request)
/// took its throughput from 83k to 6k requests a second. Its first values are hidden wherever echoed; later ones
/// only beside their header's name.
const MOST_SCRIPT_SECRETS: usize = 64;
static SCRIPT_SECRETS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// [`remember_header`] for a header a script put in its request, within [`MOST_SCRIPT_SECRETS`] values.
pub fn remember_script_header(line: &str) {
    use std::sync::atomic::Ordering;
    if SCRIPT_SECRETS.load(Ordering::Relaxed) >= MOST_SCRIPT_SECRETS {
        return;
    }
    SCRIPT_SECRETS.fetch_add(remember_header(line), Ordering::Relaxed);
}

/// Remembers a secret given to this process other than as a header (a proxy URL's or a Redis URL's password), so
/// [`scrub_text`] hides it wherever a peer echoes it.
pub fn remember_value(value: &str) {
    remember_values([value]);
}

/// Remembers the values worth hunting; how many were new.
fn remember_values<'a>(values: impl IntoIterator<Item = &'a str>) -> usize {
    // A value that is only a scheme word (`Bearer` with an empty token) is no secret to hunt.
    let schemes = ["bearer", "basic", "token", "digest", "negotiate"];
    let worth = |v: &&str| v.len() >= SHORTEST_KNOWN && !schemes.contains(&v.to_ascii_lowercase().as_str());
    let values: Vec<&str> = values.into_iter().filter(worth).collect();
    // Known already (a script's request made again): no lock taken for writing.
    let known = KNOWN.read().unwrap_or_else(|p| p.into_inner());
    if values.iter().all(|v| known.iter().any(|k| k == v)) {
        return 0;
    }
    drop(known);
    let mut known = KNOWN.write().unwrap_or_else(|p| p.into_inner());
    let before = known.len();
    for v in values {
        if !known.iter().any(|k| k == v) {
            known.push(v.to_string());
        }
    }
    // The longest first: a token inside a longer value is hidden with it.
    known.sort_by_key(|k| std::cmp::Reverse(k.len()));
    known.len() - before
}

/// `s` with every remembered secret value replaced by `<redacted>`.
fn hide_known(s: &str) -> std::borrow::Cow<'_, str> {
    let known = KNOWN.read().unwrap_or_else(|p| p.into_inner());
    if !known.iter().any(|k| s.contains(k.as_str())) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = s.to_string();
    for k in known.iter() {
        out = out.replace(k.as_str(), "<redacted>");
    }
    std::borrow::Cow::Owned(out)
}

/// One text with its secrets hidden: a flag or header as a whole (its value runs to the end), else word by word (a
/// message, a target list, a command line in one string), and every secret value this process was given wherever
/// it stands ([`remember_header`]).
pub fn scrub_text(s: &str) -> String {
    let s = &*hide_known(s);
    if s.contains('\n') {
        return s.split('\n').map(scrub_line).collect::<Vec<_>>().join("\n");
    }
    scrub_line(s)
}

/// The first `most` characters of `text` with its secrets hidden: scrubbed whole, then cut, so a secret the cut
/// would have split is hidden whole (cut first, its start stayed, too short to be recognised).
pub fn scrubbed_start(text: &str, most: usize) -> String {
    let s = scrub_text(text);
    let cut = s.char_indices().nth(most).map_or(s.len(), |(i, _)| i);
    s[..cut].to_string()
}

/// [`scrub_text`] of one line: a secret header's value runs to the line's end.
fn scrub_line(s: &str) -> String {
    if !s.contains(' ') {
        return redact_arg(s);
    }
    let header_first = s.split_once(':').is_some_and(|(name, _)| !name.contains(' ') && is_secret_header(name));
    if s.starts_with('-') || header_first {
        let whole = redact_arg(s);
        if whole != s {
            return whole;
        }
    }
    let mut words = Vec::new();
    for word in s.split(' ') {
        // A secret header inside a text (`-H X-Auth-Token: abc`, `-HCookie:a`, `'Authorization: x`): its value is the
        // rest of the line.
        let bare = word.trim_start_matches(['\'', '"', '(']);
        let bare = bare.strip_prefix("--header=").or_else(|| bare.strip_prefix("-H")).unwrap_or(bare);
        if let Some((name, _)) = bare.split_once(':')
            && is_secret_header(name)
        {
            let lead = &word[..word.len() - bare.len()];
            words.push(format!("{lead}{name}: <redacted>"));
            return words.join(" ");
        }
        words.push(redact_arg(word));
    }
    words.join(" ")
}

/// What stands for each word after `--` (a script's arguments) in a command line shown or written.
pub const SCRIPT_ARG_SHOWN: &str = "<redacted>";

/// A command line as it may be shown or written (a result's `provenance.command_line`, a study's manifest): each
/// argument through [`redact_arg`], and every word after the first bare `--` (a Lua script's arguments, which
/// often are a user and a password: no list can tell) replaced by [`SCRIPT_ARG_SHOWN`].
pub fn redact_line<S: AsRef<str>>(args: &[S]) -> Vec<String> {
    let cut = args.iter().position(|a| a.as_ref() == "--").map_or(args.len(), |i| i + 1);
    let shown = args[..cut].iter().map(|a| redact_arg(a.as_ref()));
    shown.chain(args[cut..].iter().map(|_| SCRIPT_ARG_SHOWN.to_string())).collect()
}

/// Whether a label (`--label KEY=VALUE`) names a secret or holds one: such a label is kept nowhere (not in
/// `settings.labels`, the history, an export or a Prometheus series), so one rule hides it everywhere.
pub fn is_secret_label(key: &str, value: &str) -> bool {
    is_secret_header(key) || holds_secret(&format!("?{key}={value}")) || scrub_text(value) != value
}

/// One command-line argument with its secrets redacted, a flag with its value glued on included:
/// `--header=Authorization: x` -> `--header=Authorization: <redacted>`, `-HCookie: y` -> `-HCookie: <redacted>`.
pub fn redact_arg(arg: &str) -> String {
    if let Some(rest) = arg.strip_prefix("--")
        && let Some((flag, value)) = rest.split_once('=')
    {
        return format!("--{flag}={}", redact_secret(value));
    }
    // A cluster of short flags with -H's value glued on: `-HCookie: y`, `-H=Cookie: y`, `-kHX-Api-Key: y`.
    if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.starts_with('-'))
        && let Some(h) = cluster.find('H')
        && cluster[..h].chars().all(|c| c.is_ascii_alphabetic())
        && h + 1 < arg.len() - 1
    {
        let value = &cluster[h + 1..];
        let (eq, value) = match value.strip_prefix('=') {
            Some(v) => ("=", v),
            None => ("", value),
        };
        return format!("-{}{eq}{}", &cluster[..=h], redact_secret(value));
    }
    redact_secret(arg)
}

/// The most characters of a file's content an error quotes.
pub const EXCERPT: usize = 40;

/// serde_json's reason for a document it refused, without the place it appends (the caller says the place in
/// the file's own terms: a line of a file of lines, an entry), as an [`excerpt`].
pub fn json_reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    excerpt(text.rfind(" at line ").map_or(text.as_str(), |i| &text[..i]))
}

/// A short excerpt of a file's content for an error: its secrets hidden ([`scrub_text`]), control characters
/// escaped, cut to [`EXCERPT`] characters (`...` saying so). An error about a file says where; quoting more of it
/// would print what a careless `--patterns /etc/shadow` pointed at.
pub fn excerpt(content: &str) -> String {
    let scrubbed = scrub_text(content);
    let escaped: String = scrubbed.escape_debug().collect();
    match escaped.char_indices().nth(EXCERPT) {
        Some((cut, _)) => format!("{}...", &escaped[..cut]),
        None => escaped,
    }
}

/// `message` with each of its double-quoted parts made an [`excerpt`]: what a parser's error (serde's `invalid
/// type: string "..."`) quotes of a file.
pub fn excerpt_quoted(message: &str) -> String {
    let mut out = String::new();
    let mut parts = message.split('"');
    out.push_str(parts.next().unwrap_or(""));
    for (i, part) in parts.enumerate() {
        out.push('"');
        out.push_str(&if i % 2 == 0 { excerpt(part) } else { part.to_string() });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_excerpt_is_short_scrubbed_and_escaped() {
        assert_eq!(excerpt("/a?q=1"), "/a?q=1");
        let long = format!("/{}", "x".repeat(100));
        assert_eq!(excerpt(&long), format!("/{}...", "x".repeat(EXCERPT - 1)));
        assert_eq!(excerpt("/a?token=abc"), "/a?token=***");
        assert_eq!(excerpt("Authorization: Bearer xyz"), "Authorization: <redacted>");
        assert_eq!(excerpt("a\tb"), "a\\tb");
        assert_eq!(excerpt("a\u{1}"), "a\\u{1}");
        let quoted = excerpt_quoted(&format!("invalid type: string \"{long}\", expected a pattern"));
        assert_eq!(quoted, format!("invalid type: string \"/{}...\", expected a pattern", "x".repeat(EXCERPT - 1)));
    }

    #[test]
    fn a_commands_password_is_hidden() {
        let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        for (input, want) in [
            ("AUTH pw", Some("AUTH <redacted>")),
            ("auth user pw", Some("auth <redacted>")),
            ("HELLO 3 AUTH u pw", Some("HELLO 3 AUTH <redacted>")),
            ("MIGRATE h 6379 k 0 10 AUTH pw", Some("MIGRATE h 6379 k 0 10 AUTH <redacted>")),
            ("migrate h 6379 \"\" 0 10 auth2 u pw KEYS a", Some("migrate h 6379 \"\" 0 10 auth2 <redacted>")),
            ("CONFIG SET requirepass pw", Some("CONFIG SET requirepass <redacted>")),
            ("config set maxmemory 1 MasterAuth pw", Some("config set maxmemory 1 MasterAuth <redacted>")),
            ("ACL SETUSER bob on >pw ~* +@all", Some("ACL SETUSER bob on ><redacted> ~* +@all")),
            ("acl setuser bob <old #abc", Some("acl setuser bob <<redacted> #<redacted>")),
            ("CONFIG SET maxmemory 1", None),
            ("ACL SETUSER bob on", None),
            ("SET auth __data__", None),
            ("GET __key__", None),
        ] {
            if let Some(hidden) = want {
                assert_eq!(redact_secret(input), hidden, "redact_secret({input:?})");
            }
            let want = want.map(String::from);
            assert_eq!(redact_command(&words(input)), want, "redact_command({input:?})");
        }
    }

    #[test]
    fn passwords_in_urls_are_hidden() {
        for (input, want) in [
            ("redis://u:hunter2@127.0.0.1:6379/2", "redis://u:***@127.0.0.1:6379/2"),
            ("redis://:hunter2@h", "redis://***@h"),
            ("http://127.0.0.1/a@b", "http://127.0.0.1/a@b"),
        ] {
            assert_eq!(redact_secret(input), want, "redact_secret({input:?})");
        }
        // A password holding '/', a query holding '@', a secret header holding a URL.
        for (input, want) in [
            ("redis://:ab/cd@127.0.0.1", "redis://***@127.0.0.1"),
            ("http://h:8080?email=a@b.com", "http://h:8080?email=a@b.com"),
            ("Cookie: sid=S; r=https://u@x", "Cookie: <redacted>"),
        ] {
            assert_eq!(redact_secret(input), want, "redact_secret({input:?})");
        }
    }

    #[test]
    fn a_json_objects_secret_keys_are_redacted() {
        let shown = redact_secret(r#"{"authorization": "Bearer abc", "x-trace": "1"}"#);
        assert_eq!(shown, r#"{"authorization":"<redacted>","x-trace":"1"}"#);
        assert!(holds_secret(r#"{"Cookie":"sid=1"}"#));
        let plain = r#"{"name": "x"}"#;
        assert_eq!(redact_secret(plain), plain, "an object without secrets is left as written");
    }

    #[test]
    fn secret_headers_are_redacted_and_others_kept() {
        for (input, want) in [
            ("Authorization: Bearer abc", "Authorization: <redacted>"),
            ("cookie:a=b", "cookie: <redacted>"),
            ("X-Test: 1", "X-Test: 1"),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/"),
        ] {
            assert_eq!(redact_secret(input), want, "redact_secret({input:?})");
        }
    }

    #[test]
    fn secret_query_parameters_are_hidden_wherever_a_query_stands() {
        for (input, want) in [
            ("http://h/a?q=1&api_key=K&b=2#f", "http://h/a?q=1&api_key=***&b=2#f"),
            ("GET /?TOKEN=abc", "GET /?TOKEN=***"),
            ("/x?sig=s&sig=t", "/x?sig=***&sig=***"),
            ("http://h/?key=1", "http://h/?key=1"),
            ("http://u:pw@h/?token=t", "http://u:***@h/?token=***"),
            ("X-Auth-Token: abc", "X-Auth-Token: <redacted>"),
        ] {
            assert_eq!(redact_secret(input), want, "redact_secret({input:?})");
        }
        for (input, want) in [
            ("target http://h/?access_token=A said no", "target http://h/?access_token=*** said no"),
            ("hakaru run -H Cookie: a=b c http://h/", "hakaru run -H Cookie: <redacted>"),
            ("a Cookie: x\nnext line\n", "a Cookie: <redacted>\nnext line\n"),
        ] {
            assert_eq!(scrub_text(input), want, "scrub_text({input:?})");
        }
        assert_eq!(
            scrub_text("before: http://u:A@h/s: no; after: http://u:B@h/s: no"),
            "before: http://u:***@h/s: no; after: http://u:***@h/s: no"
        );
        let mut v = serde_json::json!({"a": ["Proxy-Authorization: Basic x", "-HX-Api-Token: y"], "b": 1});
        scrub_value(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a": ["Proxy-Authorization: <redacted>", "-HX-Api-Token: <redacted>"], "b": 1})
        );
    }

    #[test]
    fn every_url_in_a_text_and_every_glued_header_is_hidden() {
        for (input, want) in [
            ("'redis://:s3cr/et@127.0.0.1:6379'", "'redis://***@127.0.0.1:6379'"),
            ("a=http://h/,b=redis://:pw@h", "a=http://h/,b=redis://***@h"),
            ("http://u:p@h/,redis://:pw@h2", "http://u:***@h/,redis://***@h2"),
        ] {
            assert_eq!(redact_secret(input), want, "redact_secret({input:?})");
        }
        for (input, want) in [
            ("-H=Authorization:Bearer_X", "-H=Authorization: <redacted>"),
            ("-kHX-Api-Key:Y", "-kHX-Api-Key: <redacted>"),
            ("-k", "-k"),
        ] {
            assert_eq!(redact_arg(input), want, "redact_arg({input:?})");
        }
        assert_eq!(
            scrub_text("hakaru run -HAuthorization: Bearer abc http://h/"),
            "hakaru run -HAuthorization: <redacted>"
        );
        for (input, want) in [
            ("x --header=Cookie: sid=abc more", "x --header=Cookie: <redacted>"),
            ("header Authorization:Bearer abc", "header Authorization: <redacted>"),
            ("--header 'Authorization: x y': bad", "--header 'Authorization: <redacted>"),
        ] {
            assert_eq!(scrub_text(input), want, "scrub_text({input:?})");
        }
    }

    #[test]
    fn flags_with_their_secret_values_glued_on_are_redacted() {
        for (input, want) in [
            ("--header=Authorization: Bearer abc", "--header=Authorization: <redacted>"),
            ("-HCookie: sid=1", "-HCookie: <redacted>"),
            ("--url=redis://:pw@127.0.0.1", "--url=redis://***@127.0.0.1"),
            ("--label=branch=main", "--label=branch=main"),
            ("--label=token=abc", "--label=token=***"),
            ("api-key=k", "api-key=***"),
            ("-H", "-H"),
        ] {
            assert_eq!(redact_arg(input), want, "redact_arg({input:?})");
        }
    }

    #[test]
    fn a_secret_echoed_by_a_peer_is_hidden_wherever_it_stands() {
        remember_header("Authorization: Bearer s3cr3t-TOKEN-42");
        remember_header("X-Trace: not-a-secret-value");
        let echoed = "gRPC status UNAUTHENTICATED (16): invalid token Bearer s3cr3t-TOKEN-42";
        assert_eq!(scrub_text(echoed), "gRPC status UNAUTHENTICATED (16): invalid token <redacted>");
        assert_eq!(scrub_text("bad token s3cr3t-TOKEN-42, try again"), "bad token <redacted>, try again");
        assert_eq!(scrub_text("not-a-secret-value"), "not-a-secret-value");
    }

    #[test]
    fn a_cookies_own_value_a_password_and_a_secret_cut_in_two_are_hidden() {
        remember_header("Cookie: theme=dark; session=c00kie-VALUE-77");
        assert_eq!(scrub_text("unknown session c00kie-VALUE-77"), "unknown session <redacted>");
        remember_value("pr0xy-PASSWORD");
        assert_eq!(scrub_text("407: user u, password pr0xy-PASSWORD"), "407: user u, password <redacted>");
        // Cut inside the secret, its start would have stayed: scrubbed whole first.
        remember_header("X-Api-Key: k3y-0123456789abcdef");
        let echoed = "invalid key k3y-0123456789abcdef for this route";
        assert_eq!(scrubbed_start(echoed, 20), "invalid key <redacte");
        assert_eq!(scrubbed_start("short", 20), "short");
    }
}
