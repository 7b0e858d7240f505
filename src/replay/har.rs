//! HAR 1.2 files (a browser's or a proxy's recording: `log.entries[]`) read into records: each entry's start, its
//! request's method, URL (the path and query kept, the host the target's), headers and body, and its answer's status.
//! One JSON document, read whole (the file is bounded by its cap), its entries each a record or a reason.

use serde::Deserialize;

use super::Record;

#[derive(Deserialize)]
struct Har {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    #[serde(default)]
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    started_date_time: String,
    request: Request,
    #[serde(default)]
    response: Option<Response>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(default)]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct PostData {
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    status: Option<i64>,
}

/// Headers a replay never sends as recorded: the connection's own (the target's host, hakaru's framing and
/// connection handling) and HTTP/2's pseudo-headers.
fn replayed(name: &str) -> bool {
    const OWN: [&str; 8] = [
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "upgrade",
        "te",
        "proxy-connection",
    ];
    !name.starts_with(':') && !OWN.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// The entries of a HAR document, each a record or why not; the error when the text is no HAR.
pub fn entries(text: &str) -> Result<Vec<Result<Record, String>>, String> {
    let har: Har = serde_json::from_str(text).map_err(|e| {
        format!(
            "line {}, column {}: {}; a HAR file is {{\"log\": {{\"entries\": [{{\"startedDateTime\": ..., \"request\": \
             {{\"method\": ..., \"url\": ...}}}}]}}}}",
            e.line(),
            e.column(),
            crate::base::secrets::json_reason(&e)
        )
    })?;
    Ok(har.log.entries.into_iter().map(record).collect())
}

fn record(e: Entry) -> Result<Record, String> {
    let at_us = super::time::rfc3339(&e.started_date_time).ok_or_else(|| {
        format!("startedDateTime \"{}\" is not RFC 3339 text", crate::base::secrets::excerpt(&e.started_date_time))
    })?;
    let url = e.request.url.split('#').next().unwrap_or_default();
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(format!("its url \"{}\" is not http(s)://host/path", crate::base::secrets::excerpt(url)));
    }
    let after = &url[url.find("://").map_or(0, |i| i + 3)..];
    let host = super::clean_host(&after[..after.find(['/', '?']).unwrap_or(after.len())]);
    let path = match after.find(['/', '?']) {
        Some(i) if after.as_bytes()[i] == b'?' => format!("/{}", &after[i..]),
        Some(i) => after[i..].to_string(),
        None => "/".to_string(),
    };
    let headers = e.request.headers.into_iter().filter(|h| replayed(&h.name)).map(|h| (h.name, h.value)).collect();
    let status = e.response.and_then(|r| r.status).and_then(|s| u16::try_from(s).ok()).filter(|s| *s > 0);
    let body = e.request.post_data.and_then(|p| p.text).filter(|t| !t.is_empty());
    Ok(Record { at_us, method: e.request.method.to_ascii_uppercase(), path, body, status, headers, host })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_give_their_start_request_and_status_without_the_connections_own_headers() {
        let har = r#"{"log": {"version": "1.2", "creator": {"name": "x"}, "entries": [
            {"startedDateTime": "2026-01-01T00:00:00.250Z", "time": 5,
             "request": {"method": "post", "url": "https://shop.example/cart?id=7", "httpVersion": "h2",
                         "headers": [{"name": ":authority", "value": "shop.example"}, {"name": "Host", "value": "h"},
                                     {"name": "Authorization", "value": "Bearer s"}, {"name": "Accept", "value": "*/*"}],
                         "postData": {"mimeType": "application/json", "text": "{\"n\":1}"}},
             "response": {"status": 201}},
            {"startedDateTime": "yesterday", "request": {"method": "GET", "url": "https://a/"}},
            {"startedDateTime": "2026-01-01T01:00:00+01:00", "request": {"method": "GET", "url": "http://a?x=1"},
             "response": {"status": 0}}
        ]}}"#;
        let got = entries(har).unwrap();
        let first = got[0].as_ref().unwrap();
        assert_eq!(
            (first.at_us, first.method.as_str(), first.path.as_str()),
            (1_767_225_600_250_000, "POST", "/cart?id=7")
        );
        assert_eq!((first.body.as_deref(), first.status), (Some("{\"n\":1}"), Some(201)));
        let names: Vec<&str> = first.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["Authorization", "Accept"]);
        assert!(got[1].as_ref().unwrap_err().contains("startedDateTime \"yesterday\""));
        let third = got[2].as_ref().unwrap();
        assert_eq!((third.at_us, third.path.as_str(), third.status), (1_767_225_600_000_000, "/?x=1", None));
        assert!(entries("[]").unwrap_err().contains("a HAR file is"));
        assert_eq!(first.host.as_deref(), Some("shop.example"));
        let odd = r#"{"log": {"entries": [{"startedDateTime": "2026-01-01T00:00:00Z",
            "request": {"method": "GET", "url": "blob:https://a/x"}},
            {"startedDateTime": "2026-01-01T00:00:00Z", "request": {"method": "GET", "url": "https://A:8443/p#frag"}}]}}"#;
        let got = entries(odd).unwrap();
        assert!(got[0].as_ref().unwrap_err().contains("is not http(s)"));
        let r = got[1].as_ref().unwrap();
        assert_eq!((r.path.as_str(), r.host.as_deref()), ("/p", Some("a:8443")));
    }
}
