//! Why requests fail: every kind counted apart ([`ErrorKind`], its stable key and sample) and a thread's tally of
//! them ([`ErrorTally`]).

/// The kinds, each written once: its doc, its name, its stable key (the result document's and the CSV's) and its words
/// for people; the enum, `ALL`, `key()` and `describe()` are made from this one list, so no kind can be missing from
/// one of them.
macro_rules! error_kinds {
    ($( $(#[doc = $doc:literal])* $name:ident => $key:literal, $words:literal; )*) => {
        /// Why a request got no complete answer. Each kind is counted apart, with one sample message.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
        pub enum ErrorKind {
            $( $(#[doc = $doc])* $name, )*
        }

        impl ErrorKind {
            /// Every kind, in the order of the enum (the order of the counters and of every listing).
            pub const ALL: [ErrorKind; [$( stringify!($name) ),*].len()] = [$( ErrorKind::$name, )*];

            /// The stable key used in the result document and the CSV.
            pub fn key(self) -> &'static str {
                match self {
                    $( ErrorKind::$name => $key, )*
                }
            }

            /// Words for people.
            pub fn describe(self) -> &'static str {
                match self {
                    $( ErrorKind::$name => $words, )*
                }
            }
        }
    };
}

error_kinds! {
    /// Nothing listens on the port (TCP RST to the SYN).
    ConnectRefused => "connect_refused", "connection refused";
    /// The TCP (or TLS) connection was not established within `--connect-timeout`.
    ConnectTimeout => "connect_timeout", "connect timeout";
    /// Any other failure to connect (unreachable, no ports left, ...).
    Connect => "connect_error", "connect error";
    /// No file descriptor left for a connection (EMFILE/ENFILE: `ulimit -n` or the system's limit).
    FileLimit => "fd_limit", "no file descriptor left, see ulimit -n";
    /// The server reset the connection (RST) while a request was under way.
    Reset => "reset", "connection reset";
    /// The server closed the connection before the response was complete.
    Closed => "closed", "closed before the response was complete";
    /// No complete response within `--timeout`; recorded with status 0 as drnbench does.
    Timeout => "timeout", "no complete answer in time; status 0";
    /// The bytes received are not a valid response of the protocol.
    Malformed => "malformed_response", "malformed response";
    /// A response head or a reply line went on past `--max-line` without ending: the server is sending something
    /// other than an answer (or answers with more than the bound allows).
    LineTooLong => "line_too_long", "a header or line longer than --max-line";
    /// The server sent bytes no request asked for (before a request was written, or after its answer), so
    /// the connection could not carry the request: answers would be credited to the wrong requests.
    Unsolicited => "unsolicited_response", "bytes no request asked for";
    /// The TLS handshake or a TLS record failed (certificate, protocol).
    Tls => "tls", "TLS error";
    /// Any other I/O error.
    Io => "io", "I/O error";
    /// A key-value workload read a value (or status) other than the one it knows the key holds.
    WrongValue => "wrong_value", "wrong value: not what the workload wrote";
    /// HTTP/2: the server sent GOAWAY with an error code (or a stream it left unprocessed failed again on a new
    /// connection): the stream got no answer.
    Goaway => "goaway", "connection ended by the server's GOAWAY";
    /// HTTP/2: flow control made the request impossible (a body larger than the server's stream window, a window
    /// overflow).
    FlowControl => "flow_control", "HTTP/2 flow control";
    /// HTTP/2: a frame whose length the client does not allow (past 16 KiB, or wrong for its type: a SETTINGS not
    /// a multiple of 6, a PING not 8) or that the connection's end cut short: a FRAME_SIZE_ERROR.
    FrameSize => "frame_size", "HTTP/2 frame of a wrong or cut-short size";
    /// HTTP/2: the server sent control frames (PING, SETTINGS) whose answers piled up unread past the bound: the
    /// connection was ended (ENHANCE_YOUR_CALM) rather than queue without end.
    Flood => "flood", "HTTP/2 control-frame flood (answers left unread)";
    /// HTTP/2: an answer's header list decoded past `--max-header-list` (an HPACK bomb or an oversized head).
    HeaderList => "header_list_too_large", "header list (HTTP/2, HTTP/3) longer than --max-header-list";
    /// HTTP/2: the server reset the stream with RST_STREAM(NO_ERROR).
    RstNoError => "rst_stream_no_error", "stream reset by the server (NO_ERROR)";
    /// HTTP/2: the server reset the stream with RST_STREAM(PROTOCOL_ERROR).
    RstProtocol => "rst_stream_protocol_error", "stream reset by the server (PROTOCOL_ERROR)";
    /// HTTP/2: the server reset the stream with RST_STREAM(INTERNAL_ERROR).
    RstInternal => "rst_stream_internal_error", "stream reset by the server (INTERNAL_ERROR)";
    /// HTTP/2: the server reset the stream with RST_STREAM(FLOW_CONTROL_ERROR).
    RstFlowControl => "rst_stream_flow_control_error", "stream reset by the server (FLOW_CONTROL_ERROR)";
    /// HTTP/2: the server reset the stream with RST_STREAM(SETTINGS_TIMEOUT).
    RstSettingsTimeout => "rst_stream_settings_timeout", "stream reset by the server (SETTINGS_TIMEOUT)";
    /// HTTP/2: the server reset the stream with RST_STREAM(STREAM_CLOSED).
    RstStreamClosed => "rst_stream_stream_closed", "stream reset by the server (STREAM_CLOSED)";
    /// HTTP/2: the server reset the stream with RST_STREAM(FRAME_SIZE_ERROR).
    RstFrameSize => "rst_stream_frame_size_error", "stream reset by the server (FRAME_SIZE_ERROR)";
    /// HTTP/2: the server reset the stream with RST_STREAM(REFUSED_STREAM).
    RstRefusedStream => "rst_stream_refused_stream", "stream reset by the server (REFUSED_STREAM)";
    /// HTTP/2: the server reset the stream with RST_STREAM(CANCEL).
    RstCancel => "rst_stream_cancel", "stream reset by the server (CANCEL)";
    /// HTTP/2: the server reset the stream with RST_STREAM(COMPRESSION_ERROR).
    RstCompression => "rst_stream_compression_error", "stream reset by the server (COMPRESSION_ERROR)";
    /// HTTP/2: the server reset the stream with RST_STREAM(CONNECT_ERROR).
    RstConnect => "rst_stream_connect_error", "stream reset by the server (CONNECT_ERROR)";
    /// HTTP/2: the server reset the stream with RST_STREAM(ENHANCE_YOUR_CALM).
    RstEnhanceYourCalm => "rst_stream_enhance_your_calm", "stream reset by the server (ENHANCE_YOUR_CALM)";
    /// HTTP/2: the server reset the stream with RST_STREAM(INADEQUATE_SECURITY).
    RstInadequateSecurity => "rst_stream_inadequate_security", "stream reset by the server (INADEQUATE_SECURITY)";
    /// HTTP/2: the server reset the stream with RST_STREAM(HTTP_1_1_REQUIRED).
    RstHttp11Required => "rst_stream_http_1_1_required", "stream reset by the server (HTTP_1_1_REQUIRED)";
    /// HTTP/2: the server reset the stream with an error code RFC 9113 does not define.
    RstOther => "rst_stream_other", "stream reset by the server (an unknown code)";
    /// gRPC: the call ended with grpc-status CANCELLED (1).
    GrpcCancelled => "grpc_cancelled", "gRPC status CANCELLED";
    /// gRPC: the call ended with grpc-status UNKNOWN (2).
    GrpcUnknown => "grpc_unknown", "gRPC status UNKNOWN";
    /// gRPC: the call ended with grpc-status INVALID_ARGUMENT (3).
    GrpcInvalidArgument => "grpc_invalid_argument", "gRPC status INVALID_ARGUMENT";
    /// gRPC: the call ended with grpc-status DEADLINE_EXCEEDED (4).
    GrpcDeadlineExceeded => "grpc_deadline_exceeded", "gRPC status DEADLINE_EXCEEDED";
    /// gRPC: the call ended with grpc-status NOT_FOUND (5).
    GrpcNotFound => "grpc_not_found", "gRPC status NOT_FOUND";
    /// gRPC: the call ended with grpc-status ALREADY_EXISTS (6).
    GrpcAlreadyExists => "grpc_already_exists", "gRPC status ALREADY_EXISTS";
    /// gRPC: the call ended with grpc-status PERMISSION_DENIED (7).
    GrpcPermissionDenied => "grpc_permission_denied", "gRPC status PERMISSION_DENIED";
    /// gRPC: the call ended with grpc-status RESOURCE_EXHAUSTED (8).
    GrpcResourceExhausted => "grpc_resource_exhausted", "gRPC status RESOURCE_EXHAUSTED";
    /// gRPC: the call ended with grpc-status FAILED_PRECONDITION (9).
    GrpcFailedPrecondition => "grpc_failed_precondition", "gRPC status FAILED_PRECONDITION";
    /// gRPC: the call ended with grpc-status ABORTED (10).
    GrpcAborted => "grpc_aborted", "gRPC status ABORTED";
    /// gRPC: the call ended with grpc-status OUT_OF_RANGE (11).
    GrpcOutOfRange => "grpc_out_of_range", "gRPC status OUT_OF_RANGE";
    /// gRPC: the call ended with grpc-status UNIMPLEMENTED (12).
    GrpcUnimplemented => "grpc_unimplemented", "gRPC status UNIMPLEMENTED";
    /// gRPC: the call ended with grpc-status INTERNAL (13).
    GrpcInternal => "grpc_internal", "gRPC status INTERNAL";
    /// gRPC: the call ended with grpc-status UNAVAILABLE (14).
    GrpcUnavailable => "grpc_unavailable", "gRPC status UNAVAILABLE";
    /// gRPC: the call ended with grpc-status DATA_LOSS (15).
    GrpcDataLoss => "grpc_data_loss", "gRPC status DATA_LOSS";
    /// gRPC: the call ended with grpc-status UNAUTHENTICATED (16).
    GrpcUnauthenticated => "grpc_unauthenticated", "gRPC status UNAUTHENTICATED";
    /// gRPC: the call ended with a grpc-status gRPC does not define (17 and above).
    GrpcOther => "grpc_other", "gRPC status gRPC does not define";
    /// gRPC: the answer ended without a grpc-status (or with one that is no number).
    GrpcNoStatus => "grpc_no_status", "gRPC answer without grpc-status";
    /// gRPC: an answer's HTTP status was not 200.
    GrpcHttpStatus => "grpc_http_status", "gRPC answer with an HTTP status other than 200";
    /// gRPC: a message's length prefix could not be taken (a compression not asked for, a bad flag, cut short).
    GrpcBadMessage => "grpc_bad_message", "malformed gRPC message (length prefix)";
    /// gRPC: a message longer than `--max-message` (4 MiB unless set, as gRPC's), refused at its length prefix
    /// (or, compressed, as it is decompressed).
    GrpcMessageTooLarge => "grpc_message_too_large", "gRPC message past --max-message";
    /// `--events`: a stream ended before its end: the connection closed or was reset inside it, or its body ended
    /// without the end event (`--events-until`, a token stream's `[DONE]`). A timeout is counted as one.
    StreamCut => "stream_cut", "stream cut before its end";
    /// `--events`: an answer went past `--events-max` events or `--events-max-bytes` bytes (or a chunk announced
    /// more).
    StreamTooLong => "stream_too_long", "stream past --events-max or --events-max-bytes";
    /// WebSocket: the upgrade request was answered with a status other than 101 that has no kind of its own (the
    /// status in the sample).
    WsUpgradeStatus => "ws_upgrade_status", "WebSocket upgrade answered with another status than 101";
    /// WebSocket: the upgrade was answered 400 (bad request).
    WsUpgradeStatus400 => "ws_upgrade_status_400", "WebSocket upgrade answered 400 (bad request)";
    /// WebSocket: the upgrade was answered 401 (unauthorized).
    WsUpgradeStatus401 => "ws_upgrade_status_401", "WebSocket upgrade answered 401 (unauthorized)";
    /// WebSocket: the upgrade was answered 403 (forbidden).
    WsUpgradeStatus403 => "ws_upgrade_status_403", "WebSocket upgrade answered 403 (forbidden)";
    /// WebSocket: the upgrade was answered 404 (not found).
    WsUpgradeStatus404 => "ws_upgrade_status_404", "WebSocket upgrade answered 404 (not found)";
    /// WebSocket: the upgrade was answered 426 (upgrade required).
    WsUpgradeStatus426 => "ws_upgrade_status_426", "WebSocket upgrade answered 426 (upgrade required)";
    /// WebSocket: the upgrade was answered 429 (too many requests).
    WsUpgradeStatus429 => "ws_upgrade_status_429", "WebSocket upgrade answered 429 (too many requests)";
    /// WebSocket: the upgrade was answered 500 (internal server error).
    WsUpgradeStatus500 => "ws_upgrade_status_500", "WebSocket upgrade answered 500 (internal server error)";
    /// WebSocket: the upgrade was answered 502 (bad gateway).
    WsUpgradeStatus502 => "ws_upgrade_status_502", "WebSocket upgrade answered 502 (bad gateway)";
    /// WebSocket: the upgrade was answered 503 (service unavailable).
    WsUpgradeStatus503 => "ws_upgrade_status_503", "WebSocket upgrade answered 503 (service unavailable)";
    /// WebSocket: a 101 answer without what RFC 6455 requires of it (the key's accept value, Upgrade, Connection),
    /// or no HTTP answer at all.
    WsUpgradeInvalid => "ws_upgrade_invalid", "WebSocket upgrade answer invalid";
    /// WebSocket: a frame RFC 6455 forbids a server to send (masked, reserved bits or opcodes, a long or fragmented
    /// control frame, a continuation of nothing): the connection was closed with 1002.
    WsProtocol => "ws_protocol_error", "WebSocket frame a server may not send";
    /// WebSocket: a frame's length or a message's (fragments added up) past `--max-message`, or a message in more
    /// fragments than the client takes: refused at the frame's head, the connection closed with 1009.
    WsTooLarge => "ws_message_too_large", "WebSocket message past --max-message";
    /// WebSocket `--match-field`: the message to send held no id at the pointer (not JSON, or nothing there), so
    /// no answer could be paired with it: not sent.
    WsNoId => "ws_no_id", "WebSocket message without an id at --match-field";
    /// WebSocket: the server closed with status 1000 (normal closure) instead of answering.
    WsCloseNormal => "ws_close_1000", "WebSocket closed by the server (1000 normal closure)";
    /// WebSocket: the server closed with status 1001 (going away) instead of answering.
    WsCloseGoingAway => "ws_close_1001", "WebSocket closed by the server (1001 going away)";
    /// WebSocket: the server closed with status 1002 (protocol error) instead of answering.
    WsCloseProtocol => "ws_close_1002", "WebSocket closed by the server (1002 protocol error)";
    /// WebSocket: the server closed with status 1003 (unsupported data) instead of answering.
    WsCloseUnsupported => "ws_close_1003", "WebSocket closed by the server (1003 unsupported data)";
    /// WebSocket: the server closed with status 1005 (no status code) instead of answering.
    WsCloseNoCode => "ws_close_1005", "WebSocket closed by the server (1005 no status code)";
    /// WebSocket: the server closed with status 1006 (abnormal: the connection ended without a close frame) instead of answering.
    WsCloseAbnormal => "ws_close_1006", "WebSocket closed by the server (1006 abnormal)";
    /// WebSocket: the server closed with status 1007 (invalid payload data) instead of answering.
    WsCloseInvalidData => "ws_close_1007", "WebSocket closed by the server (1007 invalid payload data)";
    /// WebSocket: the server closed with status 1008 (policy violation) instead of answering.
    WsClosePolicy => "ws_close_1008", "WebSocket closed by the server (1008 policy violation)";
    /// WebSocket: the server closed with status 1009 (message too big) instead of answering.
    WsCloseTooBig => "ws_close_1009", "WebSocket closed by the server (1009 message too big)";
    /// WebSocket: the server closed with status 1010 (mandatory extension) instead of answering.
    WsCloseExtension => "ws_close_1010", "WebSocket closed by the server (1010 mandatory extension)";
    /// WebSocket: the server closed with status 1011 (internal error) instead of answering.
    WsCloseInternal => "ws_close_1011", "WebSocket closed by the server (1011 internal error)";
    /// WebSocket: the server closed with status 1012 (service restart) instead of answering.
    WsCloseRestart => "ws_close_1012", "WebSocket closed by the server (1012 service restart)";
    /// WebSocket: the server closed with status 1013 (try again later) instead of answering.
    WsCloseTryLater => "ws_close_1013", "WebSocket closed by the server (1013 try again later)";
    /// WebSocket: the server closed with status 1014 (bad gateway) instead of answering.
    WsCloseBadGateway => "ws_close_1014", "WebSocket closed by the server (1014 bad gateway)";
    /// WebSocket: the server closed with a status RFC 6455 does not name.
    WsCloseOther => "ws_close_other", "WebSocket closed by the server (a code RFC 6455 does not name)";
    /// `--proxy`: the proxy refused the TCP connection (nothing listens there) or could not be reached.
    ProxyRefused => "proxy_refused", "the proxy refused the connection";
    /// `--proxy`: the proxy answered CONNECT with 407 Proxy Authentication Required (no or wrong credentials).
    ProxyStatus407 => "proxy_status_407", "the proxy wants credentials (407)";
    /// `--proxy`: the proxy answered CONNECT with 403 Forbidden (its rules refuse the target or the port).
    ProxyStatus403 => "proxy_status_403", "the proxy refused the tunnel (403)";
    /// `--proxy`: the proxy answered CONNECT with 502 Bad Gateway (it could not reach the target).
    ProxyStatus502 => "proxy_status_502", "the proxy could not reach the target (502)";
    /// `--proxy`: the proxy answered CONNECT with 503 Service Unavailable.
    ProxyStatus503 => "proxy_status_503", "the proxy is unavailable (503)";
    /// `--proxy`: the proxy answered CONNECT with 504 Gateway Timeout.
    ProxyStatus504 => "proxy_status_504", "the proxy timed out reaching the target (504)";
    /// `--proxy`: the proxy answered CONNECT with another status than 200 (the sample names it).
    ProxyStatusOther => "proxy_status_other", "the proxy refused the tunnel";
    /// `--proxy`: the proxy's answer to CONNECT was not HTTP, or it closed the connection without one.
    ProxyError => "proxy_error", "the proxy's answer was not HTTP";
    /// HTTP/3: the QUIC handshake failed: a TLS alert (a certificate refused, no `h3` in the server's ALPN), a version
    /// the server does not speak, or the server closed the connection during it.
    HandshakeFailed => "handshake_failed", "QUIC handshake failed (TLS, no h3 in ALPN)";
    /// HTTP/3: the QUIC connection's idle timeout passed with nothing from the server: it ended under the request.
    IdleTimeout => "idle_timeout", "QUIC idle timeout: nothing from the server";
    /// HTTP/3: the connection was closed with a QUIC transport error code (RFC 9000 20.1; the sample names it), by the
    /// server or by hakaru's QUIC stack on a protocol violation of the server's.
    QuicTransport => "quic_transport_error", "QUIC connection closed with a transport error";
    /// HTTP/3: the server sent a stateless reset: it has no state for the connection (restarted, or it dropped it).
    QuicReset => "quic_stateless_reset", "QUIC stateless reset by the server";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_NO_ERROR.
    H3NoError => "h3_no_error", "HTTP/3 H3_NO_ERROR (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_GENERAL_PROTOCOL_ERROR.
    H3GeneralProtocol => "h3_general_protocol_error", "HTTP/3 H3_GENERAL_PROTOCOL_ERROR (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_INTERNAL_ERROR.
    H3Internal => "h3_internal_error", "HTTP/3 H3_INTERNAL_ERROR (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_STREAM_CREATION_ERROR.
    H3StreamCreation => "h3_stream_creation_error", "HTTP/3 H3_STREAM_CREATION_ERROR (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_CLOSED_CRITICAL_STREAM.
    H3ClosedCriticalStream => "h3_closed_critical_stream", "HTTP/3 H3_CLOSED_CRITICAL_STREAM (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_FRAME_UNEXPECTED.
    H3FrameUnexpected => "h3_frame_unexpected", "HTTP/3 H3_FRAME_UNEXPECTED (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_FRAME_ERROR.
    H3FrameError => "h3_frame_error", "HTTP/3 H3_FRAME_ERROR (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_EXCESSIVE_LOAD.
    H3ExcessiveLoad => "h3_excessive_load", "HTTP/3 H3_EXCESSIVE_LOAD (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_ID_ERROR.
    H3IdError => "h3_id_error", "HTTP/3 H3_ID_ERROR (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_SETTINGS_ERROR.
    H3SettingsError => "h3_settings_error", "HTTP/3 H3_SETTINGS_ERROR (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_MISSING_SETTINGS.
    H3MissingSettings => "h3_missing_settings", "HTTP/3 H3_MISSING_SETTINGS (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_REQUEST_REJECTED.
    H3RequestRejected => "h3_request_rejected", "HTTP/3 H3_REQUEST_REJECTED (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_REQUEST_CANCELLED.
    H3RequestCancelled => "h3_request_cancelled", "HTTP/3 H3_REQUEST_CANCELLED (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_REQUEST_INCOMPLETE.
    H3RequestIncomplete => "h3_request_incomplete", "HTTP/3 H3_REQUEST_INCOMPLETE (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_MESSAGE_ERROR.
    H3MessageError => "h3_message_error", "HTTP/3 H3_MESSAGE_ERROR (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_CONNECT_ERROR.
    H3ConnectError => "h3_connect_error", "HTTP/3 H3_CONNECT_ERROR (a stream reset or the connection closed)";
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_VERSION_FALLBACK.
    H3VersionFallback => "h3_version_fallback", "HTTP/3 H3_VERSION_FALLBACK (a stream reset or the connection closed)";
    /// HTTP/3: a QPACK error code (RFC 9204 6: decompression failed, an encoder or decoder stream error) ended the
    /// stream or the connection.
    H3Qpack => "h3_qpack_error", "HTTP/3 QPACK error (a stream reset or the connection closed)";
    /// HTTP/3: a stream reset or a connection closed with an application error code RFC 9114 does not define.
    H3Other => "h3_other", "HTTP/3 error code RFC 9114 does not define";
}

impl ErrorKind {
    /// The kind with this [`key`](Self::key).
    pub fn from_key(key: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.key() == key)
    }

    pub(super) fn index(self) -> usize {
        self as usize
    }

    /// The kind of an HTTP/2 RST_STREAM with this error code (RFC 9113 7): the codes 0x0-0xd are the kinds from
    /// `RstNoError` on, in order.
    pub fn rst_stream(code: u32) -> ErrorKind {
        let first = ErrorKind::RstNoError.index();
        match code {
            0..=0xd => ErrorKind::ALL[first + code as usize],
            _ => ErrorKind::RstOther,
        }
    }

    /// The kind of a gRPC call's fault: a status by its name (codes 1-16 are the kinds from `GrpcCancelled` on, in
    /// order), the others apart.
    pub fn grpc(fault: &crate::protocol::grpc::Fault) -> ErrorKind {
        use crate::protocol::grpc::Fault;
        let first = ErrorKind::GrpcCancelled.index();
        match fault {
            Fault::Status(code @ 1..=16, _) => ErrorKind::ALL[first + *code as usize - 1],
            Fault::Status(..) => ErrorKind::GrpcOther,
            Fault::NoStatus => ErrorKind::GrpcNoStatus,
            Fault::HttpStatus(_) => ErrorKind::GrpcHttpStatus,
            Fault::BadMessage(_) => ErrorKind::GrpcBadMessage,
            Fault::TooLarge { .. } => ErrorKind::GrpcMessageTooLarge,
        }
    }

    /// The kind of an HTTP/3 application error code (a stream reset, a connection closed): RFC 9114's codes
    /// 0x100-0x110 are the kinds from `H3NoError` on, in order; QPACK's apart.
    pub fn h3(code: u64) -> ErrorKind {
        let first = ErrorKind::H3NoError.index();
        match code {
            0x100..=0x110 => ErrorKind::ALL[first + (code - 0x100) as usize],
            0x200..=0x202 => ErrorKind::H3Qpack,
            _ => ErrorKind::H3Other,
        }
    }

    /// The kind of a WebSocket close by the server with status `code` (None: the frame carried no code, 1005).
    /// An upgrade answered `status` (not 101): its own kind for the statuses servers and proxies give most, else
    /// `ws_upgrade_status`.
    pub fn ws_upgrade(status: u16) -> ErrorKind {
        match status {
            400 => ErrorKind::WsUpgradeStatus400,
            401 => ErrorKind::WsUpgradeStatus401,
            403 => ErrorKind::WsUpgradeStatus403,
            404 => ErrorKind::WsUpgradeStatus404,
            426 => ErrorKind::WsUpgradeStatus426,
            429 => ErrorKind::WsUpgradeStatus429,
            500 => ErrorKind::WsUpgradeStatus500,
            502 => ErrorKind::WsUpgradeStatus502,
            503 => ErrorKind::WsUpgradeStatus503,
            _ => ErrorKind::WsUpgradeStatus,
        }
    }

    pub fn ws_close(code: Option<u16>) -> ErrorKind {
        match code.unwrap_or(1005) {
            1000 => ErrorKind::WsCloseNormal,
            1001 => ErrorKind::WsCloseGoingAway,
            1002 => ErrorKind::WsCloseProtocol,
            1003 => ErrorKind::WsCloseUnsupported,
            1005 => ErrorKind::WsCloseNoCode,
            1006 => ErrorKind::WsCloseAbnormal,
            1007 => ErrorKind::WsCloseInvalidData,
            1008 => ErrorKind::WsClosePolicy,
            1009 => ErrorKind::WsCloseTooBig,
            1010 => ErrorKind::WsCloseExtension,
            1011 => ErrorKind::WsCloseInternal,
            1012 => ErrorKind::WsCloseRestart,
            1013 => ErrorKind::WsCloseTryLater,
            1014 => ErrorKind::WsCloseBadGateway,
            _ => ErrorKind::WsCloseOther,
        }
    }
}

/// Counts by error kind, keeping the first message of each kind as a sample.
#[derive(Clone, Debug)]
pub struct ErrorTally {
    counts: [u64; ErrorKind::ALL.len()],
    samples: [Option<String>; ErrorKind::ALL.len()],
}

// By hand: std derives Default for arrays of at most 32.
impl Default for ErrorTally {
    fn default() -> Self {
        Self { counts: [0; ErrorKind::ALL.len()], samples: std::array::from_fn(|_| None) }
    }
}

impl ErrorTally {
    pub fn add(&mut self, kind: ErrorKind, sample: impl FnOnce() -> String) {
        let i = kind.index();
        self.counts[i] += 1;
        if self.samples[i].is_none() {
            self.samples[i] = Some(crate::protocol::printable_text(crate::base::secrets::scrub_text(&sample())));
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn count(&self, kind: ErrorKind) -> u64 {
        self.counts[kind.index()]
    }

    pub fn merge(&mut self, other: &ErrorTally) {
        for kind in ErrorKind::ALL {
            let i = kind.index();
            self.counts[i] += other.counts[i];
            if self.samples[i].is_none() {
                self.samples[i].clone_from(&other.samples[i]);
            }
        }
    }

    /// The kinds seen, with count and sample, in a stable order.
    pub fn seen(&self) -> impl Iterator<Item = (ErrorKind, u64, &str)> {
        ErrorKind::ALL.into_iter().filter_map(|k| {
            let c = self.counts[k.index()];
            (c > 0).then(|| (k, c, self.samples[k.index()].as_deref().unwrap_or("")))
        })
    }
}

#[cfg(test)]
mod printable_tests {
    use super::*;
    use crate::protocol::printable_text as printable;

    #[test]
    fn a_peers_control_characters_are_escaped_and_plain_text_is_kept() {
        let forged = "bad\u{1b}]0;pwned\u{7}\r\n  status       200: 1\u{202e}";
        assert_eq!(printable(forged.into()), "bad\\u{1b}]0;pwned\\u{7}\\r\\n  status       200: 1\\u{202e}");
        assert_eq!(
            printable("gRPC status UNAVAILABLE (14): \"down\" é".into()),
            "gRPC status UNAVAILABLE (14): \"down\" é"
        );
        let mut t = ErrorTally::default();
        t.add(ErrorKind::Closed, || "a\nb".into());
        assert_eq!(t.seen().next().map(|(_, _, s)| s.to_string()), Some("a\\nb".into()));
    }
}
