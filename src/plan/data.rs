//! What `--data`, the URL's templates and `--script` give a request set, before the endpoints are known: the
//! templated URLs, the data rows in their order, the script loaded.

use super::*;

/// What `--data` and the URL's templates give, before the endpoints are known.
pub(super) struct DataPlan {
    pub(super) rows: Option<crate::template::data::Rows>,
    pub(super) path: crate::template::text::Text,
}

/// The URLs as the endpoint builder reads them (each `{{...}}` of a templated path as `x`), and the templates'
/// data when there are any (`--data`, or a built-in in the URL, a header or the body).
/// `loaded`: `--data`'s rows when they were read already (a gRPC run's).
pub(super) fn template_urls(
    a: &RequestArgs,
    segment: Option<segment::Segment>,
    loaded: Option<crate::template::data::Rows>,
    templated_body: bool,
) -> Result<(Vec<String>, Option<DataPlan>), CliError> {
    use crate::template::text::Text;
    let rows = match (&a.data, loaded) {
        (_, Some(rows)) => Some(rows),
        (None, None) => None,
        (Some(path), None) => Some(data_rows(path, segment)?),
    };
    let columns = rows.as_ref().map(|r| r.columns.clone());
    let holes_in = |text: &str| Text::parse(text, columns.as_deref()).is_ok_and(|t| t.has_holes());
    let templated = rows.is_some()
        || templated_body
        || a.urls.iter().any(|u| holes_in(u))
        || a.headers.iter().any(|h| holes_in(h))
        || a.body.as_deref().is_some_and(holes_in);
    if !templated {
        return Ok((a.urls.clone(), None));
    }
    let one_url = || {
        CliError::new(
            "--data and {{...}} templates: give one URL (not --hosts, --patterns or several URLs); its path, -H values \
             and -b may hold templates",
        )
    };
    if a.urls.len() != 1 || a.hosts.is_some() || a.patterns.is_some() || a.script.is_some() {
        return Err(one_url());
    }
    let url = &a.urls[0];
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let path_at = url[after_scheme..].find(['/', '?']).map_or(url.len(), |i| i + after_scheme);
    if url[..path_at].contains("{{") {
        return Err(CliError::new(format!(
            "URL '{}': templates go in the path, the headers and the body, not the host or port",
            crate::base::target::shown(url)
        )));
    }
    let path_text = if path_at == url.len() { "/" } else { &url[path_at..] };
    let path = Text::parse(path_text, columns.as_deref())
        .map_err(|why| CliError::new(format!("URL '{}': {why}", crate::base::target::shown(url))))?;
    let masked = format!("{}{}", &url[..path_at], path.sample("x"));
    Ok((vec![masked], Some(DataPlan { rows, path })))
}

impl DataPlan {
    /// The request's template, filled per request by the engine.
    pub(super) fn template(
        self,
        a: &RequestArgs,
        endpoints: &[Endpoint],
        method: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Option<crate::template::Template>, CliError> {
        use crate::template::{Template, text::Text};
        let columns = self.rows.as_ref().map(|r| r.columns.clone());
        let headers = headers
            .iter()
            .map(|(n, v)| {
                Text::parse(v, columns.as_deref())
                    .map(|t| (n.clone(), t))
                    .map_err(|why| CliError::new(format!("--header '{n}': {why}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let body = match std::str::from_utf8(body) {
            Ok(text) => Text::parse(text, columns.as_deref()).map_err(|why| CliError::new(format!("--body: {why}")))?,
            Err(_) => Text { parts: vec![crate::template::text::Part::Literal(body.to_vec())] },
        };
        let Some(ep) = endpoints.first() else { return Ok(None) };
        let order = data_order(a.data_order);
        let t = Template::new(method, self.path, ep.host_header(), headers, body, a.no_keepalive, self.rows, order);
        Ok(Some(if a.http2 { t.over_http2(ep.scheme == Scheme::Https) } else { t }))
    }
}

/// `--data`'s rows, a scaled-out agent's share of them only.
pub(super) fn data_rows(
    path: &std::path::Path,
    segment: Option<segment::Segment>,
) -> Result<crate::template::data::Rows, CliError> {
    let bad = |why: String| CliError::new(format!("--data '{}': {why}", path.display()));
    let mut rows = crate::template::data::Rows::load(path).map_err(bad)?;
    if let Some(s) = segment {
        rows.keep_share(s.index, s.count).map_err(bad)?;
    }
    Ok(rows)
}

/// `--data-order` as the fillers take it (`run`'s and `kv`'s).
pub(super) fn data_order(order: crate::cli::args::DataOrderArg) -> crate::template::Order {
    use crate::cli::args::DataOrderArg;
    use crate::template::Order;
    match order {
        DataOrderArg::Sequential => Order::Sequential,
        DataOrderArg::Random => Order::Random,
        DataOrderArg::Unique => Order::Unique,
    }
}

/// `-s FILE.lua`: the script loaded with the target's fields as its `wrk` table shows them (one URL, as wrk takes).
pub(super) fn load_script(
    a: &RequestArgs,
    path: &std::path::Path,
    endpoints: &[Endpoint],
    d: &Defaults<'_>,
    (connect_timeout, timeout): (Duration, Duration),
    ws: Option<&ws::WsRequest>,
) -> Result<crate::script::Script, CliError> {
    let one_url = || {
        CliError::new(format!(
            "--script '{}': give one URL, as wrk takes (the script's wrk.host, wrk.port and wrk.path come from it), not \
         --hosts or --patterns",
            path.display()
        ))
    };
    if a.urls.len() != 1 || a.hosts.is_some() || a.patterns.is_some() {
        return Err(one_url());
    }
    let u = ParsedUrl::parse(&a.urls[0]).map_err(|_| one_url())?;
    let ep = endpoints.first().ok_or_else(one_url)?;
    let target = crate::script::Target {
        scheme: match u.scheme {
            Scheme::Http => "http".into(),
            Scheme::Https => "https".into(),
        },
        host: u.host,
        port: u.port,
        method: d.method.to_string(),
        path: u.path_and_query,
        headers: d.headers.to_vec(),
        body: (!d.body.is_empty()).then(|| d.body.to_vec()),
        addr: ep.addr,
        connect_timeout,
        http2: a.http2.then(|| ep.host_header()),
        http3: a.http3,
        messages: ws.map(|w| w.message.clone()),
    };
    let options = crate::script::Options { sandbox: a.script_sandbox, outside: timeout };
    crate::script::Script::load(path, a.script_args.clone(), target, options)
}
