//! gRPC's flags -> the HTTP/2 request a unary call is: `--call` found in the `--proto` file's services (parsed
//! in-process by protox), the `--body` JSON turned into the request message through its descriptor (prost-reflect)
//! and framed once, before the load; `POST /package.Service/Method` with gRPC's headers and `-H`'s metadata.

use std::path::Path;

use prost_reflect::prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};

use crate::cli::args::RequestArgs;
use crate::error::CliError;
use crate::protocol::grpc;

mod per_call;
mod proto;
mod rows;
pub use rows::Messages;

/// A run's gRPC call, as the HTTP/2 request plan reads it.
pub struct GrpcRequest {
    /// The request flags as HTTP/2's: POST to `http://HOST:PORT/package.Service/Method`, gRPC's headers added.
    pub args: RequestArgs,
    /// The request message, framed (its 5-byte length prefix first).
    pub body: Vec<u8>,
    /// The URLs as the user wrote them (`grpc://...`), for the document.
    pub targets: Vec<String>,
    /// Messages in `body`: 1, or `--stream-messages` for a client-streaming or bidirectional method.
    pub messages_per_call: u32,
    /// The calls' messages when the JSON has templates (`body` is then the first call's), for the plan's template.
    pub messages: Option<rows::Messages>,
    /// What the engine's calls need beside their bytes.
    pub settings: grpc::Settings,
}

fn is_grpc(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("grpc://") || lower.starts_with("grpcs://")
}

/// The gRPC call of `a`, when its URLs are grpc:// ones; bad input is one line naming the flag.
/// `segment`: a scaled-out agent's, whose share of `--data`'s rows it takes.
pub fn prepare(a: &RequestArgs, segment: Option<super::segment::Segment>) -> Result<Option<GrpcRequest>, CliError> {
    let grpc_urls = a.urls.iter().filter(|u| is_grpc(u)).count();
    if grpc_urls == 0 {
        if a.call.is_some() {
            return Err(CliError::new("--call names a gRPC method: give a grpc://HOST:PORT URL to call it on"));
        }
        return Ok(None);
    }
    if grpc_urls != a.urls.len() {
        return Err(CliError::new("grpc:// URLs with others: a run calls gRPC or sends HTTP, not both"));
    }
    let apart =
        [(a.hosts.is_some(), "--hosts"), (a.patterns.is_some(), "--patterns"), (a.script.is_some(), "--script")];
    if let Some((_, flag)) = apart.iter().find(|(given, _)| *given) {
        return Err(CliError::new(format!(
            "{flag} with a grpc:// URL: not supported for gRPC yet (docs/grpc.md); give the message with --body (and \
             --data rows for {{{{column}}}} templates in it)"
        )));
    }
    let Some(call) = a.call.as_deref() else {
        return Err(CliError::new(
            "a grpc:// URL needs the method: add --call package.Service/Method (and --proto FILE)",
        ));
    };
    let gzip = gzip(a)?;
    let (pool, source) = descriptors(a, call)?;
    let method = find_method(&pool, call, &source)?;
    let json = match (&a.body, &a.body_file) {
        (Some(b), _) => b.clone(),
        (None, Some(path)) => {
            let bytes = crate::base::bounded::read(path, crate::base::bounded::BODY)
                .map_err(|why| CliError::new(format!("--body-file '{}': {why}", path.display())))?;
            String::from_utf8(bytes).map_err(|_| {
                CliError::new(format!(
                    "--body-file '{}': not UTF-8 text; a gRPC message is given as JSON",
                    path.display()
                ))
            })?
        }
        (None, None) => "{}".to_string(),
    };
    let flag = if a.body.is_some() || a.body_file.is_none() {
        "--body".to_string()
    } else {
        format!(
            "--body-file '{}'",
            a.body_file.as_deref().map(Path::display).map(|d| d.to_string()).unwrap_or_default()
        )
    };
    let messages = rows::prepare(a, segment, &method, &json, &flag)?;
    let (body, messages_per_call) = match &messages {
        Some(rows::Messages::Rows(r)) => (r.bodies.bodies[0].clone(), r.messages_per_call),
        Some(rows::Messages::PerCall(p)) => (p.first.clone(), p.messages_per_call),
        None => call_body(Framing::of(a), &method, &json, &flag).map_err(|r| r.error)?,
    };
    let timeout = super::flag_timeout("--timeout", &a.timeout)?;
    let settings = grpc::Settings {
        max_message: match a.max_message.as_deref() {
            // At most 1 GiB: a u32.
            Some(v) => super::ws::flag_max_message(v)? as u32,
            None => grpc::MAX_MESSAGE,
        },
        interval: stream_interval(a, &method)?,
        gzip,
    };

    let path = format!("/{}/{}", method.parent_service().full_name(), method.name());
    let mut args = a.clone();
    args.headers.extend(metadata(a.metadata.as_deref())?);
    args.urls = a.urls.iter().map(|u| http_url(u, &path)).collect::<Result<_, _>>()?;
    args.method = "POST".into();
    args.http2 = true;
    args.body = None;
    args.body_file = None;
    let encoding =
        settings.gzip.then_some([("grpc-encoding", "gzip".to_string()), ("grpc-accept-encoding", "gzip".into())]);
    for (name, value) in [
        ("content-type", "application/grpc".to_string()),
        ("te", "trailers".into()),
        ("grpc-timeout", grpc::timeout_header(timeout)),
    ]
    .into_iter()
    .chain(encoding.into_iter().flatten())
    {
        if !a.headers.iter().any(|h| h.split(':').next().is_some_and(|n| n.trim().eq_ignore_ascii_case(name))) {
            args.headers.push(format!("{name}: {value}"));
        }
    }
    let targets = a
        .urls
        .iter()
        .map(|u| format!("{}{path}", crate::base::secrets::redact_secret(u).trim_end_matches('/')))
        .collect();
    Ok(Some(GrpcRequest { args, body, targets, messages_per_call, messages, settings }))
}

/// `--metadata '{"key": "value"}'` (ghz's) as `-H` lines. An error names the key, never a value (a token).
fn metadata(json: Option<&str>) -> Result<Vec<String>, CliError> {
    let Some(json) = json else { return Ok(Vec::new()) };
    let bad = |why: String| CliError::new(format!("--metadata: {why}; write it as {{\"key\": \"value\", ...}}"));
    let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(json)
        .map_err(|e| bad(format!("not a JSON object of strings (line {} column {})", e.line(), e.column())))?;
    object
        .into_iter()
        .map(|(key, value)| match value {
            serde_json::Value::String(v) => Ok(format!("{key}: {v}")),
            _ => Err(bad(format!("the value of '{}' is not a string", key.escape_debug()))),
        })
        .collect()
}

/// `grpc://HOST:PORT` (a `/` after it allowed) as the `http://` URL of the call's path, `grpcs://` as `https://`.
fn http_url(url: &str, path: &str) -> Result<String, CliError> {
    let shown = crate::base::target::shown(url);
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    // grpcs:// is https:// with --http2: TLS offering ALPN h2, -k for a self-signed certificate.
    let http = if scheme.eq_ignore_ascii_case("grpcs") { "https" } else { "http" };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() || authority.contains(['/', '?', '#']) {
        return Err(CliError::new(format!(
            "URL '{shown}': a gRPC target is {}://HOST:PORT, without a path (the method is --call's)",
            scheme.to_ascii_lowercase()
        )));
    }
    Ok(format!("{http}://{authority}{path}"))
}

/// The descriptors `--call` is looked up in, and where they came from (for messages): `--proto`, `--protoset`, or
/// the first URL's server reflection.
fn descriptors(a: &RequestArgs, call: &str) -> Result<(DescriptorPool, String), CliError> {
    if let Some(proto) = a.proto.as_deref() {
        return Ok((proto::compile(proto, &a.import_path)?, proto.display().to_string()));
    }
    if let Some(set) = a.protoset.as_deref() {
        let shown = set.display();
        let bytes = crate::base::bounded::read(set, crate::base::bounded::BODY)
            .map_err(|why| CliError::new(format!("--protoset '{shown}': {why}")))?;
        let pool = DescriptorPool::decode(bytes.as_slice()).map_err(|e| {
            CliError::new(format!(
                "--protoset '{shown}': not a FileDescriptorSet hakaru can use ({}); write one with protoc -o FILE \
                 --include_imports",
                one_line(&e.to_string())
            ))
        })?;
        return Ok((pool, shown.to_string()));
    }
    let url = &a.urls[0];
    let (service, _) = split_call(call)?;
    let files = reflect(a, url, service)?;
    let mut set = prost_reflect::prost_types::FileDescriptorSet::default();
    for file in &files {
        let proto = prost_reflect::prost_types::FileDescriptorProto::decode(file.as_slice()).map_err(|e| {
            CliError::new(format!("URL '{}': a malformed file in the server reflection answer ({e})", shown(url)))
        })?;
        set.file.push(proto);
    }
    // google/protobuf's files a server does not give are protox's own copies.
    let given: Vec<String> = set.file.iter().map(|f| f.name().to_string()).collect();
    let google = protox::file::GoogleFileResolver::new();
    let mut imports: Vec<String> = set.file.iter().flat_map(|f| f.dependency.clone()).collect();
    imports.sort();
    imports.dedup();
    for import in imports.iter().filter(|i| !given.contains(i)) {
        use protox::file::FileResolver;
        if let Ok(file) = google.open_file(import) {
            set.file.push(file.file_descriptor_proto().clone());
        }
    }
    let pool = DescriptorPool::from_file_descriptor_set(set).map_err(|e| {
        CliError::new(format!(
            "URL '{}': the server's reflection answer does not describe its services ({}); give them with --proto \
             FILE or --protoset FILE",
            shown(url),
            one_line(&e.to_string())
        ))
    })?;
    Ok((pool, format!("the server's reflection answer ({})", shown(url))))
}

fn shown(url: &str) -> String {
    crate::base::target::shown(&crate::base::secrets::redact_secret(url))
}

/// One server reflection call to `url` for the file defining `service`, within `--timeout`.
fn reflect(a: &RequestArgs, url: &str, service: &str) -> Result<Vec<Vec<u8>>, CliError> {
    use crate::base::target::{Endpoint, ParsedUrl, Scheme};
    let bad = |why: String| CliError::new(format!("URL '{}': server reflection: {why}", shown(url)));
    // The reflection call is made with the web's roots (or -k) on a direct connection; what would change how the
    // run's connections reach the server is not applied to it yet, so it is not silently left out.
    let unapplied = [
        (a.cacert.is_some(), "--cacert"),
        (a.cert.is_some(), "--cert"),
        (a.sni.is_some(), "--sni"),
        (a.tls_version.is_some(), "--tls-version"),
        (a.proxy.is_some(), "--proxy"),
        (!a.connect_to.is_empty(), "--connect-to"),
    ];
    if let Some((_, flag)) = unapplied.iter().find(|(given, _)| *given) {
        return Err(CliError::new(format!(
            "{flag} with server reflection: the reflection call does not use it yet; give the method's types with \
             --proto FILE or --protoset FILE"
        )));
    }
    let parsed = ParsedUrl::parse(&http_url(url, "/")?).map_err(bad)?;
    let endpoint = Endpoint::resolve(parsed.scheme, &parsed.host, parsed.port).map_err(bad)?;
    let tls = (parsed.scheme == Scheme::Https)
        .then(|| std::sync::Arc::new(crate::base::tls::client_config(a.insecure, true)));
    let metadata = a
        .headers
        .iter()
        .cloned()
        .chain(metadata(a.metadata.as_deref())?)
        .filter_map(|h| h.split_once(':').map(|(n, v)| (n.trim().to_string(), v.trim().to_string())))
        .collect();
    let server = grpc::reflection::Server { addr: endpoint.addr, host: parsed.host, port: parsed.port, tls, metadata };
    let timeout = super::flag_timeout("--timeout", &a.timeout)?;
    grpc::reflection::files_for(&server, service, timeout)
        .map_err(|why| bad(format!("{why}; without --proto or --protoset the method's types are asked of the server")))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `package.Service/Method` or `package.Service.Method` as the service's full name and the method's.
fn split_call(call: &str) -> Result<(&str, &str), CliError> {
    call.trim_start_matches('/')
        .rsplit_once('/')
        .or_else(|| call.rsplit_once('.'))
        .ok_or_else(|| CliError::new(format!("--call '{}': write it as package.Service/Method", call.escape_debug())))
}

/// `package.Service/Method` or `package.Service.Method`: a unary method of a service in `pool`, which came from
/// `source`.
fn find_method(pool: &DescriptorPool, call: &str, source: &str) -> Result<MethodDescriptor, CliError> {
    let bad = |why: String| CliError::new(format!("--call '{}': {why}", call.escape_debug()));
    let (service, method) = split_call(call)?;
    let services: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
    let Some(svc) = pool.get_service_by_name(service) else {
        let known = if services.is_empty() { "none".into() } else { services.join(", ") };
        return Err(bad(format!("no service '{service}' in {source} (its services: {known})")));
    };
    let Some(m) = svc.methods().find(|m| m.name() == method) else {
        let known: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
        return Err(bad(format!("no method '{method}' in service {service} (its methods: {})", known.join(", "))));
    };
    Ok(m)
}

/// The framed messages one call sends, and how many: one message, or for a client-streaming (or bidirectional)
/// method `--stream-messages` of them, taken in turn from a JSON array (or the one object) and ended with the
/// stream. Each distinct message is encoded once, here.
fn call_body(framing: Framing, method: &MethodDescriptor, json: &str, flag: &str) -> Result<(Vec<u8>, u32), Refused> {
    let streams = method.is_client_streaming();
    let kind = if method.is_server_streaming() { "server-streaming" } else { "unary" };
    match framing.stream_messages {
        Some(n) if !streams => {
            return Err(CliError::new(format!(
                "--stream-messages {n}: {} is a {kind} method, which sends one message a call; leave it out",
                method.full_name()
            ))
            .into());
        }
        Some(0) => {
            return Err(CliError::new("--stream-messages 0: a call sends at least 1; try --stream-messages 10").into());
        }
        _ => {}
    }
    // Borrowed from `json`: where a message fails is found in it (a template's column, see rows.rs).
    let items: Vec<&str> = if streams && json.trim_start().starts_with('[') {
        let raw: Vec<&serde_json::value::RawValue> = serde_json::from_str(json).map_err(|e| Refused {
            error: CliError::new(format!("{flag}: {e}, for an array of messages")),
            at: Some(offset(json, e.line(), e.column())),
        })?;
        if raw.is_empty() {
            return Err(CliError::new(format!("{flag}: an empty array; give the messages a call sends")).into());
        }
        raw.iter().map(|r| r.get()).collect()
    } else {
        vec![json]
    };
    let mut framed = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let message = encode_json(method, item).map_err(|(e, at)| {
            let which = if items.len() > 1 { format!(" (message {} of the array)", i + 1) } else { String::new() };
            let start = item.as_ptr() as usize - json.as_ptr() as usize;
            Refused { error: CliError::new(format!("{flag}{which}: {e}")), at: Some(start + at) }
        })?;
        framed.push(if framing.gzip { grpc::gzip::frame(&message) } else { grpc::frame_message(&message) });
    }
    let n = if streams { framing.stream_messages.unwrap_or(framed.len() as u32) } else { 1 };
    let body: Vec<u8> = (0..n as usize).flat_map(|i| framed[i % framed.len()].iter().copied()).collect();
    if body.len() as u64 > crate::base::bounded::BODY {
        return Err(CliError::new(format!(
            "--stream-messages {n}: a call of {} bytes, more than hakaru sends ({} at most); send fewer messages",
            body.len(),
            crate::base::bounded::BODY
        ))
        .into());
    }
    Ok((body, n))
}

/// What framing a call's messages takes of the flags: `--stream-messages` and `--grpc-compression`.
#[derive(Clone, Copy, Debug)]
struct Framing {
    stream_messages: Option<u32>,
    gzip: bool,
}

impl Framing {
    fn of(a: &RequestArgs) -> Framing {
        Framing { stream_messages: a.stream_messages, gzip: a.grpc_compression.is_some() }
    }
}

/// `--grpc-compression`: gzip, or none when not given.
fn gzip(a: &RequestArgs) -> Result<bool, CliError> {
    match a.grpc_compression.as_deref() {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("gzip") => Ok(true),
        Some(v) => Err(CliError::new(format!(
            "--grpc-compression '{}': hakaru compresses with gzip only; give --grpc-compression gzip or leave it out",
            v.escape_debug()
        ))),
    }
}

/// `--stream-interval`: the time between a client-streaming (or bidirectional) call's messages; None for 0 (all
/// at once). Refused on a method that sends one message a call.
fn stream_interval(a: &RequestArgs, method: &MethodDescriptor) -> Result<Option<std::time::Duration>, CliError> {
    let Some(interval) = a.stream_interval.as_deref() else { return Ok(None) };
    let d = crate::base::units::parse_flag_duration(interval)
        .map_err(|e| CliError::new(format!("--stream-interval '{interval}': {e}")))?;
    if d.is_zero() {
        return Ok(None);
    }
    if !method.is_client_streaming() {
        let kind = if method.is_server_streaming() { "server-streaming" } else { "unary" };
        return Err(CliError::new(format!(
            "--stream-interval '{interval}': {} is a {kind} method, which sends one message a call; leave it out",
            method.full_name()
        )));
    }
    if d > std::time::Duration::from_secs(3600) {
        return Err(CliError::new(format!(
            "--stream-interval '{interval}': more than an hour between messages; give at most 1h, e.g. 100ms"
        )));
    }
    Ok(Some(d))
}

/// The method's request message from JSON (proto3's JSON mapping): an unknown field or a wrong type is an error
/// naming it, with the line and column in the JSON (and the byte offset there, for a template's column).
fn encode_json(method: &MethodDescriptor, json: &str) -> Result<Vec<u8>, (String, usize)> {
    let input = method.input();
    let mut de = serde_json::Deserializer::from_str(json);
    let message =
        DynamicMessage::deserialize(input.clone(), &mut de).and_then(|m| de.end().map(|()| m)).map_err(|e| {
            (
                format!("{e}, for message {} of {}", input.full_name(), method.full_name()),
                offset(json, e.line(), e.column()),
            )
        })?;
    Ok(message.encode_to_vec())
}

/// serde_json's line (from 1) and column (bytes into the line) as a byte offset in `json`.
fn offset(json: &str, line: usize, column: usize) -> usize {
    let start: usize = json.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    (start + column).min(json.len())
}

/// A message refused, and where in its JSON (a byte offset) when the JSON is what is wrong.
pub(super) struct Refused {
    pub error: CliError,
    pub at: Option<usize>,
}

impl From<CliError> for Refused {
    fn from(error: CliError) -> Refused {
        Refused { error, at: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello_proto(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("hello.proto");
        std::fs::write(
            &path,
            "syntax = \"proto3\";\npackage helloworld;\nservice Greeter {\n  rpc SayHello (HelloRequest) returns \
             (HelloReply);\n  rpc Lots (HelloRequest) returns (stream HelloReply);\n  rpc Collect (stream HelloRequest) \
             returns (HelloReply);\n}\nmessage HelloRequest { string \
             name = 1; int32 times = 2; }\nmessage HelloReply { string message = 1; }\n",
        )
        .unwrap();
        path
    }

    fn args(dir: &Path, call: &str, body: &str) -> RequestArgs {
        RequestArgs {
            urls: vec!["grpc://127.0.0.1:50051".into()],
            method: "GET".into(),
            timeout: "5s".into(),
            call: Some(call.into()),
            proto: Some(hello_proto(dir)),
            body: Some(body.into()),
            ..RequestArgs::default()
        }
    }

    #[test]
    fn a_call_is_a_post_of_the_framed_message_with_grpcs_headers() {
        let dir = tempfile::tempdir().unwrap();
        for call in ["helloworld.Greeter/SayHello", "helloworld.Greeter.SayHello"] {
            let g = prepare(&args(dir.path(), call, r#"{"name":"x","times":3}"#), None).unwrap().unwrap();
            assert_eq!(g.args.urls, ["http://127.0.0.1:50051/helloworld.Greeter/SayHello"]);
            assert_eq!(g.args.method, "POST");
            assert!(g.args.http2);
            // Field 1 (string "x"), field 2 (varint 3), after the uncompressed flag and the length 5.
            assert_eq!(g.body, [0, 0, 0, 0, 5, 0x0a, 1, b'x', 0x10, 3]);
            for h in ["content-type: application/grpc", "te: trailers", "grpc-timeout: 5000m"] {
                assert!(g.args.headers.iter().any(|x| x == h), "{h} in {:?}", g.args.headers);
            }
        }
    }

    fn refused(a: &RequestArgs) -> String {
        match prepare(a, None) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn a_client_streaming_call_sends_its_messages_in_turn_then_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(dir.path(), "helloworld.Greeter/Collect", r#"[{"name":"a"}, {"name":"b"}]"#);
        let g = prepare(&a, None).unwrap().unwrap();
        let (ma, mb) = ([0, 0, 0, 0, 3, 0x0a, 1, b'a'], [0, 0, 0, 0, 3, 0x0a, 1, b'b']);
        assert_eq!((g.body, g.messages_per_call), ([ma, mb].concat(), 2), "the array, once, by default");
        a.stream_messages = Some(3);
        let g = prepare(&a, None).unwrap().unwrap();
        assert_eq!((g.body, g.messages_per_call), ([ma, mb, ma].concat(), 3));
        a.body = Some(r#"{"name":"a"}"#.into());
        let g = prepare(&a, None).unwrap().unwrap();
        assert_eq!(g.body, [ma, ma, ma].concat(), "one object, sent --stream-messages times");
        a.body = Some(r#"[{"name":"a"}, {"nmae":"b"}]"#.into());
        let e = refused(&a);
        assert!(e.starts_with("--body (message 2 of the array): ") && e.contains("nmae"), "{e}");
        a.body = Some(r#"{"name":"a"}"#.into());
        a.stream_interval = Some("10ms".into());
        let g = prepare(&a, None).unwrap().unwrap();
        assert_eq!(g.settings.interval, Some(std::time::Duration::from_millis(10)));
        a.stream_interval = Some("0".into());
        assert_eq!(prepare(&a, None).unwrap().unwrap().settings.interval, None);
        a.stream_interval = Some("2h".into());
        assert!(refused(&a).starts_with("--stream-interval '2h': more than an hour"));
        let mut unary = args(dir.path(), "helloworld.Greeter/SayHello", "{}");
        unary.stream_interval = Some("10ms".into());
        let e = refused(&unary);
        assert!(e.contains("helloworld.Greeter.SayHello is a unary method, which sends one message a call"), "{e}");
    }

    #[test]
    fn grpc_compression_gzip_compresses_each_message_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(dir.path(), "helloworld.Greeter/SayHello", r#"{"name":"x"}"#);
        a.grpc_compression = Some("gzip".into());
        let g = prepare(&a, None).unwrap().unwrap();
        assert!(g.settings.gzip);
        assert_eq!(g.body[0], 1, "the compressed flag");
        assert_eq!(grpc::gzip::inflated_len(&g.body[5..], 100), Ok(3), "field 1, length 1, 'x'");
        for h in ["grpc-encoding: gzip", "grpc-accept-encoding: gzip"] {
            assert!(g.args.headers.iter().any(|x| x == h), "{h} in {:?}", g.args.headers);
        }
        a.grpc_compression = Some("br".into());
        let e = refused(&a);
        assert!(e.starts_with("--grpc-compression 'br': hakaru compresses with gzip only"), "{e}");
    }

    #[test]
    fn metadata_json_is_headers_and_its_errors_show_no_value() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(dir.path(), "helloworld.Greeter/SayHello", "{}");
        a.metadata = Some(r#"{"x-trace": "7", "authorization": "Bearer s3cret"}"#.into());
        let g = prepare(&a, None).unwrap().unwrap();
        for h in ["x-trace: 7", "authorization: Bearer s3cret"] {
            assert!(g.args.headers.iter().any(|x| x == h), "{h} in {:?}", g.args.headers);
        }
        a.metadata = Some(r#"{"authorization": 42}"#.into());
        let e = refused(&a);
        assert!(e.contains("the value of 'authorization' is not a string"), "{e}");
        a.metadata = Some(r#"{"authorization": "s3cret""#.into());
        let e = refused(&a);
        assert!(e.starts_with("--metadata: not a JSON object") && !e.contains("s3cret"), "{e}");
    }

    #[test]
    fn each_distinct_row_is_encoded_once_before_the_load() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(dir.path(), "helloworld.Greeter/SayHello", r#"{"name":"{{name}}","times":{{n}}}"#);
        let data = dir.path().join("rows.csv");
        std::fs::write(&data, "name,n\nann,1\nbob,2\nann,1\ncy,3\n").unwrap();
        a.data = Some(data);
        let g = prepare(&a, None).unwrap().unwrap();
        let Some(Messages::Rows(rows)) = g.messages else { panic!("the rows' messages") };
        assert_eq!(rows.bodies.bodies.len(), 3, "ann,1 is one message for two rows");
        assert_eq!(rows.bodies.of_row, [0, 1, 0, 2]);
        let bob = &rows.bodies.bodies[1];
        assert_eq!(bob[..], grpc::frame_message(&[0x0a, 3, b'b', b'o', b'b', 0x10, 2])[..]);
        assert_eq!(g.body, rows.bodies.bodies[0], "the plan's one body is the first row's");
    }

    #[test]
    fn builtins_make_a_message_per_call_checked_at_both_ends_of_rand() {
        use crate::template::EncodeBody;
        let dir = tempfile::tempdir().unwrap();
        let json = r#"{"name":"{{name}}-{{seq}}","times":{{rand 1 3}}}"#;
        let mut a = args(dir.path(), "helloworld.Greeter/SayHello", json);
        let data = dir.path().join("rows.csv");
        std::fs::write(&data, "name\nann\nbob\n").unwrap();
        a.data = Some(data);
        let g = prepare(&a, None).unwrap().unwrap();
        let Some(Messages::PerCall(p)) = g.messages else { panic!("a message per call") };
        assert_eq!(p.json, json);
        assert_eq!(p.rows.as_ref().map(|r| r.len()), Some(2));
        assert_eq!(g.body, grpc::frame_message(&[0x0a, 5, b'a', b'n', b'n', b'-', b'1', 0x10, 1]), "the first call's");
        let mut out = Vec::new();
        let mut thread = p.encoder.thread();
        thread.encode(br#"{"name":"bob-7","times":2}"#, &[], &mut out).unwrap();
        assert_eq!(out, grpc::frame_message(&[0x0a, 5, b'b', b'o', b'b', b'-', b'7', 0x10, 2]));
        let e = thread.encode(br#"{"name":"bob-7","times":99999999999}"#, &[], &mut out).unwrap_err();
        assert!(e.starts_with("a call's message, from its template: --body: "), "{e}");
        // {{rand}}'s high end does not fit an int32: said before the load, not at the call that draws it.
        a.body = Some(r#"{"name":"x","times":{{rand 1 99999999999}}}"#.into());
        let e = refused(&a);
        assert!(e.contains("{{rand}} gives 99999999999 there"), "{e}");
    }

    #[test]
    fn grpcs_is_https_with_http2() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(dir.path(), "helloworld.Greeter/SayHello", "{}");
        a.urls = vec!["GRPCS://localhost:50051/".into()];
        let g = prepare(&a, None).unwrap().unwrap();
        assert_eq!(g.args.urls, ["https://localhost:50051/helloworld.Greeter/SayHello"]);
        assert!(g.args.http2);
    }

    #[test]
    fn bad_input_is_one_line_naming_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let unknown_field = refused(&args(dir.path(), "helloworld.Greeter/SayHello", r#"{"nmae":"x"}"#));
        assert!(unknown_field.starts_with("--body: ") && unknown_field.contains("nmae"), "{unknown_field}");
        let wrong_type = refused(&args(dir.path(), "helloworld.Greeter/SayHello", r#"{"times":"many"}"#));
        assert!(wrong_type.contains("line 1 column"), "{wrong_type}");
        let no_method = refused(&args(dir.path(), "helloworld.Greeter/SayBye", "{}"));
        assert!(no_method.contains("no method 'SayBye'") && no_method.contains("SayHello"), "{no_method}");
        let no_service = refused(&args(dir.path(), "helloworld.Nobody/SayHello", "{}"));
        assert!(no_service.contains("helloworld.Greeter"), "{no_service}");
        let mut streaming = args(dir.path(), "helloworld.Greeter/Lots", "{}");
        streaming.stream_messages = Some(3);
        let streaming = refused(&streaming);
        assert!(streaming.contains("a server-streaming method, which sends one message a call"), "{streaming}");
        let mut tls = args(dir.path(), "helloworld.Greeter/SayHello", "{}");
        tls.urls = vec!["grpcs://localhost:50051/x".into()];
        let tls = refused(&tls);
        assert!(tls.contains("a gRPC target is grpcs://HOST:PORT, without a path"), "{tls}");
        let mut http = args(dir.path(), "helloworld.Greeter/SayHello", "{}");
        http.urls = vec!["http://127.0.0.1:8080/".into()];
        let http = refused(&http);
        assert!(http.starts_with("--call names a gRPC method"), "{http}");
        let mut templated = args(dir.path(), "helloworld.Greeter/SayHello", r#"{"name":{{seq}}}"#);
        templated.urls = vec!["grpc://127.0.0.1:50051".into()];
        let templated = refused(&templated);
        assert!(templated.starts_with("--body: invalid type: integer `1`, expected a string"), "{templated}");
        assert!(templated.contains("{{seq}} gives 1 there"), "{templated}");
        for e in [unknown_field, wrong_type, no_method, no_service, streaming, tls, http, templated] {
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn a_proto_that_does_not_parse_is_named_by_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(dir.path(), "helloworld.Greeter/SayHello", "{}");
        let bad = dir.path().join("bad.proto");
        std::fs::write(&bad, "syntax = \"proto3\";\nmessage M {\n  strin name = 1;\n  int32 = 2;\n}\n").unwrap();
        a.proto = Some(bad);
        let e = refused(&a);
        assert!(e.starts_with("--proto bad.proto:4:"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
