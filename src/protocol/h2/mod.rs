//! HTTP/2 (RFC 9113) as the engine speaks it: frames, the HPACK decoder (RFC 7541) and request frames built
//! before the run. The connection's state (streams, windows, SETTINGS) lives in `engine/h2/`.

pub mod frame;
pub mod hpack;
mod huffman;
pub mod request;
