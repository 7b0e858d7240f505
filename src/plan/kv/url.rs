//! A kv server's URL read (`redis://[USER:PASSWORD@]HOST:PORT[/DB]`, `memcache://HOST:PORT`, a Unix socket's
//! `redis+unix://` and `memcache+unix://`) and the greeting its connections make (AUTH, SELECT), the password kept
//! out of every output.

use super::*;

/// A server URL, read.
pub(super) struct KvUrl {
    pub(super) protocol: Protocol,
    pub(super) endpoint: Endpoint,
    /// Redis: `AUTH [user] password`, from `redis://[user]:password@host`.
    pub(super) auth: Option<(Option<String>, String)>,
    /// Redis: `SELECT db`, from `redis://host/db`.
    pub(super) db: Option<u32>,
}

/// Reads a server URL. A password in it is never echoed in an error.
pub(super) fn parse_url(url: &str) -> Result<KvUrl, CliError> {
    let shown = crate::base::secrets::redact_secret(url);
    let bad = |why: &str| CliError::new(format!("URL '{shown}': {why}"));
    if let Some((protocol, path)) = unix_url(url) {
        // A password (`:pw@`) or options (`?password=`, `?db=`) are not read from this form: refused, and the URL
        // not quoted, as it may hold the password.
        if path.contains(['@', '?']) {
            return Err(CliError::new(format!(
                "a {} URL takes a socket's path alone: a password or options (user:pass@, ?password=, ?db=) are not \
                 read from it yet; give redis+unix:///PATH, or reach the server over TCP with redis://:PASSWORD@HOST:PORT/DB",
                url.split("://").next().unwrap_or("unix").split(':').next().unwrap_or("unix")
            )));
        }
        let default_port = if protocol == Protocol::Resp { 6379 } else { 11211 };
        let endpoint = Endpoint::on_socket(Scheme::Http, "localhost", default_port, std::path::Path::new(path))
            .map_err(|e| bad(&e))?;
        return Ok(KvUrl { protocol, endpoint, auth: None, db: None });
    }
    let (protocol, rest, default_port) = if let Some(r) = url.strip_prefix("redis://") {
        (Protocol::Resp, r, 6379)
    } else if let Some(r) = url.strip_prefix("memcache://").or_else(|| url.strip_prefix("memcached://")) {
        (Protocol::Memcache, r, 11211)
    } else {
        return Err(bad("not a key-value server; write redis://HOST:PORT, memcache://HOST:PORT or redis+unix:///PATH"));
    };
    // The user and password run to the last '@' (a password may hold '/'); then host, port and database.
    let (userinfo, after) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    };
    let (hostport, path) = match after.split_once('/') {
        Some((h, p)) => (h, p.trim_end_matches('/')),
        None => (after, ""),
    };
    if protocol == Protocol::Memcache && (userinfo.is_some() || !path.is_empty()) {
        return Err(bad("memcached's text protocol has no password and no database; write memcache://HOST:PORT"));
    }
    // Percent-decoded, as redis-cli and the client libraries read them (`p%2Fss` is `p/ss`).
    let auth = userinfo.map(|u| match u.split_once(':') {
        Some((user, pass)) => {
            (Some(percent_decode(user.as_bytes())).filter(|u| !u.is_empty()), percent_decode(pass.as_bytes()))
        }
        None => (None, percent_decode(u.as_bytes())),
    });
    let db = if path.is_empty() {
        None
    } else {
        Some(
            path.parse::<u32>()
                .map_err(|_| bad("the database after the host must be a number: redis://HOST:PORT/2"))?,
        )
    };
    let (host, port) = split_host_port(hostport).map_err(|e| bad(&e))?;
    let endpoint = Endpoint::resolve(Scheme::Http, &host, port.unwrap_or(default_port)).map_err(|e| bad(&e))?;
    if let Some((_, password)) = &auth {
        crate::base::secrets::remember_value(password);
    }
    Ok(KvUrl { protocol, endpoint, auth, db })
}

/// A server on a Unix socket: `redis+unix:///PATH` (or `unix:/PATH`, `unix:///PATH`, as redis-py writes it),
/// `memcache+unix:///PATH`; the protocol and the path.
pub(super) fn unix_url(url: &str) -> Option<(Protocol, &str)> {
    let forms = [
        ("redis+unix://", Protocol::Resp),
        ("unix://", Protocol::Resp),
        ("unix:", Protocol::Resp),
        ("memcache+unix://", Protocol::Memcache),
        ("memcached+unix://", Protocol::Memcache),
    ];
    forms.iter().find_map(|(prefix, protocol)| url.strip_prefix(prefix).map(|path| (*protocol, path)))
}

/// The AUTH and SELECT a URL asks for, as one greeting.
pub(super) fn greeting(u: &KvUrl) -> Option<Greeting> {
    let mut commands: Vec<std::sync::Arc<[u8]>> = Vec::new();
    let mut what = Vec::new();
    if let Some((user, pass)) = &u.auth {
        commands.push(
            match user {
                Some(user) => resp::encode(&[b"AUTH", user.as_bytes(), pass.as_bytes()]),
                None => resp::encode(&[b"AUTH", pass.as_bytes()]),
            }
            .into(),
        );
        what.push("AUTH");
    }
    if let Some(db) = u.db {
        commands.push(resp::encode(&[b"SELECT", db.to_string().as_bytes()]).into());
        what.push("SELECT");
    }
    let secrets: Vec<String> = u.auth.iter().map(|(_, pass)| pass.clone()).filter(|p| !p.is_empty()).collect();
    (!commands.is_empty()).then(|| Greeting { commands, what: what.join(" and "), secrets })
}
