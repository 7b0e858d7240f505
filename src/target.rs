//! Where requests go: URLs parsed into endpoints (scheme, host, port) and resolved to socket addresses.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// A URL split into what an HTTP/1.1 client needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedUrl {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    /// The request target: path and query, `/` when the URL has none.
    pub path_and_query: String,
}

impl ParsedUrl {
    /// Parses an absolute `http://` or `https://` URL. The error is a fix for the user, without the flag name.
    pub fn parse(text: &str) -> Result<ParsedUrl, String> {
        let example = "write it like http://127.0.0.1:8080/path";
        let uri: http::Uri = text.parse().map_err(|e| format!("not a valid URL ({e}); {example}"))?;
        let scheme = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("http") => Scheme::Http,
            Some(s) if s.eq_ignore_ascii_case("https") => Scheme::Https,
            Some(other) => {
                return Err(format!("scheme '{other}' is not supported; use http:// or https://"));
            }
            None => return Err(format!("not an absolute URL; {example}")),
        };
        let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(|| format!("the URL has no host; {example}"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let port = uri.port_u16().unwrap_or(scheme.default_port());
        let path_and_query = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let path_and_query = if path_and_query.is_empty() { "/" } else { path_and_query }.to_string();
        Ok(ParsedUrl { scheme, host, port, path_and_query })
    }
}

/// One server hakaru connects to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Endpoint {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    pub addr: SocketAddr,
}

impl Endpoint {
    /// Resolves the host once, before the run, so a name that does not resolve is bad input, not a fault.
    pub fn resolve(scheme: Scheme, host: &str, port: u16) -> Result<Endpoint, String> {
        let addr = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("host '{host}' does not resolve ({e}); check the name or use an IP address"))?
            .next()
            .ok_or_else(|| format!("host '{host}' has no address; check the name or use an IP address"))?;
        Ok(Endpoint { scheme, host: host.to_string(), port, addr })
    }

    /// The value of the Host header: the port is left out when it is the scheme's default.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == self.scheme.default_port() { host } else { format!("{host}:{}", self.port) }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        write!(f, "{scheme}://{}", self.host_header())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_scheme_host_port_and_target() {
        let u = ParsedUrl::parse("http://127.0.0.1:8080/d/select?q=a").unwrap();
        assert_eq!(u.scheme, Scheme::Http);
        assert_eq!(u.host, "127.0.0.1");
        assert_eq!(u.port, 8080);
        assert_eq!(u.path_and_query, "/d/select?q=a");
        let u = ParsedUrl::parse("https://localhost").unwrap();
        assert_eq!((u.port, u.path_and_query.as_str()), (443, "/"));
        let u = ParsedUrl::parse("http://[::1]:81/").unwrap();
        assert_eq!(u.host, "::1");
    }

    #[test]
    fn bad_urls_say_what_to_write() {
        assert!(ParsedUrl::parse("ftp://x/").unwrap_err().contains("scheme 'ftp'"));
        assert!(ParsedUrl::parse("localhost:8080").is_err());
        assert!(ParsedUrl::parse("/just/a/path").unwrap_err().contains("not an absolute URL"));
        assert!(ParsedUrl::parse("http://exa mple.com/").is_err());
    }

    #[test]
    fn host_header_leaves_out_the_default_port() {
        let e = Endpoint::resolve(Scheme::Http, "127.0.0.1", 80).unwrap();
        assert_eq!(e.host_header(), "127.0.0.1");
        let e = Endpoint::resolve(Scheme::Http, "::1", 8080).unwrap();
        assert_eq!(e.host_header(), "[::1]:8080");
    }
}
