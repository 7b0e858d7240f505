//! The requests of a set built for each endpoint: HTTP/1.1 text or HTTP/2 frames from the method, headers, body
//! and patterns, checked (`Builder`).

use super::*;

pub(super) struct Defaults<'a> {
    pub(super) method: &'a str,
    pub(super) headers: &'a [(String, String)],
    pub(super) body: &'a [u8],
    pub(super) timeout: Duration,
}

pub(super) struct Builder {
    pub(super) endpoints: Vec<Endpoint>,
    pub(super) keepalive: bool,
    /// Requests are HTTP/2 frames.
    pub(super) http2: bool,
    pub(super) arena: crate::protocol::RequestArena,
    /// `--connect-to`'s rules and `--proxy`'s choice, for the endpoints a pattern file names.
    pub(super) pinned: Vec<connect_to::ConnectTo>,
    pub(super) proxy: proxy::ProxyChoice,
}

impl Builder {
    /// An endpoint (a URL's, a --hosts entry's, a pattern file's): `--connect-to`'s address, `--proxy`'s proxy.
    pub(super) fn resolve(&self, scheme: Scheme, host: &str, port: u16) -> Result<Endpoint, String> {
        let mut ep = connect_to::resolve(&self.pinned, scheme, host, port)?;
        ep.proxy = self.proxy.for_endpoint(&ep, self.http2);
        Ok(ep)
    }

    pub(super) fn endpoint(&mut self, ep: Endpoint) -> usize {
        if let Some(i) = self.endpoints.iter().position(|e| *e == ep) {
            return i;
        }
        self.endpoints.push(ep);
        self.endpoints.len() - 1
    }

    pub(super) fn spec(
        &mut self,
        endpoints: Arc<[usize]>,
        target: &str,
        d: &Defaults<'_>,
        over: Option<&patterns::Pattern>,
    ) -> RequestSpec {
        let over = over.map(patterns::Pattern::fields);
        let method = over.and_then(|p| p.method.as_deref()).unwrap_or(d.method);
        let mut headers = d.headers.to_vec();
        let mut body = over.and_then(|p| p.body.as_deref()).map(str::as_bytes).unwrap_or(d.body);
        // drnbench sends a GET pattern's body object as the query string, form-encoded.
        let with_query;
        let mut target = target;
        if let Some(form) = over.and_then(|p| p.body_form.as_ref()).filter(|_| method.eq_ignore_ascii_case("GET")) {
            with_query = append_form(target, form);
            (target, body) = (with_query.as_str(), &[]);
        }
        if let Some(p) = over {
            for (name, value) in &p.headers {
                headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
                headers.push((name.clone(), value.clone()));
            }
        }
        // A body the file gave as a JSON object, sent as JSON (not a GET's query string), says so unless the file
        // or -H names the type.
        let json_body = over.is_some_and(|p| p.body_form.is_some()) && !body.is_empty();
        if json_body && !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type")) {
            headers.push(("Content-Type".into(), "application/json".into()));
        }
        let http2 = self.http2;
        let prepared = endpoints
            .iter()
            .map(|&i| {
                let ep = &self.endpoints[i];
                // Plain HTTP/1.1 through a proxy: the request names its whole URL (absolute form), and the proxy's
                // credentials go to the proxy in the request itself.
                let (absolute, proxy_headers);
                let (target, headers) = match ep.proxy.as_deref().filter(|p| !p.tunnel) {
                    Some(p) => {
                        absolute = format!("http://{}{target}", ep.host_header());
                        let mut with = headers.clone();
                        with.extend(p.authorization.iter().map(|v| ("Proxy-Authorization".to_string(), v.clone())));
                        proxy_headers = with;
                        (absolute.as_str(), &proxy_headers)
                    }
                    None => (target, &headers),
                };
                let parts =
                    RequestParts { method, target, host: &ep.host_header(), headers, body, close: !self.keepalive };
                let https = ep.scheme == Scheme::Https;
                self.arena.prepare(method, |out| match http2 {
                    true => crate::protocol::h2::request::write_request(&parts, https, out),
                    false => write_request(&parts, out),
                })
            })
            .collect();
        // Pattern timeouts were bounded when the file was read (patterns::MAX_TIMEOUT_S), so this cannot overflow.
        let timeout = over.and_then(|p| p.timeout).map(Duration::from_secs_f64).unwrap_or(d.timeout);
        // An HTTP/1.1 request's label is its request line's start, read back when asked (RequestSpec::label), unless
        // the line names the whole URL for a proxy.
        let absolute = endpoints.iter().any(|&i| self.endpoints[i].proxy.as_deref().is_some_and(|p| !p.tunnel));
        let label = match http2 || absolute {
            true => crate::base::secrets::redact_secret(&format!("{method} {target}")).into(),
            false => Box::default(),
        };
        RequestSpec { endpoints, prepared, timeout, group: 0, label }
    }

    pub(super) fn pattern_specs(
        &mut self,
        set: PatternSet,
        default_hosts: &[usize],
        d: &Defaults<'_>,
        file: &std::path::Path,
    ) -> Result<(Vec<RequestSpec>, Selection), CliError> {
        let mut specs = Vec::with_capacity(set.groups.iter().map(|g| g.patterns.len()).sum());
        let default_hosts: Arc<[usize]> = default_hosts.into();
        let (mut cumulative, mut groups, mut total) = (Vec::new(), Vec::new(), 0.0);
        for g in set.groups {
            let first = specs.len();
            for p in g.patterns {
                let in_file = |e: String| {
                    CliError::new(format!(
                        "--patterns {}: pattern '{}': {e}",
                        file.display(),
                        crate::base::secrets::excerpt(&p.path)
                    ))
                };
                check_pattern(p.fields()).map_err(in_file)?;
                let (endpoints, target): (Arc<[usize]>, _) = if p.path.starts_with('/') {
                    let endpoints = match (&p.fields().host, p.fields().port) {
                        (None, None) => Arc::clone(&default_hosts),
                        (host, port) => {
                            let fallback = default_hosts.first().map(|&i| self.endpoints[i].clone());
                            let host = host.clone().or_else(|| fallback.as_ref().map(|e| e.host.clone()));
                            let Some(host) = host else {
                                return Err(in_file("no host; give a URL, --hosts, or \"host\" in the file".into()));
                            };
                            let port = port.or(fallback.as_ref().map(|e| e.port)).unwrap_or(80);
                            let scheme = fallback.map(|e| e.scheme).unwrap_or(Scheme::Http);
                            Arc::new([self.endpoint(self.resolve(scheme, &host, port).map_err(in_file)?)])
                        }
                    };
                    check_target(&p.path).map_err(in_file)?;
                    (endpoints, p.path.clone())
                } else {
                    let u = ParsedUrl::parse(&p.path).map_err(in_file)?;
                    let ep = self.resolve(u.scheme, &u.host, u.port).map_err(in_file)?;
                    (Arc::new([self.endpoint(ep)]), u.path_and_query)
                };
                if endpoints.is_empty() {
                    return Err(in_file(
                        "paths need a host: give a URL such as http://127.0.0.1:8080 or --hosts".into(),
                    ));
                }
                let mut spec = self.spec(endpoints, &target, d, Some(&p));
                spec.group = groups.len();
                specs.push(spec);
            }
            total += g.frequency;
            cumulative.push(total);
            groups.push(first..specs.len());
        }
        Ok((specs, Selection::Weighted { cumulative, groups }))
    }
}

/// The method and headers a pattern file gives, checked as the flags are: they go into the request bytes as they
/// are.
pub(super) fn check_pattern(p: &patterns::PatternFields) -> Result<(), String> {
    if let Some(m) = &p.method {
        check_method(m)?;
    }
    for (name, value) in &p.headers {
        check_header(name, value)?;
    }
    Ok(())
}

/// `target` with `form` added to its query string, form-encoded (`a=1&q=x+y`), as Ruby's encode_www_form does.
pub(super) fn append_form(target: &str, form: &[(String, String)]) -> String {
    let encode = |t: &str| crate::patterns::tools::uri_escape(t).replace("%20", "+");
    let query: Vec<String> = form.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
    let joiner = if target.contains('?') { '&' } else { '?' };
    format!("{target}{joiner}{}", query.join("&"))
}
