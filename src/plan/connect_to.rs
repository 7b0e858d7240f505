//! `--connect-to HOST:PORT:ADDR:PORT` (curl's): the URLs of one host and port are connected to another address,
//! named without DNS being asked for the URL's host; the Host header, SNI and the certificate check stay the URL's.

use crate::base::target::{Endpoint, Scheme};
use crate::error::CliError;

/// One rule: the URL's host and port it takes (None: any), and where connections go instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectTo {
    host: Option<String>,
    port: Option<u16>,
    to_host: String,
    to_port: u16,
}

impl ConnectTo {
    /// `--connect-to` values, each checked (one line naming the value and the fix).
    pub fn parse_all(values: &[String]) -> Result<Vec<ConnectTo>, CliError> {
        values.iter().map(|v| parse(v).map_err(|why| CliError::new(format!("--connect-to '{v}': {why}")))).collect()
    }

    fn takes(&self, host: &str, port: u16) -> bool {
        self.host.as_deref().is_none_or(|h| h.eq_ignore_ascii_case(host)) && self.port.is_none_or(|p| p == port)
    }
}

/// The endpoint of a URL's host and port: the first rule that takes it names the address, else DNS does.
pub fn resolve(rules: &[ConnectTo], scheme: Scheme, host: &str, port: u16) -> Result<Endpoint, String> {
    let Some(rule) = rules.iter().find(|r| r.takes(host, port)) else { return Endpoint::resolve(scheme, host, port) };
    let to = Endpoint::resolve(scheme, &rule.to_host, rule.to_port)
        .map_err(|e| format!("--connect-to's address for {host}:{port}: {e}"))?;
    Ok(Endpoint { host: host.to_string(), port, ..to })
}

/// `HOST:PORT:ADDR:PORT`, an IPv6 address in brackets; HOST and PORT may be empty (any).
fn parse(text: &str) -> Result<ConnectTo, String> {
    let fix = "write HOST:PORT:ADDR:PORT, e.g. api.example.com:443:10.0.0.5:8443 ([::1] for an IPv6 address)";
    let mut rest = text;
    let mut parts = Vec::new();
    for _ in 0..4 {
        let (part, after) = if let Some(inner) = rest.strip_prefix('[') {
            let (addr, after) = inner.split_once(']').ok_or_else(|| format!("a '[' with no ']'; {fix}"))?;
            (addr, after)
        } else {
            match rest.find(':') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            }
        };
        parts.push(part.to_string());
        rest = after.strip_prefix(':').unwrap_or(after);
        if after.is_empty() {
            break;
        }
    }
    if parts.len() != 4 || !rest.is_empty() {
        return Err(format!("not four parts; {fix}"));
    }
    let port = |p: &str, what: &str| -> Result<u16, String> {
        p.parse::<u16>().ok().filter(|&n| n > 0).ok_or_else(|| format!("{what} '{p}' is not a port (1-65535); {fix}"))
    };
    let from_port = if parts[1].is_empty() { None } else { Some(port(&parts[1], "the URL's port")?) };
    if parts[2].is_empty() || parts[3].is_empty() {
        return Err(format!("no address to connect to; {fix}"));
    }
    Ok(ConnectTo {
        host: (!parts[0].is_empty()).then(|| parts[0].clone()),
        port: from_port,
        to_host: parts[2].clone(),
        to_port: port(&parts[3], "the port to connect to")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_with_any_host_or_port_and_ipv6_in_brackets() {
        let r = parse("api.example.com:443:127.0.0.1:8443").unwrap();
        assert!(r.takes("API.example.com", 443) && !r.takes("api.example.com", 80) && !r.takes("other", 443));
        let any = parse("::[::1]:8080").unwrap();
        assert_eq!((any.host.as_deref(), any.port, any.to_host.as_str(), any.to_port), (None, None, "::1", 8080));
        for bad in ["a:1:b", "a:1:b:0", "a:x:b:1", "a:1::1", "a:1:[::1:1", "a:1:b:1:extra"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_matching_url_keeps_its_host_and_port_and_connects_where_the_rule_says() {
        let rules = ConnectTo::parse_all(&["name.invalid:80:127.0.0.1:8080".into()]).unwrap();
        let ep = resolve(&rules, Scheme::Http, "name.invalid", 80).unwrap();
        assert_eq!((ep.host.as_str(), ep.port, ep.addr.to_string()), ("name.invalid", 80, "127.0.0.1:8080".into()));
        assert_eq!(ep.host_header(), "name.invalid");
        assert!(resolve(&rules, Scheme::Http, "name.invalid", 81).is_err(), "no rule: DNS, which does not know it");
    }
}
