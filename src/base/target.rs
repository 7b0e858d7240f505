//! Where requests go: URLs parsed into endpoints (scheme, host, port) and resolved to socket addresses.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

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
        if text.len() > MAX_URL {
            return Err(format!(
                "a URL of {} bytes, longer than the {MAX_URL} a request line can carry here; shorten it (send data in a \
                 body with -b or --body-file)",
                text.len()
            ));
        }
        // An international host name is sent as its ASCII form (punycode), and a path with other than ASCII
        // percent-encoded, as browsers do; the http crate takes ASCII only.
        let ascii;
        let text = if text.is_ascii() {
            text
        } else {
            ascii = to_ascii_url(text)?;
            ascii.as_str()
        };
        let uri: http::Uri = text.parse().map_err(|e| format!("not a valid URL ({e}); {example}"))?;
        let scheme = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("http") => Scheme::Http,
            Some(s) if s.eq_ignore_ascii_case("https") => Scheme::Https,
            Some(other) if ["redis", "memcache", "memcached"].contains(&other) => {
                return Err(format!(
                    "scheme '{other}' is a key-value server, which `hakaru kv` and `hakaru sweep` load; this command takes http:// or https://"
                ));
            }
            Some(other) => {
                return Err(format!("scheme '{other}' is not supported; use http:// or https://"));
            }
            None => return Err(format!("not an absolute URL; {example}")),
        };
        let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(|| format!("the URL has no host; {example}"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        // `http://[]/` gets past the http crate with an empty host (found by tests/fuzz.rs).
        if host.is_empty() {
            return Err(format!("the URL has no host; {example}"));
        }
        // The http crate gives no port at all for one that does not fit in 16 bits (70000), which would silently
        // become the default: the port is read from the authority text instead.
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or("");
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
        let after_host = host_port.rsplit_once(']').map_or(host_port, |(_, rest)| rest);
        let port = match after_host.rsplit_once(':') {
            None | Some((_, "")) => scheme.default_port(),
            Some((_, p)) => parse_port(p)?,
        };
        let path_and_query = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let path_and_query = if path_and_query.is_empty() { "/" } else { path_and_query }.to_string();
        Ok(ParsedUrl { scheme, host, port, path_and_query })
    }
}

/// A URL as a message quotes it: whole when short, else its start and its length (a 100 kB URL is not echoed).
pub fn shown(url: &str) -> String {
    const MOST: usize = 120;
    // Its secrets hidden before it is cut: a cut could leave a password without the '@' that marks it.
    let url = &crate::base::secrets::redact_secret(url);
    if url.len() <= MOST {
        return url.to_string();
    }
    let cut = (0..=MOST).rev().find(|&i| url.is_char_boundary(i)).unwrap_or(0);
    format!("{}... ({} bytes)", &url[..cut], url.len())
}

/// The longest URL taken: the http crate's own limit on a request target.
pub const MAX_URL: usize = 65_534;

/// A URL with its host in IDNA ASCII form (`bücher.example` -> `xn--bcher-kva.example`) and every other non-ASCII
/// byte percent-encoded as UTF-8 (`/ä` -> `/%C3%A4`).
fn to_ascii_url(text: &str) -> Result<String, String> {
    let (scheme, rest) =
        text.split_once("://").ok_or("not an absolute URL; write it like http://127.0.0.1:8080/path")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((u, hp)) => (Some(u), hp),
        None => (None, authority),
    };
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) if !h.contains(']') && p.bytes().all(|b| b.is_ascii_digit()) => (h, Some(p)),
        _ => (host_port, None),
    };
    let host = if host.is_ascii() {
        host.to_string()
    } else {
        idna::domain_to_ascii(host)
            .map_err(|_| format!("host '{host}' is not a valid international domain name; check its spelling"))?
    };
    let mut out = format!("{scheme}://");
    if let Some(u) = userinfo {
        out.push_str(&percent_encode_non_ascii(u));
        out.push('@');
    }
    out.push_str(&host);
    if let Some(p) = port {
        out.push(':');
        out.push_str(p);
    }
    out.push_str(&percent_encode_non_ascii(tail));
    Ok(out)
}

/// `%XX` sequences decoded (a URL's userinfo, gRPC's grpc-message); a bad escape and anything else kept as it is.
pub fn percent_decode(b: &[u8]) -> String {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_encode_non_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// A port number from 1 to 65535; the error is the fix, without the flag name.
pub fn parse_port(text: &str) -> Result<u16, String> {
    match text.parse::<u64>() {
        Ok(p) if (1..=65535).contains(&p) => Ok(p as u16),
        _ => Err(format!("port '{text}' is not a number from 1 to 65535")),
    }
}

/// Splits `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address into the host and the port, if any.
pub fn split_host_port(text: &str) -> Result<(String, Option<u16>), String> {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(|| format!("'{t}' has no closing ']'"))?;
        return match after {
            "" => Ok((host.to_string(), None)),
            _ => match after.strip_prefix(':') {
                Some(p) => Ok((host.to_string(), Some(parse_port(p)?))),
                None => Err(format!("'{t}' has junk after ']'")),
            },
        };
    }
    match t.matches(':').count() {
        0 => Ok((t.to_string(), None)),
        1 => {
            let (h, p) = t.split_once(':').unwrap_or((t, ""));
            Ok((h.to_string(), Some(parse_port(p)?)))
        }
        // More than one colon and no brackets: a bare IPv6 address.
        _ => Ok((t.to_string(), None)),
    }
}

/// One server hakaru connects to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Endpoint {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    pub addr: SocketAddr,
    /// The local address connections are opened from (`--source-address`); None lets the system choose.
    pub source: Option<std::net::IpAddr>,
    /// A Unix socket connections go to instead of `addr` (`--unix-socket`, `redis+unix://`); the host and port
    /// stay the URL's, for the Host header.
    pub unix: Option<PathBuf>,
    /// The HTTP proxy connections go through (`--proxy`); None: straight to `addr`.
    pub proxy: Option<std::sync::Arc<Proxy>>,
}

/// An HTTP forward proxy (`--proxy http://[user:pass@]host:port`), as one endpoint goes through it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Proxy {
    /// The proxy's own address, resolved before the load.
    pub addr: SocketAddr,
    /// The proxy URL with its password hidden, for messages and the document.
    pub shown: String,
    /// The `Proxy-Authorization` value (`Basic ...`) when the URL has a user: a secret, never shown.
    pub authorization: Option<String>,
    /// A tunnel (HTTP CONNECT) to the endpoint: https://, and HTTP/2 by prior knowledge; else plain HTTP/1.1 goes
    /// to the proxy as absolute-form requests.
    pub tunnel: bool,
}

/// Hand-written so that no `{:?}` of a plan or endpoint prints the proxy's credentials.
impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxy")
            .field("addr", &self.addr)
            .field("shown", &self.shown)
            .field("authorization", &self.authorization.as_ref().map(|_| "<redacted>"))
            .field("tunnel", &self.tunnel)
            .finish()
    }
}

impl Endpoint {
    /// Resolves the host once, before the run, so a name that does not resolve is bad input, not a fault.
    pub fn resolve(scheme: Scheme, host: &str, port: u16) -> Result<Endpoint, String> {
        let addr = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("host '{host}' does not resolve ({e}); check the name or use an IP address"))?
            .next()
            .ok_or_else(|| format!("host '{host}' has no address; check the name or use an IP address"))?;
        Ok(Endpoint { scheme, host: host.to_string(), port, addr, source: None, unix: None, proxy: None })
    }

    /// An endpoint reached through the Unix socket at `path`, checked to be one now; the host is not resolved
    /// (it only names the Host header). `addr` holds the unspecified address, which no watcher takes for a
    /// local server's port.
    pub fn on_socket(scheme: Scheme, host: &str, port: u16, path: &Path) -> Result<Endpoint, String> {
        check_socket(path)?;
        let addr = SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), port);
        let unix = Some(path.to_path_buf());
        Ok(Endpoint { scheme, host: host.to_string(), port, addr, source: None, unix, proxy: None })
    }

    /// Where connections go, for messages: the socket's path, or the address and port.
    pub fn address(&self) -> String {
        match (&self.unix, &self.proxy) {
            (Some(path), _) => format!("unix:{}", path.display()),
            (None, Some(proxy)) => format!("the proxy {}", proxy.shown),
            (None, None) => self.addr.to_string(),
        }
    }

    /// The address a TCP connection is opened to: the proxy's, or the endpoint's own.
    pub fn tcp_addr(&self) -> SocketAddr {
        self.proxy.as_ref().map_or(self.addr, |p| p.addr)
    }

    /// A key-value server as its users write it: `redis://HOST:PORT`, or `redis+unix:///PATH`.
    pub fn kv_target(&self, scheme: &str) -> String {
        match &self.unix {
            Some(path) => format!("{scheme}+unix://{}", path.display()),
            None => format!("{scheme}://{}:{}", self.host, self.port),
        }
    }

    /// A blocking connection, for the checks before the load: TCP or the Unix socket, within `timeout`.
    pub fn connect_blocking(&self, timeout: std::time::Duration) -> io::Result<Stream> {
        match &self.unix {
            Some(path) => unix_connect_within(path, timeout).map(Stream::Unix),
            None => TcpStream::connect_timeout(&self.tcp_addr(), timeout).map(Stream::Tcp),
        }
    }

    /// The value of the Host header: the port is left out when it is the scheme's default.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == self.scheme.default_port() { host } else { format!("{host}:{}", self.port) }
    }
}

/// A Unix socket's connect within `timeout`. It waits on no network, but it does wait while the server's backlog is
/// full (a stopped or overloaded server) and std offers no timeout: the connect runs on a thread of its own, which is
/// left to finish alone when the time is up (it holds one socket until the server accepts or goes away).
fn unix_connect_within(path: &Path, timeout: std::time::Duration) -> io::Result<UnixStream> {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = path.to_path_buf();
    std::thread::Builder::new().name("unix-connect".into()).spawn(move || {
        let _ = tx.send(UnixStream::connect(path));
    })?;
    rx.recv_timeout(timeout).unwrap_or_else(|_| {
        Err(io::Error::new(io::ErrorKind::TimedOut, "the Unix socket's server accepted no connection in time"))
    })
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

/// Refuses a path that is not a Unix socket: missing, or a file of another kind. The error is the fix, without
/// the flag name.
pub fn check_socket(path: &Path) -> Result<(), String> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(format!("'{}' does not exist; give the path the server listens on", path.display()))
        }
        Err(e) => Err(format!("'{}': {e}", path.display())),
        Ok(m) if !m.file_type().is_socket() => {
            Err(format!("'{}' is not a Unix socket; give the path the server listens on", path.display()))
        }
        Ok(_) => Ok(()),
    }
}

/// A blocking connection of the checks before the load: TCP or a Unix socket.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    pub fn set_read_timeout(&self, t: Option<std::time::Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }

    /// Whether the connection is a TCP socket connected to itself (see [`connected_to_itself`]).
    pub fn to_itself(&self) -> bool {
        match self {
            Stream::Tcp(s) => connected_to_itself(s.local_addr(), s.peer_addr()),
            Stream::Unix(_) => false,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

/// Whether a connected socket is connected to itself: when nothing listens on a port of the ephemeral range, the
/// kernel may give the connecting socket that very port, and TCP's simultaneous open connects it to itself. Not a
/// server: its requests would come back as answers. (Only one socket can hold a local address and port, so two
/// distinct sockets never have the same address at both ends.)
pub fn connected_to_itself(local: std::io::Result<SocketAddr>, peer: std::io::Result<SocketAddr>) -> bool {
    matches!((local, peer), (Ok(l), Ok(p)) if l.ip() == p.ip() && l.port() == p.port())
}

/// Whether a connection to `port` can connect to itself: only a port the kernel may give a connecting socket (its
/// ephemeral range, read once; every port when it cannot be read). Elsewhere [`connected_to_itself`] is false
/// and its two system calls a connection (`getsockname`, `getpeername`) can be spared: a tenth of a connection's
/// calls without keep-alive.
pub fn may_connect_to_itself(port: u16) -> bool {
    static RANGE: std::sync::OnceLock<(u16, u16)> = std::sync::OnceLock::new();
    let (low, high) = *RANGE.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .ok()
            .and_then(|text| ephemeral_range(&text))
            .unwrap_or((0, u16::MAX))
    });
    (low..=high).contains(&port)
}

/// The two ports of `ip_local_port_range`'s text ("32768\t60999\n").
fn ephemeral_range(text: &str) -> Option<(u16, u16)> {
    let mut ports = text.split_whitespace().map(str::parse::<u16>);
    match (ports.next(), ports.next()) {
        (Some(Ok(low)), Some(Ok(high))) if low <= high => Some((low, high)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_port_of_the_ephemeral_range_can_connect_to_itself() {
        assert_eq!(ephemeral_range("32768\t60999\n"), Some((32768, 60999)));
        assert_eq!(ephemeral_range("1024 65535"), Some((1024, 65535)));
        assert_eq!(ephemeral_range("60999 32768"), None);
        assert_eq!(ephemeral_range("garbage"), None);
        // This machine's range, whatever it is, holds the ports the kernel hands out: a listener on port 0 gets one.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        assert!(may_connect_to_itself(port), "{port}");
        if std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .is_ok_and(|t| ephemeral_range(&t).is_some())
        {
            assert!(!may_connect_to_itself(80), "port 80 is below every ephemeral range");
        }
    }

    #[test]
    fn a_unix_connect_to_a_server_whose_backlog_is_full_ends_at_its_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("full.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        // Never accepted: the backlog fills (128 and one on Linux), then a connect waits until it is given up.
        let mut kept = Vec::new();
        let timed_out = (0..10_000).find_map(|_| match unix_connect_within(&path, std::time::Duration::from_secs(2)) {
            Ok(s) => {
                kept.push(s);
                None
            }
            Err(e) => Some(e),
        });
        let e = timed_out.expect("a full backlog makes a connect wait");
        assert_eq!(
            e.kind(),
            io::ErrorKind::TimedOut,
            "{e} (after {} connections, {path:?} there: {})",
            kept.len(),
            path.exists()
        );
        drop(listener);
    }

    #[test]
    fn international_hosts_are_sent_in_ascii_and_long_urls_refused_without_echo() {
        let u = ParsedUrl::parse("http://bücher.example:8080/ä?q=ü").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("xn--bcher-kva.example", 8080));
        assert_eq!(u.path_and_query, "/%C3%A4?q=%C3%BC");
        assert_eq!(ParsedUrl::parse("https://例え.jp/").unwrap().host, "xn--r8jz45g.jp");
        let long = format!("http://h/{}", "a".repeat(100_000));
        let e = ParsedUrl::parse(&long).unwrap_err();
        assert!(e.starts_with("a URL of 100009 bytes, longer than the 65534"), "{e}");
        assert!(e.len() < 300, "not echoed: {e}");
    }

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
        assert!(ParsedUrl::parse("http://127.0.0.1:70000/").unwrap_err().contains("port '70000'"));
        assert!(ParsedUrl::parse("http://127.0.0.1:0/").unwrap_err().contains("port '0'"));
        assert!(ParsedUrl::parse("http://[]:81/").unwrap_err().contains("no host"));
    }

    #[test]
    fn hosts_split_from_their_ports() {
        assert_eq!(split_host_port("a:81").unwrap(), ("a".into(), Some(81)));
        assert_eq!(split_host_port("[::1]:81").unwrap(), ("::1".into(), Some(81)));
        assert_eq!(split_host_port("::1").unwrap(), ("::1".into(), None));
        assert_eq!(split_host_port("a").unwrap(), ("a".into(), None));
        assert!(split_host_port("a:99999").is_err());
        assert!(split_host_port("[::1").is_err());
    }

    #[test]
    fn a_unix_socket_path_must_exist_and_be_a_socket() {
        let dir = std::env::temp_dir().join(format!("hakaru-target-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.sock");
        let e = Endpoint::on_socket(Scheme::Http, "localhost", 80, &missing).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        let file = dir.join("plain");
        std::fs::write(&file, b"x").unwrap();
        assert!(check_socket(&file).unwrap_err().contains("is not a Unix socket"));
        let sock = dir.join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let ep = Endpoint::on_socket(Scheme::Http, "app.internal", 8080, &sock).unwrap();
        assert_eq!(ep.host_header(), "app.internal:8080", "the host is the URL's, never resolved");
        assert_eq!(ep.address(), format!("unix:{}", sock.display()));
        assert!(ep.connect_blocking(std::time::Duration::from_secs(1)).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn host_header_leaves_out_the_default_port() {
        let e = Endpoint::resolve(Scheme::Http, "127.0.0.1", 80).unwrap();
        assert_eq!(e.host_header(), "127.0.0.1");
        let e = Endpoint::resolve(Scheme::Http, "::1", 8080).unwrap();
        assert_eq!(e.host_header(), "[::1]:8080");
    }
}
