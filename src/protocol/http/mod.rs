//! HTTP/1.1: request bytes built before the run ([`request`]) and an incremental response decoder ([`response`]).

pub mod request;
pub mod response;

pub use request::{RequestParts, build_request};
pub use response::{HttpDecoder, Kept, Rest};
