//! The wire protocol of a run's requests as one type: a variant per protocol holding what only it needs (HTTP/2's
//! streams, gRPC's messages and settings, WebSocket's upgrade and framing, a key-value server's greeting), built by
//! that protocol's own plan module, so the shared plan carries one field for them all.

use std::sync::Arc;

use crate::protocol::{Greeting, Protocol, grpc, ws};

#[derive(Clone, Debug, Default)]
pub enum Wire {
    /// HTTP/1.1.
    #[default]
    Http1,
    /// HTTP/2 (`--http2`): concurrent streams a connection (`--streams`).
    Http2 { streams: usize },
    /// HTTP/3 (`--http3`): concurrent streams a connection.
    Http3 { streams: usize },
    /// gRPC (grpc://): HTTP/2 calls, each sending `messages_out` messages (1 but for client-streaming and
    /// bidirectional methods), with what the calls need beside their bytes.
    Grpc { streams: usize, messages_out: u32, settings: grpc::Settings },
    /// WebSocket (ws://, wss://): the upgrade request and the messages' framing.
    WebSocket(Arc<ws::Settings>),
    /// Redis's RESP or memcached's text protocol, with the commands each new connection sends first.
    Kv { protocol: Protocol, greeting: Option<Greeting> },
}

impl Wire {
    /// The protocol's name as the rest of hakaru knows it.
    pub fn protocol(&self) -> Protocol {
        match self {
            Wire::Http1 => Protocol::Http,
            Wire::Http2 { .. } => Protocol::Http2,
            Wire::Http3 { .. } => Protocol::Http3,
            Wire::Grpc { .. } => Protocol::Grpc,
            Wire::WebSocket(_) => Protocol::WebSocket,
            Wire::Kv { protocol, .. } => *protocol,
        }
    }

    /// Concurrent streams a connection: HTTP/2's, HTTP/3's and gRPC's `--streams`, 1 for the others.
    pub fn streams(&self) -> usize {
        match self {
            Wire::Http2 { streams } | Wire::Http3 { streams } | Wire::Grpc { streams, .. } => (*streams).max(1),
            _ => 1,
        }
    }

    pub fn websocket(&self) -> Option<&Arc<ws::Settings>> {
        match self {
            Wire::WebSocket(w) => Some(w),
            _ => None,
        }
    }

    pub fn greeting(&self) -> Option<&Greeting> {
        match self {
            Wire::Kv { greeting, .. } => greeting.as_ref(),
            _ => None,
        }
    }

    /// gRPC's settings (the defaults for the other protocols, which read none).
    pub fn grpc(&self) -> grpc::Settings {
        match self {
            Wire::Grpc { settings, .. } => *settings,
            _ => grpc::Settings::default(),
        }
    }

    /// Messages each gRPC call sends (0 for the other protocols).
    pub fn grpc_messages_out(&self) -> u32 {
        match self {
            Wire::Grpc { messages_out, .. } => *messages_out,
            _ => 0,
        }
    }
}
