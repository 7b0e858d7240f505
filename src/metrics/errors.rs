//! Why requests fail: every kind counted apart ([`ErrorKind`], its stable key and sample) and a thread's tally of
//! them ([`ErrorTally`]).

/// Why a request got no complete answer. Each kind is counted apart, with one sample message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorKind {
    /// Nothing listens on the port (TCP RST to the SYN).
    ConnectRefused,
    /// The TCP (or TLS) connection was not established within `--connect-timeout`.
    ConnectTimeout,
    /// Any other failure to connect (unreachable, no ports left, ...).
    Connect,
    /// No file descriptor left for a connection (EMFILE/ENFILE: `ulimit -n` or the system's limit).
    FileLimit,
    /// The server reset the connection (RST) while a request was under way.
    Reset,
    /// The server closed the connection before the response was complete.
    Closed,
    /// No complete response within `--timeout`; recorded with status 0 as drnbench does.
    Timeout,
    /// The bytes received are not a valid response of the protocol.
    Malformed,
    /// A response head or a reply line went on past `--max-line` without ending: the server is sending something
    /// other than an answer (or answers with more than the bound allows).
    LineTooLong,
    /// The server sent bytes no request asked for (before a request was written, or after its answer), so
    /// the connection could not carry the request: answers would be credited to the wrong requests.
    Unsolicited,
    /// The TLS handshake or a TLS record failed (certificate, protocol).
    Tls,
    /// Any other I/O error.
    Io,
    /// A key-value workload read a value (or status) other than the one it knows the key holds.
    WrongValue,
    /// HTTP/2: the server sent GOAWAY with an error code (or a stream it left unprocessed failed again on a new
    /// connection): the stream got no answer.
    Goaway,
    /// HTTP/2: flow control made the request impossible (a body larger than the server's stream window, a window
    /// overflow).
    FlowControl,
    /// HTTP/2: a frame whose length the client does not allow (past 16 KiB, or wrong for its type: a SETTINGS not
    /// a multiple of 6, a PING not 8) or that the connection's end cut short: a FRAME_SIZE_ERROR.
    FrameSize,
    /// HTTP/2: the server sent control frames (PING, SETTINGS) whose answers piled up unread past the bound: the
    /// connection was ended (ENHANCE_YOUR_CALM) rather than queue without end.
    Flood,
    /// HTTP/2: an answer's header list decoded past `--max-header-list` (an HPACK bomb or an oversized head).
    HeaderList,
    /// HTTP/2: the server reset the stream with RST_STREAM(NO_ERROR).
    RstNoError,
    /// HTTP/2: the server reset the stream with RST_STREAM(PROTOCOL_ERROR).
    RstProtocol,
    /// HTTP/2: the server reset the stream with RST_STREAM(INTERNAL_ERROR).
    RstInternal,
    /// HTTP/2: the server reset the stream with RST_STREAM(FLOW_CONTROL_ERROR).
    RstFlowControl,
    /// HTTP/2: the server reset the stream with RST_STREAM(SETTINGS_TIMEOUT).
    RstSettingsTimeout,
    /// HTTP/2: the server reset the stream with RST_STREAM(STREAM_CLOSED).
    RstStreamClosed,
    /// HTTP/2: the server reset the stream with RST_STREAM(FRAME_SIZE_ERROR).
    RstFrameSize,
    /// HTTP/2: the server reset the stream with RST_STREAM(REFUSED_STREAM).
    RstRefusedStream,
    /// HTTP/2: the server reset the stream with RST_STREAM(CANCEL).
    RstCancel,
    /// HTTP/2: the server reset the stream with RST_STREAM(COMPRESSION_ERROR).
    RstCompression,
    /// HTTP/2: the server reset the stream with RST_STREAM(CONNECT_ERROR).
    RstConnect,
    /// HTTP/2: the server reset the stream with RST_STREAM(ENHANCE_YOUR_CALM).
    RstEnhanceYourCalm,
    /// HTTP/2: the server reset the stream with RST_STREAM(INADEQUATE_SECURITY).
    RstInadequateSecurity,
    /// HTTP/2: the server reset the stream with RST_STREAM(HTTP_1_1_REQUIRED).
    RstHttp11Required,
    /// HTTP/2: the server reset the stream with an error code RFC 9113 does not define.
    RstOther,
    /// gRPC: the call ended with grpc-status CANCELLED (1).
    GrpcCancelled,
    /// gRPC: the call ended with grpc-status UNKNOWN (2).
    GrpcUnknown,
    /// gRPC: the call ended with grpc-status INVALID_ARGUMENT (3).
    GrpcInvalidArgument,
    /// gRPC: the call ended with grpc-status DEADLINE_EXCEEDED (4).
    GrpcDeadlineExceeded,
    /// gRPC: the call ended with grpc-status NOT_FOUND (5).
    GrpcNotFound,
    /// gRPC: the call ended with grpc-status ALREADY_EXISTS (6).
    GrpcAlreadyExists,
    /// gRPC: the call ended with grpc-status PERMISSION_DENIED (7).
    GrpcPermissionDenied,
    /// gRPC: the call ended with grpc-status RESOURCE_EXHAUSTED (8).
    GrpcResourceExhausted,
    /// gRPC: the call ended with grpc-status FAILED_PRECONDITION (9).
    GrpcFailedPrecondition,
    /// gRPC: the call ended with grpc-status ABORTED (10).
    GrpcAborted,
    /// gRPC: the call ended with grpc-status OUT_OF_RANGE (11).
    GrpcOutOfRange,
    /// gRPC: the call ended with grpc-status UNIMPLEMENTED (12).
    GrpcUnimplemented,
    /// gRPC: the call ended with grpc-status INTERNAL (13).
    GrpcInternal,
    /// gRPC: the call ended with grpc-status UNAVAILABLE (14).
    GrpcUnavailable,
    /// gRPC: the call ended with grpc-status DATA_LOSS (15).
    GrpcDataLoss,
    /// gRPC: the call ended with grpc-status UNAUTHENTICATED (16).
    GrpcUnauthenticated,
    /// gRPC: the call ended with a grpc-status gRPC does not define (17 and above).
    GrpcOther,
    /// gRPC: the answer ended without a grpc-status (or with one that is no number).
    GrpcNoStatus,
    /// gRPC: an answer's HTTP status was not 200.
    GrpcHttpStatus,
    /// gRPC: a message's length prefix could not be taken (a compression not asked for, a bad flag, cut short).
    GrpcBadMessage,
    /// gRPC: a message longer than `--max-message` (4 MiB unless set, as gRPC's), refused at its length prefix
    /// (or, compressed, as it is decompressed).
    GrpcMessageTooLarge,
    /// `--events`: a stream ended before its end: the connection closed or was reset inside it, or its body ended
    /// without the end event (`--events-until`, a token stream's `[DONE]`). A timeout is counted as one.
    StreamCut,
    /// `--events`: an answer went past `--events-max` events or `--events-max-bytes` bytes (or a chunk announced
    /// more).
    StreamTooLong,
    /// WebSocket: the upgrade request was answered with a status other than 101 that has no kind of its own (the
    /// status in the sample).
    WsUpgradeStatus,
    /// WebSocket: the upgrade was answered 400 (bad request).
    WsUpgradeStatus400,
    /// WebSocket: the upgrade was answered 401 (unauthorized).
    WsUpgradeStatus401,
    /// WebSocket: the upgrade was answered 403 (forbidden).
    WsUpgradeStatus403,
    /// WebSocket: the upgrade was answered 404 (not found).
    WsUpgradeStatus404,
    /// WebSocket: the upgrade was answered 426 (upgrade required).
    WsUpgradeStatus426,
    /// WebSocket: the upgrade was answered 429 (too many requests).
    WsUpgradeStatus429,
    /// WebSocket: the upgrade was answered 500 (internal server error).
    WsUpgradeStatus500,
    /// WebSocket: the upgrade was answered 502 (bad gateway).
    WsUpgradeStatus502,
    /// WebSocket: the upgrade was answered 503 (service unavailable).
    WsUpgradeStatus503,

    /// WebSocket: a 101 answer without what RFC 6455 requires of it (the key's accept value, Upgrade, Connection),
    /// or no HTTP answer at all.
    WsUpgradeInvalid,
    /// WebSocket: a frame RFC 6455 forbids a server to send (masked, reserved bits or opcodes, a long or fragmented
    /// control frame, a continuation of nothing): the connection was closed with 1002.
    WsProtocol,
    /// WebSocket: a frame's length or a message's (fragments added up) past `--max-message`, or a message in more
    /// fragments than the client takes: refused at the frame's head, the connection closed with 1009.
    WsTooLarge,
    /// WebSocket `--match-field`: the message to send held no id at the pointer (not JSON, or nothing there), so
    /// no answer could be paired with it: not sent.
    WsNoId,
    /// WebSocket: the server closed with status 1000 (normal closure) instead of answering.
    WsCloseNormal,
    /// WebSocket: the server closed with status 1001 (going away) instead of answering.
    WsCloseGoingAway,
    /// WebSocket: the server closed with status 1002 (protocol error) instead of answering.
    WsCloseProtocol,
    /// WebSocket: the server closed with status 1003 (unsupported data) instead of answering.
    WsCloseUnsupported,
    /// WebSocket: the server closed with status 1005 (no status code) instead of answering.
    WsCloseNoCode,
    /// WebSocket: the server closed with status 1006 (abnormal: the connection ended without a close frame) instead of answering.
    WsCloseAbnormal,
    /// WebSocket: the server closed with status 1007 (invalid payload data) instead of answering.
    WsCloseInvalidData,
    /// WebSocket: the server closed with status 1008 (policy violation) instead of answering.
    WsClosePolicy,
    /// WebSocket: the server closed with status 1009 (message too big) instead of answering.
    WsCloseTooBig,
    /// WebSocket: the server closed with status 1010 (mandatory extension) instead of answering.
    WsCloseExtension,
    /// WebSocket: the server closed with status 1011 (internal error) instead of answering.
    WsCloseInternal,
    /// WebSocket: the server closed with status 1012 (service restart) instead of answering.
    WsCloseRestart,
    /// WebSocket: the server closed with status 1013 (try again later) instead of answering.
    WsCloseTryLater,
    /// WebSocket: the server closed with status 1014 (bad gateway) instead of answering.
    WsCloseBadGateway,
    /// WebSocket: the server closed with a status RFC 6455 does not name.
    WsCloseOther,
    /// `--proxy`: the proxy refused the TCP connection (nothing listens there) or could not be reached.
    ProxyRefused,
    /// `--proxy`: the proxy answered CONNECT with 407 Proxy Authentication Required (no or wrong credentials).
    ProxyStatus407,
    /// `--proxy`: the proxy answered CONNECT with 403 Forbidden (its rules refuse the target or the port).
    ProxyStatus403,
    /// `--proxy`: the proxy answered CONNECT with 502 Bad Gateway (it could not reach the target).
    ProxyStatus502,
    /// `--proxy`: the proxy answered CONNECT with 503 Service Unavailable.
    ProxyStatus503,
    /// `--proxy`: the proxy answered CONNECT with 504 Gateway Timeout.
    ProxyStatus504,
    /// `--proxy`: the proxy answered CONNECT with another status than 200 (the sample names it).
    ProxyStatusOther,
    /// `--proxy`: the proxy's answer to CONNECT was not HTTP, or it closed the connection without one.
    ProxyError,
    /// HTTP/3: the QUIC handshake failed: a TLS alert (a certificate refused, no `h3` in the server's ALPN), a version
    /// the server does not speak, or the server closed the connection during it.
    HandshakeFailed,
    /// HTTP/3: the QUIC connection's idle timeout passed with nothing from the server: it ended under the request.
    IdleTimeout,
    /// HTTP/3: the connection was closed with a QUIC transport error code (RFC 9000 20.1; the sample names it), by the
    /// server or by hakaru's QUIC stack on a protocol violation of the server's.
    QuicTransport,
    /// HTTP/3: the server sent a stateless reset: it has no state for the connection (restarted, or it dropped it).
    QuicReset,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_NO_ERROR.
    H3NoError,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_GENERAL_PROTOCOL_ERROR.
    H3GeneralProtocol,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_INTERNAL_ERROR.
    H3Internal,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_STREAM_CREATION_ERROR.
    H3StreamCreation,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_CLOSED_CRITICAL_STREAM.
    H3ClosedCriticalStream,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_FRAME_UNEXPECTED.
    H3FrameUnexpected,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_FRAME_ERROR.
    H3FrameError,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_EXCESSIVE_LOAD.
    H3ExcessiveLoad,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_ID_ERROR.
    H3IdError,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_SETTINGS_ERROR.
    H3SettingsError,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_MISSING_SETTINGS.
    H3MissingSettings,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_REQUEST_REJECTED.
    H3RequestRejected,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_REQUEST_CANCELLED.
    H3RequestCancelled,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_REQUEST_INCOMPLETE.
    H3RequestIncomplete,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_MESSAGE_ERROR.
    H3MessageError,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_CONNECT_ERROR.
    H3ConnectError,
    /// HTTP/3: the server reset the request's stream, or closed the connection, with H3_VERSION_FALLBACK.
    H3VersionFallback,
    /// HTTP/3: a QPACK error code (RFC 9204 6: decompression failed, an encoder or decoder stream error) ended the
    /// stream or the connection.
    H3Qpack,
    /// HTTP/3: a stream reset or a connection closed with an application error code RFC 9114 does not define.
    H3Other,
}

impl ErrorKind {
    /// Every kind, in the order of the enum (the order of the counters and of every listing).
    pub const ALL: [ErrorKind; 116] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::Connect,
        ErrorKind::FileLimit,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::Timeout,
        ErrorKind::Malformed,
        ErrorKind::LineTooLong,
        ErrorKind::Unsolicited,
        ErrorKind::Tls,
        ErrorKind::Io,
        ErrorKind::WrongValue,
        ErrorKind::Goaway,
        ErrorKind::FlowControl,
        ErrorKind::FrameSize,
        ErrorKind::Flood,
        ErrorKind::HeaderList,
        ErrorKind::RstNoError,
        ErrorKind::RstProtocol,
        ErrorKind::RstInternal,
        ErrorKind::RstFlowControl,
        ErrorKind::RstSettingsTimeout,
        ErrorKind::RstStreamClosed,
        ErrorKind::RstFrameSize,
        ErrorKind::RstRefusedStream,
        ErrorKind::RstCancel,
        ErrorKind::RstCompression,
        ErrorKind::RstConnect,
        ErrorKind::RstEnhanceYourCalm,
        ErrorKind::RstInadequateSecurity,
        ErrorKind::RstHttp11Required,
        ErrorKind::RstOther,
        ErrorKind::GrpcCancelled,
        ErrorKind::GrpcUnknown,
        ErrorKind::GrpcInvalidArgument,
        ErrorKind::GrpcDeadlineExceeded,
        ErrorKind::GrpcNotFound,
        ErrorKind::GrpcAlreadyExists,
        ErrorKind::GrpcPermissionDenied,
        ErrorKind::GrpcResourceExhausted,
        ErrorKind::GrpcFailedPrecondition,
        ErrorKind::GrpcAborted,
        ErrorKind::GrpcOutOfRange,
        ErrorKind::GrpcUnimplemented,
        ErrorKind::GrpcInternal,
        ErrorKind::GrpcUnavailable,
        ErrorKind::GrpcDataLoss,
        ErrorKind::GrpcUnauthenticated,
        ErrorKind::GrpcOther,
        ErrorKind::GrpcNoStatus,
        ErrorKind::GrpcHttpStatus,
        ErrorKind::GrpcBadMessage,
        ErrorKind::GrpcMessageTooLarge,
        ErrorKind::StreamCut,
        ErrorKind::StreamTooLong,
        ErrorKind::WsUpgradeStatus,
        ErrorKind::WsUpgradeStatus400,
        ErrorKind::WsUpgradeStatus401,
        ErrorKind::WsUpgradeStatus403,
        ErrorKind::WsUpgradeStatus404,
        ErrorKind::WsUpgradeStatus426,
        ErrorKind::WsUpgradeStatus429,
        ErrorKind::WsUpgradeStatus500,
        ErrorKind::WsUpgradeStatus502,
        ErrorKind::WsUpgradeStatus503,
        ErrorKind::WsUpgradeInvalid,
        ErrorKind::WsProtocol,
        ErrorKind::WsTooLarge,
        ErrorKind::WsNoId,
        ErrorKind::WsCloseNormal,
        ErrorKind::WsCloseGoingAway,
        ErrorKind::WsCloseProtocol,
        ErrorKind::WsCloseUnsupported,
        ErrorKind::WsCloseNoCode,
        ErrorKind::WsCloseAbnormal,
        ErrorKind::WsCloseInvalidData,
        ErrorKind::WsClosePolicy,
        ErrorKind::WsCloseTooBig,
        ErrorKind::WsCloseExtension,
        ErrorKind::WsCloseInternal,
        ErrorKind::WsCloseRestart,
        ErrorKind::WsCloseTryLater,
        ErrorKind::WsCloseBadGateway,
        ErrorKind::WsCloseOther,
        ErrorKind::ProxyRefused,
        ErrorKind::ProxyStatus407,
        ErrorKind::ProxyStatus403,
        ErrorKind::ProxyStatus502,
        ErrorKind::ProxyStatus503,
        ErrorKind::ProxyStatus504,
        ErrorKind::ProxyStatusOther,
        ErrorKind::ProxyError,
        ErrorKind::HandshakeFailed,
        ErrorKind::IdleTimeout,
        ErrorKind::QuicTransport,
        ErrorKind::QuicReset,
        ErrorKind::H3NoError,
        ErrorKind::H3GeneralProtocol,
        ErrorKind::H3Internal,
        ErrorKind::H3StreamCreation,
        ErrorKind::H3ClosedCriticalStream,
        ErrorKind::H3FrameUnexpected,
        ErrorKind::H3FrameError,
        ErrorKind::H3ExcessiveLoad,
        ErrorKind::H3IdError,
        ErrorKind::H3SettingsError,
        ErrorKind::H3MissingSettings,
        ErrorKind::H3RequestRejected,
        ErrorKind::H3RequestCancelled,
        ErrorKind::H3RequestIncomplete,
        ErrorKind::H3MessageError,
        ErrorKind::H3ConnectError,
        ErrorKind::H3VersionFallback,
        ErrorKind::H3Qpack,
        ErrorKind::H3Other,
    ];

    /// The stable key used in the result document and the CSV.
    pub fn key(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Connect => "connect_error",
            ErrorKind::FileLimit => "fd_limit",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Malformed => "malformed_response",
            ErrorKind::LineTooLong => "line_too_long",
            ErrorKind::Unsolicited => "unsolicited_response",
            ErrorKind::Tls => "tls",
            ErrorKind::Io => "io",
            ErrorKind::WrongValue => "wrong_value",
            ErrorKind::Goaway => "goaway",
            ErrorKind::FlowControl => "flow_control",
            ErrorKind::FrameSize => "frame_size",
            ErrorKind::Flood => "flood",
            ErrorKind::HeaderList => "header_list_too_large",
            ErrorKind::RstNoError => "rst_stream_no_error",
            ErrorKind::RstProtocol => "rst_stream_protocol_error",
            ErrorKind::RstInternal => "rst_stream_internal_error",
            ErrorKind::RstFlowControl => "rst_stream_flow_control_error",
            ErrorKind::RstSettingsTimeout => "rst_stream_settings_timeout",
            ErrorKind::RstStreamClosed => "rst_stream_stream_closed",
            ErrorKind::RstFrameSize => "rst_stream_frame_size_error",
            ErrorKind::RstRefusedStream => "rst_stream_refused_stream",
            ErrorKind::RstCancel => "rst_stream_cancel",
            ErrorKind::RstCompression => "rst_stream_compression_error",
            ErrorKind::RstConnect => "rst_stream_connect_error",
            ErrorKind::RstEnhanceYourCalm => "rst_stream_enhance_your_calm",
            ErrorKind::RstInadequateSecurity => "rst_stream_inadequate_security",
            ErrorKind::RstHttp11Required => "rst_stream_http_1_1_required",
            ErrorKind::RstOther => "rst_stream_other",
            ErrorKind::GrpcCancelled => "grpc_cancelled",
            ErrorKind::GrpcUnknown => "grpc_unknown",
            ErrorKind::GrpcInvalidArgument => "grpc_invalid_argument",
            ErrorKind::GrpcDeadlineExceeded => "grpc_deadline_exceeded",
            ErrorKind::GrpcNotFound => "grpc_not_found",
            ErrorKind::GrpcAlreadyExists => "grpc_already_exists",
            ErrorKind::GrpcPermissionDenied => "grpc_permission_denied",
            ErrorKind::GrpcResourceExhausted => "grpc_resource_exhausted",
            ErrorKind::GrpcFailedPrecondition => "grpc_failed_precondition",
            ErrorKind::GrpcAborted => "grpc_aborted",
            ErrorKind::GrpcOutOfRange => "grpc_out_of_range",
            ErrorKind::GrpcUnimplemented => "grpc_unimplemented",
            ErrorKind::GrpcInternal => "grpc_internal",
            ErrorKind::GrpcUnavailable => "grpc_unavailable",
            ErrorKind::GrpcDataLoss => "grpc_data_loss",
            ErrorKind::GrpcUnauthenticated => "grpc_unauthenticated",
            ErrorKind::GrpcOther => "grpc_other",
            ErrorKind::GrpcNoStatus => "grpc_no_status",
            ErrorKind::GrpcHttpStatus => "grpc_http_status",
            ErrorKind::GrpcBadMessage => "grpc_bad_message",
            ErrorKind::GrpcMessageTooLarge => "grpc_message_too_large",
            ErrorKind::StreamCut => "stream_cut",
            ErrorKind::StreamTooLong => "stream_too_long",
            ErrorKind::WsUpgradeStatus => "ws_upgrade_status",
            ErrorKind::WsUpgradeStatus400 => "ws_upgrade_status_400",
            ErrorKind::WsUpgradeStatus401 => "ws_upgrade_status_401",
            ErrorKind::WsUpgradeStatus403 => "ws_upgrade_status_403",
            ErrorKind::WsUpgradeStatus404 => "ws_upgrade_status_404",
            ErrorKind::WsUpgradeStatus426 => "ws_upgrade_status_426",
            ErrorKind::WsUpgradeStatus429 => "ws_upgrade_status_429",
            ErrorKind::WsUpgradeStatus500 => "ws_upgrade_status_500",
            ErrorKind::WsUpgradeStatus502 => "ws_upgrade_status_502",
            ErrorKind::WsUpgradeStatus503 => "ws_upgrade_status_503",
            ErrorKind::WsUpgradeInvalid => "ws_upgrade_invalid",
            ErrorKind::WsProtocol => "ws_protocol_error",
            ErrorKind::WsNoId => "ws_no_id",
            ErrorKind::WsTooLarge => "ws_message_too_large",
            ErrorKind::WsCloseNormal => "ws_close_1000",
            ErrorKind::WsCloseGoingAway => "ws_close_1001",
            ErrorKind::WsCloseProtocol => "ws_close_1002",
            ErrorKind::WsCloseUnsupported => "ws_close_1003",
            ErrorKind::WsCloseNoCode => "ws_close_1005",
            ErrorKind::WsCloseAbnormal => "ws_close_1006",
            ErrorKind::WsCloseInvalidData => "ws_close_1007",
            ErrorKind::WsClosePolicy => "ws_close_1008",
            ErrorKind::WsCloseTooBig => "ws_close_1009",
            ErrorKind::WsCloseExtension => "ws_close_1010",
            ErrorKind::WsCloseInternal => "ws_close_1011",
            ErrorKind::WsCloseRestart => "ws_close_1012",
            ErrorKind::WsCloseTryLater => "ws_close_1013",
            ErrorKind::WsCloseBadGateway => "ws_close_1014",
            ErrorKind::WsCloseOther => "ws_close_other",
            ErrorKind::ProxyRefused => "proxy_refused",
            ErrorKind::ProxyStatus407 => "proxy_status_407",
            ErrorKind::ProxyStatus403 => "proxy_status_403",
            ErrorKind::ProxyStatus502 => "proxy_status_502",
            ErrorKind::ProxyStatus503 => "proxy_status_503",
            ErrorKind::ProxyStatus504 => "proxy_status_504",
            ErrorKind::ProxyStatusOther => "proxy_status_other",
            ErrorKind::ProxyError => "proxy_error",
            ErrorKind::HandshakeFailed => "handshake_failed",
            ErrorKind::IdleTimeout => "idle_timeout",
            ErrorKind::QuicTransport => "quic_transport_error",
            ErrorKind::QuicReset => "quic_stateless_reset",
            ErrorKind::H3NoError => "h3_no_error",
            ErrorKind::H3GeneralProtocol => "h3_general_protocol_error",
            ErrorKind::H3Internal => "h3_internal_error",
            ErrorKind::H3StreamCreation => "h3_stream_creation_error",
            ErrorKind::H3ClosedCriticalStream => "h3_closed_critical_stream",
            ErrorKind::H3FrameUnexpected => "h3_frame_unexpected",
            ErrorKind::H3FrameError => "h3_frame_error",
            ErrorKind::H3ExcessiveLoad => "h3_excessive_load",
            ErrorKind::H3IdError => "h3_id_error",
            ErrorKind::H3SettingsError => "h3_settings_error",
            ErrorKind::H3MissingSettings => "h3_missing_settings",
            ErrorKind::H3RequestRejected => "h3_request_rejected",
            ErrorKind::H3RequestCancelled => "h3_request_cancelled",
            ErrorKind::H3RequestIncomplete => "h3_request_incomplete",
            ErrorKind::H3MessageError => "h3_message_error",
            ErrorKind::H3ConnectError => "h3_connect_error",
            ErrorKind::H3VersionFallback => "h3_version_fallback",
            ErrorKind::H3Qpack => "h3_qpack_error",
            ErrorKind::H3Other => "h3_other",
        }
    }

    /// The kind with this [`key`](Self::key).
    pub fn from_key(key: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.key() == key)
    }

    /// Words for people.
    pub fn describe(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connection refused",
            ErrorKind::ConnectTimeout => "connect timeout",
            ErrorKind::Connect => "connect error",
            ErrorKind::FileLimit => "no file descriptor left, see ulimit -n",
            ErrorKind::Reset => "connection reset",
            ErrorKind::Closed => "closed before the response was complete",
            ErrorKind::Timeout => "no complete answer in time; status 0",
            ErrorKind::Malformed => "malformed response",
            ErrorKind::LineTooLong => "a header or line longer than --max-line",
            ErrorKind::Unsolicited => "bytes no request asked for",
            ErrorKind::Tls => "TLS error",
            ErrorKind::Io => "I/O error",
            ErrorKind::WrongValue => "wrong value: not what the workload wrote",
            ErrorKind::Goaway => "connection ended by the server's GOAWAY",
            ErrorKind::FlowControl => "HTTP/2 flow control",
            ErrorKind::FrameSize => "HTTP/2 frame of a wrong or cut-short size",
            ErrorKind::Flood => "HTTP/2 control-frame flood (answers left unread)",
            ErrorKind::HeaderList => "header list (HTTP/2, HTTP/3) longer than --max-header-list",
            ErrorKind::RstNoError => "stream reset by the server (NO_ERROR)",
            ErrorKind::RstProtocol => "stream reset by the server (PROTOCOL_ERROR)",
            ErrorKind::RstInternal => "stream reset by the server (INTERNAL_ERROR)",
            ErrorKind::RstFlowControl => "stream reset by the server (FLOW_CONTROL_ERROR)",
            ErrorKind::RstSettingsTimeout => "stream reset by the server (SETTINGS_TIMEOUT)",
            ErrorKind::RstStreamClosed => "stream reset by the server (STREAM_CLOSED)",
            ErrorKind::RstFrameSize => "stream reset by the server (FRAME_SIZE_ERROR)",
            ErrorKind::RstRefusedStream => "stream reset by the server (REFUSED_STREAM)",
            ErrorKind::RstCancel => "stream reset by the server (CANCEL)",
            ErrorKind::RstCompression => "stream reset by the server (COMPRESSION_ERROR)",
            ErrorKind::RstConnect => "stream reset by the server (CONNECT_ERROR)",
            ErrorKind::RstEnhanceYourCalm => "stream reset by the server (ENHANCE_YOUR_CALM)",
            ErrorKind::RstInadequateSecurity => "stream reset by the server (INADEQUATE_SECURITY)",
            ErrorKind::RstHttp11Required => "stream reset by the server (HTTP_1_1_REQUIRED)",
            ErrorKind::RstOther => "stream reset by the server (an unknown code)",
            ErrorKind::GrpcCancelled => "gRPC status CANCELLED",
            ErrorKind::GrpcUnknown => "gRPC status UNKNOWN",
            ErrorKind::GrpcInvalidArgument => "gRPC status INVALID_ARGUMENT",
            ErrorKind::GrpcDeadlineExceeded => "gRPC status DEADLINE_EXCEEDED",
            ErrorKind::GrpcNotFound => "gRPC status NOT_FOUND",
            ErrorKind::GrpcAlreadyExists => "gRPC status ALREADY_EXISTS",
            ErrorKind::GrpcPermissionDenied => "gRPC status PERMISSION_DENIED",
            ErrorKind::GrpcResourceExhausted => "gRPC status RESOURCE_EXHAUSTED",
            ErrorKind::GrpcFailedPrecondition => "gRPC status FAILED_PRECONDITION",
            ErrorKind::GrpcAborted => "gRPC status ABORTED",
            ErrorKind::GrpcOutOfRange => "gRPC status OUT_OF_RANGE",
            ErrorKind::GrpcUnimplemented => "gRPC status UNIMPLEMENTED",
            ErrorKind::GrpcInternal => "gRPC status INTERNAL",
            ErrorKind::GrpcUnavailable => "gRPC status UNAVAILABLE",
            ErrorKind::GrpcDataLoss => "gRPC status DATA_LOSS",
            ErrorKind::GrpcUnauthenticated => "gRPC status UNAUTHENTICATED",
            ErrorKind::GrpcOther => "gRPC status gRPC does not define",
            ErrorKind::GrpcNoStatus => "gRPC answer without grpc-status",
            ErrorKind::GrpcHttpStatus => "gRPC answer with an HTTP status other than 200",
            ErrorKind::GrpcBadMessage => "malformed gRPC message (length prefix)",
            ErrorKind::GrpcMessageTooLarge => "gRPC message past --max-message",
            ErrorKind::StreamCut => "stream cut before its end",
            ErrorKind::StreamTooLong => "stream past --events-max or --events-max-bytes",
            ErrorKind::WsUpgradeStatus => "WebSocket upgrade answered with another status than 101",
            ErrorKind::WsUpgradeStatus400 => "WebSocket upgrade answered 400 (bad request)",
            ErrorKind::WsUpgradeStatus401 => "WebSocket upgrade answered 401 (unauthorized)",
            ErrorKind::WsUpgradeStatus403 => "WebSocket upgrade answered 403 (forbidden)",
            ErrorKind::WsUpgradeStatus404 => "WebSocket upgrade answered 404 (not found)",
            ErrorKind::WsUpgradeStatus426 => "WebSocket upgrade answered 426 (upgrade required)",
            ErrorKind::WsUpgradeStatus429 => "WebSocket upgrade answered 429 (too many requests)",
            ErrorKind::WsUpgradeStatus500 => "WebSocket upgrade answered 500 (internal server error)",
            ErrorKind::WsUpgradeStatus502 => "WebSocket upgrade answered 502 (bad gateway)",
            ErrorKind::WsUpgradeStatus503 => "WebSocket upgrade answered 503 (service unavailable)",
            ErrorKind::WsUpgradeInvalid => "WebSocket upgrade answer invalid",
            ErrorKind::WsProtocol => "WebSocket frame a server may not send",
            ErrorKind::WsTooLarge => "WebSocket message past --max-message",
            ErrorKind::WsNoId => "WebSocket message without an id at --match-field",
            ErrorKind::WsCloseNormal => "WebSocket closed by the server (1000 normal closure)",
            ErrorKind::WsCloseGoingAway => "WebSocket closed by the server (1001 going away)",
            ErrorKind::WsCloseProtocol => "WebSocket closed by the server (1002 protocol error)",
            ErrorKind::WsCloseUnsupported => "WebSocket closed by the server (1003 unsupported data)",
            ErrorKind::WsCloseNoCode => "WebSocket closed by the server (1005 no status code)",
            ErrorKind::WsCloseAbnormal => "WebSocket closed by the server (1006 abnormal)",
            ErrorKind::WsCloseInvalidData => "WebSocket closed by the server (1007 invalid payload data)",
            ErrorKind::WsClosePolicy => "WebSocket closed by the server (1008 policy violation)",
            ErrorKind::WsCloseTooBig => "WebSocket closed by the server (1009 message too big)",
            ErrorKind::WsCloseExtension => "WebSocket closed by the server (1010 mandatory extension)",
            ErrorKind::WsCloseInternal => "WebSocket closed by the server (1011 internal error)",
            ErrorKind::WsCloseRestart => "WebSocket closed by the server (1012 service restart)",
            ErrorKind::WsCloseTryLater => "WebSocket closed by the server (1013 try again later)",
            ErrorKind::WsCloseBadGateway => "WebSocket closed by the server (1014 bad gateway)",
            ErrorKind::WsCloseOther => "WebSocket closed by the server (a code RFC 6455 does not name)",
            ErrorKind::ProxyRefused => "the proxy refused the connection",
            ErrorKind::ProxyStatus407 => "the proxy wants credentials (407)",
            ErrorKind::ProxyStatus403 => "the proxy refused the tunnel (403)",
            ErrorKind::ProxyStatus502 => "the proxy could not reach the target (502)",
            ErrorKind::ProxyStatus503 => "the proxy is unavailable (503)",
            ErrorKind::ProxyStatus504 => "the proxy timed out reaching the target (504)",
            ErrorKind::ProxyStatusOther => "the proxy refused the tunnel",
            ErrorKind::ProxyError => "the proxy's answer was not HTTP",
            ErrorKind::HandshakeFailed => "QUIC handshake failed (TLS, no h3 in ALPN)",
            ErrorKind::IdleTimeout => "QUIC idle timeout: nothing from the server",
            ErrorKind::QuicTransport => "QUIC connection closed with a transport error",
            ErrorKind::QuicReset => "QUIC stateless reset by the server",
            ErrorKind::H3NoError => "HTTP/3 H3_NO_ERROR (a stream reset or the connection closed)",
            ErrorKind::H3GeneralProtocol => {
                "HTTP/3 H3_GENERAL_PROTOCOL_ERROR (a stream reset or the connection closed)"
            }
            ErrorKind::H3Internal => "HTTP/3 H3_INTERNAL_ERROR (a stream reset or the connection closed)",
            ErrorKind::H3StreamCreation => "HTTP/3 H3_STREAM_CREATION_ERROR (a stream reset or the connection closed)",
            ErrorKind::H3ClosedCriticalStream => {
                "HTTP/3 H3_CLOSED_CRITICAL_STREAM (a stream reset or the connection closed)"
            }
            ErrorKind::H3FrameUnexpected => "HTTP/3 H3_FRAME_UNEXPECTED (a stream reset or the connection closed)",
            ErrorKind::H3FrameError => "HTTP/3 H3_FRAME_ERROR (a stream reset or the connection closed)",
            ErrorKind::H3ExcessiveLoad => "HTTP/3 H3_EXCESSIVE_LOAD (a stream reset or the connection closed)",
            ErrorKind::H3IdError => "HTTP/3 H3_ID_ERROR (a stream reset or the connection closed)",
            ErrorKind::H3SettingsError => "HTTP/3 H3_SETTINGS_ERROR (a stream reset or the connection closed)",
            ErrorKind::H3MissingSettings => "HTTP/3 H3_MISSING_SETTINGS (a stream reset or the connection closed)",
            ErrorKind::H3RequestRejected => "HTTP/3 H3_REQUEST_REJECTED (a stream reset or the connection closed)",
            ErrorKind::H3RequestCancelled => "HTTP/3 H3_REQUEST_CANCELLED (a stream reset or the connection closed)",
            ErrorKind::H3RequestIncomplete => "HTTP/3 H3_REQUEST_INCOMPLETE (a stream reset or the connection closed)",
            ErrorKind::H3MessageError => "HTTP/3 H3_MESSAGE_ERROR (a stream reset or the connection closed)",
            ErrorKind::H3ConnectError => "HTTP/3 H3_CONNECT_ERROR (a stream reset or the connection closed)",
            ErrorKind::H3VersionFallback => "HTTP/3 H3_VERSION_FALLBACK (a stream reset or the connection closed)",
            ErrorKind::H3Qpack => "HTTP/3 QPACK error (a stream reset or the connection closed)",
            ErrorKind::H3Other => "HTTP/3 error code RFC 9114 does not define",
        }
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
