//! Server reflection: the one call before the load that asks a gRPC server for the files describing a method
//! when neither `--proto` nor `--protoset` is given (grpc.reflection.v1, then v1alpha, as grpcurl and ghz do).
//!
//! The call is a bidirectional stream: a request for the file defining the service, then one for each of its
//! imports the server has not yet given, each answer read before the next question. It goes over the `h2` crate,
//! not the engine: the engine is built to time many streams it never keeps the answers of, this is one stream
//! whose messages are kept, once. The whole call is bounded in time (`--timeout`) and in size.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Cursor;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use prost_reflect::prost::bytes::Buf;
use prost_reflect::prost::encoding::{WireType, decode_key, decode_varint, encode_key, encode_varint};

/// The most bytes the answers of one reflection call may add up to.
pub const MOST_BYTES: usize = 16 << 20;
/// The most files one reflection call asks for.
const MOST_FILES: usize = 1000;

/// The reflection services asked, newest first.
const SERVICES: [&str; 2] = ["grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"];

/// Where the reflection call goes.
pub struct Server {
    pub addr: SocketAddr,
    /// The host as the URL gives it: the TLS server name and the `:authority`.
    pub host: String,
    pub port: u16,
    /// TLS (grpcs://), with these settings.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The run's metadata (`-H`, `--metadata`), sent with the reflection call too, as grpcurl does: a server may
    /// want its token for reflection as for any method.
    pub metadata: Vec<(String, String)>,
}

/// The serialized FileDescriptorProtos of the file that defines `symbol` (a service's full name) and of every
/// file it imports that the server gives, within `timeout`. The error says what went wrong, for a line naming
/// the URL.
pub fn files_for(server: &Server, symbol: &str, timeout: Duration) -> Result<Vec<Vec<u8>>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime for the reflection call: {e}"))?;
    runtime.block_on(async {
        match tokio::time::timeout(timeout, ask(server, symbol)).await {
            Ok(answer) => answer,
            Err(_) => Err(format!(
                "no complete server reflection answer within {} (--timeout)",
                humantime::format_duration(timeout)
            )),
        }
    })
}

trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static> Io for T {}

async fn connect(server: &Server) -> Result<Box<dyn Io>, String> {
    let tcp =
        tokio::net::TcpStream::connect(server.addr).await.map_err(|e| format!("connect to {}: {e}", server.addr))?;
    let _ = tcp.set_nodelay(true);
    let Some(config) = &server.tls else { return Ok(Box::new(tcp)) };
    let name = rustls::pki_types::ServerName::try_from(server.host.clone())
        .map_err(|e| format!("server name '{}': {e}", server.host))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::clone(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake: {e} (-k accepts a self-signed certificate)"))?;
    if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
        return Err("the server did not offer HTTP/2 (ALPN h2) over TLS".into());
    }
    Ok(Box::new(tls))
}

async fn ask(server: &Server, symbol: &str) -> Result<Vec<Vec<u8>>, String> {
    let io = connect(server).await?;
    let (client, connection) = h2::client::Builder::new()
        .max_frame_size(1 << 20)
        .handshake::<_, Cursor<Vec<u8>>>(io)
        .await
        .map_err(|e| format!("HTTP/2: {e}"))?;
    // The connection's frames are read and written by a task of their own while this one asks.
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut unimplemented = Vec::new();
    let mut answer = Err(String::new());
    for service in SERVICES {
        match ask_service(&client, server, service, symbol).await {
            Err(Asked::Unimplemented) => unimplemented.push(service),
            Err(Asked::Failed(why)) => {
                answer = Err(why);
                break;
            }
            Ok(files) => {
                answer = Ok(files);
                break;
            }
        }
    }
    driver.abort();
    if unimplemented.len() == SERVICES.len() {
        return Err("the server does not offer server reflection (UNIMPLEMENTED for grpc.reflection.v1 and \
                    v1alpha): give the service's files with --proto FILE or --protoset FILE"
            .into());
    }
    answer
}

enum Asked {
    /// The server does not know this reflection service.
    Unimplemented,
    Failed(String),
}

impl From<String> for Asked {
    fn from(why: String) -> Asked {
        Asked::Failed(why)
    }
}

async fn ask_service(
    client: &h2::client::SendRequest<Cursor<Vec<u8>>>,
    server: &Server,
    service: &str,
    symbol: &str,
) -> Result<Vec<Vec<u8>>, Asked> {
    let scheme = if server.tls.is_some() { "https" } else { "http" };
    let host = if server.host.contains(':') { format!("[{}]", server.host) } else { server.host.clone() };
    let mut request = http::Request::builder()
        .method("POST")
        .uri(format!("{scheme}://{host}:{}/{service}/ServerReflectionInfo", server.port))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in &server.metadata {
        // A field HTTP/2 cannot carry is left out here: the run's own checks refuse it in words after this call.
        if let (Ok(n), Ok(v)) =
            (http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()), http::HeaderValue::from_str(value))
            && !matches!(n.as_str(), "content-type" | "te" | "host" | "connection")
        {
            request = request.header(n, v);
        }
    }
    let request = request.body(()).map_err(|e| format!("the reflection request: {e}"))?;
    let mut client = client.clone().ready().await.map_err(|e| format!("HTTP/2: {e}"))?;
    let (response, mut send) = client.send_request(request, false).map_err(|e| format!("HTTP/2: {e}"))?;
    let mut send_one = |message: Vec<u8>| {
        send.send_data(Cursor::new(super::frame_message(&message)), false)
            .map_err(|e| format!("HTTP/2, sending a reflection request: {e}"))
    };
    send_one(request_message(Question::Symbol(symbol)))?;
    let response = response.await.map_err(|e| format!("HTTP/2, reading the reflection answer: {e}"))?;
    let status = response.headers().get("grpc-status").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    if response.status() != 200 {
        return Err(format!("HTTP status {} for {service}", response.status()).into());
    }
    match status {
        Some(12u32) => return Err(Asked::Unimplemented),
        Some(code) => {
            let message = response
                .headers()
                .get("grpc-message")
                .map(|v| crate::base::secrets::scrub_text(&crate::base::target::percent_decode(v.as_bytes())));
            return Err(format!("{service}: gRPC status {} {}", super::status_name(code), message.unwrap_or_default())
                .trim_end()
                .to_string()
                .into());
        }
        None => {}
    }
    let mut body = response.into_body();
    let mut messages = Messages::default();
    // Files by name, as the server gave them; the names still to ask for.
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut asked: BTreeSet<String> = BTreeSet::new();
    let mut wanted: Vec<String> = Vec::new();
    loop {
        let message = loop {
            if let Some(m) = messages.next()? {
                break m;
            }
            match body.data().await {
                Some(Ok(data)) => {
                    let _ = body.flow_control().release_capacity(data.len());
                    messages.feed(&data)?;
                }
                Some(Err(e)) => return Err(format!("HTTP/2, reading the reflection answer: {e}").into()),
                None => {
                    let trailers = body.trailers().await.ok().flatten();
                    let code = trailers.as_ref().and_then(|t| t.get("grpc-status")).and_then(|v| v.to_str().ok());
                    return match code {
                        Some("12") if files.is_empty() => Err(Asked::Unimplemented),
                        Some(code) => Err(format!("the reflection answer ended early, grpc-status {code}").into()),
                        None => Err("the reflection answer ended early, without a grpc-status".to_string().into()),
                    };
                }
            }
        };
        for file in answer_files(&message).map_err(|why| format!("{service}: {why}"))? {
            let (name, imports) = name_and_imports(&file).map_err(|why| format!("{service}: {why}"))?;
            for import in imports {
                if !files.contains_key(&import) && asked.insert(import.clone()) {
                    wanted.push(import);
                }
            }
            asked.insert(name.clone());
            files.entry(name).or_insert(file);
        }
        // An import the server does not have is left for the caller (google/protobuf's are built in).
        let next = loop {
            match wanted.pop() {
                Some(name) if files.contains_key(&name) => continue,
                other => break other,
            }
        };
        let Some(name) = next else { break };
        if files.len() >= MOST_FILES {
            return Err(format!("more than {MOST_FILES} files: give them with --protoset FILE").into());
        }
        send_one(request_message(Question::File(&name)))?;
    }
    let _ = send.send_data(Cursor::new(Vec::new()), true);
    Ok(files.into_values().collect())
}

enum Question<'a> {
    /// file_containing_symbol (field 4).
    Symbol(&'a str),
    /// file_by_filename (field 3).
    File(&'a str),
}

/// A ServerReflectionRequest (the same in v1 and v1alpha).
fn request_message(q: Question) -> Vec<u8> {
    let (field, text) = match q {
        Question::Symbol(s) => (4, s),
        Question::File(f) => (3, f),
    };
    let mut out = Vec::new();
    encode_key(field, WireType::LengthDelimited, &mut out);
    encode_varint(text.len() as u64, &mut out);
    out.extend_from_slice(text.as_bytes());
    out
}

/// A message's fields as (number, value): a length-delimited one's bytes, a varint's value.
fn fields(mut bytes: &[u8]) -> Result<Vec<(u32, Field<'_>)>, String> {
    let bad = |e: prost_reflect::prost::DecodeError| format!("a malformed reflection answer ({e})");
    let mut out = Vec::new();
    while bytes.has_remaining() {
        let (number, wire) = decode_key(&mut bytes).map_err(bad)?;
        let value = match wire {
            WireType::Varint => Field::Varint(decode_varint(&mut bytes).map_err(bad)?),
            WireType::LengthDelimited => {
                let len = decode_varint(&mut bytes).map_err(bad)? as usize;
                if len > bytes.len() {
                    return Err("a malformed reflection answer (a field longer than its message)".into());
                }
                let (value, rest) = bytes.split_at(len);
                bytes = rest;
                Field::Bytes(value)
            }
            WireType::SixtyFourBit if bytes.len() >= 8 => {
                bytes = &bytes[8..];
                continue;
            }
            WireType::ThirtyTwoBit if bytes.len() >= 4 => {
                bytes = &bytes[4..];
                continue;
            }
            other => return Err(format!("a malformed reflection answer (wire type {other:?})")),
        };
        out.push((number, value));
    }
    Ok(out)
}

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// The serialized files of a ServerReflectionResponse's file_descriptor_response (field 4), or the server's
/// error_response (field 7) in words.
fn answer_files(message: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    for (number, value) in fields(message)? {
        match (number, value) {
            (4, Field::Bytes(response)) => {
                return fields(response).map(|f| {
                    f.into_iter()
                        .filter_map(|(n, v)| match (n, v) {
                            (1, Field::Bytes(file)) => Some(file.to_vec()),
                            _ => None,
                        })
                        .collect()
                });
            }
            (7, Field::Bytes(error)) => {
                let (mut code, mut text) = (0, String::new());
                for (n, v) in fields(error)? {
                    match (n, v) {
                        (1, Field::Varint(c)) => code = c as u32,
                        // The server's words, cut to 200 characters and escaped: they reach the terminal.
                        (2, Field::Bytes(t)) => {
                            let t = String::from_utf8_lossy(&t[..t.len().min(200)]);
                            text = crate::protocol::framing::printable_text(crate::base::secrets::scrub_text(&t));
                        }
                        _ => {}
                    }
                }
                return Err(format!("the server answered {} ({text})", super::status_name(code)));
            }
            _ => {}
        }
    }
    Err("a reflection answer without files".into())
}

/// A FileDescriptorProto's name (field 1) and imports (field 3).
fn name_and_imports(file: &[u8]) -> Result<(String, Vec<String>), String> {
    let (mut name, mut imports) = (String::new(), Vec::new());
    for (n, v) in fields(file)? {
        match (n, v) {
            (1, Field::Bytes(b)) => name = String::from_utf8_lossy(b).into_owned(),
            (3, Field::Bytes(b)) => imports.push(String::from_utf8_lossy(b).into_owned()),
            _ => {}
        }
    }
    Ok((name, imports))
}

/// An answer's messages, whole, as its DATA comes: bounded by [`MOST_BYTES`] in all and gRPC's message limit.
#[derive(Default)]
struct Messages {
    buffer: Vec<u8>,
    total: usize,
}

impl Messages {
    fn feed(&mut self, data: &[u8]) -> Result<(), String> {
        self.total += data.len();
        if self.total > MOST_BYTES {
            return Err(format!("the reflection answers came to more than {MOST_BYTES} bytes"));
        }
        self.buffer.extend_from_slice(data);
        Ok(())
    }

    fn next(&mut self) -> Result<Option<Vec<u8>>, String> {
        let Some(prefix) = self.buffer.get(..5) else { return Ok(None) };
        if prefix[0] != 0 {
            return Err(format!("a reflection answer with flag {} (uncompressed asked for)", prefix[0]));
        }
        let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]);
        if len > super::MAX_MESSAGE {
            return Err(format!("a reflection answer of {len} bytes (at most {})", super::MAX_MESSAGE));
        }
        let end = 5 + len as usize;
        if self.buffer.len() < end {
            return Ok(None);
        }
        let message = self.buffer[5..end].to_vec();
        self.buffer.drain(..end);
        Ok(Some(message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_asks_for_a_symbol_or_a_file() {
        assert_eq!(request_message(Question::Symbol("a.B")), [0x22, 3, b'a', b'.', b'B']);
        assert_eq!(request_message(Question::File("x")), [0x1a, 1, b'x']);
    }

    #[test]
    fn an_answers_files_and_errors_are_read() {
        // file_descriptor_response { file_descriptor_proto: FileDescriptorProto { name: "a.proto", dependency: "b.proto" } }
        let file = [&[0x0a, 7][..], b"a.proto", &[0x1a, 7], b"b.proto"].concat();
        let response = [&[0x0a, file.len() as u8][..], &file].concat();
        let message = [&[0x22, response.len() as u8][..], &response].concat();
        let files = answer_files(&message).unwrap();
        assert_eq!(files, std::slice::from_ref(&file));
        assert_eq!(name_and_imports(&file).unwrap(), ("a.proto".into(), vec!["b.proto".into()]));
        // error_response { error_code: 5, error_message: "gone" }
        let error = [&[0x08, 5, 0x12, 4][..], b"gone"].concat();
        let message = [&[0x3a, error.len() as u8][..], &error].concat();
        assert_eq!(answer_files(&message).unwrap_err(), "the server answered NOT_FOUND (gone)");
        assert!(answer_files(&[0x22, 9]).unwrap_err().contains("malformed"));
    }

    #[test]
    fn messages_are_taken_whole_and_bounded() {
        let mut m = Messages::default();
        let framed = super::super::frame_message(b"hello");
        m.feed(&framed[..3]).unwrap();
        assert_eq!(m.next().unwrap(), None);
        m.feed(&framed[3..]).unwrap();
        assert_eq!(m.next().unwrap().as_deref(), Some(&b"hello"[..]));
        assert_eq!(m.next().unwrap(), None);
        let mut huge = Messages::default();
        huge.feed(&[0, 0xff, 0xff, 0xff, 0xff]).unwrap();
        assert!(huge.next().is_err());
        assert!(Messages::default().feed(&vec![0; MOST_BYTES + 1]).is_err());
    }
}
