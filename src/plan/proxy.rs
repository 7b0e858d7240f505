//! `-x/--proxy`: an HTTP forward proxy, `http://[USER:PASSWORD@]HOST:PORT` or `env` (`HTTPS_PROXY`, `HTTP_PROXY`
//! and `NO_PROXY`, read only when asked so), checked before the load and handed to each endpoint it serves.

use std::sync::Arc;

use base64::Engine as _;

use crate::base::target::{Endpoint, Proxy, Scheme};
use crate::error::CliError;

/// The proxy of each kind of endpoint.
#[derive(Clone, Debug, Default)]
pub struct ProxyChoice {
    /// For https:// endpoints.
    https: Option<Parsed>,
    /// For http:// endpoints.
    http: Option<Parsed>,
    /// `NO_PROXY`'s entries (with `--proxy env`): hosts, domain suffixes, or `*`.
    no_proxy: Vec<String>,
}

/// One proxy URL, read.
#[derive(Clone)]
struct Parsed {
    addr: std::net::SocketAddr,
    shown: String,
    authorization: Option<String>,
}

/// Hand-written so that no `{:?}` prints the credentials.
impl std::fmt::Debug for Parsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parsed").field("addr", &self.addr).field("shown", &self.shown).finish_non_exhaustive()
    }
}

impl ProxyChoice {
    /// `--proxy`'s value: None when not given. `env` reads the environment (`var` is `std::env::var` but for tests).
    pub fn from_flag(value: Option<&str>, var: impl Fn(&str) -> Option<String>) -> Result<ProxyChoice, CliError> {
        let Some(value) = value else { return Ok(ProxyChoice::default()) };
        if value != "env" {
            let p = parse(value).map_err(|why| CliError::new(format!("--proxy '{}': {why}", shown_safely(value))))?;
            return Ok(ProxyChoice { https: Some(p.clone()), http: Some(p), no_proxy: Vec::new() });
        }
        // curl's names: the lower-case one first; HTTP_PROXY in upper case is left alone by curl (a CGI program's
        // environment may hold a request's Proxy header there), and so here.
        let read = |names: &[&str]| -> Result<Option<Parsed>, CliError> {
            let Some((name, value)) = names.iter().find_map(|n| var(n).filter(|v| !v.is_empty()).map(|v| (n, v)))
            else {
                return Ok(None);
            };
            parse(&value)
                .map(Some)
                .map_err(|why| CliError::new(format!("--proxy env: {name}='{}': {why}", shown_safely(&value))))
        };
        let no_proxy = ["no_proxy", "NO_PROXY"]
            .iter()
            .find_map(|n| var(n))
            .map(|v| v.split(',').map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty()).collect())
            .unwrap_or_default();
        Ok(ProxyChoice { https: read(&["https_proxy", "HTTPS_PROXY"])?, http: read(&["http_proxy"])?, no_proxy })
    }

    /// The proxy `ep` goes through, if any: a tunnel for https:// and for HTTP/2 by prior knowledge (`http2`).
    pub fn for_endpoint(&self, ep: &Endpoint, http2: bool) -> Option<Arc<Proxy>> {
        let p = match ep.scheme {
            Scheme::Https => self.https.as_ref(),
            Scheme::Http => self.http.as_ref(),
        }?;
        if self.bypassed(&ep.host) {
            return None;
        }
        Some(Arc::new(Proxy {
            addr: p.addr,
            shown: p.shown.clone(),
            authorization: p.authorization.clone(),
            tunnel: ep.scheme == Scheme::Https || http2,
        }))
    }

    /// Some endpoint may go through a proxy.
    pub fn any(&self) -> bool {
        self.https.is_some() || self.http.is_some()
    }

    /// `NO_PROXY` names the host: `*`, the host itself, or a domain it is in (`example.com` and `.example.com`
    /// both take `api.example.com`).
    fn bypassed(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.no_proxy.iter().any(|entry| {
            let domain = entry.trim_start_matches('.');
            entry == "*" || host == domain || host.ends_with(&format!(".{domain}"))
        })
    }
}

/// `http://[USER:PASSWORD@]HOST[:PORT][/]`, the port 1080 when left out (curl's).
fn parse(url: &str) -> Result<Parsed, String> {
    let fix = "give http://[USER:PASSWORD@]HOST:PORT";
    let lower = url.to_ascii_lowercase();
    let rest = if lower.starts_with("http://") {
        &url["http://".len()..]
    } else if lower.starts_with("https://") || lower.starts_with("socks") {
        return Err(format!("only HTTP proxies are supported (CONNECT over plain HTTP); {fix}"));
    } else {
        return Err(format!("not a proxy URL; {fix}, or env"));
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (userinfo, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    };
    // What would end a URL early for any reader (a list's comma, a space, a quote, a path) is percent-encoded in a
    // password, as curl asks: taken raw, the rest of the password could be shown as if it were the host's.
    if userinfo.is_some_and(|u| u.contains(|c: char| c.is_whitespace() || c.is_control() || "'\",/?#".contains(c))) {
        return Err(format!(
            "the user or password holds a space, quote, comma, /, ? or #; percent-encode it (%20, %27, %22, %2C, \
             %2F, %3F, %23): {fix}"
        ));
    }
    if hostport.contains(['/', '?', '#']) {
        return Err(format!("a proxy URL has no path; {fix}"));
    }
    let (host, port) = crate::base::target::split_host_port(hostport).map_err(|e| format!("{e}; {fix}"))?;
    if host.is_empty() {
        return Err(format!("no host; {fix}"));
    }
    let port = port.unwrap_or(1080);
    let addr = Endpoint::resolve(Scheme::Http, &host, port)?.addr;
    let authorization = userinfo.map(|u| {
        let (user, password) = u.split_once(':').unwrap_or((u, ""));
        let password = crate::base::target::percent_decode(password.as_bytes());
        crate::base::secrets::remember_value(&password);
        let pair = format!("{}:{password}", crate::base::target::percent_decode(user.as_bytes()));
        let value = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair));
        crate::base::secrets::remember_header(&format!("Proxy-Authorization: {value}"));
        value
    });
    // Built from the parts: the password never, whatever it holds.
    let shown = match userinfo {
        Some(u) => format!("http://{}:***@{hostport}", u.split_once(':').map_or(u, |(user, _)| user)),
        None => format!("http://{hostport}"),
    };
    Ok(Parsed { addr, shown, authorization })
}

/// A proxy URL as an error line may show it: nothing before its last `@` (the user and password, whatever they
/// hold).
fn shown_safely(value: &str) -> String {
    match value.rsplit_once('@') {
        Some((before, host)) => {
            let scheme = before.find("://").map_or("", |i| &before[..i + 3]);
            format!("{scheme}***@{host}")
        }
        None => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown_whatever_it_holds() {
        let none = |_: &str| None;
        for (url, says) in [
            ("http://alice:Pa#ss@127.0.0.1:3128", "percent-encode"),
            ("http://alice:correct horse@127.0.0.1:3128", "percent-encode"),
            ("http://alice:a,b@127.0.0.1:3128", "percent-encode"),
            ("http://alice:x@127.0.0.1:3128/path", "no path"),
        ] {
            let e = ProxyChoice::from_flag(Some(url), none).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("***@127.0.0.1:3128"), "{e}");
            for secret in ["Pa#ss", "horse", "a,b", "alice:x"] {
                assert!(!e.contains(secret), "{secret} in {e}");
            }
        }
        let p = ProxyChoice::from_flag(Some("http://alice:s%2Fcret@127.0.0.1:3128"), none).unwrap();
        let shown = format!("{p:?}");
        assert!(!shown.contains("cret"), "{shown}");
        let ep = Endpoint::resolve(Scheme::Https, "127.0.0.1", 443).unwrap();
        assert_eq!(p.for_endpoint(&ep, false).unwrap().shown, "http://alice:***@127.0.0.1:3128");
    }

    fn ep(url_scheme: Scheme, host: &str) -> Endpoint {
        Endpoint::resolve(url_scheme, host, 443).unwrap()
    }

    #[test]
    fn a_proxy_url_gives_the_address_the_basic_credentials_and_a_shown_form_without_the_password() {
        let c = ProxyChoice::from_flag(Some("http://al%40x:s3cret@127.0.0.1:3128"), |_| None).unwrap();
        let p = c.for_endpoint(&ep(Scheme::Https, "127.0.0.1"), false).unwrap();
        assert_eq!(p.addr.to_string(), "127.0.0.1:3128");
        // base64 of "al@x:s3cret"
        assert_eq!(p.authorization.as_deref(), Some("Basic YWxAeDpzM2NyZXQ="));
        assert!(!p.shown.contains("s3cret") && p.tunnel, "{}", p.shown);
        assert!(!format!("{p:?}{c:?}").contains("YWxAeDpzM2NyZXQ"), "no Debug shows the credentials");
        let plain = c.for_endpoint(&ep(Scheme::Http, "127.0.0.1"), false).unwrap();
        assert!(!plain.tunnel, "plain HTTP/1.1 goes in absolute form");
        assert!(c.for_endpoint(&ep(Scheme::Http, "127.0.0.1"), true).unwrap().tunnel, "h2c tunnels");
    }

    #[test]
    fn bad_proxy_urls_are_refused_with_the_fix_and_never_the_password() {
        for (url, said) in [
            ("socks5://127.0.0.1:1080", "only HTTP proxies"),
            ("https://127.0.0.1:3128", "only HTTP proxies"),
            ("127.0.0.1:3128", "not a proxy URL"),
            ("http://u:pw@127.0.0.1:3128/path", "no path"),
            ("http://u:pw@127.0.0.1:99999", "port"),
        ] {
            let e = ProxyChoice::from_flag(Some(url), |_| None).unwrap_err().to_string();
            assert!(e.contains(said) && e.starts_with("--proxy '") && !e.contains(":pw@"), "{url}: {e}");
        }
    }

    #[test]
    fn env_reads_the_variables_only_when_asked_and_no_proxy_takes_hosts_and_domains() {
        let vars = |n: &str| match n {
            "HTTPS_PROXY" => Some("http://127.0.0.1:3128".to_string()),
            "NO_PROXY" => Some("localhost, .internal".to_string()),
            _ => None,
        };
        let c = ProxyChoice::from_flag(Some("env"), vars).unwrap();
        assert!(c.for_endpoint(&ep(Scheme::Https, "127.0.0.1"), false).is_some());
        assert!(c.for_endpoint(&ep(Scheme::Https, "localhost"), false).is_none());
        assert!(c.bypassed("api.internal") && c.bypassed("internal") && !c.bypassed("internalx.com"));
        assert!(c.for_endpoint(&ep(Scheme::Http, "127.0.0.1"), false).is_none(), "no http_proxy set");
        assert!(!ProxyChoice::from_flag(None, vars).unwrap().any(), "the environment alone is not read");
    }
}
